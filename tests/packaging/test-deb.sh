#!/bin/sh
# tests/packaging/test-deb.sh — build the Debian packages (scripts/build-deb,
# or take mailtier_*.deb and mailtier-load_*.deb from $MT_DEB_DIR), install
# them on this machine with dpkg -i, check what they put in place (files,
# conffile, the mailtier user and state directory, units that pass
# `systemd-analyze verify`, nothing enabled, no daemon started), then
# dpkg --purge both and check they are gone.
#
# Needs root and dpkg; exits 77 (skipped) without them. Slow: a full
# package build unless MT_DEB_DIR is given. Not part of `make check`;
# scripts/check-packages runs it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: test-deb.sh installs packages with dpkg -i: run it as root"
	exit 77
fi
if ! command -v dpkg >/dev/null 2>&1; then
	echo "SKIP: dpkg is missing (not a Debian system)"
	exit 77
fi

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
check() {	# check DESCRIPTION COMMAND...
	desc=$1; shift
	if "$@" >/dev/null 2>&1; then ok "$desc"; else fail "$desc"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mailtier-test-deb.XXXXXX")
installed=no
cleanup() {
	if [ "$installed" = yes ]; then
		dpkg --purge mailtier-load mailtier >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Already installed (a developer's own install, or a test that died):
# this test cannot tell its own files from those.
if dpkg-query -W -f='${Status}' mailtier 2>/dev/null | grep -q 'ok installed' ||
   dpkg-query -W -f='${Status}' mailtier-load 2>/dev/null | grep -q 'ok installed'; then
	echo "SKIP: mailtier or mailtier-load is already installed; dpkg --purge them first"
	exit 77
fi

# The packages.
debdir=${MT_DEB_DIR:-}
if [ -z "$debdir" ]; then
	debdir=$tmp/debs
	"$top/scripts/build-deb" "$debdir" || { echo "FAIL: scripts/build-deb"; exit 1; }
fi
main_deb=$(ls "$debdir"/mailtier_*.deb 2>/dev/null | head -n 1)
load_deb=$(ls "$debdir"/mailtier-load_*.deb 2>/dev/null | head -n 1)
[ -n "$main_deb" ] && [ -n "$load_deb" ] ||
	{ echo "FAIL: no mailtier_*.deb and mailtier-load_*.deb in $debdir"; exit 1; }

# What runs from /usr/sbin before (nothing, normally): daemons of the
# package would show up here, whatever else runs from build trees.
packaged_daemons() {
	for exe in /proc/[0-9]*/exe; do
		target=$(readlink "$exe" 2>/dev/null) || continue
		case $target in
		/usr/sbin/mailtier-mta*|/usr/sbin/mailtier-mmp*|/usr/sbin/mailtier-popstore*)
			pid=${exe#/proc/}; echo "${pid%/exe} $target" ;;
		esac
	done
}
before=$(packaged_daemons)

echo "== dpkg -i $(basename "$main_deb") $(basename "$load_deb")"
installed=yes
if ! dpkg -i "$main_deb" "$load_deb" >"$tmp/dpkg-i.log" 2>&1; then
	cat "$tmp/dpkg-i.log"
	echo "FAIL: dpkg -i"
	exit 1
fi
ok "dpkg -i"

# Files in place.
for f in /usr/sbin/mailtier-mta /usr/sbin/mailtier-mmp /usr/sbin/mailtier-popstore \
	 /usr/sbin/mailtierctl /usr/bin/mailtier-load; do
	check "$f is an executable" test -x "$f"
done
for f in /etc/mailtier/mailtier.conf \
	 /lib/systemd/system/mailtier.target \
	 /lib/systemd/system/mailtier-mta.service \
	 /lib/systemd/system/mailtier-mmp.service \
	 /lib/systemd/system/mailtier-popstore@.service \
	 /usr/lib/sysusers.d/mailtier.conf /usr/lib/tmpfiles.d/mailtier.conf \
	 /usr/share/mailtier/dirsvc/mailtier.schema /usr/share/mailtier/dirsvc/mailtier.ldif \
	 /usr/share/mailtier/dirsvc/base.ldif.in \
	 /usr/share/mailtier/prometheus/mailtier-alerts.yml \
	 /usr/share/mailtier/grafana/mailtier-dashboard.json \
	 /usr/share/man/man5/mailtier.conf.5.gz /usr/share/man/man8/mailtier-mta.8.gz \
	 /usr/share/man/man8/mailtier-mmp.8.gz /usr/share/man/man8/mailtier-popstore.8.gz \
	 /usr/share/man/man8/mailtierctl.8.gz /usr/share/man/man1/mailtier-load.1.gz; do
	check "$f is installed" test -f "$f"
done
check "mailtier-slapd-setup.sh is executable" test -x /usr/share/mailtier/dirsvc/mailtier-slapd-setup.sh
check "/etc/mailtier/mailtier.conf is a conffile" \
	sh -c "dpkg-query -W -f='\${Conffiles}' mailtier | grep -q ' /etc/mailtier/mailtier.conf '"
check "mailtier-load is in its own package" sh -c "dpkg -S /usr/bin/mailtier-load | grep -q '^mailtier-load:'"
check "mailtierctl runs" /usr/sbin/mailtierctl --help
check "mailtier-load --version" /usr/bin/mailtier-load --version
check "the shipped mailtier.conf passes config check" \
	sh -c "/usr/sbin/mailtierctl -c /etc/mailtier/mailtier.conf config check | grep -qx ok"
if command -v man >/dev/null 2>&1; then
	for page in mailtier-mta.8 mailtier-mmp.8 mailtier-popstore.8 mailtierctl.8 \
		    mailtier-load.1 mailtier.conf.5; do
		check "man ${page%.*}(${page##*.}) renders" \
			sh -c "man ${page##*.} ${page%.*} 2>&1 | grep -qi '^name'"
	done
fi

# The user and the state directory (sysusers.d, tmpfiles.d in postinst).
check "getent passwd mailtier" getent passwd mailtier
check "getent group mailtier" getent group mailtier
check "/var/lib/mailtier exists" test -d /var/lib/mailtier
if [ -d /var/lib/mailtier ]; then
	owner=$(stat -c '%U:%G %a' /var/lib/mailtier)
	if [ "$owner" = "mailtier:mailtier 750" ]; then ok "/var/lib/mailtier is $owner"
	else fail "/var/lib/mailtier is $owner, not mailtier:mailtier 750"; fi
fi

# The units.
if command -v systemd-analyze >/dev/null 2>&1; then
	(cd /lib/systemd/system && systemd-analyze verify mailtier.target \
		mailtier-mta.service mailtier-mmp.service mailtier-popstore@store1.service) \
		>"$tmp/verify.log" 2>&1
	rc=$?
	# Complaints about units of other packages are not ours.
	if [ $rc -eq 0 ] && ! grep -i 'mailtier' "$tmp/verify.log" >/dev/null; then
		ok "systemd-analyze verify"
	else
		cat "$tmp/verify.log"
		fail "systemd-analyze verify (exit $rc)"
	fi
else
	echo "note: systemd-analyze is missing (Debian package systemd): units not verified"
fi
if command -v systemctl >/dev/null 2>&1; then
	for unit in mailtier.target mailtier-mta.service mailtier-mmp.service; do
		state=$(systemctl is-enabled "$unit" 2>/dev/null)
		case $state in
		disabled) ok "$unit is not enabled" ;;
		"") echo "note: systemctl is-enabled $unit says nothing here" ;;
		*) fail "$unit is $state after install (must be disabled)" ;;
		esac
	done
	if [ -d /run/systemd/system ]; then
		for unit in mailtier.target mailtier-mta.service mailtier-mmp.service; do
			if systemctl is-active --quiet "$unit"; then fail "$unit was started"
			else ok "$unit is not running"; fi
		done
	fi
