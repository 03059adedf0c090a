// SPDX-License-Identifier: MIT
/*
 * The loopback bench as a library (bench.h): series and floors, pinning, one latency series,
 * the throughput search, the ratios. `gpunic bench loopback` prints and records what these
 * return.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cpufloor.h"
#include "gpunic/hoptrace.h"
#include "timing.h"

const struct lb_series_def lb_series_defs[LB_SER_MAX] = {
	[LB_SER_GPU_DB] = { "gpu-db", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_DB,
			    "persistent kernel, GPU rings the doorbell" },
	[LB_SER_GPU_BF] = { "gpu-bf", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_BF,
			    "persistent kernel, GPU writes whole WQEs to the BlueFlame page" },
	[LB_SER_GPU_PROXY] = { "gpu-proxy", LB_EXEC_GPU, GPUNIC_HANDLER_CPU_PROXY,
			       "persistent kernel, CPU proxy forwards its producer index" },
	[LB_SER_CPU] = { "cpu", LB_EXEC_CPU, GPUNIC_HANDLER_AUTO,
			 "gpunic_loop_step() on a host thread" },
	[LB_SER_NAIVE] = { "naive", LB_EXEC_NAIVE, GPUNIC_HANDLER_AUTO,
			   "host thread: copy in, launch, copy out per message" },
	[LB_SER_GPU_DB_RPC] = { "gpu-db-rpc", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_DB,
				"gpu-db answering RPC requests to echo", LB_SER_RPC_ECHO,
				LB_SER_GPU_DB },
	[LB_SER_GPU_BF_RPC] = { "gpu-bf-rpc", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_BF,
				"gpu-bf answering RPC requests to echo", LB_SER_RPC_ECHO,
				LB_SER_GPU_BF },
	[LB_SER_GPU_PROXY_RPC] = { "gpu-proxy-rpc", LB_EXEC_GPU, GPUNIC_HANDLER_CPU_PROXY,
				   "gpu-proxy answering RPC requests to echo", LB_SER_RPC_ECHO,
				   LB_SER_GPU_PROXY },
	[LB_SER_CPU_RPC] = { "cpu-rpc", LB_EXEC_CPU, GPUNIC_HANDLER_AUTO,
			     "cpu answering RPC requests to echo", LB_SER_RPC_ECHO, LB_SER_CPU },
	[LB_SER_GPU_DB_RPC_FN] = { "gpu-db-rpc-fn", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_DB,
				   "gpu-db answering RPC requests to the --rpc function",
				   LB_SER_RPC_FN, LB_SER_GPU_DB },
	[LB_SER_GPU_BF_RPC_FN] = { "gpu-bf-rpc-fn", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_BF,
				   "gpu-bf answering RPC requests to the --rpc function",
				   LB_SER_RPC_FN, LB_SER_GPU_BF },
	[LB_SER_GPU_PROXY_RPC_FN] = { "gpu-proxy-rpc-fn", LB_EXEC_GPU, GPUNIC_HANDLER_CPU_PROXY,
				      "gpu-proxy answering RPC requests to the --rpc function",
				      LB_SER_RPC_FN, LB_SER_GPU_PROXY },
	[LB_SER_CPU_RPC_FN] = { "cpu-rpc-fn", LB_EXEC_CPU, GPUNIC_HANDLER_AUTO,
				"cpu answering RPC requests to the --rpc function", LB_SER_RPC_FN,
				LB_SER_CPU },
};

/* The bench's RPC requests carry CLOCK_REALTIME: it measures the forwarder, and a PTP device's
 * reading (a system call, microseconds on some hosts) would hold up the sensor's thread. */
static const struct lb_rpc_clock bench_rpc_clock = { CLOCK_REALTIME, -1, "CLOCK_REALTIME" };

bool lb_series_wanted(const struct lb_bench_cfg *c, enum lb_series_id id)
{
	const struct lb_series_def *d = &lb_series_defs[id];

	switch (d->rpc) {
	case LB_SER_RPC_ECHO:
		return c->rpc_fn && c->want[d->base];
	case LB_SER_RPC_FN:
		return c->rpc_fn && c->rpc_fn != GPUNIC_RPC_ID_ECHO && c->want[d->base];
	default:
		return c->want[id];
	}
}

uint32_t lb_series_rpc_fn(const struct lb_bench_cfg *c, enum lb_series_id id)
{
	switch (lb_series_defs[id].rpc) {
	case LB_SER_RPC_ECHO:
		return GPUNIC_RPC_ID_ECHO;
	case LB_SER_RPC_FN:
		return c->rpc_fn;
	default:
		return 0;
	}
}

const struct lb_floor_def lb_floor_defs[LB_FL_MAX] = {
	[LB_FL_FLAG] = { "floor", GPUNIC_FLOOR_FLAG, false, true,
			 "CPU<->GPU 4-byte flag ping-pong, relaxed polls and stores, the best of "
			 "1-4 staggered pollers" },
	[LB_FL_LINE] = { "exchange-floor", GPUNIC_FLOOR_LINE, false, true,
			 "a 64-byte line each way, one coalesced warp access, the best of 1-4 "
			 "staggered pollers" },
	[LB_FL_FLAG_STOPREAD] = { "floor-stopread", GPUNIC_FLOOR_FLAG, true, false,
				  "the flag floor of 0.1: a stop-flag read after every empty "
				  "poll (comparison only)" },
	[LB_FL_LINE_STOPREAD] = { "exchange-floor-stopread", GPUNIC_FLOOR_LINE, true, false,
				  "the exchange floor of 0.1: a stop-flag read after every "
				  "empty poll (comparison only)" },
	[LB_FL_ACQREL] = { "floor-acqrel", GPUNIC_FLOOR_FLAG_ACQREL, false, false,
			   "the flag ping-pong with acquire/release (comparison only)" },
	[LB_FL_CPU] = { "cpu-floor", GPUNIC_FLOOR_FLAG, false, false,
			"one cache line around the CPU executor's pinned threads and hops, "
			"paced as the series" },
};

