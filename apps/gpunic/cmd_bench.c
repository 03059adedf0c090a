// SPDX-License-Identifier: MIT
/*
 * gpunic bench loopback: the whole FPGA -> GPU -> FPGA experiment in one process on one machine.
 * The experiment lives in libgpunic_exp (src/exp/bench.h: series, floors, pinning, throughput
 * search, ratios); this file parses the options, prints what it returns and records it in the
 * report folder (apps/common/report.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "gpunic/parse.h"
#include "outfile.h"
#include "report.h"
#include "timing.h"

#define CMD "bench loopback"

struct bench_opts {
	struct lb_bench_cfg c;
	const char *out;
	bool no_plot;
	bool verbose;
};

struct bench {
	struct bench_opts o;
	int argc;
	char **argv;
	struct gpunic_gpu_info gpu;
	bool have_gpu;
	struct lb_cpu_plan cpus;
	struct progress progress;
	struct lb_bench run;
	struct report *rep;
	struct stats_summary sum[LB_SER_MAX];
	bool ran[LB_SER_MAX];
	uint64_t late[LB_SER_MAX], max_late_ns[LB_SER_MAX];
	struct stats_tail_spacing tail[LB_SER_MAX], floor_tail[LB_FL_MAX];
	struct stats_summary floor_sum[LB_FL_MAX];
	bool floor_ran[LB_FL_MAX];
	double rate[LB_SER_MAX];	/* throughput: each series' best zero-loss rate */
	struct outf csv;
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
		"Prints a side-by-side table and ratios; writes a report folder (summary.json, CSVs,\n"
		"an HdrHistogram .hgrm per series, plots). Progress goes to stderr on a terminal.\n"
		"Without a GPU only the cpu executor and its floor run, and the output says so.\n"
		"\n"
		"  --count N            messages per series, 1..%llu (default 100000)\n"
		"  --size N             message bytes, %u..%u (default %u)\n"
		"  --interval-us F      one message every F us (default 10); 0 = closed loop\n"
		"  --mode MODE          write-imm (default, HSB) | send\n"
		"  --work W             none (default) | add-one\n"
		"  --rpc NAME           also RPC series, NAME %s:\n"
		"                       after each of gpu-db, gpu-bf, gpu-proxy and cpu, the\n"
		"                       same with every message a request to echo\n"
		"                       (<series>-rpc) and, for NAME not echo, to NAME\n"
		"                       (<series>-rpc-fn), with ratio rows for what dispatch\n"
		"                       and the handler cost (docs/RPC.md). --size is the\n"
		"                       requests' bytes, header included (surface_d3 takes 25)\n"
		"  --link KIND          shm (default) | udp (127.0.0.1 <-> 127.0.0.2) |\n"
		"                       packet:IFA,IFB | xdp:IFA[:Q],IFB[:Q]: two ports of one wire\n"
		"                       (e.g. a veth pair), the forwarder on IFA, the sensor on IFB\n"
		"  --udp-port N         UDP port of both ends with --link udp, 1..65535 (default 4791)\n"
		"  --executors LIST     comma list of gpu-db, gpu-bf, gpu-proxy, gpu (all three),\n"
		"                       cpu, naive\n"
		"                       (default: every one this machine can run)\n"
		"  --slots N            forwarder ring slots, a power of two 2..%u (default %u)\n"
		"  --qps N              QPs on the forwarder's NIC: the active one and N-1 idle\n"
		"                       ones beside it, connected, never used (1..%u, default 1)\n"
		"  --gpu N              CUDA device, 0..255 (default 0)\n"
		"  --cpus S,E,X         pin sensor, NIC engine and executor threads, each 0..%d\n"
		"                       (default: distinct allowed CPUs, skipping the first when\n"
		"                       there are four or more)\n"
		"  --engine MODE        auto (default) | thread | inline: with the cpu and naive\n"
		"                       executors, inline lets the executor thread drive the NIC\n"
		"                       (auto: inline on machines with fewer than 3 CPUs)\n"
		"  --sensor-engine MODE inline (default) | thread: the sensor's NIC driven by the\n"
		"                       sensor's thread, or by an engine thread of its own (on a\n"
		"                       fifth CPU where there is one; each message then crosses\n"
		"                       cores twice more: slower on the machines measured)\n"
		"  --hw-thread MODE     auto (default) | one | split: one puts the emulated\n"
		"                       hardware (the sensor and both NICs) on one pinned thread,\n"
		"                       the sensor's, so the path meets one CPU's interruptions;\n"
		"                       split gives the forwarder's NIC an engine thread and CPU\n"
		"                       of its own; auto: one for latency, split for --throughput\n"
		"  --gpu-polls N        reads of the CQ the GPU forwarder keeps in flight while\n"
		"                       idle, 1 or 2 (default 1); the second goes half a read's\n"
		"                       round trip after the first\n"
		"  --warmup N           messages before each series, checked, not recorded,\n"
		"                       0..%llu (default 1000)\n"
		"  --timeout SECONDS    a reply not back this long after the last activity is lost,\n"
		"                       0.001..3600, decimals allowed (default %g)\n"
		"  --timeout-ms N       the same in milliseconds (kept for older scripts)\n"
		"  --out DIR            report folder (default out/loopback-DATE)\n"
		"  --throughput         find each executor's highest zero-loss message rate\n"
		"  --throughput-count N messages per search step, 1..%llu (default: --count)\n"
		"  --no-plot            skip the PNG plots\n"
		"  --host-noise-ms N    before a latency run, watch the pinned CPUs N ms for\n"
		"                       the host's interruptions (ticks, interrupts, the\n"
		"                       hypervisor), which set the p99: 0..%u, 0 = skip\n"
		"                       (default %llu)\n"
		CLI_COMMON_USAGE
		"                       -v also prints a progress line per step on stderr when\n"
		"                       it is not a terminal (GPUNIC_PROGRESS=off|lines|bar\n"
		"                       overrides; a terminal gets a bar)\n"
		"  -h, --help           show this help\n",
		LB_BENCH_MAX_COUNT, LB_MSG_MIN, LB_MSG_MAX, LB_DEFAULT_SIZE, LB_RPC_FN_NAMES,
		GPUNIC_DEV_MAX_RING,
		LB_DEFAULT_SLOTS, LB_MAX_QPS, LB_BENCH_MAX_CPU, LB_BENCH_MAX_COUNT,
		LB_DEFAULT_TIMEOUT_MS / 1000.0, LB_BENCH_MAX_COUNT, LB_MAX_NOISE_MS,
		LB_DEFAULT_NOISE_NS / 1000000ull);
	cli_usage_exit(out, "every series asked for ran (loss is reported, not an error); also\n"
			    "     after SIGINT, which stops the run within a round trip (a GPU\n"
			    "     floor: once it ends), with what completed and its plots' scripts\n"
			    "     (not rendered)",
		       "a series, the report folder or the set-up failed", NULL);
}

