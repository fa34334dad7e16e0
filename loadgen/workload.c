/* workload.c — the SPECmail2001-style workload model (see workload.h and
 * loadgen/README.md, "Workload": what SPEC published and the choices that
 * are ours).
 * Trust boundary: none (internal). */
#include "workload.h"

#include "log.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *const lg_kind_names[LG_KIND_COUNT] = {
	[LG_KIND_SMTP_LOCAL] = "smtp-local",
	[LG_KIND_SMTP_REMOTE] = "smtp-remote",
	[LG_KIND_POP_FIRST] = "pop-first",
	[LG_KIND_POP_REPEAT] = "pop-repeat",
	[LG_KIND_IMAP_DESKTOP] = "imap-desktop",
	[LG_KIND_IMAP_WEBMAIL] = "imap-webmail",
	[LG_KIND_IMAP_REPLY_SUBMIT] = "imap-reply-submit",
};

const double lg_kind_rate_per_100k[LG_KIND_COUNT] = {
	[LG_KIND_SMTP_LOCAL] = 8.33,
	[LG_KIND_SMTP_REMOTE] = 7.50,
	[LG_KIND_POP_FIRST] = 4.17,
	[LG_KIND_POP_REPEAT] = 12.50,
	/* 4.8 sessions per user per peak hour: 133.33/s per 100,000 users. */
	[LG_KIND_IMAP_DESKTOP] = LG_IMAP_SESSIONS_PER_USER_HOUR * 100000 / 3600 *
		LG_IMAP_DESKTOP_SHARE,
	[LG_KIND_IMAP_WEBMAIL] = LG_IMAP_SESSIONS_PER_USER_HOUR * 100000 / 3600 *
		(1 - LG_IMAP_DESKTOP_SHARE),
	/* started by desktop sessions (a reply), not by the schedule */
	[LG_KIND_IMAP_REPLY_SUBMIT] = 0,
};

const char *const lg_protocol_names[LG_PROTOCOL_COUNT] = {
	[LG_PROTOCOL_POP] = "pop",
	[LG_PROTOCOL_IMAP] = "imap",
	[LG_PROTOCOL_MIXED] = "mixed",
};

/* Our folder names: the four special-use ones (RFC 6154 \Sent, \Drafts,
 * \Trash, \Junk) and five user folders. */
const char *const lg_imap_folders[LG_IMAP_FOLDERS] = {
	"Sent", "Drafts", "Trash", "Junk",
	"Folder1", "Folder2", "Folder3", "Folder4", "Folder5",
};

bool lg_protocol_parse(const char *name, enum lg_protocol *protocol_r)
{
	for (int p = 0; p < LG_PROTOCOL_COUNT; p++)
		if (strcmp(name, lg_protocol_names[p]) == 0) {
			*protocol_r = p;
			return true;
		}
	return false;
}

/* The published size distribution, KiB: share. Sizes are taken as exact
 * points (our choice), which gives the published mean: 24.53 KiB. */
const struct lg_weighted lg_size_table[] = {
	{ 1, 1020 }, { 2, 3071 }, { 3, 2059 }, { 4, 1078 }, { 5, 588 },
	{ 6, 374 }, { 10, 744 }, { 100, 979 }, { 1000, 69 }, { 2675, 18 },
};
const size_t lg_size_table_len = sizeof(lg_size_table) / sizeof(lg_size_table[0]);

/* Recipients per message. Published: 1 in 85.73%, 1.66% for 2 falling to
 * 0.21% for 20, mean 2.00. The tail 3..19 is our reconstruction: geometric
 * (ratio 0.9005) fitted so the shares sum to 100% and the mean is 2.00,
 * rounded to 0.01%, with 0.01% moved from 19 to 15 so the rounded table's
 * mean is exactly 2.0000. */
