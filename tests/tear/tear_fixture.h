/* SPDX-License-Identifier: MIT */
/*
 * Host side of the torn-line suite: two softnics on an in-process shm cable, each with its
 * engine on a thread. Side "g" is the NIC under test, driven by the executor (struct
 * tear_backend: a GPU kernel, or host threads for the CPU twin); side "c" is a plain CPU peer
 * that this thread drives with gpunic_dev.h and whose host memory the checks read (tests/rig.h,
 * as tests/gpu uses it), with what that suite does not ask for: a g NIC that tears its CQEs on
 * purpose (GPUNIC_NIC_TEST_TEAR_CQES), CQs with the whole-line check on either executor, and
 * GPU_BF queue pairs.
 *
 * Cases (tear_tests.h names them once for both executors):
 *  - tear_loop_case: the loopback forwarder against a NIC that writes every CQE as four chunks
 *    in a random order with random pauses; every echo checked byte by byte.
 *  - tear_bf_case: the BlueFlame writer (tear_cases.h) storing sealed WQEs chunk by chunk while
 *    the softnic polls; every message checked at the peer, exactly once, in order.
 *
 * Waits: every wait here has a deadline of TEAR_WAIT_NS without progress (a loaded 2-core
 * machine answers within milliseconds; 15 s means something is stuck, not slow), and a GPU case
 * finishes well inside its 60 s CTest limit even when it fails that way.
 */
#ifndef TEAR_FIXTURE_H
#define TEAR_FIXTURE_H

#include <sys/mman.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/loop_dev.h>
#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include "harness.h"
#include "rig.h"
#include "tear_backend.h"
#include "tear_cases.h"

/* Registered region of each side, and a guarded margin around it (outside the MR). */
#define TEAR_BUF_BYTES (512u << 10)
#define TEAR_OUTER 4096u
/* Longest the host waits without any progress (see the header comment). */
#define TEAR_WAIT_NS (15ull * 1000000000ull)
/* The writer's deadline for any one wait: below the host's, so the writer says why first. */
#define TEAR_WRITER_BUDGET_NS (12ull * 1000000000ull)

struct tear_opts {
	enum gpunic_qp_type type;
	enum gpunic_handler_mode mode; /* g's QP */
	bool scatter;                  /* g's QP scatters receives of <= 32 bytes into the CQE */
	bool tear_cqes;                /* g's NIC writes CQEs torn on purpose */
	/* g's NIC is a GPU executor's whatever the backend: the twin then opens it on the memory
	 * layer's test-only fake GPU (GPUNIC_MEM_FAKE_GPU=1), so its queues are placed, its CQs
	 * checked and its BlueFlame page sealed as for a kernel across PCIe */
	bool gpu_queues;
	bool manual_g;                 /* g's engine is not started: the case polls it */
	uint32_t max_recv_wr;          /* g's QP; 0: 64 */
};

struct tear_fix {
	const struct tear_backend *be;
	struct tear_opts o;
	struct rig_attr ra;            /* the rig as this case built it */
	gpunic_mem_t *mem;
	struct rig_side g;
	struct rig_side c;
	struct gpunic_mem_buf *ctlb;   /* struct tear_ctl: mapped host memory for a GPU */
	struct tear_ctl *ctl;          /* host view */
	struct tear_ctl *xctl;         /* executor's view */
	char why[256];
};

/* The @nth CPU this process may run on, or -1 when it has fewer than @nth + 1. */
static inline int tear_allowed_cpu(int nth)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && nth-- == 0)
			return cpu;
	return -1;
}

/*
 * Is @buf (@room bytes) exactly message @seed of @len bytes followed by guard bytes? Return:
 * @room when it is, else the first byte that differs. Every byte counts: one wrong byte
 * anywhere fails the case that asks.
 */
static inline uint32_t tear_msg_mismatch(const uint8_t *buf, uint32_t room, uint32_t len,
					 uint32_t seed)
{
	for (uint32_t b = 0; b < room; b++)
		if (buf[b] != (b < len ? tear_pat(seed, b) : (uint8_t)TEAR_GUARD))
			return b;
	return room;
}

