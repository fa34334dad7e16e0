# packaging/local.mk — systemd units, Debian and RPM packaging files.
# scripts/build-deb and scripts/build-rpm build the packages from the
# `make dist` tarball, so everything they need is listed here.
EXTRA_DIST += packaging/systemd/mailtier.target packaging/systemd/mailtier-mta.service \
	packaging/systemd/mailtier-mmp.service packaging/systemd/mailtier-popstore@.service \
	packaging/systemd/mailtier.sysusers packaging/systemd/mailtier.tmpfiles
EXTRA_DIST += packaging/debian/changelog packaging/debian/control \
	packaging/debian/copyright packaging/debian/rules \
	packaging/debian/source/format \
	packaging/debian/mailtier.install packaging/debian/mailtier-load.install \
	packaging/debian/mailtier.docs packaging/debian/mailtier-load.docs \
	packaging/debian/mailtier.postrm \
	packaging/debian/mailtier.postinst packaging/debian/mailtier.prerm
EXTRA_DIST += packaging/rpm/mailtier.spec
EXTRA_DIST += scripts/build-deb scripts/build-rpm scripts/check-packages \
	tests/packaging/test-deb.sh tests/packaging/test-rpm.sh

# Monitoring: Prometheus alert rules (with their promtool unit tests, not
# installed) and a Grafana dashboard, in $(pkgdatadir)/prometheus and
# $(pkgdatadir)/grafana; `mailtierctl cluster up` names the rules in
# DIR/prometheus.yml.
prometheusdatadir = $(pkgdatadir)/prometheus
dist_prometheusdata_DATA = packaging/prometheus/mailtier-alerts.yml
grafanadatadir = $(pkgdatadir)/grafana
dist_grafanadata_DATA = packaging/grafana/mailtier-dashboard.json
EXTRA_DIST += packaging/prometheus/mailtier-alerts.test.yml
