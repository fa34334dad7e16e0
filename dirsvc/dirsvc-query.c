/* dirsvc-query.c — the two directory queries of libdirsvc, run on a worker
 * thread (dirsvc-worker.c): find a recipient by mail or mailLocalAddress,
 * and check a password by mail or uid, by simple bind or by the stored
 * hash (pwhash.c). Entries are checked for shape; a broken one is logged
 * with its DN and answered TEMPFAIL, never guessed at.
 *
 * Entries (dirsvc/provision.h): inetOrgPerson + inetLocalMailRecipient +
 * mailtierAccount: mail (canonical address; for an address with UTF-8,
 * which mail's IA5String syntax cannot hold, the uid), uid, mailLocalAddress
 * (aliases), mailHost (shard), mailRoutingAddress (forwarding),
 * mailtierQuota, mailtierStatus, userPassword.
 * Trust boundary: the filter value is the request's checked key, escaped
 * per RFC 4515 here; the password is client data, used only for the bind or
 * the hash check. Entry contents come from the directory.
 * RFCs: 4511 section 4.5 (search), 4513 section 5.1.3 (simple bind), 4515
 * (filters), 3112 (userPassword). */
#include "dirsvc-private.h"

#include "address.h"
#include "pwhash.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest attribute value taken from an entry (mail is IA5String{256}). */
#define VALUE_MAX 256

static char *lookup_attrs[] = {
	"mail", "uid", "mailHost", "mailRoutingAddress", "mailtierQuota",
	"mailtierStatus", NULL,
};
static char *auth_attrs[] = {
	"mail", "uid", "mailHost", "mailtierStatus", NULL,
};
static char *auth_hash_attrs[] = {
	"mail", "uid", "mailHost", "mailtierStatus", "userPassword", NULL,
};

struct search {
	const char *base;
	const char *filter;
	char **attrs;
	LDAP *ld;		/* the connection that answered */
	LDAPMessage *res;
	LDAPMessage *entry;	/* the one entry found */
};

static int search_op(LDAP *ld, struct timeval *timeout, void *context)
{
	struct search *s = context;

	s->ld = ld;
	s->res = NULL;
	/* Size limit 2: one entry is the answer, two mean a broken directory. */
	int rc = ldap_search_ext_s(ld, s->base, LDAP_SCOPE_SUBTREE, s->filter,
				   s->attrs, 0, NULL, NULL, timeout, 2, &s->res);
	if (rc != LDAP_SUCCESS && rc != LDAP_SIZELIMIT_EXCEEDED &&
	    s->res != NULL) {
		ldap_msgfree(s->res);
		s->res = NULL;
	}
	return rc;
}

/* What a search found, checked. */
struct found {
	char *dn;
	const char *mail, *shard, *forward;
	uint64_t quota;
	enum mt_dirsvc_account account;
	const char *problem;	/* why the entry is unusable, or NULL */
	char problem_buf[160];
};

static void set_tempfail(struct mt_dirsvc_request *req)
{
	if (req->kind == DIRSVC_LOOKUP)
		req->result.recipient.status = MT_DIRSVC_TEMPFAIL;
	else
		req->result.auth.status = MT_DIRSVC_AUTH_TEMPFAIL;
}

/* The single value of attr as a string in req's room; NULL if absent.
 * *problem_r is set if it is multi-valued, too long or holds a NUL. */
static const char *single_value(struct mt_dirsvc_request *req, LDAP *ld,
				LDAPMessage *e, const char *attr,
				struct found *f)
{
	struct berval **vals = ldap_get_values_len(ld, e, attr);
	const char *s = NULL;

	if (vals == NULL)
		return NULL;
	if (vals[1] != NULL) {
		snprintf(f->problem_buf, sizeof(f->problem_buf),
			 "several %s values", attr);
		f->problem = f->problem_buf;
	} else if (vals[0]->bv_len == 0 || vals[0]->bv_len > VALUE_MAX ||
		   memchr(vals[0]->bv_val, '\0', vals[0]->bv_len) != NULL ||
		   (s = mt_dirsvc_req_strdup(req, vals[0]->bv_val,
					     vals[0]->bv_len)) == NULL) {
		snprintf(f->problem_buf, sizeof(f->problem_buf),
			 "bad %s value", attr);
		f->problem = f->problem_buf;
	}
	ldap_value_free_len(vals);
	return s;
}

