/* stats.c — measurement records (see stats.h). Trust boundary: none. */
#include "stats.h"

#include <string.h>

#define SEC 1000000u

const struct lg_function_info lg_functions[LG_FN_COUNT] = {
	[LG_FN_SMTP_CONNECT] = { "smtp_connect", "SMTP Connect", 5 * SEC, true },
	[LG_FN_SMTP_EHLO] = { "smtp_ehlo", "SMTP EHLO", 5 * SEC, false },
	[LG_FN_SMTP_MAIL] = { "smtp_mail", "SMTP MAIL", 5 * SEC, false },
	[LG_FN_SMTP_RCPT] = { "smtp_rcpt", "SMTP RCPT", 5 * SEC, false },
	[LG_FN_SMTP_DATA] = { "smtp_data", "SMTP Data", 5 * SEC, true },
	[LG_FN_SMTP_QUIT] = { "smtp_quit", "SMTP QUIT", 5 * SEC, false },
	[LG_FN_POP_CONNECT] = { "pop_connect", "POP Connect", 5 * SEC, true },
	[LG_FN_POP_USER] = { "pop_user", "POP USER", 5 * SEC, false },
	[LG_FN_POP_PASS] = { "pop_pass", "POP PASS", 5 * SEC, false },
	[LG_FN_POP_STAT] = { "pop_stat", "POP Status", 5 * SEC, true },
	[LG_FN_POP_RETR] = { "pop_retr", "POP Retrieve", 5 * SEC, true },
	[LG_FN_POP_DELE] = { "pop_dele", "POP Delete", 5 * SEC, true },
	[LG_FN_POP_QUIT] = { "pop_quit", "POP QUIT", 5 * SEC, false },
	/* WORKLOAD.md (IMAP, our choice): every step within 5 s for > 95%:
	 * each is a Summary row. */
	[LG_FN_IMAP_CONNECT] = { "imap_connect", "IMAP Connect", 5 * SEC, true },
	[LG_FN_IMAP_LOGIN] = { "imap_login", "IMAP Login", 5 * SEC, true },
	[LG_FN_IMAP_LIST] = { "imap_list", "IMAP LIST", 5 * SEC, true },
	[LG_FN_IMAP_SELECT] = { "imap_select", "IMAP SELECT", 5 * SEC, true },
	[LG_FN_IMAP_FETCH_HEADERS] = { "imap_fetch_headers", "IMAP Fetch hdrs", 5 * SEC, true },
	[LG_FN_IMAP_FETCH_BODY] = { "imap_fetch_body", "IMAP Fetch body", 5 * SEC, true },
	[LG_FN_IMAP_STORE] = { "imap_store", "IMAP STORE", 5 * SEC, true },
	[LG_FN_IMAP_EXPUNGE] = { "imap_expunge", "IMAP EXPUNGE", 5 * SEC, true },
	[LG_FN_IMAP_MOVE] = { "imap_move", "IMAP MOVE", 5 * SEC, true },
	[LG_FN_IMAP_APPEND] = { "imap_append", "IMAP APPEND", 5 * SEC, true },
	[LG_FN_IMAP_SEARCH] = { "imap_search", "IMAP SEARCH", 5 * SEC, true },
	[LG_FN_IMAP_IDLE] = { "imap_idle", "IMAP IDLE", 5 * SEC, true },
	[LG_FN_IMAP_IDLE_WAKE] = { "imap_idle_wake", "IMAP IDLE wake", 5 * SEC, true },
	[LG_FN_IMAP_CREATE] = { "imap_create", "IMAP CREATE", 5 * SEC, false },
	[LG_FN_IMAP_LOGOUT] = { "imap_logout", "IMAP LOGOUT", 5 * SEC, true },
	[LG_FN_DELIVERY] = { "delivery", "Delivery Time", 60 * SEC, true },
};

const char *const lg_error_names[LG_ERR_COUNT] = {
	[LG_ERR_CONNECT] = "connect",
	[LG_ERR_PROTOCOL] = "protocol",
	[LG_ERR_REJECTED] = "rejected",
	[LG_ERR_TIMEOUT] = "timeout",
	[LG_ERR_DISCONNECT] = "disconnect",
	[LG_ERR_OVERLOAD] = "generator_overload",
};

void lg_stats_init(struct lg_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	for (size_t i = 0; i < LG_FN_COUNT; i++)
		lg_hist_init(&stats->fn[i].hist);
}

void lg_stats_merge(struct lg_stats *dst, const struct lg_stats *src)
{
	for (size_t i = 0; i < LG_FN_COUNT; i++) {
		dst->fn[i].attempts += src->fn[i].attempts;
		dst->fn[i].pass += src->fn[i].pass;
		lg_hist_merge(&dst->fn[i].hist, &src->fn[i].hist);
	}
	for (size_t i = 0; i < LG_KIND_COUNT; i++) {
		dst->sessions[i] += src->sessions[i];
		dst->sessions_failed[i] += src->sessions_failed[i];
	}
	for (size_t i = 0; i < LG_ERR_COUNT; i++)
		dst->errors[i] += src->errors[i];
	/* lg_counters is all uint64_t: add it field by field as an array. */
	uint64_t *d = (uint64_t *)&dst->counters;
	const uint64_t *s = (const uint64_t *)&src->counters;
	for (size_t i = 0; i < sizeof(dst->counters) / sizeof(uint64_t); i++)
		d[i] += s[i];
}

void lg_stats_attempt(struct lg_stats *stats, enum lg_function fn)
{
	stats->fn[fn].attempts++;
}

void lg_stats_answered(struct lg_stats *stats, enum lg_function fn,
		       uint64_t us, bool ok)
{
	lg_hist_record(&stats->fn[fn].hist, us);
	if (ok && us <= lg_functions[fn].limit_us)
		stats->fn[fn].pass++;
}

uint64_t lg_stats_total_sessions(const struct lg_stats *stats)
{
	uint64_t n = 0;

	for (size_t i = 0; i < LG_KIND_COUNT; i++)
		n += stats->sessions[i];
	return n;
}

uint64_t lg_stats_total_failed(const struct lg_stats *stats)
{
	uint64_t n = 0;

	for (size_t i = 0; i < LG_KIND_COUNT; i++)
		n += stats->sessions_failed[i];
	return n;
}

double lg_stats_pass_pct(const struct lg_stats *stats, enum lg_function fn)
{
	const struct lg_fn_stats *f = &stats->fn[fn];

	return f->attempts == 0 ? -1 : 100.0 * (double)f->pass / (double)f->attempts;
}

double lg_stats_error_rate_pct(const struct lg_stats *stats)
{
	uint64_t total = lg_stats_total_sessions(stats);

	return total == 0 ? -1 :
		100.0 * (double)lg_stats_total_failed(stats) / (double)total;
}

bool lg_stats_qos_met(const struct lg_stats *stats)
{
	for (size_t i = 0; i < LG_FN_COUNT; i++) {
		double pct = lg_stats_pass_pct(stats, i);
		if (lg_functions[i].summary && pct >= 0 && pct <= LG_QOS_REQUIRED_PCT)
			return false;
	}
	/* No session at all is no evidence of anything. */
	double error_pct = lg_stats_error_rate_pct(stats);
	return error_pct >= 0 && error_pct < LG_QOS_MAX_ERROR_PCT;
}
