#!/bin/sh
# bounded.sh — the log compiler of every test (tests/local.mk): runs one
# test under a time bound, so a test that hangs fails with its log instead
# of holding `make check` until CI's own limit kills everything, and ends
# the log with how long the test took. The bound is MT_TEST_TIMEOUT seconds
# (default 1200); `timeout` sends SIGTERM to the test's process group (the
# Python harness then stops its daemons and prints their logs) and SIGKILL
# 20 s later. Trust boundary: none (the build's own tests).
#   bounded.sh COMMAND [ARG]...
limit=${MT_TEST_TIMEOUT:-1200}
start=$(date +%s)
status=0
timeout --kill-after=20 "$limit" "$@" || status=$?
took=$(($(date +%s) - start))
if [ "$status" -eq 124 ]; then
	echo "bounded.sh: $*: did not finish within ${limit} s (MT_TEST_TIMEOUT): stopped, counted as failed" >&2
	exit 1
fi
echo "# took ${took} s" >&2
exit "$status"
