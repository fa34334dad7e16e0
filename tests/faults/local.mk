# tests/faults/local.mk — the fault-injection suite (tests/faults/faults.py,
# run in full by scripts/faults): `make check` runs the ledger checker's own
# test and the quick set (a cluster under load; kill -9 of the MTA, shard1
# and the MMP with IMAP changes through the MMP meanwhile, slapd stopped,
# 10 MB command lines and NUL/8-bit bytes in
# commands; every acknowledged message checked, memory back to baseline)
# and the kill faults again with every shard a replication group of three.
fault_tests = \
	tests/faults/test-ledger-check.py \
	tests/faults/test-faults-quick.py \
	tests/faults/test-faults-replicated.py

TESTS += $(fault_tests)
EXTRA_DIST += $(fault_tests) \
	tests/faults/faults.py \
	tests/faults/attacks.py \
	tests/faults/imap_load.py \
	tests/faults/ledger_check.py \
	scripts/faults
