/* SPDX-License-Identifier: MIT */
/*
 * Host side of the mlx5dev suite, on the rig tests/gpu uses (tests/rig.h): two softnics on an
 * in-process shm cable, each with its engine on a thread. Side "g" is the executor's: its QP is
 * exported with gpunic_qp_export() and the export is mapped onto mlx5_dev_lib.h's own device-QP
 * descriptor (md_qp_from_export), which is all the third-party-style code ever sees; with a GPU
 * its NIC is opened for a GPU executor, so its queues are placed by the mem layer, and its data
 * region is host-pinned memory mapped into the GPU (CPU_GPU). Side "c" is a passive RC peer in
 * plain host memory: it only answers RDMA WRITE, READ and atomics, and the checks read its
 * memory directly.
 *
 * Queues of g: a 64-WQEBB send queue (max_send_wr 64, one SGE, 28 bytes inline: every WQE one
 * WQEBB), 64-entry send and receive CQs created with overrun ignore (GPUNIC_CQ_OVERRUN_IGNORE).
 */
#ifndef MD_FIXTURE_H
#define MD_FIXTURE_H

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

#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include "harness.h"
#include "md_backend.h"
#include "md_cases.h"
#include "mlx5_dev_lib.h"
#include "rig.h"

/* Registered region of each side and an unregistered guard on both sides of it. */
#define MD_REGION (4u << 20)
#define MD_OUTER 4096u
/* Untouched bytes between two operations' buffers. */
#define MD_GAP 64u
#define MD_BAIT_OFF (MD_REGION - 4096u)
#define MD_BAIT_SEED 0xBA17u
#define MD_QUEUE 64u
/* The executor's deadline for the whole run, the host's for the run, and the grace after stop.
 * Each CTest has a 30 s TIMEOUT: 10 + 4 (+ setup) stays well inside it. */
#define MD_BUDGET_NS (10ull * 1000000000ull)
#define MD_HOST_WAIT_NS (12ull * 1000000000ull)
/* MD_STOP_GRACE_NS, the grace after stop: md_cases.h (the GPU backend uses it too) */
/* put: layout and count */
#define MD_PUT_OFF MD_GAP
#define MD_SIG_OFF (128u << 10)
#define MD_FETCH_OFF ((128u << 10) + 64u)
#define MD_PUTS 48u

/* The conventions a case asks of the library. */
struct md_conv {
	const char *name;
	enum gpunic_handler_mode mode;  /* g's QP */
	uint32_t db_value;              /* enum m5d_db_value */
	uint32_t ring_order;            /* enum m5d_ring_order */
	uint32_t qp_flags;              /* enum m5d_qp_flags */
	uint32_t nbatch;
	uint32_t batch[8];
	uint32_t bf_pause_ns;           /* m5d_qp.bf_pause_ns */
	uint32_t nic_handler;           /* enum m5d_nic_handler; 0: as the export's mode says */
	/* 1: another QP of the same mode is created on the executor's NIC first, so the one under
	 * test takes the next (odd) slot of the NIC's dense records, doorbells and mailboxes */
	uint32_t neighbour;
};

enum md_plan {
	MD_PLAN_WRITE = 0,   /* 144 RDMA WRITEs with an SGE: 64 B, 4 KiB, 64 KiB in turn */
	MD_PLAN_INLINE = 1,  /* 144 inline RDMA WRITEs: 28, 12, 1 bytes in turn */
	MD_PLAN_READ = 2,    /* 144 RDMA READs: 64 B, 4 KiB, 64 KiB in turn */
	MD_PLAN_MIXED = 3,   /* 16 rounds of the nine: each kind at each of its three sizes */
	MD_PLAN_QUIET = 4,   /* five of them, for a doorbell each after a quiet spell */
};

struct md_fix {
	const struct md_backend *be;
	struct md_conv cv;
	struct rig_attr ra;          /* the rig as this case built it */
	gpunic_mem_t *mem;
	struct rig_side g;
	struct rig_side c;
	struct gpunic_qp *nb;        /* md_conv.neighbour's QP, or NULL */
	struct gpunic_mem_buf *shb;  /* struct md_shared: mapped host memory for a GPU */
	struct md_shared *sh;        /* host view */
	struct md_shared *xsh;       /* executor's view */
	struct md_args a;
	struct md_result res;        /* the run's, read once it ended */
	char why[256];
};

/* ---------------------------------------------------------------- the mapping under test */

/*
 * gpunic's export -> the device-QP descriptor third-party mlx5 device code keeps. This is the
 * whole interface between the two: docs/HARDWARE.md tabulates it.
 */
