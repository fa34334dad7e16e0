/* provision.c — shard assignment, account LDIF records and bulk load-test
 * accounts (see provision.h; LDIF is RFC 2849, DNs RFC 4514, the inetOrgPerson
 * class RFC 2798).
 * Trust boundary: addresses and names are administrator input and are only
 * ever written through ldif.c's escaping; bulk generation has no input. */
#include "provision.h"

#include "address.h"
#include "ldif.h"

#include <inttypes.h>
#include <string.h>
#include <strings.h>

/* RFC 5321 section 4.5.3.1.3 limits a path to 256 octets; allow some slack
 * for the brackets it counts and for odd input, refuse anything longer. */
#define ADDRESS_MAX 320

#define FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME UINT64_C(0x100000001b3)

static const char *const status_names[] = {
	[MT_ACCOUNT_ACTIVE] = "active",
	[MT_ACCOUNT_DISABLED] = "disabled",
	[MT_ACCOUNT_HOLD] = "hold",
};

const char *mt_account_status_name(enum mt_account_status status)
{
	if ((size_t)status >= sizeof(status_names) / sizeof(status_names[0]))
		return "active";
	return status_names[status];
}

bool mt_account_status_parse(const char *name,
			     enum mt_account_status *status_r)
{
	for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++) {
		if (strcasecmp(name, status_names[i]) == 0) {
			*status_r = (enum mt_account_status)i;
			return true;
		}
	}
	return false;
}

static inline char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* MurmurHash3's 64-bit finalizer: FNV-1a alone mixes its last bytes into
 * the high bits poorly, and rendezvous hashing compares whole values. */
static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return k;
}

uint64_t mt_shard_score(const char *addr, const char *shard)
{
	uint64_t h = FNV64_OFFSET;

	for (const unsigned char *p = (const unsigned char *)shard; *p; p++)
		h = (h ^ *p) * FNV64_PRIME;
	h = (h ^ 0) * FNV64_PRIME;	/* separator: "ab"+"c" != "a"+"bc" */
	for (const char *p = addr; *p; p++)
		h = (h ^ (unsigned char)ascii_lower(*p)) * FNV64_PRIME;
	return fmix64(h);
}

const char *mt_shard_for_address(const char *addr, const char *const *shards,
				 size_t n)
{
	const char *best = NULL;
	uint64_t best_score = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t s = mt_shard_score(addr, shards[i]);

		if (best == NULL || s > best_score ||
		    (s == best_score && strcmp(shards[i], best) < 0)) {
			best = shards[i];
			best_score = s;
		}
	}
	return best;
}

/* "dn: uid=<addr>,ou=people,<suffix>\n". DN escaping only adds
 * backslashes after "uid=", so the DN is an LDIF SAFE-STRING when the
 * address and the suffix are: then it is written directly, without a
 * temporary buffer (the bulk path); otherwise it is base64-encoded. */
static void append_dn_line(struct mt_buf *out, const char *addr,
			   size_t addr_len, const char *suffix)
{
	if (mt_ldif_value_is_safe(addr, addr_len) &&
	    mt_ldif_value_is_safe(suffix, strlen(suffix))) {
		mt_buf_append_str(out, "dn: uid=");
		mt_dn_append_value(out, addr);
		mt_buf_append_str(out, ",ou=people,");
		mt_buf_append_str(out, suffix);
		mt_buf_append_char(out, '\n');
		return;
	}
	struct mt_buf dn = MT_BUF_INIT;
	mt_buf_append_str(&dn, "uid=");
	mt_dn_append_value(&dn, addr);
	mt_buf_append_str(&dn, ",ou=people,");
	mt_buf_append_str(&dn, suffix);
	mt_ldif_append_attr_len(out, "dn", dn.data, dn.len);
	mt_buf_free(&dn);
}

