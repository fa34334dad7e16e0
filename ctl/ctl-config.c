/* ctl-config.c — `mailtierctl config check` (load the file through the same
 * tables the daemons use, print each problem as FILE:LINE: message) and
 * `mailtierctl config doc` (mailtier.conf(5) generated from those tables, so
 * no key can be undocumented). */
#include "ctl.h"
#include "alloc.h"
#include "mailtier-settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	mt_config_free(&config);
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
