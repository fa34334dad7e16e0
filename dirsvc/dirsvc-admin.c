/* dirsvc-admin.c — the admin half of libdirsvc (dirsvc-admin.h): one
 * synchronous libldap connection bound as [directory] admin_dn, and the
 * account changes mailtierctl makes through it: add (an LDAP add built from
 * provision.c's entry layout), delete, password replace, find by address.
 * Trust boundary: admin credentials from the config and its secret file
 * (the password is wiped once the bind is done); addresses from the
 * operator, RFC 4514-escaped in DNs and RFC 4515-escaped in filters.
 * RFCs: 4511 (operations), 4513 (simple bind), 4514, 4515, 3112. */
#include "dirsvc-admin.h"
#include "dirsvc-private.h"

#include "alloc.h"
#include "buf.h"
#include "clock.h"
#include "ldap-escape.h"
#include "ldif.h"
#include "secret.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Distinct attributes of an account entry (provision.h) with room to spare. */
#define ENTRY_ATTRS_MAX 16

static const char *const shown_attrs[] = {
	"uid", "mail", "mailLocalAddress", "mailHost", "mailRoutingAddress",
	"mailtierQuota", "mailtierStatus",
};
#define N_SHOWN_ATTRS (sizeof(shown_attrs) / sizeof(shown_attrs[0]))

struct found_entry {
	char *dn;
	struct mt_dirsvc_admin_value *values;
	size_t n_values;
};

struct mt_dirsvc_admin {
	const struct mt_directory_settings *set;
	LDAP *ld;
	char error[512];
	struct mt_dirsvc_admin_entry entries[MT_DIRSVC_ADMIN_FIND_MAX];
	struct found_entry found[MT_DIRSVC_ADMIN_FIND_MAX];
	size_t n_found;
};

static const char *set_error(struct mt_dirsvc_admin *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *set_error(struct mt_dirsvc_admin *a, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(a->error, sizeof(a->error), fmt, args);
	va_end(args);
	return a->error;
}

/* slapd's result as a message: the result code's text, and the server's
 * diagnostic message when it sent one. */
static const char *ldap_error(struct mt_dirsvc_admin *a, int rc)
{
	char *diagnostic = NULL;

	if (a->ld != NULL)
		ldap_get_option(a->ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &diagnostic);
	if (diagnostic != NULL && diagnostic[0] != '\0')
		set_error(a, "%s (%s)", ldap_err2string(rc), diagnostic);
	else
		set_error(a, "%s", ldap_err2string(rc));
	ldap_memfree(diagnostic);
	return a->error;
}

static bool connected(struct mt_dirsvc_admin *a, const char **error_r)
{
	if (a->ld == NULL) {
		*error_r = set_error(a, "not connected to the directory");
		return false;
	}
	return true;
}

static void found_free(struct mt_dirsvc_admin *a)
{
	for (size_t i = 0; i < a->n_found; i++) {
		struct found_entry *f = &a->found[i];

		for (size_t j = 0; j < f->n_values; j++)
			free((char *)f->values[j].value);
		free(f->values);
		free(f->dn);
	}
	memset(a->found, 0, sizeof(a->found));
	memset(a->entries, 0, sizeof(a->entries));
	a->n_found = 0;
}

/* "uid=<address>,<base_dn>", the value RFC 4514-escaped. */
static char *user_dn(const char *base_dn, const char *address)
{
	struct mt_buf dn = MT_BUF_INIT;

	mt_buf_append_str(&dn, "uid=");
	mt_dn_append_value(&dn, address);
	mt_buf_append_char(&dn, ',');
	mt_buf_append_str(&dn, base_dn);
	return mt_buf_steal(&dn);
}

/* Connect to uri and bind as dn (RFC 4513 5.1.3); the handle in *ld_r
 * when the result is LDAP_SUCCESS. */
static int simple_bind(const char *uri, const char *dn, struct berval *cred,
		       uint64_t timeout_ms, LDAP **ld_r)
{
	LDAP *ld = NULL;
	int rc = ldap_initialize(&ld, uri);
	if (rc != LDAP_SUCCESS)
		return rc;
	mt_dirsvc_ldap_set_options(ld, timeout_ms, timeout_ms);
	rc = ldap_sasl_bind_s(ld, dn, LDAP_SASL_SIMPLE, cred, NULL, NULL, NULL);
	if (rc == LDAP_SUCCESS)
		*ld_r = ld;
	else
		ldap_unbind_ext_s(ld, NULL, NULL);
	return rc;
}

/* Whether a bind's result says the provider could not be reached (the
 * only case in which writes move to the next URI: with several providers
 * every change goes to one of them at a time, the first that is up, so
 * a refusal such as a wrong password is reported, not tried elsewhere). */
static bool provider_down(int rc)
{
	return rc == LDAP_SERVER_DOWN || rc == LDAP_CONNECT_ERROR ||
		rc == LDAP_TIMEOUT || rc == LDAP_UNAVAILABLE || rc == LDAP_BUSY;
}

struct mt_dirsvc_admin *mt_dirsvc_admin_new(const struct mt_directory_settings *set)
{
	struct mt_dirsvc_admin *a = mt_xcalloc(1, sizeof(*a));

	a->set = set;
	return a;
}

bool mt_dirsvc_admin_connect(struct mt_dirsvc_admin *a, const char **error_r)
{
	const struct mt_directory_settings *set = a->set;
	const char *error;

	found_free(a);
	if (a->ld != NULL)
		return true;
	char *password = mt_secret_read(set->admin_password_file, &error);
	if (password == NULL) {
		*error_r = set_error(a, "%s", error);
		return false;
	}
	struct berval cred = { strlen(password), password };
	int rc = LDAP_SERVER_DOWN;
	for (size_t i = 0; i < set->uris.count && a->ld == NULL && provider_down(rc); i++)
		rc = simple_bind(set->uris.items[i], set->admin_dn, &cred, set->timeout,
				 &a->ld);
	mt_secret_free(&password);
	if (a->ld == NULL) {
		*error_r = set_error(a, "cannot bind to the directory as %s: %s",
				     set->admin_dn, ldap_err2string(rc));
		return false;
	}
	return true;
}

bool mt_dirsvc_admin_wait_bind(const char *uri, const char *dn,
			       const char *password, unsigned int timeout_ms,
			       const char **error_r)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	struct berval cred = { strlen(password), (char *)password };
	int rc = LDAP_SERVER_DOWN;
	for (unsigned int waited = 0; waited <= timeout_ms; waited += 50) {
		LDAP *ld = NULL;
		rc = simple_bind(uri, dn, &cred, 2000, &ld);
		if (rc == LDAP_SUCCESS) {
			ldap_unbind_ext_s(ld, NULL, NULL);
			return true;
		}
		nanosleep(&tick, NULL);
	}
	*error_r = ldap_err2string(rc);
	return false;
}

