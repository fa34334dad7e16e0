# tests/multihost/local.mk — the five-host network-namespace test.