static inline void md_qp_from_export(const struct gpunic_dev_qp *dq, const struct md_conv *cv,
				     struct m5d_qp *q)
{
	memset(q, 0, sizeof(*q));
	q->qpn = dq->qpn;
	switch (dq->handler_mode) {
	case GPUNIC_HANDLER_CPU_PROXY:
		q->nic_handler = M5D_HANDLER_CPU_PROXY;
		break;
	case GPUNIC_HANDLER_GPU_BF:
		q->nic_handler = M5D_HANDLER_GPU_SM_BF;
		break;
	default:
		q->nic_handler = M5D_HANDLER_GPU_SM_DB;
		break;
	}
	/* DOCA's GPU_SM_NO_DBR drives a GPU_DB export: the doorbell word without the record */
	if (cv->nic_handler)
		q->nic_handler = cv->nic_handler;
	q->db_value = cv->db_value;
	q->ring_order = cv->ring_order;
	q->flags = cv->qp_flags;
	q->max_inline = dq->max_inline;
	q->sq_wqe_daddr = dq->sq_buf;
	q->sq_wqe_num = dq->sq_wqebb_cnt;
	q->sq_wqe_mask = dq->sq_wqebb_cnt - 1;
	q->sq_dbrec = &dq->dbrec[MLX5_SND_DBR];
	q->sq_db = dq->db;
	q->sq_bf = dq->bf;
	q->sq_bf_lines = dq->bf_lines;
	q->bf_pause_ns = cv->bf_pause_ns;
	/* 8 bytes, 8-aligned, the producer in the low word: DOCA raises it as a 64-bit word */
	q->cpu_proxy_pi = (uint64_t *)(void *)dq->mailbox;
	q->cq_sq.cqe_daddr = (struct mlx5_cqe64 *)(void *)dq->scq.buf;
	q->cq_sq.cqe_num = dq->scq.cqe_cnt;
	q->cq_sq.cqe_mask = dq->scq.cqe_cnt - 1;
	q->cq_sq.dbrec = dq->scq.dbrec;
	q->cq_rq.cqe_daddr = (struct mlx5_cqe64 *)(void *)dq->rcq.buf;
	q->cq_rq.cqe_num = dq->rcq.cqe_cnt;
	q->cq_rq.cqe_mask = dq->rcq.cqe_cnt - 1;
	q->cq_rq.dbrec = dq->rcq.dbrec;
}

/* ---------------------------------------------------------------- diagnostics */

static inline void md_dump(const struct md_fix *fx)
{
	const struct md_result *r = &fx->res;

	rig_dump_side("g (executor)", &fx->g);
	rig_dump_side("c (peer)", &fx->c);
	fprintf(stderr,
		"result: errors %u finished %u posted %u completions %u reads %u early %u late %u "
		"bait %u init_bad %u puts %u nops %u\n",
		r->errors, r->finished, r->posted, r->completions, r->reads_checked, r->early_cqes,
		r->late_cqes, r->bait_cqes, r->cqe_init_bad, r->puts, r->nops);
}

#define MD_FAIL(fx, ...)                                       \
	do {                                                   \
		md_dump(fx);                                   \
		harness_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* ---------------------------------------------------------------- setup */

static inline void md_side_qp(struct md_fix *fx, struct rig_side *p, bool exec)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_RC,
		.max_send_wr = MD_QUEUE,
		.max_recv_wr = 1,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = MD_INLINE_MAX,
		.handler_mode = exec ? fx->cv.mode : GPUNIC_HANDLER_GPU_DB,
	};

	rig_qp_create(p, &ia);
}

/* md_conv.neighbour: a QP of the case's mode on the executor's NIC, created first, never
 * connected. */
static inline void md_neighbour_qp(struct md_fix *fx)
{
	struct gpunic_qp_init_attr ia = {
		.send_cq = fx->g.scq,
		.recv_cq = fx->g.rcq,
		.qp_type = GPUNIC_QPT_RC,
		.max_send_wr = MD_QUEUE,
		.max_recv_wr = 1,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.handler_mode = fx->cv.mode,
	};

	fx->nb = gpunic_qp_create(fx->g.pd, &ia);
	if (!fx->nb)
		harness_fail(__FILE__, __LINE__, "neighbour QP create: %s", strerror(errno));
}

/* Two QPs side by side: each one's mailbox, doorbell word and record are its own. A 64-bit
 * write to one (DOCA's proxy word) must stay inside it and be aligned. */
static inline void md_check_neighbour(struct md_fix *fx)
{
	struct gpunic_dev_qp nq;
	uintptr_t a, b;

	CHECK_EQ(gpunic_qp_export(fx->nb, &nq), 0);
	a = (uintptr_t)nq.mailbox;
	b = (uintptr_t)fx->g.dq.mailbox;
	if ((a | b) & 7u || (a > b ? a - b : b - a) < 8)
		MD_FAIL(fx, "mailboxes of neighbouring QPs at %p and %p: each must be 8 bytes, "
			"8-aligned", (void *)a, (void *)b);
	a = (uintptr_t)nq.db;
	b = (uintptr_t)fx->g.dq.db;
	if ((a | b) & 7u || (a > b ? a - b : b - a) < 8)
		MD_FAIL(fx, "doorbell words of neighbouring QPs at %p and %p overlap", (void *)a,
			(void *)b);
}

