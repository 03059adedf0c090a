/* SPDX-License-Identifier: MIT */
/*
 * The experiment `gpunic bench loopback` runs, as a library: which series and floors exist,
 * where the threads go, one latency series (warm-up, measured run, forwarder counters), the
 * floors, the throughput search and the ratios between series. The command parses options into
 * struct lb_bench_cfg, calls these and prints and records what they return (apps/gpunic/
 * cmd_bench.c); nothing here writes the report folder or stdout.
 *
 * Live progress goes to a struct progress (src/measure/progress.h): a line per step and a bar
 * on a terminal, nothing elsewhere unless asked for.
 *
 * Functions return 0 or a positive errno value, and say what failed on stderr ("gpunic: ").
 */
#ifndef GPUNIC_EXP_BENCH_H
#define GPUNIC_EXP_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/gpu.h"
#include "hostnoise.h"
#include "loopback.h"
#include "progress.h"
#include "stats.h"

/* ---------------------------------------------------------------- what runs */

enum lb_series_id {
	LB_SER_GPU_DB,
	LB_SER_GPU_BF,
	LB_SER_GPU_PROXY,
	LB_SER_CPU,
	LB_SER_NAIVE,
	/* With --rpc, each of the first four again with every message an RPC request: to echo
	 * (the dispatch's cost beside the plain echo), then to the function --rpc names when it
	 * is not echo (its handler's cost beside rpc echo). */
	LB_SER_GPU_DB_RPC,
	LB_SER_GPU_BF_RPC,
	LB_SER_GPU_PROXY_RPC,
	LB_SER_CPU_RPC,
	LB_SER_GPU_DB_RPC_FN,
	LB_SER_GPU_BF_RPC_FN,
	LB_SER_GPU_PROXY_RPC_FN,
	LB_SER_CPU_RPC_FN,
	LB_SER_MAX
};

/* What a series' messages are. */
enum lb_series_rpc {
	LB_SER_PLAIN = 0,	/* plain messages, echoed (--work) */
	LB_SER_RPC_ECHO,	/* RPC requests to echo */
	LB_SER_RPC_FN,		/* RPC requests to lb_bench_cfg.rpc_fn */
};

struct lb_series_def {
	const char *label;
	enum lb_executor exec;
	enum gpunic_handler_mode handler;
	const char *what;
	enum lb_series_rpc rpc;
	enum lb_series_id base;		/* an RPC series': the plain one it is compared with */
};

extern const struct lb_series_def lb_series_defs[LB_SER_MAX];

/* The floors each series is measured against, in the same run. */
enum lb_floor_id {
	LB_FL_FLAG,		/* "floor": the flag, the best of 1..4 staggered pollers */
	LB_FL_LINE,		/* "exchange-floor": the 64-byte line, the same */
	LB_FL_FLAG_STOPREAD,	/* the loops gpunic measured until 0.2, the stop flag read */
	LB_FL_LINE_STOPREAD,	/* after every empty poll: kept for one release */
	LB_FL_ACQREL,
	LB_FL_CPU,
	LB_FL_MAX
};

struct lb_floor_def {
	const char *label;
	enum gpunic_floor_kind kind;	/* the GPU floors' */
	bool stop_every_poll;		/* the GPU floors' old poll loop */
	bool sweep;			/* run with 1..GPUNIC_FLOOR_POLLERS_MAX pollers, keep the
					 * best p50: the fastest exchange this machine allows */
	const char *what;
};

/* One floor's run. */
struct lb_floor_result {
	struct stats_summary sum;
	uint32_t torn[2];		/* lines read again: by the GPU, by the CPU (line floors) */
	uint32_t pollers, stagger_ns;	/* GPU floors: the run kept */
	/* a sweep's p50 and p99 with k + 1 pollers (0: not run) */
	uint64_t sweep_p50_ns[GPUNIC_FLOOR_POLLERS_MAX], sweep_p99_ns[GPUNIC_FLOOR_POLLERS_MAX];
};

