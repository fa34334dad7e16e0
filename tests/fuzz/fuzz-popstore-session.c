/* fuzz-popstore-session.c — session-level libFuzzer target for the store's
 * three servers: the real LMTP, POP3 and IMAP session code of
 * mailtier-popstore (popstore/lmtp-*.c, pop3-*.c, imap-*.c on lib-mail's
 * connection core and login phase) on an event loop, a socketpair as the
 * client, a real store in a temporary directory and two real libdirsvc
 * objects whose only directory refuses connections (ldap://127.0.0.1:1):
 *  - LMTP and POP3 use the first: every recipient lookup and login ends in
 *    the directory-unavailable answer, so the input drives the command
 *    state machines, pipelining, DATA/the dot codec, SASL and the waits on
 *    the directory, and nothing is ever delivered;
 *  - IMAP uses the second, whose lookup cache (dircache.h) the fixture
 *    primes as a directory answer would (dirsvc-results.c's encodings):
 *    the login FIXTURE_LOGIN with FIXTURE_PASSWORD is the mailbox
 *    u<N>@example.test on shard s1, and that address's recipient entry
 *    (its quota), both for a day. The login, the quota lookup and the
 *    first-login folders run their real paths, answered from the cache;
 *    any other login fails over to the dead directory. The mailbox holds
 *    FIXTURE_MESSAGES messages of a few KB (three multipart, one with a
 *    message/rfc822 part; flags and a keyword), delivered through the
 *    store's API, and the first-login folders; so SELECT, FETCH of
 *    bodies, STORE, COPY/MOVE, EXPUNGE, APPEND, IDLE and SEARCH BODY /
 *    TEXT / HEADER — asynchronous, reading the store — run for real.
 *    Pipelined input after a command that waits on the store is answered
 *    after it: the client waits while the session is busy (a store or
 *    directory request in flight).
 * The IMAP mailbox is the same for every input: after one, the user's
 * folder list (names, flags, UIDVALIDITY, UIDNEXT, counts, HIGHESTMODSEQ,
 * subscriptions) is compared with what the fixture left; if the input
 * changed anything, the user's mailboxes are emptied and the login is
 * pointed at a fresh u<N+1>, prepared the same way (its UIDVALIDITYs and
 * INTERNALDATEs aside, the same view), so an input's outcome does not
 * depend on the ones before it.
 *
 * Input: the first byte chooses the server (bit 3: IMAP; else bit 0:
 * POP3, else LMTP), the delivery (bit 1: a byte per write, else one
 * write) and, for POP3 and IMAP, the client's standing (bit 2: a proxy
 * address, so plaintext logins and the proxy login are accepted); the
 * rest is what the client sends.
 *
 * Properties, beyond "no crash, no leak, no over-read, no use after free"
 * (ASan):
 *  - the client reads the greeting first, then CRLF lines only; LMTP's
 *    and POP3's none over 512 octets, LMTP's replies "DDD " or "DDD-"
 *    with a code from 2xx to 5xx, POP3's "+OK", "-ERR", "+ " or the lines
 *    of a multi-line answer;
 *  - IMAP (RFC 9051 2.2.2, 7): every response is an untagged "* ", a
 *    continuation "+" or a tagged reply; untagged data may be long and
 *    carry literals ({n} or ~{n}, skipped as a client would), but outside
 *    literals no line has a CR, LF or NUL of its own; a continuation and a
 *    tagged reply are at most 512 octets; a tagged reply is "TAG OK",
 *    "TAG NO" or "TAG BAD" (then a space or the end) with a TAG the client
 *    sent (one that begins a line of its input);
 *  - LMTP and POP3 never write the store: a delivery needs a recipient
 *    the directory accepted;
 *  - once the client has closed, no session is left and the daemon's
 *    session count is back to zero.
 * Trust boundary: LMTP, POP3 and IMAP client bytes (RFC 2033, 5321, 1939,
 * 2449, 5034, 4616, 9051, 7888, 2177, 4731, 7162). */
#include "fuzz-daemon.h"

#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "alloc.h"
#include "cidr.h"
#include "dirsvc.h"
#include "dirsvc-private.h"	/* only for struct mt_dirsvc's cache */
#include "imap-session.h"
#include "popstore/popstore.h"
#include "store/store.h"

