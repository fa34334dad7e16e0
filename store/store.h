/* store.h — the message store of one popstore shard: mailboxes of messages
 * in a transactional Berkeley DB 5.3 environment, behind one small interface
 * so that the LMTP and POP3 code never call Berkeley DB themselves.
 *
 * Trust boundary: mailbox names come from the caller after a directory
 * lookup (opaque bytes here, at most MT_STORE_MAILBOX_MAX, no NUL); message
 * bytes come from LMTP clients and are stored and returned byte for byte,
 * never parsed. The files under the store's home are used only if their
 * format-version record is one this code reads.
 *
 * What it guarantees:
 *  - A delivery or an expunge completes with MT_STORE_OK only once its
 *    transaction is on stable storage. Transactions commit without a sync
 *    each and one log flush on the storage thread makes a whole group of
 *    them durable (group commit), so the LMTP 250 / POP +OK to QUIT may be
 *    sent from the completion callback.
 *  - A delivery to one mailbox, and an expunge of a set of uids, is all or
 *    nothing: no half-written message is ever visible, also after a crash,
 *    a full disk or a Berkeley DB panic. Recovery runs at open.
 *  - Message metadata (uid, size, UIDL, arrival) lives apart from bodies, so
 *    a mailbox listing (STAT/LIST/UIDL) never reads a body; bodies are stored
 *    in chunks and read by range, so RETR of a 2.6 MB message can stream.
 *  - A body is written as it arrives (mt_store_body_*): each full chunk in
 *    a transaction of its own that commits without a log flush, so memory
 *    per delivery is a few chunks whatever the message's size. Such a
 *    body is made durable by its delivery: the recipients' transactions
 *    (the last partial chunk with the first) commit after every chunk, and
 *    the group-commit flush that completes the delivery writes the log up
 *    to its end, which covers every earlier commit (the log is
 *    sequential). One body is shared by all the recipients of a delivery,
 *    each with its own prefix, and purged with the last of their messages.
 *  - A body never delivered does not keep its disk space: an abort queues
 *    its chunks for the purger, and what a crash left half-written (a
 *    body with no delivery, recorded in partial.db from its first chunk)
 *    is queued at the next open (SERVE mode, after recovery).
 *  - An expunge is lazy: its durable transaction removes the messages from
 *    every listing and read (and their bytes from the mailbox's total and
 *    quota) and queues their bodies, which a store thread purges later in
 *    batches that need no flush of their own; a crash only delays the
 *    purge (the queue is durable with the expunge). The store's disk space
 *    is reusable once a body is purged; mt_store_stat's purge_* show the
 *    backlog.
 *  - UIDLs are stored with each message and never change.
 *  - A mailbox is open at most once in the process (MT_STORE_IN_USE).
 *
 * Threading: the async calls are made from the thread that runs the
 * event loop of the port they use, and their callbacks run on that thread,
 * never from inside the call. The work itself runs on the store's threads
 * (one group-commit pipeline for writes, a small reader pool for reads), so
 * an event loop never waits on the disk. The _sync and _wait calls block
 * the calling thread: for tools, tests and worker threads. (A mailbox open
 * and a 64 KB read take ~30-100 us from the cache, but milliseconds when
 * they miss it: the POP3 code should use the async calls.) */
#ifndef MT_POPSTORE_STORE_H
#define MT_POPSTORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_loop;
struct mt_buf;
struct mt_series;
struct mt_store;
struct mt_store_body;
struct mt_store_port;
struct mt_store_req;
struct mt_store_mailbox;

/* The one outcome type. The protocol replies are the caller's. */
enum mt_store_status {
	MT_STORE_OK = 0,
	MT_STORE_NOT_FOUND,	/* no such message or mailbox */
	MT_STORE_IN_USE,	/* mailbox open elsewhere: -ERR [IN-USE] */
	MT_STORE_OVER_QUOTA,	/* 552 5.2.2 (or 452 4.2.2 if configured) */
	MT_STORE_NO_SPACE,	/* disk full: 452 4.3.1, -ERR [SYS/TEMP] */
	MT_STORE_TEMPFAIL,	/* other temporary failure: 451 4.3.0, -ERR [SYS/TEMP] */
	MT_STORE_FATAL,		/* Berkeley DB panic (DB_RUNRECOVERY): the daemon
				   must exit non-zero; restarting recovers */
	MT_STORE_BAD_FORMAT,	/* open: not a store, or a format this code refuses */
	MT_STORE_INVALID,	/* bad argument or setting */
	/* Folders (format 5): IMAP's [ALREADYEXISTS], [HASCHILDREN], [LIMIT]. */
	MT_STORE_EXISTS,	/* CREATE/RENAME: the name is taken */
	MT_STORE_HAS_CHILDREN,	/* DELETE: the folder has inferiors */
	MT_STORE_LIMIT,		/* folders per user, keywords per folder */
};

