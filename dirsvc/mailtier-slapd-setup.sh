#!/bin/bash
# mailtier-slapd-setup.sh — configure the system slapd (cn=config,
# slapd-config(5)) for mailtier. Run as root on the directory host, after the
# slapd package is installed. Idempotent: run it again after an upgrade.
#
# What it does, over ldapi:/// with SASL EXTERNAL (root's peercred identity,
# which Debian's and RHEL's slapd map to cn=config's manager):
#   1. loads the misc schema (inetLocalMailRecipient) if missing, and
#      mailtier.ldif (cn=mailtier,cn=schema,cn=config);
#   2. loads the pw-sha2 ({SSHA512}) and constraint modules if missing;
#   3. finds the MDB database of the suffix (or creates one with
#      --admin-pw-file) and sets on it: olcDbMaxSize >= 8 GiB, equality
#      indexes on objectClass, uid, mail, mailLocalAddress, mailHost, the
#      mailtier ACLs (replacing the database's olcAccess; the old entry is
#      saved to --backup-dir first), and slapo-constraint on mailtierStatus
#      and mailtierQuota;
#   4. adds the base entries of base.ldif.in (suffix, ou=people, the service
#      DN) that do not exist yet.
#
# ACLs set on the database (dirsvc/README.md, "Access and the auth path"):
#   to *                 by root's ldapi peercred identity manage, else break
#                        (so mailtierctl can manage users as root over ldapi)
#   to attrs=userPassword by <service DN> read (hash) | none (bind),
#                        by anonymous auth, by * none
#   to *                 by <service DN> read, by * none
# The database's rootdn (the admin) writes everything; ACLs do not apply to it.
#
# usage: mailtier-slapd-setup.sh --domain DOMAIN | --suffix DN
#          [--service-pw-file FILE] [--auth-method bind|hash]
#          [--admin-pw-file FILE] [--db-dir DIR] [--data-dir DIR]
#          [--backup-dir DIR] [--strict-anon] [-H URI] [--dry-run]
#   --service-pw-file  password of cn=mailtier-service,<suffix>; needed when
#                      that entry is created, resets its password otherwise
#   --auth-method      as directory auth_method in mailtier.conf (default bind)
#   --admin-pw-file    rootpw of a database this script has to create
#   --db-dir           directory of such a database (/var/lib/ldap/mailtier)
#   --data-dir         where mailtier.ldif and base.ldif.in are (default: next
#                      to this script, else /usr/share/mailtier/dirsvc)
#   --strict-anon      also set, server-wide, olcDisallows: bind_anon and
#                      olcRequires: authc (affects every database of slapd)
#   --dry-run          print the changes as LDIF (for ldapmodify -a) instead
#                      of applying them
# Password files hold the password on their first line.
# Trust boundary: run by root; the arguments are the administrator's.
set -euo pipefail

URI=ldapi:///
SUFFIX= DOMAIN= SERVICE_PW_FILE= ADMIN_PW_FILE= AUTH_METHOD=bind
DB_DIR=/var/lib/ldap/mailtier BACKUP_DIR=/var/backups STRICT_ANON=0 DRY_RUN=0
SYSTEM_SCHEMA_DIR=/etc/ldap/schema
DATA_DIR=$(cd "$(dirname "$0")" && pwd)
[ -f "$DATA_DIR/mailtier.ldif" ] || DATA_DIR=/usr/share/mailtier/dirsvc
CRYPT_SALT_FORMAT='$6$rounds=50000$%.16s'	# as dirsvc/pwhash.h
MAXSIZE=8589934592
INDEX_ATTRS="objectClass uid mail mailLocalAddress mailHost"

die() { echo "mailtier-slapd-setup: $*" >&2; exit 1; }
say() { echo "mailtier-slapd-setup: $*"; }