int lb_series_parse(const char *list, bool want[LB_SER_MAX])
{
	char buf[128], *save = NULL, *tok;

	if (strlen(list) >= sizeof(buf))
		return EINVAL;
	strcpy(buf, list);
	memset(want, 0, LB_SER_MAX * sizeof(want[0]));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool found = false;

		if (strcmp(tok, "gpu") == 0) {
			want[LB_SER_GPU_DB] = want[LB_SER_GPU_BF] = want[LB_SER_GPU_PROXY] = true;
			continue;
		}
		for (int i = 0; i < LB_SER_MAX; i++)
			if (!lb_series_defs[i].rpc && strcmp(tok, lb_series_defs[i].label) == 0)
				want[i] = found = true;
		if (!found)
			return EINVAL;
	}
	for (int i = 0; i < LB_SER_MAX; i++)
		if (want[i])
			return 0;
	return EINVAL;
}

int lb_engine_parse(const char *s, enum lb_engine_choice *e)
{
	static const char *const names[] = { "auto", "thread", "inline" };

	for (int i = 0; i < 3; i++) {
		if (strcmp(s, names[i]) == 0) {
			*e = (enum lb_engine_choice)i;
			return 0;
		}
	}
	return EINVAL;
}

int lb_sensor_engine_parse(const char *s, enum lb_engine_choice *e)
{
	enum lb_engine_choice v;

	if (lb_engine_parse(s, &v) || v == LB_ENGINE_AUTO)
		return EINVAL;
	*e = v;
	return 0;
}

bool lb_bench_hw_one_thread(const struct lb_bench_cfg *c)
{
	return c->hw_thread == LB_HW_ONE || (c->hw_thread == LB_HW_AUTO && !c->throughput);
}

void lb_bench_defaults(struct lb_bench_cfg *c)
{
	*c = (struct lb_bench_cfg){
		.count = 100000,
		.size = LB_DEFAULT_SIZE,
		.interval_ns = LB_DEFAULT_INTERVAL_NS,
		.mode = LB_MODE_WRITE_IMM,
		.work = GPUNIC_LOOP_WORK_NONE,
		.udp_port = GPUNIC_ROCE_UDP_PORT,
		.want = { true, true, true, true, true },
		.qps = 1,
		.slots = LB_DEFAULT_SLOTS,
		.warmup = 1000,
		.timeout_ns = LB_DEFAULT_TIMEOUT_MS * 1000000ull,
		.sensor_engine = LB_ENGINE_INLINE,
		.noise_ns = LB_DEFAULT_NOISE_NS,
	};
}

int lb_bench_parse_link(struct lb_bench_cfg *c, const char *arg)
{
	const char *rest, *comma;
	size_t kind_len, a_len;

	c->raw_kind[0] = 0;
	c->udp = false;
	if (!strcmp(arg, "shm"))
		return 0;
	if (!strcmp(arg, "udp")) {
		c->udp = true;
		return 0;
	}
	if (!strncmp(arg, "packet:", 7))
		kind_len = 6;
	else if (!strncmp(arg, "xdp:", 4))
		kind_len = 3;
	else
		return EINVAL;
	rest = arg + kind_len + 1;
	comma = strchr(rest, ',');
	if (!comma || comma == rest || !comma[1] || strchr(comma + 1, ','))
		return EINVAL;
	a_len = (size_t)(comma - rest);
	if (kind_len + 1 + a_len >= sizeof(c->raw_spec[0]) ||
	    kind_len + 1 + strlen(comma + 1) >= sizeof(c->raw_spec[1]))
		return EINVAL;
	memcpy(c->raw_kind, arg, kind_len);
	c->raw_kind[kind_len] = 0;
	snprintf(c->raw_spec[0], sizeof(c->raw_spec[0]), "%s:%.*s", c->raw_kind, (int)a_len, rest);
	snprintf(c->raw_spec[1], sizeof(c->raw_spec[1]), "%s:%s", c->raw_kind, comma + 1);
	return 0;
}

const char *lb_bench_link_name(const struct lb_bench_cfg *c)
{
	return c->raw_kind[0] ? c->raw_kind : c->udp ? "udp" : "shm";
}

/* ---------------------------------------------------------------- pinning */

void lb_bench_plan_cpus(const struct lb_bench_cfg *c, const int *allowed, int n, const char *list,
			struct lb_cpu_plan *p)
{
	int cpu[3] = { -1, -1, -1 }, skip = n >= 4 ? 1 : 0;
	char extra[48] = "";

	if (c->cpus_given) {
		memcpy(cpu, c->cpus, sizeof(cpu));
	} else if (n >= 3) {
		for (int i = 0; i < 3; i++)
			cpu[i] = allowed[i + skip];
	} else if (n == 2) {
		cpu[0] = allowed[0];
		cpu[1] = cpu[2] = allowed[1];
	}
	p->sensor = cpu[0];
	p->engine = cpu[1];
	p->exec = cpu[2];
	p->sensor_engine = !c->cpus_given && n >= 4 + skip ? allowed[3 + skip] : -1;
	if (p->sensor_engine >= 0)
		snprintf(extra, sizeof(extra), ", sensor's NIC engine on CPU %d", p->sensor_engine);
	/* three busy-polling threads on two cores turn each round trip into a time slice */
	p->inline_engine = c->engine == LB_ENGINE_INLINE || (c->engine == LB_ENGINE_AUTO && n < 3);
	if (cpu[0] < 0)
		snprintf(p->note, sizeof(p->note), "1 CPU allowed (%s): threads unpinned", list);
	else
		snprintf(p->note, sizeof(p->note),
			 "sensor on CPU %d, NIC engine on CPU %d, executor on CPU %d%s "
			 "(allowed %s)%s", cpu[0], cpu[1], cpu[2], extra, list,
			 p->inline_engine ? "; cpu/naive executors drive the NIC inline" : "");
}