static inline void md_setup(struct md_fix *fx, const struct md_backend *be,
			    const struct md_conv *cv)
{
	memset(fx, 0, sizeof(*fx));
	fx->be = be;
	fx->cv = *cv;
	if (be->probe(fx->why, sizeof(fx->why)))
		SKIP("%s executor: %s", be->name, fx->why);
	fx->ra = (struct rig_attr){
		.tag = "mlx5dev",
		.subnet = 5,
		.gpu = be->gpu,
		.gpu_nic = be->gpu,
		/* the library never writes a CQ doorbell record: its CQs ignore overrun */
		.g_cq = { .cqe = MD_QUEUE, .flags = GPUNIC_CQ_OVERRUN_IGNORE },
		.region = MD_REGION,
		.outer = MD_OUTER,
		.guard = MD_GUARD,
		.zero_region = false,
		.access = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
			  GPUNIC_ACCESS_REMOTE_READ | GPUNIC_ACCESS_REMOTE_ATOMIC,
		.type = GPUNIC_QPT_RC,
		.mtu = GPUNIC_MTU_1024,
		.g_psn = 0x2000,
		.c_psn = 0xFFFF80,	/* the peer's response PSNs wrap during the run */
	};
	fx->mem = rig_mem_open(be->gpu, false);
	rig_open(fx->mem, &fx->ra, &fx->g, &fx->c);
	if (cv->neighbour)
		md_neighbour_qp(fx);
	md_side_qp(fx, &fx->g, true);
	md_side_qp(fx, &fx->c, false);
	rig_connect(&fx->ra, &fx->g, &fx->c);
	CHECK_EQ(gpunic_qp_export(fx->g.qp, &fx->g.dq), 0);
	/* the queues the issue asks for: 64 WQEBBs, 64 CQEs that ignore overrun */
	CHECK_EQ(fx->g.dq.handler_mode, cv->mode);
	CHECK_EQ(fx->g.dq.sq_wqebb_cnt, MD_QUEUE);
	CHECK_EQ(fx->g.dq.scq.cqe_cnt, MD_QUEUE);
	CHECK_EQ(fx->g.dq.rcq.cqe_cnt, MD_QUEUE);
	CHECK(fx->g.dq.scq.flags & GPUNIC_DEV_CQ_OVERRUN_IGNORE);
	CHECK(fx->g.dq.rcq.flags & GPUNIC_DEV_CQ_OVERRUN_IGNORE);
	CHECK(fx->g.dq.max_inline >= MD_INLINE_MAX);
	CHECK(fx->g.dq.bf && fx->g.dq.bf_lines >= MD_QUEUE);
	if (fx->nb)
		md_check_neighbour(fx);
	fx->shb = gpunic_mem_alloc(fx->mem, sizeof(struct md_shared), 64,
				   be->gpu ? GPUNIC_MEM_CPU_GPU : GPUNIC_MEM_HOST);
	CHECK(fx->shb && fx->shb->cpu);
	fx->sh = fx->shb->cpu;
	fx->xsh = fx->shb->gpu ? fx->shb->gpu : fx->shb->cpu;
	CHECK_EQ(gpunic_nic_start(fx->g.nic, -1), 0);
	CHECK_EQ(gpunic_nic_start(fx->c.nic, -1), 0);
}

static inline void md_teardown(struct md_fix *fx)
{
	rig_check_guards(&fx->ra, &fx->g, &fx->c);
	rig_close_nics(&fx->g, &fx->c);
	rig_close_mem(fx->mem, &fx->c);
}

static inline void md_args_init(struct md_fix *fx, uint32_t body, uint32_t flags, uint32_t seed)
{
	struct md_args *a = &fx->a;

	memset(a, 0, sizeof(*a));
	md_qp_from_export(&fx->g.dq, &fx->cv, &a->qp);
	a->sh = fx->xsh;
	a->lbuf = fx->g.xbuf;
	a->liova = (uint64_t)(uintptr_t)fx->g.buf;
	a->riova = (uint64_t)(uintptr_t)fx->c.buf;
	a->lkey = fx->g.mr->lkey;
	a->rkey = fx->c.mr->rkey;
	a->budget_ns = MD_BUDGET_NS;
	a->body = body;
	a->flags = flags;
	a->seed = seed;
	a->nbatch = fx->cv.nbatch;
	memcpy(a->batch, fx->cv.batch, sizeof(a->batch));
	CHECK(a->nbatch >= 1 && a->nbatch <= 8);
}