/* The checker must see a single wrong byte, or a byte written past the end. */
static inline void tear_checker_selftest(void)
{
	uint8_t b[64];

	for (uint32_t k = 0; k < 64; k++)
		b[k] = k < 20 ? tear_pat(77, k) : (uint8_t)TEAR_GUARD;
	CHECK_EQ(tear_msg_mismatch(b, 64, 20, 77), 64);
	b[13] ^= 0x10;
	CHECK_EQ(tear_msg_mismatch(b, 64, 20, 77), 13);
	b[13] ^= 0x10;
	b[20] = 0;
	CHECK_EQ(tear_msg_mismatch(b, 64, 20, 77), 20);
	CHECK_EQ(tear_msg_mismatch(b, 64, 20, 78) < 20, 1);
}

/* ---------------------------------------------------------------- diagnostics */

static inline void tear_dump(const struct tear_fix *fx)
{
	rig_dump_side("g (under test)", &fx->g);
	rig_dump_side("c (cpu peer)", &fx->c);
}

#define TEAR_FAIL(fx, ...)                                     \
	do {                                                   \
		tear_dump(fx);                                 \
		harness_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* ---------------------------------------------------------------- setup */

static inline void tear_side_qp(struct tear_fix *fx, struct rig_side *p, bool under_test)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = fx->o.type,
		.max_send_wr = 64,
		.max_recv_wr = under_test && fx->o.max_recv_wr ? fx->o.max_recv_wr : 64,
		.max_send_sge = 4,
		.max_recv_sge = 4,
		.max_inline_data = 64,
		.cqe_scatter = under_test && fx->o.scatter,
		/* the peer rings its doorbell: it is not under test, and its WQEs go whole */
		.handler_mode = under_test ? fx->o.mode : GPUNIC_HANDLER_GPU_DB,
	};

	rig_qp_create(p, &ia);
}

static inline void tear_setup(struct tear_fix *fx, const struct tear_backend *be,
			      const struct tear_opts *o)
{
	memset(fx, 0, sizeof(*fx));
	fx->be = be;
	fx->o = *o;
	if (be->probe(fx->why, sizeof(fx->why)))
		SKIP("%s executor: %s", be->name, fx->why);
	fx->ra = (struct rig_attr){
		.tag = "teartest",
		.subnet = 1,
		.gpu = be->gpu,
		.gpu_nic = be->gpu || o->gpu_queues,
		.g_nic_flags = o->tear_cqes ? GPUNIC_NIC_TEST_TEAR_CQES : 0,
		/* The whole-line check on both CQs whatever the executor (a GPU's CQs get it
		 * anyway): the CPU twin then reads CQEs the way the GPU does. */
		.g_cq = { .cqe = 256, .flags = GPUNIC_CQ_LINE_CHECK },
		.region = TEAR_BUF_BYTES,
		.outer = TEAR_OUTER,
		.guard = TEAR_GUARD,
		.zero_region = true,
		.access = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
			  GPUNIC_ACCESS_REMOTE_READ,
		.type = o->type,
		.mtu = GPUNIC_MTU_1024,
		.g_psn = 0x2000,
		.c_psn = 0xFFFF80,	/* the peer's PSNs wrap early */
	};
	fx->mem = rig_mem_open(be->gpu, o->gpu_queues);
	rig_open(fx->mem, &fx->ra, &fx->g, &fx->c);
	tear_side_qp(fx, &fx->g, true);
	tear_side_qp(fx, &fx->c, false);
	rig_connect(&fx->ra, &fx->g, &fx->c);
	CHECK_EQ(gpunic_qp_export(fx->g.qp, &fx->g.dq), 0);
	CHECK_EQ(gpunic_qp_export(fx->c.qp, &fx->c.dq), 0);
	CHECK_EQ(gpunic_dev_qp_check(&fx->g.dq), 0);
	CHECK_EQ(gpunic_dev_qp_check(&fx->c.dq), 0);
	CHECK(fx->g.dq.rcq.flags & GPUNIC_DEV_CQ_LINE_CHECK);
	CHECK(fx->g.dq.scq.flags & GPUNIC_DEV_CQ_LINE_CHECK);
	fx->ctlb = gpunic_mem_alloc(fx->mem, sizeof(struct tear_ctl), 64,
				    be->gpu ? GPUNIC_MEM_CPU_GPU : GPUNIC_MEM_HOST);
	CHECK(fx->ctlb && fx->ctlb->cpu);
	fx->ctl = fx->ctlb->cpu;
	fx->xctl = (struct tear_ctl *)(fx->ctlb->gpu ? fx->ctlb->gpu : fx->ctlb->cpu);
	memset(fx->ctl, 0, sizeof(*fx->ctl));
	/* The CPU twin's forwarder runs on the second CPU (test_tear_twin.c) and g's engine on
	 * the first: the reader then runs while CQEs are half written, not only between them
	 * (without it a 2-core scheduler may put both on one core). Nothing depends on it. */
	if (!o->manual_g)
		CHECK_EQ(gpunic_nic_start(fx->g.nic, be->gpu ? -1 : tear_allowed_cpu(0)), 0);
	CHECK_EQ(gpunic_nic_start(fx->c.nic, -1), 0);
}

