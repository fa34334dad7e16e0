#!/bin/bash
# down.sh -- stop the specmail peer started by up.sh (same V), by pid files only.
# Adapted from ../../shared/peers-tuned/down.sh.
V=${V:-/var/tmp/specmail/peer}
stop_pid() { # name pidfile
	[ -s "$2" ] || return 0
	p=$(head -1 "$2" | tr -d ' ')
	if kill -0 "$p" 2>/dev/null; then
		kill "$p"
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
		kill -0 "$p" 2>/dev/null && { echo "peer: $1 pid $p still alive, SIGKILL"; kill -9 "$p"; }
		echo "peer: $1 stopped (pid $p)"
	fi
	rm -f "$2"
}
[ -s $V/spool/pid/master.pid ] && postfix -c $V/conf/postfix stop >/dev/null 2>&1
sleep 1
stop_pid postfix $V/spool/pid/master.pid
stop_pid dovecot-proxy $V/run/dovecot-proxy/master.pid
stop_pid dovecot $V/run/dovecot/master.pid
stop_pid slapd $V/run/slapd.pid
exit 0
