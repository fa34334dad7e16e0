/* ctl-users.c — `mailtierctl users add|del|show|passwd|bulk`: accounts in
 * the directory, through the [directory] section of the config (-c FILE):
 * uris, base_dn (= ou=people,SUFFIX), admin_dn + admin_password_file, and
 * local_slapd_dir for offline bulk loads.
 *
 * Entries are written by dirsvc/provision.c's LDIF writer, the one place
 * that knows the entry layout, and loaded with ldapadd (online) or
 * slapadd -q (bulk, when the local slapd is stopped); deletes, password
 * changes and searches go through libldap. The shard of a new user is the
 * rendezvous hash of its address over [shards] unless --shard names one.
 * Trust boundary: operator's command line; filter values are escaped
 * (RFC 4515) and DN values escaped (RFC 4514). Passwords are read from a
 * file or stdin, never from the command line, and never printed. */
#include "ctl.h"
#include "clock.h"
#include "ctl-util.h"
#include "address.h"
#include "alloc.h"
#include "buf.h"
#include "dirsvc-settings.h"
#include "ldap-escape.h"
#include "ldif.h"
#include "mailtier-settings.h"
#include "mta/mta-settings.h"
#include "provision.h"
#include "pwhash.h"
#include "secret.h"

#include <getopt.h>
#include <ldap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct users_ctx {
	struct mt_config *config;
	const struct mt_directory_settings *dir;
	const char **shards;
	size_t n_shards;
	char *suffix;		/* base_dn without its leading ou=people, */
};

static bool users_ctx_init(struct ctl_context *ctx, struct users_ctx *u)
{
	memset(u, 0, sizeof(*u));
	char *errors = NULL;
	u->config = mt_mailtier_config_load(ctx->config_path, &errors);
	if (u->config == NULL) {
		fputs(errors, stderr);
		free(errors);
		return false;
	}
	u->dir = mt_config_get(u->config, "directory", NULL);
	const struct mt_section *shards = mt_config_section(u->config, "shards", NULL);
	u->shards = mt_xcalloc(shards->n_entries + 1, sizeof(char *));
	for (size_t i = 0; i < shards->n_entries; i++)
		u->shards[u->n_shards++] = shards->entries[i].key;
	static const char people[] = "ou=people,";
	if (strncasecmp(u->dir->base_dn, people, sizeof(people) - 1) != 0) {
		fprintf(stderr, "%s: [directory] base_dn must be ou=people,SUFFIX to provision users\n",
			ctx->config_path);
		return false;
	}
	u->suffix = mt_xstrdup(u->dir->base_dn + sizeof(people) - 1);
	if (u->dir->admin_dn[0] == '\0') {
		fprintf(stderr, "%s: [directory] admin_dn is not set (needed to change users)\n",
			ctx->config_path);
		return false;
	}
	return true;
}

static void users_ctx_free(struct users_ctx *u)
{
	free(u->shards);
	free(u->suffix);
	mt_config_free(&u->config);
}

/* Bind to the first URI that answers, as admin. */
static LDAP *admin_connect(const struct users_ctx *u)
{
	const char *error;
	char *password = mt_secret_read(u->dir->admin_password_file, &error);
	if (password == NULL) {
		fprintf(stderr, "%s\n", error);
		return NULL;
	}
	LDAP *ld = NULL;
	int rc = LDAP_SERVER_DOWN;
	for (size_t i = 0; i < u->dir->uris.count; i++) {
		if (ldap_initialize(&ld, u->dir->uris.items[i]) != LDAP_SUCCESS)
			continue;
		int version = LDAP_VERSION3;
		struct timeval tv = { (time_t)(u->dir->timeout / 1000),
				      (suseconds_t)(u->dir->timeout % 1000) * 1000 };
		ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version);
		ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
		ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv);
		struct berval cred = { strlen(password), password };
		rc = ldap_sasl_bind_s(ld, u->dir->admin_dn, LDAP_SASL_SIMPLE, &cred,
				      NULL, NULL, NULL);
		if (rc == LDAP_SUCCESS)
			break;
		ldap_unbind_ext_s(ld, NULL, NULL);
		ld = NULL;
	}
	mt_secret_free(&password);
	if (ld == NULL)
		fprintf(stderr, "cannot bind to the directory as %s: %s\n",
			u->dir->admin_dn, ldap_err2string(rc));
	return ld;
}

