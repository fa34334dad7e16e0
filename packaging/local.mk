# packaging/local.mk — systemd units, Debian and RPM packaging files.
EXTRA_DIST += packaging/systemd/mailtier.target packaging/systemd/mailtier-mta.service \
	packaging/systemd/mailtier-mmp.service packaging/systemd/mailtier-popstore@.service \
	packaging/systemd/mailtier.sysusers packaging/systemd/mailtier.tmpfiles