/* "invalid value '8' for --size: must be 16..4096": what is wrong and what is right. */
static int __attribute__((format(printf, 3, 4))) bad(const char *opt, const char *val,
						      const char *fmt, ...)
{
	char want[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	return cli_bad_value(CMD, opt, val, want);
}

/* "S,E,X": three CPU numbers. */
static int parse_cpus(const char *s, int cpus[3])
{
	const char *p = s, *end;
	char num[24];
	uint64_t v;

	for (int i = 0; i < 3; i++, p = end + 1) {
		end = i < 2 ? strchr(p, ',') : p + strlen(p);
		if (!end || (size_t)(end - p) >= sizeof(num))
			break;
		memcpy(num, p, (size_t)(end - p));
		num[end - p] = '\0';
		if (gpunic_parse_uint(num, 0, LB_BENCH_MAX_CPU, &v))
			break;
		cpus[i] = (int)v;
		if (i == 2)
			return 0;
	}
	return bad("--cpus", s, "three CPU numbers S,E,X, each 0..%d", LB_BENCH_MAX_CPU);
}

/* Seconds with up to three decimals ("0.5"), as every command takes a timeout. */
static int parse_timeout(const char *val, uint64_t *ns)
{
	int ms;

	if (cli_parse_seconds(val, (int)(LB_BENCH_MIN_TIMEOUT_NS / 1000000),
			      (int)(LB_BENCH_MAX_TIMEOUT_NS / 1000000), &ms))
		return bad("--timeout", val, "0.001..3600 seconds, up to 3 decimals");
	*ns = (uint64_t)ms * 1000000ull;
	return 0;
}

enum {
	OPT_COUNT = 256, OPT_SIZE, OPT_INTERVAL, OPT_MODE, OPT_WORK, OPT_LINK, OPT_UDP_PORT,
	OPT_EXECUTORS, OPT_SLOTS, OPT_GPU, OPT_CPUS, OPT_ENGINE, OPT_SENSOR_ENGINE, OPT_WARMUP, OPT_TIMEOUT,
	OPT_TIMEOUT_MS, OPT_OUT, OPT_THROUGHPUT, OPT_TP_COUNT, OPT_NO_PLOT, OPT_QPS,
	OPT_HOST_NOISE, OPT_HW_THREAD, OPT_GPU_POLLS, OPT_RPC,
};

static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	CLI_COMMON_LONGOPTS,
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "interval-us", required_argument, NULL, OPT_INTERVAL },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "work", required_argument, NULL, OPT_WORK },
	{ "link", required_argument, NULL, OPT_LINK },
	{ "udp-port", required_argument, NULL, OPT_UDP_PORT },
	{ "executors", required_argument, NULL, OPT_EXECUTORS },
	{ "slots", required_argument, NULL, OPT_SLOTS },
	{ "gpu", required_argument, NULL, OPT_GPU },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "engine", required_argument, NULL, OPT_ENGINE },
	{ "sensor-engine", required_argument, NULL, OPT_SENSOR_ENGINE },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "throughput", no_argument, NULL, OPT_THROUGHPUT },
	{ "throughput-count", required_argument, NULL, OPT_TP_COUNT },
	{ "no-plot", no_argument, NULL, OPT_NO_PLOT },
	{ "qps", required_argument, NULL, OPT_QPS },
	{ "host-noise-ms", required_argument, NULL, OPT_HOST_NOISE },
	{ "hw-thread", required_argument, NULL, OPT_HW_THREAD },
	{ "gpu-polls", required_argument, NULL, OPT_GPU_POLLS },
	{ "rpc", required_argument, NULL, OPT_RPC },
	{ NULL, 0, NULL, 0 },
};

/* The options that take a number within a range. Return: 0 or the exit status 2. */
static int parse_number_opt(int c, const char *arg, struct lb_bench_cfg *o)
{
	uint64_t v = 0;
	int rc = 0;

	switch (c) {
	case OPT_COUNT:
		return cli_num(CMD, "--count", arg, 1, LB_BENCH_MAX_COUNT, &o->count);
	case OPT_SIZE:
		rc = cli_num(CMD, "--size", arg, LB_MSG_MIN, LB_MSG_MAX, &v);
		o->size = (uint32_t)v;
		break;
	case OPT_UDP_PORT:
		rc = cli_num(CMD, "--udp-port", arg, 1, 65535, &v);
		o->udp_port = (uint16_t)v;
		break;
	case OPT_SLOTS:
		if (gpunic_parse_uint(arg, 2, GPUNIC_DEV_MAX_RING, &v) || (v & (v - 1)))
			return bad("--slots", arg, "a power of two, 2..%u", GPUNIC_DEV_MAX_RING);
		o->slots = (uint32_t)v;
		break;
	case OPT_QPS:
		rc = cli_num(CMD, "--qps", arg, 1, LB_MAX_QPS, &v);
		o->qps = (uint32_t)v;
		break;
	case OPT_GPU:
		rc = cli_num(CMD, "--gpu", arg, 0, 255, &v);
		o->gpu = (int)v;
		break;
	case OPT_GPU_POLLS:
		rc = cli_num(CMD, "--gpu-polls", arg, 1, 2, &v);
		o->gpu_polls = (uint32_t)v;
		break;
	case OPT_HOST_NOISE:
		rc = cli_num(CMD, "--host-noise-ms", arg, 0, LB_MAX_NOISE_MS, &v);
		o->noise_ns = v * 1000000ull;
		break;
	case OPT_WARMUP:
		return cli_num(CMD, "--warmup", arg, 0, LB_BENCH_MAX_COUNT, &o->warmup);
	case OPT_TIMEOUT:
		return parse_timeout(arg, &o->timeout_ns);
	case OPT_TIMEOUT_MS:
		rc = cli_num(CMD, "--timeout-ms", arg, 1, LB_BENCH_MAX_TIMEOUT_NS / 1000000, &v);
		o->timeout_ns = v * 1000000ull;
		break;
	case OPT_TP_COUNT:
		return cli_num(CMD, "--throughput-count", arg, 1, LB_BENCH_MAX_COUNT, &o->tp_count);
	case OPT_INTERVAL:
		if (cli_parse_us(arg, &o->interval_ns))
			return bad("--interval-us", arg, "0 or more microseconds, up to 3 decimals");
		break;
	case OPT_CPUS:
		rc = parse_cpus(arg, o->cpus);
		o->cpus_given = true;
		break;
	}
	return rc;
}

