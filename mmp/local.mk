# mmp/local.mk — mailtier-mmp, the POP3 and IMAP multiplexor proxy (mmp/README.md),
# its unit tests, its integration tests (real slapd, real clients, two
# shards) and its benchmark (bench/mmp).
sbin_PROGRAMS += mmp/mailtier-mmp

# Everything but main.c, so the unit tests link the very same code.
noinst_LIBRARIES += mmp/libmmp.a
mmp_libmmp_a_SOURCES = \
	mmp/mmp.h \
	mmp/mmp-session.c \
	mmp/mmp-commands.c \
	mmp/mmp-parse.c mmp/mmp-parse.h \
	mmp/mmp-imap.c \
	mmp/mmp-answers.c \
	mmp/mmp-phase-ops.c \
	mmp/mmp-login.c \
	mmp/mmp-backend.c mmp/mmp-backend.h \
	mmp/mmp-backend-imap.c \
	mmp/mmp-shards.c \
	mmp/mmp-relay.c \
	mmp/mmp-clients.c \
	mmp/mmp-metrics.c

MMP_LIBS = mmp/libmmp.a dirsvc/libdirsvc.a settings/libmtsettings.a \
	$(DIRSVC_LIBS) $(MTMAIL_LIBS)

mmp_mailtier_mmp_SOURCES = mmp/main.c
mmp_mailtier_mmp_LDADD = daemon/libmtdaemon.a $(MMP_LIBS)

EXTRA_DIST += mmp/README.md

# Unit tests (cmocka): the per-address limits and penalty, and scenarios
# of client input against a live session before login (whole and a byte
# at a time). The login phase's own test is lib-mail's test-pop3-login.
mmp_unit_tests = \
	tests/unit/test-mmp-clients \
	tests/unit/test-mmp-session
check_PROGRAMS += $(mmp_unit_tests)
TESTS += $(mmp_unit_tests)
MMP_UNIT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/mmp
tests_unit_test_mmp_clients_CPPFLAGS = $(MMP_UNIT_CPPFLAGS)
tests_unit_test_mmp_clients_LDADD = $(MMP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_mmp_session_SOURCES = tests/unit/test-mmp-session.c tests/unit/test-peer.h
tests_unit_test_mmp_session_CPPFLAGS = $(MMP_UNIT_CPPFLAGS)
tests_unit_test_mmp_session_LDADD = $(MMP_LIBS) $(CMOCKA_LIBS)

# Integration tests: real slapd (mailtierctl directory up), two store
# shards, real clients (curl, poplib, fetchmail), 10,000 connections.
mmp_integration_tests = \
	tests/integration/test-mmp.py \
	tests/integration/test-mmp-imap.py \
	tests/integration/test-mmp-limits.py
TESTS += $(mmp_integration_tests)
EXTRA_DIST += $(mmp_integration_tests) tests/integration/popbackend.py \
	tests/integration/mmp_setup.py bench/mmp bench/mmp-load.py \
	bench/mmp_dovecot.py bench/mmp-imap.py bench/imap-literal.py bench/quickack_table.py