/* "ok", "not-found", "in-use", "over-quota", "no-space", "tempfail",
 * "fatal", "bad-format", "invalid", "exists", "has-children", "limit"
 * (for log lines). */
const char *mt_store_status_name(enum mt_store_status status);

/* Opening */

enum mt_store_mode {
	/* The daemon: recovery if needed, storage threads, async API. */
	MT_STORE_MODE_SERVE,
	/* mailtierctl: join the environment (also while the daemon runs, or
	 * recover it if its owner died), no threads: stat and backup only. */
	MT_STORE_MODE_ADMIN,
};

struct mt_store_settings {
	const char *home;		/* the environment directory (db_home) */
	enum mt_store_mode mode;
	bool create;			/* SERVE: create home and a new store if absent */
	uint64_t cache_size;		/* db_cache_size; 0: 64 MB */
	unsigned int checkpoint_secs;	/* 0: 60 */
	unsigned int commit_threads;	/* transaction executors; 0: 1 */
	unsigned int reader_threads;	/* 0: 2 */
	uint64_t log_file_size;		/* 0: 64 MB (tests use small ones) */
	/* How long the purger lets expunged bodies gather before a round
	 * (SERVE mode); 0: 50 ms. Tests use a long one to crash before it. */
	unsigned int purge_delay_msecs;
	/* How long a delivery id is remembered (store-dedupe.c): a second
	 * delivery with the same id to the same mailbox within it is answered
	 * as delivered, not stored again. 0: 3600 s. */
	unsigned int redelivery_window_secs;
	/* Most messages in one mailbox (INBOX or a folder): a delivery,
	 * APPEND, COPY or MOVE beyond it is refused MT_STORE_LIMIT. 0: none. */
	uint64_t max_mailbox_messages;
	/* SERVE mode: this store is one site of a replication group
	 * (store-repl.c); NULL: a store of one site, as before. ADMIN mode:
	 * non-NULL says the store is such a site, which is then opened only
	 * while its daemon runs (a reader joins the environment; an open that
	 * found it abandoned would run recovery without replication, HA.md
	 * 5.3), else MT_STORE_TEMPFAIL with what to do. */
	const struct mt_store_replication *replication;
};

/* A replicated shard (HA.md; store-repl.c): every site a full
 * copy, one master. mt_store_open() then returns once the site has joined
 * its group, perhaps as a replica: the store serves (the databases open,
 * the threads run) only from the moment it is master, and a master that
 * loses that role is "demoted" and must be closed (the daemon exits 75 and
 * restarts as a replica; the close leaves its databases to that restart's
 * recovery, HA.md 2.5). A positive outcome then means the change is on
 * the master's disk and on a replica's: a commit the replicas did not
 * acknowledge completes MT_STORE_TEMPFAIL ("not replicated"), and until
 * one is acknowledged again every positive outcome waits for a commit that
 * is (HA.md 5.2, the trap of an answer resting on unreplicated work). */
struct mt_store_replication {
	const char *listen;		/* this site, "host:port" (one of sites) */
	const char *const *sites;	/* every site of the group, this one too */
	size_t site_count;		/* 1, or at least 3 */
	unsigned int priority;		/* election priority; 0: 100 */
	unsigned int ack_timeout_ms;	/* 0: 1000 */
	/* The group's very first start, on one site only (never on a site
	 * whose data was lost: it would found a second group). */
	bool create_group;
	/* Log files are removed only once older than this and beyond this
	 * much newer log, so a site away for less catches up from the log.
	 * 0: 6 h and 2 GiB. */
	uint64_t log_retention_secs;
	uint64_t log_retention_bytes;
	const char *name;		/* log prefix ("store store1"); "store" */
};

/* Open (and, in SERVE mode, recover) the store. A store whose format version
 * is not MT_STORE_FORMAT_VERSION is refused with MT_STORE_BAD_FORMAT and a
 * message naming both versions, except versions 1 to 3, which SERVE mode
 * upgrades in place (one transaction: the databases they lack created —
 * purge.db for 1, delivered.db for 1 and 2, refs.db and partial.db for 1
 * to 3 — and the version record set to 4; older code then refuses the
 * store; their messages stay as they were written and read as before) and
 * ADMIN mode reads as they are.
 * *error_r is valid until the thread's next store call. */
enum mt_store_status mt_store_open(const struct mt_store_settings *set,
				   struct mt_store **store_r,
				   const char **error_r);
/* Free the ports and close the mailboxes first. Requests still queued are
 * finished (deliveries committed and flushed, callbacks not called), the
 * threads stopped, a checkpoint taken and the environment closed. */
void mt_store_close(struct mt_store **store_p);
/* True once Berkeley DB asked for recovery (DB_RUNRECOVERY; every request
 * then completes with MT_STORE_FATAL): answer 451/-ERR [SYS/TEMP], log, and
 * exit non-zero, with or without mt_store_close(); the restart's open runs
 * recovery (systemd Restart=on-failure). */
