/* slapd-config.c — write a local slapd's slapd.conf and base entries (see
 * slapd-config.h). Directives: slapd.conf(5), slapd-mdb(5), slapd.access(5),
 * slapo-constraint(5); ldapi URLs: RFC 4516 percent-encoding of the path.
 * Multi-provider (server_id != 0): slapo-syncprov(5), slapo-accesslog(5),
 * the syncrepl and multiprovider directives of slapd.conf(5) and the
 * delta-syncrepl layout of the OpenLDAP 2.5 admin guide (replication).
 * Trust boundary: administrator-supplied names and paths, checked by
 * conf_value_ok() before they reach a directive. */
#include "slapd-config.h"

#include "alloc.h"
#include "ldif.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Rounds for passwords set later through the Password Modify extended
 * operation (ldappasswd); the same as pwhash.h's default. */
#define PASSWORD_CRYPT_SALT_FORMAT "$6$rounds=50000$%.16s"

/* Error text handed out through error_r: valid until this thread's next
 * call into this file. */
static _Thread_local char errbuf[512];

static const char *errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *errf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return errbuf;
}

/* A value written into slapd.conf, quoted: no control characters, no '"'
 * or '\\' (slapd.conf has no portable escaping), not empty. */
static bool conf_value_ok(const char *v)
{
	if (v == NULL || *v == '\0')
		return false;
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
			return false;
	}
	return true;
}

/* A provider needs an id in range, at least one peer (multiprovider
 * needs a syncrepl consumer), and quotable peer URIs and password. */
static bool check_replication(const struct mt_slapd_params *p,
			      const char **error_r)
{
	if (p->server_id == 0) {
		if (p->n_peers == 0)
			return true;
		*error_r = "slapd config: peer providers need a server id";
		return false;
	}
	if (p->server_id > MT_SLAPD_SERVER_ID_MAX || p->n_peers == 0 ||
	    p->n_peers > MT_SLAPD_PEERS_MAX) {
		*error_r = errf("slapd config: a provider needs a server id "
				"1..%u and 1..%u peers", MT_SLAPD_SERVER_ID_MAX,
				MT_SLAPD_PEERS_MAX);
		return false;
	}
	for (size_t i = 0; i < p->n_peers; i++) {
		if (!conf_value_ok(p->peer_uris[i]) ||
		    strchr(p->peer_uris[i], ' ') != NULL) {
			*error_r = "slapd config: bad peer URI";
			return false;
		}
	}
	if (!conf_value_ok(p->repl_password) ||
	    strchr(p->repl_password, ' ') != NULL) {
		*error_r = "slapd config: the replication password is missing "
			"or has a space, '\"', '\\' or control character";
		return false;
	}
	return true;
}

static bool check_params(const struct mt_slapd_params *p, const char **error_r)
{
	static const struct { size_t off; const char *name; } req[] = {
#define F(f) { offsetof(struct mt_slapd_params, f), #f }
		F(dir), F(suffix), F(admin_dn), F(admin_pw_hash),
		F(service_dn), F(service_pw_hash), F(mailtier_schema),
#undef F
	};
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		const char *v = *(const char *const *)((const char *)p + req[i].off);
		if (!conf_value_ok(v)) {
			*error_r = errf("slapd config: %s is missing or "
						"has a '\"', '\\\\' or control "
						"character", req[i].name);
			return false;
		}
	}
	if ((p->schema_dir != NULL && !conf_value_ok(p->schema_dir)) ||
	    (p->module_dir != NULL && !conf_value_ok(p->module_dir)) ||
	    (p->log_level != NULL && !conf_value_ok(p->log_level))) {
		*error_r = "slapd config: bad schema_dir, module_dir or log_level";
		return false;
	}
	if (p->port == 0 || p->port > 65535) {
		*error_r = "slapd config: port must be 1..65535";
		return false;
	}
	return check_replication(p, error_r);
}

bool mt_slapd_default_dns(const char *domain, char **suffix_r,
			  char **admin_dn_r, char **service_dn_r,
			  const char **error_r)
{
	struct mt_buf suffix = MT_BUF_INIT;

	if (!mt_dn_from_domain(&suffix, domain, error_r)) {
		mt_buf_free(&suffix);
		return false;
	}
	*admin_dn_r = mt_xasprintf("cn=admin,%s", suffix.data);
	*service_dn_r = mt_xasprintf("cn=mailtier-service,%s", suffix.data);
	*suffix_r = mt_buf_steal(&suffix);
	return true;
}

/* The change log delta-syncrepl consumers replay (admin guide, "Delta-
 * syncrepl"): read by the peers bound as admin_dn, no one else. */