/* The options that take a word. Return: 0, the exit status 2, or -1 when @c is not one. */
static int parse_word_opt(int c, const char *arg, struct bench_opts *b)
{
	struct lb_bench_cfg *o = &b->c;

	switch (c) {
	case OPT_MODE:
		return lb_mode_parse(arg, &o->mode) ? bad("--mode", arg, "write-imm or send") : 0;
	case OPT_WORK:
		return lb_work_parse(arg, &o->work) ? bad("--work", arg, "none or add-one") : 0;
	case OPT_LINK:
		if (lb_bench_parse_link(o, arg))
			return bad("--link", arg, "shm, udp, packet:IFA,IFB or xdp:IFA[:Q],IFB[:Q]");
		return 0;
	case OPT_EXECUTORS:
		if (lb_series_parse(arg, o->want))
			return bad("--executors", arg, "a comma list of gpu-db, gpu-bf, gpu-proxy, "
				   "gpu, cpu, naive");
		o->executors_given = true;
		return 0;
	case OPT_ENGINE:
		return lb_engine_parse(arg, &o->engine) ?
			       bad("--engine", arg, "auto, thread or inline") : 0;
	case OPT_SENSOR_ENGINE:
		return lb_sensor_engine_parse(arg, &o->sensor_engine) ?
			       bad("--sensor-engine", arg, "inline or thread") : 0;
	case OPT_HW_THREAD:
		if (!strcmp(arg, "auto"))
			o->hw_thread = LB_HW_AUTO;
		else if (!strcmp(arg, "one"))
			o->hw_thread = LB_HW_ONE;
		else if (!strcmp(arg, "split"))
			o->hw_thread = LB_HW_SPLIT;
		else
			return bad("--hw-thread", arg, "auto, one or split");
		return 0;
	case OPT_OUT:
		if (!*arg)
			return bad("--out", arg, "a folder name");
		b->out = arg;
		return 0;
	case OPT_RPC:
		return lb_rpc_fn_parse(arg, &o->rpc_fn) ? bad("--rpc", arg, LB_RPC_FN_NAMES) : 0;
	}
	return -1;
}

/* What --rpc needs of the other options. Return: 0, or 2 after saying why. */
static int check_rpc_opts(const struct lb_bench_cfg *c)
{
	char val[16], want[64];
	bool any = false;

	if (!c->rpc_fn)
		return 0;
	if (c->work != GPUNIC_LOOP_WORK_NONE) {
		fprintf(stderr, "gpunic " CMD ": --rpc compares with the plain echo: --work add-one "
				"does not go with it (--rpc add_one adds 1 as a function)\n");
		return 2;
	}
	/* every series sends echo requests, the -rpc-fn ones the function's */
	if (!lb_rpc_request_len(GPUNIC_RPC_ID_ECHO, c->size) ||
	    !lb_rpc_request_len(c->rpc_fn, c->size)) {
		snprintf(val, sizeof(val), "%u", c->size);
		snprintf(want, sizeof(want), "at least %u with --rpc %s",
			 c->rpc_fn == GPUNIC_RPC_ID_SURFACE_D3 ? 25 : 24, lb_rpc_fn_name(c->rpc_fn));
		return bad("--size", val, "%s", want);
	}
	for (int i = 0; i < LB_SER_MAX; i++)
		any |= lb_series_defs[i].rpc == LB_SER_RPC_ECHO && c->want[lb_series_defs[i].base];
	if (!any) {
		fprintf(stderr, "gpunic " CMD ": --rpc runs on gpu-db, gpu-bf, gpu-proxy and cpu, "
				"and --executors names none of them\n");
		return 2;
	}
	return 0;
}

/* Return: -1 to run, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	struct cli_getopt g = { .cmd = CMD, .shortopts = ":hv", .longopts = longopts,
				.usage = usage };
	int c, rc;

	*o = (struct bench_opts){ 0 };
	lb_bench_defaults(&o->c);
	while ((c = cli_getopt_next(&g, argc, argv))) {
		switch (c) {
		case OPT_THROUGHPUT:
			o->c.throughput = true;
			continue;
		case OPT_NO_PLOT:
			o->no_plot = true;
			continue;
		}
		rc = parse_word_opt(c, optarg, o);
		if (rc < 0)
			rc = parse_number_opt(c, optarg, &o->c);
		if (rc)
			return rc;
	}
	if (g.exit >= 0)
		return g.exit;
	o->verbose = g.verbose > 0;
	if (optind < argc)
		return cli_extra_arg(CMD, argv[optind]);
	rc = check_rpc_opts(&o->c);
	if (rc)
		return rc;
	if (!o->c.tp_count)
		o->c.tp_count = o->c.count;
	return -1;
}

/* ---------------------------------------------------------------- the report's extras */

/* "cpu.sent"; a key too long for @k is cut, which no key of ours is. */
static const char *key_of(char *k, size_t len, const char *label, const char *key)
{
	int n = snprintf(k, len, "%s%s%s", label ? label : "", label ? "." : "", key);

	return n < 0 ? "" : k;
}

static void __attribute__((format(printf, 4, 5)))
set_str(struct bench *b, const char *label, const char *key, const char *fmt, ...)
{
	char k[96], v[256];
	va_list ap;

	key_of(k, sizeof(k), label, key);
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	report_set_extra(b->rep, k, v);
}


static void set_u64(struct bench *b, const char *label, const char *key, uint64_t v)
{
	char k[96];

	report_set_extra_u64(b->rep, key_of(k, sizeof(k), label, key), v);
}

static void set_num(struct bench *b, const char *label, const char *key, double v)
{
	char k[96];

	report_set_extra_num(b->rep, key_of(k, sizeof(k), label, key), v);
}