bool mt_store_failed(struct mt_store *store);

#define MT_STORE_FORMAT_VERSION 5
#define MT_STORE_MAILBOX_MAX 255
#define MT_STORE_UIDL_MAX 70		/* RFC 1939: 1 to 70 characters */
#define MT_STORE_READ_MAX (1024 * 1024)	/* largest range one read returns */

/* Completion ports: one per event loop (thread) that makes async calls;
 * completions reach the loop through mt_loop_post(). A port may be freed
 * with requests in flight: they still run, their callbacks are not
 * called. Never fails today; error_r is kept for the callers' shape. */
struct mt_store_port *mt_store_port_new(struct mt_store *store,
					struct mt_loop *loop,
					const char **error_r);
void mt_store_port_free(struct mt_store_port **port_p);

/* An async request. The store owns it; it is valid from the call until its
 * callback returns (then freed), or until cancelled. */
typedef void mt_store_cb_t(struct mt_store_req *req, void *context);
/* The callback will not be called (the work may still happen: a delivery
 * cancelled in flight may be committed). From the port's thread only. */
void mt_store_req_cancel(struct mt_store_req *req);
/* The request's outcome, with a message for logs when not MT_STORE_OK. */
enum mt_store_status mt_store_req_status(const struct mt_store_req *req,
					 const char **error_r);

/* Delivery */

struct mt_store_rcpt {
	const char *mailbox;		/* created at its first delivery */
	uint64_t quota;			/* bytes; 0: unlimited */
	/* Lines stored before the shared body for this recipient only (e.g.
	 * its Return-Path:/Received: "for <rcpt>"); may be NULL/0. */
	const char *prefix;
	size_t prefix_len;
	/* The sender's id of this delivery (LMTP: the client's LHLO name and
	 * its XQUEUEID), or NULL. A delivery whose id the mailbox already got
	 * within redelivery_window (an MTA that was killed, or lost the
	 * connection, after the store committed and before it recorded the
	 * 250) is not stored again: it succeeds with the first copy's uid
	 * and duplicate set. */
	const char *delivery_id;
	/* IMAP APPEND (RFC 9051 6.3.12; format 5): the user's folder (NULL or
	 * "INBOX": the INBOX above), which must exist (NOT_FOUND: the client's
	 * [TRYCREATE]); the message's flags and keywords (atoms the caller
	 * checked; LIMIT if the folder cannot name one more) and INTERNALDATE
	 * (0: now). The quota counts all of the user's folders. */
	const char *folder;
	uint32_t flags;
	const char *const *keywords;
	unsigned int keyword_count;
	int64_t arrival;
	/* Results, one per recipient: the LMTP reply after DATA. */
	enum mt_store_status status;
	uint32_t uid;
	uint32_t uidvalidity;		/* of the mailbox it went to (APPENDUID) */
	bool duplicate;
};

/* Streamed delivery: a body written as it arrives, then delivered (or
 * aborted). From the port's thread:
 *
 *	body = mt_store_body_begin(port, written_cb, session);
 *	mt_store_body_append(body, data, len);	   as data arrives; while
 *	    mt_store_body_writes(body) >= 2, stop reading (written_cb says when
 *	    a write is done)
 *	req = mt_store_body_deliver(&body, rcpts, n, delivered_cb, session);
 *	    or mt_store_body_abort(&body);
 *
 * Appends copy into the body's chunk buffer; each full chunk is written in
 * its own transaction on the commit thread, committed without a log flush.
 * A failed write fails the delivery (every recipient gets its status); the
 * appends after it write nothing. */
typedef void mt_store_body_cb_t(struct mt_store_body *body, void *context);
/* A new body with a fresh body id; cb (or NULL) is called on the port's
 * thread after each chunk write, until the body is delivered or aborted. */
struct mt_store_body *mt_store_body_begin(struct mt_store_port *port,
					  mt_store_body_cb_t *cb, void *context);
void mt_store_body_append(struct mt_store_body *body, const void *data,
			  size_t size);
/* Chunk writes handed to the store whose callbacks have not run yet: the
 * caller's back-pressure (each holds one chunk of memory). */
unsigned int mt_store_body_writes(const struct mt_store_body *body);
/* Bytes appended so far. */
uint64_t mt_store_body_size(const struct mt_store_body *body);
/* Deliver the body (prefixed per recipient) to each recipient's mailbox,
 * each in its own transaction, once its chunk writes are done, then make
 * them durable; as mt_store_deliver below. Takes the body (*body_p NULL);
 * with no recipient stored, the body is aborted. */
struct mt_store_req *mt_store_body_deliver(struct mt_store_body **body_p,
					   const struct mt_store_rcpt *rcpts,
					   unsigned int count, mt_store_cb_t *cb,
					   void *context);
/* Drop the body (*body_p NULL): what was written is queued for the purger
 * once its writes are done; no callback of it runs any more. */
