// SPDX-License-Identifier: MIT
/*
 * The loopback with RPC (docs/RPC.md): the sensor's requests and the checks of their responses,
 * and the sensor against the CPU forwarder serving the function table over a shm cable in this
 * process, with every built-in function and every kind of bad request, answered or dropped.
 * The same forwarder code runs in the GPU kernel (tests/gpu, case 7).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "exp_loc.h"
#include "loopback.h"
#include "timing.h"

#define RIG_MSGS 300u

TEST(names_parse)
{
	enum lb_rpc_fault f;
	uint32_t id;

	CHECK_EQ(lb_rpc_fn_parse("echo", &id), 0);
	CHECK_EQ(id, GPUNIC_RPC_ID_ECHO);
	CHECK_EQ(lb_rpc_fn_parse("surface_d3", &id), 0);
	CHECK_EQ(id, gpunic_rpc_fnv1a("surface_d3"));
	CHECK(strcmp(lb_rpc_fn_name(id), "surface_d3") == 0);
	CHECK_EQ(lb_rpc_fn_parse("add-one", &id), EINVAL);
	CHECK_EQ(lb_rpc_fn_parse("", &id), EINVAL);
	CHECK(strcmp(lb_rpc_fn_name(0x12345678u), "?") == 0);
	for (int i = 0; i < LB_RPC_FAULTS; i++) {
		CHECK_EQ(lb_rpc_fault_parse(lb_rpc_fault_name((enum lb_rpc_fault)i), &f), 0);
		CHECK_EQ((int)f, i);
	}
	CHECK_EQ(lb_rpc_fault_parse("bad-magic", &f), EINVAL);
}

/* Requests as lb_rpc_fill() writes them: the header, arguments of the function's own, the
 * fault in the header; and what lb_rpc_expect() says each must get. */
