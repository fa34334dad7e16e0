# scripts/lib.sh — shared by scripts/check and scripts/demo: installing the
# Debian packages mailtier needs and building the tree.

MT_TOP=$(cd "$(dirname "$0")/.." && pwd)

# Build and test dependencies (Debian 12 package names).
MT_BUILD_PACKAGES="build-essential autoconf automake libtool pkgconf
libevent-dev libssl-dev libsystemd-dev libcmocka-dev libc-ares-dev
libldap-dev libdb5.3-dev libinih-dev libcrypt-dev python3 openssl"
# What the integration tests, the demo and the benchmarks run for real
# (prometheus: its promtool checks the shipped alert rules, and
# test-metrics-prometheus.py scrapes a cluster with it).
MT_RUNTIME_PACKAGES="slapd ldap-utils db5.3-util swaks curl fetchmail isync
offlineimap3 getmail6 prometheus rspamd opendkim opendkim-tools unbound
bind9-dnsutils"
# What scripts/check-packages needs to build and check the .deb and .rpm
# packages (dpkg-buildpackage, debhelper with dh_installsysusers, rpmbuild,
# systemd-analyze, man for the installed pages).
MT_PACKAGING_PACKAGES="dpkg-dev debhelper rpm systemd man-db"

mt_log() { printf '==> %s\n' "$*"; }

mt_as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Install whichever of the given packages are missing (quick when none are).
mt_install_packages() {
	missing=""
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $pkg"
	done
	[ -z "$missing" ] && return 0
	mt_log "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	# slapd's postinst would configure a system directory we do not use.
	echo "slapd slapd/no_configuration boolean true" | mt_as_root debconf-set-selections 2>/dev/null || true
	mt_as_root apt-get update -q || return 1
	# shellcheck disable=SC2086
	mt_as_root apt-get install -y -q --no-install-recommends $missing || return 1
}

mt_install_deps() {
	# shellcheck disable=SC2086
	mt_install_packages $MT_BUILD_PACKAGES $MT_RUNTIME_PACKAGES
}

# mt_build DIR [configure args...]: configure (once) and build out of tree.
mt_build() {
	dir=$1; shift
	if [ ! -x "$MT_TOP/configure" ] || [ "$MT_TOP/configure.ac" -nt "$MT_TOP/configure" ] ||
	   [ "$MT_TOP/Makefile.am" -nt "$MT_TOP/Makefile.in" ]; then
		mt_log "autoreconf -fi"
		(cd "$MT_TOP" && autoreconf -fi) || return 1
	fi
	mkdir -p "$dir"
	if [ ! -f "$dir/Makefile" ] || [ "$dir/config.status" -ot "$MT_TOP/configure" ] ||
	   [ "$(cat "$dir/.mt-configure-args" 2>/dev/null)" != "$*" ]; then
		mt_log "configure $* (in $dir)"
		(cd "$dir" && "$MT_TOP/configure" "$@" >configure.out 2>&1) ||
			{ tail -n 30 "$dir/configure.out"; return 1; }
		printf '%s' "$*" > "$dir/.mt-configure-args"
	fi
	mt_log "make -j2 (in $dir)"
	make -C "$dir" -j2 >/dev/null || make -C "$dir"
}
