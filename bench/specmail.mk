# bench/specmail.mk — bench/specmail: mailtier against Postfix + Dovecot under
# the same mailtier-load ramp (issue #7's headline figure), and the
# generator's own ceiling (--generator-only). A benchmark: distributed, not
# run by `make check`. Included from Makefile.am. bench/mta_postfix.py is
# bench/mta.py's Postfix instance, built from the same specmail-peer
# Postfix templates (bench/mta.py itself is listed in mta/local.mk).
EXTRA_DIST += bench/specmail bench/README.md bench/mta_postfix.py \
	bench/specmail-peer/up.sh bench/specmail-peer/down.sh \
	bench/specmail-peer/genldif.py \
	bench/specmail-peer/conf-tuned/slapd/slapd.conf \
	bench/specmail-peer/conf-tuned/postfix/main.cf \
	bench/specmail-peer/conf-tuned/postfix/master.cf \
	bench/specmail-peer/conf-tuned/postfix/ldap-users.cf \
	bench/specmail-peer/conf-tuned/dovecot/dovecot.conf \
	bench/specmail-peer/conf-tuned/dovecot/dovecot-ldap.conf.ext \
	bench/specmail-peer/conf-tuned/dovecot-proxy/dovecot.conf \
	bench/specmail-peer/conf-tuned/dovecot-proxy/dovecot-ldap-proxy.conf.ext \
	bench/specmail-peer/conf-defaults/slapd/slapd.conf \
	bench/specmail-peer/conf-defaults/postfix/main.cf \
	bench/specmail-peer/conf-defaults/postfix/master.cf \
	bench/specmail-peer/conf-defaults/postfix/ldap-users.cf \
	bench/specmail-peer/conf-defaults/dovecot/dovecot.conf \
	bench/specmail-peer/conf-defaults/dovecot/dovecot-ldap.conf.ext \
	bench/specmail-peer/conf-defaults/dovecot-proxy/dovecot.conf \
	bench/specmail-peer/conf-defaults/dovecot-proxy/dovecot-ldap-proxy.conf.ext