TEST(fill_and_expect)
{
	uint8_t m[LB_MSG_MAX] __attribute__((aligned(8))), want[LB_MSG_MAX];
	struct gpunic_rpc_header h;
	uint32_t len, want_len;

	CHECK_EQ(lb_rpc_request_len(GPUNIC_RPC_ID_ECHO, 32), 32);
	CHECK_EQ(lb_rpc_request_len(GPUNIC_RPC_ID_ECHO, 24), 24);
	CHECK_EQ(lb_rpc_request_len(GPUNIC_RPC_ID_ECHO, 23), 0);
	CHECK_EQ(lb_rpc_request_len(GPUNIC_RPC_ID_SURFACE_D3, 4096), 25);
	CHECK_EQ(lb_rpc_request_len(GPUNIC_RPC_ID_SURFACE_D3, 24), 0);
	CHECK_EQ(lb_rpc_request_len(0x12345678u, 64), 0);

	len = lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ADD_ONE, LB_RPC_FAULT_NONE, 40, 7, 1234);
	CHECK_EQ(len, 40);
	memcpy(&h, m, sizeof(h));
	CHECK_EQ(h.magic, GPUNIC_RPC_MAGIC_REQUEST);
	CHECK_EQ(h.function_id, GPUNIC_RPC_ID_ADD_ONE);
	CHECK_EQ(h.arg_len, 16);
	CHECK_EQ(h.request_id, 7);
	CHECK_EQ(h.ptp_timestamp, 1234);
	CHECK_EQ(lb_rpc_expect(GPUNIC_RPC_ID_ADD_ONE, LB_RPC_FAULT_NONE, 40, 7, LB_SLOT_BYTES, want,
			       sizeof(want), &want_len), 0);
	CHECK_EQ(want_len, 16);
	for (uint32_t i = 0; i < 16; i++)
		CHECK_EQ(want[i], (uint8_t)(m[24 + i] + 1));

	len = lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_SURFACE_D3, LB_RPC_FAULT_NONE, 64, 0x35, 1);
	CHECK_EQ(len, 25);
	CHECK_EQ(m[24], 0x35);
	CHECK_EQ(lb_rpc_expect(GPUNIC_RPC_ID_SURFACE_D3, LB_RPC_FAULT_NONE, 64, 0x35, LB_SLOT_BYTES,
			       want, sizeof(want), &want_len), 0);
	CHECK_EQ(want_len, 3);
	CHECK_EQ(want[0] | want[1] << 8 | (uint32_t)want[2] << 16,
		 gpunic_rpc_surface_d3_reference(0x35));

	/* each fault in its place, and the status it must be answered with */
	lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_UNKNOWN, 32, 1, 1);
	memcpy(&h, m, sizeof(h));
	CHECK_EQ(h.function_id, gpunic_rpc_fnv1a("no_such_function"));
	CHECK_EQ(lb_rpc_expect(GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_UNKNOWN, 32, 1, LB_SLOT_BYTES,
			       want, sizeof(want), &want_len), GPUNIC_RPC_E_UNKNOWN_FUNCTION);
	CHECK_EQ(want_len, 0);
	lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_MAGIC, 32, 1, 1);
	memcpy(&h, m, sizeof(h));
	CHECK(h.magic != GPUNIC_RPC_MAGIC_REQUEST);
	lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_TOO_LONG, 32, 1, 1);
	memcpy(&h, m, sizeof(h));
	CHECK(h.arg_len > LB_SLOT_BYTES);
	len = lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_TRUNCATED, 32, 1, 1);
	memcpy(&h, m, sizeof(h));
	CHECK_EQ(h.arg_len, len - 24 + 1);
	CHECK_EQ(lb_rpc_expect(GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_TRUNCATED, 32, 1, LB_SLOT_BYTES,
			       want, sizeof(want), &want_len), GPUNIC_RPC_E_TRUNCATED);
	/* a whole slot's request one byte longer is past the slot before it is short */
	CHECK_EQ(lb_rpc_expect(GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_TRUNCATED, LB_SLOT_BYTES, 1,
			       LB_SLOT_BYTES, want, sizeof(want), &want_len), GPUNIC_RPC_E_TOO_LONG);
	len = lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_SCHEMA, 32, 1, 1);
	memcpy(&h, m, sizeof(h));
	CHECK_EQ(len, 24);
	CHECK_EQ(h.function_id, GPUNIC_RPC_ID_SURFACE_D3);
	CHECK_EQ(lb_rpc_expect(GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_SCHEMA, 32, 1, LB_SLOT_BYTES, want,
			       sizeof(want), &want_len), GPUNIC_RPC_E_SCHEMA);
	/* a message too small for the request writes nothing */
	CHECK_EQ(lb_rpc_fill(m, sizeof(m), GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_NONE, 20, 1, 1), 0);
	CHECK_EQ(lb_rpc_fill(m, 16, GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_NONE, 32, 1, 1), 0);
}

TEST(clock_choices)
{
	struct lb_rpc_clock c;
	uint64_t a, b;

	CHECK_EQ(lb_rpc_clock_open(&c, "realtime"), 0);
	CHECK(strcmp(c.name, "CLOCK_REALTIME") == 0);
	a = lb_rpc_clock_ns(&c);
	b = lb_rpc_clock_ns(&c);
	CHECK(a > 1000000000ull && b >= a);
	lb_rpc_clock_close(&c);
	/* auto: a PTP device where one reads, else the same CLOCK_REALTIME */
	CHECK_EQ(lb_rpc_clock_open(&c, "auto"), 0);
	CHECK(lb_rpc_clock_ns(&c) > 0);
	CHECK(strstr(c.name, "CLOCK_REALTIME") || strstr(c.name, "PTP hardware clock"));
	lb_rpc_clock_close(&c);
	/* a device that is not there is an error, said, never a quiet fallback */
	CHECK_EQ(lb_rpc_clock_open(&c, "/nonexistent/ptp9"), ENOENT);
	CHECK_EQ(c.fd, -1);
}

/* ---------------------------------------------------------------- sensor and CPU forwarder */

struct rig {
	struct lb_pair p;
	struct lb_rpc_clock clock;
	struct stats_rec rec, ts;
	struct lb_run_result res;
	struct lb_fwd_result fwd;
	struct stats_summary ts_sum;
};

/* A sensor and a CPU forwarder serving the built-in functions (and @lib's) over shm, or with
 * @plain echoing its messages as they come. */