/* Read and check the entry's mail, mailHost, status, quota, forward. */
static void read_entry(struct mt_dirsvc *d, struct mt_dirsvc_request *req,
		       LDAP *ld, LDAPMessage *e, struct found *f)
{
	const char *host, *status, *quota;

	f->dn = ldap_get_dn(ld, e);
	f->mail = single_value(req, ld, e, "mail", f);
	/* An address with UTF-8 (RFC 6531) cannot be a mail value (IA5String):
	 * such an entry has only its uid, which is the address. */
	if (f->mail == NULL) {
		const char *uid = single_value(req, ld, e, "uid", f);
		if (uid != NULL && mt_has_8bit(uid, strlen(uid)))
			f->mail = uid;
	}
	host = single_value(req, ld, e, "mailHost", f);
	status = single_value(req, ld, e, "mailtierStatus", f);
	quota = single_value(req, ld, e, "mailtierQuota", f);
	if (req->kind == DIRSVC_LOOKUP) {
		/* Forwarding: the first of possibly several addresses. */
		struct berval **vals = ldap_get_values_len(ld, e, "mailRoutingAddress");
		if (vals != NULL && vals[0]->bv_len <= VALUE_MAX &&
		    memchr(vals[0]->bv_val, '\0', vals[0]->bv_len) == NULL)
			f->forward = mt_dirsvc_req_strdup(req, vals[0]->bv_val,
							  vals[0]->bv_len);
		if (vals != NULL)
			ldap_value_free_len(vals);
	}
	if (f->problem != NULL)
		return;

	f->account = MT_DIRSVC_ACTIVE;
	if (status == NULL || strcasecmp(status, "active") == 0)
		f->account = MT_DIRSVC_ACTIVE;
	else if (strcasecmp(status, "disabled") == 0)
		f->account = MT_DIRSVC_DISABLED;
	else if (strcasecmp(status, "hold") == 0)
		f->account = MT_DIRSVC_HOLD;
	else
		f->problem = "unknown mailtierStatus";

	if (quota != NULL) {
		char *end;
		errno = 0;
		f->quota = strtoull(quota, &end, 10);
		if (errno != 0 || *end != '\0' || quota[0] < '0' || quota[0] > '9')
			f->problem = "mailtierQuota is not a byte count";
	}
	if (f->mail == NULL)
		f->problem = "no mail attribute";
	if (host == NULL) {
		f->problem = "no mailHost attribute";
	} else if (!d->check_shards) {
		f->shard = host;
	} else if ((f->shard = mt_dirsvc_shard_name(d, host)) == NULL) {
		snprintf(f->problem_buf, sizeof(f->problem_buf),
			 "mailHost '%s' is not a shard in [shards]", host);
		f->problem = f->problem_buf;
	}
}

/* Run the search for req; true with exactly one entry, read into f and
 * left in s (the caller frees s->res); false with req's result set (not
 * found, or TEMPFAIL). */
static bool search_one(struct dirsvc_worker *w, struct mt_dirsvc_request *req,
		       const char *key_attr, char **attrs, struct search *s,
		       struct found *f)
{
	struct mt_dirsvc *d = mt_dirsvc_worker_dirsvc(w);
	struct mt_buf filter = MT_BUF_INIT;

	mt_buf_appendf(&filter, "(&(objectClass=inetLocalMailRecipient)(|(mail=");
	mt_ldap_filter_escape(&filter, req->key);
	mt_buf_appendf(&filter, ")(%s=", key_attr);
	mt_ldap_filter_escape(&filter, req->key);
	if (mt_has_8bit(req->key, strlen(req->key)) && strcmp(key_attr, "uid") != 0) {
		/* A UTF-8 address is only in uid (see read_entry). */
		mt_buf_append_str(&filter, ")(uid=");
		mt_ldap_filter_escape(&filter, req->key);
	}
	mt_buf_append_str(&filter, ")))");