static void set_bool(struct bench *b, const char *label, const char *key, bool v)
{
	char k[96];

	report_set_extra_bool(b->rep, key_of(k, sizeof(k), label, key), v);
}

/* An RPC series: the function, its responses by check, the forwarder's requests by reason. */
static void record_rpc(struct bench *b, const char *label, const struct lb_series_result *r)
{
	char key[96];

	set_str(b, label, "rpc_function", "%s", lb_rpc_fn_name(r->rpc_fn));
	for (int i = 0; i < GPUNIC_RPC_CHECKS; i++) {
		snprintf(key, sizeof(key), "rpc_checks.%s",
			 gpunic_rpc_check_name((enum gpunic_rpc_check)i));
		set_u64(b, label, key, r->run.rpc_checks[i]);
	}
	for (uint32_t i = 0; i < GPUNIC_RPC_REASONS; i++) {
		snprintf(key, sizeof(key), "forwarder_rpc.%s", gpunic_rpc_reason_name(i));
		set_u64(b, label, key, r->fwd.rpc.by_reason[i]);
	}
	set_u64(b, label, "forwarder_rpc.dropped", r->fwd.rpc.dropped);
}

static void record_run(struct bench *b, const char *label, const struct lb_series_result *r)
{
	const struct lb_run_result *run = &r->run, *w = &r->warm;
	uint64_t drops = 0;
	char key[96];

	set_u64(b, label, "sent", run->sent);
	set_u64(b, label, "verified", run->verified);
	set_bool(b, label, "all_verified", run->verified == run->sent);
	set_u64(b, label, "stale", run->stale);
	set_u64(b, label, "corrupt_unmatched", run->corrupt_unmatched);
	set_u64(b, label, "late_sends", run->late_sends);
	set_u64(b, label, "max_late_ns", run->max_late_ns);
	set_u64(b, label, "error_completions", run->rx_errors + run->send_errors);
	set_u64(b, label, "warmup_sent", w->sent);
	set_u64(b, label, "warmup_verified", w->verified);
	set_u64(b, label, "warmup_lost", w->counts.lost);
	set_u64(b, label, "warmup_corrupt", w->counts.corrupt);
	set_u64(b, label, "forwarder_echoed", r->fwd.echoed);
	set_u64(b, label, "forwarder_errors", r->fwd.errors);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++) {
		if (!r->fwd.nic.drops[i])
			continue;
		drops += r->fwd.nic.drops[i];
		snprintf(key, sizeof(key), "forwarder_nic_drops.%s",
			 gpunic_drop_reason_name((enum gpunic_drop_reason)i));
		set_u64(b, label, key, r->fwd.nic.drops[i]);
	}
	set_u64(b, label, "forwarder_nic_drops", drops);
	set_str(b, label, "handler", "%s", lb_handler_name(r->handler));
	if (r->rpc_fn)
		record_rpc(b, label, r);
}

/* ---------------------------------------------------------------- printing */

/* Requests the forwarder did not answer with a handler's success. */
static uint64_t rpc_not_ok(const struct gpunic_rpc_counters *c)
{
	uint64_t n = 0;

	for (int i = GPUNIC_RPC_R_OK + 1; i < GPUNIC_RPC_REASONS; i++)
		n += c->by_reason[i];
	return n;
}

static void print_run_line(const char *label, const struct lb_series_result *r)
{
	const struct lb_run_result *run = &r->run;

	printf("  %-10s sent %llu, verified %llu, lost %llu, corrupt %llu, dup %llu, "
	       "late sends %llu, p50 %.3f us, max %.3f us; forwarder echoed %llu",
	       label, (unsigned long long)run->sent, (unsigned long long)run->verified,
	       (unsigned long long)run->counts.lost, (unsigned long long)run->counts.corrupt,
	       (unsigned long long)run->counts.dup, (unsigned long long)run->late_sends,
	       (double)r->sum.p50_ns / 1000.0, (double)r->sum.max_ns / 1000.0,
	       (unsigned long long)r->fwd.echoed);
	lb_print_drops(stdout, &r->fwd.nic);
	printf("\n");
	if (r->rpc_fn)
		printf("  %-10s RPC to %s: %llu responses checked ok, %llu failed a check; "
		       "forwarder (warm-up included): %llu ok, %llu otherwise, %llu dropped\n",
		       label, lb_rpc_fn_name(r->rpc_fn),
		       (unsigned long long)run->rpc_checks[GPUNIC_RPC_CHECK_OK],
		       (unsigned long long)(run->counts.received -
					    run->rpc_checks[GPUNIC_RPC_CHECK_OK]),
		       (unsigned long long)r->fwd.rpc.by_reason[GPUNIC_RPC_R_OK],
		       (unsigned long long)rpc_not_ok(&r->fwd.rpc),
		       (unsigned long long)r->fwd.rpc.dropped);
	if (!lb_run_clean(run))
		printf("  %-10s WARNING: not every message came back intact (see the loss row)\n",
		       label);
	if (r->fwd.nic.drops[GPUNIC_DROP_NO_RECV_WQE])
		printf("  %-10s the forwarder fell behind the pacing (its ring ran out of "
		       "receives): its time per message, or a stall of its thread, exceeded what "
		       "the ring absorbs; --throughput finds the rate it sustains\n", label);
	fflush(stdout);
}

/* Late sends are the sensor's own stalls: said where the table is read, not only in JSON. */
static void print_late_sends(const struct bench *b)
{
	bool any = false;

	for (int i = 0; i < LB_SER_MAX; i++) {
		if (!b->ran[i] || !b->late[i])
			continue;
		if (!any)
			printf("\nlate sends (the sensor's thread started a send a whole interval or "
			       "more after its slot; the schedule restarted there):\n");
		any = true;
		printf("  %-10s %llu, the latest %.3f us late\n", lb_series_defs[i].label,
		       (unsigned long long)b->late[i], (double)b->max_late_ns[i] / 1000.0);
	}
	if (!any && b->o.c.interval_ns && !b->o.c.throughput)
		printf("\nlate sends: none\n");
}