static int rig_open_as(struct rig *r, enum lb_mode mode, uint32_t size, bool plain,
		       uint32_t flags, const char *lib)
{
	struct lb_fwd_cfg fc = {
		.exec = LB_EXEC_CPU,
		.handler = GPUNIC_HANDLER_AUTO,
		.mode = mode,
		.slots = LB_DEFAULT_SLOTS,
		.engine_cpu = -1,
		.exec_cpu = -1,
		.inline_engine = true,
		.rpc = !plain,
		.rpc_flags = flags,
		.rpc_handler_lib = lib,
	};
	struct lb_pair_cfg pc = { .mode = mode, .size = size };

	memset(r, 0, sizeof(*r));
	timing_init();
	CHECK_EQ(stats_rec_init(&r->rec, 2 * RIG_MSGS), 0);
	CHECK_EQ(stats_rec_init(&r->ts, 2 * RIG_MSGS), 0);
	CHECK_EQ(lb_rpc_clock_open(&r->clock, "realtime"), 0);
	return lb_pair_open(&r->p, &fc, &pc);
}

static int rig_open(struct rig *r, enum lb_mode mode, uint32_t size, uint32_t flags,
		    const char *lib)
{
	return rig_open_as(r, mode, size, false, flags, lib);
}

/*
 * @n requests to @fn, every @every-th with @fault, paced 100 us apart: fewer than the ring's
 * slots, so a slow machine delays replies but never overwrites a request. The drain ends when
 * every reply is in, or 10 s after the last one: a loaded 2-core CI box has held the
 * forwarder's thread off its core for over a second (the bench's host-noise lines), and 10 s is
 * the stall the CPU floor takes for a thread that does not run (src/exp/cpufloor.c). A request
 * nobody answers (a drop) costs the whole timeout, once per run.
 */
static void rig_run(struct rig *r, uint32_t fn, enum lb_rpc_fault fault, uint32_t every,
		    uint32_t n, uint32_t epoch)
{
	struct lb_run_cfg cfg = {
		.count = n,
		.interval_ns = 100000,
		.rephase = true,
		.timeout_ns = 10000000000ull,
		.epoch = epoch,
		.rpc_fn = fn,
		.rpc_clock = &r->clock,
		.rpc_fault = fault,
		.rpc_fault_every = every,
		.rpc_ts_rec = &r->ts,
	};

	CHECK_EQ(lb_sensor_run(r->p.s, &cfg, &r->rec, &r->res), 0);
	CHECK_EQ(r->res.sent, n);
	CHECK_EQ(stats_summarize(&r->ts, &r->ts_sum), 0);
}

static void rig_close(struct rig *r)
{
	CHECK_EQ(lb_fwd_stop(r->p.f, &r->fwd), 0);
	lb_pair_close(&r->p);
	lb_rpc_clock_close(&r->clock);
	stats_rec_free(&r->rec);
	stats_rec_free(&r->ts);
}

/* Every response verified, none lost, each counted once by both ends. */
static void check_clean(const struct rig *r, uint32_t n)
{
	CHECK_EQ(r->res.verified, n);
	CHECK_EQ(r->res.rpc_checks[GPUNIC_RPC_CHECK_OK], n);
	CHECK_EQ(r->res.counts.lost, 0);
	CHECK_EQ(r->res.counts.corrupt, 0);
	CHECK_EQ(r->res.counts.dup, 0);
	CHECK_EQ(r->res.stale, 0);
	/* the round trip by the echoed timestamp: one per verified response */
	CHECK_EQ(r->ts_sum.count, n);
	CHECK(r->ts_sum.min_ns > 0);
}

/* Each built-in function, both sensor modes, requests short and long (the whole slot). */
TEST(functions_answered)
{
	static const struct {
		const char *fn;
		uint32_t size;
	} runs[] = {
		{ "echo", 24 }, { "echo", 32 }, { "echo", 300 }, { "echo", LB_SLOT_BYTES },
		{ "add_one", 32 }, { "add_one", 1000 }, { "surface_d3", 32 },
	};
	struct rig r;
	uint32_t fn;

	for (int mode = LB_MODE_WRITE_IMM; mode <= LB_MODE_SEND; mode++) {
		for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
			CHECK_EQ(lb_rpc_fn_parse(runs[i].fn, &fn), 0);
			CHECK_EQ(rig_open(&r, (enum lb_mode)mode, runs[i].size, 0, NULL), 0);
			rig_run(&r, fn, LB_RPC_FAULT_NONE, 0, RIG_MSGS, 1);
			check_clean(&r, RIG_MSGS);
			rig_close(&r);
			CHECK_EQ(r.fwd.echoed, RIG_MSGS);
			CHECK_EQ(r.fwd.rpc.by_reason[GPUNIC_RPC_R_OK], RIG_MSGS);
			CHECK_EQ(r.fwd.rpc.dropped, 0);
			CHECK_EQ(r.fwd.errors, 0);
		}
	}
}

