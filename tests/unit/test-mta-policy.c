/* test-mta-policy.c — unit tests for the MTA's policy tables: mynetworks
 * CIDR parsing (mt_cidr_parse in lib/cidr.c) and matching (IPv4, IPv6,
 * IPv4-mapped IPv6 clients, /0 and host routes), local domains compared
 * case-insensitively, and next hops: transport_map exact and ".subdomain"
 * keys with the longest match winning, then relayhost, then none (MX). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "mta/mta-policy.h"
#include "mta/mta-settings.h"

static void test_cidr_parse(void **state)
{
	static const struct { const char *text; bool ok; unsigned int prefix; } cases[] = {
		{ "127.0.0.0/8", true, 8 }, { "10.1.2.3", true, 32 },
		{ "0.0.0.0/0", true, 0 }, { "::1/128", true, 128 },
		{ "2001:db8::/32", true, 32 }, { "::", true, 128 },
		{ "10.0.0.0/33", false, 0 }, { "::/129", false, 0 },
		{ "10.0.0.0/", false, 0 }, { "10.0.0.0/x", false, 0 },
		{ "/8", false, 0 }, { "host.example/8", false, 0 },
		{ "10.0.0.0/0008", false, 0 }, { "", false, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_cidr c;
		const char *error = NULL;
		bool ok = mt_cidr_parse(cases[i].text, &c, &error);
		assert_int_equal(ok, cases[i].ok);
		if (ok)
			assert_int_equal(c.prefix, cases[i].prefix);
		else
			assert_non_null(error);
	}
	struct mt_cidr c;
	const char *error;
	assert_true(mt_cidr_parse("192.168.77.200/20", &c, &error));
	unsigned char want[4] = { 192, 168, 64, 0 };
	assert_memory_equal(c.addr, want, 4);	/* host bits cleared */
}

static struct sockaddr_storage v4(const char *ip)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &sin->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	sin6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, ip, &sin6->sin6_addr);
	return ss;
}

static void settings_init(struct mt_mta_settings *set, char **local, size_t n_local,
			  char **nets, size_t n_nets, char **map, size_t n_map,
			  const char *relayhost)
{
	memset(set, 0, sizeof(*set));
	set->local_domains = (struct mt_strlist){ local, n_local };
	set->mynetworks = (struct mt_strlist){ nets, n_nets };
	set->transport_map = (struct mt_strlist){ map, n_map };
	if (relayhost != NULL) {
		set->relayhost.host = (char *)relayhost;
		set->relayhost.port = 2525;
	}
}

static void test_networks_and_domains(void **state)
{
	char *local[] = { "Example.TEST", "other.test." };
	char *nets[] = { "192.0.2.0/24", "2001:db8:1::/48", "10.9.8.7" };
	struct mt_mta_settings set;
	settings_init(&set, local, 2, nets, 3, NULL, 0, NULL);
	struct mta_policy *p = mta_policy_new(&set);
	struct sockaddr_storage ss;

	ss = v4("192.0.2.77");
	assert_true(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));
	ss = v4("192.0.3.1");
	assert_false(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));
	ss = v4("10.9.8.7");
	assert_true(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));
	ss = v4("10.9.8.6");
	assert_false(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));
	ss = v6("2001:db8:1:ffff::5");
	assert_true(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));
	ss = v6("2001:db8:2::5");
	assert_false(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));
	ss = v6("::ffff:192.0.2.9");	/* IPv4 on a dual-stack socket */
	assert_true(mta_policy_is_trusted_client(p, (struct sockaddr *)&ss));

	assert_true(mta_policy_is_local_domain(p, "example.test"));
	assert_true(mta_policy_is_local_domain(p, "EXAMPLE.test"));
	assert_true(mta_policy_is_local_domain(p, "other.test"));
	assert_false(mta_policy_is_local_domain(p, "sub.example.test"));
	assert_false(mta_policy_is_local_domain(p, "example.test.evil"));
	assert_string_equal(mta_policy_primary_domain(p), "example.test");
	mta_policy_free(&p);
	assert_null(p);
}