/* One line of print_tails(): @per_ns is the time between two sequence numbers (0: not paced). */
static void print_tail(const char *label, const struct stats_tail_spacing *t, uint64_t per_ns)
{
	printf("  %-14s %4llu above p99 (%.3f us)", label, (unsigned long long)t->slow,
	       (double)t->threshold_ns / 1000.0);
	if (t->gap)
		printf("; %llu of them %llu apart", (unsigned long long)t->at_gap,
		       (unsigned long long)t->gap);
	if (t->gap && per_ns)
		printf(" (%.3f ms)", (double)(t->gap * per_ns) / 1e6);
	printf("\n");
}

/*
 * Where the tail comes from: the slow samples that one spacing gathers are a stall that recurs
 * (a timer tick on a thread the path crosses, 1 ms apart at 1000 Hz), and how many threads a
 * series crosses sets how often they land. Said beside the p99 they make.
 */
static void print_tails(const struct bench *b)
{
	uint64_t per_ns = b->o.c.interval_ns;	/* 0: closed loop */

	if (b->o.c.throughput)
		return;
	printf("\ntails (the samples above each p99, in the order sent; most of them one distance "
	       "apart, in messages or round trips, is a stall that recurs):\n");
	for (int i = 0; i < LB_FL_MAX; i++)
		if (b->floor_ran[i])
			print_tail(lb_floor_defs[i].label, &b->floor_tail[i], 0);
	for (int i = 0; i < LB_SER_MAX; i++)
		if (b->ran[i])
			print_tail(lb_series_defs[i].label, &b->tail[i], per_ns);
}

/* The spacing of @rec's tail for the report and print_tails(). */
static int record_tail(struct bench *b, const char *label, const struct stats_rec *rec,
		       struct stats_tail_spacing *t)
{
	int err = stats_tail_spacing(rec, t);

	if (err)
		return err;
	set_u64(b, label, "tail_above_p99", t->slow);
	set_u64(b, label, "tail_gap", t->gap);
	set_u64(b, label, "tail_at_gap", t->at_gap);
	return 0;
}

static void print_ratios(struct bench *b)
{
	const struct stats_summary *ser[LB_SER_MAX], *fl[LB_FL_MAX];
	struct lb_ratio r[LB_RATIOS_MAX];
	size_t n;

	for (int i = 0; i < LB_SER_MAX; i++)
		ser[i] = b->ran[i] ? &b->sum[i] : NULL;
	for (int i = 0; i < LB_FL_MAX; i++)
		fl[i] = b->floor_ran[i] ? &b->floor_sum[i] : NULL;
	n = lb_bench_ratios(ser, fl, b->have_gpu, r);
	printf("\nratios (one run, same machine):\n");
	for (size_t i = 0; i < n; i++) {
		if (r[i].difference)
			printf("  %-32s %+10.0f ns (%.3f us - %.3f us)\n", r[i].name, r[i].value,
			       (double)r[i].num_ns / 1000.0, (double)r[i].den_ns / 1000.0);
		else
			printf("  %-32s %10.4g   (%.3f us / %.3f us)\n", r[i].name, r[i].value,
			       (double)r[i].num_ns / 1000.0, (double)r[i].den_ns / 1000.0);
		set_num(b, NULL, r[i].name, r[i].value);
	}
	if (!b->have_gpu && ser[LB_SER_CPU])
		printf("  cpu p50 = %.3f us; no GPU, so no GPU floor, gpu or naive series "
		       "to compare with\n", (double)ser[LB_SER_CPU]->p50_ns / 1000.0);
}

/* Throughput with --rpc: each RPC series' zero-loss rate over the one it is compared with. */
static void print_rate_ratios(struct bench *b)
{
	struct lb_rate_ratio r[LB_SER_MAX];
	size_t n = lb_bench_rpc_rates(b->rate, r);

	if (!n)
		return;
	printf("\nrate ratios (one run, same machine):\n");
	for (size_t i = 0; i < n; i++) {
		printf("  %-36s %10.4g   (%.0f / %.0f messages/s)\n", r[i].name, r[i].value,
		       r[i].num, r[i].den);
		set_num(b, NULL, r[i].name, r[i].value);
	}
}

/* ---------------------------------------------------------------- running */

static int floor_done(void *arg, enum lb_floor_id id, const struct stats_rec *rec,
		      const struct lb_floor_result *r)
{
	struct bench *b = arg;
	const struct lb_floor_def *d = &lb_floor_defs[id];
	const struct stats_summary *sum = &r->sum;
	int err = report_add_series(b->rep, d->label, rec);

	if (err)
		return err;
	err = record_tail(b, d->label, rec, &b->floor_tail[id]);
	if (err)
		return err;
	b->floor_sum[id] = *sum;
	b->floor_ran[id] = true;
	printf("  %-23s %llu round trips, p50 %.3f us, p99 %.3f us, max %.3f us\n", d->label,
	       (unsigned long long)sum->count, (double)sum->p50_ns / 1000.0,
	       (double)sum->p99_ns / 1000.0, (double)sum->max_ns / 1000.0);
	if (d->sweep) {
		printf("  %-23s pollers 1-%d: p50", "", GPUNIC_FLOOR_POLLERS_MAX);
		for (int k = 0; k < GPUNIC_FLOOR_POLLERS_MAX; k++)
			printf(" %.3f", (double)r->sweep_p50_ns[k] / 1000.0);
		printf(" us; kept %u (started %u ns apart)\n", r->pollers, r->stagger_ns);
		set_u64(b, d->label, "pollers", r->pollers);
		set_u64(b, d->label, "stagger_ns", r->stagger_ns);
		for (int k = 0; k < GPUNIC_FLOOR_POLLERS_MAX; k++) {
			char key[32];

			snprintf(key, sizeof(key), "p50_ns_pollers_%d", k + 1);
			set_u64(b, d->label, key, r->sweep_p50_ns[k]);
			snprintf(key, sizeof(key), "p99_ns_pollers_%d", k + 1);
			set_u64(b, d->label, key, r->sweep_p99_ns[k]);
		}
	}
	if (d->kind == GPUNIC_FLOOR_LINE && id != LB_FL_CPU) {
		printf("  %-23s torn lines seen and read again: %u by the GPU, %u by the CPU\n",
		       "", r->torn[0], r->torn[1]);
		set_u64(b, d->label, "torn_gpu", r->torn[0]);
		set_u64(b, d->label, "torn_cpu", r->torn[1]);
	}
	return 0;
}