void mt_store_body_abort(struct mt_store_body **body_p);

/* Deliver body (prefixed per recipient) to each recipient's mailbox, each in
 * its own transaction, then make them durable. Takes the contents of body
 * (left empty) and copies rcpts. Completes when all are durable or failed;
 * the request status is the first failing recipient's. A streamed body
 * written in one go (mt_store_body_*). */
struct mt_store_req *mt_store_deliver(struct mt_store_port *port,
				      const struct mt_store_rcpt *rcpts,
				      unsigned int count, struct mt_buf *body,
				      mt_store_cb_t *cb, void *context);
/* The recipients with their results (valid as the request). */
const struct mt_store_rcpt *mt_store_req_rcpts(const struct mt_store_req *req,
					       unsigned int *count_r);
/* The same, blocking until durable, results written into rcpts; data is
 * copied chunk by chunk. Goes through the group-commit thread (SERVE mode). */
enum mt_store_status mt_store_deliver_wait(struct mt_store *store,
					   struct mt_store_rcpt *rcpts,
					   unsigned int count, const void *data,
					   size_t size, const char **error_r);

/* Mailboxes: a snapshot of one mailbox's messages, taken at open, holding
 * the mailbox's in-process lock until closed. Messages delivered later are
 * not in the snapshot (RFC 1939 leaves that to the server). */

struct mt_store_msg {
	uint32_t uid;
	uint64_t size;			/* exact octets as stored */
	int64_t arrival;		/* Unix time of delivery (INTERNALDATE) */
	char uidl[MT_STORE_UIDL_MAX + 1];
	/* IMAP's (format 5; a message stored before reads as none, MODSEQ 1). */
	uint32_t flags;			/* MT_STORE_FLAG_* */
	uint64_t keywords;		/* bit i: the mailbox's keyword i */
	uint64_t modseq;		/* RFC 7162 MODSEQ of its last change */
};

/* Open name's mailbox (an absent one opens empty; it is not created). The
 * callback takes the result with mt_store_req_mailbox(). MT_STORE_IN_USE if
 * it is open already. */
struct mt_store_req *mt_store_mailbox_open(struct mt_store_port *port,
					   const char *name, mt_store_cb_t *cb,
					   void *context);
/* Hand over the opened mailbox (once; NULL on failure). If the callback
 * does not take it, it is closed. */
struct mt_store_mailbox *mt_store_req_mailbox(struct mt_store_req *req);
enum mt_store_status mt_store_mailbox_open_sync(struct mt_store *store,
						const char *name,
						struct mt_store_mailbox **mbox_r,
						const char **error_r);
/* Release the lock (once requests still using it have finished). */
void mt_store_mailbox_close(struct mt_store_mailbox **mbox_p);

const char *mt_store_mailbox_name(const struct mt_store_mailbox *mbox);
unsigned int mt_store_mailbox_count(const struct mt_store_mailbox *mbox);
uint64_t mt_store_mailbox_bytes(const struct mt_store_mailbox *mbox);
/* Message index (0-based: POP message number - 1) of the snapshot. */
const struct mt_store_msg *mt_store_mailbox_msg(const struct mt_store_mailbox *mbox,
						unsigned int index);

/* Read up to max (<= MT_STORE_READ_MAX) bytes of message index from offset;
 * fewer only at the end (0 bytes: offset is the end). The callback gets the
 * bytes from mt_store_req_data(), valid until it returns. NOT_FOUND if the
 * message was expunged meanwhile. */
struct mt_store_req *mt_store_read(struct mt_store_port *port,
				   struct mt_store_mailbox *mbox,
				   unsigned int index, uint64_t offset,
				   size_t max, mt_store_cb_t *cb, void *context);
const void *mt_store_req_data(const struct mt_store_req *req, size_t *size_r);
enum mt_store_status mt_store_read_sync(struct mt_store_mailbox *mbox,
					unsigned int index, uint64_t offset,
					void *buf, size_t max, size_t *size_r,
					const char **error_r);

/* The MIME structure record of message index (lib-mail's
 * imap-bodystructure.h: ENVELOPE, BODY, BODYSTRUCTURE, the part table),
 * made at delivery and shared by every copy of the body; for a message
 * stored before records were kept, scanned from its octets now. Its
 * offsets count from the shared body: add *shift_r (the octets stored
 * before it for this recipient, which belong to the top header) for the
 * message's. The result is valid as the request is (in the callback). */
struct mt_store_req *mt_store_structure(struct mt_store_port *port,
					struct mt_store_mailbox *mbox, unsigned int index,
					mt_store_cb_t *cb, void *context);
const void *mt_store_req_structure(const struct mt_store_req *req, size_t *len_r,
				   uint64_t *shift_r);
/* The same, waited for: the record appended to record_r. */
enum mt_store_status mt_store_structure_sync(struct mt_store_mailbox *mbox, unsigned int index,
					     struct mt_buf *record_r, uint64_t *shift_r,
					     const char **error_r);

