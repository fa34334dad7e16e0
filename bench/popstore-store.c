/* popstore-store.c — benchmark of the popstore message store alone (no
 * network): deliveries/s of ~24 KB messages at 1, 8 and 32 concurrent
 * producers and log flushes per delivery, medians of 3 runs; then the cost
 * of the read side (mailbox open, body reads, async RETR streaming) on the
 * store the last run filled.
 *
 * Each producer is a session on one event loop, as LMTP sessions share the
 * daemon's loop: it hands a message (per-recipient Return-Path/Received
 * prefix + a 24 KB body) to mt_store_deliver() and sends the next one from
 * the completion, i.e. after the delivery is durable. Every run uses a
 * fresh store in its own directory (fsync on, as in production).
 *
 * usage: popstore-store [-d PARENT_DIR] [-s BYTES] [-t SECS] [-p 1,8,32]
 *                       [-r RUNS] [-c COMMIT_THREADS] [-m MAILBOXES]
 * Trust boundary: a benchmark tool; its directories are its own. */
#include "store.h"
#include "buf.h"
#include "log.h"
#include "loop.h"

#include <event2/event.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PRODUCERS 1024
#define MAX_RUNS 15

struct options {
	const char *parent;
	size_t size;
	unsigned int secs, runs, commit_threads, mailboxes;
	unsigned int producers[16], producer_sets;
};

struct producer {
	struct bench *bench;
	char mailbox[32];
	char prefix[256];
	double started;
};

struct bench {
	const struct options *opt;
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_store_port *port;
	const char *body;
	struct producer producers[MAX_PRODUCERS];
	unsigned int in_flight;
	bool stopping;
	uint64_t done, failed, seq;
	double first, last;
	double *latencies;
	size_t latency_count, latency_cap;
	uint32_t rng;
};

struct result {
	double per_sec, flushes_per_delivery, p50_ms, p99_ms;
	uint64_t deliveries, max_batch;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	return remove(path);
}

static void producer_send(struct producer *p);

static void deliver_cb(struct mt_store_req *req, void *context)
{
	struct producer *p = context;
	struct bench *b = p->bench;
	double t = now();
	if (mt_store_req_status(req, NULL) == MT_STORE_OK) {
		b->done++;
		if (b->latency_count == b->latency_cap) {
			b->latency_cap = b->latency_cap ? b->latency_cap * 2 : 4096;
			b->latencies = realloc(b->latencies,
					       b->latency_cap * sizeof(double));
		}
		b->latencies[b->latency_count++] = t - p->started;
	} else
		b->failed++;
	b->last = t;
	b->in_flight--;
	if (!b->stopping)
		producer_send(p);
	else if (b->in_flight == 0)
		event_base_loopbreak(b->base);
}

