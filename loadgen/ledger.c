/* ledger.c — the message ledger (see ledger.h for the file format and the
 * digest's definition).
 * Trust boundary: received text and the sink's RCPT arguments come from
 * the system under test: they are digested, or written cut to a bound with
 * every octet outside printable ASCII (and the space) replaced by '?', so
 * a line of the ledger is always one well-formed line. */
#include "ledger.h"

#include "errors.h"
#include "alloc.h"
#include "buf.h"
#include "log.h"
#include "tracker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/evp.h>

#define DIGEST_HEX (2 * 32 + 1)
#define ADDRESS_MAX 320		/* a value written: cut here */
#define RCPTS_MAX 1000		/* the sink's recipients written per message */

struct lg_ledger {
	FILE *file;
	uint64_t sessions;
	struct mt_buf line;
};

struct lg_ledger_tx {
	EVP_MD_CTX *md;
	bool pending;
};

struct lg_ledger_rx {
	EVP_MD_CTX *md;
	bool in_headers;
	bool in_trace;		/* still in the servers' leading trace fields */
	bool bad;		/* a line the reader could not take */
	char id[LG_ID_MAX];
	bool have_id;
	struct mt_buf rcpts;	/* "a,b,c" */
	unsigned int n_rcpts;
};

static EVP_MD_CTX *md_new(void)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (md == NULL)
		mt_panic("out of memory creating a digest");
	return md;
}

static void md_init(EVP_MD_CTX *md)
{
	if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		mt_panic("SHA-256 is not available");
}

static void md_hex(EVP_MD_CTX *md, char hex[DIGEST_HEX])
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (EVP_DigestFinal_ex(md, digest, &len) != 1 || len != 32)
		mt_panic("SHA-256 failed");
	for (unsigned int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

/* Append value[0..len) with anything but printable ASCII replaced. */
static void append_clean(struct mt_buf *out, const char *value, size_t len)
{
	if (len == 0) {
		mt_buf_append_char(out, '-');
		return;
	}
	if (len > ADDRESS_MAX)
		len = ADDRESS_MAX;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		mt_buf_append_char(out, c > ' ' && c < 0x7f && c != ',' ? (char)c : '?');
	}
}

/* Start a ledger line with the time and the kind. */
static struct mt_buf *line_begin(struct lg_ledger *ledger, const char *kind)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	mt_buf_reset(&ledger->line);
	mt_buf_appendf(&ledger->line, "%lld.%03ld %s", (long long)tv.tv_sec,
		       (long)(tv.tv_usec / 1000), kind);
	return &ledger->line;
}

static void line_end(struct lg_ledger *ledger)
{
	mt_buf_append_char(&ledger->line, '\n');
	if (fwrite(ledger->line.data, 1, ledger->line.len, ledger->file) !=
	    ledger->line.len || fflush(ledger->file) != 0)
		mt_panic("writing the ledger: %s", strerror(errno));
}

struct lg_ledger *lg_ledger_open(const char *path, uint64_t run,
				 const char **error_r)
{
	struct lg_ledger *ledger;
	FILE *file = fopen(path, "a");

	if (file == NULL) {
		*error_r = lg_error_fmt("--ledger %s: %s", path, strerror(errno));
		return NULL;
	}
	ledger = mt_xcalloc(1, sizeof(*ledger));
	ledger->file = file;
	mt_buf_init(&ledger->line);
	mt_buf_appendf(&ledger->line, "ledger 1 %016" PRIx64 " %ld", run, (long)getpid());
	line_end(ledger);
	return ledger;
}

void lg_ledger_close(struct lg_ledger **ledger_p)
{
	struct lg_ledger *ledger = *ledger_p;

	if (ledger == NULL)
		return;
	fclose(ledger->file);
	mt_buf_free(&ledger->line);
	MT_FREE(ledger_p);
}

uint64_t lg_ledger_session_no(struct lg_ledger *ledger)
{
	return ++ledger->sessions;
}

/* ---- sending ---- */

struct lg_ledger_tx *lg_ledger_tx_new(void)
{
	struct lg_ledger_tx *tx = mt_xcalloc(1, sizeof(*tx));

	tx->md = md_new();
	return tx;
}

void lg_ledger_tx_free(struct lg_ledger_tx **tx_p)
{
	if (*tx_p == NULL)
		return;
	EVP_MD_CTX_free((*tx_p)->md);
	MT_FREE(tx_p);
}

void lg_ledger_tx_begin(struct lg_ledger_tx *tx)
{
	md_init(tx->md);
	tx->pending = true;
}

void lg_ledger_tx_update(void *context, const void *data, size_t len)
{
	struct lg_ledger_tx *tx = context;

	if (tx->pending && EVP_DigestUpdate(tx->md, data, len) != 1)
		mt_panic("SHA-256 failed");
}

bool lg_ledger_tx_pending(const struct lg_ledger_tx *tx)
{
	return tx != NULL && tx->pending;
}

