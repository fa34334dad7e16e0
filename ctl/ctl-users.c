/* ctl-users.c — `mailtierctl users add|del|show|passwd|bulk`: accounts in
 * the directory, through the [directory] section of the config (-c FILE):
 * uris, base_dn (= ou=people,SUFFIX), admin_dn + admin_password_file, and
 * local_slapd_dir for offline bulk loads.
 *
 * Online, every change and search goes through libdirsvc's admin API
 * (dirsvc/dirsvc-admin.h: adds, deletes, password changes, finds; it
 * escapes DN values (RFC 4514) and filter values (RFC 4515)); this file
 * talks no LDAP itself. Offline (users bulk while the local slapd is
 * stopped), dirsvc/provision.c's LDIF writer feeds slapadd -q. Both build
 * the entry from provision.c's one layout. The shard of a new user is the
 * rendezvous hash of its address over [shards] unless --shard names one.
 * Trust boundary: operator's command line. Passwords are read from a file
 * or stdin, never from the command line, and never printed. */
#include "ctl.h"
#include "clock.h"
#include "ctl-util.h"
#include "address.h"
#include "alloc.h"
#include "buf.h"
#include "dirsvc-admin.h"
#include "dirsvc-settings.h"
#include "mailtier-settings.h"
#include "mta/mta-settings.h"
#include "provision.h"
#include "pwhash.h"
#include "secret.h"
#include "slapd-config.h"

#include <getopt.h>
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

/* A connection bound as admin; NULL (reason printed) if none. */
static struct mt_dirsvc_admin *admin_connect(const struct users_ctx *u)
{
	struct mt_dirsvc_admin *admin = mt_dirsvc_admin_new(u->dir);
	const char *error;
	if (!mt_dirsvc_admin_connect(admin, &error)) {
		fprintf(stderr, "%s\n", error);
		mt_dirsvc_admin_free(&admin);
	}
	return admin;
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
	struct mt_buf hash = MT_BUF_INIT;
	struct mt_dirsvc_admin *admin = NULL;
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
	admin = admin_connect(&u);
	if (admin == NULL)
		goto out;
	if (!mt_dirsvc_admin_add_user(admin, &acct, &error)) {
		fprintf(stderr, "users add %s: %s\n", addr.addr, error);
		goto out;
	}
	printf("added %s on shard %s\n", addr.addr, shard);
	status = CTL_EXIT_OK;
out:
	if (password != NULL) {
		mt_secret_free(&password);
	}
	mt_buf_free(&hash);
	mt_dirsvc_admin_free(&admin);
	users_ctx_free(&u);
	return status;
}

/* Commands taking exactly one ADDRESS and an admin connection. */
static int with_user(struct ctl_context *ctx, int argc, char **argv, const char *verb,
		     int (*fn)(struct mt_dirsvc_admin *admin, const struct mt_address *addr,
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
		struct mt_dirsvc_admin *admin = admin_connect(&u);
		if (admin != NULL) {
			status = fn(admin, &addr, password_file);
			mt_dirsvc_admin_free(&admin);
		}
	}
	users_ctx_free(&u);
	return status;
}

static int do_del(struct mt_dirsvc_admin *admin, const struct mt_address *addr,
		  const char *unused)
{
	const char *error;
	(void)unused;
	if (!mt_dirsvc_admin_delete_user(admin, addr->addr, &error)) {
		fprintf(stderr, "users del %s: %s\n", addr->addr, error);
		return CTL_EXIT_FAIL;
	}
	printf("deleted %s\n", addr->addr);
	return CTL_EXIT_OK;
}

static int do_passwd(struct mt_dirsvc_admin *admin, const struct mt_address *addr,
		     const char *password_file)
{
	char *password = read_new_password(password_file);
	if (password == NULL)
		return CTL_EXIT_FAIL;
	const char *error;
	bool changed = mt_dirsvc_admin_set_password(admin, addr->addr, password,
						    MT_PW_SHA512_CRYPT, &error);
	mt_secret_free(&password);
	if (!changed) {
		fprintf(stderr, "users passwd %s: %s\n", addr->addr, error);
		return CTL_EXIT_FAIL;
	}
	printf("password changed for %s\n", addr->addr);
	return CTL_EXIT_OK;
}

static int do_show(struct mt_dirsvc_admin *admin, const struct mt_address *addr,
		   const char *unused)
{
	const struct mt_dirsvc_admin_entry *entries;
	const char *error;
	(void)unused;
	int n = mt_dirsvc_admin_find_user(admin, addr->addr, &entries, &error);
	if (n < 0) {
		fprintf(stderr, "users show %s: %s\n", addr->addr, error);
		return CTL_EXIT_FAIL;
	}
	if (n == 0) {
		fprintf(stderr, "users show %s: no such user\n", addr->addr);
		return CTL_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++) {
		printf("dn: %s\n", entries[i].dn);
		for (size_t j = 0; j < entries[i].n_values; j++)
			printf("%s: %.*s\n", entries[i].values[j].attr,
			       (int)entries[i].values[j].len, entries[i].values[j].value);
	}
	return CTL_EXIT_OK;
}

/* Load the bulk accounts of p with slapadd -q (the local slapd stopped).
 * A multi-provider slapd (serverID in its slapd.conf) gets -S <id> -w:
 * CSNs of its own server id and the contextCSN written, so that its
 * peers take the entries (slapadd's default SID 0 is invalid there);
 * -b: its accesslog database comes first in slapd.conf. */
