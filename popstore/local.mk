# popstore/local.mk — mailtier-popstore: the Berkeley DB message store
# (libmtstore, behind popstore/store.h), its tests and its benchmark.
noinst_LIBRARIES += popstore/libmtstore.a

popstore_libmtstore_a_SOURCES = \
	popstore/store.h popstore/store-private.h \
	popstore/store-env.c \
	popstore/store-records.c \
	popstore/store-commit.c \
	popstore/store-purge.c \
	popstore/store-dedupe.c \
	popstore/store-async.c \
	popstore/store-mailbox.c \
	popstore/store-admin.c \
	popstore/store-space.c
popstore_libmtstore_a_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)

# What a program using the store links (after its own objects).
STORE_LIBS = popstore/libmtstore.a $(BDB_LIBS) $(MAILTIER_LIBS)
STORE_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LIBEVENT_CFLAGS) \
	-I$(top_srcdir)/popstore

store_unit_tests = \
	tests/unit/test-store \
	tests/unit/test-store-commit \
	tests/unit/test-store-admin \
	tests/unit/test-store-dedupe

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