void mt_dirsvc_admin_free(struct mt_dirsvc_admin **admin_p)
{
	struct mt_dirsvc_admin *a = *admin_p;

	if (a == NULL)
		return;
	found_free(a);
	if (a->ld != NULL)
		ldap_unbind_ext_s(a->ld, NULL, NULL);
	free(a);
	*admin_p = NULL;
}

/* The LDAPMod array of an add request, filled by mt_account_visit(). */
struct entry_builder {
	char *dn;
	const char *base_dn;
	LDAPMod mods[ENTRY_ATTRS_MAX];
	size_t n_mod_values[ENTRY_ATTRS_MAX];
	LDAPMod *mod_ptrs[ENTRY_ATTRS_MAX + 1];
	size_t n_mods;
	bool overflow;
};

static void builder_dn(void *context, const char *address, size_t len)
{
	struct entry_builder *b = context;

	(void)len;
	b->dn = user_dn(b->base_dn, address);
}

static void builder_value(void *context, const char *attr, const char *value)
{
	struct entry_builder *b = context;
	size_t i = 0;

	while (i < b->n_mods && strcasecmp(b->mods[i].mod_type, attr) != 0)
		i++;
	if (i == b->n_mods) {
		if (b->n_mods == ENTRY_ATTRS_MAX) {
			b->overflow = true;
			return;
		}
		b->mods[i].mod_op = LDAP_MOD_ADD;
		b->mods[i].mod_type = mt_xstrdup(attr);
		b->mod_ptrs[i] = &b->mods[i];
		b->n_mods++;
	}
	LDAPMod *m = &b->mods[i];
	size_t n = b->n_mod_values[i]++;
	m->mod_values = mt_xrealloc(m->mod_values, (n + 2) * sizeof(char *));
	m->mod_values[n] = mt_xstrdup(value);
	m->mod_values[n + 1] = NULL;
}

static void builder_free(struct entry_builder *b)
{
	for (size_t i = 0; i < b->n_mods; i++) {
		for (size_t j = 0; j < b->n_mod_values[i]; j++)
			free(b->mods[i].mod_values[j]);
		free(b->mods[i].mod_values);
		free(b->mods[i].mod_type);
	}
	free(b->dn);
}