void lb_bench_plan_cpus_here(const struct lb_bench_cfg *c, struct lb_cpu_plan *p)
{
	int allowed[5], n = timing_cpu_count(), got = 0;
	char list[64] = "";

	for (int i = 0; i < 5 && i < n; i++)
		if (timing_cpu_nth((unsigned)i, &allowed[got]) == 0)
			got++;
	timing_cpu_list(list, sizeof(list));
	/* only the first five matter; n decides whether the first is skipped */
	lb_bench_plan_cpus(c, allowed, got < 5 ? got : n, list, p);
}

/* @cpu's entry in @out, added with @role, or joined to the one it has. */
static void noise_role(struct lb_noise *out, int cpu, const char *role)
{
	size_t used;
	int i;

	if (cpu < 0)
		return;
	for (i = 0; i < out->n && out->cpu[i].cpu != cpu; i++)
		;
	if (i == out->n) {
		if (out->n == LB_NOISE_MAX_CPUS)
			return;
		out->cpu[out->n++].cpu = cpu;
		snprintf(out->roles[i], sizeof(out->roles[i]), "%s", role);
		return;
	}
	used = strlen(out->roles[i]);
	snprintf(out->roles[i] + used, sizeof(out->roles[i]) - used, ", %s", role);
}

int lb_bench_host_noise(const struct lb_bench_cfg *c, const struct lb_cpu_plan *p,
			struct lb_noise *out)
{
	int cpus[LB_NOISE_MAX_CPUS];

	memset(out, 0, sizeof(*out));
	if (!c->noise_ns)
		return 0;
	noise_role(out, p->sensor, "sensor");
	noise_role(out, p->engine, "NIC engine");
	noise_role(out, p->exec, "executor");
	if (c->sensor_engine == LB_ENGINE_THREAD)
		noise_role(out, p->sensor_engine, "sensor's NIC engine");
	if (!out->n)
		return 0;
	for (int i = 0; i < out->n; i++)
		cpus[i] = out->cpu[i].cpu;
	return hostnoise_measure(cpus, out->n, c->noise_ns, out->cpu);
}

/* ---------------------------------------------------------------- running */

bool lb_run_clean(const struct lb_run_result *r)
{
	return r->counts.lost == 0 && r->counts.corrupt == 0 && r->counts.dup == 0 &&
	       r->verified == r->sent && !r->rx_errors && !r->send_errors;
}

int lb_bench_pair_open(const struct lb_bench *b, enum lb_series_id id, struct lb_pair *p)
{
	const struct lb_bench_cfg *c = b->cfg;
	struct lb_fwd_cfg fc = {
		.exec = lb_series_defs[id].exec,
		.handler = lb_series_defs[id].handler,
		.mode = c->mode,
		/* an RPC series' work is its function */
		.work = lb_series_defs[id].rpc ? GPUNIC_LOOP_WORK_NONE : c->work,
		.slots = c->slots,
		.gpu = c->gpu,
		.engine_cpu = b->cpus->engine,
		.exec_cpu = b->cpus->exec,
		.inline_engine = b->cpus->inline_engine,
		.idle_qps = c->qps - 1,
		/* how busy the engine was says whether it held a throughput step's rate */
		.time_engine = c->throughput,
		.nic_driven_elsewhere = lb_bench_hw_one_thread(c),
		.gpu_polls = c->gpu_polls,
		.rpc = lb_series_defs[id].rpc != LB_SER_PLAIN,
	};
	struct lb_pair_cfg pc = {
		.udp = c->udp,
		.udp_port = c->udp_port,
		.spec_fwd = c->raw_kind[0] ? c->raw_spec[0] : NULL,
		.spec_sensor = c->raw_kind[0] ? c->raw_spec[1] : NULL,
		.mode = c->mode,
		.size = c->size,
		.sensor_engine = c->sensor_engine == LB_ENGINE_THREAD,
		.sensor_engine_cpu = b->cpus->sensor_engine,
	};

	return lb_pair_open(p, &fc, &pc);
}

struct sensor_job {
	struct lb_sensor *s;
	const struct lb_run_cfg *cfg;
	struct stats_rec *rec;
	struct lb_run_result *res;
	int err;
	atomic_bool done;
};

static void *sensor_main(void *arg)
{
	struct sensor_job *j = arg;

	j->err = lb_sensor_run(j->s, j->cfg, j->rec, j->res);
	atomic_store_explicit(&j->done, true, memory_order_release);
	return NULL;
}

/* Stamps a point may take beyond the run's messages (a WQE looked at twice, a straggler). */
#define HOP_TRACE_SPARE 1024

#define PROGRESS_TICK_NS 100000000L	/* how often this thread looks */
#define PROGRESS_REDRAW_TICKS 5		/* how often the bar is redrawn */

int lb_bench_sensor_run(const struct lb_bench *b, const char *label, struct lb_sensor *s,
			const struct lb_run_cfg *cfg, struct stats_rec *rec,
			struct lb_run_result *res)
{
	struct timespec tick = { .tv_nsec = PROGRESS_TICK_NS };
	struct sensor_job j = { .s = s, .cfg = cfg, .rec = rec, .res = res };
	uint64_t sent, back;
	pthread_t thr;
	unsigned n = 0;
	int err;

	atomic_init(&j.done, false);
	err = timing_thread_start(&thr, "gpunic-sensor", b->cpus->sensor, sensor_main, &j);
	if (err) {
		fprintf(stderr, "gpunic: starting the sensor thread: %s\n", strerror(err));
		return err;
	}
	while (!atomic_load_explicit(&j.done, memory_order_acquire)) {
		nanosleep(&tick, NULL);
		if (++n % PROGRESS_REDRAW_TICKS)
			continue;
		lb_sensor_progress(s, &sent, &back);
		progress_bar(b->progress, label, sent, cfg->count, back);
	}
	pthread_join(thr, NULL);
	progress_clear(b->progress);
	return j.err;
}

