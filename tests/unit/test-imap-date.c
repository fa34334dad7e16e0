/* test-imap-date.c — unit tests for lib-mail/imap-date.c: RFC 9051
 * date-times and SEARCH dates read and written, every field's range (day
 * against its month, leap years, hour, minute, leap second, zone), the
 * three spellings of a one-digit day, and agreement with the C library's
 * timegm()/gmtime_r() over a sweep of times from 1900 to 2200. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "imap-date.h"

static int64_t datetime(const char *s, int *zone_r)
{
	int64_t t = 0;
	if (!mt_imap_datetime_parse(s, strlen(s), &t, zone_r))
		fail_msg("%s refused", s);
	return t;
}

static void refused(const char *s)
{
	int64_t t;
	int zone;
	int32_t days;
	if (mt_imap_datetime_parse(s, strlen(s), &t, &zone))
		fail_msg("date-time %s accepted", s);
	if (mt_imap_date_parse(s, strlen(s), &days))
		fail_msg("date %s accepted", s);
}

static void test_parse(void **state)
{
	(void)state;
	int zone;
	/* RFC 9051 6.3.12's example. */
	assert_int_equal(datetime("7-Feb-1994 21:52:25 -0800", &zone), 760686745);
	assert_int_equal(zone, -480);
	assert_int_equal(datetime(" 7-Feb-1994 21:52:25 -0800", &zone), 760686745);
	assert_int_equal(datetime("07-feb-1994 21:52:25 -0800", &zone), 760686745);
	assert_int_equal(datetime("01-Jan-1970 00:00:00 +0000", &zone), 0);
	assert_int_equal(datetime("01-Jan-1970 01:00:00 +0100", &zone), 0);
	assert_int_equal(zone, 60);
	assert_int_equal(datetime("31-Dec-1969 23:59:59 +0000", &zone), -1);
	assert_int_equal(datetime("29-Feb-2000 12:00:00 +0530", &zone),
			 951825600 - 330 * 60);
	assert_int_equal(datetime("31-Dec-2016 23:59:60 +0000", &zone), 1483228799);
	int32_t days;
	assert_true(mt_imap_date_parse("1-Feb-1994", 10, &days));
	assert_int_equal(days, 8797);
	assert_true(mt_imap_date_parse("01-Jan-1970", 11, &days));
	assert_int_equal(days, 0);
	assert_true(mt_imap_date_parse("31-Dec-1969", 11, &days));
	assert_int_equal(days, -1);

	refused("");
	refused("29-Feb-1900 00:00:00 +0000");	/* not a leap year */
	refused("29-Feb-1900");
	refused("31-Apr-2026");
	refused("0-Jan-2026");
	refused("32-Jan-2026");
	refused("1-Foo-2026");
	refused("1-Jan-26");
	refused("1-Jan-20266");
	refused("001-Jan-2026");
	refused("1-Jan-2026 24:00:00 +0000");
	refused("1-Jan-2026 23:60:00 +0000");
	refused("1-Jan-2026 23:59:61 +0000");
	refused("1-Jan-2026 23:59:59 +2400");
	refused("1-Jan-2026 23:59:59 +0060");
	refused("1-Jan-2026 23:59:59 0000");
	refused("1-Jan-2026 23:59:59 +000");
	refused("1-Jan-2026 23:59:59 +0000 ");
	refused("1-Jan-2026 1:00:00 +0000");
	refused("1-Jan-2026 01:00 +0000");
	refused("1-Jan-2026\t01:00:00 +0000");
	refused("1-Jan-2026 ");
}

static void written_is(int64_t t, int zone, const char *want)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_imap_datetime_write(&out, t, zone);
	assert_string_equal(mt_buf_cstr(&out), want);
	mt_buf_free(&out);
}

static void test_write(void **state)
{
	(void)state;
	written_is(760686745, -480, "\"07-Feb-1994 21:52:25 -0800\"");
	written_is(0, 0, "\"01-Jan-1970 00:00:00 +0000\"");
	written_is(-1, 0, "\"31-Dec-1969 23:59:59 +0000\"");
	written_is(0, 330, "\"01-Jan-1970 05:30:00 +0530\"");
	written_is(0, 100000, "\"01-Jan-1970 23:59:00 +2359\"");
	struct mt_buf out = MT_BUF_INIT;
	mt_imap_datetime_write(&out, INT64_C(1) << 40, 0);	/* year 36812 */
	assert_int_equal(strncmp(mt_buf_cstr(&out), "\"31-Dec-9999 ", 13), 0);
	mt_buf_reset(&out);
	mt_imap_datetime_write(&out, -(INT64_C(1) << 40), 0);
	assert_int_equal(strncmp(mt_buf_cstr(&out), "\"01-Jan-0000 ", 13), 0);
	mt_buf_free(&out);
}

static void test_against_libc(void **state)
{
	(void)state;
	struct mt_buf out = MT_BUF_INIT;
	static const char mon[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	const int zones[] = { 0, 60, -480, 330, 23 * 60 + 59, -(23 * 60 + 59) };
	for (int64_t t = INT64_C(-2208988800); t < INT64_C(7258118400);
	     t += 86400 * 3 + 3607) {
		const int zone = zones[(t / 3607) % 6 < 0 ? -((t / 3607) % 6) : (t / 3607) % 6];
		time_t local = (time_t)(t + zone * 60);
		struct tm tm;
		assert_non_null(gmtime_r(&local, &tm));
		char want[64];
		snprintf(want, sizeof(want), "\"%02d-%s-%04d %02d:%02d:%02d %c%02d%02d\"",
			 tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, zone < 0 ? '-' : '+',
			 (zone < 0 ? -zone : zone) / 60, (zone < 0 ? -zone : zone) % 60);
		mt_buf_reset(&out);
		mt_imap_datetime_write(&out, t, zone);
		assert_string_equal(mt_buf_cstr(&out), want);
		int64_t back;
		int back_zone;
		assert_true(mt_imap_datetime_parse(out.data + 1, out.len - 2, &back,
						   &back_zone));
		assert_int_equal(back, t);
		assert_int_equal(back_zone, zone);
		int32_t days;
		assert_true(mt_imap_date_parse(out.data + 1, 11, &days));
		assert_int_equal(days, mt_imap_days(t, zone));
		assert_int_equal((int64_t)days * 86400,
				 (int64_t)local - tm.tm_hour * 3600 - tm.tm_min * 60 - tm.tm_sec);
	}
	mt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_against_libc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