static void append_accesslog_db(struct mt_buf *c, const struct mt_slapd_params *p)
{
	mt_buf_appendf(c,
		"# The change log the peers replay (delta-syncrepl).\n"
		"database mdb\n"
		"suffix \"" MT_SLAPD_ACCESSLOG_SUFFIX "\"\n"
		"directory \"%1$s/accesslog\"\n"
		"maxsize %2$" PRIu64 "\n"
		"index default eq\n"
		"index entryCSN,objectClass,reqEnd,reqResult,reqStart,reqDN\n"
		"overlay syncprov\n"
		"syncprov-nopresent TRUE\n"
		"syncprov-reloadhint TRUE\n"
		"limits dn.exact=\"%3$s\" time=unlimited size=unlimited\n"
		"access to *\n\tby dn.exact=\"%3$s\" read\n\tby * none\n\n",
		p->dir, p->max_size ? p->max_size : MT_SLAPD_MAXSIZE_DEFAULT,
		p->admin_dn);
}

/* syncprov and accesslog on the main database, a refreshAndPersist
 * consumer of every peer, and multiprovider. The peers' URIs must not be
 * this slapd's own, or it would replicate from itself. Retry every second
 * 30 times, then every 5 s for ever (not HA.md's "5 5 60 +"): the
 * consumer is the only way a peer's writes arrive here, and after a peer
 * comes back, writes go to it again (the first URI), so a minute between
 * retries would be a minute in which this provider answers stale. A
 * connect to a dead peer every 5 s costs nothing. */
static void append_provider(struct mt_buf *c, const struct mt_slapd_params *p)
{
	mt_buf_append_str(c,
		"\n# Multi-provider with delta-syncrepl (dirsvc/README.md, \"Two providers\").\n"
		"index entryCSN,entryUUID eq\n"
		"overlay syncprov\n"
		"syncprov-checkpoint 100 5\n"
		"overlay accesslog\n"
		"logdb \"" MT_SLAPD_ACCESSLOG_SUFFIX "\"\n"
		"logops writes\n"
		"logsuccess TRUE\n"
		"# Keep a week of changes, purged daily; a peer away longer\n"
		"# falls back to a full refresh.\n"
		"logpurge 07+00:00 01+00:00\n");
	for (size_t i = 0; i < p->n_peers; i++)
		mt_buf_appendf(c,
			"syncrepl rid=%03zu provider=%s\n"
			"\tbindmethod=simple binddn=\"%s\" credentials=\"%s\"\n"
			"\tsearchbase=\"%s\"\n"
			"\tlogbase=\"" MT_SLAPD_ACCESSLOG_SUFFIX "\"\n"
			"\tlogfilter=\"(&(objectClass=auditWriteObject)(reqResult=0))\"\n"
			"\tschemachecking=on type=refreshAndPersist syncdata=accesslog\n"
			"\tnetwork-timeout=2 timeout=5 keepalive=60:3:10\n"
			"\tretry=\"1 30 5 +\"\n",
			i + 1, p->peer_uris[i], p->admin_dn, p->repl_password,
			p->suffix);
	mt_buf_append_str(c, "multiprovider on\n");
}

