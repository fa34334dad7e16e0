#!/bin/bash
# dirsvc-provision.sh — prove and time bulk provisioning against a real slapd.
#
# Builds (or takes) mt-provision-gen, writes a slapd.conf with dirsvc's C code
# into a temporary directory under /var/tmp, generates N load-test users
# (userK@DOMAIN, password secretK, rendezvous-hashed over the shards) as LDIF
# piped straight into `slapadd -q`, starts slapd on 127.0.0.1 on a free port,
# checks one user by mail (as the service DN, mailHost as predicted), a simple
# bind as that user (secretK; a wrong password must fail) and as the service
# DN, stops slapd by its pid and prints the timings. The directory is removed
# afterwards (KEEP=1 keeps it).
#
# usage: bench/dirsvc-provision.sh [N]            (default 100000)
# environment:
#   DOMAIN=example.test SHARDS=store1,store2 SCHEME=ssha512|crypt
#   TOOL_THREADS=2        slapadd indexer threads (slapd.conf tool-threads)
#   MT_PROVISION_GEN=path an already built mt-provision-gen (else built here)
#   KEEP=1                keep the temporary directory
# Needs: slapd, slapadd, ldapsearch, ldapwhoami (Debian slapd, ldap-utils);
# to build the tool: gcc, libssl-dev, libcrypt-dev.
set -euo pipefail

N=${1:-100000}
DOMAIN=${DOMAIN:-example.test}
SHARDS=${SHARDS:-store1,store2}
SCHEME=${SCHEME:-ssha512}
TOOL_THREADS=${TOOL_THREADS:-2}
SRC=$(cd "$(dirname "$0")/.." && pwd)

