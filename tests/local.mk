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
	tests/unit/test-address

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

integration_tests = \
	tests/integration/test-config-check.sh

TESTS += $(integration_tests)
EXTRA_DIST += $(integration_tests) tests/integration/configs