/* What the IMAP client logs in with (the cache's auth key is the user
 * name lower-cased, as dirsvc.c forms it). */
#define FIXTURE_LOGIN "fuzz@example.test"
#define FIXTURE_PASSWORD "fuzz-secret"
#define FIXTURE_QUOTA (256 * 1024)
#define FIXTURE_TTL_MS (24 * 3600 * 1000)
#define FIXTURE_MESSAGES 5

static struct popstore fixture;
/* LMTP's and POP3's directory (nothing cached) and IMAP's (primed). */
static struct mt_dirsvc *fixture_dirsvc_imap;
static struct mt_dirsvc_client *fixture_dir_plain, *fixture_dir_imap;
/* The mailbox the login is now (u<generation>@example.test), and its
 * folder list as the fixture left it. */
static unsigned int fixture_generation;
static char fixture_user[64];
static struct mt_buf fixture_state;

/* At exit, before the directory goes (the store's regions and reserve
 * are tens of MB): close what the fixture opened. */
static void fixture_free(void)
{
	mt_dirsvc_client_free(&fixture_dir_plain);
	mt_dirsvc_client_free(&fixture_dir_imap);
	fixture.dir = NULL;
	mt_dirsvc_free(&fixture.dirsvc);
	mt_dirsvc_free(&fixture_dirsvc_imap);
	mt_store_port_free(&fixture.port);
	mt_store_close(&fixture.store);
	mt_loop_free(&fixture.loop);
	free(fixture.watches);
	free(fixture.lmtp_clients);
	free(fixture.hostname);
	mt_buf_free(&fixture_state);
	mt_config_free(&fixture.config);
}

/* Lines of filler text, each CRLF-ended ("lorem N ..."). */
static void filler(struct mt_buf *m, const char *word, unsigned int lines)
{
	for (unsigned int i = 0; i < lines; i++)
		mt_buf_appendf(m, "%s %u ipsum dolor sit amet, consectetur adipiscing elit, "
			       "sed do eiusmod tempor incididunt ut labore\r\n", word, i);
}

/* Message n of the fixture (several KB; 1, 2 and 3 multipart, RFC 2046). */
static void fixture_message(struct mt_buf *m, unsigned int n)
{
	mt_buf_appendf(m, "Return-Path: <sender@example.org>\r\n"
		       "From: Sender %u <sender@example.org>\r\n"
		       "To: fuzz@example.test, \"Other\" <other@example.net>\r\n"
		       "Cc: cc@example.net\r\nDate: Mon, 0%u Dec 2026 10:00:00 +0000\r\n"
		       "Message-ID: <msg%u@example.org>\r\n", n, n + 1, n);
	switch (n) {
	case 0:
		mt_buf_appendf(m, "Subject: lorem 0\r\nX-Filler: ");
		for (unsigned int i = 0; i < 40; i++)
			mt_buf_appendf(m, "pad%u ", i);
		mt_buf_appendf(m, "\r\n\tcontinued\r\n\r\n");
		filler(m, "lorem", 40);
		break;
	case 1:
		mt_buf_appendf(m, "Subject: big 1\r\nMIME-Version: 1.0\r\n"
			       "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
			       "preamble\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n"
			       "Content-Transfer-Encoding: quoted-printable\r\n\r\n"
			       "caf=C3=A9 na=C3=AFve soft=\r\nbreak\r\n");
		filler(m, "lorem", 15);
		mt_buf_appendf(m, "--b1\r\nContent-Type: application/octet-stream; name=a.bin\r\n"
			       "Content-Disposition: attachment; filename=\"a.bin\"\r\n"
			       "Content-Transfer-Encoding: base64\r\n\r\n");
		for (unsigned int i = 0; i < 30; i++)
			mt_buf_appendf(m, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w"
				       "cXJzdHV2\r\n");
		mt_buf_appendf(m, "--b1--\r\nepilogue\r\n");
		break;
	case 2:
		mt_buf_appendf(m, "Subject: =?UTF-8?B?w6l0w6kgMg==?=\r\nMIME-Version: 1.0\r\n"
			       "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
			       "--outer\r\nContent-Type: multipart/alternative; boundary=\"inner\"\r\n\r\n"
			       "--inner\r\nContent-Type: text/plain\r\n\r\n");
		filler(m, "alt", 10);
		mt_buf_appendf(m, "--inner\r\nContent-Type: text/html\r\n\r\n<p>");
		filler(m, "<b>html</b>", 10);
		mt_buf_appendf(m, "</p>\r\n--inner--\r\n--outer\r\nContent-Type: message/rfc822\r\n\r\n"
			       "From: inner@example.com\r\nSubject: attached\r\n"
			       "Content-Type: text/plain\r\n\r\n");
		filler(m, "inner", 12);
		mt_buf_appendf(m, "--outer--\r\n");
		break;
	case 3:
		mt_buf_appendf(m, "Subject: Re: lorem 0\r\nIn-Reply-To: <msg0@example.org>\r\n"
			       "References: <msg0@example.org>\r\nReply-To: list@example.org\r\n"
			       "MIME-Version: 1.0\r\nContent-Type: multipart/signed; "
			       "boundary=sig; protocol=\"application/pgp-signature\"\r\n\r\n"
			       "--sig\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n");
		filler(m, "signed", 20);
		mt_buf_appendf(m, "--sig\r\nContent-Type: application/pgp-signature\r\n\r\n"
			       "-----BEGIN PGP SIGNATURE-----\r\nAAAA\r\n"
			       "-----END PGP SIGNATURE-----\r\n--sig--\r\n");
		break;
	default:
		mt_buf_appendf(m, "Subject: tiny\r\n\r\nhi\r\n");
		break;
	}
}

