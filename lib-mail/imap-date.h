/* imap-date.h — IMAP's dates: the date-time of APPEND and INTERNALDATE
 * ("dd-Mon-yyyy hh:mm:ss +zzzz") and the date of SEARCH's BEFORE / ON /
 * SINCE and SENT* keys ("d-Mon-yyyy"), read from a client and written in
 * responses, without the C library's locale or time zone.
 *
 * Trust boundary: the text is a client's (already unquoted by
 * imap-parse.c). Every field is range-checked: day against its month
 * (leap years included), 4-digit year, hour, minute, second (60, a leap
 * second, is read as 59: Unix time cannot name it), zone within +-23:59. Pure functions.
 * RFCs: 9051 9 (date, date-text, date-day, date-day-fixed, date-month,
 * date-year, date-time, time, zone), 6.3.12 (APPEND date-time), 6.4.4
 * (SEARCH dates: the date only, time and zone disregarded), 3501 (the same
 * for IMAP4rev1). */
#ifndef MT_IMAP_DATE_H
#define MT_IMAP_DATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* A date-time: *time_r the Unix time it names, *zone_r its zone in
 * minutes east of UTC. The day may be " 5", "05" or "5". */
bool mt_imap_datetime_parse(const char *text, size_t len, int64_t *time_r,
			    int *zone_r);

/* A SEARCH date: *days_r days since 1970-01-01 (negative before). */
bool mt_imap_date_parse(const char *text, size_t len, int32_t *days_r);

/* Append time as a quoted date-time in the zone (minutes east of UTC,
 * clamped to +-23:59): "\"05-Dec-2026 09:30:00 +0100\"". A year outside
 * 0000-9999 (date-year is 4DIGIT) is written as that range's first or
 * last day. */
void mt_imap_datetime_write(struct mt_buf *out, int64_t time, int zone);

/* Days since 1970-01-01 of time shifted by zone minutes (the date a
 * SEARCH compares with, in that zone). */
int32_t mt_imap_days(int64_t time, int zone);

#endif