static inline void md_launch(struct md_fix *fx)
{
	memset(fx->sh, 0, sizeof(*fx->sh));
	if (fx->be->launch(&fx->a, fx->why, sizeof(fx->why)))
		MD_FAIL(fx, "%s launch: %s", fx->be->name, fx->why);
}

/* Wait for the run and read its result; any failure it reports ends the case. */
static inline void md_wait(struct md_fix *fx)
{
	int rc = fx->be->wait(fx->sh, MD_HOST_WAIT_NS, fx->why, sizeof(fx->why));
	const struct md_result *r = &fx->res;

	if (rc == EDEADLK) {
		md_dump(fx);
		fprintf(stderr, "FAIL %s:%d: %s executor: %s\n", __FILE__, __LINE__, fx->be->name,
			fx->why);
		_exit(1);
	}
	if (rc != EIO)
		memcpy(&fx->res, &fx->sh->res, sizeof(fx->res));
	if (rc)
		MD_FAIL(fx, "%s executor: %s", fx->be->name, fx->why);
	if (r->errors)
		MD_FAIL(fx, "%s executor: %u error(s), first: %s (detail 0x%" PRIx64 ")",
			fx->be->name, r->errors, md_err_name(r->first_code),
			(uint64_t)r->first_detail_hi << 32 | r->first_detail_lo);
}

/* What the library saw of the CQs, in any case: fresh CQEs were 0xF1, nothing completed
 * early or late, and nobody wrote the CQ doorbell records. */
static inline void md_check_cq_conventions(struct md_fix *fx)
{
	const struct md_result *r = &fx->res;

	if (r->cqe_init_bad)
		MD_FAIL(fx, "%u CQEs were not 0xF1 at creation (first: %s CQ entry %u = 0x%02x)",
			r->cqe_init_bad, r->cqe_init_first >> 31 ? "receive" : "send",
			(r->cqe_init_first >> 8) & 0x7fffff, r->cqe_init_first & 0xff);
	if (r->early_cqes)
		MD_FAIL(fx, "an owner-bit poller took %u CQEs before anything was posted",
			r->early_cqes);
	if (r->late_cqes)
		MD_FAIL(fx, "%u completions nobody posted (%u after the bait was written)",
			r->late_cqes, r->bait_cqes);
	if (r->scq_dbrec_end || r->rcq_dbrec_end)
		MD_FAIL(fx, "a CQ doorbell record changed: send 0x%08x receive 0x%08x",
			r->scq_dbrec_end, r->rcq_dbrec_end);
	CHECK_EQ(r->scq_ci_end, r->completions + r->err_cqes);
}

/* ---------------------------------------------------------------- what the softnic did */

struct md_expect {
	uint64_t wqes;         /* WQEs the executor's QP completed */
	uint64_t write_bytes;  /* payload it sent (WRITE) */
	uint64_t read_bytes;   /* payload it received (READ responses) */
	uint64_t peer_msgs;    /* messages the peer's responder executed (WRITE, atomics) */
	uint64_t atomics;
};

