/* dirsvc-admin.h — the admin half of libdirsvc: changing accounts in the
 * directory as [directory] admin_dn, for mailtierctl (users add, del,
 * passwd, show, bulk when online). The daemons never use it; they ask
 * through dirsvc.h with the read-only service DN.
 *
 *   struct mt_dirsvc_admin *a = mt_dirsvc_admin_new(dirset);
 *   if (!mt_dirsvc_admin_connect(a, &error)) ...
 *   mt_dirsvc_admin_add_user(a, &account, &error);
 *   mt_dirsvc_admin_find_user(a, "al@example.test", &entries, &error);
 *   mt_dirsvc_admin_set_password(a, address, password, MT_PW_SHA512_CRYPT,
 *                                &error);
 *   mt_dirsvc_admin_delete_user(a, address, &error);
 *   mt_dirsvc_admin_free(&a);
 *
 * Synchronous and single-threaded: each call blocks until slapd answers or
 * [directory] timeout passes. The connection is made once, on the first URI
 * of [directory] uris that answers (each tried in turn, each with the
 * timeout), and kept until mt_dirsvc_admin_free(). With several providers
 * (dirsvc/README.md, "Two providers") every change thus goes to one of
 * them, the first that is up: the next URI is tried only when a provider
 * cannot be reached (server down, connect error, timeout, unavailable,
 * busy), never after a refusal such as a wrong admin password.
 * Entries are the layout of provision.h (mt_account_visit), written with
 * LDAP add requests, not through an ldapadd process; the DN of an account is
 * uid=<address>,<base_dn>.
 * Errors: *error_r is a message for the operator (no secrets), valid until
 * the next call on the same handle or its free.
 * Trust boundary: the admin credentials come from the administrator's
 * config (admin_dn) and secret file (admin_password_file, wiped after the
 * bind); addresses and other values come from the operator's command line
 * and are escaped: RFC 4514 in DNs (ldif.h), RFC 4515 in filters
 * (ldap-escape.h), so no value changes a DN's or a filter's structure.
 * RFCs: 4511 (LDAP: bind, add, delete, modify, search), 4513 section 5.1.2
 * (simple bind with a password), 4514 (DNs), 4515 (filters), 3112
 * (userPassword schemes, pwhash.h). */
#ifndef MT_DIRSVC_ADMIN_H
#define MT_DIRSVC_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "dirsvc-settings.h"
#include "provision.h"
#include "pwhash.h"

struct mt_dirsvc_admin;

/* mt_dirsvc_admin_find_user() returns at most this many entries; more
 * matches are an error (an address names one account). */
#define MT_DIRSVC_ADMIN_FIND_MAX 2

/* The attributes a found entry shows, in this order (never userPassword):
 * uid, mail, mailLocalAddress, mailHost, mailRoutingAddress,
 * mailtierQuota, mailtierStatus. */
struct mt_dirsvc_admin_value {
	const char *attr;
	const char *value;	/* NUL-terminated copy */
	size_t len;
};

struct mt_dirsvc_admin_entry {
	const char *dn;
	const struct mt_dirsvc_admin_value *values;	/* in the order above */
	size_t n_values;
};

/* A handle on set (which must outlive it); no connection yet. */
struct mt_dirsvc_admin *mt_dirsvc_admin_new(const struct mt_directory_settings *set);
/* Read admin_password_file and bind as admin_dn on the first URI that
 * answers (see above). False with "cannot bind to the directory as DN: reason" (or the
 * secret file's error) otherwise. */
bool mt_dirsvc_admin_connect(struct mt_dirsvc_admin *admin, const char **error_r);
/* A freshly started slapd's readiness: bind as dn with password on uri
 * (a simple bind, then unbind) every 50 ms until one succeeds or
 * timeout_ms has passed. False with libldap's static reason for the last
 * attempt. */
bool mt_dirsvc_admin_wait_bind(const char *uri, const char *dn,
			       const char *password, unsigned int timeout_ms,
			       const char **error_r);
/* Close the connection (if any) and free the handle; sets *admin_p NULL. */
void mt_dirsvc_admin_free(struct mt_dirsvc_admin **admin_p);

/* Add the entry of acct (provision.h layout; acct->password_hash is stored
 * as it is). False with slapd's reason (e.g. "Already exists"). */
bool mt_dirsvc_admin_add_user(struct mt_dirsvc_admin *admin,
			      const struct mt_account *acct, const char **error_r);
/* Delete the entry uid=<address>. False with e.g. "No such object". */
bool mt_dirsvc_admin_delete_user(struct mt_dirsvc_admin *admin,
				 const char *address, const char **error_r);
/* Replace the userPassword of uid=<address> with a fresh hash of password
 * in scheme (default rounds). False on a hash or LDAP failure. */
bool mt_dirsvc_admin_set_password(struct mt_dirsvc_admin *admin,
				  const char *address, const char *password,
				  enum mt_pw_scheme scheme, const char **error_r);
/* Switch the mailHost of uid=<address> to shard (a move's last step)
 * on the connected provider, then read it back from every URI of
 * [directory] uris (each bound as admin_dn afresh) until each provider
 * that answers returns shard, or wait_ms has passed: the switch counts
 * only then (dirsvc/README.md, "Two providers"). *unreachable_r: how many
 * URIs did not answer (not waited for). False with slapd's reason for the
 * change, or "provider URI still returns X" after wait_ms. */
bool mt_dirsvc_admin_set_mail_host(struct mt_dirsvc_admin *admin,
				   const char *address, const char *shard,
				   unsigned int wait_ms, size_t *unreachable_r,
				   const char **error_r);
/* Find the accounts directly under base_dn whose uid, mail or
 * mailLocalAddress equals address (the directory's matching rules:
 * case-insensitive). Returns how many (0: none) with *entries_r valid until
 * the next call on the handle, or -1 with *error_r (slapd unreachable, more
 * than MT_DIRSVC_ADMIN_FIND_MAX matches: "Size limit exceeded"). */
int mt_dirsvc_admin_find_user(struct mt_dirsvc_admin *admin, const char *address,
			      const struct mt_dirsvc_admin_entry **entries_r,
			      const char **error_r);

#endif
