# dirsvc/local.mk — the directory tier: libdirsvc (lookups, password
# hashing, provisioning, the local slapd's configuration) and its data files.
noinst_LIBRARIES += dirsvc/libdirsvc.a

dirsvc_libdirsvc_a_SOURCES = \
	dirsvc/ldap-escape.c dirsvc/ldap-escape.h \
	dirsvc/ldif.c dirsvc/ldif.h \
	dirsvc/pwhash.c dirsvc/pwhash.h \
	dirsvc/provision.c dirsvc/provision.h \
	dirsvc/slapd-config.c dirsvc/slapd-config.h

# What a program linking libdirsvc needs besides libmailtier.
DIRSVC_LIBS = $(LDAP_LIBS) $(OPENSSL_LIBS) $(CRYPT_LIBS)

dirsvcdatadir = $(pkgdatadir)/dirsvc
dist_dirsvcdata_DATA = dirsvc/mailtier.schema dirsvc/mailtier.ldif \
	dirsvc/base.ldif.in dirsvc/mailtier-slapd-setup.sh
EXTRA_DIST += dirsvc/README.md

# The bulk-generation tool for benchmarks and tests (not installed).
noinst_PROGRAMS += dirsvc/mt-provision-gen
dirsvc_mt_provision_gen_SOURCES = dirsvc/provision-gen-main.c
dirsvc_mt_provision_gen_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(MAILTIER_LIBS)

check_PROGRAMS += tests/unit/test-provision
TESTS += tests/unit/test-provision
tests_unit_test_provision_SOURCES = tests/unit/test-provision.c
tests_unit_test_provision_LDADD = dirsvc/libdirsvc.a $(DIRSVC_LIBS) $(UNIT_LIBS)
