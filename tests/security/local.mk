# tests/security/local.mk — the security pass (issue #9 item 3): real
# daemons and real clients checking no open relay, SMTP smuggling, AUTH
# (TLS first, per-address slow-down, no user enumeration, no password in
# any log), TLS (1.2+, no compression or renegotiation, SIGHUP reload),
# privilege drop, the systemd units' hardening, header injection, and
# recipient enumeration (issue #19 item 6).
security_tests = \
	tests/security/test-sec-relay.py \
	tests/security/test-sec-smuggling.py \
	tests/security/test-sec-auth-mta.py \
	tests/security/test-sec-auth-mmp.py \
	tests/security/test-sec-auth-popstore.py \
	tests/security/test-sec-tls-mta.py \
	tests/security/test-sec-tls-mmp.py \
	tests/security/test-sec-privdrop.py \
	tests/security/test-sec-systemd.py \
	tests/security/test-sec-headers.py \
	tests/security/test-sec-postmaster.py \
	tests/security/test-sec-pipelining.py \
	tests/security/test-sec-missing-headers.py \
	tests/security/test-sec-sender-login.py \
	tests/security/test-sec-rcpt-enum.py

TESTS += $(security_tests)
EXTRA_DIST += $(security_tests) \
	tests/security/sec_setup.py \
	tests/security/seccomp-wrap.py
