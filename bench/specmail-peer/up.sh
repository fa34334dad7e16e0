#!/bin/bash
# up.sh -- start the specmail peer on loopback: slapd -> Postfix smtpd -> Dovecot LMTP/POP3/IMAP,
# and a second Dovecot as the POP3 and IMAP proxy (the "MMP" tier). Adapted from ../../shared/peers-tuned
# (and ../../shared/peers for VARIANT=defaults); the differences are only what bench/specmail needs:
#   - every port from a base (PEER_PORT): P slapd, P+1 SMTP, P+2 LMTP, P+3 POP3, P+4 POP3 proxy,
#     P+5 IMAP, P+6 IMAP proxy (IMAP is not in ../../shared/peers*: dovecot-imapd added, as bench/specmail --imap needs);
#   - users user1..userN@DOMAIN / secretN (mailtier-load's naming), N = NUSERS;
#   - the remote domain relayed to mailtier-load's sink (SINK_PORT) instead of Postfix's smtp-sink;
#   - the proxy always runs; runtime data under V; pids recorded there, stop with down.sh.
# Environment: V (runtime dir), VARIANT (tuned|defaults), NUSERS, DOMAIN, REMOTE_DOMAIN,
# PEER_PORT, SINK_PORT. Run as root; needs a vmail user (uid 5000) and the Debian packages
# postfix postfix-ldap dovecot-pop3d dovecot-imapd dovecot-lmtpd dovecot-ldap slapd ldap-utils.
set -eu
D=$(cd "$(dirname "$0")" && pwd)
V=${V:-/var/tmp/specmail/peer}
VARIANT=${VARIANT:-tuned}
N=${NUSERS:-10000}
DOMAIN=${DOMAIN:-example.test}
REMOTE_DOMAIN=${REMOTE_DOMAIN:-remote.test}
P=${PEER_PORT:-25100}
SINK_PORT=${SINK_PORT:-$((P + 9))}
[ -d "$D/conf-$VARIANT" ] || { echo "up.sh: no variant $VARIANT" >&2; exit 2; }
mkdir -p "$V"; rm -rf "$V/conf"; cp -r "$D/conf-$VARIANT" "$V/conf"; chmod -R u+w "$V/conf"
grep -rl "@" "$V/conf" | xargs sed -i -e "s|@CONF@|$V/conf|g" -e "s|@V@|$V|g" \
	-e "s|@DOMAIN@|$DOMAIN|g" -e "s|@REMOTE_DOMAIN@|$REMOTE_DOMAIN|g" -e "s|@SINK_PORT@|$SINK_PORT|g" \
	-e "s|@LDAP_PORT@|$P|g" -e "s|@SMTP_PORT@|$((P + 1))|g" -e "s|@LMTP_PORT@|$((P + 2))|g" \
	-e "s|@POP3_PORT@|$((P + 3))|g" -e "s|@PROXY_PORT@|$((P + 4))|g" \
	-e "s|@IMAP_PORT@|$((P + 5))|g" -e "s|@IMAP_PROXY_PORT@|$((P + 6))|g"
C=$V/conf
mkdir -p $V/run $V/log $V/ldap $V/mail $V/spool $V/postfix-data $V/run/dovecot $V/run/dovecot-proxy
chown vmail:vmail $V/mail
chown postfix $V/postfix-data
# 1. LDAP: provision offline with slapadd if the DB is empty
if [ ! -s $V/ldap/data.mdb ]; then
	python3 $D/genldif.py $N $DOMAIN > $V/users.ldif
	slapadd -q -f $C/slapd/slapd.conf -l $V/users.ldif
	echo "peer: slapadd $N users user1..user$N@$DOMAIN"
fi
slapd -h "ldap://127.0.0.1:$P/" -f $C/slapd/slapd.conf </dev/null >>$V/log/slapd.out 2>&1
for i in $(seq 50); do [ -s $V/run/slapd.pid ] && ldapsearch -x -H ldap://127.0.0.1:$P -b dc=bench,dc=test -s base >/dev/null 2>&1 && break; sleep 0.2; done
echo "peer: slapd pid $(cat $V/run/slapd.pid) ldap://127.0.0.1:$P"
# 2. Dovecot backend (LMTP + POP3 + IMAP), 3. the Dovecot POP3 + IMAP proxy
dovecot -c $C/dovecot/dovecot.conf </dev/null >>$V/log/dovecot.out 2>&1
dovecot -c $C/dovecot-proxy/dovecot.conf </dev/null >>$V/log/dovecot-proxy.out 2>&1
# 4. Postfix
postfix -c $C/postfix check </dev/null >>$V/log/postfix-start.out 2>&1 || true
postfix -c $C/postfix start </dev/null >>$V/log/postfix-start.out 2>&1
# wait for every listener (bounded: 15 s)
for port in $((P + 1)) $((P + 2)) $((P + 3)) $((P + 4)) $((P + 5)) $((P + 6)); do
	for i in $(seq 75); do
		python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),1).close()" 2>/dev/null && break
		[ $i = 75 ] && { echo "peer: port $port not listening after 15 s (logs in $V/log)" >&2; exit 1; }
		sleep 0.2
	done
done
echo "peer ($VARIANT): dovecot pid $(cat $V/run/dovecot/master.pid), proxy pid $(cat $V/run/dovecot-proxy/master.pid)," \
	"postfix master pid $(head -1 $V/spool/pid/master.pid | tr -d ' ')"
echo "peer: SMTP 127.0.0.1:$((P + 1)) LMTP 127.0.0.1:$((P + 2)) POP3 127.0.0.1:$((P + 3))" \
	"POP3 proxy 127.0.0.1:$((P + 4)) IMAP 127.0.0.1:$((P + 5)) IMAP proxy 127.0.0.1:$((P + 6));" \
	"@$REMOTE_DOMAIN relayed to 127.0.0.1:$SINK_PORT"
