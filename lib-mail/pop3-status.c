/* pop3-status.c — POP3 status lines (see pop3-status.h).
 * RFC 1939 3 and 5 (STAT), RFC 2449 3, RFC 5034 4.
 * Trust boundary: untrusted server lines; bounded, strict parsing. */
#include "pop3-status.h"

#include <string.h>

enum mt_pop3_status mt_pop3_status(const char *line, size_t len)
{
	/* RFC 2449 section 3: status indicators are case sensitive. */
	if (len >= 3 && memcmp(line, "+OK", 3) == 0 && (len == 3 || line[3] == ' '))
		return MT_POP3_OK;
	if (len >= 4 && memcmp(line, "-ERR", 4) == 0 && (len == 4 || line[4] == ' '))
		return MT_POP3_ERR;
	/* RFC 5034 section 4: a continuation is "+" SP [base64]; some
	 * servers send a bare "+". */
	if (len >= 1 && line[0] == '+' && (len == 1 || line[1] == ' '))
		return MT_POP3_CONTINUE;
	return MT_POP3_BAD;
}

/* A decimal number of at most 19 digits; advances *p. */
static bool parse_number(const char **p, uint64_t *value_r)
{
	uint64_t value = 0;
	const char *s = *p;
	size_t digits = 0;

	while (*s >= '0' && *s <= '9') {
		if (++digits > 19)
			return false;
		value = value * 10 + (uint64_t)(*s++ - '0');
	}
	if (digits == 0)
		return false;
	*p = s;
	*value_r = value;
	return true;
}

bool mt_pop3_parse_stat(const char *line, uint64_t *count_r, uint64_t *size_r)
{
	const char *p = line;

	if (strncmp(p, "+OK ", 4) != 0)
		return false;
	p += 4;
	if (!parse_number(&p, count_r) || *p++ != ' ' || !parse_number(&p, size_r))
		return false;
	/* RFC 1939 5: servers should not add anything, but may. */
	return *p == '\0' || *p == ' ';
}