static struct lb_run_cfg run_cfg(const struct lb_bench_cfg *c, enum lb_series_id id,
				 bool latency)
{
	uint32_t fn = lb_series_rpc_fn(c, id);

	return (struct lb_run_cfg){
		.interval_ns = c->interval_ns,
		/* latency re-anchors after a stall; throughput holds the rate it asks for */
		.rephase = latency,
		.closed_loop = latency && c->interval_ns == 0,
		.expect_add_one = !fn && c->work == GPUNIC_LOOP_WORK_ADD_ONE,
		.timeout_ns = c->timeout_ns,
		.stop = &lb_stop_flag,
		.rpc_fn = fn,
		.rpc_clock = fn ? &bench_rpc_clock : NULL,
	};
}

int lb_bench_latency(const struct lb_bench *b, enum lb_series_id id, struct stats_rec *rec,
		     struct lb_series_result *out)
{
	const char *label = lb_series_defs[id].label;
	struct lb_run_cfg cfg = run_cfg(b->cfg, id, true);
	struct lb_pair p;
	int err, stop_err;

	memset(out, 0, sizeof(*out));
	progress_step(b->progress, "%s: %s, %llu messages", label, lb_series_defs[id].what,
			 (unsigned long long)b->cfg->count);
	err = lb_bench_pair_open(b, id, &p);
	if (err)
		return err;
	if (b->cfg->warmup) {
		cfg.count = b->cfg->warmup;
		cfg.epoch = 1;
		err = lb_bench_sensor_run(b, label, p.s, &cfg, rec, &out->warm);
		if (err)
			goto out;
	}
	cfg.count = b->cfg->count;
	cfg.epoch = 2;
	/* a diagnostic build stamps the measured run's path (nothing is in flight now) */
	if (hop_trace_built() && hop_trace_begin(cfg.count + HOP_TRACE_SPARE))
		fprintf(stderr, "gpunic: no memory for the hop trace: not stamped\n");
	err = lb_bench_sensor_run(b, label, p.s, &cfg, rec, &out->run);
	if (hop_trace_built()) {
		hop_trace_end();
		hop_trace_report(stderr, label);
	}
	stop_err = lb_fwd_stop(p.f, &out->fwd);
	if (!err)
		err = stop_err;
	if (!err)
		err = stats_summarize(rec, &out->sum);
	out->handler = lb_fwd_handler(p.f);
	out->rpc_fn = cfg.rpc_fn;
out:
	lb_pair_close(&p);
	return err;
}

/* @n samples of @rtt into @rec and @sum. */
static int floor_record(struct stats_rec *rec, const uint64_t *rtt, uint64_t n,
			struct stats_summary *sum)
{
	int err;

	stats_rec_reset(rec);
	for (uint64_t i = 0; i < n; i++)
		stats_rec_add(rec, i, rtt[i], STATS_SAMPLE_VERIFIED);
	err = stats_rec_finish(rec, n);
	return err ? err : stats_summarize(rec, sum);
}

/* The GPU floors end their run early on Ctrl-C, as the series do. */
static bool floor_stopped(void)
{
	return atomic_load(&lb_stop_flag);
}

/*
 * A GPU floor: one run, or one per number of pollers keeping the run of the best p50 (its
 * *@done samples end in @best). Each run is a few tenths of a second at the default count; a
 * run Ctrl-C cut short is the last one.
 */
static int floor_gpu(const struct lb_bench *b, enum lb_floor_id id, struct stats_rec *rec,
		     uint64_t *best, uint64_t *cur, struct lb_floor_result *out, uint32_t *done)
{
	const struct lb_floor_def *d = &lb_floor_defs[id];
	uint32_t count = (uint32_t)b->cfg->count, kmax = d->sweep ? GPUNIC_FLOOR_POLLERS_MAX : 1;
	struct gpunic_floor_opts o = { .kind = d->kind, .stop_every_poll = d->stop_every_poll,
				       .stop = floor_stopped };
	struct gpunic_floor_result fr;
	struct stats_summary sum;
	int err;

	*done = 0;
	for (uint32_t k = 1; k <= kmax && !floor_stopped(); k++) {
		o.pollers = k;
		err = gpunic_gpu_floor_run(b->cfg->gpu, &o, count, (uint32_t)b->cfg->warmup, cur,
					   &fr);
		if (err)
			return err;
		if (!fr.done)
			break;
		err = floor_record(rec, cur, fr.done, &sum);
		if (err)
			return err;
		if (d->sweep) {
			out->sweep_p50_ns[k - 1] = sum.p50_ns;
			out->sweep_p99_ns[k - 1] = sum.p99_ns;
		}
		if (k == 1 || sum.p50_ns < out->sum.p50_ns) {
			memcpy(best, cur, fr.done * sizeof(*cur));
			*done = fr.done;
			out->sum = sum;
			out->pollers = fr.pollers;
			out->stagger_ns = fr.stagger_ns;
			memcpy(out->torn, fr.torn, sizeof(out->torn));
		}
	}
	return 0;
}

int lb_bench_floor(const struct lb_bench *b, enum lb_floor_id id, struct stats_rec *rec,
		   struct lb_floor_result *out)
{
	uint64_t count = b->cfg->count, *rtt = malloc(2 * count * sizeof(*rtt));
	uint32_t done = (uint32_t)count;
	int err;