extern const struct lb_floor_def lb_floor_defs[LB_FL_MAX];

/* "gpu-db,cpu" (and "gpu" for all three GPU series) into @want: plain series only (the RPC
 * ones follow them, lb_series_wanted). Return: 0 or EINVAL. */
int lb_series_parse(const char *list, bool want[LB_SER_MAX]);

enum lb_engine_choice { LB_ENGINE_AUTO, LB_ENGINE_THREAD, LB_ENGINE_INLINE };

enum lb_hw_thread { LB_HW_AUTO, LB_HW_ONE, LB_HW_SPLIT };

int lb_engine_parse(const char *s, enum lb_engine_choice *e);

/* ---------------------------------------------------------------- configuration */

/* Limits of the options, which the command's help and errors quote. */
#define LB_BENCH_MAX_COUNT 10000000ull
#define LB_BENCH_MAX_TIMEOUT_NS 3600000000000ull	/* an hour */
#define LB_BENCH_MIN_TIMEOUT_NS 1000000ull		/* a millisecond */
#define LB_BENCH_MAX_CPU 1023

struct lb_bench_cfg {
	uint64_t count;
	uint32_t size;
	uint64_t interval_ns;
	enum lb_mode mode;
	uint32_t work;
	bool udp;
	uint16_t udp_port;
	/* a raw wire instead: "packet" or "xdp" ("" otherwise) and the forwarder's and the
	 * sensor's link specs on its two ports (lb_bench_parse_link) */
	char raw_kind[8];
	char raw_spec[2][64];
	bool want[LB_SER_MAX];
	bool executors_given;
	uint32_t slots;
	int gpu;
	int cpus[3];		/* sensor, engine, executor */
	bool cpus_given;
	enum lb_engine_choice engine;
	/* the sensor's NIC: driven by the sensor's thread (inline, the default) or by an engine
	 * thread of its own (thread), as an FPGA's NIC runs beside its logic */
	enum lb_engine_choice sensor_engine;
	uint64_t warmup;
	uint64_t timeout_ns;
	bool throughput;
	uint64_t tp_count;	/* messages per search step; 0: count */
	uint32_t qps;		/* QPs on the forwarder's NIC: the active one and qps - 1 idle */
	uint64_t noise_ns;	/* the path's CPUs watched this long first (hostnoise.h); 0: not */
	/* whether the sensor's thread drives both NICs (no engine thread, lb_sensor_drive_also):
	 * auto is one thread for latency runs, where it measured faster, and split for the
	 * throughput search, where one thread would be the emulated hardware's limit */
	enum lb_hw_thread hw_thread;
	uint32_t gpu_polls;	/* GPU forwarder: CQ reads in flight while idle; 0: its default */
	/* --rpc: a built-in function (gpunic/rpc.h); 0: no RPC series. Each wanted series that
	 * can serve RPC is followed by its -rpc series (echo) and, unless this is echo, its
	 * -rpc-fn series (this function). */
	uint32_t rpc_fn;
};

/* Whether @c's runs put the emulated hardware on one thread (LB_HW_AUTO resolved). */
bool lb_bench_hw_one_thread(const struct lb_bench_cfg *c);
/* Does the bench run series @id? Plain ones as @c->want says, RPC ones after their base. */
bool lb_series_wanted(const struct lb_bench_cfg *c, enum lb_series_id id);
/* The function series @id's requests go to (0: plain messages). */
uint32_t lb_series_rpc_fn(const struct lb_bench_cfg *c, enum lb_series_id id);

#define LB_DEFAULT_NOISE_NS 200000000ull	/* 200 ticks at 1000 Hz */
#define LB_MAX_NOISE_MS 10000u

void lb_bench_defaults(struct lb_bench_cfg *c);

