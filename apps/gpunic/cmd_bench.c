// SPDX-License-Identifier: MIT
/*
 * gpunic bench loopback: the whole FPGA -> GPU -> FPGA experiment in one process on one machine.
 * Both ends over one cable (shm by default), the CPU<->GPU flag ping-pong floor measured in the
 * same run, then each executor (gpu with GPU_DB and CPU_PROXY, cpu, naive) with the sensor
 * sending the same paced messages; a side-by-side table, ratios and a report folder. With
 * --throughput, the highest message rate with zero loss for each executor instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "gpunic/gpu.h"
#include "cli.h"
#include "loopback.h"
#include "outfile.h"
#include "report.h"
#include "cpufloor.h"
#include "timing.h"

#define BENCH_MAX_COUNT 10000000ull
#define TP_MIN_INTERVAL_NS 50u	/* below this the halving jumps to back-to-back (0) */
#define TP_MAX_INTERVAL_NS 10000000ull	/* doubling up from a failing start stops here */
#define TP_STEP_NS 2000000000ull	/* slow steps are cut to about this long ... */
#define TP_STEP_MIN_MSGS 1000ull	/* ... but never below this many messages */
#define TP_BISECT_STEPS 4
#define TP_RESOLUTION_NS 20u

enum series_id { SER_GPU_DB, SER_GPU_BF, SER_GPU_PROXY, SER_CPU, SER_NAIVE, SER_MAX };

static const struct series_def {
	const char *label;
	enum lb_executor exec;
	enum gpunic_handler_mode handler;
	const char *what;
} series_defs[SER_MAX] = {
	[SER_GPU_DB] = { "gpu-db", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_DB,
			 "persistent kernel, GPU rings the doorbell" },
	[SER_GPU_BF] = { "gpu-bf", LB_EXEC_GPU, GPUNIC_HANDLER_GPU_BF,
			 "persistent kernel, GPU writes whole WQEs to the BlueFlame page" },
	[SER_GPU_PROXY] = { "gpu-proxy", LB_EXEC_GPU, GPUNIC_HANDLER_CPU_PROXY,
			    "persistent kernel, CPU proxy forwards its producer index" },
	[SER_CPU] = { "cpu", LB_EXEC_CPU, GPUNIC_HANDLER_AUTO,
		      "gpunic_loop_step() on a host thread" },
	[SER_NAIVE] = { "naive", LB_EXEC_NAIVE, GPUNIC_HANDLER_AUTO,
			"host thread: copy in, launch, copy out per message" },
};

/* The floors each series is measured against, in the same run. */
enum floor_id { FL_FLAG, FL_LINE, FL_ACQREL, FL_CPU, FL_MAX };

static const struct floor_def {
	const char *label;
	enum gpunic_floor_kind kind;   /* GPU floors */
	const char *what;
} floor_defs[FL_MAX] = {
	[FL_FLAG] = { "floor", GPUNIC_FLOOR_FLAG,
		      "CPU<->GPU 4-byte flag ping-pong, relaxed polls and stores" },
	[FL_LINE] = { "exchange-floor", GPUNIC_FLOOR_LINE,
		      "a 64-byte line each way, one coalesced warp access" },
	[FL_ACQREL] = { "floor-acqrel", GPUNIC_FLOOR_FLAG_ACQREL,
			"the flag ping-pong with acquire/release (comparison only)" },
	[FL_CPU] = { "cpu-floor", GPUNIC_FLOOR_FLAG,
		     "one cache line around the CPU executor's pinned threads and hops" },
};

enum engine_choice { ENGINE_AUTO, ENGINE_THREAD, ENGINE_INLINE };

struct bench_opts {
	uint64_t count;
	uint32_t size;
	uint64_t interval_ns;
	enum lb_mode mode;
	uint32_t work;
	bool udp;
	uint16_t udp_port;
	bool want[SER_MAX];
	bool executors_given;
	uint32_t slots;
	int gpu;
	int cpus[3];		/* sensor, engine, executor */
	bool cpus_given;
	enum engine_choice engine;
	uint64_t warmup;
	uint64_t timeout_ns;
	const char *out;
	bool throughput;
	uint64_t tp_count;
	bool no_plot;
	uint32_t qps;		/* QPs on the forwarder's NIC: the active one and qps - 1 idle */
};