static inline void md_check_softnic(struct md_fix *fx, const struct md_expect *e)
{
	struct gpunic_qp_counters gq, cq;
	struct gpunic_nic_counters gn, cn;
	struct gpunic_qp_attr at;
	uint64_t retx;

	CHECK_EQ(gpunic_qp_query(fx->g.qp, &at), 0);
	if (at.qp_state != GPUNIC_QPS_RTS)
		MD_FAIL(fx, "the executor's QP is %s", gpunic_qp_state_name(at.qp_state));
	CHECK_EQ(gpunic_qp_query(fx->c.qp, &at), 0);
	if (at.qp_state != GPUNIC_QPS_RTS)
		MD_FAIL(fx, "the peer's QP is %s", gpunic_qp_state_name(at.qp_state));
	CHECK_EQ(gpunic_qp_query_counters(fx->g.qp, &gq), 0);
	CHECK_EQ(gpunic_qp_query_counters(fx->c.qp, &cq), 0);
	CHECK_EQ(gpunic_nic_query_counters(fx->g.nic, &gn), 0);
	CHECK_EQ(gpunic_nic_query_counters(fx->c.nic, &cn), 0);
	retx = gq.retransmits + cq.retransmits + gq.timeouts + cq.timeouts;

	if (gq.tx_messages != e->wqes || cq.rx_messages != e->peer_msgs ||
	    cq.atomics_executed != e->atomics)
		MD_FAIL(fx,
			"softnic ran %" PRIu64 " WQEs (want %" PRIu64 "), peer executed %" PRIu64
			" messages (want %" PRIu64 ") and %" PRIu64 " atomics (want %" PRIu64 ")",
			gq.tx_messages, e->wqes, cq.rx_messages, e->peer_msgs, cq.atomics_executed,
			e->atomics);
	if (gq.wqes_torn)
		MD_FAIL(fx, "%" PRIu64 " WQEs judged torn", gq.wqes_torn);
	if (!retx) {
		if (gq.tx_bytes != e->write_bytes || cq.rx_bytes != e->write_bytes ||
		    gq.rx_bytes != e->read_bytes || cq.tx_bytes != e->read_bytes)
			MD_FAIL(fx,
				"payload bytes: sent %" PRIu64 " peer got %" PRIu64 " (want %" PRIu64
				"), read %" PRIu64 " peer sent %" PRIu64 " (want %" PRIu64 ")",
				gq.tx_bytes, cq.rx_bytes, e->write_bytes, gq.rx_bytes, cq.tx_bytes,
				e->read_bytes);
		if (gq.naks_received || cq.naks_sent)
			MD_FAIL(fx, "NAKs with no retransmission");
	} else {
		printf("note: %" PRIu64 " retransmissions or timeouts (a starved engine); byte "
		       "counts not compared\n", retx);
	}
	for (int i = 0; i < GPUNIC_DROP_MAX; i++) {
		uint64_t n = gq.drops[i] + cq.drops[i] + gn.drops[i] + cn.drops[i];
		bool dup = i == GPUNIC_DROP_PSN || i == GPUNIC_DROP_UNEXPECTED_ACK;

		if (n && !(retx && dup))
			MD_FAIL(fx, "%" PRIu64 " frames dropped for %s", n,
				gpunic_drop_reason_name((enum gpunic_drop_reason)i));
	}
	printf("softnic: %" PRIu64 " WQEs, %" PRIu64 " B written, %" PRIu64 " B read, peer %" PRIu64
	       " messages %" PRIu64 " atomics; BlueFlame lines taken %" PRIu64 ", lines refused "
	       "(unsealed) %" PRIu64 "\n",
	       gq.tx_messages, gq.tx_bytes, gq.rx_bytes, cq.rx_messages, cq.atomics_executed,
	       gq.bf_wqes, gq.bf_torn);
}

/* ---------------------------------------------------------------- case: the plan */

static inline void md_make_plan(struct md_args *a, enum md_plan plan)
{
	static const uint8_t mk[9] = { MD_K_WRITE, MD_K_INLINE, MD_K_READ, MD_K_WRITE, MD_K_INLINE,
				       MD_K_READ, MD_K_WRITE, MD_K_INLINE, MD_K_READ };
	static const uint32_t ml[9] = { 64, 28, 64, 4096, 12, 4096, 65536, 1, 65536 };
	static const uint32_t big[3] = { 64, 4096, 65536 };
	static const uint32_t inl[3] = { 28, 12, 1 };
	uint32_t off = MD_GAP, k;

	a->nops = plan == MD_PLAN_QUIET ? 5 : MD_MAX_OPS;
	for (k = 0; k < a->nops; k++) {
		struct md_op *op = &a->op[k];

		switch (plan) {
		case MD_PLAN_WRITE:
			op->kind = MD_K_WRITE;
			op->len = big[k % 3];
			break;
		case MD_PLAN_INLINE:
			op->kind = MD_K_INLINE;
			op->len = inl[k % 3];
			break;
		case MD_PLAN_READ:
			op->kind = MD_K_READ;
			op->len = big[k % 3];
			break;
		default:
			op->kind = mk[k % 9];
			op->len = ml[k % 9];
			break;
		}
		op->off = off;
		op->roff = off;
		off += ((op->len + 63) & ~63u) + MD_GAP;
	}
	CHECK(off + MD_GAP <= MD_BAIT_OFF);
}

static inline const char *md_plan_name(enum md_plan plan)
{
	static const char *const n[] = { "WRITE", "inline WRITE", "READ", "mixed",
					 "mixed, each after a quiet spell," };

	return n[plan];
}

/* Both regions after a plan: every operation's bytes are its pattern on both sides (the
 * source untouched, the destination written), everything else is still guard; the bait's
 * destination at the peer was never written. */
static inline void md_verify_regions(struct md_fix *fx)
{
	const struct md_args *a = &fx->a;
	const uint8_t *side[2] = { fx->g.buf, fx->c.buf };

	for (int s = 0; s < 2; s++) {
		const uint8_t *p = side[s];
		uint32_t at = 0;

		for (uint32_t k = 0; k < a->nops; k++) {
			const struct md_op *op = &a->op[k];

			if (!rig_all(p + at, op->off - at, MD_GUARD))
				MD_FAIL(fx, "%s region: bytes before op %u were written",
					s ? "peer" : "local", k);
			for (uint32_t i = 0; i < op->len; i++)
				if (p[op->off + i] != md_pat(a->seed + k, i))
					MD_FAIL(fx,
						"%s region: op %u (%s %u B) byte %u is 0x%02x, want "
						"0x%02x",
						s ? "peer" : "local", k,
						op->kind == MD_K_READ	  ? "READ" :
						op->kind == MD_K_INLINE ? "inline WRITE" :
									    "WRITE",
						op->len, i, p[op->off + i], md_pat(a->seed + k, i));
			at = op->off + op->len;
		}
		if (!rig_all(p + at, MD_BAIT_OFF - at, MD_GUARD))
			MD_FAIL(fx, "%s region: bytes after the last op were written",
				s ? "peer" : "local");
		if (s == 1 && !rig_all(p + MD_BAIT_OFF, MD_REGION - MD_BAIT_OFF, MD_GUARD))
			MD_FAIL(fx, "the bait WQE ran: the peer's canary was written");
	}
}

