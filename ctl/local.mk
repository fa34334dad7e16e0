# ctl/local.mk — mailtierctl, the admin tool.
sbin_PROGRAMS += ctl/mailtierctl

ctl_mailtierctl_SOURCES = ctl/mailtierctl.c ctl/ctl.h ctl/ctl-config.c \
	ctl/ctl-util.c ctl/ctl-util.h ctl/ctl-directory.c ctl/ctl-users.c \
	ctl/ctl-queue.c ctl/ctl-store.c ctl/ctl-cluster.c ctl/ctl-cluster.h \
	ctl/ctl-cluster-files.c ctl/ctl-spawn.c ctl/ctl-spawn.h
ctl_mailtierctl_LDADD = store/libmtstore.a lib-mail/libmtmail.a $(MTBDB_LIBS) dirsvc/libdirsvc.a settings/libmtsettings.a $(DIRSVC_LIBS) $(MAILTIER_LIBS)
