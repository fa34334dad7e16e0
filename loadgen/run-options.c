/* run-options.c — the table of a run's settings (see run-options.h).
 * Trust boundary: operator or manager input, parsed strictly. */
#include "run-options.h"

#include "errors.h"
#include "alloc.h"
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S(field) offsetof(struct lg_run_settings, field)
#define FW (LG_OPT_FLAG | LG_OPT_WIRE)
#define MS_MAX (10000000ull * 1000)	/* 10^7 s */

const struct lg_run_option lg_run_options[] = {
	{ "smtp", LG_OPT_STRING, S(smtp), 0, 0, FW },
	{ "pop", LG_OPT_STRING, S(pop), 0, 0, FW },
	{ "imap", LG_OPT_STRING, S(imap), 0, 0, FW },
	{ "submission", LG_OPT_STRING, S(submission), 0, 0, FW },
	{ "protocol", LG_OPT_PROTOCOL, S(wl.protocol), 0, 0, FW },
	{ "tls", LG_OPT_BOOL, S(tls), 0, 0, FW },
	{ "imaps", LG_OPT_BOOL, S(imaps), 0, 0, FW },
	{ "sink-listen", LG_OPT_STRING, S(sink_listen), 0, 0, LG_OPT_FLAG },
	{ "users", LG_OPT_U64, S(wl.users), 1, 100000000, FW },
	{ "load-users", LG_OPT_U64, S(wl.load_users), 0, 100000000000ull, LG_OPT_WIRE },
	{ "first-user", LG_OPT_U64, S(wl.first_user), 0, UINT64_MAX / 2, FW },
	{ "domain", LG_OPT_STRING, S(wl.domain), 0, 0, FW },
	{ "remote-domain", LG_OPT_STRING, S(wl.remote_domain), 0, 0, FW },
	{ "address-template", LG_OPT_STRING, S(wl.local_template), 0, 0, FW },
	{ "login-template", LG_OPT_STRING, S(wl.login_template), 0, 0, FW },
	{ "password-template", LG_OPT_STRING, S(wl.password_template), 0, 0, FW },
	{ "levels", LG_OPT_LEVELS, 0, 1, 1000, FW },
	{ "warmup", LG_OPT_MS64, S(warmup_ms), 0, MS_MAX, FW },
	{ "duration", LG_OPT_MS64, S(duration_ms), 0, MS_MAX, FW },
	{ "cooldown", LG_OPT_MS64, S(cooldown_ms), 0, MS_MAX, FW },
	{ "step-timeout", LG_OPT_MS, S(step_timeout_ms), 0, 3600000, FW },
	{ "connect-timeout", LG_OPT_MS, S(connect_timeout_ms), 1, 3600000, FW },
	{ "seed", LG_OPT_U64, S(seed), 0, UINT64_MAX, FW },
	{ "probe-interval", LG_OPT_MS, S(probe_interval_ms), 0, 3600000, FW },
	{ "probe-poll", LG_OPT_MS, S(probe_poll_ms), 0, 3600000, FW },
	{ "probe-user", LG_OPT_U64, S(probe_user), 1, UINT64_MAX, FW },
	{ "max-sessions", LG_OPT_UINT, S(max_sessions), 1, 1000000, FW },
	{ "progress", LG_OPT_MS, S(progress_ms), 0, 3600000, LG_OPT_FLAG },
	{ "stop-after-failures", LG_OPT_UINT, S(stop_after_failures), 0, LG_MAX_LEVELS,
	  LG_OPT_FLAG },
	{ "ramp", LG_OPT_BOOL, S(ramp), 0, 0, LG_OPT_WIRE },
	{ "remote-sink", LG_OPT_BOOL, S(remote_sink), 0, 0, LG_OPT_WIRE },
	{ "ledger", LG_OPT_STRING, S(ledger), 0, 0, LG_OPT_FLAG },
	{ "metrics-listen", LG_OPT_STRING, S(metrics_listen), 0, 0, LG_OPT_FLAG },
};
const size_t lg_run_options_count = sizeof(lg_run_options) / sizeof(lg_run_options[0]);

static bool fail(const char **error_r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool fail(const char **error_r, const char *fmt, ...)
{
	char text[LG_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	*error_r = lg_error_keep(text);
	return false;
}

bool lg_parse_u64(const char *value, uint64_t min, uint64_t max, uint64_t *out,
		  const char **error_r)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || value[0] == '-' ||
	    value[0] == ' ' || n < min || n > max)
		return fail(error_r, "'%s' is not a number %" PRIu64 "..%" PRIu64,
			    value, min, max);
	*out = n;
	return true;
}