/*
 * The bench's --link: "shm", "udp", or "packet:IFA,IFB" / "xdp:IFA[:Q],IFB[:Q]", two ports of
 * one wire (IFA the forwarder's, IFB the sensor's). Return: 0, or EINVAL.
 */
int lb_bench_parse_link(struct lb_bench_cfg *c, const char *arg);
/* "shm", "udp", "packet" or "xdp" */
const char *lb_bench_link_name(const struct lb_bench_cfg *c);

/* ---------------------------------------------------------------- pinning */

struct lb_cpu_plan {
	int sensor, engine, exec;	/* -1: unpinned */
	int sensor_engine;		/* the sensor NIC's engine thread; -1: no CPU of its own */
	bool inline_engine;		/* cpu and naive executors drive the NIC themselves */
	char note[192];			/* one line saying so */
};

/*
 * lb_bench_plan_cpus - a distinct CPU for the sensor, the NIC engine and the executor out of
 * @allowed[@n] (the first skipped when there are four or more: it takes more interrupts), or
 * the CPUs the configuration names. With fewer than three the executor shares the engine's and
 * (engine auto) drives the NIC inline. A fifth allowed CPU (after the skipped one) goes to the
 * sensor NIC's own engine thread when there is one. @list: the allowed set as text, for the note.
 */
void lb_bench_plan_cpus(const struct lb_bench_cfg *c, const int *allowed, int n, const char *list,
			struct lb_cpu_plan *p);

/* The same over the CPUs this thread may run on. */
void lb_bench_plan_cpus_here(const struct lb_bench_cfg *c, struct lb_cpu_plan *p);

/* The host's interruptions of each distinct CPU of a plan, and the roles it runs there. */
#define LB_NOISE_MAX_CPUS 4
struct lb_noise {
	int n;
	char roles[LB_NOISE_MAX_CPUS][48];	/* "engine, executor" */
	struct hostnoise_cpu cpu[LB_NOISE_MAX_CPUS];
};

/*
 * lb_bench_host_noise - watch every CPU of @p that @c's series pin a thread to, all at once, for
 * @c->noise_ns (hostnoise_measure).
 * Return: 0 (out->n = 0 when nothing is pinned or noise_ns is 0), or hostnoise_measure()'s
 * error.
 */
int lb_bench_host_noise(const struct lb_bench_cfg *c, const struct lb_cpu_plan *p,
			struct lb_noise *out);

/* --sensor-engine: "inline" or "thread" (auto is not a choice here). Return: 0 or EINVAL. */
int lb_sensor_engine_parse(const char *s, enum lb_engine_choice *e);

/* ---------------------------------------------------------------- running */

struct lb_bench {
	const struct lb_bench_cfg *cfg;
	const struct lb_cpu_plan *cpus;
	struct progress *progress;	/* NULL: none */
	bool have_gpu;			/* the GPU floors run */
};

/*
 * lb_bench_need_gpu - drop the series that need a GPU from @c->want when @have_gpu is false.
 * Return: 0, or ENODEV (said on stderr with @reason) when the executors were named and one
 * needs the GPU there is not.
 */
int lb_bench_need_gpu(struct lb_bench_cfg *c, bool have_gpu, const char *reason);

/* Every message came back verified, once, and nothing failed on either queue. */
bool lb_run_clean(const struct lb_run_result *r);

/* Both ends of one series, connected, the forwarder running. */
int lb_bench_pair_open(const struct lb_bench *b, enum lb_series_id id, struct lb_pair *p);

/* One sensor run on the sensor's pinned thread while this thread draws the progress bar. */
int lb_bench_sensor_run(const struct lb_bench *b, const char *label, struct lb_sensor *s,
			const struct lb_run_cfg *cfg, struct stats_rec *rec,
			struct lb_run_result *res);