while [ $# -gt 0 ]; do
	case $1 in
	-H) URI=$2; shift ;;
	--domain) DOMAIN=$2; shift ;;
	--suffix) SUFFIX=$2; shift ;;
	--service-pw-file) SERVICE_PW_FILE=$2; shift ;;
	--admin-pw-file) ADMIN_PW_FILE=$2; shift ;;
	--auth-method) AUTH_METHOD=$2; shift ;;
	--db-dir) DB_DIR=$2; shift ;;
	--data-dir) DATA_DIR=$2; shift ;;
	--backup-dir) BACKUP_DIR=$2; shift ;;
	--system-schema-dir) SYSTEM_SCHEMA_DIR=$2; shift ;;
	--strict-anon) STRICT_ANON=1 ;;
	--dry-run) DRY_RUN=1 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (--help)" ;;
	esac
	shift
done

case $AUTH_METHOD in
bind) PW_ACCESS=none ;;
hash) PW_ACCESS=read ;;
*) die "--auth-method must be bind or hash" ;;
esac
if [ -z "$SUFFIX" ]; then
	[ -n "$DOMAIN" ] || die "give --domain or --suffix"
	[[ $DOMAIN =~ ^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$ ]] || die "bad domain $DOMAIN"
	SUFFIX=dc=${DOMAIN//./,dc=}
fi
[[ $SUFFIX =~ ^dc=([A-Za-z0-9-]+)(,[A-Za-z]+=[^,\"\\]+)*$ ]] ||
	die "the suffix must be plain dc=...,dc=... (got $SUFFIX)"
SUFFIX_DC=${BASH_REMATCH[1]}
SERVICE_CN=mailtier-service
SERVICE_DN=cn=$SERVICE_CN,$SUFFIX
ROOT_PEERCRED=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth
[ -f "$DATA_DIR/mailtier.ldif" ] && [ -f "$DATA_DIR/base.ldif.in" ] ||
	die "mailtier.ldif or base.ldif.in not found in $DATA_DIR (--data-dir)"

SEARCH=(ldapsearch -Q -LLL -o ldif-wrap=no -Y EXTERNAL -H "$URI")
# Apply LDIF from stdin with ldapmodify -a (records without a changetype
# are adds), or print it with --dry-run.
apply() {
	if [ "$DRY_RUN" = 1 ]; then
		cat
		echo
	else
		ldapmodify -a -Q -Y EXTERNAL -H "$URI" > /dev/null
	fi
}
# The first line of a password file.
read_pw() { head -n 1 "$1" | tr -d '\r\n'; }
# {CRYPT} SHA-512 hash of the password in file $1.
hash_pw() {
	local tmp rc=0
	tmp=$(mktemp)
	printf %s "$(read_pw "$1")" > "$tmp"
	slappasswd -h '{CRYPT}' -c "$CRYPT_SALT_FORMAT" -T "$tmp" || rc=$?
	rm -f "$tmp"
	return $rc
}
# True if the DN $1 exists (searched as root via EXTERNAL).
dn_exists() { [ -n "$("${SEARCH[@]}" -b "$1" -s base dn 2>/dev/null || :)" ]; }

"${SEARCH[@]}" -b cn=config -s base dn > /dev/null ||
	die "cannot reach cn=config at $URI as root with SASL EXTERNAL"

# 1. Schema.
schema_has() {
	"${SEARCH[@]}" -b cn=schema,cn=config -s one "(cn=*$1)" dn | grep -q .
}
if ! schema_has misc; then
	say "loading the misc schema (inetLocalMailRecipient)"
	apply < "$SYSTEM_SCHEMA_DIR/misc.ldif"
fi
if ! schema_has mailtier; then
	say "loading the mailtier schema"
	apply < "$DATA_DIR/mailtier.ldif"
else
	say "mailtier schema already loaded"
fi

# 2. Modules.
modules=$("${SEARCH[@]}" -b cn=config -s one '(objectClass=olcModuleList)' dn olcModuleLoad)
module_dn=$(echo "$modules" | sed -n 's/^dn: //p' | head -n 1)
for m in pw-sha2 constraint; do
	if echo "$modules" | grep -Eq "^olcModuleLoad: (\{[0-9]+\})?$m(\.so|\.la)?$"; then
		continue
	fi
	say "loading module $m"
	if [ -n "$module_dn" ]; then
		printf 'dn: %s\nchangetype: modify\nadd: olcModuleLoad\nolcModuleLoad: %s\n' \
			"$module_dn" "$m" | apply
	else
		printf 'dn: cn=module,cn=config\nobjectClass: olcModuleList\ncn: module\nolcModuleLoad: %s\n' \
			"$m" | apply
		module_dn=cn=module{0},cn=config
	fi
done

# 3. The database.
db_dn=$("${SEARCH[@]}" -b cn=config -s one \
	"(&(objectClass=olcMdbConfig)(olcSuffix=$SUFFIX))" dn | sed -n 's/^dn: //p')
if [ -z "$db_dn" ]; then
	[ -n "$ADMIN_PW_FILE" ] ||
		die "no MDB database for $SUFFIX; give --admin-pw-file to create one"
	say "creating an MDB database for $SUFFIX in $DB_DIR"
	if [ "$DRY_RUN" = 0 ]; then
		owner=$(stat -c %U:%G "$(dirname "$DB_DIR")")
		install -d -m 0700 -o "${owner%:*}" -g "${owner#*:}" "$DB_DIR"
	fi
	printf 'dn: olcDatabase=mdb,cn=config\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\nolcDatabase: mdb\nolcSuffix: %s\nolcDbDirectory: %s\nolcRootDN: cn=admin,%s\nolcRootPW: %s\nolcDbMaxSize: %s\n' \
		"$SUFFIX" "$DB_DIR" "$SUFFIX" "$(hash_pw "$ADMIN_PW_FILE")" "$MAXSIZE" | apply
	db_dn=$("${SEARCH[@]}" -b cn=config -s one \
		"(&(objectClass=olcMdbConfig)(olcSuffix=$SUFFIX))" dn | sed -n 's/^dn: //p')
	[ -n "$db_dn" ] || [ "$DRY_RUN" = 1 ] || die "the new database did not appear"
	db_dn=${db_dn:-olcDatabase=mdb,cn=config}
fi
say "database $db_dn"
# (Empty in a --dry-run that would create the database.)
db=$("${SEARCH[@]}" -b "$db_dn" -s base 2>/dev/null) || [ "$DRY_RUN" = 1 ] ||
	die "cannot read $db_dn"
if [ "$DRY_RUN" = 0 ] && [ -n "$db" ]; then
	backup=$BACKUP_DIR/mailtier-slapd-setup.$(date +%Y%m%dT%H%M%S).ldif
	(umask 077; echo "$db" > "$backup")
	say "saved the database entry to $backup"
fi

{
	echo "dn: $db_dn"
	echo "changetype: modify"
	size=$(echo "$db" | sed -n 's/^olcDbMaxSize: //p')
	if [ -z "$size" ] || [ "$size" -lt "$MAXSIZE" ]; then
		printf 'replace: olcDbMaxSize\nolcDbMaxSize: %s\n-\n' "$MAXSIZE"
	fi
	for a in $INDEX_ATTRS; do
		# Indexed for equality already ("attr[,attr] [types]")?
		if echo "$db" | sed -n 's/^olcDbIndex: //p' | awk -v a="$a" '
			{ n = split($1, at, ","); t = (NF > 1) ? "," $2 "," : ",eq,"
			  for (i = 1; i <= n; i++)
				if (tolower(at[i]) == tolower(a) && t ~ /,(eq|equality),/) f = 1 }
			END { exit !f }'; then
			continue
		fi
		printf 'add: olcDbIndex\nolcDbIndex: %s eq\n-\n' "$a"
	done
	printf 'replace: olcAccess\n'
	printf 'olcAccess: to * by dn.exact="%s" manage by * break\n' "$ROOT_PEERCRED"
	printf 'olcAccess: to attrs=userPassword by dn.exact="%s" %s by anonymous auth by * none\n' \
		"$SERVICE_DN" "$PW_ACCESS"
	printf 'olcAccess: to * by dn.exact="%s" read by * none\n' "$SERVICE_DN"
	printf -- '-\n'
} | apply

if ! { "${SEARCH[@]}" -b "$db_dn" -s one '(objectClass=olcConstraintConfig)' dn 2>/dev/null || :; } |
	grep -q .; then
	say "adding slapo-constraint for mailtierStatus and mailtierQuota"
	printf '%s\n' "dn: olcOverlay=constraint,$db_dn" \
		"objectClass: olcOverlayConfig" "objectClass: olcConstraintConfig" \
		"olcOverlay: constraint" \
		'olcConstraintAttribute: mailtierStatus regex "^(active|disabled|hold)$"' \
		'olcConstraintAttribute: mailtierQuota regex "^[0-9]+$"' | apply
fi

# Passwords set with ldappasswd: SHA-512 crypt, unless the site chose.
global=$("${SEARCH[@]}" -b cn=config -s base olcPasswordCryptSaltFormat olcDisallows olcRequires)
frontend=$("${SEARCH[@]}" -b 'olcDatabase={-1}frontend,cn=config' -s base olcPasswordHash)
if ! echo "$frontend" | grep -q '^olcPasswordHash:'; then
	printf 'dn: olcDatabase={-1}frontend,cn=config\nchangetype: modify\nadd: olcPasswordHash\nolcPasswordHash: {CRYPT}\n' | apply
fi
if ! echo "$global" | grep -q '^olcPasswordCryptSaltFormat:'; then
	printf 'dn: cn=config\nchangetype: modify\nadd: olcPasswordCryptSaltFormat\nolcPasswordCryptSaltFormat: %s\n' \
		"$CRYPT_SALT_FORMAT" | apply
fi
if [ "$STRICT_ANON" = 1 ]; then
	say "server-wide: disallow anonymous bind, require authentication"
	printf 'dn: cn=config\nchangetype: modify\nreplace: olcDisallows\nolcDisallows: bind_anon\n-\nreplace: olcRequires\nolcRequires: authc\n' | apply
fi

# 4. Base entries (root manages the database through the first ACL).
service_hash=
if [ -n "$SERVICE_PW_FILE" ]; then
	service_hash=$(hash_pw "$SERVICE_PW_FILE")
fi
base=$(sed -e "/^#/d" -e "s|@SUFFIX@|$SUFFIX|g" -e "s|@SUFFIX_DC@|$SUFFIX_DC|g" \
	-e "s|@SERVICE_DN@|$SERVICE_DN|g" -e "s|@SERVICE_CN@|$SERVICE_CN|g" \
	-e "s|@SERVICE_PW_HASH@|${service_hash:-@SERVICE_PW_HASH@}|g" \
	"$DATA_DIR/base.ldif.in")
# One record per iteration: records are separated by empty lines.
echo "$base" | awk 'BEGIN { RS = ""; ORS = "\0" } { print }' |
while IFS= read -r -d '' record; do
	dn=$(echo "$record" | sed -n 's/^dn: //p')
	if [ "$DRY_RUN" = 0 ] && dn_exists "$dn"; then
		if [ "$dn" = "$SERVICE_DN" ] && [ -n "$service_hash" ]; then
			say "resetting the password of $dn"
			printf 'dn: %s\nchangetype: modify\nreplace: userPassword\nuserPassword: %s\n' \
				"$dn" "$service_hash" | apply
		fi
		continue
	fi
	case $record in
	*@SERVICE_PW_HASH@*) die "$dn does not exist: give --service-pw-file" ;;
	esac
	say "adding $dn"
	echo "$record" | apply
done
say "done: suffix $SUFFIX, service DN $SERVICE_DN, auth_method $AUTH_METHOD"