/* Remove these uids from the mailbox in one transaction and make it durable
 * (POP3 UPDATE state); uids already gone are ignored. Their bodies are
 * purged afterwards by the store (see above). */
struct mt_store_req *mt_store_expunge(struct mt_store_port *port,
				      struct mt_store_mailbox *mbox,
				      const uint32_t *uids, unsigned int count,
				      mt_store_cb_t *cb, void *context);
enum mt_store_status mt_store_expunge_wait(struct mt_store_mailbox *mbox,
					   const uint32_t *uids,
					   unsigned int count,
					   const char **error_r);

/* IMAP's folders, flags and MODSEQs (format 5).
 *
 * A user's mailboxes are INBOX — the record a delivery and POP3 name by
 * the directory's mailbox name, untouched by the upgrade from format 4 —
 * and folders named in UTF-8 with MT_IMAP_DELIMITER '/' levels, checked
 * and put in normal form by the caller (lib-mail/imap-mailbox.h: "INBOX"
 * spelled so for the inbox, no control characters, no empty level);
 * here a folder name is opaque bytes of 1 to MT_STORE_FOLDER_MAX. Each
 * mailbox has its UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ and counts (messages,
 * \Seen, \Deleted, bytes) kept in the transaction of every change;
 * every delivery, flag change and expunge takes the next MODSEQ of its
 * mailbox, and an expunge leaves the uids it removed under its MODSEQ
 * (RFC 7162 QRESYNC's VANISHED (EARLIER)) until the folder is deleted.
 * A folder (or INBOX) open for IMAP is a snapshot as a POP3 mailbox is,
 * but shared: any number of IMAP sessions may have it open, beside the
 * one POP3 session the exclusive open allows (RFC 1939's lock is among
 * POP3 sessions); a folder open anywhere is not deleted or renamed. */

#define MT_STORE_FOLDER_MAX 1024	/* octets of a folder name */
#define MT_STORE_KEYWORDS_MAX 64	/* keywords one mailbox can name */
#define MT_STORE_KEYWORD_MAX 64		/* octets of one keyword */

/* System flags (RFC 9051 2.3.2), in mt_store_msg.flags. */
#define MT_STORE_FLAG_SEEN 0x01u
#define MT_STORE_FLAG_ANSWERED 0x02u
#define MT_STORE_FLAG_FLAGGED 0x04u
#define MT_STORE_FLAG_DELETED 0x08u
#define MT_STORE_FLAG_DRAFT 0x10u
#define MT_STORE_FLAGS_ALL 0x1fu
/* Their IMAP names ("\\Seen", ...), in bit order. */
struct mt_store_flag_name {
	uint32_t bit;
	const char *name;
};
#define MT_STORE_FLAG_COUNT 5
extern const struct mt_store_flag_name mt_store_flag_names[MT_STORE_FLAG_COUNT];

/* RFC 6154 special-use attributes, one per folder. */
enum mt_store_special_use {
	MT_STORE_USE_NONE = 0,
	MT_STORE_USE_SENT,
	MT_STORE_USE_DRAFTS,
	MT_STORE_USE_TRASH,
	MT_STORE_USE_JUNK,
	MT_STORE_USE_ARCHIVE,
};
/* "\\Sent", ... (NULL for NONE): the attribute as LIST writes it. */
const char *mt_store_special_use_name(enum mt_store_special_use use);

/* One line of a user's LIST: a mailbox, or a subscription to a name that
 * is no mailbox (exists false: LIST-EXTENDED's \NonExistent). */
struct mt_store_folder {
	char *name;			/* "INBOX" or the folder's name */
	bool exists, subscribed;
	enum mt_store_special_use special_use;
	uint32_t uidvalidity, uidnext;
	uint32_t messages, seen, deleted;
	uint64_t bytes;
	uint64_t highest_modseq;
};

/* Every mailbox and subscription of user, INBOX first, then in byte order
 * of their names (a user who never got mail still has an empty INBOX).
 * The result (mt_store_req_folders) is valid as the request. */
struct mt_store_req *mt_store_folders_list(struct mt_store_port *port,
					   const char *user, mt_store_cb_t *cb,
					   void *context);
const struct mt_store_folder *mt_store_req_folders(const struct mt_store_req *req,
						   unsigned int *count_r);
/* Blocking: *folders_r freed with mt_store_folders_free. */
enum mt_store_status mt_store_folders_list_sync(struct mt_store *store,
						const char *user,
						struct mt_store_folder **folders_r,
						unsigned int *count_r,
						const char **error_r);
void mt_store_folders_free(struct mt_store_folder **folders_p,
			   unsigned int count);

/* The folder changes, each one durable transaction (group commit) before
 * its callback. As requests, they return only a status. */