struct lb_series_result {
	struct lb_run_result run;	/* the measured run */
	struct lb_run_result warm;	/* the warm-up (zero when there was none) */
	struct lb_fwd_result fwd;
	enum gpunic_handler_mode handler;	/* as the QP got it */
	struct stats_summary sum;
	uint32_t rpc_fn;		/* the function its requests went to; 0: plain messages */
};

/* lb_bench_latency - warm-up and the measured run of series @id; @rec holds its samples. */
int lb_bench_latency(const struct lb_bench *b, enum lb_series_id id, struct stats_rec *rec,
		     struct lb_series_result *out);

/* lb_bench_floor - floor @id in @rec (count round trips, a sweep's best run; at lb_stop_flag
 * the CPU floor stops within a round trip, a GPU floor within 256, keeping those that
 * completed, EINTR when none did) and @out. */
int lb_bench_floor(const struct lb_bench *b, enum lb_floor_id id, struct stats_rec *rec,
		   struct lb_floor_result *out);

/* ---------------------------------------------------------------- throughput search */

#define LB_TP_MIN_INTERVAL_NS 50u	/* below this the halving jumps to back-to-back (0) */
#define LB_TP_MAX_INTERVAL_NS 10000000ull	/* doubling up from a failing start stops here */
#define LB_TP_STEP_NS 2000000000ull	/* slow steps are cut to about this long ... */
#define LB_TP_STEP_MIN_MSGS 1000ull	/* ... but never below this many messages */
#define LB_TP_BISECT_STEPS 4
#define LB_TP_RESOLUTION_NS 20u

/*
 * The search, apart from running anything: halve the interval from the start while steps pass
 * (when even the start fails, double it until one passes), then bisect between the closest pass
 * and failure. A failure is tried once more before it counts, so that one stall of a shared
 * machine is not taken for saturation. The best pass is the one with the highest achieved rate.
 */
struct lb_tp_search {
	uint64_t iv;		/* the interval to try next */
	uint64_t pass_iv, fail_iv;
	bool have_pass, have_fail;
	bool bisecting;
	bool retrying;		/* iv failed once: this is its second try */
	bool done;
	unsigned bisect_steps;
	unsigned steps;		/* steps recorded, retries included */
	bool best_valid;
	uint64_t best_iv;
	double best_rate;
};

void lb_tp_init(struct lb_tp_search *t, uint64_t start_ns);
/* The interval to try next. Return: false when the search is over. */
bool lb_tp_next(const struct lb_tp_search *t, uint64_t *iv);
/* The step at lb_tp_next()'s interval passed (or not) at @achieved messages/s.
 * Return: true when it is the best pass so far. */
bool lb_tp_record(struct lb_tp_search *t, bool pass, double achieved);
/* Messages in a step at @iv: @tp_count, cut to about LB_TP_STEP_NS of sending. */
uint64_t lb_tp_step_count(uint64_t tp_count, uint64_t iv);

/* Where one step's rate was held and its losses happened: what each NIC dropped (a queue the
 * executor did not refill in time, a full CQ), how often each link was full, and how busy
 * the forwarder's engine thread was (with GPUNIC_NIC_TIME_ENGINE; the sensor's thread is in
 * the step's lb_run_result). */
struct lb_tp_where {
	uint64_t fwd[GPUNIC_DROP_MAX];
	uint64_t sensor[GPUNIC_DROP_MAX];
	uint64_t fwd_tx_busy, sensor_tx_busy;
	uint64_t engine_busy_ns, engine_idle_ns;
};

struct lb_tp_step {
	unsigned n;		/* 1, 2, ... */
	uint64_t interval_ns;
	double achieved;	/* messages/s sent */
	struct lb_run_result res;
	struct stats_summary sum;
	struct lb_tp_where where;
	bool pass;
};

/* "busy per message: forwarder engine 455 ns, sensor 380 ns; forwarder no_recv_wqe 12, sensor
 * link_full 3": the time each thread that was measured spent working per message sent (one
 * near the interval held the rate), then the nonzero counts; "" when there is nothing to
 * say. */
