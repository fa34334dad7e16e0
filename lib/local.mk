# lib/local.mk — the shared core (libmailtier): general code that names no
# tier and no protocol a tier owns.
noinst_LIBRARIES += lib/libmailtier.a

lib_libmailtier_a_SOURCES = \
	lib/alloc.c lib/alloc.h \
	lib/clock.c lib/clock.h \
	lib/buf.c lib/buf.h \
	lib/log.c lib/log.h \
	lib/loglimit.c lib/loglimit.h \
	lib/config.c lib/config-values.c lib/config.h \
	lib/lineio.c lib/lineio.h \
	lib/dotcodec.c lib/dotcodec.h \
	lib/address.c lib/address.h \
	lib/xtext.c lib/xtext.h \
	lib/utf8.c lib/utf8.h \
	lib/loop.c lib/loop.h \
	lib/tls.c lib/tls.h \
	lib/sdnotify.c lib/sdnotify.h \
	lib/privdrop.c lib/privdrop.h \
	lib/cidr.c lib/cidr.h \
	lib/thread.c lib/thread.h \
	lib/authfail.c lib/authfail.h \
	lib/authfail-metrics.c lib/authfail-metrics.h \
	lib/sasl.c lib/sasl.h \
	lib/secret.c lib/secret.h \
	lib/metrics.c lib/metrics-process.c lib/metrics.h \
	lib/metrics-http.c lib/metrics-http.h \
	lib/http-request.c lib/http-request.h

# What a program linking libmailtier needs.
MAILTIER_LIBS = lib/libmailtier.a $(LIBEVENT_OPENSSL_LIBS) $(LIBEVENT_LIBS) \
	$(OPENSSL_LIBS) $(INIH_LIBS) $(SYSTEMD_LIBS) $(PTHREAD_LIBS)
