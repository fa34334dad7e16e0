# lib-bdb/local.mk — the storage layer (libmtbdb): one Berkeley DB
# durability stack under the MTA's queue and the message store — group
# commit, the checkpointer, region preallocation, the serving process's
# lock file. Includes lib/ only; names no tier and no record format.
noinst_LIBRARIES += lib-bdb/libmtbdb.a

lib_bdb_libmtbdb_a_SOURCES = \
	lib-bdb/bdb-commit.c lib-bdb/bdb-commit.h \
	lib-bdb/bdb-checkpoint.c lib-bdb/bdb-checkpoint.h \
	lib-bdb/bdb-regions.c lib-bdb/bdb-regions.h \
	lib-bdb/bdb-lock.c lib-bdb/bdb-lock.h

# What a program linking lib-bdb needs (before MAILTIER_LIBS).
MTBDB_LIBS = lib-bdb/libmtbdb.a $(BDB_LIBS)

lib_bdb_unit_tests = tests/unit/test-bdb-commit tests/unit/test-bdb-checkpoint
check_PROGRAMS += $(lib_bdb_unit_tests)
TESTS += $(lib_bdb_unit_tests)
tests_unit_test_bdb_commit_SOURCES = tests/unit/test-bdb-commit.c tests/unit/test-bdb-util.h
tests_unit_test_bdb_checkpoint_SOURCES = tests/unit/test-bdb-checkpoint.c \
	tests/unit/test-bdb-util.h
tests_unit_test_bdb_commit_LDADD = $(MTBDB_LIBS) $(MAILTIER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_bdb_checkpoint_LDADD = $(MTBDB_LIBS) $(MAILTIER_LIBS) $(CMOCKA_LIBS)