/* Normalise an address argument (local@domain, domain lower-cased). */
static bool parse_address(const char *arg, struct mt_address *addr)
{
	const char *error;
	if (!mt_address_parse(arg, strlen(arg), MT_ADDR_LENIENT | MT_ADDR_SMTPUTF8, addr,
			      NULL, &error) ||
	    addr->domain[0] == '\0') {
		fprintf(stderr, "'%s': %s\n", arg, addr->domain[0] == '\0' && error == NULL ?
			"not local@domain" : error);
		return false;
	}
	return true;
}

static char *user_dn(const struct users_ctx *u, const char *address)
{
	struct mt_buf dn = MT_BUF_INIT;
	mt_buf_append_str(&dn, "uid=");
	mt_dn_append_value(&dn, address);
	mt_buf_appendf(&dn, ",%s", u->dir->base_dn);
	return mt_buf_steal(&dn);
}

/* The new password: from --password-file, or the first line of stdin. */
static char *read_new_password(const char *file)
{
	const char *error;
	if (file != NULL) {
		char *pw = mt_secret_read(file, &error);
		if (pw == NULL)
			fprintf(stderr, "%s\n", error);
		return pw;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, stdin);
	if (n <= 0) {
		free(line);
		fprintf(stderr, "no password on stdin\n");
		return NULL;
	}
	line[strcspn(line, "\r\n")] = '\0';
	return line;
}

/* Feed LDIF to ldapadd as admin; its exit status. */
static int ldapadd_ldif(const struct users_ctx *u, const char *ldif, size_t len)
{
	char *const argv[] = { "ldapadd", "-x", "-H", u->dir->uris.items[0],
			       "-D", u->dir->admin_dn, "-y",
			       u->dir->admin_password_file, NULL };
	FILE *to = NULL;
	pid_t pid = ctl_pipe_start(argv, &to);
	if (pid < 0) {
		fprintf(stderr, "cannot run ldapadd (Debian package ldap-utils)\n");
		return -1;
	}
	fwrite(ldif, 1, len, to);
	return ctl_pipe_finish(pid, &to);
}

static int users_add(struct ctl_context *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "password-file", required_argument, NULL, 'p' },
		{ "shard", required_argument, NULL, 's' },
		{ "quota", required_argument, NULL, 'q' },
		{ "status", required_argument, NULL, 'S' },
		{ "alias", required_argument, NULL, 'a' },
		{ "forward", required_argument, NULL, 'f' },
		{ "hash", required_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *password_file = NULL, *shard = NULL, *forward = NULL;
	const char *aliases[32];
	size_t n_aliases = 0;
	struct mt_account acct = { .status = MT_ACCOUNT_ACTIVE };
	enum mt_pw_scheme scheme = MT_PW_SHA512_CRYPT;
	const char *error;
	int opt;
	optind = 0;	/* 0: GNU getopt re-initialises (permutation back on) */
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'p': password_file = optarg; break;
		case 's': shard = optarg; break;
		case 'f': forward = optarg; break;
		case 'q':
			if (!mt_parse_size(optarg, &acct.quota, &error)) {
				fprintf(stderr, "--quota %s: %s\n", optarg, error);
				return CTL_EXIT_USAGE;
			}
			break;
		case 'S':
			if (!mt_account_status_parse(optarg, &acct.status)) {
				fprintf(stderr, "--status: use active, disabled or hold\n");
				return CTL_EXIT_USAGE;
			}
			break;
		case 'a':
			if (n_aliases == sizeof(aliases) / sizeof(aliases[0])) {
				fprintf(stderr, "too many --alias\n");
				return CTL_EXIT_USAGE;
			}
			aliases[n_aliases++] = optarg;
			break;
		case 'h':
			if (!mt_pw_scheme_parse(optarg, &scheme)) {
				fprintf(stderr, "--hash: use crypt or ssha512\n");
				return CTL_EXIT_USAGE;
			}
			break;
		default:
			return CTL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: %s [-c FILE] users add ADDRESS [--password-file F] "
			"[--shard S] [--quota SIZE] [--status active|disabled|hold] "
			"[--alias ADDR]... [--forward ADDR] [--hash crypt|ssha512]\n"
			"  (without --password-file the password is read from stdin)\n",
			ctx->progname);
		return CTL_EXIT_USAGE;
	}
	struct users_ctx u;
	struct mt_address addr, alias_addrs[32];
	int status = CTL_EXIT_FAIL;
	char *password = NULL;
	const char *alias_strs[32];
	struct mt_buf hash = MT_BUF_INIT, ldif = MT_BUF_INIT;
	if (!users_ctx_init(ctx, &u))
		goto out;
	if (!parse_address(argv[optind], &addr))
		goto out;
	for (size_t i = 0; i < n_aliases; i++) {
		if (!parse_address(aliases[i], &alias_addrs[i]))
			goto out;
		alias_strs[i] = alias_addrs[i].addr;
	}
	if (shard == NULL)
		shard = mt_shard_for_address(addr.addr, u.shards, u.n_shards);
	else if (mt_config_map_get(u.config, "shards", shard) == NULL) {
		fprintf(stderr, "--shard %s: not listed in [shards] of %s\n", shard,
			ctx->config_path);
		goto out;
	}
	if (shard == NULL) {
		fprintf(stderr, "%s: [shards] is empty: no shard for the user\n",
			ctx->config_path);
		goto out;
	}
	password = read_new_password(password_file);
	if (password == NULL)
		goto out;
	if (!mt_pw_hash(scheme, 0, password, &hash, &error)) {
		fprintf(stderr, "password hash: %s\n", error);
		goto out;
	}
	acct.address = addr.addr;
	acct.password_hash = mt_buf_cstr(&hash);
	acct.mail_host = shard;
	acct.aliases = alias_strs;
	acct.n_aliases = n_aliases;
	acct.forward = forward;
	if (!mt_ldif_append_account(&ldif, u.suffix, &acct, &error)) {
		fprintf(stderr, "%s: %s\n", addr.addr, error);
		goto out;
	}
	if (ldapadd_ldif(&u, ldif.data, ldif.len) != 0) {
		fprintf(stderr, "users add %s: ldapadd failed\n", addr.addr);
		goto out;
	}
	printf("added %s on shard %s\n", addr.addr, shard);
	status = CTL_EXIT_OK;
