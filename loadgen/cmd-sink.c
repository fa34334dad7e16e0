/* cmd-sink.c — `mailtier-load sink`: the SMTP sink alone (counts every
 * session, message, recipient and octet; discards the text), for a sink
 * on its own host or process. Trust boundary: the operator's flags; the
 * sink's own input is handled by sink.c. */
#include "commands.h"

#include "cli.h"
#include "ledger.h"
#include "loop.h"
#include "sink.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

enum { OPT_LISTEN = 256, OPT_DURATION, OPT_QUIET, OPT_LEDGER };

struct sink_main {
	struct mt_loop *loop;
	struct lg_sink *sink;
	struct lg_ledger *ledger;
	bool quiet;
};

static void sink_print(FILE *out, const struct lg_sink *sink)
{
	const struct lg_sink_counts *c = lg_sink_counts(sink);

	fprintf(out, "sink: sessions %" PRIu64 " (open %" PRIu64 "), messages %" PRIu64
		", recipients %" PRIu64 ", octets %" PRIu64 ", with id %" PRIu64
		", bad commands %" PRIu64 "\n", c->sessions, c->active,
		c->transactions, c->rcpts, c->octets, c->with_id, c->bad_commands);
}

static void sink_tick(void *context)
{
	struct sink_main *m = context;

	if (!m->quiet)
		sink_print(stderr, m->sink);
}

static void sink_stop(void *context)
{
	mt_loop_exit(((struct sink_main *)context)->loop);
}

int lg_cmd_sink(int argc, char **argv)
{
	static const struct option options[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "ledger", required_argument, NULL, OPT_LEDGER },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sink_main m = { 0 };
	const char *listen = NULL, *ledger = NULL, *error;
	uint64_t duration_ms = 0;
	int verbose = 0, opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN: listen = optarg; break;
		case OPT_DURATION: duration_ms = lg_cli_ms("--duration", optarg); break;
		case OPT_QUIET: m.quiet = true; break;
		case OPT_LEDGER: ledger = optarg; break;
		case 'v': verbose++; break;
		case 'h': lg_usage(stdout); exit(0);
		default: lg_usage_error("bad option");
		}
	}
	if (optind < argc)
		lg_usage_error("unexpected argument '%s'", argv[optind]);
	if (listen == NULL)
		lg_usage_error("sink: --listen is required");
	if (duration_ms > UINT32_MAX)
		lg_usage_error("sink: --duration is too long");
	lg_cli_verbosity(verbose, "mailtier-load");
	if ((ledger != NULL &&
	     (m.ledger = lg_ledger_open(ledger, 0, &error)) == NULL) ||
	    (m.loop = mt_loop_new(&error)) == NULL ||
	    (m.sink = lg_sink_new(m.loop, listen, NULL, &error)) == NULL) {
		fprintf(stderr, "mailtier-load: sink: %s\n", error);
		mt_loop_free(&m.loop);
		lg_ledger_close(&m.ledger);
		return LG_EXIT_FAILED;
	}
	lg_sink_set_ledger(m.sink, m.ledger);
	mt_loop_set_drain(m.loop, 1000, sink_stop, &m);
	if (!mt_loop_handle_signals(m.loop, NULL, NULL, &error)) {
		fprintf(stderr, "mailtier-load: sink: %s\n", error);
		lg_sink_free(&m.sink);
		mt_loop_free(&m.loop);
		lg_ledger_close(&m.ledger);
		return LG_EXIT_FAILED;
	}
	struct mt_timer *tick = mt_timer_add(m.loop, 10000, true, sink_tick, &m);
	struct mt_timer *end = duration_ms > 0 ?
		mt_timer_add(m.loop, (unsigned int)duration_ms, false, sink_stop, &m) : NULL;
	fprintf(stderr, "mailtier-load: sink listening on port %u\n", lg_sink_port(m.sink));
	int rc = mt_loop_run(m.loop);
	sink_print(stdout, m.sink);
	mt_timer_free(&tick);
	mt_timer_free(&end);
	lg_sink_free(&m.sink);
	mt_loop_free(&m.loop);
	lg_ledger_close(&m.ledger);
	return rc == 0 ? 0 : LG_EXIT_FAILED;
}