/*
 * The matrix: @plan (144 operations on a 64-WQEBB send queue and 64-entry CQs, two
 * full wraps of each) posted by mlx5_dev_lib.h under @cv's conventions, every byte checked
 * where it landed; then the phantom checks (@flags MD_F_BAIT...), the CQ conventions and the
 * softnic's own counters.
 */
static inline void md_plan_case(const struct md_backend *be, const struct md_conv *cv,
				enum md_plan plan, uint32_t flags)
{
	struct md_expect e = { 0 };
	struct md_fix *fx = calloc(1, sizeof(*fx));
	const struct md_result *r;
	struct md_args *a;
	uint32_t reads = 0, k;

	CHECK(fx);
	md_setup(fx, be, cv);
	r = &fx->res;
	a = &fx->a;
	md_args_init(fx, MD_BODY_OPS, flags, 0x5000u + 1000u * plan);
	a->bait_off = MD_BAIT_OFF;
	md_make_plan(a, plan);
	/* a doorbell for each WQE, each after its quiet spell */
	if (flags & MD_F_QUIET) {
		a->nbatch = 1;
		a->batch[0] = 1;
	}
	memset(fx->g.buf, MD_GUARD, MD_REGION);
	memset(fx->c.buf, MD_GUARD, MD_REGION);
	for (k = 0; k < a->nops; k++) {
		const struct md_op *op = &a->op[k];
		uint8_t *src = (op->kind == MD_K_READ ? fx->c.buf : fx->g.buf) + op->off;

		for (uint32_t i = 0; i < op->len; i++)
			src[i] = md_pat(a->seed + k, i);
		e.wqes++;
		if (op->kind == MD_K_READ) {
			e.read_bytes += op->len;
			reads++;
		} else {
			e.write_bytes += op->len;
			e.peer_msgs++;
		}
	}
	for (uint32_t i = 0; i < 64; i++)
		fx->g.buf[MD_BAIT_OFF + i] = md_pat(MD_BAIT_SEED, i);

	md_launch(fx);
	md_wait(fx);
	/* a phantom WQE would have run by now: the executor watched 20 ms, and we wait more */
	rig_sleep_us(50000);
	if (!r->finished || r->posted != a->nops || r->completions != a->nops ||
	    r->reads_checked != reads)
		MD_FAIL(fx, "executor: finished %u posted %u completions %u (want %u) reads %u/%u",
			r->finished, r->posted, r->completions, a->nops, r->reads_checked, reads);
	md_check_cq_conventions(fx);
	md_verify_regions(fx);
	md_check_softnic(fx, &e);
	printf("%s %s: %u %s operations on %u WQEBBs / %u CQEs, %.3f ms\n", be->name, cv->name,
	       a->nops, md_plan_name(plan), fx->g.dq.sq_wqebb_cnt, fx->g.dq.scq.cqe_cnt,
	       (double)((uint64_t)r->ns_hi << 32 | r->ns_lo) / 1e6);
	md_teardown(fx);
	free(fx);
}

/* ---------------------------------------------------------------- case: signalled puts */

/*
 * NVSHMEM-style put with signal (md_body_put): the peer (this thread) polls its signal word;
 * the moment it reads i + 1, the whole buffer of put i must be in its memory. Each put reuses
 * the buffer with a new pattern, so a WRITE still landing after its signal shows.
 */