static inline void tear_teardown(struct tear_fix *fx)
{
	rig_check_guards(&fx->ra, &fx->g, &fx->c);
	rig_close_nics(&fx->g, &fx->c);
	CHECK_EQ(gpunic_mem_free(fx->mem, fx->ctlb), 0);
	CHECK_EQ(gpunic_mem_free(fx->mem, fx->g.mb), 0);
	rig_close_mem(fx->mem, &fx->c);
}

static inline void tear_read_state(struct tear_fix *fx, struct gpunic_dev_qp_state *st)
{
	if (fx->be->read_state(fx->g.dq.state, st, fx->why, sizeof(fx->why)))
		TEAR_FAIL(fx, "read the data-path state: %s", fx->why);
}

/* ---------------------------------------------------------------- the CPU peer */

/* A receive at @off of @len bytes in c's buffer. */
static inline void tear_peer_post_recv(struct tear_fix *fx, uint32_t off, uint32_t len)
{
	struct gpunic_dev_sge sge = { .addr = (uint64_t)(uintptr_t)(fx->c.buf + off),
				      .length = len,
				      .lkey = fx->c.mr->lkey };

	CHECK(gpunic_dev_post_recv(&fx->c.dq, &sge, 1) >= 0);
}

/* Take c's send completions; every one must be a success. */
static inline void tear_peer_reap(struct tear_fix *fx)
{
	struct gpunic_dev_cqe cqe;

	while (gpunic_dev_poll_scq(&fx->c.dq, &cqe))
		if (cqe.opcode != MLX5_CQE_REQ)
			TEAR_FAIL(fx, "peer send CQE opcode 0x%x syndrome 0x%x", cqe.opcode,
				  cqe.syndrome);
}

/* One signalled request from c's buffer at @off; a full send queue is drained first (its
 * completions come within TEAR_WAIT_NS unless something is stuck). */
static inline void tear_peer_post(struct tear_fix *fx, uint8_t op, uint32_t off, uint32_t len,
				  uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	uint64_t end = rig_ns() + TEAR_WAIT_NS;
	int64_t r;

	for (;;) {
		r = gpunic_dev_post_send_sge(&fx->c.dq, op, GPUNIC_DEV_SEND_SIGNALED,
					     (uint64_t)(uintptr_t)(fx->c.buf + off), len,
					     fx->c.mr->lkey, raddr, rkey, imm);
		if (r != -ENOMEM)
			break;
		tear_peer_reap(fx);
		if (rig_ns() > end)
			TEAR_FAIL(fx, "peer send queue full and no completion");
		sched_yield();
	}
	CHECK(r >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx->c.dq), 0);
}

/* ---------------------------------------------------------------- case 1: the forwarder */

#define TEAR_LOOP_SLOTS 64u
#define TEAR_LOOP_WINDOW 16u        /* messages in flight, well below the ring's slots */
#define TEAR_LOOP_BYTES 256u        /* c: bytes per source buffer and per echo buffer */
#define TEAR_LOOP_ECHO_OFF (TEAR_LOOP_SLOTS * TEAR_LOOP_BYTES)
#define TEAR_LOOP_SEED 9000u

/*
 * Length of message @k: mostly what the fast path takes (SEND: 1..32 bytes, scattered into the
 * CQE; WRITE_WITH_IMM: 1..44 bytes, read with the CQE), and now and then what goes to the
 * thread path: empty, a two-block inline echo (60 bytes), an echo by SGE (100 or 200 bytes).
 */
static inline uint32_t tear_loop_len(bool send_mode, uint32_t k)
{
	if (k % 64 == 31)
		return 0;
	if (k % 16 == 7)
		return 60;
	if (k % 16 == 15)
		return send_mode ? 100 : 200;
	return send_mode ? 1 + (k * 5) % 32 : 1 + (k * 7) % 44;
}

