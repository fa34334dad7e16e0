# lib/local.mk — the shared core (libmailtier) and the config tables of every
# section (libmtsettings, which the daemons and mailtierctl link).
noinst_LIBRARIES += lib/libmailtier.a lib/libmtsettings.a

lib_libmailtier_a_SOURCES = \
	lib/alloc.c lib/alloc.h \
	lib/buf.c lib/buf.h \
	lib/log.c lib/log.h \
	lib/config.c lib/config-values.c lib/config.h \
	lib/lineio.c lib/lineio.h \
	lib/dotcodec.c lib/dotcodec.h \
	lib/address.c lib/address.h \
	lib/xtext.c lib/xtext.h \
	lib/loop.c lib/loop.h \
	lib/tls.c lib/tls.h \
	lib/sdnotify.c lib/sdnotify.h \
	lib/privdrop.c lib/privdrop.h \
	lib/cidr.c lib/cidr.h \
	lib/bdb-regions.c lib/bdb-regions.h \
	lib/authfail.c lib/authfail.h \
	lib/sasl.c lib/sasl.h

lib_libmtsettings_a_SOURCES = \
	lib/mailtier-settings.c lib/mailtier-settings.h \
	dirsvc/dirsvc-settings.c dirsvc/dirsvc-settings.h \
	mta/mta-settings.c mta/mta-settings.h \
	mmp/mmp-settings.c mmp/mmp-settings.h \
	popstore/popstore-settings.c popstore/popstore-settings.h \
	loadgen/loadgen-settings.c loadgen/loadgen-settings.h

# What a program linking libmailtier needs.
MAILTIER_LIBS = lib/libmailtier.a $(LIBEVENT_OPENSSL_LIBS) $(LIBEVENT_LIBS) \
	$(OPENSSL_LIBS) $(INIH_LIBS) $(SYSTEMD_LIBS) $(PTHREAD_LIBS)
