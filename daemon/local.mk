# daemon/local.mk — the daemon skeleton (libmtdaemon): the one main of
# mailtier-mta, mailtier-mmp and mailtier-popstore (daemon.c) and their one
# command line (daemon-args.c). Above settings/ (it loads the config
# through the registry), below the tiers.
noinst_LIBRARIES += daemon/libmtdaemon.a

daemon_libmtdaemon_a_SOURCES = \
	daemon/daemon.c daemon/daemon.h \
	daemon/daemon-args.c daemon/daemon-args.h
