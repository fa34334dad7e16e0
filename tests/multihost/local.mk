# tests/multihost/local.mk — the multi-host test: six hosts in network namespaces.
# It makes its own network namespaces and a bridge in one of them (never
# touching the host's interfaces), and skips (77) when not root or when
# `ip netns add` is not allowed.
multihost_tests = tests/multihost/test-multihost.py

TESTS += $(multihost_tests)
EXTRA_DIST += $(multihost_tests)