/* Put value under key in the IMAP directory's cache, as a directory
 * answer would be (dirsvc-results.c's encodings). */
static void fixture_prime(const char *address)
{
	struct mt_dircache *cache = fixture_dirsvc_imap->cache;
	FUZZ_CHECK(cache != NULL, "the directory has no cache");
	struct mt_buf v = MT_BUF_INIT;
	/* auth: account, then "address\0shard\0" */
	mt_buf_append(&v, "\0", 1);	/* MT_DIRSVC_ACTIVE */
	mt_buf_append(&v, address, strlen(address) + 1);
	mt_buf_append(&v, "s1", 3);
	mt_dircache_auth_put(cache, FIXTURE_LOGIN, FIXTURE_PASSWORD, v.data, v.len,
			     FIXTURE_TTL_MS);
	/* recipient: quota (8 octets, host order), account, has_forward,
	 * then "address\0shard\0forward\0" */
	mt_buf_reset(&v);
	uint64_t quota = FIXTURE_QUOTA;
	mt_buf_append(&v, &quota, 8);
	mt_buf_append(&v, "\0\0", 2);
	mt_buf_append(&v, address, strlen(address) + 1);
	mt_buf_append(&v, "s1\0", 4);
	mt_dircache_put(cache, address, strlen(address), v.data, v.len, false,
			FIXTURE_TTL_MS);
	mt_buf_free(&v);
}

/* The user's folder list as one string (everything a command can change). */
static void fixture_state_get(struct mt_buf *out)
{
	struct mt_store_folder *folders;
	unsigned int count;
	const char *error;
	mt_buf_reset(out);
	FUZZ_CHECK(mt_store_folders_list_sync(fixture.store, fixture_user, &folders, &count,
					      &error) == MT_STORE_OK, "list: %s", error);
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_store_folder *f = &folders[i];
		mt_buf_appendf(out, "%s %d%d%d %u %u %u %u %u %llu %llu\n", f->name, f->exists,
			       f->subscribed, (int)f->special_use, f->uidvalidity, f->uidnext,
			       f->messages, f->seen, f->deleted, (unsigned long long)f->bytes,
			       (unsigned long long)f->highest_modseq);
	}
	mt_store_folders_free(&folders, count);
}

/* Mailbox u<generation>: primed in the cache, the messages delivered, the
 * first-login folders made, its state kept. */
