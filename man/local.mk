# man/local.mk — the man pages of the daemons, mailtierctl and mailtier-load
# (mailtier.conf(5) is generated in etc/local.mk).
