#!/bin/sh
# tests/packaging/test-rpm.sh — build the RPM packages with scripts/build-rpm
# (or take them from $MT_RPM_DIR) and check what they hold: the daemons,
# mailtierctl, the config as a noreplace config file, the units, sysusers.d
# and tmpfiles.d files, the directory data and the man pages in mailtier;
# mailtier-load and its page in mailtier-load; scriptlets that create the
# user and never start a daemon. Nothing is installed.
#
# Exits 77 (skipped) without rpmbuild. Slow (a full build); not part of
# `make check`: scripts/check-packages runs it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if ! command -v rpmbuild >/dev/null 2>&1 || ! command -v rpm >/dev/null 2>&1; then
	echo "SKIP: rpmbuild is missing (Debian package rpm)"
	exit 77
fi

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mailtier-test-rpm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

rpmdir=${MT_RPM_DIR:-}
if [ -z "$rpmdir" ]; then
	rpmdir=$tmp/rpms
	"$top/scripts/build-rpm" "$rpmdir" || { echo "FAIL: scripts/build-rpm"; exit 1; }
fi
main_rpm=$(ls "$rpmdir"/mailtier-[0-9]*.rpm 2>/dev/null | head -n 1)
load_rpm=$(ls "$rpmdir"/mailtier-load-[0-9]*.rpm 2>/dev/null | head -n 1)
[ -n "$main_rpm" ] && [ -n "$load_rpm" ] ||
	{ echo "FAIL: no mailtier-*.rpm and mailtier-load-*.rpm in $rpmdir"; exit 1; }
ok "built $(basename "$main_rpm") $(basename "$load_rpm")"

rpm -qpl "$main_rpm" >"$tmp/main.list" 2>/dev/null
rpm -qpl "$load_rpm" >"$tmp/load.list" 2>/dev/null
for f in /usr/sbin/mailtier-mta /usr/sbin/mailtier-mmp /usr/sbin/mailtier-popstore \
	 /usr/sbin/mailtierctl /etc/mailtier/mailtier.conf \
	 /usr/lib/systemd/system/mailtier.target /usr/lib/systemd/system/mailtier-mta.service \
	 /usr/lib/systemd/system/mailtier-mmp.service \
	 /usr/lib/systemd/system/mailtier-popstore@.service \
	 /usr/lib/sysusers.d/mailtier.conf /usr/lib/tmpfiles.d/mailtier.conf \
	 /usr/share/mailtier/dirsvc/mailtier.schema \
	 /usr/share/mailtier/dirsvc/mailtier-slapd-setup.sh \
	 /usr/share/mailtier/prometheus/mailtier-alerts.yml \
	 /usr/share/mailtier/grafana/mailtier-dashboard.json; do
	if grep -qx "$f" "$tmp/main.list"; then ok "mailtier has $f"; else fail "mailtier lacks $f"; fi
done
for page in man5/mailtier.conf.5 man8/mailtier-mta.8 man8/mailtier-mmp.8 \
	    man8/mailtier-popstore.8 man8/mailtierctl.8; do
	if grep -q "^/usr/share/man/$page" "$tmp/main.list"; then ok "mailtier has $page"
	else fail "mailtier lacks $page"; fi
done
if grep -qx /usr/bin/mailtier-load "$tmp/load.list"; then ok "mailtier-load has /usr/bin/mailtier-load"
else fail "mailtier-load lacks /usr/bin/mailtier-load"; fi
if grep -q '^/usr/share/man/man1/mailtier-load.1' "$tmp/load.list"; then ok "mailtier-load has its man page"
else fail "mailtier-load lacks man1/mailtier-load.1"; fi
if grep -q 'mailtier-load' "$tmp/main.list"; then fail "mailtier ships mailtier-load files"
else ok "mailtier-load is only in its own package"; fi

if rpm -qpc "$main_rpm" 2>/dev/null | grep -qx /etc/mailtier/mailtier.conf; then
	ok "/etc/mailtier/mailtier.conf is a config file"
else
	fail "/etc/mailtier/mailtier.conf is not a config file"
fi
rpm -qp --scripts "$main_rpm" >"$tmp/scripts" 2>/dev/null
if grep -q 'systemd-sysusers' "$tmp/scripts"; then ok "%post creates the user (systemd-sysusers)"
else fail "no systemd-sysusers in the scriptlets"; fi
if grep -Eq 'systemctl (--[a-z-]+ )*(start|enable)|--now' "$tmp/scripts"; then
	fail "a scriptlet starts or enables a unit"
else
	ok "no scriptlet starts or enables a unit"
fi
mode=$(rpm -qp --queryformat '[%{FILEMODES:perms} %{FILENAMES}\n]' "$main_rpm" 2>/dev/null |
	awk '$2 == "/usr/sbin/mailtier-mta" { print $1 }')
case $mode in -rwxr-xr-x) ok "mailtier-mta is $mode" ;; *) fail "mailtier-mta is '$mode'" ;; esac

if [ "$failures" -ne 0 ]; then
	echo "test-rpm.sh: $failures check(s) failed"
	exit 1
fi
echo "test-rpm.sh: all checks passed"
exit 0