static void fixture_mailbox_new(void)
{
	const char *error;
	snprintf(fixture_user, sizeof(fixture_user), "u%u@example.test", ++fixture_generation);
	for (unsigned int n = 0; n < FIXTURE_MESSAGES; n++) {
		static const char *const keywords[] = { "$Important" };
		struct mt_buf m = MT_BUF_INIT;
		fixture_message(&m, n);
		struct mt_store_rcpt r = {
			.mailbox = fixture_user,
			.flags = n == 0 ? MT_STORE_FLAG_SEEN :
				n == 2 ? MT_STORE_FLAG_SEEN | MT_STORE_FLAG_FLAGGED : 0,
			.keywords = n == 2 ? keywords : NULL, .keyword_count = n == 2,
			.arrival = 1796000000 + (int64_t)n * 86400,
		};
		FUZZ_CHECK(mt_store_deliver_wait(fixture.store, &r, 1, m.data, m.len, &error) ==
			   MT_STORE_OK && r.status == MT_STORE_OK, "deliver: %s", error);
		mt_buf_free(&m);
	}
	const struct mt_store_folder_args prepare = {
		.change = MT_STORE_FOLDER_PREPARE, .user = fixture_user, .folder_max = 100,
	};
	FUZZ_CHECK(mt_store_folder_change_wait(fixture.store, &prepare, &error) == MT_STORE_OK,
		   "prepare: %s", error);
	fixture_prime(fixture_user);
	fixture_state_get(&fixture_state);
}

/* An input changed the mailbox: empty the user's mailboxes (their bodies
 * go to the purger; the records stay) and start a fresh one. */
static void fixture_mailbox_retire(void)
{
	struct mt_store_folder *folders;
	unsigned int count;
	const char *error;
	if (mt_store_folders_list_sync(fixture.store, fixture_user, &folders, &count,
				       &error) != MT_STORE_OK)
		count = 0;
	/* Last name first: a folder's inferiors go before it. */
	for (unsigned int i = count; i-- > 0;) {
		const struct mt_store_folder_args del = {
			.change = MT_STORE_FOLDER_DELETE, .user = fixture_user,
			.name = folders[i].name,
		};
		if (folders[i].exists && strcmp(folders[i].name, "INBOX") != 0)
			(void)mt_store_folder_change_wait(fixture.store, &del, &error);
	}
	if (count > 0)
		mt_store_folders_free(&folders, count);
	struct mt_store_mailbox *mbox;
	if (mt_store_folder_open_sync(fixture.store, fixture_user, "INBOX", &mbox,
				      &error) == MT_STORE_OK) {
		unsigned int n = mt_store_mailbox_count(mbox);
		uint32_t *uids = mt_xcalloc(n + 1, sizeof(*uids));
		for (unsigned int i = 0; i < n; i++)
			uids[i] = mt_store_mailbox_msg(mbox, i)->uid;
		if (n > 0)
			(void)mt_store_expunge_wait(mbox, uids, n, &error);
		free(uids);
		mt_store_mailbox_close(&mbox);
	}
	fixture_mailbox_new();
}

static struct popstore *fixture_get(void)
{
	static bool ready;
	if (ready)
		return &fixture;
	const char *dir = fuzz_daemon_dir("fuzz-popstore");
	atexit(fixture_free);
	char conf[1024];
	snprintf(conf, sizeof(conf),
		 "[shards]\ns1 = 127.0.0.1:1, 127.0.0.1:2\n[mta]\nlocal_domains = example.test\n"
		 "[directory]\nuris = ldap://127.0.0.1:1\nbase_dn = dc=example,dc=test\n"
		 "timeout = 300ms\npool_size = 1\n"
		 "[popstore]\nshard = s1\ndb_home = %s/store\ndb_cache_size = 4M\n"
		 "lmtp_listen = 127.0.0.1:1\npop3_listen = 127.0.0.1:1\n"
		 "lmtp_clients = 127.0.0.0/8\nmax_errors = 5\nauth_fail_delay = 0\n"
		 "idle_timeout = 60s\n", dir);
	fixture.config = fuzz_daemon_config(dir, conf);
	fixture.set = mt_config_get(fixture.config, "popstore", NULL);
	fixture.global = mt_config_get(fixture.config, "global", NULL);
	fixture.shard = "s1";
	fixture.hostname = mt_xstrdup("fuzz.test");
	fixture.lmtp_clients = popstore_parse_cidrs(&fixture.set->lmtp_clients, &fixture.n_lmtp_clients);
	const char *error;
	fixture.loop = mt_loop_new(&error);
	FUZZ_CHECK(fixture.loop != NULL, "loop: %s", error);
	popstore_open_store(&fixture);
	const struct mt_directory_settings *dset =
		mt_config_get(fixture.config, "directory", NULL);
	fixture.dirsvc = mt_dirsvc_new(dset, fixture.config, &error);
	FUZZ_CHECK(fixture.dirsvc != NULL, "dirsvc: %s", error);
	fixture_dirsvc_imap = mt_dirsvc_new(dset, fixture.config, &error);
	FUZZ_CHECK(fixture_dirsvc_imap != NULL, "dirsvc: %s", error);
	fixture_dir_plain = mt_dirsvc_client_new(fixture.dirsvc, fixture.loop);
	fixture_dir_imap = mt_dirsvc_client_new(fixture_dirsvc_imap, fixture.loop);
	fixture_mailbox_new();
	ready = true;
	return &fixture;
}