enum mt_store_folder_change {
	/* CREATE name (RFC 9051 6.3.4) with special_use: EXISTS if taken,
	 * LIMIT if the user has folder_max folders (0: no limit). Its
	 * UIDVALIDITY is new, never one the name had before. Creates no
	 * superior (a name's levels need not exist, as RFC 9051 allows). */
	MT_STORE_FOLDER_CREATE,
	/* DELETE name: its messages expunged (bodies purged lazily) and the
	 * folder gone, its subscription kept (RFC 9051 6.3.5). HAS_CHILDREN
	 * if a folder below it exists; INVALID for INBOX; IN_USE while open. */
	MT_STORE_FOLDER_DELETE,
	/* RENAME name to new_name with every folder below it (RFC 9051
	 * 6.3.6), keeping their UIDVALIDITY and messages; EXISTS if a new name
	 * is taken, IN_USE while one is open. INBOX's messages move to a new
	 * folder new_name (they keep their UIDs and UIDLs there) and INBOX
	 * starts over empty with a new UIDVALIDITY; its inferiors stay. */
	MT_STORE_FOLDER_RENAME,
	/* SUBSCRIBE / UNSUBSCRIBE name (which need not exist). */
	MT_STORE_FOLDER_SUBSCRIBE,
	MT_STORE_FOLDER_UNSUBSCRIBE,
	/* The user's first IMAP login: Sent, Drafts, Trash, Junk and Archive
	 * created with their special-use attributes and subscribed, and INBOX
	 * subscribed, once (a mark in the INBOX record), so folders the user
	 * deleted later do not come back. name is ignored. */
	MT_STORE_FOLDER_PREPARE,
};

struct mt_store_folder_args {
	enum mt_store_folder_change change;
	const char *user;
	const char *name;
	const char *new_name;		/* RENAME */
	enum mt_store_special_use special_use;	/* CREATE */
	unsigned int folder_max;	/* CREATE, RENAME of INBOX, PREPARE */
};
struct mt_store_req *mt_store_folder_change(struct mt_store_port *port,
					    const struct mt_store_folder_args *args,
					    mt_store_cb_t *cb, void *context);
enum mt_store_status mt_store_folder_change_wait(struct mt_store *store,
						 const struct mt_store_folder_args *args,
						 const char **error_r);

/* Open user's mailbox name ("INBOX": the same mailbox as
 * mt_store_mailbox_open(user)) shared (never IN_USE), a snapshot as
 * above; NOT_FOUND for a folder that does not exist. */
struct mt_store_req *mt_store_folder_open(struct mt_store_port *port,
					  const char *user, const char *name,
					  mt_store_cb_t *cb, void *context);
enum mt_store_status mt_store_folder_open_sync(struct mt_store *store,
					       const char *user,
					       const char *name,
					       struct mt_store_mailbox **mbox_r,
					       const char **error_r);
/* The open mailbox's state as of its snapshot (or its own last change). */
uint32_t mt_store_mailbox_uidvalidity(const struct mt_store_mailbox *mbox);
uint32_t mt_store_mailbox_uidnext(const struct mt_store_mailbox *mbox);
uint64_t mt_store_mailbox_highest_modseq(const struct mt_store_mailbox *mbox);
/* Its keywords: bit i of mt_store_msg.keywords is keyword i; NULL past
 * the last. */
const char *mt_store_mailbox_keyword(const struct mt_store_mailbox *mbox,
				     unsigned int index);
/* The index of message uid in the snapshot, or -1. */
int mt_store_mailbox_find(const struct mt_store_mailbox *mbox, uint32_t uid);

/* STORE (RFC 9051 6.4.6, RFC 7162 3.1.3): change the flags of uids in one
 * durable transaction. Keywords are atoms the caller checked (RFC 9051
 * flag-keyword), compared case-insensitively and kept as first spelled;
 * a keyword the mailbox does not know yet is added to its table (LIMIT
 * when MT_STORE_KEYWORDS_MAX are named: nothing changes). Each message
 * whose flags change gets the one new MODSEQ of the transaction; with
 * unchanged_since set (CONDSTORE UNCHANGEDSINCE), a message whose MODSEQ
 * is above it is left alone and reported as modified. Uids that are gone
 * are skipped. On OK the mailbox's snapshot has the flags, keywords and
 * MODSEQs each message has now, changed by this STORE or found so (set by
 * another session since the snapshot), but for MODIFIED ones: the STORE's
 * untagged FETCH replies read them there (RFC 9051 6.4.6). */
enum mt_store_flag_op { MT_STORE_FLAGS_ADD, MT_STORE_FLAGS_REMOVE,
			MT_STORE_FLAGS_REPLACE };
struct mt_store_flag_args {
	enum mt_store_flag_op op;
	uint32_t flags;			/* MT_STORE_FLAG_* */
	const char *const *keywords;
	unsigned int keyword_count;
	uint64_t unchanged_since;	/* 0: none */
	const uint32_t *uids;
	unsigned int uid_count;
};
/* Per uid of the arguments (mt_store_req_flag_results, valid as the
 * request; in the _wait form written into results_r, uid_count of them). */