bool mt_dirsvc_admin_add_user(struct mt_dirsvc_admin *a,
			      const struct mt_account *acct, const char **error_r)
{
	static const struct mt_account_visitor ldap_entry = {
		.dn = builder_dn,
		.value = builder_value,
	};
	struct entry_builder b = { .base_dn = a->set->base_dn };
	const char *error;
	bool ok = false;

	found_free(a);
	if (!connected(a, error_r))
		return false;
	if (!mt_account_visit(acct, &ldap_entry, &b, &error)) {
		*error_r = set_error(a, "%s", error);
		goto out;
	}
	if (b.overflow) {
		*error_r = set_error(a, "the entry has more than %d attributes",
				     ENTRY_ATTRS_MAX);
		goto out;
	}
	int rc = ldap_add_ext_s(a->ld, b.dn, b.mod_ptrs, NULL, NULL);
	if (rc != LDAP_SUCCESS) {
		*error_r = ldap_error(a, rc);
		goto out;
	}
	ok = true;
out:
	builder_free(&b);
	return ok;
}

bool mt_dirsvc_admin_delete_user(struct mt_dirsvc_admin *a,
				 const char *address, const char **error_r)
{
	found_free(a);
	if (!connected(a, error_r))
		return false;
	char *dn = user_dn(a->set->base_dn, address);
	int rc = ldap_delete_ext_s(a->ld, dn, NULL, NULL);
	free(dn);
	if (rc != LDAP_SUCCESS) {
		*error_r = ldap_error(a, rc);
		return false;
	}
	return true;
}

bool mt_dirsvc_admin_set_password(struct mt_dirsvc_admin *a,
				  const char *address, const char *password,
				  enum mt_pw_scheme scheme, const char **error_r)
{
	struct mt_buf hash = MT_BUF_INIT;
	const char *error;

	found_free(a);
	if (!connected(a, error_r))
		return false;
	if (!mt_pw_hash(scheme, 0, password, &hash, &error)) {
		*error_r = set_error(a, "password hash: %s", error);
		mt_buf_free(&hash);
		return false;
	}
	char *values[] = { hash.data, NULL };
	LDAPMod mod = { .mod_op = LDAP_MOD_REPLACE, .mod_type = "userPassword",
			.mod_values = values };
	LDAPMod *mods[] = { &mod, NULL };
	char *dn = user_dn(a->set->base_dn, address);
	int rc = ldap_modify_ext_s(a->ld, dn, mods, NULL, NULL);
	free(dn);
	explicit_bzero(hash.data, hash.len);
	mt_buf_free(&hash);
	if (rc != LDAP_SUCCESS) {
		*error_r = ldap_error(a, rc);
		return false;
	}
	return true;
}

/* The mailHost of dn on ld into host (empty: none), or an LDAP code. */
static int read_mail_host(LDAP *ld, const char *dn, char *host, size_t size)
{
	char *attrs[] = { "mailHost", NULL };
	LDAPMessage *res = NULL;
	int rc = ldap_search_ext_s(ld, dn, LDAP_SCOPE_BASE, "(objectClass=*)", attrs,
				   0, NULL, NULL, NULL, 1, &res);
	host[0] = '\0';
	LDAPMessage *e = rc == LDAP_SUCCESS ? ldap_first_entry(ld, res) : NULL;
	struct berval **vals = e != NULL ? ldap_get_values_len(ld, e, "mailHost") : NULL;
	if (vals != NULL && vals[0] != NULL)
		snprintf(host, size, "%.*s", (int)vals[0]->bv_len, vals[0]->bv_val);
	ldap_value_free_len(vals);
	ldap_msgfree(res);
	return rc;
}

/* Poll uri (bound as the admin with cred) until dn's mailHost is shard
 * or deadline_ms (mt_clock_ms) passes; *down_r when it does not answer. */
static bool provider_returns(struct mt_dirsvc_admin *a, const char *uri,
			     struct berval *cred, const char *dn, const char *shard,
			     uint64_t deadline_ms, bool *down_r, const char **error_r)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	LDAP *ld = NULL;
	char host[256] = "";
	int rc = simple_bind(uri, a->set->admin_dn, cred, a->set->timeout, &ld);
	*down_r = rc != LDAP_SUCCESS && provider_down(rc);
	if (*down_r)
		return true;
	for (;;) {
		if (rc == LDAP_SUCCESS)
			rc = read_mail_host(ld, dn, host, sizeof(host));
		if (rc == LDAP_SUCCESS && strcasecmp(host, shard) == 0)
			break;
		if (mt_clock_ms() >= deadline_ms) {
			*error_r = set_error(a, "provider %s still returns mailHost '%s'%s%s",
					     uri, host, rc == LDAP_SUCCESS ? "" : ": ",
					     rc == LDAP_SUCCESS ? "" : ldap_err2string(rc));
			break;
		}
		nanosleep(&tick, NULL);
	}
	if (ld != NULL)
		ldap_unbind_ext_s(ld, NULL, NULL);
	return rc == LDAP_SUCCESS && strcasecmp(host, shard) == 0;
}