struct bench {
	struct bench_opts o;
	int argc;
	char **argv;
	struct gpunic_gpu_info gpu;
	bool have_gpu;
	int cpu_sensor, cpu_engine, cpu_exec;
	bool inline_engine;
	char pin_note[160];
	struct report *rep;
	bool tty;
	struct stats_summary sum[SER_MAX];
	bool ran[SER_MAX];
	struct stats_summary floor_sum[FL_MAX];
	bool floor_ran[FL_MAX];
	char out_dir[512];
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic bench loopback [options]\n"
		"\n"
		"The FPGA -> GPU -> FPGA loopback experiment in one process: sensor and loop over\n"
		"one cable, the floors (CPU<->GPU flag and 64-byte line exchanges, the CPU path's\n"
		"cache-line ring), then each executor (gpu with GPU_DB, GPU_BF and CPU_PROXY, cpu,\n"
		"naive) measured with the same paced messages.\n"
		"Prints a side-by-side table and ratios; writes a report folder.\n"
		"Without a GPU only the cpu executor and its floor run, and the output says so.\n"
		"\n"
		"  --count N            messages per series (default 100000)\n"
		"  --size N             message bytes, %u..%u (default %u)\n"
		"  --interval-us F      one message every F us (default 10); 0 = closed loop\n"
		"  --mode MODE          write-imm (default, HSB) | send\n"
		"  --work W             none (default) | add-one\n"
		"  --link KIND          shm (default) | udp (127.0.0.1 <-> 127.0.0.2)\n"
		"  --udp-port N         UDP port of both ends with --link udp (default 4791)\n"
		"  --executors LIST     comma list of gpu-db, gpu-bf, gpu-proxy, gpu (all three),\n"
		"                       cpu, naive\n"
		"                       (default: every one this machine can run)\n"
		"  --slots N            forwarder ring slots, a power of two (default %u)\n"
		"  --qps N              QPs on the forwarder's NIC: the active one and N-1 idle\n"
		"                       ones beside it, connected, never used (default 1, max %u)\n"
		"  --gpu N              CUDA device (default 0)\n"
		"  --cpus S,E,X         pin sensor, NIC engine and executor threads (default:\n"
		"                       distinct allowed CPUs, skipping the first when there are\n"
		"                       four or more)\n"
		"  --engine MODE        auto (default) | thread | inline: with the cpu and naive\n"
		"                       executors, inline lets the executor thread drive the NIC\n"
		"                       (auto: inline on machines with fewer than 3 CPUs)\n"
		"  --warmup N           messages before each series, checked, not recorded\n"
		"                       (default 1000)\n"
		"  --timeout-ms N       a reply not back N ms after the last activity is lost\n"
		"                       (default %u)\n"
		"  --out DIR            report folder (default out/loopback-DATE)\n"
		"  --throughput         find each executor's highest zero-loss message rate\n"
		"  --throughput-count N messages per search step (default: --count)\n"
		"  --no-plot            skip the PNG plots\n"
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 when every series ran (loss is reported, not an error), 1 when\n"
		"one could not run, 2 for bad usage.\n",
		LB_MSG_MIN, LB_MSG_MAX, LB_DEFAULT_SIZE, LB_DEFAULT_SLOTS, LB_MAX_QPS,
		LB_DEFAULT_TIMEOUT_MS);
}

static int bad(const char *opt, const char *val)
{
	return lb_bad_value("bench loopback", opt, val);
}

static int parse_executors(const char *list, bool want[SER_MAX])
{
	char buf[128], *save = NULL, *tok;

	if (strlen(list) >= sizeof(buf))
		return EINVAL;
	strcpy(buf, list);
	memset(want, 0, SER_MAX * sizeof(want[0]));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool found = false;

		if (strcmp(tok, "gpu") == 0) {
			want[SER_GPU_DB] = want[SER_GPU_BF] = want[SER_GPU_PROXY] = true;
			continue;
		}
		for (int i = 0; i < SER_MAX; i++)
			if (strcmp(tok, series_defs[i].label) == 0)
				want[i] = found = true;
		if (!found)
			return EINVAL;
	}
	for (int i = 0; i < SER_MAX; i++)
		if (want[i])
			return 0;
	return EINVAL;
}

static int parse_cpus(const char *s, int cpus[3])
{
	unsigned a, b, c;
	char tail;

	if (sscanf(s, "%u,%u,%u%c", &a, &b, &c, &tail) != 3 || a > 1023 || b > 1023 || c > 1023)
		return EINVAL;
	cpus[0] = (int)a;
	cpus[1] = (int)b;
	cpus[2] = (int)c;
	return 0;
}

/* Return: -1 to run, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "work", required_argument, NULL, 'w' },
		{ "link", required_argument, NULL, 'l' },
		{ "udp-port", required_argument, NULL, 'U' },
		{ "executors", required_argument, NULL, 'e' },
		{ "slots", required_argument, NULL, 'S' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "engine", required_argument, NULL, 'E' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "out", required_argument, NULL, 'o' },
		{ "throughput", no_argument, NULL, 'T' },
		{ "throughput-count", required_argument, NULL, 'N' },
		{ "no-plot", no_argument, NULL, 'p' },
		{ "qps", required_argument, NULL, 'Q' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	*o = (struct bench_opts){
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
	};
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'n':
			if (lb_parse_u64(optarg, 1, BENCH_MAX_COUNT, &o->count))
				return bad("--count", optarg);
			break;
		case 's':
			if (lb_parse_u64(optarg, LB_MSG_MIN, LB_MSG_MAX, &v))
				return bad("--size", optarg);
			o->size = (uint32_t)v;
			break;
		case 'i':
			if (lb_parse_us(optarg, &o->interval_ns))
				return bad("--interval-us", optarg);
			break;
		case 'm':
			if (lb_mode_parse(optarg, &o->mode))
				return bad("--mode", optarg);
			break;
		case 'w':
			if (lb_work_parse(optarg, &o->work))
				return bad("--work", optarg);
			break;
		case 'l':
			if (strcmp(optarg, "udp") == 0)
				o->udp = true;
			else if (strcmp(optarg, "shm") == 0)
				o->udp = false;
			else
				return bad("--link", optarg);
			break;
		case 'U':
			if (lb_parse_u64(optarg, 1, 65535, &v))
				return bad("--udp-port", optarg);
			o->udp_port = (uint16_t)v;
			break;
		case 'e':
			if (parse_executors(optarg, o->want))
				return bad("--executors", optarg);
			o->executors_given = true;
			break;
		case 'S':
			if (lb_parse_u64(optarg, 2, GPUNIC_DEV_MAX_RING, &v) || (v & (v - 1)))
				return bad("--slots", optarg);
			o->slots = (uint32_t)v;
			break;
		case 'Q':
			if (lb_parse_u64(optarg, 1, LB_MAX_QPS, &v))
				return bad("--qps", optarg);
			o->qps = (uint32_t)v;
			break;
		case 'g':
			if (lb_parse_u64(optarg, 0, 255, &v))
				return bad("--gpu", optarg);
			o->gpu = (int)v;
			break;
		case 'c':
			if (parse_cpus(optarg, o->cpus))
				return bad("--cpus", optarg);
			o->cpus_given = true;
			break;
		case 'E':
			if (strcmp(optarg, "auto") == 0)
				o->engine = ENGINE_AUTO;
			else if (strcmp(optarg, "thread") == 0)
				o->engine = ENGINE_THREAD;
			else if (strcmp(optarg, "inline") == 0)
				o->engine = ENGINE_INLINE;
			else
				return bad("--engine", optarg);
			break;
		case 'W':
			if (lb_parse_u64(optarg, 0, BENCH_MAX_COUNT, &o->warmup))
				return bad("--warmup", optarg);
			break;
		case 't':
			if (lb_parse_u64(optarg, 1, 3600000, &v))
				return bad("--timeout-ms", optarg);
			o->timeout_ns = v * 1000000ull;
			break;
		case 'o':
			if (!*optarg)
				return bad("--out", optarg);
			o->out = optarg;
			break;
		case 'T':
			o->throughput = true;
			break;
		case 'N':
			if (lb_parse_u64(optarg, 1, BENCH_MAX_COUNT, &o->tp_count))
				return bad("--throughput-count", optarg);
			break;
		case 'p':
			o->no_plot = true;
			break;
		default:
			return lb_bad_option("bench loopback", c, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return lb_extra_arg("bench loopback", argv[optind]);
	if (!o->tp_count)
		o->tp_count = o->count;
	return -1;
}

/* ---------------------------------------------------------------- set-up */

