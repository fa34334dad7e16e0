/* mta-settings.c — the [mta] section table (see config.h). Timeouts default
 * to RFC 5321 section 4.5.3.2's values. */
#include "mta-settings.h"
#include "address.h"
#include "mailtier-settings.h"
#include "milter-settings.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>

#define M(field) offsetof(struct mt_mta_settings, field)
static const char *const bare_newline_policies[] = { "reject", "normalize", NULL };
static const char *const add_missing_headers_values[] = {
	"submission", "submission+mynetworks", "never", NULL };

static const struct mt_setting_def mta_settings[] = {
	{ .name = "smtp_listen", .type = MT_SETTING_HOSTPORT, .offset = M(smtp_listen),
	  .default_value = "*:25", .doc = "SMTP (MX) listener; empty: off." },
	{ .name = "submission_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = M(submission_listen), .default_value = "*:587",
	  .doc = "Submission listener (STARTTLS, AUTH required); empty: off." },
	{ .name = "submissions_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = M(submissions_listen), .default_value = "*:465",
	  .doc = "Submission over implicit TLS (RFC 8314); empty: off." },
	{ .name = "metrics_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = M(metrics_listen), .doc = "Prometheus scrape endpoint (GET /metrics, text format 0.0.4); empty: off. Put it on loopback or a management network: it has no authentication." },
	{ .name = "hostname", .type = MT_SETTING_STRING, .offset = M(hostname),
	  .doc = "Name in the greeting and Received: lines (empty: the system's host name)." },
	{ .name = "local_domains", .type = MT_SETTING_LIST, .offset = M(local_domains),
	  .flags = MT_SETTING_REQUIRED, .readers = "mailtier-mta, mailtierctl",
	  .doc = "Domains whose users live in the directory." },
	{ .name = "mynetworks", .type = MT_SETTING_LIST, .offset = M(mynetworks),
	  .default_value = "127.0.0.0/8 ::1/128",
	  .doc = "Client networks (CIDR) allowed to relay without AUTH." },
	{ .name = "postmaster", .type = MT_SETTING_STRING, .offset = M(postmaster),
	  .doc = "Mailbox that receives mail for <postmaster>, postmaster@ and MAILER-DAEMON@ "
		 "each local domain and the host name (RFC 5321 4.5.1, accepted from anyone, "
		 "any case), and the postmaster copy of a bounce that could not be delivered "
		 "(empty: postmaster@ the first local domain, which must then exist in the "
		 "directory; mailtierctl cluster up provisions it)." },
	{ .name = "abuse", .type = MT_SETTING_STRING, .offset = M(abuse),
	  .doc = "Mailbox that receives mail for abuse@ each local domain and the host name "
		 "(RFC 2142), accepted from anyone, any case (empty: abuse@ is an ordinary "
		 "directory address)." },
	{ .name = "relayhost", .type = MT_SETTING_HOSTPORT, .offset = M(relayhost),
	  .doc = "Send all remote mail through this host:port (empty: DNS MX)." },
	{ .name = "transport_map", .type = MT_SETTING_LIST, .offset = M(transport_map),
	  .doc = "Per-domain next hops: domain=host:port, ..." },
	{ .name = "max_message_size", .type = MT_SETTING_SIZE,
	  .offset = M(max_message_size), .default_value = "50M", .min = 1024,
	  .doc = "Largest message accepted (SIZE, RFC 1870)." },
	{ .name = "max_recipients", .type = MT_SETTING_UINT, .offset = M(max_recipients),
	  .default_value = "1000", .min = 1, .max = 100000,
	  .doc = "Most recipients per message (452 4.5.3 beyond)." },
	{ .name = "max_sessions", .type = MT_SETTING_UINT, .offset = M(max_sessions),
	  .default_value = "1000", .min = 1, .max = 1000000,
	  .doc = "Most concurrent SMTP sessions." },
	{ .name = "max_sessions_per_client", .type = MT_SETTING_UINT,
	  .offset = M(max_sessions_per_client), .default_value = "50", .min = 1,
	  .doc = "Most concurrent sessions from one client address." },
	{ .name = "delivery_concurrency", .type = MT_SETTING_UINT,
	  .offset = M(delivery_concurrency), .default_value = "16", .min = 1, .max = 1000,
	  .doc = "LMTP connections per store shard." },
	{ .name = "remote_concurrency", .type = MT_SETTING_UINT,
	  .offset = M(remote_concurrency), .default_value = "20", .min = 1, .max = 1000,
	  .doc = "SMTP connections per remote destination." },
	{ .name = "retry_schedule", .type = MT_SETTING_DURATION_LIST,
	  .offset = M(retry_schedule), .default_value = "1m 5m 15m 30m 1h", .min = 1000,
	  .doc = "Delays between delivery attempts; the last repeats until max_queue_lifetime." },
	{ .name = "max_queue_lifetime", .type = MT_SETTING_DURATION,
	  .offset = M(max_queue_lifetime), .default_value = "5d", .min = 1000,
	  .doc = "After this a message still undelivered is bounced." },
	{ .name = "queue_dir", .type = MT_SETTING_STRING, .offset = M(queue_dir),
	  .default_value = LOCALSTATEDIR "/lib/mailtier/queue",
	  .readers = "mailtier-mta, mailtierctl",
	  .doc = "Directory of the durable queue." },
	{ .name = "bare_newline_policy", .type = MT_SETTING_ENUM,
	  .offset = M(bare_newline_policy), .default_value = "reject",
	  .enum_values = bare_newline_policies,
	  .doc = "Bare LF or CR in DATA: reject the message (5xx) or normalize to CRLF." },
	{ .name = "require_tls_for_auth", .type = MT_SETTING_BOOL,
	  .offset = M(require_tls_for_auth), .default_value = "yes",
	  .doc = "Offer AUTH only after TLS." },
	{ .name = "max_hops", .type = MT_SETTING_UINT, .offset = M(max_hops),
	  .default_value = "50", .min = 1, .max = 1000,
	  .doc = "More Received: lines than this: bounced as a mail loop." },
	{ .name = "command_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(command_timeout), .default_value = "5m", .min = 1000,
	  .doc = "Idle time allowed between commands (RFC 5321 4.5.3.2.7: 5 minutes)." },
	{ .name = "data_timeout", .type = MT_SETTING_DURATION, .offset = M(data_timeout),
	  .default_value = "10m", .min = 1000,
	  .doc = "Idle time allowed within DATA (RFC 5321 4.5.3.2.8: 10 minutes)." },
	{ .name = "max_errors", .type = MT_SETTING_UINT, .offset = M(max_errors),
	  .default_value = "10", .min = 1, .max = 1000,
	  .doc = "Bad or unknown commands before 421 and disconnect." },
	{ .name = "max_junk_commands", .type = MT_SETTING_UINT,
	  .offset = M(max_junk_commands), .default_value = "100", .min = 1, .max = 100000,
	  .doc = "NOOP, RSET, VRFY, HELP and the like per session before 421 and disconnect." },
	{ .name = "max_line_length", .type = MT_SETTING_UINT,
	  .offset = M(max_line_length), .default_value = "2048", .min = 512, .max = 65536,
	  .doc = "Longest command line, CRLF included (500 5.5.2 beyond; RFC 5321 4.5.3.1.4 allows 512, AUTH needs more)." },
	{ .name = "max_session_time", .type = MT_SETTING_DURATION,
	  .offset = M(max_session_time), .default_value = "1h", .min = 1000,
	  .doc = "Longest an SMTP session may last, however busy (421 4.4.2 after)." },
	{ .name = "connect_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(connect_timeout), .default_value = "30s", .min = 100,
	  .doc = "Outgoing LMTP/SMTP: time to establish a connection." },
	{ .name = "client_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(client_timeout), .default_value = "5m", .min = 100,
	  .doc = "Outgoing LMTP/SMTP: time to wait for each reply (RFC 5321 4.5.3.2; the end of DATA gets twice this)." },
	{ .name = "shard_failover_budget", .type = MT_SETTING_DURATION,
	  .offset = M(shard_failover_budget), .default_value = "30s", .max = 600000,
	  .doc = "A shard listed with several sites in [shards] (a replication group): how long a "
		 "delivery keeps trying its sites (the others at once, then every 250 ms to 2 s) after "
		 "a site refused the connection, timed out, greeted 421 (a replica), broke the "
		 "connection or answered 421/451, before the recipients are deferred by "
		 "retry_schedule. Such a site gets at most 2 s of connect_timeout to accept a "
		 "connection and 5 s of client_timeout to greet. 0: no failover (the first failure defers). One-site shards are not affected." },
	{ .name = "connection_cache_time", .type = MT_SETTING_DURATION,
	  .offset = M(connection_cache_time), .default_value = "10s", .min = 0,
	  .doc = "Outgoing LMTP/SMTP: how long an idle connection is kept for reuse." },
	{ .name = "commit_delay", .type = MT_SETTING_DURATION,
	  .offset = M(commit_delay), .default_value = "1ms", .max = 100,
	  .doc = "How long a queue flush waits for messages other sessions are about to commit (group commit; 0: never)." },
	{ .name = "auth_fail_delay", .type = MT_SETTING_DURATION,
	  .offset = M(auth_fail_delay), .default_value = "2s", .max = 60000,
	  .doc = "Delay of the answer to a client address's first failed AUTH; it doubles with each further failure within auth_fail_window, up to 60s (0: no delay). Slows password guessing across connections, as [mmp] auth_fail_delay does." },
	{ .name = "auth_fail_window", .type = MT_SETTING_DURATION,
	  .offset = M(auth_fail_window), .default_value = "5m", .min = 1000,
	  .doc = "A client address's failed AUTHs count until this long after its last one." },
	{ .name = "forbid_unauth_pipelining", .type = MT_SETTING_BOOL,
	  .offset = M(forbid_unauth_pipelining), .default_value = "yes",
	  .doc = "A client not authenticated (AUTH) that sends anything after DATA before the 354 reply (RFC 2920 3.1: DATA ends a pipelining group) gets 554 5.5.0 and is disconnected; its message is not queued (as Postfix's smtpd_forbid_unauth_pipelining). Authenticated sessions may pipeline the content; BDAT is not affected." },
	{ .name = "add_missing_headers", .type = MT_SETTING_ENUM,
	  .offset = M(add_missing_headers), .default_value = "submission",
	  .enum_values = add_missing_headers_values,
	  .doc = "Who gets a Date: (RFC 5322 3.6: required) and a Message-ID: <queue id@hostname> added when the header section has none (RFC 6409 8.2-8.3): submission = clients of submission_listen and submissions_listen; submission+mynetworks = also mynetworks clients on smtp_listen; never. Other clients on smtp_listen never get them." },
	{ .name = "sender_login_check", .type = MT_SETTING_BOOL,
	  .offset = M(sender_login_check), .default_value = "yes",
	  .doc = "After AUTH, MAIL FROM must be the null sender or an address the directory gives the login user (its mail or one of its mailLocalAddress values); any other gets 553 5.7.1 (as Postfix's reject_sender_login_mismatch). no: an authenticated client may use any envelope sender." },
	{ .name = "received_auth_user", .type = MT_SETTING_BOOL,
	  .offset = M(received_auth_user), .default_value = "no",
	  .doc = "Name the authenticated user in our Received: line as \"(Authenticated sender: ADDRESS)\" (as Postfix's smtpd_sasl_authenticated_header). The protocol says ESMTPA/ESMTPSA either way (RFC 3848)." },
	{ .name = "rcpt_fail_delay", .type = MT_SETTING_DURATION,
	  .offset = M(rcpt_fail_delay), .default_value = "1s", .max = 60000,
	  .doc = "Delay of the 550 to a client address's first RCPT of an unknown local user; it doubles with each further one within rcpt_fail_window, up to 60s (0: no delay). Slows recipient enumeration across connections; clients in mynetworks are exempt, known recipients never wait." },
	{ .name = "rcpt_fail_limit", .type = MT_SETTING_UINT,
	  .offset = M(rcpt_fail_limit), .default_value = "20", .max = 1000000,
	  .doc = "Unknown local recipients a client address may try within rcpt_fail_window; beyond, every RCPT to a local domain from it gets 450 4.7.1 (not looked up) until the window has passed since its last unknown one (0: no limit; mynetworks exempt)." },
	{ .name = "rcpt_fail_window", .type = MT_SETTING_DURATION,
	  .offset = M(rcpt_fail_window), .default_value = "5m", .min = 1000,
	  .doc = "A client address's unknown recipients count until this long after its last one." },
	{ .name = "smtpd_milters", .type = MT_SETTING_LIST, .offset = M(smtpd_milters),
	  .doc = "Mail filters (milters: rspamd, OpenDKIM, ...) for the SMTP listener (smtp_listen), by the NAME of their [milter.NAME] sections, in the order they are asked (empty: none)." },
	{ .name = "submission_milters", .type = MT_SETTING_LIST,
	  .offset = M(submission_milters),
	  .doc = "Mail filters for submission_listen and submissions_listen, as smtpd_milters (e.g. a DKIM signer)." },
	{ .name = "milter_default_action", .type = MT_SETTING_ENUM,
	  .offset = M(milter_default_action), .default_value = "tempfail",
	  .enum_values = mt_milter_action_names,
	  .doc = "What a filter that cannot be reached, times out or breaks the protocol means for the session's mail: tempfail (451 4.7.1), accept (go on without it) or reject (550 5.7.1); [milter.NAME] default_action overrides it." },
	{ .name = "milter_connect_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(milter_connect_timeout), .default_value = "30s", .min = 100,
	  .doc = "Time to connect to a filter and negotiate with it." },
	{ .name = "milter_command_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(milter_command_timeout), .default_value = "30s", .min = 100,
	  .doc = "Time a filter has to answer a command (connect, HELO, MAIL, RCPT, DATA, a header)." },
	{ .name = "milter_content_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(milter_content_timeout), .default_value = "300s", .min = 100,
	  .doc = "Time a filter has to answer a body chunk or the end of the message (a PROGRESS from it restarts the clock)." },
	{ .name = "dns_servers", .type = MT_SETTING_LIST, .offset = M(dns_servers),
	  .doc = "DNS servers for MX lookups as ip or ip:port (empty: /etc/resolv.conf)." },
	MT_SETTINGS_END,
};

static void mta_check(struct mt_config_checker *checker,
		      const struct mt_config *config,
		      const struct mt_section *section)
{
	const struct mt_mta_settings *set = section->settings;
	for (size_t i = 0; i < set->transport_map.count; i++) {
		const char *entry = set->transport_map.items[i];
		const char *eq = strchr(entry, '=');
		struct mt_hostport hp = { NULL, 0 };
		const char *error = "expected domain=host:port";
		if (eq == NULL || eq == entry ||
		    !mt_parse_hostport(eq + 1, &hp, &error))
			mt_config_check_error(checker, section, "transport_map",
					      "'%s': %s", entry, error);
		mt_hostport_clear(&hp);
	}
	for (size_t i = 0; i < set->mynetworks.count; i++) {
		struct mt_cidr cidr;
		const char *error;
		if (!mt_cidr_parse(set->mynetworks.items[i], &cidr, &error))
			mt_config_check_error(checker, section, "mynetworks",
					      "'%s': %s", set->mynetworks.items[i], error);
	}
	for (size_t i = 0; i < set->dns_servers.count; i++) {
		struct mt_hostport hp = { NULL, 0 };
		struct in6_addr bin;
		const char *item = set->dns_servers.items[i], *error = "";
		bool ok = inet_pton(AF_INET, item, &bin) == 1 ||
			  inet_pton(AF_INET6, item, &bin) == 1 ||
			  (mt_parse_hostport(item, &hp, &error) && hp.host != NULL &&
			   (inet_pton(AF_INET, hp.host, &bin) == 1 ||
			    inet_pton(AF_INET6, hp.host, &bin) == 1));
		mt_hostport_clear(&hp);
		if (!ok)
			mt_config_check_error(checker, section, "dns_servers",
					      "'%s': expected an IP address or ip:port", item);
	}
	static const char *const roles[] = { "postmaster", "abuse" };
	const char *const values[] = { set->postmaster, set->abuse };
	for (size_t i = 0; i < 2; i++) {
		struct mt_address addr;
		const char *error = "expected local-part@domain";
		if (values[i] != NULL && values[i][0] != '\0' &&
		    (!mt_address_parse(values[i], strlen(values[i]),
				       MT_ADDR_LENIENT | MT_ADDR_SMTPUTF8,
				       &addr, NULL, &error) || addr.domain[0] == '\0'))
			mt_config_check_error(checker, section, roles[i], "'%s': %s",
					      values[i], error);
	}
	const struct mt_strlist *lists[] = { &set->smtpd_milters, &set->submission_milters };
	const char *const list_keys[] = { "smtpd_milters", "submission_milters" };
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < lists[l]->count; i++)
			if (mt_config_get(config, "milter", lists[l]->items[i]) == NULL)
				mt_config_check_error(checker, section, list_keys[l],
					"'%s': no [milter.%s] section", lists[l]->items[i],
					lists[l]->items[i]);
	if (set->retry_schedule.count == 0)
		mt_config_check_error(checker, section, "retry_schedule",
				      "at least one delay is needed");
}

const struct mt_section_def mt_mta_section = {
	.name = "mta", .kind = MT_SECTION_SINGLE, .readers = "mailtier-mta",
	.doc = "The ESMTP server, its durable queue and delivery.",
	.struct_size = sizeof(struct mt_mta_settings),
	.settings = mta_settings, .check = mta_check,
};
