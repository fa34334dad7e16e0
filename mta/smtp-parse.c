/* smtp-parse.c — the MTA's own pure parsers of SMTP command arguments
 * (see smtp-parse.h): EHLO/HELO and BDAT. MAIL FROM and RCPT TO are
 * lib-mail/smtp-params.c's.
 *
 * Trust boundary: command arguments are the client's; nothing is
 * allocated, a BDAT size that does not fit 64 bits is refused.
 * RFCs: 5321 4.1.1.1; 3030 (BDAT). */
#include "smtp-parse.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

bool smtp_parse_helo(const char *args, size_t *len_r)
{
	size_t len = strcspn(args, " ");
	if (len == 0 || len > SMTP_HELO_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (args[i] <= 32 || args[i] >= 127)
			return false;
	*len_r = len;
	return true;
}

/* n = n * 10 + digit, false if that does not fit 64 bits. */
static bool add_digit(uint64_t *n, char digit)
{
	uint64_t d = (uint64_t)(digit - '0');
	if (*n > (UINT64_MAX - d) / 10)
		return false;
	*n = *n * 10 + d;
	return true;
}

bool smtp_parse_bdat(const char *args, uint64_t *size_r, bool *last_r)
{
	const char *p = args;
	uint64_t n = 0;
	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++)
		if (!add_digit(&n, *p))
			return false;
	*last_r = false;
	if (*p == ' ' && strcasecmp(p + 1, "LAST") == 0)
		*last_r = true;
	else if (*p != '\0')
		return false;
	*size_r = n;
	return true;
}