fi

# No daemon started by the installation.
after=$(packaged_daemons)
if [ "$after" = "$before" ]; then ok "no mailtier daemon was started"
else fail "daemons running from /usr/sbin after install: $after"; fi

# Purge.
echo "== dpkg --purge mailtier-load mailtier"
if dpkg --purge mailtier-load mailtier >"$tmp/purge.log" 2>&1; then
	ok "dpkg --purge"
	installed=no
else
	cat "$tmp/purge.log"
	fail "dpkg --purge"
fi
for pkg in mailtier mailtier-load; do
	if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'installed'; then
		fail "$pkg is still installed"
	else
		ok "$pkg is gone"
	fi
done
for f in /usr/sbin/mailtier-mta /usr/sbin/mailtier-mmp /usr/sbin/mailtier-popstore \
	 /usr/sbin/mailtierctl /usr/bin/mailtier-load /etc/mailtier/mailtier.conf \
	 /etc/mailtier /lib/systemd/system/mailtier-mta.service \
	 /lib/systemd/system/mailtier-popstore@.service /usr/lib/sysusers.d/mailtier.conf \
	 /usr/lib/tmpfiles.d/mailtier.conf /usr/share/mailtier /var/lib/mailtier \
	 /usr/share/man/man8/mailtierctl.8.gz; do
	if [ -e "$f" ]; then fail "$f is left after purge"; else ok "$f removed"; fi
done
# The mailtier user stays, as Debian policy asks of system users.

if [ "$failures" -ne 0 ]; then
	echo "test-deb.sh: $failures check(s) failed"
	exit 1
fi
echo "test-deb.sh: all checks passed"
exit 0