static void append_config(struct mt_buf *c, const struct mt_slapd_params *p)
{
	const char *schema = p->schema_dir ? p->schema_dir : MT_SLAPD_SCHEMA_DIR_DEFAULT;
	const char *pw_access = p->service_reads_password ? "read" : "none";

	mt_buf_appendf(c,
		"# slapd.conf for a local mailtier directory, written by mailtier\n"
		"# (dirsvc/slapd-config.c). Rewritten by `mailtierctl directory up`;\n"
		"# do not edit. See dirsvc/README.md.\n\n"
		"include %1$s/core.schema\n"
		"include %1$s/cosine.schema\n"
		"include %1$s/inetorgperson.schema\n"
		"# inetLocalMailRecipient: mailLocalAddress, mailHost, mailRoutingAddress\n"
		"include %1$s/misc.schema\n"
		"include \"%2$s\"\n\n",
		schema, p->mailtier_schema);
	mt_buf_appendf(c,
		"modulepath \"%1$s\"\n"
		"moduleload back_mdb\n"
		"# {SSHA512} for bulk load-test accounts\n"
		"moduleload pw-sha2\n"
		"moduleload constraint\n\n"
		"pidfile \"%2$s/slapd.pid\"\n"
		"argsfile \"%2$s/slapd.args\"\n"
		"loglevel %3$s\n"
		"tool-threads %4$u\n\n",
		p->module_dir ? p->module_dir : MT_SLAPD_MODULE_DIR_DEFAULT,
		p->dir, p->log_level ? p->log_level : "none",
		p->tool_threads ? p->tool_threads : 2);
	if (p->server_id != 0)
		mt_buf_appendf(c,
			"# Multi-provider: this provider's id, unique in the group\n"
			"# (CSNs carry it; slapadd -S must use the same).\n"
			"moduleload syncprov\n"
			"moduleload accesslog\n"
			"serverID %u\n\n", p->server_id);
	mt_buf_append_str(c,
		"# Anonymous clients may only bind (authenticate).\n"
		"disallow bind_anon\n"
		"require authc\n"
		"# Passwords set with ldappasswd: SHA-512 crypt (pwhash.h).\n"
		"password-hash {CRYPT}\n"
		"password-crypt-salt-format \"" PASSWORD_CRYPT_SALT_FORMAT "\"\n\n"
		"# Root DSE and subschema: bound identities only.\n"
		"access to dn.base=\"\"\n\tby users read\n\tby * none\n"
		"access to dn.base=\"cn=Subschema\"\n\tby users read\n\tby * none\n\n");
	if (p->server_id != 0)
		append_accesslog_db(c, p);
	mt_buf_appendf(c,
		"database mdb\n"
		"suffix \"%s\"\n"
		"rootdn \"%s\"\n"
		"rootpw \"%s\"\n"
		"directory \"%s/db\"\n"
		"# Sparse map, room for 1.5 M users and more.\n"
		"maxsize %" PRIu64 "\n\n"
		"index objectClass eq\n"
		"index uid,mail,mailLocalAddress,mailHost eq\n\n",
		p->suffix, p->admin_dn, p->admin_pw_hash, p->dir,
		p->max_size ? p->max_size : MT_SLAPD_MAXSIZE_DEFAULT);
	mt_buf_appendf(c,
		"# The admin is the rootdn: it writes everything, ACLs do not apply.\n"
		"# userPassword: checked by simple bind (anonymous auth); read by\n"
		"# the service DN only with auth_method = hash.\n"
		"access to attrs=userPassword\n"
		"\tby dn.exact=\"%1$s\" %2$s\n"
		"\tby anonymous auth\n"
		"\tby * none\n"
		"access to *\n"
		"\tby dn.exact=\"%1$s\" read\n"
		"\tby * none\n\n"
		"# Values the schema cannot restrict (ldapadd/ldapmodify; not slapadd).\n"
		"overlay constraint\n"
		"constraint_attribute mailtierStatus regex ^(active|disabled|hold)$\n"
		"constraint_attribute mailtierQuota regex ^[0-9]+$\n",
		p->service_dn, pw_access);
	if (p->server_id != 0)
		append_provider(c, p);
}

static bool make_dir(const char *path, const char **error_r)
{
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		return true;
	*error_r = errf("mkdir(%s): %s", path, strerror(errno));
	return false;
}