static void producer_send(struct producer *p)
{
	struct bench *b = p->bench;
	b->rng = b->rng * 1103515245u + 12345u;
	snprintf(p->mailbox, sizeof(p->mailbox), "user%u@bench.test",
		 (b->rng >> 8) % b->opt->mailboxes);
	int n = snprintf(p->prefix, sizeof(p->prefix),
		"Return-Path: <sender@bench.test>\r\n"
		"Received: from mta.bench.test by store.bench.test with LMTP id %" PRIu64
		"\r\n\tfor <%s>; Mon, 1 Jan 2024 00:00:00 +0000\r\n", b->seq++, p->mailbox);
	struct mt_buf body = MT_BUF_INIT;
	mt_buf_append(&body, b->body, b->opt->size);
	struct mt_store_rcpt rcpt = {
		.mailbox = p->mailbox, .prefix = p->prefix, .prefix_len = (size_t)n,
	};
	p->started = now();
	b->in_flight++;
	(void)mt_store_deliver(b->port, &rcpt, 1, &body, deliver_cb, p);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct bench *b = arg;
	b->stopping = true;
	if (b->in_flight == 0)
		event_base_loopbreak(b->base);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct mt_store *store_open(const char *home, unsigned int commit_threads)
{
	struct mt_store_settings set = {
		.home = home, .mode = MT_STORE_MODE_SERVE, .create = true,
		.commit_threads = commit_threads,
	};
	struct mt_store *store;
	const char *error;
	if (mt_store_open(&set, &store, &error) != MT_STORE_OK) {
		fprintf(stderr, "%s\n", error);
		exit(1);
	}
	return store;
}

/* One timed run; leaves the store open in *store_r when asked. */
static struct result run_once(const struct options *opt, const char *body,
			      unsigned int producers, const char *home,
			      struct mt_store **store_r)
{
	struct mt_store *store = store_open(home, opt->commit_threads);
	struct bench *b = calloc(1, sizeof(*b));
	const char *error;
	b->opt = opt;
	b->body = body;
	b->rng = (uint32_t)getpid();
	if ((b->loop = mt_loop_new(&error)) == NULL)
		mt_fatal("%s", error);
	b->base = mt_loop_base(b->loop);
	b->port = mt_store_port_new(store, b->loop, &error);
	struct event *stop = evtimer_new(b->base, stop_cb, b);
	struct timeval tv = { opt->secs, 0 };
	evtimer_add(stop, &tv);
	b->first = now();
	for (unsigned int i = 0; i < producers; i++) {
		b->producers[i].bench = b;
		producer_send(&b->producers[i]);
	}
	event_base_dispatch(b->base);

	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	struct result r = {
		.deliveries = b->done, .max_batch = c.max_batch,
		.per_sec = (double)b->done / (b->last - b->first),
		.flushes_per_delivery = (double)c.flushes / (double)c.deliveries,
	};
	qsort(b->latencies, b->latency_count, sizeof(double), cmp_double);
	if (b->latency_count > 0) {
		r.p50_ms = b->latencies[b->latency_count / 2] * 1000;
		r.p99_ms = b->latencies[b->latency_count * 99 / 100] * 1000;
	}
	if (b->failed > 0)
		fprintf(stderr, "warning: %" PRIu64 " deliveries failed\n", b->failed);
	event_free(stop);
	mt_store_port_free(&b->port);
	mt_loop_free(&b->loop);
	free(b->latencies);
	free(b);
	if (store_r != NULL)
		*store_r = store;
	else
		mt_store_close(&store);
	return r;
}

struct read_state {
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_store_port *port;
	struct mt_store_mailbox *mbox;
	unsigned int index;
	uint64_t offset, bytes;
	bool done;
};

static void read_cb(struct mt_store_req *req, void *context)
{
	struct read_state *rs = context;
	size_t size;
	(void)mt_store_req_data(req, &size);
	rs->bytes += size;
	rs->offset += size;
	if (size == 0) {
		rs->index++;
		rs->offset = 0;
	}
	if (rs->index >= mt_store_mailbox_count(rs->mbox)) {
		rs->done = true;
		event_base_loopbreak(rs->base);
		return;
	}
	(void)mt_store_read(rs->port, rs->mbox, rs->index, rs->offset, 65536,
			    read_cb, rs);
}

static void open_cb(struct mt_store_req *req, void *context)
{
	struct read_state *rs = context;
	rs->mbox = mt_store_req_mailbox(req);
	event_base_loopbreak(rs->base);
}

/* The read side on a filled store: sync open and reads (what a loop would
 * wait for if it read inline), then async POP-like sessions. */
static void read_side(struct mt_store *store, unsigned int mailboxes)
{
	char name[64];
	double t0 = now(), opens = 0, open_time = 0, read_time = 0;
	uint64_t msgs = 0, chunks = 0, bytes = 0;
	char *buf = malloc(65536);
	for (unsigned int m = 0; m < mailboxes && m < 300; m++) {
		snprintf(name, sizeof(name), "user%u@bench.test", m);
		struct mt_store_mailbox *mbox;
		const char *error;
		double t = now();
		if (mt_store_mailbox_open_sync(store, name, &mbox, &error) != MT_STORE_OK)
			continue;
		open_time += now() - t;
		opens++;
		msgs += mt_store_mailbox_count(mbox);
		for (unsigned int i = 0; i < mt_store_mailbox_count(mbox); i++) {
			for (uint64_t off = 0;;) {
				size_t got;
				t = now();
				(void)mt_store_read_sync(mbox, i, off, buf, 65536, &got,
							 &error);
				read_time += now() - t;
				if (got == 0)
					break;
				chunks++;
				off += got;
				bytes += got;
			}
		}
		mt_store_mailbox_close(&mbox);
	}
	free(buf);
	printf("read side (sync, warm cache): mailbox open %.1f us avg (%.1f messages "
	       "each), 64 KB body read %.1f us avg, %.0f MB/s\n",
	       open_time / opens * 1e6, (double)msgs / opens,
	       read_time / (double)chunks * 1e6,
	       (double)bytes / read_time / 1e6);
	(void)t0;

	/* Async: open + RETR every message in 64 KB pieces, one session. */
	struct read_state rs = { .loop = NULL };
	const char *error;
	if ((rs.loop = mt_loop_new(&error)) == NULL)
		mt_fatal("%s", error);
	rs.base = mt_loop_base(rs.loop);
	rs.port = mt_store_port_new(store, rs.loop, &error);
	double t = now();
	unsigned int sessions = 0;
	for (unsigned int m = 0; m < mailboxes && m < 300; m++) {
		snprintf(name, sizeof(name), "user%u@bench.test", m);
		rs.mbox = NULL;
		(void)mt_store_mailbox_open(rs.port, name, open_cb, &rs);
		event_base_dispatch(rs.base);
		if (rs.mbox == NULL)
			continue;
		rs.index = 0;
		rs.offset = 0;
		rs.done = mt_store_mailbox_count(rs.mbox) == 0;
		if (!rs.done) {
			(void)mt_store_read(rs.port, rs.mbox, 0, 0, 65536, read_cb, &rs);
			event_base_dispatch(rs.base);
		}
		mt_store_mailbox_close(&rs.mbox);
		sessions++;
	}
	double elapsed = now() - t;
	printf("read side (async via reader threads, one session at a time): "
	       "%.0f open+RETR-all sessions/s, %.0f MB/s\n",
	       (double)sessions / elapsed, (double)rs.bytes / elapsed / 1e6);
	mt_store_port_free(&rs.port);
	mt_loop_free(&rs.loop);
}

static void parse_producers(struct options *opt, const char *list)
{
	opt->producer_sets = 0;
	char *copy = strdup(list), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok != NULL && opt->producer_sets < 16;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int n = (unsigned int)atoi(tok);
		if (n == 0 || n > MAX_PRODUCERS) {
			fprintf(stderr, "bad producer count %s\n", tok);
			exit(2);
		}
		opt->producers[opt->producer_sets++] = n;
	}
	free(copy);
}