enum mt_store_flag_result {
	MT_STORE_FLAG_UNCHANGED,	/* its flags were already so */
	MT_STORE_FLAG_CHANGED,
	MT_STORE_FLAG_MODIFIED,		/* MODSEQ above unchanged_since */
	MT_STORE_FLAG_GONE,		/* expunged */
};
struct mt_store_req *mt_store_flags_store(struct mt_store_port *port,
					  struct mt_store_mailbox *mbox,
					  const struct mt_store_flag_args *args,
					  mt_store_cb_t *cb, void *context);
const enum mt_store_flag_result *mt_store_req_flag_results(
	const struct mt_store_req *req, unsigned int *count_r);
enum mt_store_status mt_store_flags_store_wait(struct mt_store_mailbox *mbox,
					       const struct mt_store_flag_args *args,
					       enum mt_store_flag_result *results_r,
					       const char **error_r);

/* QRESYNC (RFC 7162 3.2): the uids expunged from the open mailbox by
 * changes with a MODSEQ above since, ascending (each expunge left them
 * under its MODSEQ). The result (mt_store_req_vanished) is valid as the
 * request; the _sync form hands over *uids_r (free it). */
struct mt_store_req *mt_store_vanished(struct mt_store_port *port,
				       struct mt_store_mailbox *mbox, uint64_t since,
				       mt_store_cb_t *cb, void *context);
const uint32_t *mt_store_req_vanished(const struct mt_store_req *req,
				      unsigned int *count_r);
enum mt_store_status mt_store_vanished_sync(struct mt_store_mailbox *mbox,
					    uint64_t since, uint32_t **uids_r,
					    unsigned int *count_r, const char **error_r);

/* COPY / MOVE (RFC 9051 6.4.7, RFC 6851) uids of the open mailbox into
 * its user's mailbox dest ("INBOX" or a folder; the same one too), in one
 * durable transaction: each copy shares its original's body, keeps its
 * flags, keywords and INTERNALDATE, and gets dest's next uid, one new
 * MODSEQ and a UIDL of its own. NOT_FOUND if dest does not exist (the
 * client's [TRYCREATE]), OVER_QUOTA if a COPY would pass quota (all the
 * user's mailboxes; 0: none; a MOVE adds nothing), LIMIT if dest cannot
 * name one more keyword. A MOVE expunges the originals in the same
 * transaction. Uids that are gone are skipped. Results (UIDPLUS's
 * COPYUID): per uid its copy's uid (0: it was gone), and dest's
 * UIDVALIDITY. */
struct mt_store_copy_args {
	const uint32_t *uids;
	unsigned int uid_count;
	const char *dest;
	bool move;
	uint64_t quota;
};
struct mt_store_req *mt_store_copy(struct mt_store_port *port,
				   struct mt_store_mailbox *mbox,
				   const struct mt_store_copy_args *args,
				   mt_store_cb_t *cb, void *context);
const uint32_t *mt_store_req_copy_uids(const struct mt_store_req *req,
				       unsigned int *count_r,
				       uint32_t *uidvalidity_r);
enum mt_store_status mt_store_copy_wait(struct mt_store_mailbox *mbox,
					const struct mt_store_copy_args *args,
					uint32_t *new_uids_r,
					uint32_t *uidvalidity_r,
					const char **error_r);

/* Replication (a store opened with .replication; the others always
 * serve and are never demoted). */

/* Whether the store takes new sessions now: as master with a quorum of
 * its group connected (a master without one stops taking sessions: what
 * it would commit could not be acknowledged). false and why (for the
 * refusal: "replica of ..., master is HOST:PORT", "no master yet",
 * "master without a quorum") in why. Any thread; no Berkeley DB call. */
bool mt_store_serving(struct mt_store *store, char *why, size_t size);
/* The master lost its role: close the store and exit (75), to restart as a
 * replica (HA.md 5.3: open handles are dead after a rollback). Any thread. */
bool mt_store_demoted(struct mt_store *store);

/* What metrics and status commands show (refreshed each second and at
 * each role change; no Berkeley DB call). */
struct mt_store_repl_info {
	bool replicated;		/* false: the rest is zero */
	const char *role;		/* "master", "replica", "none" */
	char master[288];		/* "host:port"; "" when none known */
	char local[288];		/* this site */
	unsigned int sites, connected;	/* connected: the other sites */
	uint32_t generation;
	bool startup_done;		/* a replica applies live records */
	/* perm_failed: commits without acknowledgements — the group
	 * commit's batches answered "not replicated" (repmgr's own
	 * PERM_FAILED too, which its ACKS_NONE policy does not fire). */
	uint64_t elections, master_changes, perm_failed, internal_inits;
	uint64_t log_files_removed;
	/* Seconds since the oldest log file kept was last written: how long
	 * a site may be away and still catch up from the log (checked with
	 * each log removal, every minute; 0 until then). */
	uint64_t log_oldest_age_secs;
	/* The end of this site's log as a byte position, (file - 1) x
	 * log_file_size + offset: log records sit at the same LSN on every
	 * site of a group, so a replica's lag is its master's position less
	 * its own (5.3 shows no client's position on the master). Read each
	 * second. */
	uint64_t log_position;
};
void mt_store_repl_info_get(struct mt_store *store, struct mt_store_repl_info *info_r);
/* Observe how long each group-commit batch waited for the replicas'
 * acknowledgements (seconds) into histogram; NULL stops. */