static int series_done(void *arg, enum lb_series_id id, const struct stats_rec *rec,
		       const struct lb_series_result *r)
{
	struct bench *b = arg;
	const char *label = lb_series_defs[id].label;
	int err = report_add_series(b->rep, label, rec);

	if (err)
		return err;
	err = record_tail(b, label, rec, &b->tail[id]);
	if (err)
		return err;
	b->sum[id] = r->sum;
	b->ran[id] = true;
	b->late[id] = r->run.late_sends;
	b->max_late_ns[id] = r->run.max_late_ns;
	record_run(b, label, r);
	print_run_line(label, r);
	return 0;
}

/* Each throughput step: a row on screen and in throughput.csv. */
static void tp_step_out(void *arg, const char *label, const struct lb_tp_step *st)
{
	struct bench *b = arg;
	const struct lb_run_result *r = &st->res;
	double target = st->interval_ns ? 1e9 / (double)st->interval_ns : 0.0;
	char where[256];

	printf("  %-10s %12.3f %14.0f %14.0f %8llu %8llu %8llu  %s\n", label,
	       (double)st->interval_ns / 1000.0, target, st->achieved,
	       (unsigned long long)r->counts.lost, (unsigned long long)r->counts.corrupt,
	       (unsigned long long)r->counts.dup, st->pass ? "pass" : "FAIL");
	lb_tp_where_text(st, where, sizeof(where));
	if (where[0])
		printf("  %-10s where: %s\n", "", where);
	fflush(stdout);
	outf_printf(&b->csv, "%s,%llu,%.1f,%.1f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%s\n",
		    label, (unsigned long long)st->interval_ns, target, st->achieved,
		    (unsigned long long)r->sent, (unsigned long long)r->verified,
		    (unsigned long long)r->counts.lost, (unsigned long long)r->counts.corrupt,
		    (unsigned long long)r->counts.dup, (unsigned long long)st->sum.p50_ns,
		    (unsigned long long)st->sum.p99_ns, (unsigned long long)st->sum.max_ns,
		    st->pass ? "pass" : "fail");
}

static int tp_done(void *arg, enum lb_series_id id, const struct lb_tp_result *t)
{
	struct bench *b = arg;
	const char *label = lb_series_defs[id].label;
	int err;

	if (!t->found) {
		printf("  %-10s no zero-loss rate down to one message every %.3f ms\n", label,
		       (double)t->fail_iv / 1e6);
		set_num(b, label, "throughput_best_msgs_per_s", NAN);
		return 0;
	}
	printf("  %-10s highest zero-loss rate: %.0f messages/s (interval %.3f us%s)\n", label,
	       t->best.achieved, (double)t->best.interval_ns / 1000.0,
	       t->best.interval_ns ? "" : ", back to back");
	set_num(b, label, "throughput_best_msgs_per_s", t->best.achieved);
	b->rate[id] = t->best.achieved;
	set_u64(b, label, "throughput_best_interval_ns", t->best.interval_ns);
	err = report_add_series(b->rep, label, t->rec);
	if (!err) {
		b->sum[id] = t->best.sum;
		b->ran[id] = true;
	}
	return err;
}

static const struct lb_bench_ops bench_ops = {
	.floor_done = floor_done,
	.series_done = series_done,
	.tp_step = tp_step_out,
	.tp_done = tp_done,
};

/* ---------------------------------------------------------------- set-up */

static void default_out(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	char date[32];

	localtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "out/loopback-%s", date);
}

static void record_setup(struct bench *b)
{
	const struct lb_bench_cfg *c = &b->o.c;

	set_str(b, NULL, "experiment", "%s", c->throughput ? "loopback-throughput" :
							    "loopback-latency");
	set_str(b, NULL, "mode", "%s", lb_mode_name(c->mode));
	set_str(b, NULL, "work", "%s", lb_work_name(c->work));
	set_str(b, NULL, "qp_type", "UC");
	set_u64(b, NULL, "count", c->count);
	set_u64(b, NULL, "warmup", c->warmup);
	set_bool(b, NULL, "closed_loop", c->interval_ns == 0);
	set_u64(b, NULL, "slots", c->slots);
	set_u64(b, NULL, "qps", c->qps);
	set_num(b, NULL, "timeout_s", (double)c->timeout_ns / 1e9);
	set_str(b, NULL, "pinning", "%s", b->cpus.note);
	set_str(b, NULL, "hw_thread", "%s", lb_bench_hw_one_thread(c) ? "one" : "split");
	set_u64(b, NULL, "gpu_polls", c->gpu_polls);
	set_str(b, NULL, "cpu_executor_engine", "%s", b->cpus.inline_engine ? "inline" : "thread");
	set_str(b, NULL, "sensor_engine", "%s",
		c->sensor_engine == LB_ENGINE_THREAD ? "thread" : "inline");
	/* the -rpc series' function is echo, the -rpc-fn series' this one */
	set_str(b, NULL, "rpc_function", "%s", c->rpc_fn ? lb_rpc_fn_name(c->rpc_fn) : "none");
	if (c->rpc_fn)
		set_str(b, NULL, "rpc_clock", "CLOCK_REALTIME");
	if (b->have_gpu) {
		set_str(b, NULL, "gpu_status", "present: %s (cc %d.%d, %d SMs)", b->gpu.name,
			b->gpu.cc_major, b->gpu.cc_minor, b->gpu.sm_count);
	} else {
		set_str(b, NULL, "gpu_status", "absent: %s", b->gpu.reason);
		set_str(b, NULL, "gpu_note",
			"no GPU: only the CPU executor ran (with its cpu-floor); the GPU floors "
			"(floor, exchange-floor, their -stopread forms, floor-acqrel), gpu-db, "
			"gpu-bf, gpu-proxy and naive series and the GPU ratios are missing, not "
			"zero");
	}
}

/* "32 B write-imm, work none, link shm, 20000 messages every 10 us": the plots' titles. */
static void run_params(const struct lb_bench_cfg *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%u B %s, work %s, link %s, ", c->size, lb_mode_name(c->mode),
			 lb_work_name(c->work), lb_bench_link_name(c));

	if (n < 0 || (size_t)n >= len)
		return;
	if (c->throughput)
		snprintf(buf + n, len - n, "throughput search, %llu per step",
			 (unsigned long long)c->tp_count);
	else if (c->interval_ns)
		snprintf(buf + n, len - n, "%llu messages every %g us",
			 (unsigned long long)c->count, (double)c->interval_ns / 1000.0);
	else
		snprintf(buf + n, len - n, "%llu messages, closed loop",
			 (unsigned long long)c->count);
}

