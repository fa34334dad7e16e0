# ctl/local.mk — mailtierctl, the admin tool.
sbin_PROGRAMS += ctl/mailtierctl

ctl_mailtierctl_SOURCES = ctl/mailtierctl.c ctl/ctl.h ctl/ctl-config.c \
	ctl/ctl-util.c ctl/ctl-util.h ctl/ctl-directory.c ctl/ctl-users.c \
	ctl/ctl-queue.c ctl/ctl-store.c ctl/ctl-cluster.c ctl/ctl-cluster.h \
	ctl/ctl-cluster-files.c ctl/ctl-cluster-rspamd.c ctl/ctl-cluster-metrics.c ctl/ctl-metrics.h \
	ctl/ctl-metrics-parse.c ctl/ctl-metrics-scrape.c ctl/ctl-spawn.c ctl/ctl-spawn.h
ctl_mailtierctl_LDADD = store/libmtstore.a lib-mail/libmtmail.a $(MTBDB_LIBS) dirsvc/libdirsvc.a settings/libmtsettings.a $(DIRSVC_LIBS) $(MAILTIER_LIBS) -lm

# The metrics text parser, unit-tested on its own.
ctl_unit_tests = tests/unit/test-ctl-metrics
check_PROGRAMS += $(ctl_unit_tests)
TESTS += $(ctl_unit_tests)
tests_unit_test_ctl_metrics_SOURCES = tests/unit/test-ctl-metrics.c ctl/ctl-metrics-parse.c
tests_unit_test_ctl_metrics_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/ctl
tests_unit_test_ctl_metrics_LDADD = $(UNIT_LIBS) -lm
