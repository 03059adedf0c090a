// SPDX-License-Identifier: MIT
/*
 * The bench as a library (src/exp/bench.h): the throughput search against modelled machines,
 * step sizes, pinning, the executor list, ratios, the load check, live progress, and one real
 * latency series, floor and throughput search with the CPU executor over a shm cable.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "harness.h"
#include "timing.h"

/* ---------------------------------------------------------------- throughput search */

/* A machine that keeps up with one message every @capacity_ns or slower. */
struct model {
	uint64_t capacity_ns;
	unsigned flaky;		/* the first @flaky steps fail whatever the rate */
	uint64_t tried[64];
	unsigned n;
};

static bool model_step(struct model *m, uint64_t iv, double *achieved)
{
	CHECK(m->n < 64);
	m->tried[m->n++] = iv;
	*achieved = iv ? 1e9 / (double)iv : 1e9;
	if (m->flaky) {
		m->flaky--;
		return false;
	}
	return iv >= m->capacity_ns;
}

static void search(struct model *m, uint64_t start, struct lb_tp_search *t)
{
	uint64_t iv;
	double rate;

	lb_tp_init(t, start);
	while (lb_tp_next(t, &iv)) {
		bool pass = model_step(m, iv, &rate);

		lb_tp_record(t, pass, rate);
	}
}

static void expect_tried(const struct model *m, const uint64_t *want, unsigned n)
{
	for (unsigned i = 0; i < n && i < m->n; i++)
		if (m->tried[i] != want[i])
			harness_fail(__FILE__, __LINE__, "step %u tried %llu ns, want %llu", i,
				     (unsigned long long)m->tried[i],
				     (unsigned long long)want[i]);
	CHECK_EQ(m->n, n);
}