static int bench_setup(struct bench *b)
{
	char params[160];
	struct report_meta meta = {
		.argc = b->argc,
		.argv = b->argv,
		.link = lb_bench_link_name(&b->o.c),
		.msg_bytes = b->o.c.size,
		.interval_ns = b->o.c.interval_ns,
		.params = params,
	};
	int err;

	b->have_gpu = gpunic_gpu_probe(b->o.c.gpu, &b->gpu) == 0 && b->gpu.present;
	err = lb_bench_need_gpu(&b->o.c, b->have_gpu, b->gpu.reason);
	if (err)
		return err;
	lb_bench_plan_cpus_here(&b->o.c, &b->cpus);
	progress_init(&b->progress, stderr, progress_mode_for(2, b->o.verbose));
	b->run = (struct lb_bench){ .cfg = &b->o.c, .cpus = &b->cpus, .progress = &b->progress,
				    .have_gpu = b->have_gpu };
	if (b->o.out)
		snprintf(b->out_dir, sizeof(b->out_dir), "%s", b->o.out);
	else
		default_out(b->out_dir, sizeof(b->out_dir));
	run_params(&b->o.c, params, sizeof(params));
	meta.gpu_name = b->have_gpu ? b->gpu.name : NULL;
	meta.baseline = b->o.c.throughput ? NULL : b->have_gpu ? "floor" : "cpu-floor";
	err = report_open(&b->rep, b->out_dir, &meta);
	if (err) {
		fprintf(stderr, "gpunic " CMD ": report folder %s: %s\n", b->out_dir,
			strerror(err));
		return err;
	}
	record_setup(b);
	return 0;
}

/* The load average, and a warning when more threads want to run than there are CPUs. */
static void print_load(struct bench *b)
{
	int ncpus = timing_cpu_count();
	double load[3];

	if (lb_loadavg(load)) {
		printf("  load average at start: unknown (%d CPUs allowed)\n", ncpus);
		return;
	}
	printf("  load average at start: %.2f %.2f %.2f (%d CPUs allowed)\n", load[0], load[1],
	       load[2], ncpus);
	set_num(b, NULL, "loadavg_at_start", load[0]);
	set_num(b, NULL, "loadavg_5min_at_start", load[1]);
	set_num(b, NULL, "loadavg_15min_at_start", load[2]);
	set_bool(b, NULL, "load_above_cpus", lb_load_too_high(load[0], ncpus));
	if (lb_load_too_high(load[0], ncpus))
		printf("  WARNING: the 1-minute load average %.2f exceeds the %d CPUs allowed: "
		       "other work shares these cores, expect late sends and long tails\n",
		       load[0], ncpus);
}

static void print_banner(struct bench *b)
{
	const struct lb_bench_cfg *c = &b->o.c;

	printf("gpunic bench loopback: %s, %u B, UC, work %s, link %s", lb_mode_name(c->mode),
	       c->size, lb_work_name(c->work), lb_bench_link_name(c));
	if (c->raw_kind[0])
		printf(" (forwarder %s, sensor %s)\n", c->raw_spec[0], c->raw_spec[1]);
	else
		printf("%s\n", c->udp ? " (127.0.0.1 <-> 127.0.0.2)" : "");
	if (c->throughput)
		printf("  throughput search from one message every %.3f us down to back to back\n",
		       (double)c->interval_ns / 1000.0);
	else if (c->interval_ns)
		printf("  pacing: one message every %.3f us, %llu messages per series "
		       "(+%llu warm-up)\n", (double)c->interval_ns / 1000.0,
		       (unsigned long long)c->count, (unsigned long long)c->warmup);
	else
		printf("  closed loop: each message when the previous one is back, %llu per series "
		       "(+%llu warm-up)\n", (unsigned long long)c->count,
		       (unsigned long long)c->warmup);
	printf("  %s\n", b->cpus.note);
	if (lb_bench_hw_one_thread(c))
		printf("  emulated hardware on one thread: the sensor's (CPU %d) drives both NICs; "
		       "no NIC engine thread\n", b->cpus.sensor);
	if (c->gpu_polls)
		printf("  GPU forwarder: %u CQ reads in flight while idle\n", c->gpu_polls);
	if (c->rpc_fn)
		printf("  RPC: each series again answering requests to echo (<series>-rpc)%s%s%s, "
		       "stamped by CLOCK_REALTIME\n",
		       c->rpc_fn != GPUNIC_RPC_ID_ECHO ? " and to " : "",
		       c->rpc_fn != GPUNIC_RPC_ID_ECHO ? lb_rpc_fn_name(c->rpc_fn) : "",
		       c->rpc_fn != GPUNIC_RPC_ID_ECHO ? " (<series>-rpc-fn)" : "");
	print_load(b);
	if (b->have_gpu)
		printf("  GPU %d: %s (compute %d.%d, %d SMs)\n", c->gpu, b->gpu.name,
		       b->gpu.cc_major, b->gpu.cc_minor, b->gpu.sm_count);
	else
		printf("  NO GPU (%s)\n  -> running the CPU executor only (and its cpu-floor): no "
		       "GPU floors, gpu-db, gpu-bf, gpu-proxy or naive series, no GPU ratios\n",
		       b->gpu.reason);
	printf("  report folder: %s\n\n", b->out_dir);
	fflush(stdout);
}