static void plan_cpus(struct bench *b)
{
	int n = timing_cpu_count(), c[3] = { -1, -1, -1 }, skip = n >= 4 ? 1 : 0;
	char list[64] = "";

	if (b->o.cpus_given) {
		memcpy(c, b->o.cpus, sizeof(c));
	} else if (n >= 3) {
		for (int i = 0; i < 3; i++)
			timing_cpu_nth((unsigned)(i + skip), &c[i]);
	} else if (n == 2) {
		timing_cpu_nth(0, &c[0]);
		timing_cpu_nth(1, &c[1]);
		c[2] = c[1];
	}
	b->cpu_sensor = c[0];
	b->cpu_engine = c[1];
	b->cpu_exec = c[2];
	b->inline_engine = b->o.engine == ENGINE_INLINE || (b->o.engine == ENGINE_AUTO && n < 3);
	timing_cpu_list(list, sizeof(list));
	if (c[0] < 0)
		snprintf(b->pin_note, sizeof(b->pin_note),
			 "1 CPU allowed (%s): threads unpinned", list);
	else
		snprintf(b->pin_note, sizeof(b->pin_note),
			 "sensor on CPU %d, NIC engine on CPU %d, executor on CPU %d "
			 "(allowed %s)%s",
			 c[0], c[1], c[2], list,
			 b->inline_engine ? "; cpu/naive executors drive the NIC inline" : "");
}

static void default_out(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	char date[32];

	localtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "out/loopback-%s", date);
}

/* Both ends of one series, connected, the forwarder running. */
static int pair_open(struct bench *b, enum series_id id, struct lb_pair *p)
{
	struct lb_fwd_cfg fc = {
		.exec = series_defs[id].exec,
		.handler = series_defs[id].handler,
		.mode = b->o.mode,
		.work = b->o.work,
		.slots = b->o.slots,
		.gpu = b->o.gpu,
		.engine_cpu = b->cpu_engine,
		.exec_cpu = b->cpu_exec,
		.inline_engine = b->inline_engine,
		.idle_qps = b->o.qps - 1,
	};
	struct lb_pair_cfg pc = {
		.udp = b->o.udp,
		.udp_port = b->o.udp_port,
		.mode = b->o.mode,
		.size = b->o.size,
	};

	return lb_pair_open(p, &fc, &pc);
}

/* ---------------------------------------------------------------- running the sensor */

struct sensor_job {
	struct lb_sensor *s;
	struct lb_run_cfg cfg;
	struct stats_rec *rec;
	struct lb_run_result res;
	int err;
	atomic_bool done;
};

static void *sensor_main(void *arg)
{
	struct sensor_job *j = arg;

	j->err = lb_sensor_run(j->s, &j->cfg, j->rec, &j->res);
	atomic_store_explicit(&j->done, true, memory_order_release);
	return NULL;
}

/* Run the sensor on its pinned thread; this thread shows progress. */
static int sensor_run(struct bench *b, const char *label, struct sensor_job *j)
{
	struct timespec tick = { .tv_nsec = 100 * 1000000L };
	uint64_t sent, back, total = j->cfg.count;
	pthread_t thr;
	unsigned n = 0;
	int err;

	atomic_init(&j->done, false);
	err = timing_thread_start(&thr, "gpunic-sensor", b->cpu_sensor, sensor_main, j);
	if (err) {
		fprintf(stderr, "gpunic: starting the sensor thread: %s\n", strerror(err));
		return err;
	}
	while (!atomic_load_explicit(&j->done, memory_order_acquire)) {
		nanosleep(&tick, NULL);
		if (b->tty && ++n % 5 == 0) {
			lb_sensor_progress(j->s, &sent, &back);
			fprintf(stderr, "\r  %-10s %9llu / %llu sent, %9llu back", label,
				(unsigned long long)sent, (unsigned long long)total,
				(unsigned long long)back);
		}
	}
	pthread_join(thr, NULL);
	if (b->tty && n >= 5)
		fprintf(stderr, "\r%70s\r", "");
	return j->err;
}

static bool run_clean(const struct lb_run_result *r)
{
	return r->counts.lost == 0 && r->counts.corrupt == 0 && r->counts.dup == 0 &&
	       r->verified == r->sent && !r->rx_errors && !r->send_errors;
}