static inline void md_put_case(const struct md_backend *be, const struct md_conv *cv,
			       uint32_t flags)
{
	struct md_expect e = { 0 };
	struct md_fix *fx = calloc(1, sizeof(*fx));
	const struct md_result *r;
	struct md_args *a;
	uint64_t *sig, end, v;
	uint32_t i, len, bad, nops = 0;

	CHECK(fx);
	md_setup(fx, be, cv);
	r = &fx->res;
	a = &fx->a;
	md_args_init(fx, MD_BODY_PUT, flags, 0x7000u);
	a->nput = MD_PUTS;
	a->put_off = MD_PUT_OFF;
	a->sig_off = MD_SIG_OFF;
	a->fetch_off = MD_FETCH_OFF;
	memset(fx->g.buf, MD_GUARD, MD_REGION);
	memset(fx->c.buf, MD_GUARD, MD_REGION);
	sig = (uint64_t *)(void *)(fx->c.buf + MD_SIG_OFF);
	*sig = 0;
	memset(fx->g.buf + MD_FETCH_OFF, 0xEE, 8);

	md_launch(fx);
	for (i = 0; i < MD_PUTS; i++) {
		end = rig_ns() + MD_BUDGET_NS;
		while ((v = __atomic_load_n(sig, __ATOMIC_ACQUIRE)) < i + 1) {
			if (rig_ns() > end) {
				__atomic_store_n(&fx->sh->ctl.stop, 1, __ATOMIC_RELEASE);
				md_wait(fx);
				MD_FAIL(fx, "signal %u never came (the word holds %" PRIu64 ")",
					i + 1, v);
			}
			sched_yield();
		}
		len = md_put_len(i);
		bad = v == i + 1 ? 0 : len;
		if (v == i + 1)
			for (; bad < len; bad++)
				if (fx->c.buf[MD_PUT_OFF + bad] != md_pat(a->seed + i, bad))
					break;
		if (bad != len) {
			__atomic_store_n(&fx->sh->ctl.stop, 1, __ATOMIC_RELEASE);
			fx->be->wait(fx->sh, MD_HOST_WAIT_NS, fx->why, sizeof(fx->why));
			MD_FAIL(fx,
				"signal %" PRIu64 " seen (want %u), but byte %u of put %u (%u B) is "
				"0x%02x, want 0x%02x: the data did not land before the signal",
				v, i + 1, bad, i, len, fx->c.buf[MD_PUT_OFF + bad],
				md_pat(a->seed + i, bad));
		}
		e.write_bytes += len;
		__atomic_store_n(&fx->sh->ctl.ack, i + 1, __ATOMIC_RELEASE);
	}
	md_wait(fx);
	rig_sleep_us(20000);
	if (flags & MD_F_NOP)
		nops = MD_PUTS / 8;
	if (!r->finished || r->puts != MD_PUTS || r->nops != nops ||
	    r->completions != MD_PUTS + nops || r->posted != 2 * MD_PUTS + nops)
		MD_FAIL(fx, "executor: finished %u puts %u nops %u completions %u posted %u",
			r->finished, r->puts, r->nops, r->completions, r->posted);
	CHECK_EQ(__atomic_load_n(sig, __ATOMIC_ACQUIRE), MD_PUTS);
	CHECK(rig_all(fx->c.buf, MD_PUT_OFF, MD_GUARD));
	CHECK(rig_all(fx->c.buf + MD_PUT_OFF + 65536, MD_SIG_OFF - MD_PUT_OFF - 65536, MD_GUARD));
	CHECK(rig_all(fx->c.buf + MD_SIG_OFF + 8, MD_REGION - MD_SIG_OFF - 8, MD_GUARD));
	md_check_cq_conventions(fx);
	e.wqes = 2 * MD_PUTS + nops;
	e.peer_msgs = 2 * MD_PUTS;
	e.atomics = MD_PUTS;
	md_check_softnic(fx, &e);
	printf("%s %s: %u signalled puts (64 B / 4 KiB / 64 KiB), %u NOPs, %.3f ms\n", be->name,
	       cv->name, MD_PUTS, nops, (double)((uint64_t)r->ns_hi << 32 | r->ns_lo) / 1e6);
	md_teardown(fx);
	free(fx);
}

/* ---------------------------------------------------------------- cases: what it refuses */

/* Producer-index doorbell after the record, the NVSHMEM IBGDA convention. */
static const struct md_conv md_conv_plain = {
	"GPU_DB pi-doorbell DBR-DB", GPUNIC_HANDLER_GPU_DB, M5D_DB_VALUE_PI, M5D_RING_DBR_DB, 0,
	1, { 2 }, 0, 0, 0,
};
/* BlueFlame copies interrupted for 200 us after their first 16 bytes (the ctrl segment). */
static const struct md_conv md_conv_bf_pause = {
	"GPU_BF BlueFlame copy, interrupted after the ctrl", GPUNIC_HANDLER_GPU_BF,
	M5D_DB_VALUE_CTRL, M5D_RING_DBR_DB, 0, 1, { 1 }, 200000, 0, 0,
};

/*
 * An mlx5 opcode the softnic does not implement, as device code would post it: the WQE must
 * complete with an error CQE (REQ_ERR, LOCAL_QP_OP_ERR, naming the opcode and the WQE), the QP
 * must go to ERR, and nothing may reach the peer: refused cleanly, never half done.
 */