	memset(out, 0, sizeof(*out));
	if (!rtt)
		return ENOMEM;
	progress_step(b->progress, "%s: %s, %llu round trips", lb_floor_defs[id].label,
			 lb_floor_defs[id].what, (unsigned long long)count);
	if (id == LB_FL_CPU)
		/* with the emulated hardware on one thread the path has the two hops of the
		 * inline engine: sensor's thread to executor and back */
		err = cpu_floor_run(b->cpus->sensor, b->cpus->engine, b->cpus->exec,
				    b->cpus->inline_engine || lb_bench_hw_one_thread(b->cfg),
				    (uint32_t)count, (uint32_t)b->cfg->warmup, b->cfg->interval_ns,
				    rtt, &lb_stop_flag, &done);
	else
		err = floor_gpu(b, id, rec, rtt, rtt + count, out, &done);
	if (err) {
		fprintf(stderr, "gpunic: %s: %s\n", lb_floor_defs[id].label, strerror(err));
		free(rtt);
		return err;
	}
	/* stopped (SIGINT) before a round trip was measured: nothing to report */
	if (!done) {
		free(rtt);
		return EINTR;
	}
	err = floor_record(rec, rtt, done, &out->sum);
	free(rtt);
	return err;
}

/* ---------------------------------------------------------------- throughput search */

void lb_tp_init(struct lb_tp_search *t, uint64_t start_ns)
{
	*t = (struct lb_tp_search){ .iv = start_ns };
}

bool lb_tp_next(const struct lb_tp_search *t, uint64_t *iv)
{
	*iv = t->iv;
	return !t->done;
}

uint64_t lb_tp_step_count(uint64_t tp_count, uint64_t iv)
{
	uint64_t n = tp_count;

	if (iv && n * iv > LB_TP_STEP_NS)
		n = LB_TP_STEP_NS / iv > LB_TP_STEP_MIN_MSGS ? LB_TP_STEP_NS / iv :
								LB_TP_STEP_MIN_MSGS;
	return n < tp_count ? n : tp_count;
}

/* The next bisection point, or the end when there is nothing left to split. */
static void tp_bisect(struct lb_tp_search *t)
{
	t->bisecting = true;
	if (!t->have_pass || !t->have_fail || t->bisect_steps >= LB_TP_BISECT_STEPS ||
	    t->pass_iv - t->fail_iv <= LB_TP_RESOLUTION_NS) {
		t->done = true;
		return;
	}
	t->bisect_steps++;
	t->iv = t->fail_iv + (t->pass_iv - t->fail_iv) / 2;
}

static void tp_failed(struct lb_tp_search *t)
{
	bool had_pass = t->have_pass;

	t->have_fail = true;
	t->fail_iv = t->iv;
	if (!t->bisecting && !had_pass && t->iv && t->iv < LB_TP_MAX_INTERVAL_NS) {
		/* even the starting rate is too high: look upwards first */
		t->iv *= 2;
		return;
	}
	tp_bisect(t);
}

static void tp_passed(struct lb_tp_search *t)
{
	bool found_upwards = t->have_fail && !t->have_pass;

	t->pass_iv = t->iv;
	t->have_pass = true;
	/* found by going up from a failure, or at back to back: the answer is bracketed */
	if (t->bisecting || found_upwards || t->iv == 0) {
		tp_bisect(t);
		return;
	}
	t->iv = t->iv / 2 < LB_TP_MIN_INTERVAL_NS ? 0 : t->iv / 2;
}

bool lb_tp_record(struct lb_tp_search *t, bool pass, double achieved)
{
	bool best = false;

	if (t->done)
		return false;
	t->steps++;
	if (!pass && !t->retrying) {
		t->retrying = true;	/* iv again before it counts */
		return false;
	}
	t->retrying = false;
	if (!pass) {
		tp_failed(t);
		return false;
	}
	if (!t->best_valid || achieved > t->best_rate) {
		t->best_valid = true;
		t->best_rate = achieved;
		t->best_iv = t->iv;
		best = true;
	}
	tp_passed(t);
	return best;
}

static int tp_warmup(const struct lb_bench *b, enum lb_series_id id, struct lb_pair *p,
		     struct stats_rec *rec)
{
	const char *label = lb_series_defs[id].label;
	struct lb_run_cfg cfg = run_cfg(b->cfg, id, false);
	struct lb_run_result res;

	if (!b->cfg->warmup)
		return 0;
	cfg.count = b->cfg->warmup < b->cfg->tp_count ? b->cfg->warmup : b->cfg->tp_count;
	cfg.epoch = 1;
	return lb_bench_sensor_run(b, label, p->s, &cfg, rec, &res);
}

/* Both NICs' drop and link-full counters and the engine's times, to be subtracted after the
 * step. */
static void tp_where_read(struct lb_pair *p, struct lb_tp_where *d)
{
	struct gpunic_nic_counters f = { 0 }, s = { 0 };

	lb_fwd_nic_counters(p->f, &f);
	lb_sensor_counters(p->s, &s);
	memcpy(d->fwd, f.drops, sizeof(d->fwd));
	memcpy(d->sensor, s.drops, sizeof(d->sensor));
	d->fwd_tx_busy = f.tx_busy;
	d->sensor_tx_busy = s.tx_busy;
	d->engine_busy_ns = f.engine_busy_ns;
	d->engine_idle_ns = f.engine_idle_ns;
}

static void tp_where_since(struct lb_pair *p, const struct lb_tp_where *before,
			   struct lb_tp_where *d)
{
	tp_where_read(p, d);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++) {
		d->fwd[i] -= before->fwd[i];
		d->sensor[i] -= before->sensor[i];
	}
	d->fwd_tx_busy -= before->fwd_tx_busy;
	d->sensor_tx_busy -= before->sensor_tx_busy;
	d->engine_busy_ns -= before->engine_busy_ns;
	d->engine_idle_ns -= before->engine_idle_ns;
}

