# settings/local.mk — the registry of every section of mailtier.conf
# (libmtsettings, which the daemons, mailtierctl and mailtier-load link):
# the shared sections and each tier's own table, gathered here, above the
# tiers, so that lib/ names no tier.
noinst_LIBRARIES += settings/libmtsettings.a

settings_libmtsettings_a_SOURCES = \
	settings/mailtier-settings.c settings/mailtier-settings.h \
	dirsvc/dirsvc-settings.c dirsvc/dirsvc-settings.h \
	mta/mta-settings.c mta/mta-settings.h \
	mta/milter-settings.c mta/milter-settings.h \
	mmp/mmp-settings.c mmp/mmp-settings.h \
	popstore/popstore-settings.c popstore/popstore-settings.h \
	loadgen/loadgen-settings.c loadgen/loadgen-settings.h