out:
	if (password != NULL) {
		mt_secret_free(&password);
	}
	mt_buf_free(&hash);
	mt_buf_free(&ldif);
	users_ctx_free(&u);
	return status;
}

/* Commands taking exactly one ADDRESS and an admin connection. */
static int with_user(struct ctl_context *ctx, int argc, char **argv, const char *verb,
		     int (*fn)(struct users_ctx *u, LDAP *ld, const struct mt_address *addr,
			       const char *password_file),
		     bool takes_password_file)
{
	static const struct option options[] = {
		{ "password-file", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *password_file = NULL;
	int opt;
	optind = 0;	/* 0: GNU getopt re-initialises (permutation back on) */
	while ((opt = getopt_long(argc, argv, "", takes_password_file ? options : options + 1,
				  NULL)) != -1) {
		if (opt != 'p')
			return CTL_EXIT_USAGE;
		password_file = optarg;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: %s [-c FILE] users %s ADDRESS%s\n", ctx->progname,
			verb, takes_password_file ? " [--password-file F]" : "");
		return CTL_EXIT_USAGE;
	}
	struct users_ctx u;
	struct mt_address addr;
	int status = CTL_EXIT_FAIL;
	if (users_ctx_init(ctx, &u) && parse_address(argv[optind], &addr)) {
		LDAP *ld = admin_connect(&u);
		if (ld != NULL) {
			status = fn(&u, ld, &addr, password_file);
			ldap_unbind_ext_s(ld, NULL, NULL);
		}
	}
	users_ctx_free(&u);
	return status;
}

static int do_del(struct users_ctx *u, LDAP *ld, const struct mt_address *addr,
		  const char *unused)
{
	char *dn = user_dn(u, addr->addr);
	int rc = ldap_delete_ext_s(ld, dn, NULL, NULL);
	free(dn);
	if (rc != LDAP_SUCCESS) {
		fprintf(stderr, "users del %s: %s\n", addr->addr, ldap_err2string(rc));
		return CTL_EXIT_FAIL;
	}
	printf("deleted %s\n", addr->addr);
	return CTL_EXIT_OK;
}

static int do_passwd(struct users_ctx *u, LDAP *ld, const struct mt_address *addr,
		     const char *password_file)
{
	char *password = read_new_password(password_file);
	if (password == NULL)
		return CTL_EXIT_FAIL;
	struct mt_buf hash = MT_BUF_INIT;
	const char *error;
	bool hashed = mt_pw_hash(MT_PW_SHA512_CRYPT, 0, password, &hash, &error);
	mt_secret_free(&password);
	if (!hashed) {
		fprintf(stderr, "password hash: %s\n", error);
		mt_buf_free(&hash);
		return CTL_EXIT_FAIL;
	}
	char *values[] = { hash.data, NULL };
	LDAPMod mod = { .mod_op = LDAP_MOD_REPLACE, .mod_type = "userPassword",
			.mod_values = values };
	LDAPMod *mods[] = { &mod, NULL };
	char *dn = user_dn(u, addr->addr);
	int rc = ldap_modify_ext_s(ld, dn, mods, NULL, NULL);
	free(dn);
	mt_buf_free(&hash);
	if (rc != LDAP_SUCCESS) {
		fprintf(stderr, "users passwd %s: %s\n", addr->addr, ldap_err2string(rc));
		return CTL_EXIT_FAIL;
	}
	printf("password changed for %s\n", addr->addr);
	return CTL_EXIT_OK;
}

static int do_show(struct users_ctx *u, LDAP *ld, const struct mt_address *addr,
		   const char *unused)
{
	struct mt_buf filter = MT_BUF_INIT;
	mt_buf_append_str(&filter, "(|(uid=");
	mt_ldap_filter_escape(&filter, addr->addr);
	mt_buf_append_str(&filter, ")(mail=");
	mt_ldap_filter_escape(&filter, addr->addr);
	mt_buf_append_str(&filter, ")(mailLocalAddress=");
	mt_ldap_filter_escape(&filter, addr->addr);
	mt_buf_append_str(&filter, "))");
	char *attrs[] = { "uid", "mail", "mailLocalAddress", "mailHost",
			  "mailRoutingAddress", "mailtierQuota", "mailtierStatus", NULL };
	LDAPMessage *res = NULL;
	int rc = ldap_search_ext_s(ld, u->dir->base_dn, LDAP_SCOPE_ONELEVEL,
				   mt_buf_cstr(&filter), attrs, 0, NULL, NULL, NULL,
				   2, &res);
	mt_buf_free(&filter);
	int status = CTL_EXIT_FAIL;
	LDAPMessage *entry = rc == LDAP_SUCCESS ? ldap_first_entry(ld, res) : NULL;
	if (rc != LDAP_SUCCESS)
		fprintf(stderr, "users show %s: %s\n", addr->addr, ldap_err2string(rc));
	else if (entry == NULL)
		fprintf(stderr, "users show %s: no such user\n", addr->addr);
	for (; entry != NULL; entry = ldap_next_entry(ld, entry)) {
		char *dn = ldap_get_dn(ld, entry);
		printf("dn: %s\n", dn);
		ldap_memfree(dn);
		for (char **a = attrs; *a != NULL; a++) {
			struct berval **vals = ldap_get_values_len(ld, entry, *a);
			for (int i = 0; vals != NULL && vals[i] != NULL; i++)
				printf("%s: %.*s\n", *a, (int)vals[i]->bv_len, vals[i]->bv_val);
			ldap_value_free_len(vals);
		}
		status = CTL_EXIT_OK;
	}
	ldap_msgfree(res);
	return status;
}

static int users_bulk(struct ctl_context *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'F' },
		{ "domain", required_argument, NULL, 'd' },
		{ "shards", required_argument, NULL, 's' },
		{ "hash", required_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_provision_params p = { .first = 1, .scheme = MT_PW_SSHA512 };
	char *shard_list = NULL;
	int opt;
	optind = 0;	/* 0: GNU getopt re-initialises (permutation back on) */
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'n':
		case 'F': {
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end != '\0' || v == 0) {
				fprintf(stderr, "'%s' is not a positive number\n", optarg);
				return CTL_EXIT_USAGE;
			}
			if (opt == 'n')
				p.count = v;
			else
				p.first = v;
			break;
		}
		case 'd': p.domain = optarg; break;
		case 's': shard_list = optarg; break;
		case 'h':
			if (!mt_pw_scheme_parse(optarg, &p.scheme)) {
				fprintf(stderr, "--hash: use ssha512 or crypt\n");
				return CTL_EXIT_USAGE;
			}
			break;
		default:
			return CTL_EXIT_USAGE;
		}
	}
	if (p.count == 0 || optind != argc) {
		fprintf(stderr, "usage: %s [-c FILE] users bulk --count N [--domain D] "
			"[--shards S1,S2,...] [--first K] [--hash ssha512|crypt]\n"
			"  accounts userK@D with password secretK; defaults: the first of "
			"[mta] local_domains, every shard in [shards], ssha512\n", ctx->progname);
		return CTL_EXIT_USAGE;
	}
	struct users_ctx u;
	int status = CTL_EXIT_FAIL;
	char *shard_copy = NULL;
	const char *shard_names[256];
	if (!users_ctx_init(ctx, &u))
		goto out;
	if (p.domain == NULL) {
		const struct mt_mta_settings *mta = mt_config_get(u.config, "mta", NULL);
		p.domain = mta->local_domains.count > 0 ? mta->local_domains.items[0] : NULL;
		if (p.domain == NULL) {
			fprintf(stderr, "--domain is needed ([mta] local_domains is empty)\n");
			goto out;
		}
	}
	if (shard_list != NULL) {
		shard_copy = mt_xstrdup(shard_list);
		size_t n = 0;
		for (char *save = NULL, *s = strtok_r(shard_copy, ",", &save); s != NULL;
		     s = strtok_r(NULL, ",", &save)) {
			if (n == sizeof(shard_names) / sizeof(shard_names[0])) {
				fprintf(stderr, "--shards: too many\n");
				goto out;
			}
			shard_names[n++] = s;
		}
		p.shards = shard_names;
		p.n_shards = n;
	} else {
		p.shards = u.shards;
		p.n_shards = u.n_shards;
	}
	if (p.n_shards == 0) {
		fprintf(stderr, "no shards: give --shards or list them in [shards]\n");
		goto out;
	}
	p.suffix = u.suffix;

	/* Offline when the local slapd is stopped: slapadd -q is far faster. */
	const char *mode = "online, ldapadd";
	char *conffile = NULL, *pidfile = NULL;
	pid_t pid;
	FILE *to = NULL;
	if (u.dir->local_slapd_dir[0] != '\0') {
		pidfile = mt_xasprintf("%s/slapd.pid", u.dir->local_slapd_dir);
		conffile = mt_xasprintf("%s/slapd.conf", u.dir->local_slapd_dir);
	}
	double start = ((double)mt_clock_us() / 1e6);
	if (pidfile != NULL && ctl_pidfile_alive(pidfile) == 0) {
		mode = "offline, slapadd -q";
		char *const slapadd[] = { "slapadd", "-q", "-f", conffile, NULL };
		pid = ctl_pipe_start(slapadd, &to);
	} else {
		char *const ldapadd[] = { "ldapadd", "-x", "-H", u.dir->uris.items[0],
					  "-D", u.dir->admin_dn, "-y",
					  u.dir->admin_password_file, NULL };
		pid = ctl_pipe_start(ldapadd, &to);
	}
	free(pidfile);
	free(conffile);
	if (pid < 0) {
		fprintf(stderr, "cannot run slapadd/ldapadd (Debian packages slapd, ldap-utils)\n");
		goto out;
	}
	const char *error = NULL;
	bool generated = mt_provision_bulk(to, &p, &error);
	int rc = ctl_pipe_finish(pid, &to);
	if (!generated || rc != 0) {
		fprintf(stderr, "users bulk: %s\n", !generated ? error : "the load failed");
		goto out;
	}
	printf("provisioned %llu users (user%llu..user%llu@%s) over %zu shards in %.1f s (%s)\n",
	       (unsigned long long)p.count, (unsigned long long)p.first,
	       (unsigned long long)(p.first + p.count - 1), p.domain, p.n_shards,
	       ((double)mt_clock_us() / 1e6) - start, mode);
	status = CTL_EXIT_OK;
out:
	free(shard_copy);
	users_ctx_free(&u);
	return status;
}

int ctl_users_add(struct ctl_context *ctx, int argc, char **argv)
{
	return users_add(ctx, argc, argv);
}

int ctl_users_del(struct ctl_context *ctx, int argc, char **argv)
{
	return with_user(ctx, argc, argv, "del", do_del, false);
}

int ctl_users_passwd(struct ctl_context *ctx, int argc, char **argv)
{
	return with_user(ctx, argc, argv, "passwd", do_passwd, true);
}

int ctl_users_show(struct ctl_context *ctx, int argc, char **argv)
{
	return with_user(ctx, argc, argv, "show", do_show, false);
}

int ctl_users_bulk(struct ctl_context *ctx, int argc, char **argv)
{
	return users_bulk(ctx, argc, argv);
}