/* Append to @buf at @at, never past @len. Return: the new end (len when it ran out). */
static size_t __attribute__((format(printf, 4, 5))) put(char *buf, size_t len, size_t at,
							  const char *fmt, ...)
{
	va_list ap;
	int w;

	if (at >= len)
		return len;
	va_start(ap, fmt);
	w = vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
	return w < 0 || (size_t)w >= len - at ? len : at + (size_t)w;
}

static size_t drops_side(const char *side, const uint64_t *drops, uint64_t link_full,
			 char *buf, size_t len, size_t at, size_t start)
{
	for (int i = 0; i <= GPUNIC_DROP_MAX; i++) {
		uint64_t n = i < GPUNIC_DROP_MAX ? drops[i] : link_full;
		const char *what = i < GPUNIC_DROP_MAX ?
					   gpunic_drop_reason_name((enum gpunic_drop_reason)i) :
					   "link_full";

		if (n)
			at = put(buf, len, at, "%s%s %s %llu", at > start ? ", " : "", side, what,
				 (unsigned long long)n);
	}
	return at;
}

void lb_tp_where_text(const struct lb_tp_step *st, char *buf, size_t len)
{
	const struct lb_tp_where *d = &st->where;
	double n = st->res.sent ? (double)st->res.sent : 1.0;
	bool engine = d->engine_busy_ns + d->engine_idle_ns, sensor = st->res.loop_ns;
	size_t at = 0, sep, start;

	if (!len)
		return;
	buf[0] = 0;
	/* per message, not a share of the step: a lost message stretches the step by a whole
	 * timeout while the threads are idle */
	if (engine || sensor)
		at = put(buf, len, at, "busy per message:");
	if (engine)
		at = put(buf, len, at, " forwarder engine %.0f ns%s", (double)d->engine_busy_ns / n,
			 sensor ? "," : "");
	if (sensor)
		at = put(buf, len, at, " sensor %.0f ns",
			 (double)(st->res.loop_ns - st->res.idle_ns) / n);
	sep = at;
	start = at ? put(buf, len, at, "; ") : 0;
	at = drops_side("forwarder", d->fwd, d->fwd_tx_busy, buf, len, start, start);
	at = drops_side("sensor", d->sensor, d->sensor_tx_busy, buf, len, at, start);
	if (at == start && sep < len)
		buf[sep] = 0;	/* no counts: no "; " either */
}

static int tp_step(const struct lb_bench *b, enum lb_series_id id, struct lb_pair *p,
		   uint64_t iv, uint32_t epoch, struct stats_rec *rec, struct lb_tp_step *st)
{
	const char *label = lb_series_defs[id].label;
	struct lb_run_cfg cfg = run_cfg(b->cfg, id, false);
	struct lb_tp_where before;
	int err;

	cfg.interval_ns = iv;
	cfg.count = lb_tp_step_count(b->cfg->tp_count, iv);
	cfg.epoch = epoch;
	progress_step(b->progress, "%s: throughput step %u, one message every %.3f us, %llu "
			 "messages", label, st->n, (double)iv / 1000.0,
			 (unsigned long long)cfg.count);
	tp_where_read(p, &before);
	err = lb_bench_sensor_run(b, label, p->s, &cfg, rec, &st->res);
	if (!err)
		err = stats_summarize(rec, &st->sum);
	if (err)
		return err;
	tp_where_since(p, &before, &st->where);
	st->interval_ns = iv;
	st->achieved = st->res.send_ns && st->res.sent > 1 ?
			       (double)(st->res.sent - 1) * 1e9 / (double)st->res.send_ns : 0;
	st->pass = lb_run_clean(&st->res) && !st->res.stopped;
	return 0;
}

int lb_bench_throughput(const struct lb_bench *b, enum lb_series_id id, struct stats_rec *recs[2],
			lb_tp_step_fn on_step, void *arg, struct lb_tp_result *out)
{
	const char *label = lb_series_defs[id].label;
	struct stats_rec *cur = recs[0], *best = recs[1], *tmp;
	struct lb_tp_search t;
	struct lb_tp_step st;
	uint32_t epoch = 2;
	struct lb_pair p;
	uint64_t iv;
	int err;

	memset(out, 0, sizeof(*out));
	progress_step(b->progress, "%s: throughput search, %llu messages per step", label,
			 (unsigned long long)b->cfg->tp_count);
	err = lb_bench_pair_open(b, id, &p);
	if (err)
		return err;
	err = tp_warmup(b, id, &p, cur);
	lb_tp_init(&t, b->cfg->interval_ns);
	while (!err && lb_tp_next(&t, &iv) && !atomic_load(&lb_stop_flag)) {
		memset(&st, 0, sizeof(st));
		st.n = t.steps + 1;
		err = tp_step(b, id, &p, iv, epoch++, cur, &st);
		if (err)
			break;
		if (on_step)
			on_step(arg, label, &st);
		if (lb_tp_record(&t, st.pass, st.achieved)) {
			out->best = st;
			tmp = best;
			best = cur;
			cur = tmp;
		}
	}
	out->found = t.best_valid;
	out->fail_iv = t.fail_iv;
	out->rec = best;
	lb_pair_close(&p);
	return err;
}

/* ---------------------------------------------------------------- the whole bench */

int lb_bench_need_gpu(struct lb_bench_cfg *c, bool have_gpu, const char *reason)
{
	for (int i = 0; i < LB_SER_MAX && !have_gpu; i++) {
		if (!c->want[i] || lb_series_defs[i].exec == LB_EXEC_CPU || lb_series_defs[i].rpc)
			continue;
		if (c->executors_given) {
			fprintf(stderr, "gpunic: %s needs a GPU, and there is none: "
					"%s\n", lb_series_defs[i].label, reason);
			return ENODEV;
		}
		c->want[i] = false;
	}
	return 0;
}

static int run_floors(const struct lb_bench *b, const struct lb_bench_ops *ops, void *arg,
		      struct stats_rec *rec)
{
	struct lb_floor_result r;
	int err = 0;

