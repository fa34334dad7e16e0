/* config-values.c — parsers for typed config values: sizes, durations,
 * host:port addresses. Shared by the config loader and command-line flags.
 * Trust boundary: operator input; every malformed value gets a reason. */
#include "config.h"
#include "alloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parse a leading unsigned decimal; *end_r points past it. */
static bool parse_decimal(const char *s, uint64_t *value_r, const char **end_r,
			  const char **error_r)
{
	if (!isdigit((unsigned char)*s)) {
		*error_r = "expected a number";
		return false;
	}
	uint64_t value = 0;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned digit = (unsigned)(*s - '0');
		if (value > (UINT64_MAX - digit) / 10) {
			*error_r = "number too large";
			return false;
		}
		value = value * 10 + digit;
	}
	*value_r = value;
	*end_r = s;
	return true;
}

struct unit {
	const char *suffix;
	uint64_t factor;
};

static bool parse_with_units(const char *s, const struct unit *units,
			     uint64_t *value_r, const char *bad_unit,
			     const char **error_r)
{
	uint64_t n;
	const char *end;
	if (!parse_decimal(s, &n, &end, error_r))
		return false;
	while (*end == ' ')
		end++;
	for (const struct unit *u = units; u->suffix != NULL; u++) {
		if (strcasecmp(end, u->suffix) == 0) {
			if (u->factor != 0 && n > UINT64_MAX / u->factor) {
				*error_r = "value too large";
				return false;
			}
			*value_r = n * u->factor;
			return true;
		}
	}
	*error_r = bad_unit;
	return false;
}

bool mt_parse_size(const char *s, uint64_t *bytes_r, const char **error_r)
{
	static const struct unit units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", 1ull << 10 }, { "KB", 1ull << 10 }, { "KiB", 1ull << 10 },
		{ "M", 1ull << 20 }, { "MB", 1ull << 20 }, { "MiB", 1ull << 20 },
		{ "G", 1ull << 30 }, { "GB", 1ull << 30 }, { "GiB", 1ull << 30 },
		{ "T", 1ull << 40 }, { "TB", 1ull << 40 }, { "TiB", 1ull << 40 },
		{ NULL, 0 },
	};
	return parse_with_units(s, units, bytes_r,
		"bad size unit (use B, K, M, G or T; binary multiples)", error_r);
}

bool mt_parse_duration(const char *s, uint64_t *ms_r, const char **error_r)
{
	static const struct unit units[] = {
		{ "ms", 1 }, { "", 1000 }, { "s", 1000 }, { "m", 60000 },
		{ "min", 60000 }, { "h", 3600000 }, { "d", 86400000 },
		{ NULL, 0 },
	};
	return parse_with_units(s, units, ms_r,
		"bad duration unit (use ms, s, m, h or d)", error_r);
}

void mt_hostport_clear(struct mt_hostport *hp)
{
	MT_FREE(&hp->host);
	hp->port = 0;
}

char *mt_hostport_string(const struct mt_hostport *hp)
{
	return mt_xasprintf(strchr(hp->host, ':') != NULL ? "[%s]:%u" : "%s:%u",
			    hp->host, hp->port);
}

bool mt_parse_hostport(const char *s, struct mt_hostport *hp_r,
		       const char **error_r)
{
	const char *host_start, *host_end, *colon;
	if (*s == '[') {
		host_start = s + 1;
		host_end = strchr(host_start, ']');
		if (host_end == NULL || host_end[1] != ':') {
			*error_r = "bad address: expected [IPv6]:port";
			return false;
		}
		colon = host_end + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL) {
			*error_r = "bad address: expected host:port";
			return false;
		}
		if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
			*error_r = "bad address: write IPv6 addresses as [addr]:port";
			return false;
		}
		host_start = s;
		host_end = colon;
	}
	if (host_end == host_start) {
		*error_r = "bad address: empty host (use * for any address)";
		return false;
	}
	for (const char *p = host_start; p < host_end; p++) {
		if (isspace((unsigned char)*p) || *p == '/' || *p == '@') {
			*error_r = "bad address: invalid character in host";
			return false;
		}
	}
	uint64_t port;
	const char *end;
	if (!parse_decimal(colon + 1, &port, &end, error_r) || *end != '\0') {
		*error_r = "bad address: port is not a number";
		return false;
	}
	if (port == 0 || port > 65535) {
		*error_r = "bad address: port out of range 1-65535";
		return false;
	}
	hp_r->host = mt_xstrndup(host_start, (size_t)(host_end - host_start));
	hp_r->port = (uint16_t)port;
	return true;
}
