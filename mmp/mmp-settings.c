/* mmp-settings.c — the [mmp] section table (see config.h). Defaults follow
 * the seed's MMP (ConnLimits=30000, NumThreads=4) and RFC 1939's 10-minute
 * idle timer.
 * Trust boundary: the operator's config file; every value is checked by
 * the table so a mistake stops start-up with FILE:LINE. */
#include "mmp-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>

#define P(field) offsetof(struct mt_mmp_settings, field)

static const struct mt_setting_def mmp_settings[] = {
	{ .name = "pop3_listen", .type = MT_SETTING_HOSTPORT, .offset = P(pop3_listen),
	  .default_value = "*:110", .doc = "POP3 listener (STLS, RFC 2595); empty: off." },
	{ .name = "pop3s_listen", .type = MT_SETTING_HOSTPORT, .offset = P(pop3s_listen),
	  .default_value = "*:995", .doc = "POP3 over implicit TLS (RFC 8314); empty: off." },
	{ .name = "metrics_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = P(metrics_listen), .doc = "Prometheus scrape endpoint (GET /metrics, text format 0.0.4); empty: off. Put it on loopback or a management network: it has no authentication." },
	{ .name = "threads", .type = MT_SETTING_UINT, .offset = P(threads),
	  .default_value = "4", .min = 1, .max = 256, .doc = "Worker event loops." },
	{ .name = "conn_limit", .type = MT_SETTING_UINT, .offset = P(conn_limit),
	  .default_value = "30000", .min = 1, .max = 10000000,
	  .doc = "Most concurrent client connections." },
	{ .name = "conn_limit_per_client", .type = MT_SETTING_UINT,
	  .offset = P(conn_limit_per_client), .default_value = "100", .min = 1,
	  .doc = "Most concurrent connections from one client address." },
	{ .name = "login_timeout", .type = MT_SETTING_DURATION, .offset = P(login_timeout),
	  .default_value = "60s", .min = 1000, .doc = "Time allowed from connect to login." },
	{ .name = "idle_timeout", .type = MT_SETTING_DURATION, .offset = P(idle_timeout),
	  .default_value = "10m", .min = 1000,
	  .doc = "Idle time allowed after login (RFC 1939: at least 10 minutes)." },
	{ .name = "auth_fail_delay", .type = MT_SETTING_DURATION,
	  .offset = P(auth_fail_delay), .default_value = "2s", .max = 60000,
	  .doc = "Delay before a failed-login answer; grows per client address." },
	{ .name = "auth_fail_limit", .type = MT_SETTING_UINT, .offset = P(auth_fail_limit),
	  .default_value = "10", .min = 1,
	  .doc = "Failed logins from one address before its connections and logins are refused "
		 "for a while (until auth_fail_window after the last); also the most password "
		 "checks it may have under way at once, so many connections opened first "
		 "cannot test more passwords." },
	{ .name = "allow_plaintext_auth", .type = MT_SETTING_BOOL,
	  .offset = P(allow_plaintext_auth), .default_value = "no",
	  .doc = "Accept USER/PASS and AUTH PLAIN without TLS." },
	{ .name = "proxy_user", .type = MT_SETTING_STRING, .offset = P(proxy_user),
	  .default_value = "mmp", .doc = "Proxy credential name used to log in to the stores." },
	{ .name = "proxy_password_file", .type = MT_SETTING_STRING,
	  .offset = P(proxy_password_file),
	  .doc = "File holding the proxy credential's password." },
	{ .name = "backend_connect_timeout", .type = MT_SETTING_DURATION,
	  .offset = P(backend_connect_timeout), .default_value = "5s", .min = 100,
	  .doc = "Time allowed to connect and log in to a store shard." },
	{ .name = "backend_failover_wait", .type = MT_SETTING_DURATION,
	  .offset = P(backend_failover_wait), .default_value = "10s", .max = 60000,
	  .doc = "A shard listed with several sites in [shards] (a replication group): how long "
		 "a login tries its sites (the one that last took a login first, the others next — "
		 "a replica refuses at once —, then all of them every 250 ms) before it is "
		 "answered -ERR [SYS/TEMP] / NO [UNAVAILABLE]. Each try gets at most "
		 "backend_connect_timeout. 0: one pass over the sites. One-site shards are not "
		 "affected." },
	{ .name = "shard_retry_interval", .type = MT_SETTING_DURATION,
	  .offset = P(shard_retry_interval), .default_value = "30s", .min = 100,
	  .doc = "A shard that failed is marked down (its logins fail at once) and probed after 1 s, then at doubling intervals up to this; up again when a probe answers." },
	{ .name = "auth_fail_window", .type = MT_SETTING_DURATION,
	  .offset = P(auth_fail_window), .default_value = "5m", .min = 1000,
	  .max = 86400000,
	  .doc = "Failed logins from one address count (for the delay and the limit) until this long after the last one." },
	{ .name = "max_errors", .type = MT_SETTING_UINT, .offset = P(max_errors),
	  .default_value = "10", .min = 1, .max = 1000,
	  .doc = "Bad commands and failed logins in one session before it is disconnected." },
	{ .name = "relay_splice", .type = MT_SETTING_BOOL, .offset = P(relay_splice),
	  .default_value = "no",
	  .doc = "After login, move bytes between two plaintext sockets with splice(2) instead of through user-space buffers." },
	{ .name = "stats_interval", .type = MT_SETTING_DURATION,
	  .offset = P(stats_interval), .default_value = "60s", .max = 86400000,
	  .doc = "How often the connection and login counters are logged (0: only at exit)." },
	{ .name = "imap_listen", .type = MT_SETTING_HOSTPORT, .offset = P(imap_listen),
	  .doc = "IMAP listener (STARTTLS, RFC 9051 6.2.1), e.g. *:143; empty: off. Needs every shard's IMAP address in [shards]." },
	{ .name = "imaps_listen", .type = MT_SETTING_HOSTPORT, .offset = P(imaps_listen),
	  .doc = "IMAP over implicit TLS (RFC 8314), e.g. *:993; empty: off." },
	{ .name = "imap_idle_timeout", .type = MT_SETTING_DURATION,
	  .offset = P(imap_idle_timeout), .default_value = "31m", .min = 1000,
	  .doc = "Idle time allowed to a logged-in IMAP session (RFC 9051 5.4: at least 30 minutes; IDLE clients re-issue it every 29)." },
	{ .name = "idle_session_threshold", .type = MT_SETTING_DURATION,
	  .offset = P(idle_session_threshold), .default_value = "60s", .min = 1000,
	  .max = 86400000,
	  .doc = "A relayed session that has moved no byte either way for this long counts in the mailtier_mmp_sessions_idle gauge (metrics_listen) until its next byte or its end." },
	MT_SETTINGS_END,
};

const struct mt_section_def mt_mmp_section = {
	.name = "mmp", .kind = MT_SECTION_SINGLE, .readers = "mailtier-mmp",
	.doc = "The POP3 and IMAP multiplexor proxy.",
	.struct_size = sizeof(struct mt_mmp_settings), .settings = mmp_settings,
};