/* --link: shm, udp, or two ports of one raw wire, each turned into its end's link spec */
TEST(bench_link_kinds)
{
	struct lb_bench_cfg c;
	char longname[80];

	lb_bench_defaults(&c);
	CHECK_EQ(lb_bench_parse_link(&c, "udp"), 0);
	CHECK(c.udp && !strcmp(lb_bench_link_name(&c), "udp"));
	CHECK_EQ(lb_bench_parse_link(&c, "packet:veth0,veth1"), 0);
	CHECK(!c.udp && !strcmp(lb_bench_link_name(&c), "packet"));
	CHECK(!strcmp(c.raw_spec[0], "packet:veth0") && !strcmp(c.raw_spec[1], "packet:veth1"));
	CHECK_EQ(lb_bench_parse_link(&c, "xdp:eth1:2,eth2:3"), 0);
	CHECK(!strcmp(c.raw_spec[0], "xdp:eth1:2") && !strcmp(c.raw_spec[1], "xdp:eth2:3"));
	CHECK_EQ(lb_bench_parse_link(&c, "shm"), 0);
	CHECK(!strcmp(lb_bench_link_name(&c), "shm"));
	CHECK_EQ(lb_bench_parse_link(&c, "packet:veth0"), EINVAL);	/* one port */
	CHECK_EQ(lb_bench_parse_link(&c, "packet:,veth1"), EINVAL);
	CHECK_EQ(lb_bench_parse_link(&c, "packet:a,b,c"), EINVAL);
	CHECK_EQ(lb_bench_parse_link(&c, "xdp:a,"), EINVAL);
	CHECK_EQ(lb_bench_parse_link(&c, "dgram:1.2.3.4:5,6.7.8.9:10"), EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memcpy(longname, "packet:", 7);
	longname[sizeof(longname) - 3] = ',';
	CHECK_EQ(lb_bench_parse_link(&c, longname), EINVAL);	/* a spec too long to keep */
}

TEST(tp_search_halves_then_bisects)
{
	/* passes down to 3 us: 10 and 5 pass, 2.5 fails twice, then four bisections */
	static const uint64_t want[] = { 10000, 5000, 2500, 2500, 3750, 3125, 2812, 2812,
					 2968, 2968 };
	struct model m = { .capacity_ns = 3000 };
	struct lb_tp_search t;

	search(&m, 10000, &t);
	expect_tried(&m, want, sizeof(want) / sizeof(want[0]));
	CHECK(t.best_valid);
	CHECK_EQ(t.best_iv, 3125);
	CHECK_EQ(t.steps, m.n);
}

TEST(tp_search_goes_up_from_a_failing_start)
{
	static const uint64_t want[] = { 10000, 10000, 20000, 20000, 40000, 30000, 25000, 25000,
					 27500, 27500, 28750, 28750 };
	struct model m = { .capacity_ns = 30000 };
	struct lb_tp_search t;

	search(&m, 10000, &t);
	expect_tried(&m, want, sizeof(want) / sizeof(want[0]));
	CHECK_EQ(t.best_iv, 30000);
}

TEST(tp_search_one_stall_is_not_saturation)
{
	/* the first try of 10 us fails, its repeat passes: the search goes on halving */
	struct model m = { .capacity_ns = 0, .flaky = 1 };
	struct lb_tp_search t;
	double rate = 0;
	uint64_t iv;
	bool pass;

	lb_tp_init(&t, 10000);
	CHECK(lb_tp_next(&t, &iv) && iv == 10000);
	pass = model_step(&m, iv, &rate);
	CHECK(!lb_tp_record(&t, pass, rate));
	CHECK(lb_tp_next(&t, &iv) && iv == 10000);
	pass = model_step(&m, iv, &rate);
	CHECK(lb_tp_record(&t, pass, rate));
	CHECK(lb_tp_next(&t, &iv) && iv == 5000);
	/* a machine that keeps up with anything ends at back to back */
	while (lb_tp_next(&t, &iv)) {
		pass = model_step(&m, iv, &rate);
		lb_tp_record(&t, pass, rate);
	}
	CHECK_EQ(t.best_iv, 0);
	CHECK_EQ(m.tried[m.n - 1], 0);
}

TEST(tp_search_without_any_pass)
{
	struct model m = { .capacity_ns = UINT64_MAX };
	struct lb_tp_search t;

	search(&m, 10000, &t);
	CHECK(!t.best_valid);
	/* doubled up to the limit, each tried twice, then given up */
	CHECK(t.fail_iv >= LB_TP_MAX_INTERVAL_NS);
	CHECK_EQ(m.n, 2 * 11);
}

TEST(tp_step_count_cut_to_two_seconds)
{
	CHECK_EQ(lb_tp_step_count(20000, 0), 20000);
	CHECK_EQ(lb_tp_step_count(20000, 10000), 20000);
	/* 1 ms per message: 2 s is 2000 messages */
	CHECK_EQ(lb_tp_step_count(20000, 1000000), 2000);
	/* 10 ms: 200 would be too few, the floor is 1000 */
	CHECK_EQ(lb_tp_step_count(20000, 10000000), LB_TP_STEP_MIN_MSGS);
	CHECK_EQ(lb_tp_step_count(300, 10000000), 300);
}

/* ---------------------------------------------------------------- configuration */

TEST(plan_cpus)
{
	static const int five[] = { 0, 1, 2, 3, 4 }, four[] = { 0, 1, 2, 3 }, two[] = { 4, 5 },
			 one[] = { 7 };
	struct lb_bench_cfg c;
	struct lb_cpu_plan p;

	lb_bench_defaults(&c);
	lb_bench_plan_cpus(&c, four, 4, "0-3", &p);
	CHECK(p.sensor == 1 && p.engine == 2 && p.exec == 3 && !p.inline_engine);
	CHECK(p.sensor_engine == -1);
	lb_bench_plan_cpus(&c, five, 5, "0-4", &p);
	CHECK(p.sensor == 1 && p.engine == 2 && p.exec == 3 && p.sensor_engine == 4);
	CHECK(strstr(p.note, "sensor's NIC engine on CPU 4") != NULL);
	lb_bench_plan_cpus(&c, two, 2, "4-5", &p);
	CHECK(p.sensor == 4 && p.engine == 5 && p.exec == 5 && p.inline_engine);
	CHECK(strstr(p.note, "drive the NIC inline") != NULL);
	lb_bench_plan_cpus(&c, one, 1, "7", &p);
	CHECK(p.sensor == -1 && p.exec == -1);
	CHECK(strstr(p.note, "unpinned") != NULL);
	c.cpus_given = true;
	c.cpus[0] = 9;
	c.cpus[1] = 8;
	c.cpus[2] = 7;
	c.engine = LB_ENGINE_THREAD;
	lb_bench_plan_cpus(&c, two, 2, "4-5", &p);
	CHECK(p.sensor == 9 && p.engine == 8 && p.exec == 7 && !p.inline_engine);
}

TEST(series_and_engine_names)
{
	bool want[LB_SER_MAX];
	enum lb_engine_choice e;

	CHECK_EQ(lb_series_parse("gpu,cpu", want), 0);
	CHECK(want[LB_SER_GPU_DB] && want[LB_SER_GPU_BF] && want[LB_SER_GPU_PROXY]);
	CHECK(want[LB_SER_CPU] && !want[LB_SER_NAIVE]);
	CHECK_EQ(lb_series_parse("naive", want), 0);
	CHECK(want[LB_SER_NAIVE] && !want[LB_SER_CPU]);
	CHECK_EQ(lb_series_parse("gpu-magic", want), EINVAL);
	CHECK_EQ(lb_series_parse(",", want), EINVAL);
	CHECK_EQ(lb_engine_parse("inline", &e), 0);
	CHECK_EQ(e, LB_ENGINE_INLINE);
	CHECK_EQ(lb_engine_parse("fast", &e), EINVAL);
	CHECK_EQ(lb_sensor_engine_parse("thread", &e), 0);
	CHECK_EQ(e, LB_ENGINE_THREAD);
	/* the sensor's NIC has two ways, and no guess between them */
	CHECK_EQ(lb_sensor_engine_parse("auto", &e), EINVAL);
	CHECK_EQ(e, LB_ENGINE_THREAD);
}

/* ---------------------------------------------------------------- ratios and load */

static const struct lb_ratio *find_ratio(const struct lb_ratio *r, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].name, name) == 0)
			return &r[i];
	return NULL;
}

