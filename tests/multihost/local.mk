# tests/multihost/local.mk — the multi-host tests: hosts in network namespaces
# (netns.py): the six-host cluster, and a replicated shard split by a partition.
# It makes its own network namespaces and a bridge in one of them (never
# touching the host's interfaces), and skips (77) when not root or when
# `ip netns add` is not allowed.
multihost_tests = tests/multihost/test-multihost.py \
	tests/multihost/test-store-partition.py

TESTS += $(multihost_tests)
EXTRA_DIST += $(multihost_tests) tests/multihost/netns.py
