# ctl/local.mk — mailtierctl, the admin tool.
sbin_PROGRAMS += ctl/mailtierctl

ctl_mailtierctl_SOURCES = ctl/mailtierctl.c ctl/ctl.h ctl/ctl-config.c
ctl_mailtierctl_LDADD = lib/libmtsettings.a $(MAILTIER_LIBS)