/* Every third request bad in one way: each answered with its status, counted by reason on the
 * forwarder, verified as the right answer by the sensor. */
TEST(faults_answered)
{
	static const uint32_t reason[LB_RPC_FAULTS] = {
		[LB_RPC_FAULT_UNKNOWN] = GPUNIC_RPC_R_UNKNOWN_FUNCTION,
		[LB_RPC_FAULT_MAGIC] = GPUNIC_RPC_R_BAD_MAGIC,
		[LB_RPC_FAULT_TOO_LONG] = GPUNIC_RPC_R_TOO_LONG,
		[LB_RPC_FAULT_TRUNCATED] = GPUNIC_RPC_R_TRUNCATED,
		[LB_RPC_FAULT_SCHEMA] = GPUNIC_RPC_R_SCHEMA,
	};
	struct rig r;

	for (int f = LB_RPC_FAULT_UNKNOWN; f < LB_RPC_FAULTS; f++) {
		CHECK_EQ(rig_open(&r, LB_MODE_WRITE_IMM, 32, 0, NULL), 0);
		rig_run(&r, GPUNIC_RPC_ID_SURFACE_D3, (enum lb_rpc_fault)f, 3, RIG_MSGS, 1);
		check_clean(&r, RIG_MSGS);
		CHECK_EQ(r.res.rpc_faults_sent, RIG_MSGS / 3);
		rig_close(&r);
		CHECK_EQ(r.fwd.echoed, RIG_MSGS);
		CHECK_EQ(r.fwd.rpc.by_reason[reason[f]], RIG_MSGS / 3);
		CHECK_EQ(r.fwd.rpc.by_reason[GPUNIC_RPC_R_OK], RIG_MSGS - RIG_MSGS / 3);
		CHECK_EQ(r.fwd.rpc.dropped, 0);
	}
}

/* CUDA-Q's drops: an unknown function and a bad magic get nothing back (lost to the sensor,
 * counted and dropped at the forwarder); the other faults are still answered. */
TEST(faults_dropped)
{
	static const struct {
		enum lb_rpc_fault fault;
		uint32_t reason;
		bool dropped;
	} runs[] = {
		{ LB_RPC_FAULT_UNKNOWN, GPUNIC_RPC_R_UNKNOWN_FUNCTION, true },
		{ LB_RPC_FAULT_MAGIC, GPUNIC_RPC_R_BAD_MAGIC, true },
		{ LB_RPC_FAULT_TOO_LONG, GPUNIC_RPC_R_TOO_LONG, false },
	};
	const uint32_t n = 200, bad = n / 4;
	struct rig r;

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		CHECK_EQ(rig_open(&r, LB_MODE_SEND, 32, GPUNIC_RPC_CUDAQ_DROPS, NULL), 0);
		rig_run(&r, GPUNIC_RPC_ID_ECHO, runs[i].fault, 4, n, 1);
		CHECK_EQ(r.res.verified, runs[i].dropped ? n - bad : n);
		CHECK_EQ(r.res.counts.lost, runs[i].dropped ? bad : 0);
		CHECK_EQ(r.res.counts.corrupt, 0);
		rig_close(&r);
		CHECK_EQ(r.fwd.rpc.by_reason[runs[i].reason], bad);
		CHECK_EQ(r.fwd.rpc.dropped, runs[i].dropped ? bad : 0);
		CHECK_EQ(r.fwd.echoed, runs[i].dropped ? n - bad : n);
	}
}

/* A warm-up and a measured run on one pair: the second run's ids start again at 0, and nothing
 * of the first is taken for it. */