static unsigned int session_count(void *context)
{
	return ((struct popstore *)context)->sessions;
}

/* An IMAP session waits on the store or the directory (its answer goes
 * on with the pipelined input); an APPEND's message still arriving is not
 * busy unless chunks of it are being written (the rest may never come). */
static bool imap_busy(void *context)
{
	struct popstore *ps = context;
	for (struct mt_conn *c = ps->imap_sessions.head; c != NULL; c = c->next) {
		const struct imap_session *s = (const struct imap_session *)
			((const char *)c - offsetof(struct imap_session, conn));
		if (mt_conn_is_closed(c))
			continue;
		if (s->state == IMAP_STATE_WAIT || s->state == IMAP_STATE_LOGIN ||
		    s->store_req != NULL || s->refresh_req != NULL || s->dir_req != NULL ||
		    s->fetch != NULL || s->search != NULL ||
		    (s->append_body != NULL && mt_store_body_writes(s->append_body) > 0))
			return true;
	}
	return false;
}

/* Did the client send tag (len octets) at the start of one of its lines? */
static bool imap_tag_sent(const uint8_t *in, size_t in_len, const char *tag, size_t len)
{
	const uint8_t *p = in, *end = in + in_len;
	while (p < end) {
		if ((size_t)(end - p) >= len && memcmp(p, tag, len) == 0 &&
		    ((size_t)(end - p) == len || p[len] == ' ' || p[len] == '\r' ||
		     p[len] == '\n'))
			return true;
		const uint8_t *lf = memchr(p, '\n', (size_t)(end - p));
		if (lf == NULL)
			break;
		p = lf + 1;
	}
	return false;
}

/* The literal's length if the line (without CRLF) ends "{n}" or "~{n}". */
static bool imap_literal_at_end(const char *p, size_t len, size_t *n_r)
{
	if (len < 3 || p[len - 1] != '}')
		return false;
	size_t i = len - 1, n = 0, scale = 1;
	while (i > 0 && p[i - 1] >= '0' && p[i - 1] <= '9' && len - i < 12) {
		n += (size_t)(p[i - 1] - '0') * scale;
		scale *= 10;
		i--;
	}
	if (i == len - 1 || i == 0 || p[i - 1] != '{')
		return false;
	*n_r = n;
	return true;
}

/* What an IMAP session sent (see the header): the greeting, then
 * responses; a last one may still have been on its way. */
