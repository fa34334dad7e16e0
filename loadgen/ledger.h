/* ledger.h — the message ledger (`run --ledger FILE`, `sink --ledger
 * FILE`): one text line per message the generator sent (acknowledged with
 * 250 after the data, or not), per copy it retrieved by POP3 RETR, per
 * POP3 session whose QUIT was acknowledged (its DELEs are then durable),
 * and per message its sink accepted, each with the message's id header
 * value and a SHA-256 digest (OpenSSL EVP), so a separate check
 * (tests/faults/ledger_check.py) can count what was acknowledged, delivered,
 * lost, duplicated and corrupted across a fault.
 *
 * The digest. Sent: every octet of the message as generated and queued
 * after the 354 (headers and body, CRLF line ends; the generated text never
 * needs dot-stuffing), the final "." line excluded. Received: the message
 * text as received, un-dot-stuffed, each line with CRLF, minus the trace
 * fields the servers put on top (RFC 5321 4.4: the leading "Return-Path:"
 * and "Received:" fields with their continuation lines, up to the first
 * other line). The generator's first header is never a trace field, so a
 * byte-exact delivery has the same digest on both sides; an overlong or
 * malformed received line makes the digest differ.
 *
 * Lines (fields separated by one space; ids and addresses hold none):
 *   ledger 1 RUN PID                      once per open (RUN: 16 hex digits)
 *   TIME sent ID DIGEST RCPT,RCPT,...     250 after the data
 *   TIME unacked ID DIGEST|- RCPT,...     the data was begun, no 250 came
 *                                         ("-": the final "." never went out,
 *                                         so the server cannot have it)
 *   TIME pop ID MAILBOX DIGEST SESSION    a RETR's data complete
 *   TIME commit SESSION                   that POP3 session's QUIT got +OK
 *   TIME sink ID DIGEST RCPT,RCPT,...     the sink accepted a message
 * TIME is Unix time in seconds with milliseconds; ID is "-" for a message
 * without our id header; SESSION is "PID.N", unique across the files of a
 * run. Lines are written whole (line-buffered), so the file can be read
 * while the generator runs.
 *
 * Trust boundary: received text comes from the system under test; it is
 * only digested, and the values written (id, recipients) are cut to their
 * bound and have control characters and blanks replaced. */
#ifndef LG_LEDGER_H
#define LG_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workload.h"

struct lg_ledger;
struct lg_ledger_tx;
struct lg_ledger_rx;

/* Open (append to) path; run is the run id for the first line. */
struct lg_ledger *lg_ledger_open(const char *path, uint64_t run,
				 const char **error_r);
void lg_ledger_close(struct lg_ledger **ledger_p);
/* A new POP3 session number. */
uint64_t lg_ledger_session_no(struct lg_ledger *ledger);

/* ---- sending ---- */
struct lg_ledger_tx *lg_ledger_tx_new(void);
void lg_ledger_tx_free(struct lg_ledger_tx **tx_p);
/* A message's data begins (after the 354). */
void lg_ledger_tx_begin(struct lg_ledger_tx *tx);
/* Octets queued for it (a struct lg_body_gen tap). */
void lg_ledger_tx_update(void *tx, const void *data, size_t len);
/* The message (id, plan) got its 250 (acked) or will never get one;
 * complete: its final "." was queued. Once per lg_ledger_tx_begin. */
void lg_ledger_sent(struct lg_ledger *ledger, struct lg_ledger_tx *tx,
		    const char *id, const struct lg_workload *wl,
		    const struct lg_message_plan *plan, bool acked,
		    bool complete);
/* true between lg_ledger_tx_begin and lg_ledger_sent. */
bool lg_ledger_tx_pending(const struct lg_ledger_tx *tx);

/* ---- receiving ---- */
struct lg_ledger_rx *lg_ledger_rx_new(void);
void lg_ledger_rx_free(struct lg_ledger_rx **rx_p);
/* A message's text begins. */
void lg_ledger_rx_begin(struct lg_ledger_rx *rx);
/* One line of it, un-dot-stuffed, without its CRLF. */
void lg_ledger_rx_line(struct lg_ledger_rx *rx, const char *line, size_t len);
/* A line the reader could not take (overlong, NUL, bare CR). */
void lg_ledger_rx_bad_line(struct lg_ledger_rx *rx);
/* The sink's recipients: the argument of RCPT after "TO:", and a reset. */
void lg_ledger_rx_add_rcpt(struct lg_ledger_rx *rx, const char *arg);
void lg_ledger_rx_clear_rcpts(struct lg_ledger_rx *rx);
/* The message is complete: a "pop" line (mailbox, session) or a "sink"
 * line (the recipients given). */
void lg_ledger_pop(struct lg_ledger *ledger, struct lg_ledger_rx *rx,
		   const char *mailbox, uint64_t session);
void lg_ledger_sink(struct lg_ledger *ledger, struct lg_ledger_rx *rx);
/* A POP3 session's QUIT was answered +OK: its deletions are final. */
void lg_ledger_commit(struct lg_ledger *ledger, uint64_t session);

#endif