/*
 * Case 1: the persistent forwarder on g's UC QP (handler AUTO, so GPU_BF) while g's NIC tears
 * every CQE on purpose; the peer plays the sensor: @nmsg messages as SENDs scattered into the
 * CQE (@send_mode) or as WRITE_WITH_IMM into ring slot k % 64 with immediate = slot. Echo k
 * must be message k: SEND, its length, its bytes, and nothing written past it.
 */
static inline void tear_loop_case(const struct tear_backend *be, bool send_mode, uint32_t nmsg)
{
	struct tear_opts o = { .type = GPUNIC_QPT_UC, .mode = GPUNIC_HANDLER_AUTO,
			       .scatter = send_mode, .tear_cqes = true,
			       .max_recv_wr = TEAR_LOOP_SLOTS };
	struct gpunic_loop_ctx ctx, fin;
	struct gpunic_dev_qp_state st;
	struct gpunic_nic_counters nc;
	struct gpunic_qp_counters qc;
	uint32_t sent = 0, echoed = 0, k, len, bad;
	struct gpunic_dev_cqe cqe;
	uint64_t t0, idle_since;
	void *loop = NULL;
	struct tear_fix fx;
	uint8_t *echo;

	tear_checker_selftest();
	tear_setup(&fx, be, &o);
	memset(&ctx, 0, sizeof(ctx));
	memset(&fin, 0, sizeof(fin));
	ctx.qp = &fx.g.dq;
	ctx.ring = fx.g.xbuf;
	ctx.ring_iova = (uint64_t)(uintptr_t)fx.g.buf;
	ctx.ring_lkey = fx.g.mr->lkey;
	ctx.slot_bytes = 4096;
	ctx.slots = TEAR_LOOP_SLOTS;
	ctx.work = GPUNIC_LOOP_WORK_NONE;
	ctx.signal_every = 16;
	ctx.recv_with_buffers = send_mode;
	CHECK((size_t)ctx.slots * ctx.slot_bytes <= TEAR_BUF_BYTES);
	CHECK(TEAR_LOOP_ECHO_OFF + TEAR_LOOP_WINDOW * TEAR_LOOP_BYTES <= TEAR_BUF_BYTES);
	if (be->loop_start(&ctx, &loop, fx.why, sizeof(fx.why)))
		TEAR_FAIL(&fx, "%s forwarder start: %s", be->name, fx.why);

	for (k = 0; k < TEAR_LOOP_WINDOW; k++) {
		memset(fx.c.buf + TEAR_LOOP_ECHO_OFF + k * TEAR_LOOP_BYTES, TEAR_GUARD,
		       TEAR_LOOP_BYTES);
		tear_peer_post_recv(&fx, TEAR_LOOP_ECHO_OFF + k * TEAR_LOOP_BYTES, TEAR_LOOP_BYTES);
	}
	t0 = rig_ns();
	idle_since = t0;
	while (echoed < nmsg) {
		while (sent < nmsg && sent - echoed < TEAR_LOOP_WINDOW) {
			uint32_t src = (sent % TEAR_LOOP_SLOTS) * TEAR_LOOP_BYTES;
			uint32_t slot = sent % TEAR_LOOP_SLOTS;

			len = tear_loop_len(send_mode, sent);
			for (k = 0; k < len; k++)
				fx.c.buf[src + k] = tear_pat(TEAR_LOOP_SEED + sent, k);
			if (send_mode)
				tear_peer_post(&fx, MLX5_OPCODE_SEND, src, len, 0, 0, 0);
			else
				tear_peer_post(&fx, MLX5_OPCODE_RDMA_WRITE_IMM, src, len,
					       (uint64_t)(uintptr_t)fx.g.buf +
						       (uint64_t)slot * ctx.slot_bytes,
					       fx.g.mr->rkey, slot);
			sent++;
		}
		tear_peer_reap(&fx);
		if (!gpunic_dev_poll_rcq(&fx.c.dq, &cqe)) {
			if (rig_ns() - idle_since > TEAR_WAIT_NS) {
				be->loop_stop(loop, &fin, fx.why, sizeof(fx.why));
				TEAR_FAIL(&fx,
					  "echo %u of %u did not come (sent %u); forwarder "
					  "echoed %" PRIu64 ", errors %" PRIu64 ", torn lines %" PRIu64,
					  echoed, nmsg, sent, fin.echoed, fin.errors + fin.send_errors,
					  fin.torn_lines);
			}
			sched_yield();
			continue;
		}
		idle_since = rig_ns();
		len = tear_loop_len(send_mode, echoed);
		k = echoed % TEAR_LOOP_WINDOW;
		echo = fx.c.buf + TEAR_LOOP_ECHO_OFF + k * TEAR_LOOP_BYTES;
		if (cqe.opcode != MLX5_CQE_RESP_SEND || cqe.byte_cnt != len) {
			be->loop_stop(loop, &fin, fx.why, sizeof(fx.why));
			TEAR_FAIL(&fx, "echo %u: opcode 0x%x syndrome 0x%x bytes %u, want SEND of %u",
				  echoed, cqe.opcode, cqe.syndrome, cqe.byte_cnt, len);
		}
		bad = tear_msg_mismatch(echo, TEAR_LOOP_BYTES, len, TEAR_LOOP_SEED + echoed);
		if (bad != TEAR_LOOP_BYTES) {
			be->loop_stop(loop, &fin, fx.why, sizeof(fx.why));
			TEAR_FAIL(&fx, "echo %u (%u bytes): byte %u is 0x%02x, want 0x%02x", echoed,
				  len, bad, echo[bad],
				  bad < len ? tear_pat(TEAR_LOOP_SEED + echoed, bad) :
					      (uint8_t)TEAR_GUARD);
		}
		memset(echo, TEAR_GUARD, TEAR_LOOP_BYTES);
		tear_peer_post_recv(&fx, TEAR_LOOP_ECHO_OFF + k * TEAR_LOOP_BYTES, TEAR_LOOP_BYTES);
		echoed++;
	}
	if (be->loop_stop(loop, &fin, fx.why, sizeof(fx.why)))
		TEAR_FAIL(&fx, "%s forwarder stop: %s", be->name, fx.why);
	tear_read_state(&fx, &st);
	CHECK_EQ(gpunic_nic_query_counters(fx.g.nic, &nc), 0);
	CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &qc), 0);
	if (fin.echoed != nmsg || fin.errors || fin.send_errors)
		TEAR_FAIL(&fx, "forwarder: echoed %" PRIu64 " of %u, errors %" PRIu64
			  " (last syndrome 0x%x)", fin.echoed, nmsg, fin.errors + fin.send_errors,
			  fin.last_syndrome);
	/* Every receive CQE of g went out torn on purpose (and some send CQEs). */
	if (nc.cqes_torn_on_purpose < nmsg)
		TEAR_FAIL(&fx, "only %" PRIu64 " CQEs torn on purpose for %u messages",
			  nc.cqes_torn_on_purpose, nmsg);
	if (qc.tx_messages != nmsg)
		TEAR_FAIL(&fx, "g sent %" PRIu64 " messages for %u echoes", qc.tx_messages, nmsg);
	/*
	 * Retries are reported, not required: how often a reader meets a line half written
	 * depends on scheduling (a loaded 2-core machine may run the forwarder only while the
	 * NIC's thread is off the CPU). tear_ring_* force sightings deterministically instead.
	 */
	printf("%s forwarder %s, CQEs torn on purpose: %u echoes, each checked byte by byte, in "
	       "%.3f ms\n"
	       "  CQEs written torn %" PRIu64 "; re-read: forwarder torn_lines %" PRIu64
	       " (fast path), rcq_torn %u, scq_torn %u (thread path)\n"
	       "  fast path %" PRIu64 " msgs in %" PRIu64 " batches, thread path %" PRIu64
	       ", pair misses %" PRIu64 ", spec hits %" PRIu64 "; g's BlueFlame: %" PRIu64
	       " WQEs, bf_torn %" PRIu64 ", wqes_torn %" PRIu64 "\n",
	       be->name, send_mode ? "SEND scatter" : "WRITE_WITH_IMM", nmsg,
	       (double)(rig_ns() - t0) / 1e6, nc.cqes_torn_on_purpose, fin.torn_lines,
	       st.rcq_torn, st.scq_torn, fin.fast_msgs, fin.fast_batches, fin.slow_msgs,
	       fin.pair_misses, fin.spec_hits, qc.bf_wqes, qc.bf_torn, qc.wqes_torn);
	tear_teardown(&fx);
}

