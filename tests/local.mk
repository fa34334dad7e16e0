# tests/local.mk — unit tests (cmocka) and integration tests (shell/Python
# with real daemons, real clients) run by `make check`.
TEST_EXTENSIONS = .sh .py
SH_LOG_COMPILER = $(SHELL)
PY_LOG_COMPILER = $(PYTHON3)
AM_TESTS_ENVIRONMENT = \
	MT_BUILDDIR='$(abs_top_builddir)'; export MT_BUILDDIR; \
	MT_SRCDIR='$(abs_top_srcdir)'; export MT_SRCDIR; \
	PYTHONPATH='$(abs_top_srcdir)/tests/harness'; export PYTHONPATH;

UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LIBEVENT_CFLAGS) $(OPENSSL_CFLAGS) \
	$(SYSTEMD_CFLAGS)
UNIT_LIBS = $(MAILTIER_LIBS) $(CMOCKA_LIBS)

unit_tests = \
	tests/unit/test-buf \
	tests/unit/test-log \
	tests/unit/test-config \
	tests/unit/test-settings \
	tests/unit/test-lineio \
	tests/unit/test-dotcodec \
	tests/unit/test-address \
	tests/unit/test-loop \
	tests/unit/test-tls \
	tests/unit/test-sdnotify \
	tests/unit/test-privdrop

check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_buf_SOURCES = tests/unit/test-buf.c
tests_unit_test_buf_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_buf_LDADD = $(UNIT_LIBS)

tests_unit_test_log_SOURCES = tests/unit/test-log.c
tests_unit_test_log_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_log_LDADD = $(UNIT_LIBS)

tests_unit_test_config_SOURCES = tests/unit/test-config.c
tests_unit_test_config_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_config_LDADD = $(UNIT_LIBS)

tests_unit_test_settings_SOURCES = tests/unit/test-settings.c
tests_unit_test_settings_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_settings_LDADD = lib/libmtsettings.a $(UNIT_LIBS)

tests_unit_test_lineio_SOURCES = tests/unit/test-lineio.c
tests_unit_test_lineio_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_lineio_LDADD = $(UNIT_LIBS)

tests_unit_test_dotcodec_SOURCES = tests/unit/test-dotcodec.c
tests_unit_test_dotcodec_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_dotcodec_LDADD = $(UNIT_LIBS)

tests_unit_test_address_SOURCES = tests/unit/test-address.c
tests_unit_test_address_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_address_LDADD = $(UNIT_LIBS)

tests_unit_test_loop_SOURCES = tests/unit/test-loop.c
tests_unit_test_loop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_loop_LDADD = $(UNIT_LIBS)

tests_unit_test_tls_SOURCES = tests/unit/test-tls.c
tests_unit_test_tls_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_tls_LDADD = $(UNIT_LIBS)

tests_unit_test_sdnotify_SOURCES = tests/unit/test-sdnotify.c
tests_unit_test_sdnotify_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sdnotify_LDADD = $(UNIT_LIBS)

tests_unit_test_privdrop_SOURCES = tests/unit/test-privdrop.c
tests_unit_test_privdrop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_privdrop_LDADD = $(UNIT_LIBS)

# A trivial daemon the harness test starts through the real sd-notify protocol.
check_PROGRAMS += tests/harness/mt-echod
tests_harness_mt_echod_SOURCES = tests/harness/mt-echod.c
tests_harness_mt_echod_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) $(SYSTEMD_CFLAGS)
tests_harness_mt_echod_LDADD = $(MAILTIER_LIBS)

EXTRA_DIST += tests/harness/mtharness.py

integration_tests = \
	tests/integration/test-config-check.sh \
	tests/integration/test-harness.py \
	tests/integration/test-directory.py

TESTS += $(integration_tests)
EXTRA_DIST += $(integration_tests) tests/integration/configs
