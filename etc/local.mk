# etc/local.mk — the shipped config and the mailtier.conf(5) man page, which
# is generated from the same tables the daemons load (no undocumented key).
dist_pkgsysconf_DATA = etc/mailtier.conf
man5_MANS = etc/mailtier.conf.5
CLEANFILES += etc/mailtier.conf.5

etc/mailtier.conf.5: ctl/mailtierctl$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) etc && ctl/mailtierctl$(EXEEXT) config doc > $@.tmp && mv $@.tmp $@
