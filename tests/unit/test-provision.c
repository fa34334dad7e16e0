/* test-provision.c — unit tests for dirsvc provisioning: rendezvous shard
 * hashing (fixed values, balance, ~1/N movement), the LDIF of one account
 * (RFC 2849, RFC 4514 escaping), password hashes ({CRYPT} $6$ and {SSHA512}
 * round trips, and values made by slappasswd), and the slapd configuration
 * writer (ACLs for both auth methods, base entries).
 * Trust boundary: none (test code). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "buf.h"
#include "ldif.h"
#include "provision.h"
#include "pwhash.h"
#include "slapd-config.h"

#include <crypt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

static const char *const shards3[] = { "store1", "store2", "store3" };
static const char *const shards4[] = { "store1", "store2", "store3", "store4" };

/* Pinned values: if the hash changes, users move between shards. */
static void test_shard_fixed(void **state)
{
	static const struct {
		const char *addr;
		uint64_t score_store1;
		const char *of2, *of3;
	} cases[] = {
		{ "user1@example.test", UINT64_C(0xa28b0825b42fe453), "store2", "store2" },
		{ "user2@example.test", UINT64_C(0xad35e4e9ce8adfdb), "store2", "store2" },
		{ "user3@example.test", UINT64_C(0xf7c0307180464516), "store1", "store1" },
		{ "postmaster@example.test", UINT64_C(0x7f992007462dfb6f), "store2", "store3" },
		{ "alice@other.test", UINT64_C(0xcac1d8b2d1c017a6), "store1", "store1" },
		{ "user1500000@example.test", UINT64_C(0x0ea569e1d3f7119b), "store2", "store3" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(mt_shard_score(cases[i].addr, "store1"),
				 cases[i].score_store1);
		assert_string_equal(mt_shard_for_address(cases[i].addr, shards3, 2),
				    cases[i].of2);
		assert_string_equal(mt_shard_for_address(cases[i].addr, shards3, 3),
				    cases[i].of3);
	}
}

static void test_shard_case_and_order(void **state)
{
	static const char *const reversed[] = { "store3", "store2", "store1" };
	char addr[64];
	(void)state;

	assert_string_equal(mt_shard_for_address("USER1@Example.TEST", shards3, 3),
			    mt_shard_for_address("user1@example.test", shards3, 3));
	for (int k = 1; k <= 1000; k++) {
		snprintf(addr, sizeof(addr), "user%d@example.test", k);
		assert_string_equal(mt_shard_for_address(addr, shards3, 3),
				    mt_shard_for_address(addr, reversed, 3));
	}
	assert_null(mt_shard_for_address("a@b", shards3, 0));
	assert_string_equal(mt_shard_for_address("a@b", shards3, 1), "store1");
}

static size_t shard_index(const char *name)
{
	return (size_t)(name[5] - '1');
}

/* 100k addresses: each shard gets its share within 2 % (relative). */
static void test_shard_balance(void **state)
{
	char addr[64];
	(void)state;

	for (size_t n = 2; n <= 4; n++) {
		size_t count[4] = { 0 };
		for (int k = 1; k <= 100000; k++) {
			snprintf(addr, sizeof(addr), "user%d@example.test", k);
			count[shard_index(mt_shard_for_address(addr, shards4, n))]++;
		}
		double expect = 100000.0 / (double)n;
		for (size_t i = 0; i < n; i++) {
			assert_true(count[i] > expect * 0.98);
			assert_true(count[i] < expect * 1.02);
		}
	}
}

/* Adding a 4th shard moves ~1/4 of the users, all of them to the new shard;
 * removing a shard moves only the users it had. */
static void test_shard_rendezvous(void **state)
{
	char addr[64];
	size_t moved = 0, total = 100000;
	(void)state;

	for (size_t k = 1; k <= total; k++) {
		snprintf(addr, sizeof(addr), "user%zu@example.test", k);
		const char *before = mt_shard_for_address(addr, shards4, 3);
		const char *after = mt_shard_for_address(addr, shards4, 4);
		if (strcmp(before, after) != 0) {
			assert_string_equal(after, "store4");
			moved++;
		}
		/* Remove store2 from the three: only its users move. */
		static const char *const without2[] = { "store1", "store3" };
		const char *left = mt_shard_for_address(addr, without2, 2);
		if (strcmp(before, "store2") != 0)
			assert_string_equal(left, before);
	}
	double frac = (double)moved / (double)total;
	assert_true(frac > 0.25 * 0.96 && frac < 0.25 * 1.04);
}

static void test_ldif_account(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *error;
	struct mt_account acct = {
		.address = "User7@Example.Test",
		.password_hash = "{SSHA512}abc=",
		.mail_host = "store2",
		.status = MT_ACCOUNT_ACTIVE,
	};
	(void)state;

	assert_true(mt_ldif_append_account(&out, "dc=example,dc=test", &acct, &error));
	assert_string_equal(out.data,
		"dn: uid=user7@example.test,ou=people,dc=example,dc=test\n"
		"objectClass: inetOrgPerson\n"
		"objectClass: inetLocalMailRecipient\n"
		"objectClass: mailtierAccount\n"
		"uid: user7@example.test\n"
		"cn: User7\n"
		"sn: User7\n"
		"mail: user7@example.test\n"
		"mailHost: store2\n"
		"mailtierStatus: active\n"
		"userPassword: {SSHA512}abc=\n"
		"\n");

	/* Everything optional, a DN-special address, a non-ASCII name. */
	static const char *const aliases[] = { "a1@example.test", " lead@x" };
	struct mt_account full = {
		.address = "a+b,c@example.test",
		.mail_host = "store1",
		.aliases = aliases, .n_aliases = 2,
		.forward = "elsewhere@example.net",
		.cn = "J\xc3\xbcrgen",
		.quota = 104857600,
		.status = MT_ACCOUNT_HOLD,
	};
	mt_buf_reset(&out);
	assert_true(mt_ldif_append_account(&out, "dc=example,dc=test", &full, &error));
	assert_string_equal(out.data,
		"dn: uid=a\\+b\\,c@example.test,ou=people,dc=example,dc=test\n"
		"objectClass: inetOrgPerson\n"
		"objectClass: inetLocalMailRecipient\n"
		"objectClass: mailtierAccount\n"
		"uid: a+b,c@example.test\n"
		"cn:: SsO8cmdlbg==\n"
		"sn:: SsO8cmdlbg==\n"
		"mail: a+b,c@example.test\n"
		"mailLocalAddress: a1@example.test\n"
		"mailLocalAddress:: IGxlYWRAeA==\n"
		"mailHost: store1\n"
		"mailRoutingAddress: elsewhere@example.net\n"
		"mailtierStatus: hold\n"
		"mailtierQuota: 104857600\n"
		"\n");

	struct mt_account bad = { .address = "no-at-sign" };
	assert_false(mt_ldif_append_account(&out, "dc=x", &bad, &error));
	bad.address = "@example.test";
	assert_false(mt_ldif_append_account(&out, "dc=x", &bad, &error));
	mt_buf_free(&out);
}

static void test_ldif_helpers(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *error;
	(void)state;

	mt_ldif_append_attr(&out, "a", ":colon");
	mt_ldif_append_attr(&out, "b", "line\nbreak");
	mt_ldif_append_attr(&out, "c", "trailing ");
	mt_ldif_append_attr(&out, "d", "plain < ok");
	mt_ldif_append_attr(&out, "e", "");
	assert_string_equal(out.data, "a:: OmNvbG9u\nb:: bGluZQpicmVhaw==\n"
			    "c:: dHJhaWxpbmcg\nd: plain < ok\ne: \n");
	mt_buf_reset(&out);
	mt_dn_append_value(&out, "#x \"q\";<>\\ ");
	assert_string_equal(out.data, "\\#x \\\"q\\\"\\;\\<\\>\\\\\\ ");
	mt_buf_reset(&out);
	assert_true(mt_dn_from_domain(&out, "mail.example.test", &error));
	assert_string_equal(out.data, "dc=mail,dc=example,dc=test");
	mt_buf_reset(&out);
	assert_false(mt_dn_from_domain(&out, "a..b", &error));
	assert_false(mt_dn_from_domain(&out, "a,dc=b", &error));
	assert_false(mt_dn_from_domain(&out, "", &error));
	mt_buf_free(&out);
}

static void test_status_names(void **state)
{
	enum mt_account_status st;
	(void)state;

	assert_true(mt_account_status_parse("Disabled", &st));
	assert_int_equal(st, MT_ACCOUNT_DISABLED);
	assert_string_equal(mt_account_status_name(MT_ACCOUNT_HOLD), "hold");
	assert_false(mt_account_status_parse("locked", &st));
}

static void test_pw_crypt_roundtrip(void **state)
{
	struct mt_buf h = MT_BUF_INIT;
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *error;
	bool match;
	(void)state;

	assert_true(mt_pw_hash(MT_PW_SHA512_CRYPT, 1000, "secret42", &h, &error));
	assert_memory_equal(h.data, "{CRYPT}$6$rounds=1000$", 22);
	/* Independently: crypt_r of the password with the stored setting. */
	const char *stored = h.data + 7;
	assert_string_equal(crypt_r("secret42", stored, cd), stored);
	assert_true(mt_pw_verify("secret42", h.data, &match, &error));
	assert_true(match);
	assert_true(mt_pw_verify("secret43", h.data, &match, &error));
	assert_false(match);
	/* Two hashes of one password differ (random salt). */
	struct mt_buf h2 = MT_BUF_INIT;
	assert_true(mt_pw_hash(MT_PW_SHA512_CRYPT, 1000, "secret42", &h2, &error));
	assert_string_not_equal(h.data, h2.data);
	/* The default rounds, and the bounds. */
	mt_buf_reset(&h2);
	assert_true(mt_pw_hash(MT_PW_SHA512_CRYPT, 0, "x", &h2, &error));
	assert_memory_equal(h2.data, "{CRYPT}$6$rounds=50000$", 23);
	assert_false(mt_pw_hash(MT_PW_SHA512_CRYPT, 999, "x", &h2, &error));
	/* Made by slappasswd -h {CRYPT} -c '$6$rounds=1000$%.16s'. */
	assert_true(mt_pw_verify("secret42", "{CRYPT}$6$rounds=1000$TIncxkkeimAPXIVK$"
		"HFhynBJeTAGU.WElFdgPRs/.k3WzCJgPuXnQhh6/Gio280pHi8VuEpNnPNfz6WCEX"
		"N/6NPZZq5rkxDzgDeL331", &match, &error));
	assert_true(match);
	free(cd);
	mt_buf_free(&h);
	mt_buf_free(&h2);
}

static void test_pw_ssha512_roundtrip(void **state)
{
	struct mt_buf h = MT_BUF_INIT;
	unsigned char raw[128], digest[64];
	unsigned int dlen;
	const char *error;
	bool match;
	(void)state;

	assert_true(mt_pw_hash(MT_PW_SSHA512, 0, "secret42", &h, &error));
	assert_memory_equal(h.data, "{SSHA512}", 9);
	/* Recompute SHA-512(password || salt) from the decoded value. */
	const char *b64 = h.data + 9;
	assert_int_equal(strlen(b64), 108);	/* 64 + 16 bytes, padded */
	assert_int_equal(EVP_DecodeBlock(raw, (const unsigned char *)b64, 108), 81);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	assert_non_null(ctx);
	assert_int_equal(EVP_DigestInit_ex(ctx, EVP_sha512(), NULL), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, "secret42", 8), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, raw + 64, 16), 1);
	assert_int_equal(EVP_DigestFinal_ex(ctx, digest, &dlen), 1);
	EVP_MD_CTX_free(ctx);
	assert_memory_equal(digest, raw, 64);

	assert_true(mt_pw_verify("secret42", h.data, &match, &error));
	assert_true(match);
	assert_true(mt_pw_verify("secret4", h.data, &match, &error));
	assert_false(match);
	/* Made by slappasswd: {SSHA512} (pw-sha2, 8-byte salt), {SSHA}. */
	assert_true(mt_pw_verify("secret42", "{SSHA512}ajP+HEM75S4XtUHFWIKdVOrQPGoP"
		"8v0c1y1FJm7ncNNISuVUfJIddtvFzqvEyg4eOW1kIxkDdd9NgLCu1gDmRfHuLC9z"
		"2pxJ", &match, &error));
	assert_true(match);
	assert_true(mt_pw_verify("secret42", "{ssha}AFwOyy75rnQJVuQbsLkPY8BdrIP7NEFi",
				 &match, &error));
	assert_true(match);
	/* Malformed and unknown values are errors, not mismatches. */
	assert_false(mt_pw_verify("x", "{SSHA512}", &match, &error));
	assert_false(mt_pw_verify("x", "{SSHA512}abc", &match, &error));
	assert_false(mt_pw_verify("x", "{SSHA512}AAAA", &match, &error));
	/* Found by fuzzing: padding that is longer than the decoded value,
	 * '=' inside the value, blanks. */
	assert_false(mt_pw_verify("s3cret", "{SSHA}====", &match, &error));
	assert_false(mt_pw_verify("x", "{SSHA512}====", &match, &error));
	assert_false(mt_pw_verify("x", "{SSHA}AA=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &match, &error));
	assert_false(mt_pw_verify("x", "{SSHA}AAAA AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &match, &error));
	/* A stored {CRYPT} value does not choose an unbounded cost. */
	assert_false(mt_pw_verify("x", "{CRYPT}$6$rounds=999999999$x$", &match, &error));
	assert_false(mt_pw_verify("x", "{CRYPT}$2b$31$abcdefghijklmnopqrstuu", &match, &error));
	assert_false(mt_pw_verify("x", "{MD5}xyz=", &match, &error));
	assert_false(mt_pw_verify("x", "plain", &match, &error));
	mt_buf_free(&h);
}

static void test_bulk(void **state)
{
	static const char *const shards[] = { "store1", "store2" };
	char *text = NULL;
	size_t size = 0;
	const char *error;
	FILE *f = open_memstream(&text, &size);
	struct mt_provision_params p = {
		.domain = "example.test", .first = 9, .count = 3,
		.shards = shards, .n_shards = 2, .scheme = MT_PW_SSHA512,
	};
	(void)state;

	assert_non_null(f);
	assert_true(mt_provision_bulk(f, &p, &error));
	fclose(f);
	assert_non_null(strstr(text, "dn: uid=user9@example.test,ou=people,"
			       "dc=example,dc=test\n"));
	assert_non_null(strstr(text, "\ndn: uid=user11@example.test,"));
	assert_null(strstr(text, "user12@"));
	/* The password of user10 is secret10. */
	const char *pw = strstr(strstr(text, "uid: user10@"), "userPassword: ");
	char stored[256];
	assert_int_equal(sscanf(pw, "userPassword: %255s", stored), 1);
	bool match;
	assert_true(mt_pw_verify("secret10", stored, &match, &error));
	assert_true(match);
	free(text);
	p.n_shards = 0;
	assert_false(mt_provision_bulk(stdout, &p, &error));
}

static void test_slapd_config(void **state)
{
	char dir[] = "/tmp/test-provision.XXXXXX", path[128], line[256];
	struct mt_buf out = MT_BUF_INIT;
	const char *error;
	char *suffix, *admin, *service;
	(void)state;

	assert_true(mt_slapd_default_dns("example.test", &suffix, &admin, &service,
					 &error));
	assert_string_equal(suffix, "dc=example,dc=test");
	assert_string_equal(admin, "cn=admin,dc=example,dc=test");
	assert_string_equal(service, "cn=mailtier-service,dc=example,dc=test");
	assert_non_null(mkdtemp(dir));
	struct mt_slapd_params p = {
		.dir = dir, .port = 3890, .suffix = suffix, .admin_dn = admin,
		.admin_pw_hash = "{SSHA512}a", .service_dn = service,
		.service_pw_hash = "{SSHA512}b", .mailtier_schema = "/x/mailtier.schema",
	};
	for (int hash = 0; hash <= 1; hash++) {
		p.service_reads_password = hash;
		assert_true(mt_slapd_write_config(&p, &error));
		snprintf(path, sizeof(path), "%s/slapd.conf", dir);
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		bool found = false;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (strcmp(line, hash ?
				   "\tby dn.exact=\"cn=mailtier-service,dc=example,dc=test\" read\n" :
				   "\tby dn.exact=\"cn=mailtier-service,dc=example,dc=test\" none\n") == 0)
				found = true;
		}
		fclose(f);
		assert_true(found);
	}
	assert_true(mt_slapd_append_base_ldif(&out, &p, &error));
	assert_string_equal(out.data,
		"dn: dc=example,dc=test\n"
		"objectClass: dcObject\n"
		"objectClass: organization\n"
		"dc: example\n"
		"o: example\n"
		"description: mailtier directory\n"
		"\n"
		"dn: ou=people,dc=example,dc=test\n"
		"objectClass: organizationalUnit\n"
		"ou: people\n"
		"description: mail accounts, uid=<address>\n"
		"\n"
		"dn: cn=mailtier-service,dc=example,dc=test\n"
		"objectClass: applicationProcess\n"
		"objectClass: simpleSecurityObject\n"
		"cn: mailtier-service\n"
		"description: read-only identity of the mailtier daemons\n"
		"userPassword: {SSHA512}b\n"
		"\n");
	mt_buf_reset(&out);
	mt_slapd_listen_urls(&out, &p);
	assert_memory_equal(out.data, "ldap://127.0.0.1:3890/ ldapi://%2Ftmp%2Ftest-provision.", 51);

	/* A value that would add a directive is refused. */
	p.admin_dn = "cn=x\"\nrootdn cn=evil";
	assert_false(mt_slapd_write_config(&p, &error));
	p.admin_dn = admin;
	p.service_dn = "cn=svc,dc=other";
	mt_buf_reset(&out);
	assert_false(mt_slapd_append_base_ldif(&out, &p, &error));

	snprintf(path, sizeof(path), "%s/slapd.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/db", dir);
	rmdir(path);
	rmdir(dir);
	mt_buf_free(&out);
	free(suffix);
	free(admin);
	free(service);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shard_fixed),
		cmocka_unit_test(test_shard_case_and_order),
		cmocka_unit_test(test_shard_balance),
		cmocka_unit_test(test_shard_rendezvous),
		cmocka_unit_test(test_ldif_account),
		cmocka_unit_test(test_ldif_helpers),
		cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_pw_crypt_roundtrip),
		cmocka_unit_test(test_pw_ssha512_roundtrip),
		cmocka_unit_test(test_bulk),
		cmocka_unit_test(test_slapd_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
