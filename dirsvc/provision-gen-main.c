/* provision-gen-main.c — mt-provision-gen, a test and benchmark tool (not
 * installed): drives dirsvc's slapd-config.c, provision.c and pwhash.c from
 * the command line for bench/dirsvc-provision.sh and the integration tests.
 * `mailtierctl directory up` and `mailtierctl users bulk` call the same
 * functions directly.
 *
 *   mt-provision-gen slapd-config --dir DIR --port PORT --domain DOMAIN
 *       --schema PATH --admin-pw-file FILE --service-pw-file FILE
 *       [--auth-method bind|hash] [--log-level LEVEL] [--tool-threads N]
 *     writes DIR/slapd.conf and DIR/base.ldif; prints the slapd -h URLs.
 *   mt-provision-gen users --domain DOMAIN --count N --shards A,B,...
 *       [--first K] [--scheme ssha512|crypt] [--rounds R] [--quota BYTES]
 *       [--suffix DN] [--output FILE]
 *     writes the LDIF of userK@DOMAIN (password secretK) to FILE or stdout.
 *   mt-provision-gen hash [--scheme S] [--rounds R]   (password on stdin)
 *   mt-provision-gen verify STORED                    (password on stdin;
 *       exit 0 match, 1 mismatch, 2 error)
 *   mt-provision-gen shard --shards A,B,... ADDRESS...
 *   mt-provision-gen bench-hash [--scheme S] [--rounds R] [--count N]
 *
 * Trust boundary: command line and files of the operator running it. */
#include "alloc.h"
#include "buf.h"
#include "log.h"
#include "provision.h"
#include "pwhash.h"
#include "slapd-config.h"
#include "secret.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct opts {
	const char *dir, *domain, *schema, *admin_pw_file, *service_pw_file;
	const char *suffix, *output, *log_level;
	char **shards, *shards_copy;
	size_t n_shards;
	unsigned int port, rounds, tool_threads;
	uint64_t count, first, quota;
	enum mt_pw_scheme scheme;
	bool scheme_set, hash_auth;
};

static _Noreturn void usage(void)
{
	fputs("usage: mt-provision-gen slapd-config|users|hash|verify|shard|"
	      "bench-hash [options]\n(see the header of "
	      "dirsvc/provision-gen-main.c)\n", stderr);
	exit(2);
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		mt_fatal("bad %s: %s", what, s);
	return v;
}

/* Split "a,b,c" into opts->shards. */
static void parse_shards(struct opts *o, const char *list)
{
	char *copy, *save = NULL;

	free(o->shards_copy);
	MT_FREE(&o->shards);
	o->n_shards = 0;
	copy = o->shards_copy = mt_xstrdup(list);

	for (char *t = strtok_r(copy, ",", &save); t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		o->shards = mt_xrealloc(o->shards, (o->n_shards + 1) * sizeof(char *));
		o->shards[o->n_shards++] = t;
	}
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "domain", required_argument, NULL, 'D' },
		{ "schema", required_argument, NULL, 'S' },
		{ "admin-pw-file", required_argument, NULL, 'a' },
		{ "service-pw-file", required_argument, NULL, 's' },
		{ "auth-method", required_argument, NULL, 'm' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "count", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'f' },
		{ "shards", required_argument, NULL, 'h' },
		{ "scheme", required_argument, NULL, 'c' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "quota", required_argument, NULL, 'q' },
		{ "suffix", required_argument, NULL, 'x' },
		{ "output", required_argument, NULL, 'o' },
		{ "tool-threads", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'p': o->port = (unsigned int)parse_u64(optarg, "port"); break;
		case 'D': o->domain = optarg; break;
		case 'S': o->schema = optarg; break;
		case 'a': o->admin_pw_file = optarg; break;
		case 's': o->service_pw_file = optarg; break;
		case 'm':
			if (strcmp(optarg, "hash") != 0 && strcmp(optarg, "bind") != 0)
				mt_fatal("--auth-method must be bind or hash");
			o->hash_auth = strcmp(optarg, "hash") == 0;
			break;
		case 'l': o->log_level = optarg; break;
		case 'n': o->count = parse_u64(optarg, "count"); break;
		case 'f': o->first = parse_u64(optarg, "first"); break;
		case 'h': parse_shards(o, optarg); break;
		case 'c':
			if (!mt_pw_scheme_parse(optarg, &o->scheme))
				mt_fatal("unknown --scheme %s (crypt, ssha512)", optarg);
			o->scheme_set = true;
			break;
		case 'r': o->rounds = (unsigned int)parse_u64(optarg, "rounds"); break;
		case 'q': o->quota = parse_u64(optarg, "quota"); break;
		case 'x': o->suffix = optarg; break;
		case 'o': o->output = optarg; break;
		case 't':
			o->tool_threads = (unsigned int)parse_u64(optarg, "tool-threads");
			break;
		default: usage();
		}
	}
}

/* The first line of path (or of stdin for "-"), without the newline. */
/* PATH's secret (lib/secret), or for "-" the first line of stdin. */
static char *read_secret(const char *path)
{
	const char *error;
	if (strcmp(path, "-") != 0) {
		char *secret = mt_secret_read(path, &error);
		if (secret == NULL)
			mt_fatal("%s", error);
		return secret;
	}
	char *line = NULL;
	size_t cap = 0;
	if (getline(&line, &cap, stdin) <= 0)
		mt_fatal("stdin: no password");
	line[strcspn(line, "\r\n")] = '\0';
	return line;
}

static char *hash_or_die(enum mt_pw_scheme scheme, unsigned int rounds,
			 const char *password)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *error;

	if (!mt_pw_hash(scheme, rounds, password, &out, &error))
		mt_fatal("hash: %s", error);
	return mt_buf_steal(&out);
}