const struct lg_weighted lg_rcpt_table[] = {
	{ 1, 8573 }, { 2, 166 }, { 3, 148 }, { 4, 134 }, { 5, 120 },
	{ 6, 108 }, { 7, 98 }, { 8, 88 }, { 9, 79 }, { 10, 71 },
	{ 11, 64 }, { 12, 58 }, { 13, 52 }, { 14, 47 }, { 15, 43 },
	{ 16, 38 }, { 17, 34 }, { 18, 31 }, { 19, 27 }, { 20, 21 },
};
const size_t lg_rcpt_table_len = sizeof(lg_rcpt_table) / sizeof(lg_rcpt_table[0]);

/* Initial mailbox contents. Published: 0 messages 26.5%, 1: 16.11%,
 * 2: 12.25%, then a geometric tail to 28 messages (0.02%). The tail 3..28
 * is our reconstruction: ratio 0.7801, 0.02% at 28, the shares summing to
 * 100% (rounded to 0.01%, the rounding remainder added to 3); mean 3.34. */
const struct lg_weighted lg_mailbox_table[] = {
	{ 0, 2650 }, { 1, 1611 }, { 2, 1225 }, { 3, 995 }, { 4, 776 },
	{ 5, 605 }, { 6, 472 }, { 7, 368 }, { 8, 287 }, { 9, 224 },
	{ 10, 175 }, { 11, 136 }, { 12, 106 }, { 13, 83 }, { 14, 65 },
	{ 15, 50 }, { 16, 39 }, { 17, 31 }, { 18, 24 }, { 19, 19 },
	{ 20, 15 }, { 21, 11 }, { 22, 9 }, { 23, 7 }, { 24, 5 },
	{ 25, 4 }, { 26, 3 }, { 27, 3 }, { 28, 2 },
};
const size_t lg_mailbox_table_len = sizeof(lg_mailbox_table) / sizeof(lg_mailbox_table[0]);

/* Expand a template into out (always NUL-terminated, truncated to size);
 * with out == NULL only check it. */
static bool expand(char *out, size_t size, const char *template,
		   uint64_t number, const char *domain, const char **error_r)
{
	size_t len = 0;

#define PUT(...) do { \
		if (out != NULL && len < size) { \
			int n_ = snprintf(out + len, size - len, __VA_ARGS__); \
			len += n_ > 0 ? (size_t)n_ : 0; \
		} \
	} while (0)
	if (out != NULL && size > 0)
		out[0] = '\0';
	for (const char *p = template; *p != '\0'; p++) {
		if (*p != '%') {
			PUT("%c", *p);
			continue;
		}
		p++;
		if (*p == '%') {
			PUT("%%");
		} else if (*p == 'D') {
			PUT("%s", domain);
		} else if (*p == 'K') {
			PUT("%" PRIu64, number);
		} else if (*p == '0' && p[1] >= '1' && p[1] <= '9') {
			int width = 0;
			for (p++; *p >= '0' && *p <= '9' && width < 100; p++)
				width = width * 10 + (*p - '0');
			if (*p != 'K' || width > 20) {
				*error_r = "%0N must be followed by K, N at most 20";
				return false;
			}
			PUT("%0*" PRIu64, width, number);
		} else {
			*error_r = "unknown % sequence (use %K, %0NK, %D or %%)";
			return false;
		}
	}
#undef PUT
	return true;
}

bool lg_template_check(const char *template, const char **error_r)
{
	return expand(NULL, 0, template, 0, "", error_r);
}

void lg_format_address(char *out, size_t size, const struct lg_workload *wl,
		       bool remote, uint64_t user)
{
	const char *error;
	size_t len;

	if (!expand(out, size, wl->local_template, wl->first_user + user - 1,
		    wl->domain, &error))
		mt_panic("unchecked template: %s", error);
	len = strlen(out);
	snprintf(out + len, size - len, "@%s",
		 remote ? wl->remote_domain : wl->domain);
}

void lg_format_login(char *out, size_t size, const struct lg_workload *wl,
		     uint64_t user)
{
	const char *error;

	if (!expand(out, size, wl->login_template, wl->first_user + user - 1,
		    wl->domain, &error))
		mt_panic("unchecked template: %s", error);
}