static void set_extra(struct bench *b, const char *label, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_extra(struct bench *b, const char *label, const char *key, const char *fmt, ...)
{
	char k[96], v[256];
	va_list ap;

	snprintf(k, sizeof(k), "%s%s%s", label ? label : "", label ? "." : "", key);
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	report_set_extra(b->rep, k, v);
}

static void record_run_extras(struct bench *b, const char *label, const struct lb_run_result *r,
			      const struct lb_run_result *w, const struct lb_fwd_result *fr,
			      struct lb_fwd *f)
{
	char drops[256] = "";
	size_t off = 0;

	set_extra(b, label, "sent", "%llu", (unsigned long long)r->sent);
	set_extra(b, label, "verified", "%llu", (unsigned long long)r->verified);
	set_extra(b, label, "all_verified", "%s", r->verified == r->sent ? "true" : "false");
	set_extra(b, label, "stale", "%llu", (unsigned long long)r->stale);
	set_extra(b, label, "corrupt_unmatched", "%llu", (unsigned long long)r->corrupt_unmatched);
	set_extra(b, label, "late_sends", "%llu", (unsigned long long)r->late_sends);
	set_extra(b, label, "error_completions", "%llu",
		  (unsigned long long)(r->rx_errors + r->send_errors));
	set_extra(b, label, "warmup", "%llu sent, %llu verified, %llu lost, %llu corrupt",
		  (unsigned long long)w->sent, (unsigned long long)w->verified,
		  (unsigned long long)w->counts.lost, (unsigned long long)w->counts.corrupt);
	set_extra(b, label, "forwarder_echoed", "%llu", (unsigned long long)fr->echoed);
	set_extra(b, label, "forwarder_errors", "%llu", (unsigned long long)fr->errors);
	for (int i = 0; i < GPUNIC_DROP_MAX && off < sizeof(drops) - 1; i++)
		if (fr->nic.drops[i])
			off += (size_t)snprintf(drops + off, sizeof(drops) - off, "%s%s=%llu",
						off ? " " : "",
						gpunic_drop_reason_name((enum gpunic_drop_reason)i),
						(unsigned long long)fr->nic.drops[i]);
	set_extra(b, label, "forwarder_nic_drops", "%s", off ? drops : "none");
	set_extra(b, label, "handler", "%s", lb_handler_name(lb_fwd_handler(f)));
}

static void print_run_line(const char *label, const struct lb_run_result *r,
			   const struct stats_summary *s, const struct lb_fwd_result *fr)
{
	printf("  %-10s sent %llu, verified %llu, lost %llu, corrupt %llu, dup %llu, "
	       "p50 %.3f us, max %.3f us; forwarder echoed %llu",
	       label, (unsigned long long)r->sent, (unsigned long long)r->verified,
	       (unsigned long long)r->counts.lost, (unsigned long long)r->counts.corrupt,
	       (unsigned long long)r->counts.dup, (double)s->p50_ns / 1000.0,
	       (double)s->max_ns / 1000.0, (unsigned long long)fr->echoed);
	lb_print_drops(stdout, &fr->nic);
	printf("\n");
	if (!run_clean(r))
		printf("  %-10s WARNING: not every message came back intact (see the loss row)\n",
		       label);
	if (fr->nic.drops[GPUNIC_DROP_NO_RECV_WQE])
		printf("  %-10s the forwarder fell behind the pacing (its ring ran out of "
		       "receives): its time per message, or a stall of its thread, exceeded what "
		       "the ring absorbs; --throughput finds the rate it sustains\n", label);
	fflush(stdout);
}

/* ---------------------------------------------------------------- latency series */

/* One floor series, recorded and summarised like the executors' series. */
static int run_floor(struct bench *b, enum floor_id id, struct stats_rec *rec)
{
	uint64_t *rtt = malloc(b->o.count * sizeof(*rtt));
	uint32_t torn[2] = { 0, 0 };
	struct stats_summary *sum = &b->floor_sum[id];
	int err;

	if (!rtt)
		return ENOMEM;
	fprintf(stderr, "gpunic: %s: %s, %llu round trips\n", floor_defs[id].label,
		floor_defs[id].what, (unsigned long long)b->o.count);
	if (id == FL_CPU)
		err = cpu_floor_run(b->cpu_sensor, b->cpu_engine, b->cpu_exec, b->inline_engine,
				    (uint32_t)b->o.count, (uint32_t)b->o.warmup, rtt);
	else
		err = gpunic_gpu_floor(b->o.gpu, floor_defs[id].kind, (uint32_t)b->o.count,
				       (uint32_t)b->o.warmup, rtt, torn);
	if (err) {
		fprintf(stderr, "gpunic: %s: %s\n", floor_defs[id].label, strerror(err));
		free(rtt);
		return err;
	}
	stats_rec_reset(rec);
	for (uint64_t i = 0; i < b->o.count; i++)
		stats_rec_add(rec, i, rtt[i], STATS_SAMPLE_VERIFIED);
	free(rtt);
	err = stats_rec_finish(rec, b->o.count);
	if (!err)
		err = report_add_series(b->rep, floor_defs[id].label, rec);
	if (!err)
		err = stats_summarize(rec, sum);
	if (err)
		return err;
	b->floor_ran[id] = true;
	printf("  %-14s %llu round trips, p50 %.3f us, p99 %.3f us, max %.3f us\n",
	       floor_defs[id].label, (unsigned long long)b->o.count, (double)sum->p50_ns / 1000.0,
	       (double)sum->p99_ns / 1000.0, (double)sum->max_ns / 1000.0);
	if (id == FL_LINE) {
		printf("  %-14s torn lines seen and read again: %u by the GPU, %u by the CPU\n",
		       "", torn[0], torn[1]);
		set_extra(b, floor_defs[id].label, "torn_gpu", "%u", torn[0]);
		set_extra(b, floor_defs[id].label, "torn_cpu", "%u", torn[1]);
	}
	return 0;
}

static int run_latency(struct bench *b, enum series_id id, struct stats_rec *rec)
{
	const char *label = series_defs[id].label;
	struct sensor_job job = { .rec = rec };
	struct lb_run_result warm = { 0 };
	struct lb_fwd_result fr;
	struct lb_pair p;
	int err, stop_err;

	fprintf(stderr, "gpunic: %s: %s, %llu messages\n", label, series_defs[id].what,
		(unsigned long long)b->o.count);
	err = pair_open(b, id, &p);
	if (err)
		return err;
	job.s = p.s;
	job.cfg = (struct lb_run_cfg){
		.interval_ns = b->o.interval_ns,
		.rephase = true,
		.closed_loop = b->o.interval_ns == 0,
		.expect_add_one = b->o.work == GPUNIC_LOOP_WORK_ADD_ONE,
		.timeout_ns = b->o.timeout_ns,
		.stop = &lb_stop_flag,
	};
	if (b->o.warmup) {
		job.cfg.count = b->o.warmup;
		job.cfg.epoch = 1;
		err = sensor_run(b, label, &job);
		warm = job.res;
		if (err)
			goto out;
	}
	job.cfg.count = b->o.count;
	job.cfg.epoch = 2;
	err = sensor_run(b, label, &job);
	stop_err = lb_fwd_stop(p.f, &fr);
	if (!err)
		err = stop_err;
	if (err)
		goto out;
	err = report_add_series(b->rep, label, rec);
	if (!err)
		err = stats_summarize(rec, &b->sum[id]);
	if (err)
		goto out;
	b->ran[id] = true;
	record_run_extras(b, label, &job.res, &warm, &fr, p.f);
	print_run_line(label, &job.res, &b->sum[id], &fr);
out:
	lb_pair_close(&p);
	return err;
}

static void ratio_line(struct bench *b, const char *name, const struct stats_summary *num,
		       const struct stats_summary *den)
{
	double r;

	if (!num || !den || !den->p50_ns)
		return;
	r = (double)num->p50_ns / (double)den->p50_ns;
	printf("  %-28s %10.4g   (%.3f us / %.3f us)\n", name, r, (double)num->p50_ns / 1000.0,
	       (double)den->p50_ns / 1000.0);
	set_extra(b, NULL, name, "%.4f", r);
}

/* A summary whose p50 is @s's p99, so that ratio_line() divides p99s. */
static const struct stats_summary *p99_of(const struct stats_summary *s,
					  struct stats_summary *tmp)
{
	if (!s)
		return NULL;
	*tmp = *s;
	tmp->p50_ns = s->p99_ns;
	return tmp;
}

static void print_ratios(struct bench *b)
{
	const struct stats_summary *fl = b->floor_ran[FL_FLAG] ? &b->floor_sum[FL_FLAG] : NULL;
	const struct stats_summary *xf = b->floor_ran[FL_LINE] ? &b->floor_sum[FL_LINE] : NULL;
	const struct stats_summary *cf = b->floor_ran[FL_CPU] ? &b->floor_sum[FL_CPU] : NULL;
	const struct stats_summary *s[SER_MAX];
	const struct stats_summary *gpu;
	struct stats_summary p99[2];

	for (int i = 0; i < SER_MAX; i++)
		s[i] = b->ran[i] ? &b->sum[i] : NULL;
	gpu = s[SER_GPU_BF] ? s[SER_GPU_BF] : s[SER_GPU_DB] ? s[SER_GPU_DB] : s[SER_GPU_PROXY];
	printf("\nratios (one run, same machine):\n");
	ratio_line(b, "cpu p50 / cpu-floor p50", s[SER_CPU], cf);
	ratio_line(b, "cpu p99 / cpu-floor p99", p99_of(s[SER_CPU], &p99[0]), p99_of(cf, &p99[1]));
	if (!b->have_gpu) {
		if (s[SER_CPU])
			printf("  cpu p50 = %.3f us; no GPU, so no GPU floor, gpu or naive series "
			       "to compare with\n", (double)s[SER_CPU]->p50_ns / 1000.0);
		return;
	}
	ratio_line(b, "gpu-bf p50 / floor p50", s[SER_GPU_BF], fl);
	ratio_line(b, "gpu-bf p99 / floor p99", p99_of(s[SER_GPU_BF], &p99[0]),
		   p99_of(fl, &p99[1]));
	ratio_line(b, "gpu-bf p50 / exchange-floor p50", s[SER_GPU_BF], xf);
	ratio_line(b, "gpu-db p50 / floor p50", s[SER_GPU_DB], fl);
	ratio_line(b, "gpu-proxy p50 / floor p50", s[SER_GPU_PROXY], fl);
	ratio_line(b, "gpu-proxy p50 / gpu-db p50", s[SER_GPU_PROXY], s[SER_GPU_DB]);
	ratio_line(b, "floor-acqrel p50 / floor p50", b->floor_ran[FL_ACQREL] ?
		   &b->floor_sum[FL_ACQREL] : NULL, fl);
	ratio_line(b, "naive p50 / gpu p50", s[SER_NAIVE], gpu);
	ratio_line(b, "cpu p50 / gpu p50", s[SER_CPU], gpu);
	ratio_line(b, "cpu p50 / floor p50", s[SER_CPU], fl);
}

/* ---------------------------------------------------------------- throughput */

struct tp_step {
	uint64_t interval_ns;
	double achieved;
	struct lb_run_result res;
	struct stats_summary sum;
	bool pass;
};

static int tp_step(struct bench *b, struct lb_pair *p, const char *label, uint64_t interval_ns,
		   uint32_t epoch, struct stats_rec *rec, struct tp_step *st, struct outf *csv)
{
	struct sensor_job job = { .s = p->s, .rec = rec };
	uint64_t count = b->o.tp_count;
	int err;

	if (interval_ns && count * interval_ns > TP_STEP_NS)
		count = TP_STEP_NS / interval_ns > TP_STEP_MIN_MSGS ? TP_STEP_NS / interval_ns :
								      TP_STEP_MIN_MSGS;
	if (count > b->o.tp_count)
		count = b->o.tp_count;
	job.cfg = (struct lb_run_cfg){
		.count = count,
		.interval_ns = interval_ns,
		.expect_add_one = b->o.work == GPUNIC_LOOP_WORK_ADD_ONE,
		.timeout_ns = b->o.timeout_ns,
		.epoch = epoch,
		.stop = &lb_stop_flag,
	};
	err = sensor_run(b, label, &job);
	if (err)
		return err;
	err = stats_summarize(rec, &st->sum);
	if (err)
		return err;
	st->interval_ns = interval_ns;
	st->res = job.res;
	st->achieved = job.res.send_ns && job.res.sent > 1 ?
			       (double)(job.res.sent - 1) * 1e9 / (double)job.res.send_ns : 0;
	st->pass = run_clean(&job.res) && !job.res.stopped;
	printf("  %-10s %12.3f %14.0f %14.0f %8llu %8llu %8llu  %s\n", label,
	       (double)interval_ns / 1000.0, interval_ns ? 1e9 / (double)interval_ns : 0.0,
	       st->achieved, (unsigned long long)job.res.counts.lost,
	       (unsigned long long)job.res.counts.corrupt, (unsigned long long)job.res.counts.dup,
	       st->pass ? "pass" : "FAIL");
	fflush(stdout);
	outf_printf(csv, "%s,%llu,%.1f,%.1f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%s\n", label,
		    (unsigned long long)interval_ns, interval_ns ? 1e9 / (double)interval_ns : 0.0,
		    st->achieved, (unsigned long long)job.res.sent,
		    (unsigned long long)job.res.verified, (unsigned long long)job.res.counts.lost,
		    (unsigned long long)job.res.counts.corrupt,
		    (unsigned long long)job.res.counts.dup, (unsigned long long)st->sum.p50_ns,
		    (unsigned long long)st->sum.p99_ns, (unsigned long long)st->sum.max_ns,
		    st->pass ? "pass" : "fail");
	return 0;
}

/* One step, confirmed: a failure is run once more, so that one stall of a shared machine is not
 * taken for saturation. Return: 0 with *st the last attempt, or an errno. */
static int tp_try(struct bench *b, struct lb_pair *p, const char *label, uint64_t interval_ns,
		  uint32_t *epoch, struct stats_rec *rec, struct tp_step *st, struct outf *csv)
{
	int err = tp_step(b, p, label, interval_ns, (*epoch)++, rec, st, csv);

	if (!err && !st->pass && !atomic_load(&lb_stop_flag))
		err = tp_step(b, p, label, interval_ns, (*epoch)++, rec, st, csv);
	return err;
}

/*
 * Halve the interval from the start value while every message comes back intact (when even the
 * start fails, double it until a step passes), then bisect between the closest pass and
 * failure. The best pass is the one with the highest achieved rate; its latency samples become
 * the series.
 */
static int run_throughput(struct bench *b, enum series_id id, struct stats_rec *recs[2],
			  struct outf *csv)
{
	const char *label = series_defs[id].label;
	struct stats_rec *cur = recs[0], *best_rec = recs[1], *tmp;
	struct tp_step st, best = { 0 };
	uint64_t iv = b->o.interval_ns, pass_iv = 0, fail_iv = 0;
	bool have_pass = false, have_fail = false;
	struct sensor_job warm = { .rec = recs[0] };
	uint32_t epoch = 2;
	struct lb_pair p;
	int err;

	fprintf(stderr, "gpunic: %s: throughput search, %llu messages per step\n", label,
		(unsigned long long)b->o.tp_count);
	err = pair_open(b, id, &p);
	if (err)
		return err;
	if (b->o.warmup) {
		warm.s = p.s;
		warm.cfg = (struct lb_run_cfg){
			.count = b->o.warmup < b->o.tp_count ? b->o.warmup : b->o.tp_count,
			.interval_ns = b->o.interval_ns,
			.expect_add_one = b->o.work == GPUNIC_LOOP_WORK_ADD_ONE,
			.timeout_ns = b->o.timeout_ns,
			.epoch = 1,
			.stop = &lb_stop_flag,
		};
		err = sensor_run(b, label, &warm);
		if (err)
			goto out;
	}
	for (;;) {
		err = tp_try(b, &p, label, iv, &epoch, cur, &st, csv);
		if (err || atomic_load(&lb_stop_flag))
			goto out;
		if (!st.pass && !have_pass && iv && iv < TP_MAX_INTERVAL_NS) {
			/* even the starting rate is too high: look upwards first */
			have_fail = true;
			fail_iv = iv;
			iv *= 2;
			continue;
		}
		if (!st.pass) {
			have_fail = true;
			fail_iv = iv;
			break;
		}
		if (!have_pass || st.achieved > best.achieved) {
			best = st;
			tmp = best_rec;
			best_rec = cur;
			cur = tmp;
		}
		pass_iv = iv;
		/* found by going up from a failure: the answer lies between the two */
		if (have_fail && !have_pass) {
			have_pass = true;
			break;
		}
		have_pass = true;
		if (iv == 0)
			break;
		iv = iv / 2 < TP_MIN_INTERVAL_NS ? 0 : iv / 2;
	}
	for (int i = 0; have_pass && have_fail && i < TP_BISECT_STEPS; i++) {
		if (pass_iv - fail_iv <= TP_RESOLUTION_NS)
			break;
		iv = fail_iv + (pass_iv - fail_iv) / 2;
		err = tp_try(b, &p, label, iv, &epoch, cur, &st, csv);
		if (err || atomic_load(&lb_stop_flag))
			goto out;
		if (st.pass) {
			pass_iv = iv;
			if (st.achieved > best.achieved) {
				best = st;
				tmp = best_rec;
				best_rec = cur;
				cur = tmp;
			}
		} else {
			fail_iv = iv;
		}
	}
	if (have_pass) {
		printf("  %-10s highest zero-loss rate: %.0f messages/s (interval %.3f us%s)\n",
		       label, best.achieved, (double)best.interval_ns / 1000.0,
		       best.interval_ns ? "" : ", back to back");
		set_extra(b, label, "throughput_best_msgs_per_s", "%.1f", best.achieved);
		set_extra(b, label, "throughput_best_interval_ns", "%llu",
			  (unsigned long long)best.interval_ns);
		err = report_add_series(b->rep, label, best_rec);
		if (!err) {
			b->sum[id] = best.sum;
			b->ran[id] = true;
		}
	} else {
		printf("  %-10s no zero-loss rate down to one message every %.3f ms\n", label,
		       (double)fail_iv / 1e6);
		set_extra(b, label, "throughput_best_msgs_per_s", "none");
	}
out:
	lb_pair_close(&p);
	return err;
}

/* ---------------------------------------------------------------- the command */

static int bench_setup(struct bench *b)
{
	struct report_meta meta = {
		.argc = b->argc,
		.argv = b->argv,
		.link = b->o.udp ? "udp" : "shm",
		.msg_bytes = b->o.size,
		.interval_ns = b->o.interval_ns,
	};
	int err;

	b->have_gpu = gpunic_gpu_probe(b->o.gpu, &b->gpu) == 0 && b->gpu.present;
	for (int i = 0; i < SER_MAX; i++) {
		if (!b->o.want[i] || series_defs[i].exec == LB_EXEC_CPU || b->have_gpu)
			continue;
		if (b->o.executors_given) {
			fprintf(stderr, "gpunic bench loopback: %s needs a GPU, and there is none: "
					"%s\n", series_defs[i].label, b->gpu.reason);
			return ENODEV;
		}
		b->o.want[i] = false;
	}
	plan_cpus(b);
	if (b->o.out)
		snprintf(b->out_dir, sizeof(b->out_dir), "%s", b->o.out);
	else
		default_out(b->out_dir, sizeof(b->out_dir));
	meta.gpu_name = b->have_gpu ? b->gpu.name : NULL;
	meta.baseline = b->o.throughput ? NULL : b->have_gpu ? "floor" : "cpu-floor";
	err = report_open(&b->rep, b->out_dir, &meta);
	if (err) {
		fprintf(stderr, "gpunic bench loopback: report folder %s: %s\n", b->out_dir,
			strerror(err));
		return err;
	}
	set_extra(b, NULL, "experiment", "%s", b->o.throughput ? "loopback-throughput" :
								   "loopback-latency");
	set_extra(b, NULL, "mode", "%s", lb_mode_name(b->o.mode));
	set_extra(b, NULL, "work", "%s", lb_work_name(b->o.work));
	set_extra(b, NULL, "qp_type", "UC");
	set_extra(b, NULL, "count", "%llu", (unsigned long long)b->o.count);
	set_extra(b, NULL, "warmup", "%llu", (unsigned long long)b->o.warmup);
	set_extra(b, NULL, "closed_loop", "%s", b->o.interval_ns ? "false" : "true");
	set_extra(b, NULL, "slots", "%u", b->o.slots);
	set_extra(b, NULL, "pinning", "%s", b->pin_note);
	set_extra(b, NULL, "cpu_executor_engine", "%s", b->inline_engine ? "inline" : "thread");
	if (b->have_gpu) {
		set_extra(b, NULL, "gpu_status", "present: %s (cc %d.%d, %d SMs)", b->gpu.name,
			  b->gpu.cc_major, b->gpu.cc_minor, b->gpu.sm_count);
	} else {
		set_extra(b, NULL, "gpu_status", "absent: %s", b->gpu.reason);
		set_extra(b, NULL, "gpu_note",
			  "no GPU: only the CPU executor ran (with its cpu-floor); the floor, "
			  "exchange-floor, floor-acqrel, gpu-db, gpu-bf, gpu-proxy and naive "
			  "series and the GPU ratios are missing, not zero");
	}
	return 0;
}

/* The 1, 5 and 15 minute load averages: a shared machine's measurements need them beside. */
static void read_loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a = 0, b = 0, c = 0;

	if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
	else
		snprintf(buf, len, "unknown");
	if (f)
		fclose(f);
}