/* Role addresses: which spellings name postmaster, MAILER-DAEMON and
 * (only when configured) abuse, and the mailbox each goes to. */
static const char *role_of(const struct mta_policy *p, const char *path)
{
	struct mt_address addr;
	const char *error;
	assert_true(mt_address_parse(path, strlen(path), MT_ADDR_ALLOW_POSTMASTER,
				     &addr, NULL, &error));
	return mta_policy_role_mailbox(p, "mx.example.test", &addr);
}

static void test_role_mailboxes(void **state)
{
	char *local[] = { "example.test", "other.test" };
	struct mt_mta_settings set;
	settings_init(&set, local, 2, NULL, 0, NULL, 0, NULL);
	struct mta_policy *p = mta_policy_new(&set);
	static const char *const pm[] = {
		"<postmaster>", "<PostMaster>", "<postmaster@example.test>",
		"<PostMaster@Example.Test>", "<postmaster@other.test>",
		"<postmaster@mx.example.test>", "<POSTMASTER@MX.EXAMPLE.TEST>",
		"<MAILER-DAEMON@mx.example.test>", "<mailer-daemon@example.test>",
	};
	for (size_t i = 0; i < sizeof(pm) / sizeof(pm[0]); i++) {
		const char *got = role_of(p, pm[i]);
		assert_non_null(got);
		assert_string_equal(got, "postmaster@example.test");
	}
	static const char *const none[] = {
		"<postmaster@remote.test>", "<abuse@example.test>",
		"<postmasterx@example.test>", "<user@example.test>",
		"<postmaster@[127.0.0.1]>", "<mailer-daemon@sub.example.test>",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_null(role_of(p, none[i]));
	assert_string_equal(mta_policy_postmaster(p), "postmaster@example.test");
	mta_policy_free(&p);

	set.postmaster = (char *)"admin@other.test";
	set.abuse = (char *)"desk@example.test";
	p = mta_policy_new(&set);
	assert_string_equal(role_of(p, "<postmaster>"), "admin@other.test");
	assert_string_equal(role_of(p, "<Abuse@Example.Test>"), "desk@example.test");
	assert_string_equal(role_of(p, "<abuse@mx.example.test>"), "desk@example.test");
	assert_null(role_of(p, "<abuse@remote.test>"));
	assert_string_equal(mta_policy_postmaster(p), "admin@other.test");
	mta_policy_free(&p);
}

static void test_nexthops(void **state)
{
	char *local[] = { "example.test" };
	char *map[] = { "remote.test=127.0.0.1:2526", ".remote.test=127.0.0.1:2527",
			"deep.sub.remote.test=[::1]:2528", "broken-entry" };
	struct mt_mta_settings set;
	settings_init(&set, local, 1, NULL, 0, map, 4, "relay.example");
	struct mta_policy *p = mta_policy_new(&set);
	const struct mt_hostport *hop;

	hop = mta_policy_nexthop(p, "remote.test");
	assert_string_equal(hop->host, "127.0.0.1");
	assert_int_equal(hop->port, 2526);
	hop = mta_policy_nexthop(p, "a.remote.test");
	assert_int_equal(hop->port, 2527);
	hop = mta_policy_nexthop(p, "deep.sub.remote.test");
	assert_string_equal(hop->host, "::1");
	assert_int_equal(hop->port, 2528);
	hop = mta_policy_nexthop(p, "xremote.test");	/* not a subdomain */
	assert_string_equal(hop->host, "relay.example");
	mta_policy_free(&p);

	settings_init(&set, local, 1, NULL, 0, map, 1, NULL);
	p = mta_policy_new(&set);
	assert_null(mta_policy_nexthop(p, "elsewhere.test"));	/* DNS MX */
	mta_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_networks_and_domains),
		cmocka_unit_test(test_nexthops),
		cmocka_unit_test(test_role_mailboxes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
