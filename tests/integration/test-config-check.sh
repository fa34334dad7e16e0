#!/bin/sh
# test-config-check.sh — `mailtierctl config check` on the shipped example
# (must print ok) and on a broken file (must name each problem with
# FILE:LINE: and exit 1). Also checks the generated man page covers each key.
set -u
ctl="$MT_BUILDDIR/ctl/mailtierctl"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$ctl" -c "$MT_SRCDIR/etc/mailtier.conf" config check) || fail "example config: $out"
[ "$out" = "ok" ] || fail "example config printed '$out'"

broken="$MT_SRCDIR/tests/integration/configs/broken.conf"
out=$("$ctl" -c "$broken" config check); rc=$?
[ $rc -eq 1 ] || fail "broken config exit status $rc, want 1"
expected="$broken:4: unknown key 'cache_sise' in [directory]
$broken:10: duplicate key 'max_recipients' in [mta] (first set at line 9)
$broken:8: [mta] max_message_size: bad size unit (use B, K, M, G or T; binary multiples) (got '10 parsecs')"
[ "$out" = "$expected" ] || fail "broken config printed:
$out
want:
$expected"

out=$("$ctl" -c /nonexistent.conf config check); rc=$?
[ $rc -eq 1 ] || fail "missing file exit $rc"
case "$out" in "/nonexistent.conf: cannot open: No such file or directory") ;; *) fail "missing file: $out";; esac

"$ctl" config bogus >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "unknown command exit $rc, want 2"

# The man page is generated from the tables: every key of the example is in it.
man=$("$ctl" config doc) || fail "config doc"
for key in $(grep -E '^#?[a-z_]+ *=' "$MT_SRCDIR/etc/mailtier.conf" | sed 's/^#//; s/ *=.*//' | sort -u); do
	printf '%s\n' "$man" | grep -q "^\.B $key\$" || fail "man page lacks key $key"
done
echo "PASS: config check"