bool lg_parse_ms(const char *value, uint64_t min, uint64_t max, uint64_t *out,
		 const char **error_r)
{
	const char *error;
	uint64_t ms;
	char *end;
	double s;

	errno = 0;
	s = strtod(value, &end);
	if (end != value && *end == '\0' && errno == 0 && s >= 0 && s <= 1e7)
		ms = (uint64_t)(s * 1000 + 0.5);
	else if (!mt_parse_duration(value, &ms, &error))
		return fail(error_r, "'%s': %s", value, error);
	if (ms < min || ms > max)
		return fail(error_r, "'%s' is out of range (%" PRIu64 " ms..%" PRIu64 " s)",
			    value, min, max / 1000);
	*out = ms;
	return true;
}

static bool parse_levels(struct lg_run_settings *set, const char *value,
			 const char **error_r)
{
	char *copy = mt_xstrdup(value), *save = NULL;
	size_t n = 0;
	bool ok = true;

	for (char *tok = strtok_r(copy, ", ", &save); ok && tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		uint64_t level;
		if (n == LG_MAX_LEVELS)
			ok = fail(error_r, "at most %d levels", LG_MAX_LEVELS);
		else if ((ok = lg_parse_u64(tok, 1, 1000, &level, error_r)))
			set->levels[n++] = (unsigned int)level;
	}
	free(copy);
	if (ok && n == 0)
		ok = fail(error_r, "no level given");
	if (ok)
		set->n_levels = n;
	return ok;
}

const struct lg_run_option *lg_run_option_find(const char *name)
{
	for (size_t i = 0; i < lg_run_options_count; i++) {
		const char *a = lg_run_options[i].name, *b = name;
		while (*a != '\0' && (*a == *b || (*a == '-' && *b == '_'))) {
			a++;
			b++;
		}
		if (*a == '\0' && *b == '\0')
			return &lg_run_options[i];
	}
	return NULL;
}

bool lg_run_option_set(struct lg_run_settings *set, const struct lg_run_option *opt,
		       const char *value, const char **error_r)
{
	void *field = (char *)set + opt->offset;
	uint64_t n;

	switch (opt->type) {
	case LG_OPT_STRING:
		*(const char **)field = value;
		return true;
	case LG_OPT_U64:
		return lg_parse_u64(value, opt->min, opt->max, (uint64_t *)field, error_r);
	case LG_OPT_UINT:
		if (!lg_parse_u64(value, opt->min, opt->max, &n, error_r))
			return false;
		*(unsigned int *)field = (unsigned int)n;
		return true;
	case LG_OPT_MS64:
		return lg_parse_ms(value, opt->min, opt->max, (uint64_t *)field, error_r);
	case LG_OPT_MS:
		if (!lg_parse_ms(value, opt->min, opt->max, &n, error_r))
			return false;
		*(unsigned int *)field = (unsigned int)n;
		return true;
	case LG_OPT_LEVELS:
		return parse_levels(set, value, error_r);
	case LG_OPT_BOOL:
		if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
			return fail(error_r, "'%s' is not yes or no", value);
		*(bool *)field = value[0] == 'y';
		return true;
	case LG_OPT_PROTOCOL:
		if (!lg_protocol_parse(value, (enum lg_protocol *)field))
			return fail(error_r, "'%s' is not pop, imap or mixed", value);
		return true;
	}
	return fail(error_r, "unknown option type");
}

bool lg_run_option_format(struct mt_buf *out, const struct lg_run_settings *set,
			  const struct lg_run_option *opt)
{
	const void *field = (const char *)set + opt->offset;

	switch (opt->type) {
	case LG_OPT_STRING:
		if (*(const char *const *)field == NULL)
			return false;
		mt_buf_append_str(out, *(const char *const *)field);
		break;
	case LG_OPT_U64:
		mt_buf_appendf(out, "%" PRIu64, *(const uint64_t *)field);
		break;
	case LG_OPT_UINT:
		mt_buf_appendf(out, "%u", *(const unsigned int *)field);
		break;
	case LG_OPT_MS64:
		mt_buf_appendf(out, "%" PRIu64 "ms", *(const uint64_t *)field);
		break;
	case LG_OPT_MS:
		mt_buf_appendf(out, "%ums", *(const unsigned int *)field);
		break;
	case LG_OPT_LEVELS:
		for (size_t i = 0; i < set->n_levels; i++)
			mt_buf_appendf(out, "%s%u", i ? "," : "", set->levels[i]);
		break;
	case LG_OPT_BOOL:
		mt_buf_append_str(out, *(const bool *)field ? "yes" : "no");
		break;
	case LG_OPT_PROTOCOL:
		mt_buf_append_str(out, lg_protocol_names[*(const enum lg_protocol *)field]);
		break;
	}
	return true;
}

