# dirsvc/local.mk — the directory tier: libdirsvc (lookups, the admin
# changes mailtierctl makes, password hashing, provisioning, the local
# slapd's configuration) and its data files.
noinst_LIBRARIES += dirsvc/libdirsvc.a

dirsvc_libdirsvc_a_SOURCES = \
	dirsvc/dirsvc.c dirsvc/dirsvc.h dirsvc/dirsvc-private.h \
	dirsvc/dirsvc-results.c dirsvc/dirsvc-worker.c dirsvc/dirsvc-query.c \
	dirsvc/dirsvc-admin.c dirsvc/dirsvc-admin.h dirsvc/dirsvc-metrics.c \
	dirsvc/dircache.c dirsvc/dircache.h \
	dirsvc/ldap-escape.c dirsvc/ldap-escape.h \
	dirsvc/ldif.c dirsvc/ldif.h \
	dirsvc/pwhash.c dirsvc/pwhash.h \
	dirsvc/provision.c dirsvc/provision.h \
	dirsvc/slapd-config.c dirsvc/slapd-config.h

# What a program linking libdirsvc needs besides libmailtier.
DIRSVC_LIBS = $(LDAP_LIBS) $(OPENSSL_LIBS) $(CRYPT_LIBS)

dirsvcdatadir = $(pkgdatadir)/dirsvc
dist_dirsvcdata_DATA = dirsvc/mailtier.schema dirsvc/mailtier.ldif \
	dirsvc/base.ldif.in
dist_dirsvcdata_SCRIPTS = dirsvc/mailtier-slapd-setup.sh
EXTRA_DIST += dirsvc/README.md

# The bulk-generation tool for benchmarks and tests (not installed).
noinst_PROGRAMS += dirsvc/mt-provision-gen
dirsvc_mt_provision_gen_SOURCES = dirsvc/provision-gen-main.c
dirsvc_mt_provision_gen_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(MAILTIER_LIBS)

dirsvc_unit_tests = tests/unit/test-provision tests/unit/test-dircache \
	tests/unit/test-ldap-escape
check_PROGRAMS += $(dirsvc_unit_tests)
TESTS += $(dirsvc_unit_tests)
tests_unit_test_provision_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(UNIT_LIBS)
tests_unit_test_dircache_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(UNIT_LIBS)
tests_unit_test_ldap_escape_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(UNIT_LIBS)

# Integration: lookups, auth, failover, slapd killed/stopped — real slapd.
check_PROGRAMS += tests/integration/dirsvc-client
tests_integration_dirsvc_client_LDADD = dirsvc/libdirsvc.a settings/libmtsettings.a \
	$(DIRSVC_LIBS) $(MAILTIER_LIBS)
TESTS += tests/integration/test-dirsvc.py
EXTRA_DIST += tests/integration/test-dirsvc.py

# Integration: the admin API (add, find, passwd, del, escaping) — real slapd.
check_PROGRAMS += tests/integration/dirsvc-admin-client
tests_integration_dirsvc_admin_client_LDADD = dirsvc/libdirsvc.a \
	settings/libmtsettings.a $(DIRSVC_LIBS) $(MAILTIER_LIBS)
TESTS += tests/integration/test-dirsvc-admin.py
EXTRA_DIST += tests/integration/test-dirsvc-admin.py

# Integration: two providers in multi-provider delta-syncrepl (directory up
# --server-id/--peer): replication both ways, a provider killed, catch-up.
TESTS += tests/integration/test-directory-providers.py
EXTRA_DIST += tests/integration/test-directory-providers.py

# Benchmarks (not installed): bench/dirsvc runs them.
EXTRA_PROGRAMS += bench/dirsvc-cache
bench_dirsvc_cache_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(MAILTIER_LIBS)
