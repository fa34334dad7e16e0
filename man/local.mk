# man/local.mk — the man pages of the daemons, mailtierctl and mailtier-load
# (mailtier.conf(5) is generated in etc/local.mk). Hand-written troff,
# distributed and installed as they are.
dist_man8_MANS = man/mailtier-mta.8 man/mailtier-mmp.8 \
	man/mailtier-popstore.8 man/mailtierctl.8
dist_man1_MANS = man/mailtier-load.1