int main(int argc, char **argv)
{
	struct options opt = {
		.parent = "/var/tmp", .size = 24 * 1024, .secs = 5, .runs = 3,
		.commit_threads = 1, .mailboxes = 1000,
	};
	parse_producers(&opt, "1,8,32");
	int ch;
	while ((ch = getopt(argc, argv, "d:s:t:p:r:c:m:")) != -1) {
		switch (ch) {
		case 'd': opt.parent = optarg; break;
		case 's': opt.size = (size_t)atol(optarg); break;
		case 't': opt.secs = (unsigned int)atoi(optarg); break;
		case 'p': parse_producers(&opt, optarg); break;
		case 'r': opt.runs = (unsigned int)atoi(optarg); break;
		case 'c': opt.commit_threads = (unsigned int)atoi(optarg); break;
		case 'm': opt.mailboxes = (unsigned int)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DIR] [-s BYTES] [-t SECS] "
				"[-p 1,8,32] [-r RUNS] [-c COMMIT_THREADS] [-m MAILBOXES]\n",
				argv[0]);
			return 2;
		}
	}
	if (opt.runs == 0 || opt.runs > MAX_RUNS || opt.secs == 0 || opt.mailboxes == 0) {
		fprintf(stderr, "bad -r, -t or -m\n");
		return 2;
	}
	mt_log_init("popstore-store", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	char *body = malloc(opt.size + 1);
	for (size_t i = 0; i < opt.size; i++)
		body[i] = (i % 76 == 74) ? '\r' : (i % 76 == 75) ? '\n' : (char)('a' + i % 26);

	printf("popstore store benchmark: %zu-byte bodies (+ ~170-byte trace "
	       "prefix), %u s per run, %u runs, %u mailboxes, commit_threads=%u, "
	       "stores under %s\n", opt.size, opt.secs, opt.runs, opt.mailboxes,
	       opt.commit_threads, opt.parent);
	printf("%10s %14s %18s %10s %10s %10s\n", "producers", "deliveries/s",
	       "flushes/delivery", "p50 ms", "p99 ms", "max batch");
	struct mt_store *last_store = NULL;
	/* Removed at the end: deleting (and discarding) hundreds of MB while
	 * the next run measures fsync latency would skew it. */
	static char homes[16 * MAX_RUNS][512];
	unsigned int home_count = 0;
	for (unsigned int s = 0; s < opt.producer_sets; s++) {
		struct result r[MAX_RUNS];
		for (unsigned int i = 0; i < opt.runs; i++) {
			char home[512];
			snprintf(home, sizeof(home), "%s/mt-bench-store.XXXXXX", opt.parent);
			if (mkdtemp(home) == NULL) {
				perror(home);
				return 1;
			}
			bool keep = s + 1 == opt.producer_sets && i + 1 == opt.runs;
			/* Start from a quiet disk: the previous run's dirty pages
			 * written back, not competing with this one's fsyncs. */
			sync();
			sleep(1);
			r[i] = run_once(&opt, body, opt.producers[s], home,
					keep ? &last_store : NULL);
			printf("%10u %14.0f %18.3f %10.2f %10.2f %10" PRIu64 "   (run %u)\n",
			       opt.producers[s], r[i].per_sec, r[i].flushes_per_delivery,
			       r[i].p50_ms, r[i].p99_ms, r[i].max_batch, i + 1);
			fflush(stdout);
			snprintf(homes[home_count++], sizeof(homes[0]), "%s", home);
		}
		double per_sec[MAX_RUNS], fpd[MAX_RUNS];
		for (unsigned int i = 0; i < opt.runs; i++) {
			per_sec[i] = r[i].per_sec;
			fpd[i] = r[i].flushes_per_delivery;
		}
		qsort(per_sec, opt.runs, sizeof(double), cmp_double);
		qsort(fpd, opt.runs, sizeof(double), cmp_double);
		printf("%10u %14.0f %18.3f   median of %u\n", opt.producers[s],
		       per_sec[opt.runs / 2], fpd[opt.runs / 2], opt.runs);
		fflush(stdout);
	}
	if (last_store != NULL) {
		read_side(last_store, opt.mailboxes);
		mt_store_close(&last_store);
	}
	for (unsigned int i = 0; i < home_count; i++)
		(void)nftw(homes[i], rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(body);
	return 0;
}