	for (int i = 0; i < LB_FL_MAX && !err && !atomic_load(&lb_stop_flag); i++) {
		bool cpu = i == LB_FL_CPU;

		/* the CPU floor needs its threads pinned apart: one CPU has nothing to measure */
		if (cpu ? !b->cfg->want[LB_SER_CPU] || b->cpus->sensor < 0 : !b->have_gpu)
			continue;
		err = lb_bench_floor(b, (enum lb_floor_id)i, rec, &r);
		if (err == EINTR)
			return 0;	/* stopped before it measured anything */
		if (!err && ops->floor_done)
			err = ops->floor_done(arg, (enum lb_floor_id)i, rec, &r);
	}
	return err;
}

static int run_one(const struct lb_bench *b, enum lb_series_id id, const struct lb_bench_ops *ops,
		   void *arg, struct stats_rec *recs[2])
{
	struct lb_series_result r;
	struct lb_tp_result t;
	int err;

	if (b->cfg->throughput) {
		err = lb_bench_throughput(b, id, recs, ops->tp_step, arg, &t);
		if (!err && ops->tp_done)
			err = ops->tp_done(arg, id, &t);
		return err;
	}
	err = lb_bench_latency(b, id, recs[0], &r);
	if (!err && ops->series_done)
		err = ops->series_done(arg, id, recs[0], &r);
	return err;
}

/* Series @id if the configuration wants it and no signal came: a failure is said here. */
static int run_wanted(const struct lb_bench *b, enum lb_series_id id,
		      const struct lb_bench_ops *ops, void *arg, struct stats_rec *recs[2])
{
	int err;

	if (!lb_series_wanted(b->cfg, id) || atomic_load(&lb_stop_flag))
		return 0;
	err = run_one(b, id, ops, arg, recs);
	if (err)
		fprintf(stderr, "gpunic: %s failed: %s\n", lb_series_defs[id].label, strerror(err));
	return err;
}

int lb_bench_run(const struct lb_bench *b, const struct lb_bench_ops *ops, void *arg)
{
	const struct lb_bench_cfg *c = b->cfg;
	struct stats_rec rec[2] = { { 0 } };
	struct stats_rec *recs[2] = { &rec[0], &rec[1] };
	int err = 0;

	/* the recorders see every run, the warm-up included */
	for (int i = 0; i < 2 && !err; i++)
		err = stats_rec_init(&rec[i], c->throughput ? c->tp_count :
					      c->count > c->warmup ? c->count : c->warmup);
	if (err)
		fprintf(stderr, "gpunic: sample recorder: %s\n", strerror(err));
	if (!err && !c->throughput)
		err = run_floors(b, ops, arg, &rec[0]);
	/* each plain series, then the RPC series compared with it, under the same conditions */
	for (int i = 0; i < LB_SER_MAX && !err; i++) {
		if (lb_series_defs[i].rpc)
			continue;
		err = run_wanted(b, (enum lb_series_id)i, ops, arg, recs);
		for (int j = 0; j < LB_SER_MAX && !err; j++)
			if (lb_series_defs[j].rpc && lb_series_defs[j].base == (enum lb_series_id)i)
				err = run_wanted(b, (enum lb_series_id)j, ops, arg, recs);
	}
	stats_rec_free(&rec[0]);
	stats_rec_free(&rec[1]);
	return err;
}

/* ---------------------------------------------------------------- ratios and load */

static void ratio(struct lb_ratio *out, size_t *n, const char *name, uint64_t num, uint64_t den)
{
	if (!num || !den || *n >= LB_RATIOS_MAX)
		return;
	out[*n] = (struct lb_ratio){ .name = name, .value = (double)num / (double)den,
				     .num_ns = num, .den_ns = den };
	(*n)++;
}

static uint64_t p50(const struct stats_summary *s)
{
	return s ? s->p50_ns : 0;
}

static uint64_t p99(const struct stats_summary *s)
{
	return s ? s->p99_ns : 0;
}

/* The RPC series' rows: p50 over the plain series' (echo), p50 less rpc echo's (-rpc-fn). */
static const char *const rpc_row_names[LB_SER_MAX] = {
	[LB_SER_GPU_DB_RPC] = "gpu-db-rpc p50 / gpu-db p50",
	[LB_SER_GPU_BF_RPC] = "gpu-bf-rpc p50 / gpu-bf p50",
	[LB_SER_GPU_PROXY_RPC] = "gpu-proxy-rpc p50 / gpu-proxy p50",
	[LB_SER_CPU_RPC] = "cpu-rpc p50 / cpu p50",
	[LB_SER_GPU_DB_RPC_FN] = "gpu-db-rpc-fn p50 - gpu-db-rpc p50",
	[LB_SER_GPU_BF_RPC_FN] = "gpu-bf-rpc-fn p50 - gpu-bf-rpc p50",
	[LB_SER_GPU_PROXY_RPC_FN] = "gpu-proxy-rpc-fn p50 - gpu-proxy-rpc p50",
	[LB_SER_CPU_RPC_FN] = "cpu-rpc-fn p50 - cpu-rpc p50",
};

static const char *const rpc_rate_names[LB_SER_MAX] = {
	[LB_SER_GPU_DB_RPC] = "gpu-db-rpc rate / gpu-db rate",
	[LB_SER_GPU_BF_RPC] = "gpu-bf-rpc rate / gpu-bf rate",
	[LB_SER_GPU_PROXY_RPC] = "gpu-proxy-rpc rate / gpu-proxy rate",
	[LB_SER_CPU_RPC] = "cpu-rpc rate / cpu rate",
	[LB_SER_GPU_DB_RPC_FN] = "gpu-db-rpc-fn rate / gpu-db-rpc rate",
	[LB_SER_GPU_BF_RPC_FN] = "gpu-bf-rpc-fn rate / gpu-bf-rpc rate",
	[LB_SER_GPU_PROXY_RPC_FN] = "gpu-proxy-rpc-fn rate / gpu-proxy-rpc rate",
	[LB_SER_CPU_RPC_FN] = "cpu-rpc-fn rate / cpu-rpc rate",
};