/* One CPU's line of print_host_noise(), and its record in the report. */
static void print_noise_cpu(struct bench *b, const char *roles, const struct hostnoise_cpu *h)
{
	char label[32], who[80];
	double per_s = h->span_ns ? (double)h->gaps * 1e9 / (double)h->span_ns : 0.0;

	snprintf(label, sizeof(label), "host_noise.cpu%d", h->cpu);
	snprintf(who, sizeof(who), "CPU %d (%s)", h->cpu, roles);
	if (h->err) {
		printf("  %-34s not measured: %s\n", who, strerror(h->err));
		return;
	}
	printf("  %-34s %5llu gaps (%.0f/s)", who, (unsigned long long)h->gaps, per_s);
	if (h->gaps)
		printf(", median %.3f us, longest %.3f us, %.2f %% of the time",
		       (double)h->len_p50_ns / 1000.0, (double)h->len_max_ns / 1000.0,
		       100.0 * (double)h->stolen_ns / (double)h->span_ns);
	if (h->period_ns)
		printf("; %llu spaced %.3f ms", (unsigned long long)h->at_period,
		       (double)h->period_ns / 1e6);
	printf("%s%s\n", h->nohz_full ? "; nohz_full" : "", h->isolated ? "; isolated" : "");
	set_str(b, label, "roles", "%s", roles);
	set_u64(b, label, "gaps", h->gaps);
	set_num(b, label, "gaps_per_s", per_s);
	set_num(b, label, "median_us", (double)h->len_p50_ns / 1000.0);
	set_num(b, label, "longest_us", (double)h->len_max_ns / 1000.0);
	set_num(b, label, "stolen_share", (double)h->stolen_ns / (double)h->span_ns);
	set_num(b, label, "spacing_ms", (double)h->period_ns / 1e6);
	set_u64(b, label, "at_spacing", h->at_period);
	set_bool(b, label, "nohz_full", h->nohz_full);
	set_bool(b, label, "isolated", h->isolated);
}

/*
 * What the host takes from the path's CPUs, measured before a latency run: a paced series'
 * p99 is how often these gaps land on a message in flight (the tails section after the run).
 */
static void print_host_noise(struct bench *b)
{
	struct lb_noise n;
	bool spared = false;
	int err;

	if (b->o.c.throughput || !b->o.c.noise_ns)
		return;
	err = lb_bench_host_noise(&b->o.c, &b->cpus, &n);
	if (err) {
		printf("host interruptions: not measured: %s\n\n", strerror(err));
		return;
	}
	if (!n.n) {
		printf("host interruptions: not measured: no thread is pinned\n\n");
		return;
	}
	printf("host interruptions (the pinned CPUs spinning %llu ms at once; a gap is %u ns or "
	       "more between two clock readings):\n",
	       (unsigned long long)(b->o.c.noise_ns / 1000000ull), HOSTNOISE_GAP_NS);
	for (int i = 0; i < n.n; i++) {
		print_noise_cpu(b, n.roles[i], &n.cpu[i]);
		spared |= n.cpu[i].nohz_full;
	}
	if (!spared)
		printf("  no path CPU is in the kernel's nohz_full list: each takes the periodic "
		       "timer tick\n");
	printf("\n");
	fflush(stdout);
}

static int open_throughput_csv(struct bench *b)
{
	char path[600];
	int err;

	snprintf(path, sizeof(path), "%s/throughput.csv", b->out_dir);
	err = outf_open(&b->csv, path);
	if (err)
		return err;
	outf_printf(&b->csv, "executor,interval_ns,target_msgs_per_s,achieved_msgs_per_s,sent,"
			     "verified,lost,corrupt,dup,p50_ns,p99_ns,max_ns,result\n");
	printf("throughput search (pass = zero loss and every reply verified), "
	       "%llu messages per step:\n", (unsigned long long)b->o.c.tp_count);
	printf("  %-10s %12s %14s %14s %8s %8s %8s  %s\n", "executor", "interval_us",
	       "target_msg/s", "achieved/s", "lost", "corrupt", "dup", "result");
	return 0;
}

static int print_results(struct bench *b)
{
	enum plot_renderer used;
	bool any = false;
	int err;

	if (atomic_load(&lb_stop_flag))
		printf("\n(interrupted: the report holds the series that completed)\n");
	for (int i = 0; i < LB_SER_MAX; i++)
		any |= b->ran[i];
	for (int i = 0; i < LB_FL_MAX; i++)
		any |= b->floor_ran[i];
	if (any) {
		printf("\n");
		report_print_table(b->rep, stdout);
	} else {
		printf("\nno series completed: nothing to tabulate\n");
	}
	print_late_sends(b);
	print_tails(b);
	if (!b->o.c.throughput)
		print_ratios(b);
	else
		print_rate_ratios(b);
	err = report_write(b->rep);
	if (err)
		return err;
	if (!b->o.no_plot && any && atomic_load(&lb_stop_flag)) {
		/* the scripts, not the minutes a renderer may take over the samples: the user
		 * asked to stop */
		fflush(stdout);
		report_plot(b->rep, "", "", &used);
		printf("\nplots: not rendered (interrupted): gnuplot %s/plot.gp renders them\n",
		       b->out_dir);
	} else if (!b->o.no_plot && any) {
		fflush(stdout);
		report_plot(b->rep, NULL, NULL, &used);
		printf("\nplots: %s\n", plot_renderer_name(used));
	}
	printf("report: %s/%s\n", b->out_dir, REPORT_SUMMARY_JSON);
	return 0;
}

/* @argc/@argv from "loopback" on; the report records the command from "bench" on. */
static int bench_loopback(int argc, char **argv)
{
	struct bench b = { .argc = argc + 1, .argv = argv - 1 };
	int rc = parse_args(argc, argv, &b.o), err;

	if (rc >= 0)
		return rc;
	timing_init();
	lb_catch_signals();
	if (bench_setup(&b))
		return 1;
	print_banner(&b);
	print_host_noise(&b);
	err = b.o.c.throughput ? open_throughput_csv(&b) : 0;
	if (!err)
		err = lb_bench_run(&b.run, &bench_ops, &b);
	if (b.o.c.throughput) {
		int e = outf_close(&b.csv);

		err = err ? err : e;
	}
	if (!err)
		err = print_results(&b);
	fflush(stdout);
	report_close(b.rep);
	return err ? 1 : 0;
}

static void bench_usage(FILE *out)
{
	fprintf(out, "usage: gpunic bench <experiment> [options]\n"
		     "\n"
		     "  loopback   FPGA -> GPU -> FPGA loopback: floor, gpu, cpu and naive\n"
		     "             executors side by side (gpunic bench loopback --help)\n"
		     "  pcie       what one GPU read of host memory costs, by size, and whether\n"
		     "             the CPU can store into GPU memory without gdrdrv\n"
		     "\n"
		     "Exit status: as the experiment's; 2 for bad usage.\n");
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
	if (strcmp(argv[1], "pcie") == 0)
		return bench_pcie(argc - 1, argv + 1);
	fprintf(stderr, "gpunic bench: unknown experiment '%s' (try 'gpunic bench --help')\n",
		argv[1]);
	return 2;
}
