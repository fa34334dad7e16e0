/* ctl-config.c — `mailtierctl config check` (load the file through the same
 * tables the daemons use, print each problem as FILE:LINE: message, and
 * warnings that do not stop a daemon: a store site's replication_listen on
 * a public address) and `mailtierctl config doc` (mailtier.conf(5)
 * generated from those tables, so no key can be undocumented). */
#include "ctl.h"
#include "alloc.h"
#include "mailtier-settings.h"
#include "popstore/popstore-settings.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An address only a private network reaches: loopback, RFC 1918, link
 * local, CGNAT shared space (RFC 6598); IPv6 loopback, ULA (RFC 4193),
 * link local. false for any other address, a wildcard or a host name. */
static bool address_private(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1) {
		uint32_t a = ntohl(a4.s_addr);
		return (a >> 24) == 127 || (a >> 24) == 10 || (a >> 20) == 0xac1 ||
		       (a >> 16) == 0xc0a8 || (a >> 16) == 0xa9fe || (a >> 22) == 0x191;
	}
	if (inet_pton(AF_INET6, host, &a6) == 1) {
		const uint8_t *b = a6.s6_addr;
		return IN6_IS_ADDR_LOOPBACK(&a6) || (b[0] & 0xfe) == 0xfc ||
		       IN6_IS_ADDR_LINKLOCAL(&a6);
	}
	return strcmp(host, "localhost") == 0;
}

/* The line that set key in section (0 if it was not set there). */
static unsigned int key_line(const struct mt_section *sec, const char *key)
{
	for (size_t i = 0; sec->def->settings[i].name != NULL; i++) {
		if (strcmp(sec->def->settings[i].name, key) == 0)
			return sec->key_lines != NULL ? sec->key_lines[i] : 0;
	}
	return 0;
}

/* Warn, as FILE:LINE: warning: ..., for every store site whose
 * replication_listen is not on a private address: Berkeley DB 5.3's
 * replication has no transport security (README "Running a shard on
 * three hosts"); how many. */
static unsigned int warn_replication_public(const struct mt_config *config)
{
	unsigned int warnings = 0;
	for (size_t i = 0; i < config->n_sections; i++) {
		const struct mt_section *sec = &config->sections[i];
		if (strcmp(sec->def->name, "popstore") != 0 || sec->instance == NULL)
			continue;
		const struct mt_popstore_settings *set = sec->settings;
		if (set->replication_listen == NULL || set->replication_listen[0] == '\0')
			continue;
		struct mt_hostport hp = { 0 };
		const char *error;
		if (!mt_parse_hostport(set->replication_listen, &hp, &error))
			continue;	/* the daemon refuses it; not ours to judge */
		if (hp.host != NULL && !address_private(hp.host)) {
			printf("%s:%u: warning: [popstore.%s] replication_listen %s is not a "
			       "private address: Berkeley DB replication is neither encrypted "
			       "nor authenticated, anyone who reaches it can read and change "
			       "the shard; bind it to a private network and firewall it\n",
			       config->path, key_line(sec, "replication_listen"), sec->instance,
			       set->replication_listen);
			warnings++;
		}
		mt_hostport_clear(&hp);
	}
	return warnings;
}

int ctl_config_check(struct ctl_context *ctx, int argc, char **argv)
{
	if (argc != 1) {
		fprintf(stderr, "usage: %s [-c FILE] config check\n", ctx->progname);
		return CTL_EXIT_USAGE;
	}
	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(ctx->config_path, &errors);
	if (config == NULL) {
		fputs(errors, stdout);
		free(errors);
		return CTL_EXIT_FAIL;
	}
	unsigned int warnings = warn_replication_public(config);
	mt_config_free(&config);
	if (warnings > 0)
		printf("ok, with %u warning%s\n", warnings, warnings > 1 ? "s" : "");
	else
		printf("ok\n");
	return CTL_EXIT_OK;
}

static const char *type_name(enum mt_setting_type type)
{
	switch (type) {
	case MT_SETTING_STRING: return "string";
	case MT_SETTING_BOOL: return "yes|no";
	case MT_SETTING_UINT: return "integer";
	case MT_SETTING_SIZE: return "size (B, K, M, G, T)";
	case MT_SETTING_DURATION: return "duration (ms, s, m, h, d)";
	case MT_SETTING_DURATION_LIST: return "list of durations";
	case MT_SETTING_HOSTPORT: return "host:port";
	case MT_SETTING_LIST: return "list";
	case MT_SETTING_ENUM: return "one of";
	}
	return "?";
}

/* Escape roff's special characters at line start and backslashes. */
static void roff_text(const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", stdout);
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\e", stdout);
		else if (*s == '-')
			fputs("\\-", stdout);
		else
			putchar(*s);
	}
}

int ctl_config_doc(struct ctl_context *ctx, int argc, char **argv)
{
	puts(".TH MAILTIER.CONF 5 \"\" \"mailtier " PACKAGE_VERSION "\" \"File Formats\"\n"
	     ".SH NAME\nmailtier.conf \\- configuration of the mailtier mail cluster\n"
	     ".SH DESCRIPTION\nOne INI-style file with a section per daemon and shared "
	     "sections. Lines are \\fIkey\\fR = \\fIvalue\\fR; # and ; start comments. "
	     "An unknown section or key, a duplicate key, a bad value or a missing "
	     "required key stops start-up with \\fIFILE\\fR:\\fILINE\\fR: and a "
	     "message; \\fBmailtierctl config check\\fR prints them all.\n"
	     "Sizes take B, K, M, G or T (binary multiples); durations take ms, s, m, h "
	     "or d (a bare number is seconds); lists are separated by commas or spaces.");
	for (const struct mt_section_def *const *d = mt_mailtier_sections; *d != NULL; d++) {
		const struct mt_section_def *def = *d;
		printf(".SH [%s]%s\n", def->name,
		       def->kind == MT_SECTION_FAMILY ? " and [" : "");
		if (def->kind == MT_SECTION_FAMILY)
			printf(".RI [ %s . NAME ]\n", def->name);
		roff_text(def->doc);
		printf("\nRead by: %s.\n", def->readers);
		for (size_t i = 0; def->settings != NULL && def->settings[i].name != NULL; i++) {
			const struct mt_setting_def *s = &def->settings[i];
			printf(".TP\n.B %s\n", s->name);
			roff_text(s->doc);
			printf("\n.br\nType: %s", type_name(s->type));
			if (s->type == MT_SETTING_ENUM) {
				for (int j = 0; s->enum_values[j] != NULL; j++)
					printf("%s%s", j ? ", " : " ", s->enum_values[j]);
			}
			if (s->readers != NULL)
				printf(". Read by: %s", s->readers);
			if ((s->flags & MT_SETTING_REQUIRED) != 0)
				printf(". Required");
			else if (s->default_value != NULL && s->default_value[0] != '\0') {
				printf(". Default: ");
				roff_text(s->default_value);
			}
			printf(".\n");
		}
	}
	puts(".SH SEE ALSO\n.BR mailtierctl (8)");
	return CTL_EXIT_OK;
}
