# popstore/daemon.mk — mailtier-popstore, the daemon (LMTP in, POP3 out) on
# top of the store library (store/local.mk); its unit and integration
# tests and its benchmark. Included by Makefile.am after store/local.mk.
sbin_PROGRAMS += popstore/mailtier-popstore

popstore_daemon_sources = \
	popstore/popstore.h popstore/popstore.c popstore/popstore-metrics.c \
	popstore/lmtp-session.c popstore/lmtp-session.h \
	popstore/lmtp-commands.c \
	popstore/lmtp-data.c \
	popstore/lmtp-parse.c popstore/lmtp-parse.h \
	popstore/lmtp-headers.c popstore/lmtp-headers.h \
	popstore/pop3-session.c popstore/pop3-session.h \
	popstore/pop3-commands.c \
	popstore/pop3-parse.c popstore/pop3-parse.h \
	popstore/pop3-auth.c \
	popstore/login.c popstore/login.h \
	popstore/imap-session.c popstore/imap-session.h \
	popstore/imap-auth.c \
	popstore/imap-commands.c \
	popstore/imap-mailbox.c \
	popstore/imap-message.c \
	popstore/imap-fetch.c \
	popstore/imap-idle.c \
	popstore/imap-search.c \
	popstore/imap-sort.c \
	popstore/imap-quota.c \
	popstore/watch.c popstore/watch.h \
	popstore/pop3-fetch.c \
	popstore/pop3-top.c popstore/pop3-top.h

popstore_mailtier_popstore_SOURCES = popstore/main.c $(popstore_daemon_sources)
popstore_mailtier_popstore_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) \
	$(LIBEVENT_OPENSSL_CFLAGS) $(OPENSSL_CFLAGS) $(LDAP_CFLAGS) \
	-I$(top_srcdir)/popstore
popstore_mailtier_popstore_LDADD = daemon/libmtdaemon.a store/libmtstore.a dirsvc/libdirsvc.a \
	settings/libmtsettings.a $(MTBDB_LIBS) $(DIRSVC_LIBS) $(MTMAIL_LIBS)

EXTRA_DIST += popstore/README.md

# Unit tests of the daemon's pure parts (TOP, trace headers, the POP3 and
# LMTP command parsers; SASL PLAIN is lib/sasl, tests/unit/test-sasl.c).
popstore_daemon_unit_tests = \
	tests/unit/test-pop3-top \
	tests/unit/test-lmtp-headers \
	tests/unit/test-pop3-parse \
	tests/unit/test-lmtp-parse
check_PROGRAMS += $(popstore_daemon_unit_tests)
TESTS += $(popstore_daemon_unit_tests)
POPSTORE_UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/popstore

tests_unit_test_pop3_top_SOURCES = tests/unit/test-pop3-top.c \
	popstore/pop3-top.c popstore/pop3-top.h
tests_unit_test_pop3_top_CFLAGS = $(POPSTORE_UNIT_CFLAGS) $(LIBEVENT_CFLAGS)
tests_unit_test_pop3_top_LDADD = $(MAILTIER_LIBS) $(CMOCKA_LIBS)

tests_unit_test_lmtp_headers_SOURCES = tests/unit/test-lmtp-headers.c \
	popstore/lmtp-headers.c popstore/lmtp-headers.h
tests_unit_test_lmtp_headers_CFLAGS = $(POPSTORE_UNIT_CFLAGS)
tests_unit_test_lmtp_headers_LDADD = $(MAILTIER_LIBS) $(CMOCKA_LIBS)

tests_unit_test_pop3_parse_SOURCES = tests/unit/test-pop3-parse.c \
	popstore/pop3-parse.c popstore/pop3-parse.h
tests_unit_test_pop3_parse_CFLAGS = $(POPSTORE_UNIT_CFLAGS)
tests_unit_test_pop3_parse_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)

tests_unit_test_lmtp_parse_SOURCES = tests/unit/test-lmtp-parse.c \
	popstore/lmtp-parse.c popstore/lmtp-parse.h
tests_unit_test_lmtp_parse_CFLAGS = $(POPSTORE_UNIT_CFLAGS)
tests_unit_test_lmtp_parse_LDADD = $(MTMAIL_LIBS) $(CMOCKA_LIBS)

# Integration tests: real slapd (mailtierctl directory up), real clients.
# popstore-panic puts a store's environment into DB_RUNRECOVERY.
check_PROGRAMS += tests/integration/popstore-panic
tests_integration_popstore_panic_SOURCES = tests/integration/popstore-panic.c
tests_integration_popstore_panic_LDADD = $(BDB_LIBS)

popstore_integration_tests = \
	tests/integration/test-popstore-lmtp.py \
	tests/integration/test-popstore-pop3.py \
	tests/integration/test-popstore-imap.py \
	tests/integration/test-popstore-imap-crash.py \
	tests/integration/test-popstore-imap-limits.py \
	tests/integration/test-popstore-imap-audit.py \
	tests/integration/test-popstore-imap-scenarios.py \
	tests/integration/test-popstore-imap-view.py \
	tests/integration/test-popstore-imap-sort.py \
	tests/integration/test-popstore-admin.py \
	tests/integration/test-popstore-crash.py \
	tests/integration/test-popstore-diskfull.py \
	tests/integration/test-popstore-large.py \
	tests/integration/test-store-replication.py \
	tests/integration/test-store-replication-imap.py
TESTS += $(popstore_integration_tests)
EXTRA_DIST += $(popstore_integration_tests) tests/integration/popstorelib.py \
	tests/integration/repl_shard.py \
	tests/integration/imap-scenarios.txt
# test-popstore-diskfull.py mounts small file systems (root only, skipped
# otherwise): a full disk is a handled condition (store/store-space.c).

# bench/popstore.py drives it (built on demand: `make bench/popstore-load`, which
# bench/popstore.py runs itself; `make check` builds no benchmark): the LMTP/POP3 load client that measures
# mailtier-popstore and Dovecot alike.
EXTRA_PROGRAMS += bench/popstore-load
bench_popstore_load_SOURCES = bench/popstore-load.c
bench_popstore_load_LDADD = $(PTHREAD_LIBS)
EXTRA_DIST += bench/popstore.py bench/popstore-imap.py bench/mime-parse.c bench/replication.py