static bool bulk_load_offline(const struct users_ctx *u, const struct mt_provision_params *p)
{
	char *conffile = mt_xasprintf("%s/slapd.conf", u->dir->local_slapd_dir);
	unsigned int server_id = mt_slapd_read_server_id(u->dir->local_slapd_dir);
	char sid[16];
	snprintf(sid, sizeof(sid), "%u", server_id);
	char *const slapadd[] = { "slapadd", "-q", "-f", conffile, NULL };
	char *const slapadd_sid[] = { "slapadd", "-q", "-S", sid, "-w", "-b", u->suffix,
				      "-f", conffile, NULL };
	FILE *to = NULL;
	pid_t pid = ctl_pipe_start(server_id != 0 ? slapadd_sid : slapadd, &to);
	free(conffile);
	if (pid < 0) {
		fprintf(stderr, "cannot run slapadd (Debian package slapd)\n");
		return false;
	}
	const char *error = NULL;
	bool generated = mt_provision_bulk(to, p, &error);
	int rc = ctl_pipe_finish(pid, &to);
	if (!generated || rc != 0) {
		fprintf(stderr, "users bulk: %s\n", !generated ? error : "the load failed");
		return false;
	}
	return true;
}

/* mt_provision_bulk_each() callback of an online bulk load: one LDAP add. */
static bool bulk_add_online(const struct mt_account *acct, void *context,
			    const char **error_r)
{
	const char *error;
	if (!mt_dirsvc_admin_add_user(context, acct, &error)) {
		fprintf(stderr, "users bulk: %s: %s\n", acct->address, error);
		*error_r = "the load failed";
		return false;
	}
	return true;
}

/* Add the bulk accounts of p one by one through the admin API. */
static bool bulk_load_online(const struct users_ctx *u, const struct mt_provision_params *p)
{
	struct mt_dirsvc_admin *admin = admin_connect(u);
	if (admin == NULL)
		return false;
	const char *error = NULL;
	bool loaded = mt_provision_bulk_each(p, bulk_add_online, admin, &error);
	mt_dirsvc_admin_free(&admin);
	if (!loaded)
		fprintf(stderr, "users bulk: %s\n", error);
	return loaded;
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
	char *pidfile = NULL;
	if (u.dir->local_slapd_dir[0] != '\0')
		pidfile = mt_xasprintf("%s/slapd.pid", u.dir->local_slapd_dir);
	bool offline = pidfile != NULL && ctl_pidfile_alive(pidfile) == 0;
	free(pidfile);
	double start = ((double)mt_clock_us() / 1e6);
	const char *mode = offline ? "offline, slapadd -q" : "online, LDAP adds";
	if (!(offline ? bulk_load_offline(&u, &p) : bulk_load_online(&u, &p)))
		goto out;
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

/* users set-host ADDRESS SHARD [--wait SECONDS]: the mailHost switch of
 * a move, written on one provider and counted once every provider that
 * answers returns it (mt_dirsvc_admin_set_mail_host). */
int ctl_users_set_host(struct ctl_context *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "wait", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long wait_s = 5;
	int opt;
	optind = 0;	/* 0: GNU getopt re-initialises (permutation back on) */
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		char *end;
		if (opt != 'w')
			return CTL_EXIT_USAGE;
		wait_s = strtoul(optarg, &end, 10);
		if (*end != '\0' || optarg[0] == '-' || wait_s > 600) {
			fprintf(stderr, "--wait: '%s' is not 0..600 seconds\n", optarg);
			return CTL_EXIT_USAGE;
		}
	}
	if (optind != argc - 2) {
		fprintf(stderr, "usage: %s [-c FILE] users set-host ADDRESS SHARD "
			"[--wait SECONDS]\n", ctx->progname);
		return CTL_EXIT_USAGE;
	}
	const char *shard = argv[optind + 1];
	struct users_ctx u;
	struct mt_address addr;
	int status = CTL_EXIT_FAIL;
	if (users_ctx_init(ctx, &u) && parse_address(argv[optind], &addr)) {
		bool known = u.n_shards == 0;
		for (size_t i = 0; i < u.n_shards && !known; i++)
			known = strcasecmp(u.shards[i], shard) == 0;
		struct mt_dirsvc_admin *admin = known ? admin_connect(&u) : NULL;
		const char *error;
		size_t unreachable;
		if (!known)
			fprintf(stderr, "users set-host: %s is not in [shards]\n", shard);
		else if (admin != NULL &&
			 !mt_dirsvc_admin_set_mail_host(admin, addr.addr, shard,
							(unsigned int)wait_s * 1000,
							&unreachable, &error))
			fprintf(stderr, "users set-host %s: %s\n", addr.addr, error);
		else if (admin != NULL) {
			printf("mailHost of %s is %s on every provider that answers "
			       "(%zu of %zu did not)\n", addr.addr, shard, unreachable,
			       u.dir->uris.count);
			status = CTL_EXIT_OK;
		}
		mt_dirsvc_admin_free(&admin);
	}
	users_ctx_free(&u);
	return status;
}

int ctl_users_bulk(struct ctl_context *ctx, int argc, char **argv)
{
	return users_bulk(ctx, argc, argv);
}
