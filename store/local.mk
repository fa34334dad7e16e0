# store/local.mk — the Berkeley DB message store (libmtstore, behind
# store/store.h): the library mailtier-popstore serves and mailtierctl
# administers, apart from the daemon (popstore/daemon.mk); its tests and its
# benchmark.
noinst_LIBRARIES += store/libmtstore.a

store_libmtstore_a_SOURCES = \
	store/store.h store/store-private.h \
	store/store-env.h store/store-records.h store/store-mailbox.h \
	store/store-req.h \
	store/store-env.c \
	store/store-lifecycle.c \
	store/store-repl.c \
	store/store-records.c \
	store/store-commit.c \
	store/store-purge.c \
	store/store-dedupe.c \
	store/store-async.c \
	store/store-mailbox.c \
	store/store-admin.c \
	store/store-space.c \
	store/store-body.c \
	store/store-chunks.c \
	store/store-ops.c \
	store/store-folders.c \
	store/store-flags.c \
	store/store-copy.c \
	store/store-structure.c
store_libmtstore_a_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)

# What a program using the store links (after its own objects).
STORE_LIBS = store/libmtstore.a lib-mail/libmtmail.a $(MTBDB_LIBS) $(MAILTIER_LIBS)
STORE_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LIBEVENT_CFLAGS) \
	-I$(top_srcdir)/store

store_unit_tests = \
	tests/unit/test-store \
	tests/unit/test-store-commit \
	tests/unit/test-store-admin \
	tests/unit/test-store-dedupe \
	tests/unit/test-store-stream \
	tests/unit/test-store-imap

check_PROGRAMS += $(store_unit_tests)
TESTS += $(store_unit_tests)

tests_unit_test_store_SOURCES = tests/unit/test-store.c tests/unit/test-store-util.h
tests_unit_test_store_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_test_store_LDADD = $(STORE_LIBS) $(CMOCKA_LIBS)

tests_unit_test_store_commit_SOURCES = tests/unit/test-store-commit.c \
	tests/unit/test-store-util.h
tests_unit_test_store_commit_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_test_store_commit_LDADD = $(STORE_LIBS) $(CMOCKA_LIBS)

tests_unit_test_store_admin_SOURCES = tests/unit/test-store-admin.c \
	tests/unit/test-store-util.h
tests_unit_test_store_admin_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_test_store_admin_LDADD = $(STORE_LIBS) $(CMOCKA_LIBS)

tests_unit_test_store_dedupe_SOURCES = tests/unit/test-store-dedupe.c \
	tests/unit/test-store-util.h
tests_unit_test_store_dedupe_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_test_store_dedupe_LDADD = $(STORE_LIBS) $(CMOCKA_LIBS)

tests_unit_test_store_stream_SOURCES = tests/unit/test-store-stream.c \
	tests/unit/test-store-util.h
tests_unit_test_store_stream_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_test_store_stream_LDADD = $(STORE_LIBS) $(CMOCKA_LIBS)

tests_unit_test_store_imap_SOURCES = tests/unit/test-store-imap.c \
	tests/unit/test-store-util.h
tests_unit_test_store_imap_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_test_store_imap_LDADD = $(STORE_LIBS) $(CMOCKA_LIBS)
# A store filled by the format 4 code, and how it was made.
EXTRA_DIST += tests/unit/data/store-v4.tar.xz tests/unit/data/make-store-v4.c

# The crash test: a driver delivering from 16 clients, kill -9'd by the
# script at random moments, then reopened (recovery) and verified.
check_PROGRAMS += tests/integration/test-store-crash
tests_integration_test_store_crash_SOURCES = tests/integration/test-store-crash.c
tests_integration_test_store_crash_CFLAGS = $(STORE_TEST_CFLAGS)
tests_integration_test_store_crash_LDADD = $(STORE_LIBS)
TESTS += tests/integration/test-store-crash.sh
EXTRA_DIST += tests/integration/test-store-crash.sh tests/unit/test-store.supp

# bench/popstore-store.sh runs it (built on demand by
# `make bench/popstore-store`; `make check` builds no benchmark).
EXTRA_PROGRAMS += bench/popstore-store
bench_popstore_store_SOURCES = bench/popstore-store.c
bench_popstore_store_CFLAGS = $(STORE_TEST_CFLAGS)
bench_popstore_store_LDADD = $(STORE_LIBS)
EXTRA_DIST += bench/popstore-store.sh
