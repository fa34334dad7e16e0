# tests/local.mk — unit tests (cmocka) and integration tests (shell/Python
# with real daemons, real clients) run by `make check`.
TEST_EXTENSIONS = .sh .py
# Every test runs under tests/harness/bounded.sh's time bound.
MT_BOUNDED = $(SHELL) $(top_srcdir)/tests/harness/bounded.sh
LOG_COMPILER = $(MT_BOUNDED)
SH_LOG_COMPILER = $(MT_BOUNDED) $(SHELL)
PY_LOG_COMPILER = $(MT_BOUNDED) $(PYTHON3)
AM_TESTS_ENVIRONMENT = \
	MT_BUILDDIR='$(abs_top_builddir)'; export MT_BUILDDIR; \
	MT_SRCDIR='$(abs_top_srcdir)'; export MT_SRCDIR; \
	PYTHONPATH='$(abs_top_srcdir)/tests/harness'; export PYTHONPATH;

# A unit test is tests/unit/NAME.c linked with libmailtier and cmocka
# (automake's default sources and LDADD); tests that need more say so.
UNIT_LIBS = $(MAILTIER_LIBS) $(CMOCKA_LIBS)
LDADD = $(UNIT_LIBS)
UNIT_CFLAGS = $(AM_CFLAGS)

unit_tests = \
	tests/unit/test-buf \
	tests/unit/test-log \
	tests/unit/test-config \
	tests/unit/test-settings \
	tests/unit/test-daemon-args \
	tests/unit/test-daemon \
	tests/unit/test-lineio \
	tests/unit/test-dotcodec \
	tests/unit/test-address \
	tests/unit/test-xtext \
	tests/unit/test-loop \
	tests/unit/test-tls \
	tests/unit/test-sdnotify \
	tests/unit/test-privdrop \
	tests/unit/test-sasl \
	tests/unit/test-authfail \
	tests/unit/test-loglimit \
	tests/unit/test-secret \
	tests/unit/test-metrics \
	tests/unit/test-http-request

check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_metrics_LDADD = $(UNIT_LIBS) -lm
tests_unit_test_settings_LDADD = settings/libmtsettings.a $(UNIT_LIBS)
tests_unit_test_daemon_args_LDADD = daemon/libmtdaemon.a settings/libmtsettings.a $(UNIT_LIBS)
tests_unit_test_daemon_LDADD = daemon/libmtdaemon.a settings/libmtsettings.a $(UNIT_LIBS)

# A trivial daemon the harness test starts through the real sd-notify protocol.
check_PROGRAMS += tests/harness/mt-echod
tests_harness_mt_echod_SOURCES = tests/harness/mt-echod.c
tests_harness_mt_echod_LDADD = $(MAILTIER_LIBS)

EXTRA_DIST += tests/harness/mtharness.py tests/harness/bounded.sh

integration_tests = \
	tests/integration/test-config-check.sh \
	tests/integration/test-harness.py \
	tests/integration/test-directory.py \
	tests/integration/test-cluster.py \
	tests/integration/test-cluster-providers.py \
	tests/integration/test-cluster-replicas.py \
	tests/integration/test-cluster-milter.py \
	tests/integration/test-metrics.py \
	tests/integration/test-monitoring-files.py \
	tests/integration/test-metrics-prometheus.py \
	tests/integration/test-filters-selfcheck.py

TESTS += $(integration_tests)
EXTRA_DIST += $(integration_tests) tests/integration/configs \
	tests/integration/monitoring.py
