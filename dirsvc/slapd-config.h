/* slapd-config.h — the slapd.conf and base entries of a local slapd for
 * development, tests and `mailtierctl directory up` (slapd.conf(5),
 * slapd-mdb(5), slapd.access(5)). The packaged install configures the
 * system slapd instead: dirsvc/mailtier-slapd-setup.sh.
 *
 * Layout of p->dir (created with mode 0700; its parent must exist):
 *   slapd.conf   this configuration (mode 0600: holds the rootpw hash)
 *   base.ldif    suffix entry, ou=people, the service DN entry
 *   db/          the MDB database
 *   accesslog/   a provider's change log (server_id != 0, see below)
 *   slapd.pid, slapd.args, ldapi (the ldapi:// socket)
 * Trust boundary: every value comes from mailtier.conf or mailtierctl's
 * command line (administrator); values are checked so that none can add a
 * directive (no newline, '"' or control characters). */
#ifndef MT_SLAPD_CONFIG_H
#define MT_SLAPD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

/* 8 GiB: 1.5 M bulk users ({SSHA512}) take 1.8 GiB with these indexes
 * (measured); the MDB map is sparse, so the unused part costs no disk. */
#define MT_SLAPD_MAXSIZE_DEFAULT (UINT64_C(8) << 30)
#define MT_SLAPD_SCHEMA_DIR_DEFAULT "/etc/ldap/schema"
#define MT_SLAPD_MODULE_DIR_DEFAULT "/usr/lib/ldap"

struct mt_slapd_params {
	const char *dir;		/* state directory, see above */
	const char *listen_host;	/* address, NULL = 127.0.0.1 (mt_slapd_listen_urls) */
	unsigned int port;		/* ldap:// port */
	const char *suffix;		/* e.g. dc=example,dc=test */
	const char *admin_dn;		/* rootdn: writes everything */
	const char *admin_pw_hash;	/* its rootpw ({CRYPT}/{SSHA512}) */
	const char *service_dn;		/* the daemons' read-only identity */
	const char *service_pw_hash;	/* its userPassword (base.ldif) */
	/* auth_method = hash: the service DN may read userPassword and the
	 * daemons verify hashes themselves. false (auth_method = bind): it
	 * may not, and passwords are checked only by binding as the user. */
	bool service_reads_password;
	const char *mailtier_schema;	/* path of dirsvc/mailtier.schema */
	const char *schema_dir;		/* NULL = MT_SLAPD_SCHEMA_DIR_DEFAULT */
	const char *module_dir;		/* NULL = MT_SLAPD_MODULE_DIR_DEFAULT */
	uint64_t max_size;		/* MDB map bytes; 0 = the default */
	unsigned int tool_threads;	/* slapadd indexer threads; 0 = 2 */
	const char *log_level;		/* NULL = "none" (slapd.conf loglevel) */
	/* Multi-provider replication (slapd.conf(5) serverID, syncrepl,
	 * multiprovider; slapo-syncprov(5), slapo-accesslog(5)): server_id 0
	 * is a lone slapd with none of it (the default). 1..4095, unique in
	 * the group: a provider with syncprov and accesslog on the database,
	 * an accesslog database cn=accesslog in <dir>/accesslog, and a
	 * delta-syncrepl consumer of each peer URI, bound as admin_dn with
	 * repl_password (in clear in slapd.conf, mode 0600). */
	unsigned int server_id;
	const char *const *peer_uris;	/* the other providers, ldap://HOST:PORT/ */
	size_t n_peers;
	const char *repl_password;	/* admin_dn's password, needed with peers */
};

#define MT_SLAPD_SERVER_ID_MAX 4095u
#define MT_SLAPD_PEERS_MAX 8u
/* The accesslog database's suffix (delta-syncrepl's logbase). */
#define MT_SLAPD_ACCESSLOG_SUFFIX "cn=accesslog"


/* Default names for a mail domain: suffix dc=<labels>, admin
 * cn=admin,<suffix>, service cn=mailtier-service,<suffix>. The strings are
 * allocated; the caller frees them. */
bool mt_slapd_default_dns(const char *domain, char **suffix_r,
			  char **admin_dn_r, char **service_dn_r,
			  const char **error_r);

/* Create p->dir and p->dir/db, and write p->dir/slapd.conf atomically
 * (temporary file, fsync, rename). */
bool mt_slapd_write_config(const struct mt_slapd_params *p,
			   const char **error_r);

/* Append the base entries (suffix, ou=people, service DN) as LDIF. The
 * suffix's first RDN must be dc= or o=; the service DN must be directly
 * under the suffix. */
bool mt_slapd_append_base_ldif(struct mt_buf *out,
			       const struct mt_slapd_params *p,
			       const char **error_r);
/* The same, written to p->dir/base.ldif (mode 0600). */
bool mt_slapd_write_base_ldif(const struct mt_slapd_params *p,
			      const char **error_r);

/* The serverID that <dir>/slapd.conf names (what slapadd -S must use, so
 * that offline loads write CSNs valid for multi-provider), or 0 when it
 * names none or cannot be read. */
unsigned int mt_slapd_read_server_id(const char *dir);

/* Append "ldap://HOST:PORT/" (RFC 4516): an IPv6 literal goes in
 * brackets; host NULL = 127.0.0.1. */
void mt_slapd_ldap_uri(struct mt_buf *out, const char *host, unsigned int port);

/* Append the slapd -h argument: "ldap://HOST:PORT/ ldapi://<dir>%2Fldapi/"
 * (HOST = p->listen_host, as mt_slapd_ldap_uri() writes it). */
void mt_slapd_listen_urls(struct mt_buf *out, const struct mt_slapd_params *p);

#endif
