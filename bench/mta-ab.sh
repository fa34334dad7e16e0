#!/bin/sh
# bench/mta-ab.sh — the MTA alone, two builds in the same run, alternating
# (A B A B ...), so a noisy stretch of this shared machine does not fall on
# one side only: bench/mta.py --only mailtier at one rate per run.
#   bench/mta-ab.sh BUILD_A BUILD_B [REPEATS] [RATE] [DURATION]
# e.g. bench/mta-ab.sh /tmp/before/build build 2 18000 95
# Prints each run's JSON step line (DATA mean/p50/p95/p99/max, errors, CPU),
# prefixed with the build it came from.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILD_A BUILD_B [REPEATS] [RATE] [DURATION]" >&2; exit 2; }
a=$1 b=$2 repeats=${3:-2} rate=${4:-18000} duration=${5:-95}
top=$(cd "$(dirname "$0")/.." && pwd)
rep=1
while [ "$rep" -le "$repeats" ]; do
	for build in "$a" "$b"; do
		MT_BUILDDIR=$build timeout $((duration + 300)) python3 "$top/bench/mta.py" \
			--only mailtier --rates "$rate" --duration "$duration" --warmup 5 2>&1 |
			grep '^{' | sed "s|^|rep=$rep build=$build |"
	done
	rep=$((rep + 1))
done
