# lib-bdb/local.mk — the storage layer (libmtbdb): one Berkeley DB
# durability stack under the MTA's queue and the message store — group
# commit, the checkpointer, region preallocation, the serving process's
# lock file, replication (repmgr). Includes lib/ only; names no tier and no record format.
noinst_LIBRARIES += lib-bdb/libmtbdb.a

lib_bdb_libmtbdb_a_SOURCES = \
	lib-bdb/bdb-commit.c lib-bdb/bdb-commit.h \
	lib-bdb/bdb-checkpoint.c lib-bdb/bdb-checkpoint.h \
	lib-bdb/bdb-regions.c lib-bdb/bdb-regions.h \
	lib-bdb/bdb-lock.c lib-bdb/bdb-lock.h \
	lib-bdb/bdb-repl.c lib-bdb/bdb-repl.h \
	lib-bdb/bdb-repl-ack.c lib-bdb/bdb-repl-ack.h

# What a program linking lib-bdb needs (before MAILTIER_LIBS).
MTBDB_LIBS = lib-bdb/libmtbdb.a $(BDB_LIBS)

lib_bdb_unit_tests = tests/unit/test-bdb-commit tests/unit/test-bdb-checkpoint \
	tests/unit/test-bdb-repl
check_PROGRAMS += $(lib_bdb_unit_tests)
TESTS += $(lib_bdb_unit_tests)
tests_unit_test_bdb_commit_SOURCES = tests/unit/test-bdb-commit.c tests/unit/test-bdb-util.h
tests_unit_test_bdb_checkpoint_SOURCES = tests/unit/test-bdb-checkpoint.c \
	tests/unit/test-bdb-util.h
tests_unit_test_bdb_commit_LDADD = $(MTBDB_LIBS) $(MAILTIER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_bdb_checkpoint_LDADD = $(MTBDB_LIBS) $(MAILTIER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_bdb_repl_SOURCES = tests/unit/test-bdb-repl.c tests/unit/test-bdb-util.h
tests_unit_test_bdb_repl_LDADD = $(MTBDB_LIBS) $(MAILTIER_LIBS) $(CMOCKA_LIBS)

# Replication with real processes: three bdb-repl-node sites on loopback
# ports, the master killed -9, a site restarted, two of three lost.
check_PROGRAMS += tests/integration/bdb-repl-node
tests_integration_bdb_repl_node_SOURCES = tests/integration/bdb-repl-node.c
tests_integration_bdb_repl_node_LDADD = $(MTBDB_LIBS) $(MAILTIER_LIBS)
TESTS += tests/integration/test-bdb-repl.py
EXTRA_DIST += tests/integration/test-bdb-repl.py
