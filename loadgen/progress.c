/* progress.c — the progress line and the timeline (see progress.h).
 * Trust boundary: none. */
#include "progress.h"

#include "engine.h"
#include "alloc.h"

static const char *const phase_names[] = { "warm-up", "measure", "cool-down" };

void lg_progress_set_phase(struct lg_progress *p, const struct lg_stats *st)
{
	p->msgs_local = st->counters.msgs_local_sent;
	p->data_attempts = st->fn[LG_FN_SMTP_DATA].attempts;
	p->data_pass = st->fn[LG_FN_SMTP_DATA].pass;
	p->retr_attempts = st->fn[LG_FN_POP_RETR].attempts;
	p->retr_pass = st->fn[LG_FN_POP_RETR].pass;
	p->delivery_attempts = st->fn[LG_FN_DELIVERY].attempts;
	p->delivery_pass = st->fn[LG_FN_DELIVERY].pass;
	p->sessions = lg_stats_total_sessions(st);
	p->failed = lg_stats_total_failed(st);
	for (int i = 0; i < LG_ERR_COUNT; i++)
		p->errors[i] = st->errors[i];
}

void lg_progress_add(struct lg_progress *sum, const struct lg_progress *p)
{
	sum->open += p->open;
	sum->awaited += p->awaited;
	sum->msgs_local += p->msgs_local;
	sum->data_attempts += p->data_attempts;
	sum->data_pass += p->data_pass;
	sum->retr_attempts += p->retr_attempts;
	sum->retr_pass += p->retr_pass;
	sum->delivery_attempts += p->delivery_attempts;
	sum->delivery_pass += p->delivery_pass;
	sum->sessions += p->sessions;
	sum->failed += p->failed;
	for (int i = 0; i < LG_ERR_COUNT; i++)
		sum->errors[i] += p->errors[i];
	sum->run_msgs_local += p->run_msgs_local;
	sum->run_failed += p->run_failed;
}

static double pct(uint64_t part, uint64_t whole, double none)
{
	return whole == 0 ? none : 100.0 * (double)part / (double)whole;
}

void lg_progress_print(FILE *out, const struct lg_progress *p)
{
	double s = (double)p->phase_ms / 1000;

	if (p->phase >= 2) {
		fprintf(out, "[cool-down %4.0f/%llu s] open sessions %llu, "
			"deliveries awaited %llu\n", s,
			(unsigned long long)(p->phase_len_ms / 1000),
			(unsigned long long)p->open, (unsigned long long)p->awaited);
		return;
	}
	fprintf(out, "[level %llu%% %s %4.0f/%llu s] %.1f msgs/min (target %.1f) | "
		"open %llu | QoS so far: data %.1f%% retr %.1f%% delivery %.1f%% | "
		"errors %.2f%% (conn %llu proto %llu rej %llu timeout %llu disc %llu)\n",
		(unsigned long long)p->pct, phase_names[p->phase], s,
		(unsigned long long)(p->phase_len_ms / 1000),
		s > 0 ? (double)p->msgs_local * 60.0 / s : 0,
		(double)p->target_msgs_per_min_x100 / 100, (unsigned long long)p->open,
		pct(p->data_pass, p->data_attempts, 100),
		pct(p->retr_pass, p->retr_attempts, 100),
		pct(p->delivery_pass, p->delivery_attempts, 100),
		pct(p->failed, p->sessions, 0),
		(unsigned long long)p->errors[LG_ERR_CONNECT],
		(unsigned long long)p->errors[LG_ERR_PROTOCOL],
		(unsigned long long)p->errors[LG_ERR_REJECTED],
		(unsigned long long)p->errors[LG_ERR_TIMEOUT],
		(unsigned long long)p->errors[LG_ERR_DISCONNECT]);
}

void lg_run_result_add_sample(struct lg_run_result *r, double t_s,
			      const struct lg_progress *p)
{
	if (r->n_samples == r->samples_cap) {
		r->samples_cap = r->samples_cap ? r->samples_cap * 2 : 256;
		r->samples = mt_xrealloc(r->samples, r->samples_cap * sizeof(*r->samples));
	}
	r->samples[r->n_samples++] = (struct lg_sample){
		.t_s = t_s, .level = (unsigned int)p->level,
		.phase = (unsigned int)(p->phase > 2 ? 2 : p->phase),
		.msgs_local = p->run_msgs_local,
		.sessions_failed = p->run_failed, .open = p->open,
	};
}