TEST(ratios)
{
	struct stats_summary cpu = { .p50_ns = 3000, .p99_ns = 9000 };
	struct stats_summary cfl = { .p50_ns = 1000, .p99_ns = 2000 };
	struct stats_summary bf = { .p50_ns = 4000, .p99_ns = 8000 };
	struct stats_summary fl = { .p50_ns = 2000, .p99_ns = 2000 };
	const struct stats_summary *ser[LB_SER_MAX] = { [LB_SER_CPU] = &cpu };
	const struct stats_summary *floors[LB_FL_MAX] = { [LB_FL_CPU] = &cfl };
	struct lb_ratio r[LB_RATIOS_MAX];
	const struct lb_ratio *x;
	size_t n;

	n = lb_bench_ratios(ser, floors, false, r);
	CHECK_EQ(n, 2);
	x = find_ratio(r, n, "cpu p99 / cpu-floor p99");
	CHECK(x && x->value == 4.5 && x->num_ns == 9000 && x->den_ns == 2000);
	ser[LB_SER_GPU_BF] = &bf;
	floors[LB_FL_FLAG] = &fl;
	n = lb_bench_ratios(ser, floors, true, r);
	CHECK((x = find_ratio(r, n, "gpu-bf p50 / floor p50")) && x->value == 2.0);
	CHECK((x = find_ratio(r, n, "gpu-bf p99 / floor p99")) && x->value == 4.0);
	/* the best GPU series stands for "gpu" */
	CHECK((x = find_ratio(r, n, "cpu p50 / gpu p50")) && x->value == 0.75);
	/* a series that did not run has no ratio, never a zero one */
	CHECK(find_ratio(r, n, "gpu-db p50 / floor p50") == NULL);
	CHECK(find_ratio(r, n, "naive p50 / gpu p50") == NULL);
}

TEST(load_check)
{
	double load[3];

	CHECK(lb_load_too_high(2.5, 2));
	CHECK(!lb_load_too_high(2.0, 2));
	CHECK(!lb_load_too_high(0.3, 4));
	CHECK(!lb_load_too_high(5, 0));
	CHECK_EQ(lb_loadavg(load), 0);
	CHECK(load[0] >= 0 && load[1] >= 0 && load[2] >= 0);
}

/* ---------------------------------------------------------------- progress */