	*s = (struct search){ .base = d->base_dn, .filter = filter.data,
			      .attrs = attrs };
	atomic_fetch_add(&d->stats.ldap_searches, 1);
	int rc = mt_dirsvc_worker_run(w, DIRSVC_CONN_SERVICE, req, search_op, s);
	s->filter = NULL;
	mt_buf_free(&filter);
	if (rc != LDAP_SUCCESS && rc != LDAP_SIZELIMIT_EXCEEDED) {
		if (req->reason[0] == '\0') {
			/* Answered, but with an error: a configuration problem
			 * (base_dn, ACLs), not an outage. */
			atomic_fetch_add(&d->stats.ldap_errors, 1);
			mt_dirsvc_req_reason(req, "directory search failed: %s",
					     ldap_err2string(rc));
			mt_slog(MT_LOG_ERROR, mt_dirsvc_req_log(req),
				"dirsvc: search base=%s failed: %s", d->base_dn,
				ldap_err2string(rc));
		}
		set_tempfail(req);
		return false;
	}

	int n = ldap_count_entries(s->ld, s->res);
	if (n == 0 && rc == LDAP_SUCCESS) {
		if (req->kind == DIRSVC_LOOKUP) {
			req->result.recipient.status = MT_DIRSVC_NOT_FOUND;
			mt_dirsvc_req_reason(req, "no such address");
		} else {
			req->result.auth.status = MT_DIRSVC_AUTH_BAD_CREDENTIALS;
			mt_dirsvc_req_reason(req, "no such user");
		}
	} else if (n == 1 && rc == LDAP_SUCCESS) {
		s->entry = ldap_first_entry(s->ld, s->res);
		read_entry(d, req, s->ld, s->entry, f);
		return true;
	} else {
		LDAPMessage *e = ldap_first_entry(s->ld, s->res);
		char *dn1 = e != NULL ? ldap_get_dn(s->ld, e) : NULL;
		LDAPMessage *e2 = e != NULL ? ldap_next_entry(s->ld, e) : NULL;
		char *dn2 = e2 != NULL ? ldap_get_dn(s->ld, e2) : NULL;
		mt_slog(MT_LOG_ERROR, mt_dirsvc_req_log(req),
			"dirsvc: '%s' matches several entries: dn=%s dn=%s",
			req->key, dn1 ? dn1 : "?", dn2 ? dn2 : "?");
		ldap_memfree(dn1);
		ldap_memfree(dn2);
		mt_dirsvc_req_reason(req, "address is in several directory entries");
		set_tempfail(req);
	}
	ldap_msgfree(s->res);
	s->res = NULL;
	return false;
}

/* A broken entry: say so in the log with its DN, TEMPFAIL the request. */
static void entry_problem(struct mt_dirsvc_request *req, const struct found *f)
{
	mt_slog(MT_LOG_ERROR, mt_dirsvc_req_log(req),
		"dirsvc: entry dn=%s: %s", f->dn ? f->dn : "?", f->problem);
	mt_dirsvc_req_reason(req, "directory entry is unusable: %s", f->problem);
	set_tempfail(req);
}

void mt_dirsvc_query_lookup(struct dirsvc_worker *w, struct mt_dirsvc_request *req)
{
	struct mt_dirsvc *d = mt_dirsvc_worker_dirsvc(w);
	struct mt_dirsvc_recipient *r = &req->result.recipient;
	struct search s;
	struct found f = { 0 };

	if (!search_one(w, req, "mailLocalAddress", lookup_attrs, &s, &f)) {
		if (r->status == MT_DIRSVC_NOT_FOUND)
			mt_dirsvc_cache_recipient(d, req);
		return;
	}
	if (f.problem != NULL) {
		entry_problem(req, &f);
	} else {
		r->status = MT_DIRSVC_FOUND;
		r->address = f.mail;
		r->shard = f.shard;
		r->forward = f.forward;
		r->quota = f.quota;
		r->account = f.account;
		mt_dirsvc_cache_recipient(d, req);
	}
	ldap_memfree(f.dn);
	ldap_msgfree(s.res);
}

struct bind {
	const char *dn;
	struct berval cred;
};

static int bind_op(LDAP *ld, struct timeval *timeout, void *context)
{
	struct bind *b = context;

	ldap_set_option(ld, LDAP_OPT_TIMEOUT, timeout);
	return ldap_sasl_bind_s(ld, b->dn, LDAP_SASL_SIMPLE, &b->cred,
				NULL, NULL, NULL);
}

/* Check the password by a simple bind as dn on the auth connection.
 * 1 right, 0 wrong, -1 TEMPFAIL (req's reason set). */