/* What an RPC series is compared with: its plain series (echo), rpc echo's (-rpc-fn). */
static enum lb_series_id rpc_reference(enum lb_series_id id)
{
	const struct lb_series_def *d = &lb_series_defs[id];

	return d->rpc == LB_SER_RPC_FN ? (enum lb_series_id)(id - LB_SER_GPU_DB_RPC_FN +
							      LB_SER_GPU_DB_RPC) :
					 d->base;
}

static void rpc_rows(const struct stats_summary *const ser[LB_SER_MAX], struct lb_ratio *out,
		     size_t *n)
{
	for (int i = 0; i < LB_SER_MAX; i++) {
		const struct stats_summary *ref;

		if (!lb_series_defs[i].rpc)
			continue;
		ref = ser[rpc_reference((enum lb_series_id)i)];
		if (lb_series_defs[i].rpc == LB_SER_RPC_ECHO) {
			ratio(out, n, rpc_row_names[i], p50(ser[i]), p50(ref));
		} else if (p50(ser[i]) && p50(ref) && *n < LB_RATIOS_MAX) {
			out[*n] = (struct lb_ratio){ .name = rpc_row_names[i],
						     .value = (double)p50(ser[i]) - (double)p50(ref),
						     .num_ns = p50(ser[i]), .den_ns = p50(ref),
						     .difference = true };
			(*n)++;
		}
	}
}

size_t lb_bench_rpc_rates(const double rate[LB_SER_MAX], struct lb_rate_ratio out[LB_SER_MAX])
{
	size_t n = 0;

	for (int i = 0; i < LB_SER_MAX; i++) {
		double ref;

		if (!lb_series_defs[i].rpc)
			continue;
		ref = rate[rpc_reference((enum lb_series_id)i)];
		if (rate[i] > 0 && ref > 0)
			out[n++] = (struct lb_rate_ratio){ .name = rpc_rate_names[i],
							   .value = rate[i] / ref, .num = rate[i],
							   .den = ref };
	}
	return n;
}

size_t lb_bench_ratios(const struct stats_summary *const ser[LB_SER_MAX],
		       const struct stats_summary *const fl[LB_FL_MAX], bool have_gpu,
		       struct lb_ratio out[LB_RATIOS_MAX])
{
	const struct stats_summary *gpu = ser[LB_SER_GPU_BF] ? ser[LB_SER_GPU_BF] :
					  ser[LB_SER_GPU_DB] ? ser[LB_SER_GPU_DB] :
							       ser[LB_SER_GPU_PROXY];
	const struct stats_summary *cpu = ser[LB_SER_CPU], *floor = fl[LB_FL_FLAG];
	const struct stats_summary *line = fl[LB_FL_LINE];
	size_t n = 0;

	ratio(out, &n, "cpu p50 / cpu-floor p50", p50(cpu), p50(fl[LB_FL_CPU]));
	ratio(out, &n, "cpu p99 / cpu-floor p99", p99(cpu), p99(fl[LB_FL_CPU]));
	/* the GPU's RPC series run only with a GPU, so these rows need no check of their own */
	rpc_rows(ser, out, &n);
	if (!have_gpu)
		return n;
	ratio(out, &n, "gpu-bf p50 / floor p50", p50(ser[LB_SER_GPU_BF]), p50(floor));
	ratio(out, &n, "gpu-bf p99 / floor p99", p99(ser[LB_SER_GPU_BF]), p99(floor));
	ratio(out, &n, "gpu-bf p50 / exchange-floor p50", p50(ser[LB_SER_GPU_BF]), p50(line));
	ratio(out, &n, "gpu-bf p99 / exchange-floor p99", p99(ser[LB_SER_GPU_BF]), p99(line));
	ratio(out, &n, "gpu-db p50 / exchange-floor p50", p50(ser[LB_SER_GPU_DB]), p50(line));
	ratio(out, &n, "gpu-proxy p50 / exchange-floor p50", p50(ser[LB_SER_GPU_PROXY]),
	      p50(line));
	ratio(out, &n, "gpu-db p50 / floor p50", p50(ser[LB_SER_GPU_DB]), p50(floor));
	ratio(out, &n, "gpu-proxy p50 / floor p50", p50(ser[LB_SER_GPU_PROXY]), p50(floor));
	/* the poll loop without its second read, against the one with it */
	ratio(out, &n, "floor p50 / floor-stopread p50", p50(floor),
	      p50(fl[LB_FL_FLAG_STOPREAD]));
	ratio(out, &n, "exchange-floor p50 / exchange-floor-stopread p50", p50(line),
	      p50(fl[LB_FL_LINE_STOPREAD]));
	ratio(out, &n, "gpu-proxy p50 / gpu-db p50", p50(ser[LB_SER_GPU_PROXY]),
	      p50(ser[LB_SER_GPU_DB]));
	ratio(out, &n, "floor-acqrel p50 / floor p50", p50(fl[LB_FL_ACQREL]), p50(floor));
	ratio(out, &n, "naive p50 / gpu p50", p50(ser[LB_SER_NAIVE]), p50(gpu));
	ratio(out, &n, "cpu p50 / gpu p50", p50(cpu), p50(gpu));
	ratio(out, &n, "cpu p50 / floor p50", p50(cpu), p50(floor));
	return n;
}

int lb_loadavg(double load[3])
{
	FILE *f = fopen("/proc/loadavg", "r");
	int got;

	if (!f)
		return errno;
	got = fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]);
	fclose(f);
	return got == 3 ? 0 : EIO;
}

bool lb_load_too_high(double load1, int ncpus)
{
	return ncpus > 0 && load1 > (double)ncpus;
}