TMP=$(mktemp -d /var/tmp/mailtier-dirsvc-bench.XXXXXX)
DIR=$TMP/slapd
SLAPD_PID=
cleanup() {
	if [ -n "$SLAPD_PID" ] && kill -0 "$SLAPD_PID" 2>/dev/null; then
		kill -TERM "$SLAPD_PID"
		wait_gone "$SLAPD_PID" || kill -KILL "$SLAPD_PID" 2>/dev/null || :
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		echo "kept $TMP"
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# Wait up to 60 s for process $1 to exit.
wait_gone() {
	for _ in $(seq 600); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
# A TCP port on 127.0.0.1 nobody listens on.
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "no free port" >&2
	return 1
}

GEN=${MT_PROVISION_GEN:-}
if [ -z "$GEN" ]; then
	GEN=$TMP/mt-provision-gen
	gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
		-I"$SRC/lib" -I"$SRC/dirsvc" \
		"$SRC"/dirsvc/{provision-gen-main,provision,pwhash,ldif,slapd-config}.c \
		"$SRC"/lib/{alloc,buf,log}.c \
		$(pkg-config --cflags --libs libcrypto) -lcrypt -o "$GEN"
fi

PORT=$(free_port)
umask 077
# No trailing newline: ldapwhoami -y sends the whole file.
printf %s "$(head -c 18 /dev/urandom | base64)" > "$TMP/admin.pw"
printf %s "$(head -c 18 /dev/urandom | base64)" > "$TMP/service.pw"
eval "$("$GEN" slapd-config --dir "$DIR" --port "$PORT" --domain "$DOMAIN" \
	--schema "$SRC/dirsvc/mailtier.schema" --admin-pw-file "$TMP/admin.pw" \
	--service-pw-file "$TMP/service.pw" --auth-method hash \
	--tool-threads "$TOOL_THREADS" | sed 's/^\([a-z_]*\)=\(.*\)$/\1='"'"'\2'"'"'/')"
CONF=$DIR/slapd.conf
slaptest -Q -u -f "$CONF"

echo "dirsvc-provision: N=$N domain=$DOMAIN shards=$SHARDS scheme=$SCHEME" \
	"tool-threads=$TOOL_THREADS nproc=$(nproc) dir=$TMP"
"$GEN" bench-hash --scheme ssha512 --count 100000
"$GEN" bench-hash --scheme crypt --count 20

# Generation alone, to see its share of the pipeline.
t0=$(now)
"$GEN" users --domain "$DOMAIN" --count "$N" --shards "$SHARDS" \
	--scheme "$SCHEME" > /dev/null
t1=$(now)
gen_s=$(elapsed "$t0" "$t1")

# Generation piped into slapadd -q: the provisioning itself.
t0=$(now)
{ cat "$DIR/base.ldif"
  "$GEN" users --domain "$DOMAIN" --count "$N" --shards "$SHARDS" \
	--scheme "$SCHEME"; } | slapadd -q -f "$CONF"
t1=$(now)
load_s=$(elapsed "$t0" "$t1")

t0=$(now)
slapd -f "$CONF" -h "$urls"
SLAPD_PID=$(cat "$DIR/slapd.pid")
SVC=(-x -H "ldap://127.0.0.1:$PORT/" -D "$service_dn" -y "$TMP/service.pw")
up=0
for _ in $(seq 300); do
	if ldapwhoami "${SVC[@]}" > /dev/null 2>&1; then up=1; break; fi
	sleep 0.1
done
[ "$up" = 1 ] || { echo "FAIL: slapd does not answer a service bind"; exit 1; }
t1=$(now)
start_s=$(elapsed "$t0" "$t1")

# One user near the middle; its shard as the rendezvous hash predicts.
K=$(( (N + 1) / 2 ))
ADDR="user$K@$DOMAIN"
USER_DN="uid=$ADDR,ou=people,$suffix"
want_shard=$("$GEN" shard --shards "$SHARDS" "$ADDR" | cut -d' ' -f2)
t0=$(now)
got=$(ldapsearch -LLL "${SVC[@]}" -b "ou=people,$suffix" "(mail=$ADDR)" mailHost)
t1=$(now)
search_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
echo "$got" | grep -qx "dn: $USER_DN" || { echo "FAIL: search: $got"; exit 1; }
echo "$got" | grep -qx "mailHost: $want_shard" ||
	{ echo "FAIL: mailHost is not $want_shard: $got"; exit 1; }
whoami=$(ldapwhoami -x -H "ldap://127.0.0.1:$PORT/" -D "$USER_DN" -w "secret$K")
[ "$whoami" = "dn:$USER_DN" ] || { echo "FAIL: user bind: $whoami"; exit 1; }
if ldapwhoami -x -H "ldap://127.0.0.1:$PORT/" -D "$USER_DN" -w "wrong$K" \
	> /dev/null 2>&1; then
	echo "FAIL: a wrong password was accepted"; exit 1
fi
whoami=$(ldapwhoami "${SVC[@]}")
[ "$whoami" = "dn:$service_dn" ] || { echo "FAIL: service bind: $whoami"; exit 1; }
if ldapsearch -LLL -x -H "ldap://127.0.0.1:$PORT/" -b "$suffix" \
	"(mail=$ADDR)" > /dev/null 2>&1; then
	echo "FAIL: an anonymous search was answered"; exit 1
fi

t0=$(now)
kill -TERM "$SLAPD_PID"
wait_gone "$SLAPD_PID" || { echo "FAIL: slapd did not stop"; exit 1; }
SLAPD_PID=
t1=$(now)
stop_s=$(elapsed "$t0" "$t1")

db_used=$(du -sh "$DIR/db/data.mdb" | cut -f1)
echo "checks: search by mail (${search_ms} ms, mailHost=$want_shard)," \
	"user bind, wrong password refused, service bind, anonymous refused: ok"
echo "timing: generate_only=${gen_s}s generate+slapadd=${load_s}s" \
	"slapd_start=${start_s}s slapd_stop=${stop_s}s db_on_disk=$db_used"
echo "RESULT N=$N provision_seconds=$load_s"
