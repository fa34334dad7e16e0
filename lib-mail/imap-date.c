/* imap-date.c — IMAP dates and date-times (see imap-date.h). */
#include "imap-date.h"

#include <strings.h>

static const char months[12][4] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int64_t y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of the civil date (proleptic Gregorian; H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const int64_t yoe = y - era * 400;
	const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y_r, int *m_r, int *d_r)
{
	z += 719468;
	const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	const int64_t doe = z - era * 146097;
	const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	const int64_t mp = (5 * doy + 2) / 153;
	*d_r = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m_r = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y_r = yoe + era * 400 + (*m_r <= 2);
}

/* A cursor over the text. */
struct reader {
	const char *s;
	size_t len, pos;
};

static bool digits(struct reader *r, size_t min, size_t max, int *value_r)
{
	size_t n = 0;
	int v = 0;
	while (n < max && r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') {
		v = v * 10 + (r->s[r->pos] - '0');
		r->pos++;
		n++;
	}
	*value_r = v;
	return n >= min;
}

static bool literal(struct reader *r, char c)
{
	if (r->pos >= r->len || r->s[r->pos] != c)
		return false;
	r->pos++;
	return true;
}

/* day "-" month "-" year, the day checked against its month. */
static bool date_text(struct reader *r, int64_t *days_r)
{
	int day, year, month = 0;
	if (r->pos < r->len && r->s[r->pos] == ' ')
		r->pos++;	/* date-day-fixed: SP DIGIT */
	if (!digits(r, 1, 2, &day) || !literal(r, '-') || r->len - r->pos < 3)
		return false;
	for (int m = 0; m < 12; m++)
		if (strncasecmp(r->s + r->pos, months[m], 3) == 0)
			month = m + 1;
	if (month == 0)
		return false;
	r->pos += 3;
	if (!literal(r, '-') || !digits(r, 4, 4, &year))
		return false;
	if (day < 1 || day > month_days(year, month))
		return false;
	*days_r = days_from_civil(year, month, day);
	return true;
}

bool mt_imap_date_parse(const char *text, size_t len, int32_t *days_r)
{
	struct reader r = { text, len, 0 };
	int64_t days;
	if (!date_text(&r, &days) || r.pos != len)
		return false;
	*days_r = (int32_t)days;
	return true;
}

bool mt_imap_datetime_parse(const char *text, size_t len, int64_t *time_r,
			    int *zone_r)
{
	struct reader r = { text, len, 0 };
	int64_t days;
	int h, m, s, zh, zm;
	if (!date_text(&r, &days) || !literal(&r, ' ') ||
	    !digits(&r, 2, 2, &h) || !literal(&r, ':') || !digits(&r, 2, 2, &m) ||
	    !literal(&r, ':') || !digits(&r, 2, 2, &s) || !literal(&r, ' ') ||
	    r.pos >= len || (text[r.pos] != '+' && text[r.pos] != '-'))
		return false;
	const int sign = text[r.pos++] == '-' ? -1 : 1;
	if (!digits(&r, 2, 2, &zh) || !digits(&r, 2, 2, &zm) || r.pos != len)
		return false;
	if (h > 23 || m > 59 || s > 60 || zh > 23 || zm > 59)
		return false;
	if (s == 60)
		s = 59;	/* a leap second: Unix time has none to name it */
	const int zone = sign * (zh * 60 + zm);
	*time_r = days * 86400 + h * 3600 + m * 60 + s - (int64_t)zone * 60;
	*zone_r = zone;
	return true;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int32_t mt_imap_days(int64_t time, int zone)
{
	return (int32_t)floor_div(time + (int64_t)zone * 60, 86400);
}

void mt_imap_datetime_write(struct mt_buf *out, int64_t time, int zone)
{
	if (zone > 23 * 60 + 59)
		zone = 23 * 60 + 59;
	if (zone < -(23 * 60 + 59))
		zone = -(23 * 60 + 59);
	const int64_t local = time + (int64_t)zone * 60;
	const int64_t days = floor_div(local, 86400);
	const int64_t secs = local - days * 86400;
	int64_t y;
	int m, d;
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) {	/* date-year is 4DIGIT */
		y = y < 0 ? 0 : 9999;
		m = y == 0 ? 1 : 12;
		d = y == 0 ? 1 : 31;
	}
	const int az = zone < 0 ? -zone : zone;
	mt_buf_appendf(out, "\"%02d-%s-%04lld %02d:%02d:%02d %c%02d%02d\"", d,
		       months[m - 1], (long long)y, (int)(secs / 3600),
		       (int)(secs / 60 % 60), (int)(secs % 60), zone < 0 ? '-' : '+',
		       az / 60, az % 60);
}
