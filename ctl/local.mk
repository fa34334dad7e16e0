# ctl/local.mk — mailtierctl, the admin tool.
sbin_PROGRAMS += ctl/mailtierctl

ctl_mailtierctl_SOURCES = ctl/mailtierctl.c ctl/ctl.h ctl/ctl-config.c \
	ctl/ctl-util.c ctl/ctl-util.h ctl/ctl-directory.c ctl/ctl-users.c
ctl_mailtierctl_LDADD = dirsvc/libdirsvc.a lib/libmtsettings.a $(DIRSVC_LIBS) $(MAILTIER_LIBS)
