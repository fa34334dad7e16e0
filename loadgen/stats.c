/* stats.c — measurement records (see stats.h). Trust boundary: none. */
#include "stats.h"

#include <string.h>

#define SEC 1000000u

const struct lg_function_info lg_functions[LG_FN_COUNT] = {
	[LG_FN_SMTP_CONNECT] = { "smtp_connect", "SMTP Connect", 5 * SEC, true },
	[LG_FN_SMTP_EHLO] = { "smtp_ehlo", "SMTP EHLO", 5 * SEC, false },
	/* The Secure variant (--tls): a step of its own, judged. */
	[LG_FN_SMTP_STARTTLS] = { "smtp_starttls", "SMTP STARTTLS", 5 * SEC, true },
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
	[LG_FN_IMAP_STARTTLS] = { "imap_starttls", "IMAP STARTTLS", 5 * SEC, true },
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
	[LG_FN_IMAP_NOOP] = { "imap_noop", "IMAP NOOP", 5 * SEC, false },
	[LG_FN_IMAP_CREATE] = { "imap_create", "IMAP CREATE", 5 * SEC, false },
	[LG_FN_IMAP_LOGOUT] = { "imap_logout", "IMAP LOGOUT", 5 * SEC, true },
	/* The reply's submission: judged where an SMTP session is (connect,
	 * DATA), and its TLS and login as the IMAP session's are. */
	[LG_FN_SUBMIT_CONNECT] = { "smtp_submit_connect", "Submit Connect", 5 * SEC, true },
	[LG_FN_SUBMIT_EHLO] = { "smtp_submit_ehlo", "Submit EHLO", 5 * SEC, false },
	[LG_FN_SUBMIT_STARTTLS] = { "smtp_submit_starttls", "Submit STARTTLS", 5 * SEC, true },
	[LG_FN_SUBMIT_AUTH] = { "smtp_submit_auth", "Submit AUTH", 5 * SEC, true },
	[LG_FN_SUBMIT_MAIL] = { "smtp_submit_mail", "Submit MAIL", 5 * SEC, false },
	[LG_FN_SUBMIT_RCPT] = { "smtp_submit_rcpt", "Submit RCPT", 5 * SEC, false },
	[LG_FN_SUBMIT_DATA] = { "smtp_submit_data", "Submit Data", 5 * SEC, true },
	[LG_FN_SUBMIT_QUIT] = { "smtp_submit_quit", "Submit QUIT", 5 * SEC, false },
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

/* Percent of `good` among n attempts, with too few attempts made up to
 * LG_QOS_MIN_ATTEMPTS by good ones: the best a row can still reach. */
static double best_case_pct(uint64_t good, uint64_t n)
{
	if (n >= LG_QOS_MIN_ATTEMPTS)
		return 100.0 * (double)good / (double)n;
	return 100.0 * (double)(good + LG_QOS_MIN_ATTEMPTS - n) / LG_QOS_MIN_ATTEMPTS;
}

enum lg_qos lg_stats_fn_qos(const struct lg_stats *stats, enum lg_function fn)
{
	const struct lg_fn_stats *f = &stats->fn[fn];

	if (f->attempts == 0)
		return LG_QOS_UNUSED;
	if (best_case_pct(f->pass, f->attempts) <= LG_QOS_REQUIRED_PCT)
		return LG_QOS_NOT_MET;
	return f->attempts >= LG_QOS_MIN_ATTEMPTS ? LG_QOS_MET : LG_QOS_NOT_JUDGED;
}

enum lg_qos lg_stats_error_qos(const struct lg_stats *stats)
{
	uint64_t total = lg_stats_total_sessions(stats);
	uint64_t failed = lg_stats_total_failed(stats);
	/* Too few sessions made up with good ones: the best case. */
	uint64_t base = total > LG_QOS_MIN_ATTEMPTS ? total : LG_QOS_MIN_ATTEMPTS;

	if (100.0 * (double)failed / (double)base >= LG_QOS_MAX_ERROR_PCT)
		return LG_QOS_NOT_MET;
	/* No session at all is no evidence of anything: not judged. */
	return total >= LG_QOS_MIN_ATTEMPTS ? LG_QOS_MET : LG_QOS_NOT_JUDGED;
}

enum lg_qos lg_stats_qos(const struct lg_stats *stats)
{
	enum lg_qos level = lg_stats_error_qos(stats);

	for (size_t i = 0; i < LG_FN_COUNT && level != LG_QOS_NOT_MET; i++) {
		if (!lg_functions[i].summary)
			continue;
		enum lg_qos row = lg_stats_fn_qos(stats, i);
		if (row == LG_QOS_NOT_MET || row == LG_QOS_NOT_JUDGED)
			level = row;
	}
	return level;
}

bool lg_stats_qos_met(const struct lg_stats *stats)
{
	return lg_stats_qos(stats) == LG_QOS_MET;
}

const char *const lg_qos_names[] = {
	[LG_QOS_UNUSED] = "no attempts",
	[LG_QOS_MET] = "met",
	[LG_QOS_NOT_MET] = "not met",
	[LG_QOS_NOT_JUDGED] = "not judged",
};

unsigned int lg_qos_misses_in_a_row(unsigned int before, enum lg_qos point)
{
	switch (point) {
	case LG_QOS_MET:
		return 0;
	case LG_QOS_NOT_MET:
		return before + 1;
	case LG_QOS_UNUSED:
	case LG_QOS_NOT_JUDGED:
		break;
	}
	return before;
}