static int cmd_slapd_config(struct opts *o)
{
	char *suffix, *admin_dn, *service_dn;
	const char *error;

	if (o->dir == NULL || o->domain == NULL || o->schema == NULL ||
	    o->admin_pw_file == NULL || o->service_pw_file == NULL || o->port == 0)
		usage();
	if (!mt_slapd_default_dns(o->domain, &suffix, &admin_dn, &service_dn, &error))
		mt_fatal("%s", error);
	char *admin_pw = read_secret(o->admin_pw_file);
	char *service_pw = read_secret(o->service_pw_file);
	char *admin_hash = hash_or_die(MT_PW_SHA512_CRYPT, 0, admin_pw);
	char *service_hash = hash_or_die(MT_PW_SHA512_CRYPT, 0, service_pw);
	struct mt_slapd_params p = {
		.dir = o->dir, .port = o->port, .suffix = suffix,
		.admin_dn = admin_dn, .admin_pw_hash = admin_hash,
		.service_dn = service_dn, .service_pw_hash = service_hash,
		.service_reads_password = o->hash_auth,
		.mailtier_schema = o->schema, .log_level = o->log_level,
		.tool_threads = o->tool_threads,
	};
	if (!mt_slapd_write_config(&p, &error) ||
	    !mt_slapd_write_base_ldif(&p, &error))
		mt_fatal("%s", error);
	struct mt_buf urls = MT_BUF_INIT;
	mt_slapd_listen_urls(&urls, &p);
	printf("suffix=%s\nadmin_dn=%s\nservice_dn=%s\nurls=%s\n",
	       suffix, admin_dn, service_dn, urls.data);
	mt_buf_free(&urls);
	free(suffix);
	free(admin_dn);
	free(service_dn);
	free(admin_pw);
	free(service_pw);
	free(admin_hash);
	free(service_hash);
	return 0;
}

static int cmd_users(struct opts *o)
{
	static char obuf[1 << 20];
	const char *error;
	FILE *out = stdout;

	if (o->domain == NULL || o->n_shards == 0 || o->count == 0)
		usage();
	if (o->output != NULL && (out = fopen(o->output, "w")) == NULL)
		mt_fatal("open %s: %s", o->output, strerror(errno));
	setvbuf(out, obuf, _IOFBF, sizeof(obuf));
	struct mt_provision_params p = {
		.domain = o->domain, .suffix = o->suffix, .first = o->first,
		.count = o->count, .shards = (const char *const *)o->shards,
		.n_shards = o->n_shards,
		.scheme = o->scheme_set ? o->scheme : MT_PW_SSHA512,
		.crypt_rounds = o->rounds, .quota = o->quota,
	};
	if (!mt_provision_bulk(out, &p, &error))
		mt_fatal("users: %s", error);
	if (fflush(out) != 0 || (out != stdout && fclose(out) != 0))
		mt_fatal("writing LDIF: %s", strerror(errno));
	return 0;
}

static int cmd_hash(struct opts *o)
{
	char *pw = read_secret("-");
	char *hash = hash_or_die(o->scheme, o->rounds, pw);
	printf("%s\n", hash);
	free(pw);
	free(hash);
	return 0;
}

static int cmd_verify(int argc, char **argv)
{
	const char *error;
	bool match;

	if (argc != 1)
		usage();
	char *pw = read_secret("-");
	bool ok = mt_pw_verify(pw, argv[0], &match, &error);
	free(pw);
	if (!ok) {
		fprintf(stderr, "verify: %s\n", error);
		return 2;
	}
	return match ? 0 : 1;
}

static int cmd_shard(struct opts *o, int argc, char **argv)
{
	if (o->n_shards == 0)
		usage();
	for (int i = 0; i < argc; i++)
		printf("%s %s\n", argv[i], mt_shard_for_address(
			argv[i], (const char *const *)o->shards, o->n_shards));
	return 0;
}

static int cmd_bench_hash(struct opts *o)
{
	struct mt_buf out = MT_BUF_INIT;
	struct timespec a, b;
	uint64_t n = o->count ? o->count : 1000;
	const char *error;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (uint64_t i = 0; i < n; i++) {
		mt_buf_reset(&out);
		if (!mt_pw_hash(o->scheme, o->rounds, "secret123456", &out, &error))
			mt_fatal("hash: %s", error);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
		     (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / (double)n;
	printf("scheme=%s rounds=%u hashes=%" PRIu64 " us_per_hash=%.1f\n",
	       mt_pw_scheme_name(o->scheme),
	       o->scheme == MT_PW_SHA512_CRYPT ?
	       (o->rounds ? o->rounds : MT_PW_CRYPT_ROUNDS_DEFAULT) : 0, n, us);
	mt_buf_free(&out);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .scheme = MT_PW_SHA512_CRYPT };

	mt_log_init("mt-provision-gen", MT_LOG_TARGET_STDERR);
	if (argc < 2)
		usage();
	const char *cmd = argv[1];
	parse_opts(&o, argc - 1, argv + 1);
	argc -= optind + 1;
	argv += optind + 1;
	int rc;
	if (strcmp(cmd, "slapd-config") == 0)
		rc = cmd_slapd_config(&o);
	else if (strcmp(cmd, "users") == 0)
		rc = cmd_users(&o);
	else if (strcmp(cmd, "hash") == 0)
		rc = cmd_hash(&o);
	else if (strcmp(cmd, "verify") == 0)
		rc = cmd_verify(argc, argv);
	else if (strcmp(cmd, "shard") == 0)
		rc = cmd_shard(&o, argc, argv);
	else if (strcmp(cmd, "bench-hash") == 0)
		rc = cmd_bench_hash(&o);
	else
		usage();
	free(o.shards);
	free(o.shards_copy);
	return rc;
}