static void print_banner(struct bench *b)
{
	char load[64];

	read_loadavg(load, sizeof(load));
	set_extra(b, NULL, "loadavg_at_start", "%s", load);
	printf("gpunic bench loopback: %s, %u B, UC, work %s, link %s\n", lb_mode_name(b->o.mode),
	       b->o.size, lb_work_name(b->o.work),
	       b->o.udp ? "udp (127.0.0.1 <-> 127.0.0.2)" : "shm");
	if (b->o.throughput)
		printf("  throughput search from one message every %.3f us down to back to back\n",
		       (double)b->o.interval_ns / 1000.0);
	else if (b->o.interval_ns)
		printf("  pacing: one message every %.3f us, %llu messages per series "
		       "(+%llu warm-up)\n", (double)b->o.interval_ns / 1000.0,
		       (unsigned long long)b->o.count, (unsigned long long)b->o.warmup);
	else
		printf("  closed loop: each message when the previous one is back, %llu per series "
		       "(+%llu warm-up)\n", (unsigned long long)b->o.count,
		       (unsigned long long)b->o.warmup);
	printf("  %s\n", b->pin_note);
	printf("  load average at start: %s (%d CPUs allowed)\n", load, timing_cpu_count());
	if (b->have_gpu)
		printf("  GPU %d: %s (compute %d.%d, %d SMs)\n", b->o.gpu, b->gpu.name,
		       b->gpu.cc_major, b->gpu.cc_minor, b->gpu.sm_count);
	else
		printf("  NO GPU (%s)\n  -> running the CPU executor only (and its cpu-floor): no "
		       "GPU floors, gpu-db, gpu-bf, gpu-proxy or naive series, no GPU ratios\n",
		       b->gpu.reason);
	printf("  report folder: %s\n\n", b->out_dir);
	fflush(stdout);
}