void mt_store_observe_ack_latency(struct mt_store *store, struct mt_series *histogram);

/* Counters and administration */

/* This process's counters since open (SERVE mode). */
struct mt_store_counters {
	uint64_t deliveries;		/* messages made durable in a mailbox */
	uint64_t delivery_requests;
	uint64_t expunges;		/* expunge requests made durable */
	uint64_t expunged;		/* messages removed by them */
	uint64_t flushes;		/* group-commit log flushes */
	uint64_t flushed_requests;	/* requests those flushes completed */
	uint64_t max_batch;		/* most requests made durable by one flush */
	uint64_t retries;		/* transactions retried after a deadlock */
	uint64_t reads;			/* mailbox opens and body reads */
	uint64_t checkpoints;
	uint64_t purged;		/* expunged messages' bytes deleted by the purger */
	uint64_t purge_txns;		/* the purge transactions that did it */
	uint64_t chunk_writes;		/* streamed bodies' chunk transactions */
	uint64_t aborted;		/* bodies aborted (chunks queued for the purger) */
	uint64_t swept;			/* half-written bodies queued at open */
	/* Of the deliveries, redeliveries recognised within
	 * redelivery_window (not stored again), and the message bytes the
	 * others stored (once per recipient). */
	uint64_t duplicates;
	uint64_t bytes_stored;
	/* Not a counter: expunged messages whose bytes still wait for the
	 * purger now (store stat's purge_messages, kept without a scan). */
	uint64_t purge_backlog;
};
void mt_store_counters_get(struct mt_store *store,
			   struct mt_store_counters *counters_r);

/* What a scrape reads of the environment, cheaply (no scan): the cache's
 * page hits and misses and the log bytes written since the environment
 * was created (all processes), and whether the store is in no-space mode
 * now (store-space.c). false and an error on a Berkeley DB failure. */
struct mt_store_env_counters {
	uint64_t cache_hits, cache_misses, cache_bytes;
	uint64_t log_bytes;
	bool no_space;
	unsigned int mailboxes_open;	/* by sessions of this process now */
};
bool mt_store_env_counters_get(struct mt_store *store,
			       struct mt_store_env_counters *counters_r,
			       const char **error_r);
/* Observe each write request's latency (submitted → durable) into
 * histogram (lib/metrics.h); NULL stops. SERVE mode. */
void mt_store_observe_commit_latency(struct mt_store *store, struct mt_series *histogram);

/* `mailtierctl store stat`: contents, log and checkpoint state. */
struct mt_store_stat {
	uint32_t format_version;
	uint64_t mailboxes, messages, bytes;
	/* Expunged messages whose bytes still wait for the purger, and the
	 * bytes queued (theirs, and aborted or swept bodies'; not in bytes
	 * above; still on disk). */
	uint64_t purge_messages, purge_bytes;
	/* Bodies being written (a streamed delivery in progress), or left by
	 * a crash for the next open to purge, and the bytes of their chunks. */
	uint64_t partial_bodies, partial_bytes;
	uint32_t log_first_file;	/* oldest log file kept */
	uint32_t log_file, log_offset;	/* end of the log */
	unsigned int log_files;
	uint32_t ckp_file, ckp_offset;	/* last checkpoint */
	int64_t ckp_time;		/* its Unix time; 0: none yet */
	uint64_t env_log_flushes;	/* log syncs since the environment was */
	uint64_t env_commits;		/* created (all processes) */
	uint64_t cache_size, cache_hits, cache_misses;
};
/* Scans every mailbox record: a second or so for a million mailboxes. */
enum mt_store_status mt_store_stat_get(struct mt_store *store,
				       struct mt_store_stat *stat_r,
				       const char **error_r);
/* Purge every queued body now, from the calling thread (SERVE mode; for
 * tools and tests — the daemon's purger does it by itself) and make it
 * durable; *purged_r how many. */
enum mt_store_status mt_store_purge_sync(struct mt_store *store,
					 unsigned int *purged_r,
					 const char **error_r);
/* Hot backup into dir (absent or empty): checkpoint, copy the databases,
 * then the logs (log removal is held off meanwhile), then run catastrophic
 * recovery in dir, so dir opens as a store (normal recovery) right away. */
enum mt_store_status mt_store_backup(struct mt_store *store, const char *dir,
				     const char **error_r);

#endif