void lg_run_settings_defaults(struct lg_run_settings *set, bool ramp)
{
	*set = (struct lg_run_settings){
		.wl = {
			.users = 0, .first_user = 1,
			.domain = "example.test", .remote_domain = "remote.test",
			.local_template = LG_DEFAULT_LOCAL_TEMPLATE,
			.login_template = LG_DEFAULT_LOGIN_TEMPLATE,
			.password_template = LG_DEFAULT_PASSWORD_TEMPLATE,
		},
		.levels = { 80, 100, 120 }, .n_levels = 3,
		.warmup_ms = 30000, .duration_ms = 300000, .cooldown_ms = 65000,
		.step_timeout_ms = 60000, .connect_timeout_ms = 5000, .seed = 1,
		.probe_interval_ms = 5000, .probe_poll_ms = 1000,
		.max_sessions = 20000,
		.progress_ms = isatty(STDERR_FILENO) ? 1000 : 10000,
		.ramp = ramp,
		.stop_after_failures = ramp ? 2 : 0,
	};
}

bool lg_run_settings_check(struct lg_run_settings *set, const char **error_r)
{
	const char *error;

	for (size_t i = 0; i < lg_run_options_count; i++) {
		const struct lg_run_option *opt = &lg_run_options[i];
		const char *value = opt->type != LG_OPT_STRING ? NULL :
			*(const char *const *)((const char *)set + opt->offset);
		if (value != NULL && value[strcspn(value, "\r\n")] != '\0')
			return fail(error_r, "--%s: a line break in the value", opt->name);
	}
	if (set->wl.users == 0)
		return fail(error_r, "--users or --rate is required");
	if (set->smtp == NULL)
		return fail(error_r, "--smtp is required");
	if (set->wl.protocol != LG_PROTOCOL_IMAP && set->pop == NULL)
		return fail(error_r, "--pop is required (--protocol %s)",
			    lg_protocol_names[set->wl.protocol]);
	if (set->wl.protocol != LG_PROTOCOL_POP && set->imap == NULL)
		return fail(error_r, "--imap is required (--protocol %s)",
			    lg_protocol_names[set->wl.protocol]);
	if (set->imaps && set->imap == NULL)
		return fail(error_r, "--imaps is for the IMAP sessions: give --imap");
	if (set->n_levels == 0)
		return fail(error_r, "--levels: no level given");
	if (set->duration_ms < 1000)
		return fail(error_r, "--duration must be at least 1 s");
	if (set->step_timeout_ms < 100)
		return fail(error_r, "--step-timeout must be at least 100 ms");
	if (set->probe_interval_ms > 0 &&
	    (set->probe_poll_ms < 100 || set->probe_interval_ms < 100))
		return fail(error_r, "--probe-interval and --probe-poll must be at least 100 ms");
	if (set->probe_user == 0)
		set->probe_user = set->wl.users;
	if (set->probe_user > set->wl.users)
		return fail(error_r, "--probe-user must be one of the users (1..%" PRIu64 ")",
			    set->wl.users);
	if (set->wl.domain == NULL || set->wl.remote_domain == NULL ||
	    set->wl.domain[0] == '\0' || set->wl.remote_domain[0] == '\0')
		return fail(error_r, "--domain and --remote-domain must not be empty");
	const char *const templates[][2] = {
		{ "--address-template", set->wl.local_template },
		{ "--login-template", set->wl.login_template },
		{ "--password-template", set->wl.password_template },
	};
	for (size_t i = 0; i < 3; i++)
		if (templates[i][1] == NULL || !lg_template_check(templates[i][1], &error))
			return fail(error_r, "%s '%s': %s", templates[i][0],
				    templates[i][1] ? templates[i][1] : "",
				    templates[i][1] ? error : "missing");
	return true;
}
