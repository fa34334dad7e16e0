/* milter-settings.c — the [milter] family table (see milter-settings.h
 * and config.h): [milter.NAME] per filter, [milter] for values they share.
 * Trust boundary: the operator's config file; an address of the wrong
 * shape stops start-up with FILE:LINE (its host name is resolved when
 * the MTA starts). No RFC applies (the milter protocol is Sendmail's). */
#include "milter-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(struct mt_milter_settings, field)

const char *const mt_milter_action_names[] = { "tempfail", "accept", "reject", NULL };
static const char *const milter_action_values[] = {
	"tempfail", "accept", "reject", "inherit", NULL };

static const struct mt_setting_def milter_settings[] = {
	{ .name = "address", .type = MT_SETTING_STRING, .offset = F(address),
	  .doc = "Where the filter listens: inet:HOST:PORT (an IPv6 HOST in brackets) or unix:PATH (rspamd's proxy worker in milter mode: inet:127.0.0.1:11332; OpenDKIM: its Socket)." },
	{ .name = "default_action", .type = MT_SETTING_ENUM, .offset = F(default_action),
	  .default_value = "inherit", .enum_values = milter_action_values,
	  .doc = "When this filter fails: tempfail, accept or reject (inherit: [mta] milter_default_action)." },
	{ .name = "connect_timeout", .type = MT_SETTING_DURATION,
	  .offset = F(connect_timeout), .default_value = "0",
	  .doc = "Time to connect and negotiate (0: [mta] milter_connect_timeout)." },
	{ .name = "command_timeout", .type = MT_SETTING_DURATION,
	  .offset = F(command_timeout), .default_value = "0",
	  .doc = "Time to answer a command (0: [mta] milter_command_timeout)." },
	{ .name = "content_timeout", .type = MT_SETTING_DURATION,
	  .offset = F(content_timeout), .default_value = "0",
	  .doc = "Time to answer a body chunk or the end of message (0: [mta] milter_content_timeout)." },
	MT_SETTINGS_END,
};

/* The shape of inet:HOST:PORT / unix:PATH (resolved at start-up). */
static bool address_shape(const char *address, const char **error_r)
{
	const char *rest;
	if (strncmp(address, "unix:", 5) == 0 || strncmp(address, "local:", 6) == 0) {
		rest = strchr(address, ':') + 1;
		if (*rest != '/') {
			*error_r = "unix: needs an absolute socket path";
			return false;
		}
		return true;
	}
	if (strncmp(address, "inet:", 5) != 0 && strncmp(address, "inet6:", 6) != 0) {
		*error_r = "expected inet:HOST:PORT or unix:PATH";
		return false;
	}
	rest = strchr(address, ':') + 1;
	const char *colon = strrchr(rest, ':');
	char *end;
	unsigned long port = colon != NULL ? strtoul(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon == rest || colon[1] == '\0' || *end != '\0' ||
	    port == 0 || port > 65535) {
		*error_r = "expected inet:HOST:PORT with a port of 1-65535";
		return false;
	}
	return true;
}

/* Each [milter.NAME] (the loader skips the base). */
static void milter_check(struct mt_config_checker *checker,
			 const struct mt_config *config,
			 const struct mt_section *section)
{
	const struct mt_milter_settings *set = section->settings;
	const char *error;
	(void)config;
	if (set->address[0] == '\0')
		mt_config_check_error(checker, section, NULL,
				      "[milter.%s] needs an address", section->instance);
	else if (!address_shape(set->address, &error))
		mt_config_check_error(checker, section, "address", "'%s': %s",
				      set->address, error);
}

const struct mt_section_def mt_milter_section = {
	.name = "milter", .kind = MT_SECTION_FAMILY, .readers = "mailtier-mta",
	.doc = "Mail filters the MTA asks over the Sendmail milter protocol: [milter] "
	       "for shared values, [milter.NAME] per filter.",
	.struct_size = sizeof(struct mt_milter_settings),
	.settings = milter_settings, .check = milter_check,
};