void lg_format_password(char *out, size_t size, const struct lg_workload *wl,
			uint64_t user)
{
	const char *error;

	if (!expand(out, size, wl->password_template, wl->first_user + user - 1,
		    wl->domain, &error))
		mt_panic("unchecked template: %s", error);
}

bool lg_parse_address(const struct lg_workload *wl, const char *local,
		      const char *domain, bool *remote_r, uint64_t *user_r)
{
	bool remote = strcasecmp(domain, wl->remote_domain) == 0;
	uint64_t range = remote ? LG_REMOTE_USERS : wl->users;
	char want[320], got[320];

	if (!remote && strcasecmp(domain, wl->domain) != 0)
		return false;
	if (snprintf(got, sizeof(got), "%s@%s", local, domain) >= (int)sizeof(got))
		return false;
	/* Each maximal run of digits is a candidate number (bounded: at most
	 * one per two characters of a 320-octet address). */
	for (const char *p = local; *p != '\0'; p++) {
		if (!isdigit((unsigned char)*p) || (p > local && isdigit((unsigned char)p[-1])))
			continue;
		uint64_t n = 0;
		int digits = 0;
		for (const char *q = p; isdigit((unsigned char)*q) && digits <= 19; q++, digits++)
			n = n * 10 + (uint64_t)(*q - '0');
		if (digits > 19 || n < wl->first_user || n - wl->first_user >= range)
			continue;
		uint64_t user = n - wl->first_user + 1;
		lg_format_address(want, sizeof(want), wl, remote, user);
		if (strcasecmp(want, got) == 0) {
			*remote_r = remote;
			*user_r = user;
			return true;
		}
	}
	return false;
}

static uint64_t load_users(const struct lg_workload *wl)
{
	return wl->load_users != 0 ? wl->load_users : wl->users;
}

double lg_workload_rate(const struct lg_workload *wl, enum lg_kind kind,
			unsigned int level_pct)
{
	bool imap = kind == LG_KIND_IMAP_DESKTOP || kind == LG_KIND_IMAP_WEBMAIL;
	bool pop = kind == LG_KIND_POP_FIRST || kind == LG_KIND_POP_REPEAT;
	double share = wl->protocol == LG_PROTOCOL_MIXED && (imap || pop) ? 0.5 :
		(imap && wl->protocol != LG_PROTOCOL_IMAP) ||
		(pop && wl->protocol == LG_PROTOCOL_IMAP) ? 0 : 1;

	return share * lg_kind_rate_per_100k[kind] * (double)load_users(wl) /
		100000.0 * (double)level_pct / 100.0;
}

void lg_workload_plan_imap(struct lg_rng *rng, enum lg_kind kind,
			   struct lg_imap_plan *plan)
{
	plan->seed = lg_rng_next(rng);
	plan->length_ms = kind != LG_KIND_IMAP_DESKTOP ? 0 :
		(uint64_t)(lg_rng_exponential(rng, LG_IMAP_SESSION_MEAN_S) * 1000);
	plan->visit_folder = lg_rng_uniform(rng) < LG_IMAP_VISIT_SHARE;
	plan->search = lg_rng_uniform(rng) >= LG_IMAP_SEARCH_SHARE ?
		LG_IMAP_SEARCH_NONE : lg_rng_uniform(rng) < 0.5 ?
		LG_IMAP_SEARCH_UNSEEN : LG_IMAP_SEARCH_HEADER;
}

double lg_workload_msgs_per_min(const struct lg_workload *wl,
				unsigned int level_pct)
{
	return (double)load_users(wl) / LG_USERS_PER_MSG_PER_MIN *
		(double)level_pct / 100.0;
}

uint32_t lg_weighted_pick(const struct lg_weighted *table, size_t len,
			  struct lg_rng *rng)
{
	uint32_t total = 0;

