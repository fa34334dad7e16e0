/* mmp-backend.h — what mmp-backend.c (the connection to a shard, its
 * deadline, its lines, the POP3 login dialogue) shares with
 * mmp-backend-imap.c (the IMAP login dialogue). Private to the backend.
 *
 * Trust boundary: as mmp-backend.c: the shard's lines are bounded and
 * checked for shape before anything is passed on. */
#ifndef MT_MMP_BACKEND_H
#define MT_MMP_BACKEND_H

#include "mmp.h"

struct mt_buf;

enum backend_step {
	STEP_CONNECT,		/* connecting, or waiting for the greeting */
	STEP_AUTH_CONTINUE,	/* POP3: sent "AUTH PLAIN", waiting for "+ " */
	STEP_AUTH,		/* POP3: sent the PLAIN response, waiting for +OK */
	STEP_IMAP_LOGIN,	/* IMAP: sent ID and AUTHENTICATE, waiting for its OK */
};

struct mmp_backend {
	struct mmp_session *sess;
	struct mmp_shard *shard;
	unsigned int site;
	enum mmp_protocol protocol;
	struct bufferevent *bev;
	struct event *timer;
	struct mt_line_reader reader;
	mmp_backend_cb_t *cb;
	enum backend_step step;
	const char *fail_reason;	/* static; set before a deferred failure */
	char *address;
};

/* Report the outcome; the callback frees or takes the backend. */
void mmp_backend_finish(struct mmp_backend *b, enum mmp_backend_status status,
			const char *line, const char *reason);
/* prefix, then response (if not NULL), then CRLF, to the shard. */
void mmp_backend_send(struct mmp_backend *b, const char *prefix,
		      const struct mt_buf *response);
/* The base64 PLAIN message: authzid = the user, authcid = the proxy. */
void mmp_backend_plain_response(struct mmp_backend *b, struct mt_buf *out);

/* mmp-backend-imap.c: one line from an IMAP shard; false when the backend
 * is finished (and possibly freed). */
bool mmp_backend_imap_line(struct mmp_backend *b, const char *line, size_t len);

#endif
