#!/bin/sh
# popstore-store.sh — run the store benchmark (bench/popstore-store.c):
# deliveries/s of ~24 KB messages at 1, 8 and 32 concurrent producers and
# log flushes per delivery, medians of 3 runs, then the read side.
#
# usage: bench/popstore-store.sh [BUILD_DIR] [popstore-store options]
#   BUILD_DIR defaults to build/ (scripts/check's tree); the program is built
#   there first. Options go to the program, e.g. -t 10 -p 1,8,32,64 -c 2.
#   Stores are made under /var/tmp (a real disk, fsync on) unless -d DIR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
if [ $# -gt 0 ] && [ -d "$1" ]; then
	build=$(cd "$1" && pwd)
	shift
fi
make -C "$build" -s bench/popstore-store
echo "+ $build/bench/popstore-store $*"
exec "$build/bench/popstore-store" "$@"