bool mt_account_visit(const struct mt_account *acct,
		      const struct mt_account_visitor *v, void *context,
		      const char **error_r)
{
	char addr[ADDRESS_MAX + 1], local[ADDRESS_MAX + 1];
	char quota[24];
	size_t len = strlen(acct->address);
	const char *at = strrchr(acct->address, '@');

	if (at == NULL || at == acct->address || at[1] == '\0') {
		*error_r = "account address is not local-part@domain";
		return false;
	}
	if (len > ADDRESS_MAX) {
		*error_r = "account address is longer than 320 bytes";
		return false;
	}
	for (size_t i = 0; i < acct->n_aliases; i++) {
		if (mt_has_8bit(acct->aliases[i], strlen(acct->aliases[i]))) {
			*error_r = "an alias cannot hold UTF-8 (mailLocalAddress is "
				"IA5String); make it an account of its own";
			return false;
		}
	}
	for (size_t i = 0; i <= len; i++)
		addr[i] = ascii_lower(acct->address[i]);
	memcpy(local, acct->address, (size_t)(at - acct->address));
	local[at - acct->address] = '\0';

	v->dn(context, addr, len);
	v->value(context, "objectClass", "inetOrgPerson");
	v->value(context, "objectClass", "inetLocalMailRecipient");
	v->value(context, "objectClass", "mailtierAccount");
	v->value(context, "uid", addr);
	v->value(context, "cn", acct->cn != NULL ? acct->cn : local);
	v->value(context, "sn", acct->cn != NULL ? acct->cn : local);
	/* mail and mailLocalAddress are IA5String: an address with UTF-8
	 * (RFC 6531) is only the uid, which libdirsvc searches for it. */
	if (!mt_has_8bit(addr, len))
		v->value(context, "mail", addr);
	for (size_t i = 0; i < acct->n_aliases; i++)
		v->value(context, "mailLocalAddress", acct->aliases[i]);
	if (acct->mail_host != NULL)
		v->value(context, "mailHost", acct->mail_host);
	if (acct->forward != NULL)
		v->value(context, "mailRoutingAddress", acct->forward);
	v->value(context, "mailtierStatus", mt_account_status_name(acct->status));
	if (acct->quota != 0) {
		snprintf(quota, sizeof(quota), "%" PRIu64, acct->quota);
		v->value(context, "mailtierQuota", quota);
	}
	if (acct->password_hash != NULL)
		v->value(context, "userPassword", acct->password_hash);
	return true;
}

struct ldif_record {
	struct mt_buf *out;
	const char *suffix;
};

static void ldif_record_dn(void *context, const char *address, size_t len)
{
	struct ldif_record *r = context;

	append_dn_line(r->out, address, len, r->suffix);
}

static void ldif_record_value(void *context, const char *attr, const char *value)
{
	struct ldif_record *r = context;

	mt_ldif_append_attr(r->out, attr, value);
}

bool mt_ldif_append_account(struct mt_buf *out, const char *suffix,
			    const struct mt_account *acct,
			    const char **error_r)
{
	static const struct mt_account_visitor ldif_writer = {
		.dn = ldif_record_dn,
		.value = ldif_record_value,
	};
	struct ldif_record r = { .out = out, .suffix = suffix };

	if (!mt_account_visit(acct, &ldif_writer, &r, error_r))
		return false;
	mt_buf_append_char(out, '\n');
	return true;
}

bool mt_provision_bulk_each(const struct mt_provision_params *p,
			    mt_provision_account_cb *callback, void *context,
			    const char **error_r)
{
	struct mt_buf pwhash = MT_BUF_INIT;
	char addr[ADDRESS_MAX + 1], password[32];
	uint64_t first = p->first != 0 ? p->first : 1;
	bool ok = false;

	if (p->n_shards == 0) {
		*error_r = "bulk provisioning needs at least one shard";
		return false;
	}
	if (strlen(p->domain) > ADDRESS_MAX - 32) {
		*error_r = "mail domain too long";
		return false;
	}
	struct mt_account acct = {
		.address = addr,
		.quota = p->quota,
		.status = MT_ACCOUNT_ACTIVE,
	};
	for (uint64_t k = first; k - first < p->count; k++) {
		snprintf(addr, sizeof(addr), "user%" PRIu64 "@%s", k, p->domain);
		snprintf(password, sizeof(password), "secret%" PRIu64, k);
		mt_buf_reset(&pwhash);
		if (!mt_pw_hash(p->scheme, p->crypt_rounds, password, &pwhash,
				error_r))
			goto out;
		acct.password_hash = pwhash.data;
		acct.mail_host = mt_shard_for_address(addr, p->shards,
						      p->n_shards);
		if (!callback(&acct, context, error_r))
			goto out;
	}
	ok = true;
out:
	explicit_bzero(password, sizeof(password));
	mt_buf_free(&pwhash);
	return ok;
}

struct bulk_ldif {
	FILE *out;
	const char *suffix;
	struct mt_buf rec;
};

static bool bulk_ldif_write(const struct mt_account *acct, void *context,
			    const char **error_r)
{
	struct bulk_ldif *b = context;

	mt_buf_reset(&b->rec);
	if (!mt_ldif_append_account(&b->rec, b->suffix, acct, error_r))
		return false;
	if (fwrite(b->rec.data, 1, b->rec.len, b->out) != b->rec.len) {
		*error_r = "writing the LDIF output failed";
		return false;
	}
	return true;
}

bool mt_provision_bulk(FILE *out, const struct mt_provision_params *p,
		       const char **error_r)
{
	struct mt_buf suffix = MT_BUF_INIT;
	struct bulk_ldif b = { .out = out, .rec = MT_BUF_INIT };
	bool ok = false;

	if (p->suffix != NULL)
		mt_buf_append_str(&suffix, p->suffix);
	else if (!mt_dn_from_domain(&suffix, p->domain, error_r))
		goto out;
	b.suffix = suffix.data;
	ok = mt_provision_bulk_each(p, bulk_ldif_write, &b, error_r);
out:
	mt_buf_free(&b.rec);
	mt_buf_free(&suffix);
	return ok;
}