/* Write data to path atomically: path.tmp, fsync, rename. */
static bool write_file(const char *path, const struct mt_buf *data,
		       const char **error_r)
{
	char *tmp = mt_xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0;

	for (size_t off = 0; ok && off < data->len; ) {
		ssize_t n = write(fd, data->data + off, data->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
		off += ok ? (size_t)n : 0;
	}
	ok = ok && fsync(fd) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	ok = ok && rename(tmp, path) == 0;
	if (!ok) {
		*error_r = errf("writing %s: %s", path, strerror(errno));
		if (fd >= 0)
			(void)unlink(tmp);
	}
	free(tmp);
	return ok;
}

bool mt_slapd_write_config(const struct mt_slapd_params *p,
			   const char **error_r)
{
	struct mt_buf conf = MT_BUF_INIT;

	if (!check_params(p, error_r) || !make_dir(p->dir, error_r))
		return false;
	char *db = mt_xasprintf("%s/db", p->dir);
	char *log = mt_xasprintf("%s/accesslog", p->dir);
	char *path = mt_xasprintf("%s/slapd.conf", p->dir);
	append_config(&conf, p);
	bool ok = make_dir(db, error_r) &&
		(p->server_id == 0 || make_dir(log, error_r)) &&
		write_file(path, &conf, error_r);
	mt_buf_free(&conf);
	free(db);
	free(log);
	free(path);
	return ok;
}

/* Split the first RDN of dn into type and value (no '+', no escapes:
 * this writer only needs plain names such as dc=example). */
static bool first_rdn(const char *dn, char *type, size_t type_size,
		      char *value, size_t value_size, const char **rest_r)
{
	size_t rdn_len = strcspn(dn, ",");
	const char *eq = memchr(dn, '=', rdn_len);

	if (eq == NULL || eq == dn || memchr(dn, '+', rdn_len) != NULL ||
	    memchr(dn, '\\', rdn_len) != NULL)
		return false;
	size_t tlen = (size_t)(eq - dn), vlen = rdn_len - tlen - 1;
	if (vlen == 0 || tlen >= type_size || vlen >= value_size)
		return false;
	memcpy(type, dn, tlen);
	type[tlen] = '\0';
	memcpy(value, eq + 1, vlen);
	value[vlen] = '\0';
	*rest_r = dn[rdn_len] == ',' ? dn + rdn_len + 1 : dn + rdn_len;
	return true;
}

bool mt_slapd_append_base_ldif(struct mt_buf *out,
			       const struct mt_slapd_params *p,
			       const char **error_r)
{
	char type[64], value[256];
	const char *rest;

	if (!check_params(p, error_r))
		return false;
	if (!first_rdn(p->suffix, type, sizeof(type), value, sizeof(value), &rest) ||
	    (strcasecmp(type, "dc") != 0 && strcasecmp(type, "o") != 0)) {
		*error_r = "slapd base entries: the suffix must start with a "
			"plain dc= or o= RDN";
		return false;
	}
	mt_ldif_append_attr(out, "dn", p->suffix);
	if (strcasecmp(type, "dc") == 0) {
		mt_buf_append_str(out, "objectClass: dcObject\n"
				  "objectClass: organization\n");
		mt_ldif_append_attr(out, "dc", value);
	} else {
		mt_buf_append_str(out, "objectClass: organization\n");
	}
	mt_ldif_append_attr(out, "o", value);
	mt_buf_append_str(out, "description: mailtier directory\n\n");

	mt_buf_append_str(out, "dn: ou=people,");
	mt_buf_append_str(out, p->suffix);
	mt_buf_append_str(out, "\nobjectClass: organizationalUnit\n"
			  "ou: people\n"
			  "description: mail accounts, uid=<address>\n\n");

	if (!first_rdn(p->service_dn, type, sizeof(type), value, sizeof(value), &rest) ||
	    strcasecmp(type, "cn") != 0 || strcasecmp(rest, p->suffix) != 0) {
		*error_r = "slapd base entries: the service DN must be "
			"cn=<name>,<suffix>";
		return false;
	}
	mt_ldif_append_attr(out, "dn", p->service_dn);
	mt_buf_append_str(out, "objectClass: applicationProcess\n"
			  "objectClass: simpleSecurityObject\n");
	mt_ldif_append_attr(out, "cn", value);
	mt_buf_append_str(out, "description: read-only identity of the "
			  "mailtier daemons\n");
	mt_ldif_append_attr(out, "userPassword", p->service_pw_hash);
	mt_buf_append_char(out, '\n');
	return true;
}

bool mt_slapd_write_base_ldif(const struct mt_slapd_params *p,
			      const char **error_r)
{
	struct mt_buf ldif = MT_BUF_INIT;

	if (!mt_slapd_append_base_ldif(&ldif, p, error_r) ||
	    !make_dir(p->dir, error_r)) {
		mt_buf_free(&ldif);
		return false;
	}
	char *path = mt_xasprintf("%s/base.ldif", p->dir);
	bool ok = write_file(path, &ldif, error_r);
	free(path);
	mt_buf_free(&ldif);
	return ok;
}

/* RFC 3986 unreserved characters stay; everything else is %XX, as
 * ldapi:// needs for the socket path ("/" becomes %2F). */
static void append_percent_encoded(struct mt_buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~') {
			mt_buf_append_char(out, (char)*p);
		} else {
			mt_buf_append_char(out, '%');
			mt_buf_append_char(out, hex[*p >> 4]);
			mt_buf_append_char(out, hex[*p & 15]);
		}
	}
}

void mt_slapd_ldap_uri(struct mt_buf *out, const char *host, unsigned int port)
{
	if (host == NULL)
		host = "127.0.0.1";
	bool v6 = strchr(host, ':') != NULL;
	mt_buf_appendf(out, "ldap://%s%s%s:%u/", v6 ? "[" : "", host,
		       v6 ? "]" : "", port);
}

void mt_slapd_listen_urls(struct mt_buf *out, const struct mt_slapd_params *p)
{
	mt_slapd_ldap_uri(out, p->listen_host, p->port);
	mt_buf_append_str(out, " ldapi://");
	append_percent_encoded(out, p->dir);
	append_percent_encoded(out, "/ldapi");
	mt_buf_append_char(out, '/');
}

unsigned int mt_slapd_read_server_id(const char *dir)
{
	char *path = mt_xasprintf("%s/slapd.conf", dir);
	FILE *f = fopen(path, "re");
	char line[512];
	unsigned int id = 0;

	free(path);
	if (f == NULL)
		return 0;
	while (id == 0 && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "serverID %u", &id) != 1 ||
		    id > MT_SLAPD_SERVER_ID_MAX)
			id = 0;
	}
	fclose(f);
	return id;
}