/* ---------------------------------------------------------------- case 2: BlueFlame lines */

#define TEAR_BF_RECV 64u            /* c's receive WQEs, one 64-byte buffer each */
#define TEAR_BF_RECV_OFF (64u << 10)
#define TEAR_BF_WINDOW 16u
#define TEAR_BF_FORCE_EVERY 8u

/*
 * The host's half of a held line (tear_cases.h, "forced sightings"): an odd request (arm)
 * samples the QP's bf_torn and is acked at once; an even one (torn) is acked once bf_torn
 * moved past that sample: the softnic met the half-written line and will read it again.
 */
struct tear_hold_mon {
	uint32_t acked;    /* last request acked */
	uint64_t base;     /* bf_torn at the last arm */
};

static inline bool tear_hold_service(struct tear_fix *fx, struct tear_hold_mon *m)
{
	uint32_t req = __atomic_load_n(&fx->ctl->hold_req, __ATOMIC_ACQUIRE);
	struct gpunic_qp_counters qc;

	if (req == m->acked)
		return false;
	CHECK_EQ(gpunic_qp_query_counters(fx->g.qp, &qc), 0);
	if (req & 1)
		m->base = qc.bf_torn;
	else if (qc.bf_torn <= m->base)
		return false;
	__atomic_store_n(&fx->ctl->hold_ack, req, __ATOMIC_RELEASE);
	m->acked = req;
	return true;
}