static char *progress_text(FILE *f)
{
	static char buf[4096];
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

TEST(progress_mode_from_terminal_env_and_verbose)
{
	int fd[2];

	CHECK_EQ(pipe(fd), 0);
	unsetenv(PROGRESS_ENV);
	/* a pipe is no terminal: quiet unless -v */
	CHECK_EQ(progress_mode_for(fd[1], false), PROGRESS_OFF);
	CHECK_EQ(progress_mode_for(fd[1], true), PROGRESS_LINES);
	setenv(PROGRESS_ENV, "bar", 1);
	CHECK_EQ(progress_mode_for(fd[1], false), PROGRESS_BAR);
	setenv(PROGRESS_ENV, "lines", 1);
	CHECK_EQ(progress_mode_for(fd[1], false), PROGRESS_LINES);
	setenv(PROGRESS_ENV, "off", 1);
	CHECK_EQ(progress_mode_for(fd[1], true), PROGRESS_OFF);
	unsetenv(PROGRESS_ENV);
	close(fd[0]);
	close(fd[1]);
}

TEST(progress_lines_bar_and_off)
{
	struct progress p;
	FILE *f = tmpfile();
	char *s;

	CHECK(f != NULL);
	progress_init(&p, f, PROGRESS_OFF);
	progress_step(&p, "cpu: %d messages", 5);
	progress_bar(&p, "cpu", 1, 2, 1);
	CHECK_EQ(strlen(progress_text(f)), 0);

	progress_init(&p, f, PROGRESS_LINES);
	progress_step(&p, "cpu: %d messages", 5);
	progress_bar(&p, "cpu", 1, 2, 1);
	s = progress_text(f);
	CHECK(strcmp(s, "gpunic: cpu: 5 messages\n") == 0);

	rewind(f);
	CHECK_EQ(ftruncate(fileno(f), 0), 0);
	progress_init(&p, f, PROGRESS_BAR);
	progress_bar(&p, "cpu", 50, 100, 49);
	CHECK(p.bar_shown);
	progress_step(&p, "next");
	CHECK(!p.bar_shown);
	s = progress_text(f);
	CHECK(strstr(s, "\r  cpu        [############............]  50% 50/100 sent, 49 back") ==
	      s);
	/* the step line starts on a cleared line, the bar's text gone */
	CHECK(strstr(s, "\r\ngpunic: next\n") == NULL);
	CHECK(strstr(s, "\rgpunic: next\n") != NULL);
	fclose(f);
}

/* ---------------------------------------------------------------- real runs */

static void cfg_small(struct lb_bench_cfg *c, struct lb_cpu_plan *cpus)
{
	lb_bench_defaults(c);
	c->count = 300;
	c->warmup = 20;
	c->interval_ns = 0;	/* closed loop: a slow CI box turns nothing into loss */
	c->tp_count = 300;
	*cpus = (struct lb_cpu_plan){ .sensor = -1, .engine = -1, .exec = -1,
				      .inline_engine = true };
}

TEST(latency_series_cpu)
{
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct progress prog;
	struct lb_bench b = { .cfg = &c, .cpus = &cpus, .progress = &prog };
	struct stats_rec rec = { 0 };
	struct lb_series_result r;
	FILE *f = tmpfile();

	CHECK(f != NULL);
	timing_init();
	cfg_small(&c, &cpus);
	progress_init(&prog, f, PROGRESS_LINES);
	CHECK_EQ(stats_rec_init(&rec, c.count), 0);
	CHECK_EQ(lb_bench_latency(&b, LB_SER_CPU, &rec, &r), 0);
	CHECK_EQ(r.warm.sent, 20);
	CHECK_EQ(r.run.sent, 300);
	CHECK_EQ(r.run.verified, 300);
	CHECK(lb_run_clean(&r.run));
	CHECK_EQ(r.sum.count, 300);
	CHECK(r.sum.min_ns > 0 && r.sum.p50_ns >= r.sum.min_ns);
	/* the forwarder echoed the warm-up and the run */
	CHECK_EQ(r.fwd.echoed, 320);
	CHECK(strstr(progress_text(f), "gpunic: cpu: gpunic_loop_step() on a host thread, 300 "
					"messages\n") != NULL);
	stats_rec_free(&rec);
	fclose(f);
}

/* The emulated hardware on one thread: the forwarder's NIC has no thread of its own and the
 * executor's does not drive it (inline is turned off), so every echo the sensor gets went
 * through the sensor's thread driving both NICs. Both message modes. */
TEST(latency_series_cpu_hw_one_thread)
{
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct lb_bench b = { .cfg = &c, .cpus = &cpus };
	struct stats_rec rec = { 0 };
	struct lb_series_result r;

	timing_init();
	cfg_small(&c, &cpus);
	c.hw_thread = LB_HW_ONE;
	CHECK_EQ(stats_rec_init(&rec, c.count), 0);
	for (int m = 0; m < 2; m++) {
		c.mode = m ? LB_MODE_SEND : LB_MODE_WRITE_IMM;
		CHECK_EQ(lb_bench_latency(&b, LB_SER_CPU, &rec, &r), 0);
		CHECK_EQ(r.run.verified, 300);
		CHECK(lb_run_clean(&r.run));
		CHECK_EQ(r.fwd.echoed, 320);
	}
	stats_rec_free(&rec);
}

TEST(cpu_floor_series)
{
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct lb_bench b = { .cfg = &c, .cpus = &cpus };
	struct stats_rec rec = { 0 };
	struct lb_floor_result r;

	memset(&r, 9, sizeof(r));
	timing_init();
	cfg_small(&c, &cpus);
	CHECK_EQ(stats_rec_init(&rec, c.count), 0);
	CHECK_EQ(lb_bench_floor(&b, LB_FL_CPU, &rec, &r), 0);
	CHECK_EQ(r.sum.count, 300);
	CHECK(r.sum.min_ns > 0);
	CHECK(r.torn[0] == 0 && r.torn[1] == 0);
	CHECK(r.sweep_p50_ns[0] == 0 && r.pollers == 0);
	stats_rec_free(&rec);
}

/* Paced as the series: the round trips start an interval apart, so the run lasts at least the
 * intervals between its messages (a lower bound: a slow or loaded box only makes it longer;
 * a hop there may wait a whole time slice, so nothing is asked of the round trips' length). */
TEST(cpu_floor_paced_as_the_series)
{
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct lb_bench b = { .cfg = &c, .cpus = &cpus };
	struct stats_rec rec = { 0 };
	struct lb_floor_result r;
	uint64_t t0;

	timing_init();
	cfg_small(&c, &cpus);
	c.count = 100;
	c.warmup = 5;
	c.interval_ns = 1000000;
	CHECK_EQ(stats_rec_init(&rec, c.count), 0);
	t0 = timing_now_ns();
	CHECK_EQ(lb_bench_floor(&b, LB_FL_CPU, &rec, &r), 0);
	CHECK(timing_now_ns() - t0 >= (c.count + c.warmup - 1) * c.interval_ns);
	CHECK_EQ(r.sum.count, 100);
	CHECK(r.sum.min_ns > 0);
	stats_rec_free(&rec);
}

struct steps_seen {
	unsigned n;
	bool any_pass;
	uint64_t first_iv;
};

static void on_step(void *arg, const char *label, const struct lb_tp_step *st)
{
	struct steps_seen *s = arg;

	CHECK(strcmp(label, "cpu") == 0);
	CHECK_EQ(st->n, s->n + 1);
	if (!s->n)
		s->first_iv = st->interval_ns;
	s->n++;
	s->any_pass |= st->pass;
	CHECK_EQ(st->res.sent, 300);
}

/* A throughput search of the CPU executor, set up by tp_run_init and run by tp_run_search. */
struct tp_run {
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct stats_rec rec[2];
	struct steps_seen seen;
	struct lb_tp_result t;
};

static void tp_run_init(struct tp_run *r)
{
	memset(r, 0, sizeof(*r));
	timing_init();
	cfg_small(&r->c, &r->cpus);
	/* 200 us per message: slow enough for any CI box, so at least one step passes */
	r->c.interval_ns = 200000;
	r->c.throughput = true;
	CHECK_EQ(stats_rec_init(&r->rec[0], r->c.tp_count), 0);
	CHECK_EQ(stats_rec_init(&r->rec[1], r->c.tp_count), 0);
}

static void tp_run_search(struct tp_run *r)
{
	struct lb_bench b = { .cfg = &r->c, .cpus = &r->cpus };
	struct stats_rec *recs[2] = { &r->rec[0], &r->rec[1] };

	CHECK_EQ(lb_bench_throughput(&b, LB_SER_CPU, recs, on_step, &r->seen, &r->t), 0);
	CHECK(r->t.found && r->t.best.pass && r->t.best.achieved > 0);
}

static void tp_run_free(struct tp_run *r)
{
	stats_rec_free(&r->rec[0]);
	stats_rec_free(&r->rec[1]);
}

TEST(throughput_search_cpu)
{
	struct tp_run r;
	struct stats_summary sum;

	tp_run_init(&r);
	tp_run_search(&r);
	CHECK(r.seen.n >= 2);
	CHECK_EQ(r.seen.first_iv, 200000);
	CHECK(r.seen.any_pass);
	/* the best step's samples are in the recorder handed back */
	CHECK(r.t.rec == &r.rec[0] || r.t.rec == &r.rec[1]);
	CHECK_EQ(stats_summarize(r.t.rec, &sum), 0);
	CHECK_EQ(sum.count, r.t.best.sum.count);
	CHECK_EQ(sum.p50_ns, r.t.best.sum.p50_ns);
	tp_run_free(&r);
}

/* The sensor's NIC on an engine thread of its own: the same replies, every one verified. */
TEST(throughput_search_sensor_engine_thread)
{
	struct tp_run r;
	char where[128];

	tp_run_init(&r);
	r.c.sensor_engine = LB_ENGINE_THREAD;
	r.cpus.inline_engine = false;	/* the forwarder's engine on a thread too: it times itself */
	tp_run_search(&r);
	CHECK_EQ(r.t.best.res.verified, 300);
	/* a clean step dropped nothing anywhere */
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		CHECK(r.t.best.where.fwd[i] == 0 && r.t.best.where.sensor[i] == 0);
	lb_tp_where_text(&r.t.best, where, sizeof(where));
	CHECK(strstr(where, "forwarder no_") == NULL);
	/* the engine thread timed itself, the sensor's thread counted its idle rounds */
	CHECK(r.t.best.where.engine_busy_ns + r.t.best.where.engine_idle_ns > 0);
	CHECK(r.t.best.res.loop_ns > 0 && r.t.best.res.idle_ns <= r.t.best.res.loop_ns);
	CHECK(strstr(where, "busy per message: forwarder engine ") == where);
	tp_run_free(&r);
}

TEST(tp_where_text_says_how_busy_and_what_dropped)
{
	struct lb_tp_step st = { 0 };
	char buf[160], tiny[12];

	lb_tp_where_text(&st, buf, sizeof(buf));
	CHECK_EQ(buf[0], 0);
	st.where.fwd[GPUNIC_DROP_NO_RECV_WQE] = 12;
	st.where.sensor_tx_busy = 3;
	lb_tp_where_text(&st, buf, sizeof(buf));
	CHECK(strcmp(buf, "forwarder no_recv_wqe 12, sensor link_full 3") == 0);
	st.res.sent = 10;
	st.where.engine_busy_ns = 4550;
	st.where.engine_idle_ns = 300;
	st.res.loop_ns = 5000;
	st.res.idle_ns = 1200;
	lb_tp_where_text(&st, buf, sizeof(buf));
	CHECK(strcmp(buf, "busy per message: forwarder engine 455 ns, sensor 380 ns; forwarder "
			  "no_recv_wqe 12, sensor link_full 3") == 0);
	memset(&st.where, 0, sizeof(st.where));
	lb_tp_where_text(&st, buf, sizeof(buf));
	CHECK(strcmp(buf, "busy per message: sensor 380 ns") == 0);
	/* cut short, never past the end */
	st.where.fwd[GPUNIC_DROP_NO_RECV_WQE] = 12;
	lb_tp_where_text(&st, tiny, sizeof(tiny));
	CHECK_EQ(strlen(tiny), sizeof(tiny) - 1);
}

TEST(need_gpu_drops_or_refuses)
{
	struct lb_bench_cfg c;

	lb_bench_defaults(&c);
	CHECK_EQ(lb_bench_need_gpu(&c, true, "-"), 0);
	CHECK(c.want[LB_SER_GPU_DB] && c.want[LB_SER_NAIVE]);
	/* by default the GPU series go quietly: only the CPU executor is left */
	CHECK_EQ(lb_bench_need_gpu(&c, false, "no GPU here"), 0);
	for (int i = 0; i < LB_SER_MAX; i++)
		CHECK_EQ(c.want[i], i == LB_SER_CPU);
	/* asked for by name, a GPU series without a GPU is an error */
	CHECK_EQ(lb_series_parse("cpu,naive", c.want), 0);
	c.executors_given = true;
	CHECK_EQ(lb_bench_need_gpu(&c, false, "no GPU here"), ENODEV);
}

struct bench_seen {
	unsigned floors, series, steps, tp;
	enum lb_floor_id floor;
	uint64_t verified;
	bool found;
};

static int seen_floor(void *arg, enum lb_floor_id id, const struct stats_rec *rec,
		      const struct lb_floor_result *r)
{
	struct bench_seen *s = arg;

	s->floors++;
	s->floor = id;
	CHECK_EQ(r->sum.count, 300);
	CHECK(rec->n >= 300);
	return 0;
}

static int seen_series(void *arg, enum lb_series_id id, const struct stats_rec *rec,
		       const struct lb_series_result *r)
{
	struct bench_seen *s = arg;

	(void)rec;
	CHECK_EQ(id, LB_SER_CPU);
	s->series++;
	s->verified = r->run.verified;
	return 0;
}

static void seen_step(void *arg, const char *label, const struct lb_tp_step *st)
{
	(void)label;
	(void)st;
	((struct bench_seen *)arg)->steps++;
}

static int seen_tp(void *arg, enum lb_series_id id, const struct lb_tp_result *t)
{
	struct bench_seen *s = arg;

	CHECK_EQ(id, LB_SER_CPU);
	s->tp++;
	s->found = t->found;
	return 0;
}

static const struct lb_bench_ops seen_ops = {
	.floor_done = seen_floor,
	.series_done = seen_series,
	.tp_step = seen_step,
	.tp_done = seen_tp,
};

TEST(bench_run_cpu_latency_and_throughput)
{
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct lb_bench b = { .cfg = &c, .cpus = &cpus };
	struct bench_seen seen = { 0 };

	timing_init();
	cfg_small(&c, &cpus);
	/* the CPU floor needs pinned threads: two distinct CPUs of this machine, or none */
	lb_bench_plan_cpus_here(&c, &cpus);
	cpus.inline_engine = true;
	CHECK_EQ(lb_bench_need_gpu(&c, false, "test"), 0);
	CHECK_EQ(lb_bench_run(&b, &seen_ops, &seen), 0);
	CHECK_EQ(seen.floors, cpus.sensor < 0 ? 0 : 1);
	if (seen.floors)
		CHECK_EQ(seen.floor, LB_FL_CPU);
	CHECK_EQ(seen.series, 1);
	CHECK_EQ(seen.verified, 300);
	CHECK_EQ(seen.tp, 0);

	memset(&seen, 0, sizeof(seen));
	c.throughput = true;
	c.interval_ns = 200000;
	CHECK_EQ(lb_bench_run(&b, &seen_ops, &seen), 0);
	CHECK_EQ(seen.floors, 0);
	CHECK_EQ(seen.series, 0);
	CHECK(seen.steps >= 2);
	CHECK(seen.tp == 1 && seen.found);
}

/* ---------------------------------------------------------------- RPC series */

/* The RPC series follow their base series, never named on their own. */
TEST(rpc_series_wanted)
{
	struct lb_bench_cfg c;

	lb_bench_defaults(&c);
	CHECK_EQ(lb_series_parse("gpu-bf-rpc", c.want), EINVAL);
	CHECK_EQ(lb_series_parse("gpu-bf,cpu", c.want), 0);
	for (int i = LB_SER_NAIVE + 1; i < LB_SER_MAX; i++)
		CHECK(!lb_series_wanted(&c, (enum lb_series_id)i));
	c.rpc_fn = GPUNIC_RPC_ID_ECHO;
	CHECK(lb_series_wanted(&c, LB_SER_GPU_BF_RPC) && lb_series_wanted(&c, LB_SER_CPU_RPC));
	CHECK(!lb_series_wanted(&c, LB_SER_GPU_DB_RPC));
	/* echo is the -rpc series already: no -rpc-fn series repeats it */
	CHECK(!lb_series_wanted(&c, LB_SER_GPU_BF_RPC_FN) && !lb_series_wanted(&c, LB_SER_CPU_RPC_FN));
	CHECK_EQ(lb_series_rpc_fn(&c, LB_SER_CPU_RPC), GPUNIC_RPC_ID_ECHO);
	CHECK_EQ(lb_series_rpc_fn(&c, LB_SER_CPU), 0);
	c.rpc_fn = GPUNIC_RPC_ID_SURFACE_D3;
	CHECK(lb_series_wanted(&c, LB_SER_CPU_RPC) && lb_series_wanted(&c, LB_SER_CPU_RPC_FN));
	CHECK_EQ(lb_series_rpc_fn(&c, LB_SER_CPU_RPC_FN), GPUNIC_RPC_ID_SURFACE_D3);
	CHECK_EQ(lb_series_rpc_fn(&c, LB_SER_CPU_RPC), GPUNIC_RPC_ID_ECHO);
	/* without a GPU the GPU ones go with their base series */
	CHECK_EQ(lb_bench_need_gpu(&c, false, "no GPU here"), 0);
	CHECK(!lb_series_wanted(&c, LB_SER_GPU_BF_RPC) && lb_series_wanted(&c, LB_SER_CPU_RPC));
	for (int i = 0; i < LB_SER_MAX; i++)
		CHECK(!lb_series_defs[i].rpc ||
		      lb_series_defs[lb_series_defs[i].base].exec == lb_series_defs[i].exec);
}

TEST(rpc_ratios_and_rates)
{
	struct stats_summary cpu = { .p50_ns = 3000 }, cpu_rpc = { .p50_ns = 3300 };
	struct stats_summary cpu_fn = { .p50_ns = 3100 }, bf = { .p50_ns = 4000 };
	struct stats_summary bf_rpc = { .p50_ns = 4200 }, bf_fn = { .p50_ns = 4500 };
	const struct stats_summary *ser[LB_SER_MAX] = {
		[LB_SER_CPU] = &cpu, [LB_SER_CPU_RPC] = &cpu_rpc, [LB_SER_CPU_RPC_FN] = &cpu_fn,
		[LB_SER_GPU_BF] = &bf, [LB_SER_GPU_BF_RPC] = &bf_rpc,
		[LB_SER_GPU_BF_RPC_FN] = &bf_fn,
	};
	const struct stats_summary *floors[LB_FL_MAX] = { 0 };
	double rate[LB_SER_MAX] = { [LB_SER_GPU_BF] = 1e6, [LB_SER_GPU_BF_RPC] = 9e5,
				    [LB_SER_CPU_RPC] = 5e5 };
	struct lb_rate_ratio rr[LB_SER_MAX];
	struct lb_ratio r[LB_RATIOS_MAX];
	const struct lb_ratio *x;
	size_t n;

	n = lb_bench_ratios(ser, floors, true, r);
	CHECK((x = find_ratio(r, n, "cpu-rpc p50 / cpu p50")) && x->value == 1.1 &&
	      !x->difference);
	CHECK((x = find_ratio(r, n, "gpu-bf-rpc p50 / gpu-bf p50")) && x->value == 1.05);
	/* what the handler adds over rpc echo, in ns; a cheaper one is negative, not hidden */
	CHECK((x = find_ratio(r, n, "gpu-bf-rpc-fn p50 - gpu-bf-rpc p50")) && x->difference &&
	      x->value == 300.0 && x->num_ns == 4500 && x->den_ns == 4200);
	CHECK((x = find_ratio(r, n, "cpu-rpc-fn p50 - cpu-rpc p50")) && x->value == -200.0);
	/* a series that did not run has no row */
	CHECK(find_ratio(r, n, "gpu-db-rpc p50 / gpu-db p50") == NULL);
	CHECK(n <= LB_RATIOS_MAX);

	n = lb_bench_rpc_rates(rate, rr);
	CHECK_EQ(n, 1);
	CHECK(strcmp(rr[0].name, "gpu-bf-rpc rate / gpu-bf rate") == 0 && rr[0].value == 0.9);
}

static int seen_rpc_series(void *arg, enum lb_series_id id, const struct stats_rec *rec,
			   const struct lb_series_result *r)
{
	enum lb_series_id *order = arg;

	(void)rec;
	while (*order != LB_SER_MAX)
		order++;
	*order = id;
	CHECK_EQ(r->run.verified, 300);
	CHECK(lb_run_clean(&r->run));
	CHECK_EQ(r->rpc_fn, id == LB_SER_CPU ? 0 : id == LB_SER_CPU_RPC ? GPUNIC_RPC_ID_ECHO :
								       GPUNIC_RPC_ID_SURFACE_D3);
	if (r->rpc_fn) {
		CHECK_EQ(r->run.rpc_checks[GPUNIC_RPC_CHECK_OK], 300);
		CHECK_EQ(r->fwd.rpc.by_reason[GPUNIC_RPC_R_OK], 320);
	}
	return 0;
}

/* The bench with --rpc surface_d3 on the CPU executor: the plain series, then rpc echo, then the
 * decoder, each with every response verified. */
TEST(bench_run_cpu_rpc)
{
	static const struct lb_bench_ops ops = { .series_done = seen_rpc_series };
	enum lb_series_id order[4] = { LB_SER_MAX, LB_SER_MAX, LB_SER_MAX, LB_SER_MAX };
	struct lb_bench_cfg c;
	struct lb_cpu_plan cpus;
	struct lb_bench b = { .cfg = &c, .cpus = &cpus };

	timing_init();
	cfg_small(&c, &cpus);
	c.rpc_fn = GPUNIC_RPC_ID_SURFACE_D3;
	CHECK_EQ(lb_bench_need_gpu(&c, false, "test"), 0);
	CHECK_EQ(lb_bench_run(&b, &ops, order), 0);
	CHECK_EQ(order[0], LB_SER_CPU);
	CHECK_EQ(order[1], LB_SER_CPU_RPC);
	CHECK_EQ(order[2], LB_SER_CPU_RPC_FN);
	CHECK_EQ(order[3], LB_SER_MAX);
}
