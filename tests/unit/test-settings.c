/* test-settings.c — checks on mailtier.conf's real tables (lib/libmtsettings):
 * every key documented, names unique, every default parses, the shared
 * sections' entry parsers and cross-section checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mailtier-settings.h"
#include "popstore/popstore-settings.h"
#include "mta/mta-settings.h"

static void test_tables_documented_and_unique(void **state)
{
	for (const struct mt_section_def *const *d = mt_mailtier_sections; *d != NULL; d++) {
		assert_non_null((*d)->doc);
		assert_non_null((*d)->readers);
		for (const struct mt_section_def *const *e = d + 1; *e != NULL; e++)
			assert_string_not_equal((*d)->name, (*e)->name);
		for (size_t i = 0; (*d)->settings != NULL && (*d)->settings[i].name != NULL; i++) {
			const struct mt_setting_def *s = &(*d)->settings[i];
			assert_non_null(s->doc);
			assert_true(strlen(s->doc) > 10);
			for (size_t j = i + 1; (*d)->settings[j].name != NULL; j++)
				assert_string_not_equal(s->name, (*d)->settings[j].name);
			if (s->type == MT_SETTING_ENUM)
				assert_non_null(s->enum_values);
		}
	}
}

static struct mt_config *load_text(const char *text, char **errors_r)
{
	char path[] = "/tmp/test-settings-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct mt_config *config = mt_mailtier_config_load(path, errors_r);
	unlink(path);
	return config;
}

static const char minimal[] =
	"[directory]\nbase_dn = ou=people,dc=example,dc=test\n"
	"[mta]\nlocal_domains = example.test\n"
	"[shards]\ns1 = 127.0.0.1:2401, 127.0.0.1:1101\n"
	"s2 = 127.0.0.1:2402 , [::1]:1102\n"
	"[popstore]\ndb_cache_size = 32M\n"
	"[popstore.s1]\ndb_home = /tmp/s1\nlmtp_listen = 127.0.0.1:2401\n"
	"pop3_listen = 127.0.0.1:1101\n";

static void test_minimal_config_and_defaults(void **state)
{
	char *errors = NULL;
	struct mt_config *config = load_text(minimal, &errors);
	if (errors != NULL)
		fail_msg("%s", errors);
	const struct mt_shard_addresses *s2 = mt_config_map_get(config, "shards", "s2");
	assert_non_null(s2);
	assert_int_equal(s2->n_sites, 1);
	assert_string_equal(s2->sites[0].lmtp.host, "127.0.0.1");
	assert_int_equal(s2->sites[0].lmtp.port, 2402);
	assert_string_equal(s2->sites[0].pop3.host, "::1");
	const struct mt_popstore_settings *ps = mt_config_get(config, "popstore", "s1");
	assert_non_null(ps);
	assert_int_equal(ps->db_cache_size, 32u << 20);	/* inherited */
	assert_int_equal(ps->lmtp_listen.port, 2401);
	const struct mt_mta_settings *mta = mt_config_get(config, "mta", NULL);
	assert_int_equal(mta->max_message_size, 50u << 20);
	assert_int_equal(mta->retry_schedule.count, 5);
	assert_int_equal(mta->command_timeout, 300000);
	mt_config_free(&config);
}

static void test_cross_section_checks(void **state)
{
	char *errors = NULL;
	char text[2048];
	snprintf(text, sizeof(text), "%s[popstore.s9]\ndb_home = /x\n"
		 "lmtp_listen = 127.0.0.1:1\npop3_listen = 127.0.0.1:2\n"
		 "[tls]\ncert_file = /c.pem\n", minimal);
	assert_null(load_text(text, &errors));
	assert_non_null(strstr(errors, ":14: [popstore.s9] shard 's9' is not listed in [shards]\n"));
	assert_non_null(strstr(errors, ":19: [tls] cert_file: cert_file and key_file must be set together\n"));
	free(errors);

	assert_null(load_text("[directory]\nuris = http://x/\n[mta]\nlocal_domains = a\n"
			      "transport_map = remote.test=nowhere\n[shards]\nbad name = 1:1, 1:2\n",
			      &errors));
	assert_non_null(strstr(errors, ":1: [directory] missing required key 'base_dn'\n"));
	assert_non_null(strstr(errors, ":7: [shards] bad name: shard names are 1-64 letters, digits, '-' or '_' (got '1:1, 1:2')\n"));
	free(errors);
}