static int check_by_bind(struct dirsvc_worker *w, struct mt_dirsvc_request *req,
			 const char *dn)
{
	struct mt_dirsvc *d = mt_dirsvc_worker_dirsvc(w);
	struct bind b = { dn, { strlen(req->password), req->password } };

	atomic_fetch_add(&d->stats.ldap_binds, 1);
	int rc = mt_dirsvc_worker_run(w, DIRSVC_CONN_AUTH, req, bind_op, &b);
	switch (rc) {
	case LDAP_SUCCESS:
		return 1;
	case LDAP_INVALID_CREDENTIALS:
	case LDAP_INAPPROPRIATE_AUTH:	/* no userPassword */
	case LDAP_CONSTRAINT_VIOLATION:	/* e.g. ppolicy lockout */
	case LDAP_UNWILLING_TO_PERFORM:
		mt_dirsvc_req_reason(req, "bind refused: %s", ldap_err2string(rc));
		return 0;
	default:
		if (req->reason[0] == '\0') {
			mt_dirsvc_req_reason(req, "user bind failed: %s",
					     ldap_err2string(rc));
			mt_slog(MT_LOG_ERROR, mt_dirsvc_req_log(req),
				"dirsvc: bind dn=%s failed: %s", dn,
				ldap_err2string(rc));
		}
		return -1;
	}
}

/* Check the password against the entry's userPassword values. */
static int check_by_hash(struct mt_dirsvc_request *req, LDAP *ld,
			 LDAPMessage *e, const char *dn)
{
	struct berval **vals = ldap_get_values_len(ld, e, "userPassword");
	bool match = false;

	if (vals == NULL) {
		mt_slog(MT_LOG_WARNING, mt_dirsvc_req_log(req),
			"dirsvc: entry dn=%s has no userPassword the service "
			"DN may read (auth_method = hash needs read access)", dn);
		mt_dirsvc_req_reason(req, "no readable userPassword");
		return 0;
	}
	for (size_t i = 0; vals[i] != NULL && !match; i++) {
		char stored[512];
		const char *error;
		if (vals[i]->bv_len >= sizeof(stored))
			continue;
		memcpy(stored, vals[i]->bv_val, vals[i]->bv_len);
		stored[vals[i]->bv_len] = '\0';
		if (!mt_pw_verify(req->password, stored, &match, &error))
			mt_slog(MT_LOG_WARNING, mt_dirsvc_req_log(req),
				"dirsvc: entry dn=%s: userPassword value %zu: %s",
				dn, i, error);
		explicit_bzero(stored, sizeof(stored));
	}
	ldap_value_free_len(vals);
	if (!match)
		mt_dirsvc_req_reason(req, "wrong password");
	return match ? 1 : 0;
}

void mt_dirsvc_query_auth(struct dirsvc_worker *w, struct mt_dirsvc_request *req)
{
	struct mt_dirsvc *d = mt_dirsvc_worker_dirsvc(w);
	struct mt_dirsvc_auth *a = &req->result.auth;
	bool hash = d->auth_method == MT_AUTH_HASH;
	struct search s;
	struct found f = { 0 };

	if (!search_one(w, req, "uid", hash ? auth_hash_attrs : auth_attrs,
			&s, &f)) {
		if (a->status == MT_DIRSVC_AUTH_BAD_CREDENTIALS)
			atomic_fetch_add(&d->stats.auth_bad, 1);
		return;
	}
	const char *dn = f.dn != NULL ? f.dn : "?";
	/* The password first: nothing about the account is told to a
	 * client that does not know it. */
	int right = hash ? check_by_hash(req, s.ld, s.entry, dn) :
		check_by_bind(w, req, dn);
	ldap_msgfree(s.res);
	if (right < 0) {
		set_tempfail(req);
	} else if (right == 0) {
		a->status = MT_DIRSVC_AUTH_BAD_CREDENTIALS;
		atomic_fetch_add(&d->stats.auth_bad, 1);
	} else if (f.problem != NULL) {
		entry_problem(req, &f);
	} else if (f.account != MT_DIRSVC_ACTIVE) {
		a->status = MT_DIRSVC_AUTH_DISABLED;
		a->address = f.mail;
		a->account = f.account;
		mt_dirsvc_req_reason(req, "account is %s",
				     mt_dirsvc_account_name(f.account));
	} else {
		a->status = MT_DIRSVC_AUTH_OK;
		a->address = f.mail;
		a->shard = f.shard;
		a->account = f.account;
		atomic_fetch_add(&d->stats.auth_ok, 1);
		mt_dirsvc_cache_auth(d, req);
	}
	ldap_memfree(f.dn);
}