void lb_tp_where_text(const struct lb_tp_step *st, char *buf, size_t len);

/* Called after every step, retries included (the command prints it and writes the CSV). */
typedef void (*lb_tp_step_fn)(void *arg, const char *label, const struct lb_tp_step *st);

struct lb_tp_result {
	bool found;			/* a step passed */
	struct lb_tp_step best;
	uint64_t fail_iv;		/* when none passed: the slowest interval that failed */
	struct stats_rec *rec;		/* the recorder, of the two given, that holds the best
					 * step's samples */
};

/* lb_bench_throughput - search series @id's highest zero-loss rate; @recs: two recorders of
 * tp_count samples, one keeps the best step's samples. */
int lb_bench_throughput(const struct lb_bench *b, enum lb_series_id id, struct stats_rec *recs[2],
			lb_tp_step_fn on_step, void *arg, struct lb_tp_result *out);

/* ---------------------------------------------------------------- the whole bench */

/*
 * What the command does with each result as it comes (print it, record it in its report).
 * A callback's nonzero return (an errno) ends the bench with that error. Any may be NULL.
 */
struct lb_bench_ops {
	int (*floor_done)(void *arg, enum lb_floor_id id, const struct stats_rec *rec,
			  const struct lb_floor_result *r);
	int (*series_done)(void *arg, enum lb_series_id id, const struct stats_rec *rec,
			   const struct lb_series_result *r);
	lb_tp_step_fn tp_step;
	int (*tp_done)(void *arg, enum lb_series_id id, const struct lb_tp_result *t);
};

/*
 * lb_bench_run - the experiment: the floors this machine has (latency runs), then every series
 * the configuration wants, each as a latency series or a throughput search, until lb_stop_flag.
 * Return: 0 (interrupted included), or the first error (a failed series is said on stderr).
 */
int lb_bench_run(const struct lb_bench *b, const struct lb_bench_ops *ops, void *arg);

/* ---------------------------------------------------------------- ratios and load */

#define LB_RATIOS_MAX 40

struct lb_ratio {
	const char *name;	/* "gpu-bf p50 / floor p50": also the key in the report */
	double value;		/* num / den, or with difference num - den in ns */
	uint64_t num_ns, den_ns;
	bool difference;	/* "gpu-bf-rpc-fn p50 - gpu-bf-rpc p50": what a handler adds */
};

/*
 * lb_bench_ratios - the ratios the bench prints, of the series and floors that ran (NULL
 * where one did not); the GPU ones only with @have_gpu. With RPC series: each one's p50 over
 * its plain series' ("gpu-bf-rpc p50 / gpu-bf p50", the dispatch's cost), and each -rpc-fn
 * series' p50 less its -rpc series' (a difference, the handler's cost). Return: how many went
 * into @out.
 */
size_t lb_bench_ratios(const struct stats_summary *const ser[LB_SER_MAX],
		       const struct stats_summary *const fl[LB_FL_MAX], bool have_gpu,
		       struct lb_ratio out[LB_RATIOS_MAX]);

/* Throughput: an RPC series' highest zero-loss rate over its plain series'. */
struct lb_rate_ratio {
	const char *name;	/* "gpu-bf-rpc rate / gpu-bf rate": also the key in the report */
	double value, num, den;	/* messages/s */
};

/* The rate ratios of the RPC series that found a rate (@rate[id] 0: none, or not run).
 * Return: how many went into @out. */
size_t lb_bench_rpc_rates(const double rate[LB_SER_MAX], struct lb_rate_ratio out[LB_SER_MAX]);

/* The 1, 5 and 15 minute load averages. Return: 0, or an errno when /proc cannot say. */
int lb_loadavg(double load[3]);
/* More runnable threads than CPUs: the measurement shares its cores. */
bool lb_load_too_high(double load1, int ncpus);

#endif