void lg_ledger_sent(struct lg_ledger *ledger, struct lg_ledger_tx *tx,
		    const char *id, const struct lg_workload *wl,
		    const struct lg_message_plan *plan, bool acked,
		    bool complete)
{
	char hex[DIGEST_HEX], address[ADDRESS_MAX];
	struct mt_buf *line;

	if (!tx->pending)
		return;
	tx->pending = false;
	md_hex(tx->md, hex);
	line = line_begin(ledger, acked ? "sent" : "unacked");
	mt_buf_appendf(line, " %s %s ", id, acked || complete ? hex : "-");
	for (unsigned int i = 0; i < plan->n_rcpts; i++) {
		lg_format_address(address, sizeof(address), wl,
				  plan->rcpts[i].remote, plan->rcpts[i].user);
		if (i > 0)
			mt_buf_append_char(line, ',');
		append_clean(line, address, strlen(address));
	}
	if (plan->n_rcpts == 0)
		mt_buf_append_char(line, '-');
	line_end(ledger);
}

/* ---- receiving ---- */

struct lg_ledger_rx *lg_ledger_rx_new(void)
{
	struct lg_ledger_rx *rx = mt_xcalloc(1, sizeof(*rx));

	rx->md = md_new();
	mt_buf_init(&rx->rcpts);
	return rx;
}

void lg_ledger_rx_free(struct lg_ledger_rx **rx_p)
{
	if (*rx_p == NULL)
		return;
	EVP_MD_CTX_free((*rx_p)->md);
	mt_buf_free(&(*rx_p)->rcpts);
	MT_FREE(rx_p);
}

void lg_ledger_rx_begin(struct lg_ledger_rx *rx)
{
	md_init(rx->md);
	rx->in_headers = true;
	rx->in_trace = true;
	rx->bad = false;
	rx->have_id = false;
	rx->id[0] = '\0';
}

static bool is_field(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len >= n && strncasecmp(line, name, n) == 0;
}

void lg_ledger_rx_line(struct lg_ledger_rx *rx, const char *line, size_t len)
{
	if (rx->in_trace) {
		/* RFC 5322 2.2.3: a continuation line begins with WSP. */
		bool continued = len > 0 && (line[0] == ' ' || line[0] == '\t');
		if (continued || is_field(line, len, "Return-Path:") ||
		    is_field(line, len, "Received:"))
			return;
		rx->in_trace = false;
	}
	if (rx->in_headers) {
		size_t value_len;
		const char *value;
		if (len == 0)
			rx->in_headers = false;
		else if (!rx->have_id &&
			 (value = lg_id_header_value(line, len, &value_len)) != NULL &&
			 value_len < sizeof(rx->id)) {
			memcpy(rx->id, value, value_len);
			rx->id[value_len] = '\0';
			rx->have_id = true;
		}
	}
	if (EVP_DigestUpdate(rx->md, line, len) != 1 ||
	    EVP_DigestUpdate(rx->md, "\r\n", 2) != 1)
		mt_panic("SHA-256 failed");
}

void lg_ledger_rx_bad_line(struct lg_ledger_rx *rx)
{
	rx->bad = true;
	rx->in_trace = false;
}

void lg_ledger_rx_add_rcpt(struct lg_ledger_rx *rx, const char *arg)
{
	const char *p = arg, *end;

	if (rx->n_rcpts >= RCPTS_MAX)
		return;
	/* "TO:<address> [parameters]" (RFC 5321 4.1.1.3). */
	if (strncasecmp(p, "TO:", 3) == 0)
		p += 3;
	while (*p == ' ')
		p++;
	if (*p == '<') {
		p++;
		end = strchr(p, '>');
	} else {
		end = NULL;
	}
	if (end == NULL)
		end = p + strcspn(p, " ");
	if (rx->n_rcpts++ > 0)
		mt_buf_append_char(&rx->rcpts, ',');
	append_clean(&rx->rcpts, p, (size_t)(end - p));
}

void lg_ledger_rx_clear_rcpts(struct lg_ledger_rx *rx)
{
	mt_buf_reset(&rx->rcpts);
	rx->n_rcpts = 0;
}

/* The received digest, or "bad-" and it when a line was unreadable (so it
 * can never match a sent one). */
static void append_rx_digest(struct mt_buf *line, struct lg_ledger_rx *rx)
{
	char hex[DIGEST_HEX];

	md_hex(rx->md, hex);
	mt_buf_appendf(line, " %s%s", rx->bad ? "bad-" : "", hex);
}

void lg_ledger_pop(struct lg_ledger *ledger, struct lg_ledger_rx *rx,
		   const char *mailbox, uint64_t session)
{
	struct mt_buf *line = line_begin(ledger, "pop");

	mt_buf_append_char(line, ' ');
	append_clean(line, rx->id, strlen(rx->id));
	mt_buf_append_char(line, ' ');
	append_clean(line, mailbox, strlen(mailbox));
	append_rx_digest(line, rx);
	mt_buf_appendf(line, " %ld.%" PRIu64, (long)getpid(), session);
	line_end(ledger);
}

void lg_ledger_sink(struct lg_ledger *ledger, struct lg_ledger_rx *rx)
{
	struct mt_buf *line = line_begin(ledger, "sink");

	mt_buf_append_char(line, ' ');
	append_clean(line, rx->id, strlen(rx->id));
	append_rx_digest(line, rx);
	mt_buf_append_char(line, ' ');
	if (rx->rcpts.len > 0)
		mt_buf_append(line, rx->rcpts.data, rx->rcpts.len);
	else
		mt_buf_append_char(line, '-');
	line_end(ledger);
}

void lg_ledger_commit(struct lg_ledger *ledger, uint64_t session)
{
	struct mt_buf *line = line_begin(ledger, "commit");

	mt_buf_appendf(line, " %ld.%" PRIu64, (long)getpid(), session);
	line_end(ledger);
}