/* [shards]' optional third address, the MMP's IMAP backend. */
static void test_shard_imap_address(void **state)
{
	(void)state;
	char *errors = NULL;
	struct mt_config *config = load_text(
		"[directory]\nuris = ldap://127.0.0.1:1/\nbase_dn = dc=x\n[mta]\nlocal_domains = x\n"
		"[shards]\na = 127.0.0.1:2401, 127.0.0.1:1101, 127.0.0.1:1431\n"
		"b = 127.0.0.1:2402,127.0.0.1:1102\n", &errors);
	if (errors != NULL)
		fail_msg("%s", errors);
	const struct mt_shard_addresses *a = mt_config_map_get(config, "shards", "a");
	const struct mt_shard_addresses *b = mt_config_map_get(config, "shards", "b");
	assert_int_equal(a->n_sites, 1);
	assert_int_equal(a->sites[0].pop3.port, 1101);
	assert_string_equal(a->sites[0].imap.host, "127.0.0.1");
	assert_int_equal(a->sites[0].imap.port, 1431);
	assert_int_equal(b->sites[0].pop3.port, 1102);
	assert_null(b->sites[0].imap.host);
	mt_config_free(&config);

	assert_null(load_text("[directory]\nuris = ldap://127.0.0.1:1/\nbase_dn = dc=x\n[mta]\nlocal_domains = x\n"
			      "[shards]\nc = 1.1.1.1:1, 1.1.1.1:2, 1.1.1.1:3, 1.1.1.1:4\n"
			      "d = 1.1.1.1:1, 1.1.1.1:2, nonsense\n", &errors));
	assert_non_null(strstr(errors, ":7: [shards] c: expected 'LMTP_ADDRESS, "
			       "POP3_ADDRESS[, IMAP_ADDRESS]'"));
	assert_non_null(strstr(errors, ":8: [shards] d: "));
	free(errors);
}

/* A shard that is a replication group: NAME = SITE | SITE | SITE. */
static void test_shard_sites(void **state)
{
	(void)state;
	static const char head[] =
		"[directory]\nuris = ldap://127.0.0.1:1/\nbase_dn = dc=x\n[mta]\nlocal_domains = x\n"
		"[shards]\n";
	char *errors = NULL;
	char text[2048];
	snprintf(text, sizeof(text), "%s"
		 "r = 127.0.0.1:2401, 127.0.0.1:1101, 127.0.0.1:1431 |"
		 " 127.0.0.2:2401,127.0.0.2:1101,127.0.0.2:1431|[::1]:2401, [::1]:1101, [::1]:1431\n"
		 "p = 10.0.0.1:24, 10.0.0.1:110 | 10.0.0.2:24, 10.0.0.2:110\n", head);
	struct mt_config *config = load_text(text, &errors);
	if (errors != NULL)
		fail_msg("%s", errors);
	const struct mt_shard_addresses *r = mt_config_map_get(config, "shards", "r");
	const struct mt_shard_addresses *p = mt_config_map_get(config, "shards", "p");
	assert_int_equal(r->n_sites, 3);
	assert_string_equal(r->sites[0].lmtp.host, "127.0.0.1");
	assert_string_equal(r->sites[1].pop3.host, "127.0.0.2");
	assert_int_equal(r->sites[1].imap.port, 1431);
	assert_string_equal(r->sites[2].lmtp.host, "::1");
	assert_int_equal(r->sites[2].imap.port, 1431);
	assert_int_equal(p->n_sites, 2);
	assert_string_equal(p->sites[1].lmtp.host, "10.0.0.2");
	assert_int_equal(p->sites[1].pop3.port, 110);
	assert_null(p->sites[1].imap.host);
	mt_config_free(&config);

	/* Each bad line refused with its line and why. */
	snprintf(text, sizeof(text), "%s"
		 "e1 = 1.1.1.1:1, 1.1.1.1:2 |\n"
		 "e2 = 1.1.1.1:1, 1.1.1.1:2 | 1.1.1.2:1\n"
		 "e3 = 1.1.1.1:1, 1.1.1.1:2, 1.1.1.1:3 | 1.1.1.2:1, 1.1.1.2:2\n"
		 "e4 = 1.1.1.1:1, 1.1.1.1:2 | 1.1.1.1:1, 1.1.1.2:2\n"
		 "e5 = a:1,a:2|b:1,b:2|c:1,c:2|d:1,d:2|e:1,e:2|f:1,f:2|g:1,g:2|h:1,h:2\n"
		 "e6 = 1.1.1.1:1, 1.1.1.1:2 | 1.1.1.2:1, nonsense\n", head);
	assert_null(load_text(text, &errors));
	assert_non_null(strstr(errors, ":7: [shards] e1: expected 'LMTP_ADDRESS, POP3_ADDRESS"));
	assert_non_null(strstr(errors, ":8: [shards] e2: expected 'LMTP_ADDRESS, POP3_ADDRESS"));
	assert_non_null(strstr(errors, ":9: [shards] e3: either every site has an IMAP_ADDRESS or none has"));
	assert_non_null(strstr(errors, ":10: [shards] e4: two sites have the same address"));
	assert_non_null(strstr(errors, ":11: [shards] e5: too many sites"));
	assert_non_null(strstr(errors, ":12: [shards] e6: "));
	free(errors);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables_documented_and_unique),
		cmocka_unit_test(test_minimal_config_and_defaults),
		cmocka_unit_test(test_cross_section_checks),
		cmocka_unit_test(test_shard_imap_address),
		cmocka_unit_test(test_shard_sites),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