TEST(runs_back_to_back)
{
	struct rig r;

	CHECK_EQ(rig_open(&r, LB_MODE_WRITE_IMM, 32, 0, NULL), 0);
	rig_run(&r, GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_NONE, 0, 100, 1);
	check_clean(&r, 100);
	rig_run(&r, GPUNIC_RPC_ID_SURFACE_D3, LB_RPC_FAULT_NONE, 0, RIG_MSGS, 2);
	check_clean(&r, RIG_MSGS);
	rig_close(&r);
	CHECK_EQ(r.fwd.rpc.by_reason[GPUNIC_RPC_R_OK], 100 + RIG_MSGS);
}

/* Requests to a forwarder that only echoes: every response has the request's magic back, each
 * counted as a bad response by that reason, none verified, nothing crashes. */
TEST(plain_forwarder_fails_every_check)
{
	struct rig r;

	CHECK_EQ(rig_open_as(&r, LB_MODE_WRITE_IMM, 32, true, 0, NULL), 0);
	rig_run(&r, GPUNIC_RPC_ID_ECHO, LB_RPC_FAULT_NONE, 0, RIG_MSGS, 1);
	CHECK_EQ(r.res.verified, 0);
	CHECK_EQ(r.res.rpc_checks[GPUNIC_RPC_CHECK_MAGIC], RIG_MSGS);
	CHECK_EQ(r.res.counts.corrupt, RIG_MSGS);
	CHECK_EQ(r.ts_sum.count, 0);
	rig_close(&r);
}

/* Handlers from a shared library join the built-in ones on the CPU executor. */
TEST(handler_lib_loaded)
{
	const struct gpunic_rpc_table *t;
	struct rig r;

	CHECK_EQ(rig_open(&r, LB_MODE_WRITE_IMM, 32, 0, RPC_PLUGIN_GOOD), 0);
	t = lb_fwd_rpc_table(r.p.f);
	CHECK(t != NULL);
	CHECK(gpunic_rpc_find(t, "echo") != NULL);
	CHECK(t->count > 3);
	rig_run(&r, GPUNIC_RPC_ID_ADD_ONE, LB_RPC_FAULT_NONE, 0, 100, 1);
	check_clean(&r, 100);
	rig_close(&r);
}

/* What cannot be served is refused when the forwarder opens, with a reason. */
TEST(refused)
{
	struct rig r;

	/* a library whose function clashes with a built-in one, and none at all */
	CHECK_EQ(rig_open(&r, LB_MODE_WRITE_IMM, 32, 0, RPC_PLUGIN_CLASH), EEXIST);
	stats_rec_free(&r.rec);
	stats_rec_free(&r.ts);
	CHECK_EQ(rig_open(&r, LB_MODE_WRITE_IMM, 32, 0, "/nonexistent/libnone.so"), ENOENT);
	stats_rec_free(&r.rec);
	stats_rec_free(&r.ts);
	{
		struct lb_fwd_cfg fc = { .exec = LB_EXEC_NAIVE, .slots = 64, .rpc = true };
		struct lb_fwd_cfg fg = { .exec = LB_EXEC_GPU, .slots = 64, .rpc = true,
					 .rpc_handler_lib = RPC_PLUGIN_GOOD };
		struct lb_pair p;
		struct lb_pair_cfg pc = { .size = 32 };

		/* naive dispatches nothing; a GPU cannot call CPU handlers: GPU or not */
		CHECK_EQ(lb_pair_open(&p, &fc, &pc), EINVAL);
		CHECK_EQ(lb_pair_open(&p, &fg, &pc), EINVAL);
	}
}

/* The sensor refuses requests its messages cannot hold, or without a clock. */
TEST(sensor_refuses)
{
	struct lb_run_cfg cfg = { .count = 10, .closed_loop = true, .timeout_ns = 1000000 };
	struct rig r;

	CHECK_EQ(rig_open(&r, LB_MODE_WRITE_IMM, 24, 0, NULL), 0);
	cfg.rpc_fn = GPUNIC_RPC_ID_SURFACE_D3;
	cfg.rpc_clock = &r.clock;
	CHECK_EQ(lb_sensor_run(r.p.s, &cfg, &r.rec, &r.res), EINVAL);
	cfg.rpc_fn = GPUNIC_RPC_ID_ECHO;
	cfg.rpc_clock = NULL;
	CHECK_EQ(lb_sensor_run(r.p.s, &cfg, &r.rec, &r.res), EINVAL);
	rig_close(&r);
}