static __attribute__((noinline, cold)) void tear_bf_dump(const struct tear_fix *fx)
{
	const struct tear_ctl *c = fx->ctl;

	fprintf(stderr,
		"writer: done %u written %u errors %u first %s (detail 0x%" PRIx64 ") holds %u "
		"(req %u ack %u) scqes %u completed %u\n",
		__atomic_load_n(&c->done, __ATOMIC_ACQUIRE), c->written, c->errors,
		tear_err_name(c->first_err), c->first_detail, c->holds, c->hold_req, c->hold_ack,
		c->scqes, c->completed);
}

/* Stop the writer, wait for it, and fail. */
#define TEAR_BF_FAIL(fx, ...)                                                          \
	do {                                                                           \
		__atomic_store_n(&(fx)->ctl->stop, 1, __ATOMIC_RELEASE);                \
		if ((fx)->be->bf_wait((fx)->ctl, TEAR_WAIT_NS, (fx)->why,               \
				      sizeof((fx)->why)) == EDEADLK) {                   \
			tear_dump(fx);                                                 \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, (fx)->why); \
			_exit(1);                                                      \
		}                                                                      \
		tear_bf_dump(fx);                                                      \
		TEAR_FAIL(fx, __VA_ARGS__);                                            \
	} while (0)

/*
 * Case 2: the BlueFlame writer (tear_cases.h) posts @nmsg sealed SEND_WITH_IMM WQEs on g's
 * GPU_BF queue pair of @type, storing each line chunk by chunk in a random order with pauses
 * while g's engine polls the page (@flags: enum tear_bf_flags; @tear_cqes: g's CQEs, which
 * the writer polls, torn too; @gpu_queues: see struct tear_opts). At the peer message k must be
 * the k-th receive, exactly once: immediate k, tear_bf_len(k) bytes of tear_pat(k, .), nothing
 * past them. Afterwards: no error anywhere, g sent exactly @nmsg messages, and (unless the ctrl
 * chunk goes last, when no line is ever half written with its new index) bf_torn >= the held
 * lines > 0.
 */