bool mt_dirsvc_admin_set_mail_host(struct mt_dirsvc_admin *a,
				   const char *address, const char *shard,
				   unsigned int wait_ms, size_t *unreachable_r,
				   const char **error_r)
{
	const char *error;

	found_free(a);
	*unreachable_r = 0;
	if (!connected(a, error_r))
		return false;
	uint64_t deadline = mt_clock_ms() + wait_ms;
	char *values[] = { (char *)shard, NULL };
	LDAPMod mod = { .mod_op = LDAP_MOD_REPLACE, .mod_type = "mailHost",
			.mod_values = values };
	LDAPMod *mods[] = { &mod, NULL };
	char *dn = user_dn(a->set->base_dn, address);
	int rc = ldap_modify_ext_s(a->ld, dn, mods, NULL, NULL);
	if (rc != LDAP_SUCCESS) {
		*error_r = ldap_error(a, rc);
		free(dn);
		return false;
	}
	char *password = mt_secret_read(a->set->admin_password_file, &error);
	if (password == NULL) {
		*error_r = set_error(a, "%s", error);
		free(dn);
		return false;
	}
	struct berval cred = { strlen(password), password };
	bool ok = true;
	for (size_t i = 0; i < a->set->uris.count && ok; i++) {
		bool down;
		ok = provider_returns(a, a->set->uris.items[i], &cred, dn, shard,
				      deadline, &down, error_r);
		*unreachable_r += down ? 1 : 0;
	}
	mt_secret_free(&password);
	free(dn);
	return ok;
}

/* "(|(uid=A)(mail=A)(mailLocalAddress=A))", A RFC 4515-escaped. */
static char *address_filter(const char *address)
{
	static const char *const attrs[] = { "uid", "mail", "mailLocalAddress" };
	struct mt_buf filter = MT_BUF_INIT;

	mt_buf_append_str(&filter, "(|");
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		mt_buf_appendf(&filter, "(%s=", attrs[i]);
		mt_ldap_filter_escape(&filter, address);
		mt_buf_append_char(&filter, ')');
	}
	mt_buf_append_char(&filter, ')');
	return mt_buf_steal(&filter);
}

/* Copy entry's DN and shown values into f. */
static void found_copy(LDAP *ld, LDAPMessage *entry, struct found_entry *f)
{
	char *dn = ldap_get_dn(ld, entry);

	f->dn = mt_xstrdup(dn != NULL ? dn : "");
	ldap_memfree(dn);
	for (size_t i = 0; i < N_SHOWN_ATTRS; i++) {
		struct berval **vals = ldap_get_values_len(ld, entry, shown_attrs[i]);

		for (size_t j = 0; vals != NULL && vals[j] != NULL; j++) {
			f->values = mt_xrealloc(f->values, (f->n_values + 1) *
						sizeof(f->values[0]));
			f->values[f->n_values++] = (struct mt_dirsvc_admin_value){
				.attr = shown_attrs[i],
				.value = mt_xstrndup(vals[j]->bv_val, vals[j]->bv_len),
				.len = vals[j]->bv_len,
			};
		}
		ldap_value_free_len(vals);
	}
}

int mt_dirsvc_admin_find_user(struct mt_dirsvc_admin *a, const char *address,
			      const struct mt_dirsvc_admin_entry **entries_r,
			      const char **error_r)
{
	char *attrs[N_SHOWN_ATTRS + 1];
	LDAPMessage *res = NULL;

	found_free(a);
	if (!connected(a, error_r))
		return -1;
	for (size_t i = 0; i < N_SHOWN_ATTRS; i++)
		attrs[i] = (char *)shown_attrs[i];
	attrs[N_SHOWN_ATTRS] = NULL;
	char *filter = address_filter(address);
	int rc = ldap_search_ext_s(a->ld, a->set->base_dn, LDAP_SCOPE_ONELEVEL,
				   filter, attrs, 0, NULL, NULL, NULL,
				   MT_DIRSVC_ADMIN_FIND_MAX, &res);
	free(filter);
	if (rc != LDAP_SUCCESS) {
		*error_r = ldap_error(a, rc);
		ldap_msgfree(res);
		return -1;
	}
	for (LDAPMessage *e = ldap_first_entry(a->ld, res);
	     e != NULL && a->n_found < MT_DIRSVC_ADMIN_FIND_MAX;
	     e = ldap_next_entry(a->ld, e)) {
		struct found_entry *f = &a->found[a->n_found];

		found_copy(a->ld, e, f);
		a->entries[a->n_found++] = (struct mt_dirsvc_admin_entry){
			.dn = f->dn, .values = f->values, .n_values = f->n_values,
		};
	}
	ldap_msgfree(res);
	*entries_r = a->entries;
	return (int)a->n_found;
}