static void imap_check_responses(const struct mt_buf *got, const uint8_t *in, size_t in_len)
{
	static const char greeting[] = "* OK [CAPABILITY ";
	const char *p = got->data, *end = got->data + got->len;
	FUZZ_CHECK(got->len >= sizeof(greeting) - 1 &&
		   memcmp(p, greeting, sizeof(greeting) - 1) == 0, "no greeting");
	while (p < end) {
		const char *start = p;
		bool untagged = end - p >= 2 && p[0] == '*' && p[1] == ' ';
		/* One response: its lines, each maybe followed by a literal. */
		for (;;) {
			const char *lf = memchr(p, '\n', (size_t)(end - p));
			if (lf == NULL)
				return;
			FUZZ_CHECK(lf > p && lf[-1] == '\r', "bare LF in a response");
			size_t len = (size_t)(lf - 1 - p);
			FUZZ_CHECK(memchr(p, '\r', len) == NULL && memchr(p, '\0', len) == NULL,
				   "CR or NUL in a response line: %.*s", (int)len, p);
			size_t n;
			if (!untagged || !imap_literal_at_end(p, len, &n)) {
				p = lf + 1;
				break;
			}
			if ((size_t)(end - (lf + 1)) < n)
				return;
			p = lf + 1 + n;
		}
		size_t len = (size_t)(p - start);
		if (untagged)
			continue;
		FUZZ_CHECK(len <= FUZZ_REPLY_MAX, "reply of %zu octets: %.60s", len, start);
		if (start[0] == '+')
			continue;
		const char *sp = memchr(start, ' ', len - 2);
		FUZZ_CHECK(sp != NULL && sp > start, "not a response: %.*s", (int)len - 2, start);
		size_t tag_len = (size_t)(sp - start);
		FUZZ_CHECK(imap_tag_sent(in, in_len, start, tag_len),
			   "tag the client did not send: %.*s", (int)len - 2, start);
		const char *status = sp + 1;
		size_t rest = (size_t)(start + len - 2 - status);
		bool ok = false;
		static const char *const statuses[] = { "OK", "NO", "BAD" };
		for (size_t i = 0; i < 3 && !ok; i++) {
			size_t sl = strlen(statuses[i]);
			ok = rest >= sl && memcmp(status, statuses[i], sl) == 0 &&
				(rest == sl || status[sl] == ' ');
		}
		FUZZ_CHECK(ok, "tagged reply not OK/NO/BAD: %.*s", (int)len - 2, start);
	}
}

/* After an IMAP input: if it changed the mailbox, start a fresh one. */
static void imap_mailbox_restore(void)
{
	struct mt_buf now = MT_BUF_INIT;
	fixture_state_get(&now);
	if (now.len != fixture_state.len || memcmp(now.data, fixture_state.data, now.len) != 0)
		fixture_mailbox_retire();
	mt_buf_free(&now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct popstore *ps = fixture_get();
	bool imap = (data[0] & 8) != 0, pop3 = !imap && (data[0] & 1) != 0;
	bool bytewise = (data[0] & 2) != 0;
	static struct mt_cidr loopback;
	static bool loopback_parsed;
	const char *error;
	if (!loopback_parsed)
		FUZZ_CHECK(mt_cidr_parse("127.0.0.0/8", &loopback, &error), "cidr");
	loopback_parsed = true;
	ps->proxy_addresses = (data[0] & 4) != 0 ? &loopback : NULL;
	ps->n_proxy_addresses = (data[0] & 4) != 0 ? 1 : 0;
	ps->dir = imap ? fixture_dir_imap : fixture_dir_plain;
	data++;
	size--;

	struct mt_store_counters before, after;
	mt_store_counters_get(ps->store, &before);
	int sv[2];
	FUZZ_CHECK(test_peer_pair(sv), "socketpair");
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1234),
				    .sin_addr.s_addr = htonl(0x7f000001) };
	if (imap)
		imap_session_accept(ps, sv[0], (struct sockaddr *)&peer, false);
	else if (pop3)
		pop3_session_accept(ps, sv[0], (struct sockaddr *)&peer, false);
	else
		lmtp_session_accept(ps, sv[0], (struct sockaddr *)&peer);
	FUZZ_CHECK(ps->sessions == 1, "session not started");
	struct fuzz_daemon_session fs = { ps->loop, session_count, ps };
	struct mt_buf got = MT_BUF_INIT;
	fuzz_daemon_client_busy(&fs, imap ? imap_busy : NULL, sv[1], data, size, bytewise,
				&got);
	if (getenv("FUZZ_VERBOSE") != NULL)	/* as standalone-main.c: show the replies */
		fprintf(stderr, "%.*s\n", (int)got.len, mt_buf_cstr(&got));
	FUZZ_CHECK(ps->lmtp_sessions.count == 0 && ps->pop3_sessions.count == 0 &&
		   ps->imap_sessions.count == 0, "sessions still listed");
	if (imap) {
		imap_check_responses(&got, data, size);
		imap_mailbox_restore();
	} else {
		fuzz_check_lines(&got, pop3 ? "+OK mailtier-popstore ready\r\n" :
				 "220 fuzz.test LMTP", !pop3);
		mt_store_counters_get(ps->store, &after);
		FUZZ_CHECK(after.deliveries == before.deliveries,
			   "a delivery without a recipient");
	}
	mt_buf_free(&got);
	return 0;
}
