#!/bin/sh
# test-store-crash.sh — kill -9 the store at random moments, recover, check.
#
# Each round starts the driver (tests/integration/test-store-crash run: 16
# clients delivering and expunging through the async API, each
# acknowledgement appended to a side file only after its completion), kills
# it with SIGKILL after a random 50..2500 ms (sometimes during start-up
# recovery, mostly mid-flight), then `verify` reopens the store (Berkeley DB
# recovery) and checks that every acknowledged message is there exactly
# once, byte for byte, and no acknowledged expunge came back. In round 3,
# `stat` joins the live store from another process first (mailtierctl's
# way). Expunges are lazy: in even rounds the driver's purger is held back,
# so the kill leaves acknowledged expunges with their bodies still queued;
# verify checks they are gone from the mailboxes all the same, then that the
# reopened store's purger empties the queue and leaves no orphaned body. At
# least one round must have found such a backlog. A kill between a large
# message's chunk writes and its delivery leaves a half-written body, which
# the reopen must sweep (the count is reported per round). Rounds:
# MT_STORE_CRASH_ROUNDS (default 12).
set -u
driver="$MT_BUILDDIR/tests/integration/test-store-crash"
rounds=${MT_STORE_CRASH_ROUNDS:-12}
dir=$(mktemp -d "${TMPDIR:-/tmp}/mt-store-crash.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

home=$dir/home
acks=$dir/acks
: >"$acks"
backlogs=0
halfs=0

# A random integer in [lo, hi).
rand() { od -An -N2 -tu2 /dev/urandom | awk -v lo="$1" -v hi="$2" '{ print lo + $1 % (hi - lo) }'; }

r=1
while [ "$r" -le "$rounds" ]; do
	"$driver" run "$home" "$acks" "$r" 2>"$dir/run.log" &
	pid=$!
	ms=$(rand 50 2500)
	sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
	if [ "$r" -eq 3 ]; then
		sleep 0.3
		out=$("$driver" stat "$home" 2>&1) || fail "stat while running: $out"
		echo "round $r: stat of the live store: $out"
	fi
	kill -0 "$pid" 2>/dev/null || { cat "$dir/run.log"; fail "round $r: driver died by itself"; }
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	pid=
	out=$("$driver" verify "$home" "$acks" 2>"$dir/verify.log") ||
		{ cat "$dir/verify.log"; fail "round $r: verification failed"; }
	echo "round $r: killed after ${ms}ms: $out"
	case $out in *purge_backlog=0) ;; *) backlogs=$((backlogs + 1)) ;; esac
	case $out in *half_written=0\ *) ;; *) halfs=$((halfs + 1)) ;; esac
	r=$((r + 1))
done

delivered=$(grep -c '^D' "$acks")
expunged=$(grep -c '^E' "$acks")
[ "$backlogs" -ge 1 ] || fail "no round was killed with expunged bodies queued"
[ "$delivered" -ge 200 ] || fail "only $delivered deliveries acknowledged in $rounds rounds"
[ "$expunged" -ge 1 ] || fail "no expunge acknowledged in $rounds rounds"
echo "PASS: store crash: $rounds kill -9 rounds, $delivered deliveries and $expunged expunges acknowledged, all intact; $backlogs rounds left a purge backlog, purged after the restart; $halfs left half-written bodies, swept at the reopen"