static inline void tear_bf_case(const struct tear_backend *be, enum gpunic_qp_type type,
				uint32_t flags, bool tear_cqes, bool gpu_queues, uint32_t nmsg)
{
	struct tear_opts o = { .type = type, .mode = GPUNIC_HANDLER_GPU_BF,
			       .tear_cqes = tear_cqes, .gpu_queues = gpu_queues };
	bool forced = !(flags & TEAR_BF_CTRL_LAST);
	struct gpunic_qp_counters gq, cq;
	struct gpunic_nic_counters gn, cn;
	struct tear_hold_mon mon = { 0 };
	struct gpunic_dev_qp_state st;
	struct gpunic_dev_cqe cqe;
	uint64_t t0, last, end, dup_ok;
	uint32_t got = 0, len, bad, off;
	struct tear_bf_args a;
	struct tear_fix fx;
	int rc;

	tear_checker_selftest();
	tear_setup(&fx, be, &o);
	CHECK_EQ(fx.g.dq.handler_mode, GPUNIC_HANDLER_GPU_BF);
	CHECK_EQ(fx.g.dq.bf_lines, GPUNIC_DEV_BF_LINES);
	CHECK(fx.g.dq.max_inline >= TEAR_BF_MAX_LEN);
	CHECK(TEAR_BF_WINDOW < fx.g.dq.bf_lines && TEAR_BF_WINDOW <= fx.g.dq.sq_wqebb_cnt);
	CHECK(fx.c.dq.rq_wqe_cnt >= TEAR_BF_RECV);
	for (uint32_t k = 0; k < TEAR_BF_RECV; k++) {
		memset(fx.c.buf + TEAR_BF_RECV_OFF + k * 64, TEAR_GUARD, 64);
		tear_peer_post_recv(&fx, TEAR_BF_RECV_OFF + k * 64, 64);
	}

	memset(&a, 0, sizeof(a));
	a.qp = fx.g.dq;
	a.ctl = fx.xctl;
	a.nmsg = nmsg;
	a.window = TEAR_BF_WINDOW;
	a.signal_every = 4;
	a.force_every = TEAR_BF_FORCE_EVERY;
	a.flags = flags;
	a.pause_max_ns = 2000;
	a.seed = 0x7ea5eedull + nmsg + flags;
	a.budget_ns = TEAR_WRITER_BUDGET_NS;
	__atomic_store_n(&fx.ctl->credit, TEAR_BF_RECV, __ATOMIC_RELEASE);
	if (be->bf_start(&a, fx.why, sizeof(fx.why)))
		TEAR_FAIL(&fx, "%s writer start: %s", be->name, fx.why);

	t0 = rig_ns();
	last = t0;
	while (got < nmsg) {
		bool moved = tear_hold_service(&fx, &mon);

		if (gpunic_dev_poll_rcq(&fx.c.dq, &cqe)) {
			len = tear_bf_len(got, TEAR_BF_FORCE_EVERY);
			off = TEAR_BF_RECV_OFF + (got % TEAR_BF_RECV) * 64;
			if (cqe.opcode != MLX5_CQE_RESP_SEND_IMM || cqe.imm != got ||
			    cqe.byte_cnt != len)
				TEAR_BF_FAIL(&fx,
					     "receive %u: opcode 0x%x syndrome 0x%x imm %u bytes %u, "
					     "want SEND_IMM imm %u bytes %u",
					     got, cqe.opcode, cqe.syndrome, cqe.imm, cqe.byte_cnt, got,
					     len);
			bad = tear_msg_mismatch(fx.c.buf + off, 64, len, got);
			if (bad != 64)
				TEAR_BF_FAIL(&fx, "message %u (%u bytes): byte %u is 0x%02x", got,
					     len, bad, fx.c.buf[off + bad]);
			memset(fx.c.buf + off, TEAR_GUARD, 64);
			tear_peer_post_recv(&fx, off, 64);
			got++;
			__atomic_store_n(&fx.ctl->credit, got + TEAR_BF_RECV, __ATOMIC_RELEASE);
			moved = true;
		}
		if (moved) {
			last = rig_ns();
		} else if (__atomic_load_n(&fx.ctl->done, __ATOMIC_ACQUIRE) && fx.ctl->errors) {
			/* the writer gave up: say why now rather than after the deadline */
			TEAR_BF_FAIL(&fx, "writer: %s (detail 0x%" PRIx64 ") at message %u of %u",
				     tear_err_name(fx.ctl->first_err), fx.ctl->first_detail, got,
				     nmsg);
		} else if (rig_ns() - last > TEAR_WAIT_NS) {
			TEAR_BF_FAIL(&fx, "no progress for %llu s: %u of %u messages received",
				     TEAR_WAIT_NS / 1000000000ull, got, nmsg);
		} else {
			sched_yield();
		}
	}
	rc = be->bf_wait(fx.ctl, TEAR_WAIT_NS, fx.why, sizeof(fx.why));
	if (rc == EDEADLK) {
		tear_dump(&fx);
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, fx.why);
		_exit(1);
	}
	if (rc) {
		tear_bf_dump(&fx);
		TEAR_FAIL(&fx, "%s writer: %s", be->name, fx.why);
	}
	if (fx.ctl->errors) {
		tear_bf_dump(&fx);
		TEAR_FAIL(&fx, "writer: %u error(s), first: %s (detail 0x%" PRIx64 ")",
			  fx.ctl->errors, tear_err_name(fx.ctl->first_err), fx.ctl->first_detail);
	}

	/* Exactly once: every packet g sent has arrived (the cable loses nothing; bounded wait),
	 * and then no receive beyond the nmsg-th is there. */
	end = rig_ns() + TEAR_WAIT_NS;
	for (;;) {
		CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &gq), 0);
		CHECK_EQ(gpunic_qp_query_counters(fx.c.qp, &cq), 0);
		if (cq.rx_packets >= gq.tx_packets)
			break;
		if (rig_ns() > end)
			TEAR_FAIL(&fx, "g sent %" PRIu64 " packets, c received %" PRIu64,
				  gq.tx_packets, cq.rx_packets);
		sched_yield();
	}
	if (gpunic_dev_poll_rcq(&fx.c.dq, &cqe))
		TEAR_FAIL(&fx, "a receive beyond the %u messages: opcode 0x%x imm %u bytes %u",
			  nmsg, cqe.opcode, cqe.imm, cqe.byte_cnt);
	CHECK_EQ(gpunic_nic_query_counters(fx.g.nic, &gn), 0);
	CHECK_EQ(gpunic_nic_query_counters(fx.c.nic, &cn), 0);
	/* RC: a peer engine starved past the ACK timeout (a loaded machine, a sanitizer build)
	 * makes g go back and send again; c drops each duplicate as a PSN drop. Those, and only
	 * as many as g sent packets beyond one per message (every message here is one packet),
	 * are not a finding; every message must still arrive exactly once (below). */
	dup_ok = gq.retransmits ? gq.tx_packets - gq.tx_messages : 0;
	for (int d = 0; d < GPUNIC_DROP_MAX; d++)
		if (gn.drops[d] ||
		    (cn.drops[d] && !(d == GPUNIC_DROP_PSN && cn.drops[d] <= dup_ok)))
			TEAR_FAIL(&fx, "drops: %s g %" PRIu64 " c %" PRIu64 " (g retransmitted %"
				  PRIu64 " packets)", gpunic_drop_reason_name(d), gn.drops[d],
				  cn.drops[d], dup_ok);
	if (gq.tx_messages != nmsg || cq.rx_messages != nmsg)
		TEAR_FAIL(&fx, "g sent %" PRIu64 " messages, c received %" PRIu64 ", want %u",
			  gq.tx_messages, cq.rx_messages, nmsg);
	CHECK_EQ(fx.g.qp->state, GPUNIC_QPS_RTS);
	CHECK_EQ(fx.ctl->completed, nmsg);
	/* Deterministic sightings: each held line was acked only after bf_torn moved. */
	if (forced && (!fx.ctl->holds || gq.bf_torn < fx.ctl->holds))
		TEAR_FAIL(&fx, "bf_torn %" PRIu64 " for %u held lines", gq.bf_torn,
			  fx.ctl->holds);
	tear_read_state(&fx, &st);
	printf("%s BlueFlame %s on a %s NIC, %s%s: %u messages, each checked at the peer, "
	       "exactly once, in %.3f ms\n"
	       "  taken from the line %" PRIu64 " (the rest from the ring); bf_torn %" PRIu64
	       " (torn lines re-read; %u held until seen, %u not held), wqes_torn %" PRIu64
	       " (ring copies re-read)\n"
	       "  send CQEs %u, scq_torn %u, g's CQEs torn on purpose %" PRIu64 "\n",
	       be->name, type == GPUNIC_QPT_RC ? "RC" : "UC",
	       be->gpu ? "GPU-executor" : gpu_queues ? "fake-GPU-executor" : "CPU-executor",
	       flags & TEAR_BF_CTRL_LAST ? "ctrl chunk last, lazy record" :
	       flags & TEAR_BF_RECORD_FIRST ? "random order, record first" :
					      "random order, lazy record",
	       tear_cqes ? ", CQEs torn on purpose" : "", nmsg, (double)(rig_ns() - t0) / 1e6,
	       gq.bf_wqes, gq.bf_torn, fx.ctl->holds, fx.ctl->skipped_holds, gq.wqes_torn,
	       fx.ctl->scqes, st.scq_torn, gn.cqes_torn_on_purpose);
	tear_teardown(&fx);
}

#endif /* TEAR_FIXTURE_H */