/* @argc/@argv from "loopback" on; the report records the command from "bench" on. */
static int bench_loopback(int argc, char **argv)
{
	struct bench b = { .argc = argc + 1, .argv = argv - 1 };
	struct stats_rec rec[2] = { { 0 } };
	struct stats_rec *recs[2] = { &rec[0], &rec[1] };
	struct outf csv = { 0 };
	char csv_path[600];
	enum plot_renderer used;
	int rc = parse_args(argc, argv, &b.o), err;
	bool any = false;

	if (rc >= 0)
		return rc;
	timing_init();
	lb_catch_signals();
	b.tty = isatty(2);
	err = bench_setup(&b);
	if (err)
		return 1;
	print_banner(&b);
	for (int i = 0; i < 2 && !err; i++)
		err = stats_rec_init(&rec[i],
				     b.o.throughput ? b.o.tp_count :
				     b.o.count > b.o.warmup ? b.o.count : b.o.warmup);
	if (err) {
		fprintf(stderr, "gpunic bench loopback: sample recorder: %s\n", strerror(err));
		goto out;
	}
	if (b.o.throughput) {
		snprintf(csv_path, sizeof(csv_path), "%s/throughput.csv", b.out_dir);
		err = outf_open(&csv, csv_path);
		if (err)
			goto out;
		outf_printf(&csv, "executor,interval_ns,target_msgs_per_s,achieved_msgs_per_s,sent,"
				  "verified,lost,corrupt,dup,p50_ns,p99_ns,max_ns,result\n");
		printf("throughput search (pass = zero loss and every reply verified), "
		       "%llu messages per step:\n", (unsigned long long)b.o.tp_count);
		printf("  %-10s %12s %14s %14s %8s %8s %8s  %s\n", "executor", "interval_us",
		       "target_msg/s", "achieved/s", "lost", "corrupt", "dup", "result");
	} else {
		for (int i = 0; i < FL_MAX && !err; i++) {
			bool cpu = i == FL_CPU;

			if (cpu ? !b.o.want[SER_CPU] || b.cpu_sensor < 0 : !b.have_gpu)
				continue;
			err = run_floor(&b, (enum floor_id)i, &rec[0]);
		}
		if (err)
			goto out;
	}
	for (int i = 0; i < SER_MAX && !err; i++) {
		if (!b.o.want[i])
			continue;
		if (atomic_load(&lb_stop_flag))
			break;
		err = b.o.throughput ? run_throughput(&b, (enum series_id)i, recs, &csv) :
				       run_latency(&b, (enum series_id)i, &rec[0]);
		if (err)
			fprintf(stderr, "gpunic bench loopback: %s failed: %s\n",
				series_defs[i].label, strerror(err));
	}
	if (b.o.throughput) {
		int e = outf_close(&csv);

		err = err ? err : e;
	}
	if (err)
		goto out;
	if (atomic_load(&lb_stop_flag))
		printf("\n(interrupted: the report holds the series that completed)\n");
	for (int i = 0; i < SER_MAX; i++)
		any |= b.ran[i];
	for (int i = 0; i < FL_MAX; i++)
		any |= b.floor_ran[i];
	if (any) {
		printf("\n");
		report_print_table(b.rep, stdout);
	} else {
		printf("\nno series completed: nothing to tabulate\n");
	}
	if (!b.o.throughput)
		print_ratios(&b);
	err = report_write(b.rep);
	if (err)
		goto out;
	if (!b.o.no_plot && any) {
		fflush(stdout);
		report_plot(b.rep, NULL, NULL, &used);
		printf("\nplots: %s\n", plot_renderer_name(used));
	}
	printf("report: %s/%s\n", b.out_dir, REPORT_SUMMARY_JSON);
out:
	fflush(stdout);
	stats_rec_free(&rec[0]);
	stats_rec_free(&rec[1]);
	report_close(b.rep);
	return err ? 1 : 0;
}

static void bench_usage(FILE *out)
{
	fprintf(out, "usage: gpunic bench <experiment> [options]\n"
		     "\n"
		     "  loopback   FPGA -> GPU -> FPGA loopback: floor, gpu, cpu and naive\n"
		     "             executors side by side (gpunic bench loopback --help)\n");
}

int cmd_bench(int argc, char **argv)
{
	if (argc < 2) {
		bench_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		bench_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "loopback") == 0)
		return bench_loopback(argc - 1, argv + 1);
	fprintf(stderr, "gpunic bench: unknown experiment '%s' (try 'gpunic bench --help')\n",
		argv[1]);
	return 2;
}