	for (size_t i = 0; i < len; i++)
		total += table[i].weight_bp;
	uint64_t x = lg_rng_below(rng, total);
	for (size_t i = 0; i < len; i++) {
		if (x < table[i].weight_bp)
			return table[i].value;
		x -= table[i].weight_bp;
	}
	mt_panic("lg_weighted_pick: weights changed under us");
}

double lg_weighted_mean(const struct lg_weighted *table, size_t len)
{
	double sum = 0, weight = 0;

	for (size_t i = 0; i < len; i++) {
		sum += (double)table[i].value * table[i].weight_bp;
		weight += table[i].weight_bp;
	}
	return sum / weight;
}

uint64_t lg_workload_message_size(struct lg_rng *rng)
{
	return (uint64_t)lg_weighted_pick(lg_size_table, lg_size_table_len,
					  rng) * 1024u;
}

unsigned int lg_workload_rcpt_count(struct lg_rng *rng)
{
	return lg_weighted_pick(lg_rcpt_table, lg_rcpt_table_len, rng);
}

uint64_t lg_workload_pick_user(const struct lg_workload *wl,
			       struct lg_rng *rng)
{
	return 1 + lg_rng_below(rng, wl->users);
}

/* A user number in 1..range not yet among the plan's recipients of the
 * same side (local/remote). The caller keeps the count <= range, so a free
 * number exists; random probes find one fast, and a bounded scan after them
 * makes the loop's cost bounded whatever the luck. */
static uint64_t pick_distinct(const struct lg_message_plan *plan, bool remote,
			      uint64_t range, struct lg_rng *rng)
{
	uint64_t user = 0;

	for (unsigned int attempt = 0; attempt < 64 + LG_MAX_RCPTS; attempt++) {
		bool taken = false;

		user = attempt < 64 ? 1 + lg_rng_below(rng, range)
				    : 1 + (user % range);
		for (unsigned int i = 0; i < plan->n_rcpts && !taken; i++)
			taken = plan->rcpts[i].remote == remote &&
				plan->rcpts[i].user == user;
		if (!taken)
			return user;
	}
	mt_panic("pick_distinct: no free user among %llu",
		 (unsigned long long)range);
}

void lg_workload_plan_message(const struct lg_workload *wl,
			      struct lg_rng *rng, bool from_remote,
			      struct lg_message_plan *plan)
{
	unsigned int wanted = lg_workload_rcpt_count(rng);

	plan->from_remote = from_remote;
	plan->reply = plan->probe = false;
	plan->size = lg_workload_message_size(rng);
	plan->sender = from_remote ? 1 + lg_rng_below(rng, LG_REMOTE_USERS)
				   : lg_workload_pick_user(wl, rng);
	plan->n_rcpts = plan->n_local = plan->n_remote = 0;
	for (unsigned int i = 0; i < wanted; i++) {
		bool remote = !from_remote &&
			lg_rng_uniform(rng) < LG_REMOTE_RCPT_SHARE;
		/* With fewer users than recipients, local recipients stop at
		 * U distinct ones (our choice: never a duplicate address,
		 * which servers would merge and so break the counts). */
		if (!remote && plan->n_local >= wl->users)
			continue;
		struct lg_rcpt *rcpt = &plan->rcpts[plan->n_rcpts];
		rcpt->remote = remote;
		rcpt->user = pick_distinct(plan, remote,
					   remote ? LG_REMOTE_USERS : wl->users, rng);
		plan->n_rcpts++;
		if (remote)
			plan->n_remote++;
		else
			plan->n_local++;
	}
}

bool lg_workload_repeat_follows(struct lg_rng *rng)
{
	return lg_rng_uniform(rng) < LG_REPEAT_SHARE;
}

double lg_workload_repeat_delay(struct lg_rng *rng)
{
	return LG_REPEAT_MIN_S +
		(LG_REPEAT_MAX_S - LG_REPEAT_MIN_S) * lg_rng_uniform(rng);
}