static inline void md_refuse_case(const struct md_backend *be, uint8_t opcode, const char *name)
{
	struct md_fix *fx = calloc(1, sizeof(*fx));
	struct gpunic_qp_counters gq, cq;
	struct gpunic_qp_attr at;
	const struct md_result *r;
	struct md_args *a;

	CHECK(fx);
	md_setup(fx, be, &md_conv_plain);
	r = &fx->res;
	a = &fx->a;
	md_args_init(fx, MD_BODY_OPS, MD_F_EXPECT_ERR, 0x6000u + opcode);
	a->nops = 1;
	a->op[0].kind = MD_K_RAW;
	a->op[0].opcode = opcode;
	memset(fx->c.buf, MD_GUARD, MD_REGION);
	md_launch(fx);
	md_wait(fx);
	rig_sleep_us(20000);
	if (r->err_cqes != 1 || r->completions)
		MD_FAIL(fx, "%s: %u error and %u good completions (want one error)", name,
			r->err_cqes, r->completions);
	if (r->err_opcode != MLX5_CQE_REQ_ERR || r->err_wqe_opcode != opcode ||
	    r->err_syndrome != MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR || r->err_counter != 0)
		MD_FAIL(fx, "%s: CQE opcode 0x%x wqe opcode 0x%x syndrome 0x%x counter %u", name,
			r->err_opcode, r->err_wqe_opcode, r->err_syndrome, r->err_counter);
	md_check_cq_conventions(fx);
	CHECK_EQ(gpunic_qp_query(fx->g.qp, &at), 0);
	if (at.qp_state != GPUNIC_QPS_ERR)
		MD_FAIL(fx, "%s: the QP is %s after the error", name,
			gpunic_qp_state_name(at.qp_state));
	CHECK_EQ(gpunic_qp_query_counters(fx->g.qp, &gq), 0);
	CHECK_EQ(gpunic_qp_query_counters(fx->c.qp, &cq), 0);
	if (gq.tx_packets || gq.tx_messages || cq.rx_packets)
		MD_FAIL(fx, "%s: something was sent (%" PRIu64 " packets)", name, gq.tx_packets);
	CHECK(rig_all(fx->c.buf, MD_REGION, MD_GUARD));
	printf("%s %s (0x%02x): refused with REQ_ERR / LOCAL_QP_OP_ERR, QP in ERR, nothing sent\n",
	       be->name, name, opcode);
	md_teardown(fx);
	free(fx);
}

/*
 * The FENCE bit (MLX5_WQE_CTRL_FENCE, IBV_SEND_FENCE): a WQE carrying it may start only once
 * every earlier RDMA READ and atomic has completed. Device code relies on it to forward what it
 * just read: READ 64 KiB from the peer's A into local L, then WRITE L to the peer's B with
 * FENCE, both behind one doorbell. B must then hold A's bytes.
 */
static inline void md_fence_case(const struct md_backend *be)
{
	struct md_fix *fx = calloc(1, sizeof(*fx));
	const uint32_t len = 65536, l_off = MD_GAP, a_off = MD_GAP, b_off = 2 * MD_GAP + len;
	const struct md_result *r;
	struct md_args *a;
	uint32_t i;

	CHECK(fx);
	md_setup(fx, be, &md_conv_plain);
	r = &fx->res;
	a = &fx->a;
	md_args_init(fx, MD_BODY_OPS, 0, 0x6100u);
	a->nops = 2;
	a->op[0] = (struct md_op){ .kind = MD_K_READ, .len = len, .off = l_off, .roff = a_off };
	a->op[1] = (struct md_op){ .kind = MD_K_WRITE, .sflags = M5D_SEND_FENCE, .len = len,
				   .off = l_off, .roff = b_off };
	memset(fx->g.buf, MD_GUARD, MD_REGION);
	memset(fx->c.buf, MD_GUARD, MD_REGION);
	for (i = 0; i < len; i++)
		fx->c.buf[a_off + i] = md_pat(a->seed, i);
	md_launch(fx);
	md_wait(fx);
	if (r->completions != 2 || r->reads_checked != 1)
		MD_FAIL(fx, "completions %u reads %u", r->completions, r->reads_checked);
	md_check_cq_conventions(fx);
	for (i = 0; i < len; i++)
		if (fx->c.buf[b_off + i] != md_pat(a->seed, i))
			MD_FAIL(fx,
				"the fenced WRITE did not wait for the READ before it: byte %u of "
				"%u it carried is 0x%02x, the READ brought 0x%02x",
				i, len, fx->c.buf[b_off + i], md_pat(a->seed, i));
	CHECK(rig_all(fx->c.buf + b_off + len, MD_GAP, MD_GUARD));
	printf("%s fenced WRITE after READ: the WRITE carried the READ's %u bytes\n", be->name,
	       len);
	md_teardown(fx);
	free(fx);
}

#endif /* MD_FIXTURE_H */
