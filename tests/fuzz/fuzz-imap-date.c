/* fuzz-imap-date.c — libFuzzer target for lib-mail/imap-date.c, the
 * reader of a client's APPEND date-time and SEARCH dates.
 *
 * Properties, beyond "no crash, no over-read, no UB (signed overflow)":
 *  - an accepted date-time written back (in its own zone) reads back to the
 *    same time and zone, and its date part reads as the date the zone
 *    gives (mt_imap_days); the written form is 28 octets, quoted;
 *  - an accepted date is the date of the same text with " 00:00:00 +0000"
 *    added, read as a date-time.
 *
 * Input: the text itself.
 * Trust boundary: IMAP client octets (RFC 9051 9 date, date-time). */
#include "fuzz.h"

#include "buf.h"
#include "imap-date.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	int64_t t, back;
	int zone, back_zone;
	int32_t days, back_days;
	struct mt_buf out = MT_BUF_INIT;
	if (mt_imap_datetime_parse(text, size, &t, &zone)) {
		mt_imap_datetime_write(&out, t, zone);
		FUZZ_CHECK(out.len == 28 && out.data[0] == '"' && out.data[27] == '"',
			   "written as %s", out.data);
		FUZZ_CHECK(mt_imap_datetime_parse(out.data + 1, 26, &back, &back_zone) &&
			   back == t && back_zone == zone, "read back differs: %s",
			   out.data);
		FUZZ_CHECK(mt_imap_date_parse(out.data + 1, 11, &back_days) &&
			   back_days == mt_imap_days(t, zone), "date part differs");
	}
	if (mt_imap_date_parse(text, size, &days)) {
		mt_buf_reset(&out);
		mt_buf_append(&out, text, size);
		mt_buf_append_str(&out, " 00:00:00 +0000");
		FUZZ_CHECK(mt_imap_datetime_parse(out.data, out.len, &back, &back_zone) &&
			   back == (int64_t)days * 86400 && back_zone == 0,
			   "date and date-time disagree");
	}
	mt_buf_free(&out);
	return 0;
}
