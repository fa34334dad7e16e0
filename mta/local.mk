# mta/local.mk — mailtier-mta, the ESMTP server with its durable queue,
# LMTP/SMTP delivery and admin socket; its unit and integration tests.
# The daemon's parts live in mta/libmta.a so the unit tests can link them.
noinst_LIBRARIES += mta/libmta.a
sbin_PROGRAMS += mta/mailtier-mta

mta_libmta_a_SOURCES = \
	mta/mta.h \
	mta/mta-policy.c mta/mta-policy.h \
	mta/mta-drain.c \
	mta/smtp-server.c mta/smtp-session.c mta/smtp-session.h \
	mta/smtp-commands.c mta/smtp-auth.c mta/smtp-data.c \
	mta/smtp-parse.c mta/smtp-parse.h \
	mta/smtp-milter.c mta/smtp-milter-content.c mta/smtp-milter.h \
	mta/smtp-milter-private.h mta/milter-headers.c mta/milter-headers.h \
	mta/queue.c mta/queue.h mta/queue-records.c mta/queue-records.h \
	mta/queue-store.c mta/queue-store.h mta/queue-private.h mta/queue-spool.c \
	mta/delivery.c mta/delivery.h mta/delivery-private.h \
	mta/delivery-dest.c mta/delivery-failover.c mta/outbound.c mta/outbound.h mta/outbound-tx.c \
	mta/bounce.c mta/bounce-text.c mta/bounce-text.h \
	mta/dns.c mta/dns.h \
	mta/admin.c mta/admin.h \
	mta/mta-metrics.c mta/mta-metrics.h
# What a program linking libmta needs after it.
MTA_LIBS = mta/libmta.a dirsvc/libdirsvc.a settings/libmtsettings.a $(DIRSVC_LIBS) \
	$(MTBDB_LIBS) $(CARES_LIBS) $(MTMAIL_LIBS)

mta_mailtier_mta_SOURCES = mta/main.c
mta_mailtier_mta_LDADD = daemon/libmtdaemon.a $(MTA_LIBS)

EXTRA_DIST += mta/README.md bench/mta.py bench/mta-load.py bench/mta-ab.sh \
	bench/milter-latency.py

# Unit tests (cmocka): tests/unit/NAME.c, including "mta/..." headers.
mta_unit_tests = \
	tests/unit/test-mta-records \
	tests/unit/test-mta-policy \
	tests/unit/test-mta-queue \
	tests/unit/test-milter-headers
check_PROGRAMS += $(mta_unit_tests)
TESTS += $(mta_unit_tests)
tests_unit_test_mta_records_LDADD = $(MTA_LIBS) $(CMOCKA_LIBS)
tests_unit_test_mta_policy_LDADD = $(MTA_LIBS) $(CMOCKA_LIBS)
tests_unit_test_mta_queue_LDADD = $(MTA_LIBS) $(CMOCKA_LIBS)
tests_unit_test_milter_headers_LDADD = $(MTA_LIBS) $(CMOCKA_LIBS)

# Integration tests: real slapd, real clients (swaks, curl, smtplib), LMTP
# and SMTP stand-ins (tests/integration/lmtpd.py), a DNS stub.
mta_integration_tests = \
	tests/integration/test-mta-smtp.py \
	tests/integration/test-mta-delivery.py \
	tests/integration/test-mta-remote.py \
	tests/integration/test-mta-dsn-xtext.py \
	tests/integration/test-mta-daemon.py \
	tests/integration/test-mta-crash.py \
	tests/integration/test-mta-popstore.py \
	tests/integration/test-route-stale.py \
	tests/integration/test-shard-sites.py \
	tests/integration/test-shard-failover.py \
	tests/integration/test-mta-smtputf8.py \
	tests/integration/test-mta-bigmail.py \
	tests/integration/test-mta-milter.py \
	tests/integration/test-mta-milter-filters.py
TESTS += $(mta_integration_tests)
EXTRA_DIST += $(mta_integration_tests) tests/integration/lmtpd.py \
	tests/integration/mta_setup.py tests/integration/milter_script.py \
	tests/integration/filters.py
