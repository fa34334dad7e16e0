# loadgen/local.mk — mailtier-load, the SPECmail2001-style load generator,
# sink and report (links no daemon code: it measures any SMTP/POP3 system).
noinst_LIBRARIES += loadgen/libloadgen.a
bin_PROGRAMS += loadgen/mailtier-load

loadgen_libloadgen_a_SOURCES = \
	loadgen/errors.c loadgen/errors.h \
	loadgen/rng.c loadgen/rng.h \
	loadgen/workload.c loadgen/workload.h \
	loadgen/schedule.c loadgen/schedule.h \
	loadgen/histogram.c loadgen/histogram.h \
	loadgen/stats.c loadgen/stats.h \
	loadgen/tracker.c loadgen/tracker.h \
	loadgen/message.c loadgen/message.h \
	loadgen/session.c loadgen/session.h \
	loadgen/smtp-client.c loadgen/smtp-client.h \
	loadgen/pop-client.c loadgen/pop-client.h \
	loadgen/imap-response.c loadgen/imap-response.h \
	loadgen/imap-client.c loadgen/imap-commands.c loadgen/imap-script.c \
	loadgen/imap-probe.c \
	loadgen/imap-client.h \
	loadgen/imap-private.h \
	loadgen/sink.c loadgen/sink.h \
	loadgen/ledger.c loadgen/ledger.h \
	loadgen/resolve.c loadgen/resolve.h \
	loadgen/progress.c loadgen/progress.h \
	loadgen/live-metrics.c loadgen/live-metrics.h \
	loadgen/engine.c loadgen/engine.h loadgen/engine-sessions.c \
	loadgen/engine-private.h \
	loadgen/run-options.c loadgen/run-options.h \
	loadgen/wire.c loadgen/wire.h \
	loadgen/agent.c loadgen/agent.h \
	loadgen/manager.c loadgen/manager-lines.c loadgen/manager.h \
	loadgen/manager-private.h \
	loadgen/shard.c loadgen/shard.h \
	loadgen/fill.c loadgen/fill.h \
	loadgen/report.c loadgen/report-html.c loadgen/report.h

LOADGEN_LIBS = loadgen/libloadgen.a $(MTMAIL_LIBS) -lm

loadgen_mailtier_load_SOURCES = loadgen/main.c loadgen/commands.h \
	loadgen/cli.c loadgen/cli.h \
	loadgen/cmd-run.c loadgen/cmd-fill.c loadgen/cmd-sink.c loadgen/cmd-agent.c
loadgen_mailtier_load_LDADD = loadgen/libloadgen.a settings/libmtsettings.a $(MTMAIL_LIBS) -lm

EXTRA_DIST += loadgen/README.md

# Tests: cmocka unit tests, and a short run against a real SMTP+POP3 server.
loadgen_unit_tests = \
	tests/unit/test-loadgen-workload \
	tests/unit/test-loadgen-stats \
	tests/unit/test-loadgen-clients

check_PROGRAMS += $(loadgen_unit_tests)
TESTS += $(loadgen_unit_tests)

tests_unit_test_loadgen_workload_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/loadgen
tests_unit_test_loadgen_workload_LDADD = $(LOADGEN_LIBS) $(CMOCKA_LIBS)

tests_unit_test_loadgen_stats_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/loadgen
tests_unit_test_loadgen_stats_LDADD = $(LOADGEN_LIBS) $(CMOCKA_LIBS)

tests_unit_test_loadgen_clients_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/loadgen
tests_unit_test_loadgen_clients_LDADD = $(LOADGEN_LIBS) $(CMOCKA_LIBS) $(PTHREAD_LIBS)

loadgen_integration_tests = tests/integration/test-loadgen-run.sh \
	tests/integration/test-loadgen-fill.py tests/integration/test-loadgen-imap.py \
	tests/integration/test-loadgen-failover.py
TESTS += $(loadgen_integration_tests)
EXTRA_DIST += $(loadgen_integration_tests) tests/integration/minimail.py
