/* SPDX-License-Identifier: MIT */
/*
 * Host side of the GPU data-path suite: two softnics on an in-process shm cable, each with its
 * engine on a thread. Side "g" is driven by the executor under test (struct gt_backend: a GPU
 * kernel, or host threads for the CPU twin) through the bodies in gt_cases.h; its NIC is opened
 * for that executor, so with a GPU its queues are placed by gpunic_mem_placement_for() and its
 * data buffer is host-pinned memory mapped into the GPU (CPU_GPU). Side "c" is a plain CPU peer
 * that this thread drives with gpunic_dev.h and whose host memory the checks read.
 *
 * The scenarios (gt_xfer_suite, gt_recv_case, gt_mt_case, gt_warp_case, gt_loop_case,
 * gt_loop_rpc_case) are the suite's cases; gt_tests.h names them once for both executors.
 */
#ifndef GT_FIXTURE_H
#define GT_FIXTURE_H

#include <sys/mman.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/loop_dev.h>
#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include "gt_backend.h"
#include "gt_cases.h"
#include "harness.h"
#include "rig.h"

/* Registered region of each side, and a guarded margin around it (outside the MR). */
#define GT_BUF_BYTES ((2u << 20) + (64u << 10))
#define GT_OUTER 4096u
/* Where one-request destinations start (READ: in g's buffer, else in c's). */
#define GT_DST_OFF ((1u << 20) + 4096u)
/* The executor's deadline for any one wait, and the host's for a whole run. */
#define GT_BUDGET_NS (30ull * 1000000000ull)
#define GT_HOST_WAIT_NS (GT_BUDGET_NS + 15ull * 1000000000ull)
/* The host's deadline for anything it waits for itself. */
#define GT_PEER_WAIT_NS (20ull * 1000000000ull)

struct gt_opts {
	enum gpunic_qp_type type;
	enum gpunic_mtu mtu;           /* 0: 1024 */
	enum gpunic_handler_mode mode; /* g's QP */
	bool scatter;                  /* g's QP scatters receives of <= 32 bytes into the CQE */
	uint32_t max_send_wr;          /* g's QP; 0: 64 */
	uint32_t max_recv_wr;          /* 0: 64 */
	uint32_t cqe;                  /* g's CQs; 0: 256 */
	uint32_t max_inline;           /* 0: 64 */
};

struct gt_fix {
	const struct gt_backend *be;
	struct gt_opts o;
	struct rig_attr ra;            /* the rig as this case built it */
	gpunic_mem_t *mem;
	struct rig_side g;
	struct rig_side c;
	struct gpunic_dev_qp *xqp;     /* g.dq where the executor reads it */
	struct gpunic_mem_buf *resb;   /* struct gt_result: device memory for a GPU */
	struct gpunic_mem_buf *ctlb;   /* struct gt_ctl: mapped host memory for a GPU */
	struct gt_ctl *ctl;            /* host view */
	struct gt_result res;          /* the last run's, read once it ended */
	char why[256];
};

static inline uint32_t gt_pmtu(const struct gt_fix *fx)
{
	return gpunic_mtu_bytes(fx->o.mtu);
}

static inline const char *gt_op_name(uint8_t op)
{
	switch (op) {
	case MLX5_OPCODE_SEND:
		return "SEND";
	case MLX5_OPCODE_SEND_IMM:
		return "SEND_IMM";
	case MLX5_OPCODE_RDMA_WRITE:
		return "RDMA_WRITE";
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		return "RDMA_WRITE_IMM";
	case MLX5_OPCODE_RDMA_READ:
		return "RDMA_READ";
	default:
		return "?";
	}
}

/* ---------------------------------------------------------------- diagnostics */

/* Counters of both NICs and QPs, and the executor's last result as read (never read here:
 * the executor may still run). */
static inline void gt_dump(const struct gt_fix *fx)
{
	const struct gt_result *r = &fx->res;

	rig_dump_side("g (executor)", &fx->g);
	rig_dump_side("c (cpu peer)", &fx->c);
	fprintf(stderr,
		"result: errors %u finished %u consumed %u posted %u enomem %u scqes %u rcqes %u; "
		"last send CQE op 0x%x wqe_op 0x%x syndrome 0x%x\n",
		r->errors, r->finished, r->consumed, r->posted, r->enomem, r->scqes, r->rcqes,
		r->scqe.opcode, r->scqe.wqe_opcode, r->scqe.syndrome);
}

#define GT_FAIL(fx, ...)                                       \
	do {                                                   \
		gt_dump(fx);                                   \
		harness_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* ---------------------------------------------------------------- setup */

static inline void gt_side_qp(struct gt_fix *fx, struct rig_side *p, bool exec)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = fx->o.type,
		.max_send_wr = exec ? fx->o.max_send_wr : 64,
		.max_recv_wr = exec ? fx->o.max_recv_wr : 64,
		.max_send_sge = 4,
		.max_recv_sge = 4,
		.max_inline_data = exec ? fx->o.max_inline : 64,
		.cqe_scatter = exec && fx->o.scatter,
		.handler_mode = exec ? fx->o.mode : GPUNIC_HANDLER_AUTO,
	};

	rig_qp_create(p, &ia);
}

static inline void gt_setup(struct gt_fix *fx, const struct gt_backend *be,
			    const struct gt_opts *o)
{
	memset(fx, 0, sizeof(*fx));
	fx->be = be;
	fx->o = *o;
	if (!fx->o.mtu)
		fx->o.mtu = GPUNIC_MTU_1024;
	if (!fx->o.max_send_wr)
		fx->o.max_send_wr = 64;
	if (!fx->o.max_recv_wr)
		fx->o.max_recv_wr = 64;
	if (!fx->o.max_inline)
		fx->o.max_inline = 64;
	if (be->probe(fx->why, sizeof(fx->why)))
		SKIP("%s executor: %s", be->name, fx->why);
	fx->ra = (struct rig_attr){
		.tag = "gputest",
		.subnet = 0,
		.gpu = be->gpu,
		.gpu_nic = be->gpu,
		.g_cq = { .cqe = fx->o.cqe ? fx->o.cqe : 256 },
		.region = GT_BUF_BYTES,
		.outer = GT_OUTER,
		.guard = GT_GUARD,
		.zero_region = true,
		.access = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
			  GPUNIC_ACCESS_REMOTE_READ,
		.type = fx->o.type,
		.mtu = fx->o.mtu,
		.g_psn = 0x1000,
		.c_psn = 0xFFFF00,	/* the peer's PSNs wrap during the larger cases */
	};
	fx->mem = rig_mem_open(be->gpu, false);
	rig_open(fx->mem, &fx->ra, &fx->g, &fx->c);
	gt_side_qp(fx, &fx->g, true);
	gt_side_qp(fx, &fx->c, false);
	rig_connect(&fx->ra, &fx->g, &fx->c);
	CHECK_EQ(gpunic_qp_export(fx->g.qp, &fx->g.dq), 0);
	CHECK_EQ(gpunic_qp_export(fx->c.qp, &fx->c.dq), 0);
	CHECK_EQ(gpunic_dev_qp_check(&fx->g.dq), 0);
	CHECK_EQ(gpunic_dev_qp_check(&fx->c.dq), 0);
	CHECK_EQ(fx->g.dq.handler_mode,
		 o->mode == GPUNIC_HANDLER_CPU_PROXY ? GPUNIC_HANDLER_CPU_PROXY :
						       GPUNIC_HANDLER_GPU_DB);
	fx->xqp = be->qp_publish(&fx->g.dq, fx->why, sizeof(fx->why));
	if (!fx->xqp)
		harness_fail(__FILE__, __LINE__, "publish the QP: %s", fx->why);
	/* Results take the executor's atomics: device memory, read back through the mem layer. */
	fx->resb = gpunic_mem_alloc(fx->mem, sizeof(struct gt_result), 64,
				    be->gpu ? GPUNIC_MEM_GPU : GPUNIC_MEM_HOST);
	fx->ctlb = gpunic_mem_alloc(fx->mem, sizeof(struct gt_ctl), 64,
				    be->gpu ? GPUNIC_MEM_CPU_GPU : GPUNIC_MEM_HOST);
	CHECK(fx->resb && fx->ctlb && fx->ctlb->cpu);
	fx->ctl = fx->ctlb->cpu;
	CHECK_EQ(gpunic_nic_start(fx->g.nic, -1), 0);
	CHECK_EQ(gpunic_nic_start(fx->c.nic, -1), 0);
}

static inline void gt_teardown(struct gt_fix *fx)
{
	rig_check_guards(&fx->ra, &fx->g, &fx->c);
	fx->be->qp_unpublish(fx->xqp);
	rig_close_nics(&fx->g, &fx->c);
	rig_close_mem(fx->mem, &fx->c);
}

/* ---------------------------------------------------------------- running the executor */

static inline void gt_args_init(const struct gt_fix *fx, struct gt_args *a)
{
	memset(a, 0, sizeof(*a));
	a->qp = fx->xqp;
	a->res = (struct gt_result *)(fx->resb->gpu ? fx->resb->gpu : fx->resb->cpu);
	a->ctl = (struct gt_ctl *)(fx->ctlb->gpu ? fx->ctlb->gpu : fx->ctlb->cpu);
	a->lbuf = fx->g.xbuf;
	a->liova = (uint64_t)(uintptr_t)fx->g.buf;
	a->riova = (uint64_t)(uintptr_t)fx->c.buf;
	a->lkey = fx->g.mr->lkey;
	a->rkey = fx->c.mr->rkey;
	a->budget_ns = GT_BUDGET_NS;
}

static inline void gt_launch(struct gt_fix *fx, enum gt_kernel k, const struct gt_args *a,
			     uint32_t blocks, uint32_t threads)
{
	memset(&fx->res, 0, sizeof(fx->res));
	CHECK_EQ(gpunic_mem_write(fx->mem, fx->resb, 0, &fx->res, sizeof(fx->res)), 0);
	memset(fx->ctl, 0, sizeof(*fx->ctl));
	if (fx->be->launch(k, a, blocks, threads, fx->why, sizeof(fx->why)))
		GT_FAIL(fx, "%s launch: %s", fx->be->name, fx->why);
}

/* Wait for the run and read its result; any failure it reports ends the case. */
static inline void gt_wait(struct gt_fix *fx)
{
	int rc = fx->be->wait(fx->ctl, GT_HOST_WAIT_NS, fx->why, sizeof(fx->why));
	const struct gt_result *r = &fx->res;

	if (rc == EDEADLK) {
		/* Memory the executor still uses cannot be freed: leave at once. */
		gt_dump(fx);
		fprintf(stderr, "FAIL %s:%d: %s executor: %s\n", __FILE__, __LINE__, fx->be->name,
			fx->why);
		_exit(1);
	}
	if (rc != EIO && gpunic_mem_read(fx->mem, fx->resb, 0, &fx->res, sizeof(fx->res)))
		GT_FAIL(fx, "cannot read the executor's result");
	if (rc)
		GT_FAIL(fx, "%s executor: %s", fx->be->name, fx->why);
	if (r->errors)
		GT_FAIL(fx, "%s executor: %u error(s), first: %s (detail 0x%" PRIx64 ")",
			fx->be->name, r->errors, gt_err_name(r->first_code), r->first_detail);
}

static inline void gt_read_state(struct gt_fix *fx, struct gpunic_dev_qp_state *st)
{
	if (fx->be->read_state(fx->g.dq.state, st, fx->why, sizeof(fx->why)))
		GT_FAIL(fx, "read the data-path state: %s", fx->why);
}

/* ---------------------------------------------------------------- the CPU peer */

static inline bool gt_peer_poll(struct gt_fix *fx, bool send, struct gpunic_dev_cqe *cqe,
				uint64_t ns)
{
	struct gpunic_dev_qp *q = &fx->c.dq;
	uint64_t end = rig_ns() + ns;
	uint32_t spins = 0;

	for (;;) {
		if (send ? gpunic_dev_poll_scq(q, cqe) : gpunic_dev_poll_rcq(q, cqe))
			return true;
		if (rig_ns() > end)
			return false;
		gpunic_dev_spin_wait(&spins);
	}
}

/* A receive at @off of @len bytes in c's buffer; zero-length when @len is 0. */
static inline void gt_peer_post_recv(struct gt_fix *fx, uint32_t off, uint32_t len)
{
	struct gpunic_dev_sge sge = { .addr = (uint64_t)(uintptr_t)(fx->c.buf + off),
				      .length = len,
				      .lkey = fx->c.mr->lkey };

	CHECK(gpunic_dev_post_recv(&fx->c.dq, &sge, len ? 1 : 0) >= 0);
}

/* One signalled request from c's buffer at @off; a full send queue is drained first. */
static inline void gt_peer_post(struct gt_fix *fx, uint8_t op, uint32_t off, uint32_t len,
				uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct gpunic_dev_cqe cqe;
	int64_t r;

	for (;;) {
		r = gpunic_dev_post_send_sge(&fx->c.dq, op, GPUNIC_DEV_SEND_SIGNALED,
					     (uint64_t)(uintptr_t)(fx->c.buf + off), len,
					     fx->c.mr->lkey, raddr, rkey, imm);
		if (r != -ENOMEM)
			break;
		if (!gt_peer_poll(fx, true, &cqe, GT_PEER_WAIT_NS))
			GT_FAIL(fx, "peer send queue full and no completion");
		if (cqe.opcode != MLX5_CQE_REQ)
			GT_FAIL(fx, "peer send CQE opcode 0x%x syndrome 0x%x", cqe.opcode,
				cqe.syndrome);
	}
	CHECK(r >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx->c.dq), 0);
}

/* Wait until @p holds pattern @seed (UC WRITEs tell the receiver nothing). */
static inline uint32_t gt_await_pattern(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint64_t end = rig_ns() + GT_PEER_WAIT_NS;
	uint32_t bad;

	while ((bad = gt_mismatch(p, len, seed)) != len && rig_ns() < end)
		sched_yield();
	return bad;
}

/* ---------------------------------------------------------------- case 1: one request */

/*
 * One request from the executor, then the peer's view: its receive CQE (byte count,
 * immediate), the bytes and the guards around them; for a READ, the bytes in g's buffer.
 */
static inline void gt_xfer_one(struct gt_fix *fx, uint8_t op, uint32_t len, bool inl,
			       uint32_t seed)
{
	bool read = op == MLX5_OPCODE_RDMA_READ;
	bool imm = op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM;
	bool recv = imm || op == MLX5_OPCODE_SEND;
	uint8_t *src = read ? fx->c.buf : fx->g.buf;
	uint8_t *dst = (read ? fx->g.buf : fx->c.buf) + GT_DST_OFF;
	const struct gt_result *r = &fx->res;
	struct gpunic_dev_cqe cqe;
	struct gt_args a;
	uint32_t bad;

	gt_fill(src, len, seed);
	memset(dst - GT_GUARD_BYTES, GT_GUARD, (size_t)len + 2 * GT_GUARD_BYTES);
	if (op == MLX5_OPCODE_RDMA_WRITE_IMM)
		gt_peer_post_recv(fx, 0, 0);
	else if (recv)
		gt_peer_post_recv(fx, GT_DST_OFF, len + GT_RECV_SLACK);

	gt_args_init(fx, &a);
	a.opcode = op;
	a.len = len;
	a.seed = seed;
	a.imm = imm ? gt_imm(seed) : 0;
	a.flags = inl ? GT_F_INLINE : 0;
	a.loff = read ? GT_DST_OFF : 0;
	a.roff = read ? 0 : GT_DST_OFF;
	gt_launch(fx, GT_K_XFER, &a, 1, 1);
	gt_wait(fx);
	if (r->finished != 1 || r->posted != 1 || r->scqes != 1)
		GT_FAIL(fx, "%s %u bytes: executor finished %u posted %u completions %u",
			gt_op_name(op), len, r->finished, r->posted, r->scqes);
	CHECK_EQ(r->scqe.opcode, MLX5_CQE_REQ);
	CHECK_EQ(r->scqe.wqe_opcode, op);
	CHECK_EQ(r->scqe.qpn, fx->g.qp->qp_num);

	if (recv) {
		if (!gt_peer_poll(fx, false, &cqe, GT_PEER_WAIT_NS))
			GT_FAIL(fx, "%s %u bytes: no receive completion at the peer",
				gt_op_name(op), len);
		if (cqe.opcode != gt_recv_cqe_opcode(op) || cqe.byte_cnt != len)
			GT_FAIL(fx, "%s %u bytes: peer CQE opcode 0x%x (syndrome 0x%x) bytes %u",
				gt_op_name(op), len, cqe.opcode, cqe.syndrome, cqe.byte_cnt);
		CHECK_EQ(cqe.qpn, fx->c.qp->qp_num);
		CHECK(!cqe.data_in_cqe);
		if (imm)
			CHECK_EQ(cqe.imm, gt_imm(seed));
	}
	if (fx->o.type == GPUNIC_QPT_UC && op == MLX5_OPCODE_RDMA_WRITE)
		bad = gt_await_pattern(dst, len, seed);
	else
		bad = gt_mismatch(dst, len, seed);
	if (bad != len)
		GT_FAIL(fx, "%s %u bytes%s: byte %u differs (0x%02x, want 0x%02x)", gt_op_name(op),
			len, inl ? " inline" : "", bad, dst[bad], gt_pat(seed, bad));
	if (!rig_all(dst - GT_GUARD_BYTES, GT_GUARD_BYTES, GT_GUARD) ||
	    !rig_all(dst + len, GT_GUARD_BYTES, GT_GUARD))
		GT_FAIL(fx, "%s %u bytes: written outside the destination", gt_op_name(op), len);
}

/*
 * Case 1: every size of one opcode, by SGE and (where it fits and the opcode allows) inline.
 * @sizes NULL: 0, 1, 31, 32, 33, PMTU-1, PMTU, PMTU+1, 64 KiB and 1 MiB.
 */
static inline void gt_xfer_suite(const struct gt_backend *be, enum gpunic_qp_type type,
				 enum gpunic_handler_mode mode, uint8_t op, const uint32_t *sizes,
				 size_t nsizes)
{
	struct gt_opts o = { .type = type, .mode = mode };
	uint32_t all[10], seed = op * 1000u;
	struct gt_fix fx;
	size_t i;

	gt_setup(&fx, be, &o);
	if (!sizes) {
		uint32_t pmtu = gt_pmtu(&fx);
		const uint32_t def[10] = { 0, 1, 31, 32, 33, pmtu - 1, pmtu, pmtu + 1, 65536,
					   1u << 20 };

		memcpy(all, def, sizeof(all));
		sizes = all;
		nsizes = 10;
	}
	for (i = 0; i < nsizes; i++) {
		gt_xfer_one(&fx, op, sizes[i], false, ++seed);
		if (op != MLX5_OPCODE_RDMA_READ && sizes[i] <= fx.g.dq.max_inline)
			gt_xfer_one(&fx, op, sizes[i], true, ++seed);
	}
	printf("%s %s %s: %zu sizes, max_inline %u\n", be->name,
	       type == GPUNIC_QPT_RC ? "RC" : "UC", gt_op_name(op), nsizes, fx.g.dq.max_inline);
	gt_teardown(&fx);
}

/* ---------------------------------------------------------------- case 2: receives */

/*
 * Case 2: the peer sends SENDs, SEND_IMMs and WRITE_IMMs of many sizes to the executor, which
 * posts a buffer receive for each SEND and a zero-length one for each WRITE_IMM, then checks
 * every completion (gt_body_recv). Here: every byte around the messages stayed untouched, and
 * nothing that landed in a CQE was also written to the buffer.
 */
static inline void gt_recv_case(const struct gt_backend *be, enum gpunic_qp_type type,
				enum gpunic_handler_mode mode, bool scatter)
{
	const uint8_t S = MLX5_OPCODE_SEND, SI = MLX5_OPCODE_SEND_IMM,
		      WI = MLX5_OPCODE_RDMA_WRITE_IMM;
	struct gt_opts o = { .type = type, .mode = mode, .scatter = scatter };
	struct gpunic_dev_cqe cqe;
	uint32_t i, off, end, pmtu;
	uint64_t t_end;
	struct gt_args a;
	struct gt_fix fx;
	struct gt_msg *m;

	gt_setup(&fx, be, &o);
	pmtu = gt_pmtu(&fx);
	{
		const struct {
			uint8_t op;
			uint32_t len;
		} plan[] = {
			{ S, 0 }, { S, 1 }, { SI, 1 }, { S, 31 }, { SI, 32 }, { S, 32 },
			{ S, 33 }, { SI, 33 }, { WI, 0 }, { WI, 1 }, { WI, 31 }, { WI, 32 },
			{ WI, 33 }, { S, pmtu - 1 }, { SI, pmtu }, { S, pmtu + 1 },
			{ WI, pmtu - 1 }, { WI, pmtu }, { WI, pmtu + 1 }, { S, 65536 },
			{ WI, 65536 }, { SI, 4000 }, { S, 7 }, { WI, 5 },
		};

		gt_args_init(&fx, &a);
		a.flags = scatter ? GT_F_SCATTER : 0;
		a.nmsg = sizeof(plan) / sizeof(plan[0]);
		CHECK(a.nmsg <= GT_MAX_MSG);
		off = GT_GUARD_BYTES;
		for (i = 0; i < a.nmsg; i++) {
			m = &a.msg[i];
			m->op = plan[i].op;
			m->len = plan[i].len;
			m->off = off;
			m->seed = 500 + i;
			off += (plan[i].len + GT_RECV_SLACK + GT_GUARD_BYTES + 63) & ~63u;
		}
		end = off;
	}
	CHECK(end < GT_BUF_BYTES);
	memset(fx.g.buf, GT_GUARD, end);
	for (i = 0; i < a.nmsg; i++)
		gt_fill(fx.c.buf + a.msg[i].off, a.msg[i].len, a.msg[i].seed);

	gt_launch(&fx, GT_K_RECV, &a, 1, 1);
	t_end = rig_ns() + GT_PEER_WAIT_NS;
	while (!__atomic_load_n(&fx.ctl->ready, __ATOMIC_ACQUIRE)) {
		if (rig_ns() > t_end) {
			__atomic_store_n(&fx.ctl->stop, 1, __ATOMIC_RELEASE);
			gt_wait(&fx);
			GT_FAIL(&fx, "the executor never posted its receives");
		}
		sched_yield();
	}
	if (fx.ctl->ready != 1)
		gt_wait(&fx);	/* reports why posting failed */
	for (i = 0; i < a.nmsg; i++) {
		m = &a.msg[i];
		gt_peer_post(&fx, m->op, m->off, m->len,
			     m->op == WI ? (uint64_t)(uintptr_t)(fx.g.buf + m->off) : 0,
			     m->op == WI ? fx.g.mr->rkey : 0, m->op == S ? 0 : gt_imm(m->seed));
	}
	for (i = 0; i < a.nmsg; i++) {
		if (!gt_peer_poll(&fx, true, &cqe, GT_PEER_WAIT_NS))
			GT_FAIL(&fx, "peer: send completion %u did not come", i);
		if (cqe.opcode != MLX5_CQE_REQ)
			GT_FAIL(&fx, "peer: send CQE %u opcode 0x%x syndrome 0x%x", i, cqe.opcode,
				cqe.syndrome);
	}
	gt_wait(&fx);
	CHECK_EQ(fx.res.finished, 1);
	CHECK_EQ(fx.res.rcqes, a.nmsg);

	CHECK(rig_all(fx.g.buf, GT_GUARD_BYTES, GT_GUARD));
	for (i = 0; i < a.nmsg; i++) {
		uint32_t next = i + 1 < a.nmsg ? a.msg[i + 1].off : end;
		uint32_t keep = gt_recv_in_cqe(&a, &a.msg[i]) ? 0 : a.msg[i].len;

		m = &a.msg[i];
		if (keep && gt_mismatch(fx.g.buf + m->off, keep, m->seed) != keep)
			GT_FAIL(&fx, "message %u (%s, %u bytes): payload in memory", i,
				gt_op_name(m->op), m->len);
		if (!rig_all(fx.g.buf + m->off + keep, next - m->off - keep, GT_GUARD))
			GT_FAIL(&fx, "message %u (%s, %u bytes, %s): bytes beyond it were written",
				i, gt_op_name(m->op), m->len, keep ? "in memory" : "in the CQE");
	}
	printf("%s receive %s scatter %s: %u messages\n", be->name,
	       type == GPUNIC_QPT_RC ? "RC" : "UC", scatter ? "on" : "off", a.nmsg);
	gt_teardown(&fx);
}

/* ---------------------------------------------------------------- cases 3 and 4: many posters */

/* After a many-poster run: counts, the queue's counters, every chunk and the guards. */
static inline void gt_posters_check(struct gt_fix *fx, const struct gt_args *a, uint32_t want,
				    uint32_t bbs)
{
	uint32_t total = a->nposters * a->per_poster, c, bad;
	const struct gt_result *r = &fx->res;
	struct gpunic_dev_qp_state st;
	const uint8_t *dst = fx->c.buf + a->roff;

	if (r->finished != a->nposters || r->posted != total || r->scqes != want || !r->consumed)
		GT_FAIL(fx, "finished %u of %u, posted %u of %u, completions %u of %u", r->finished,
			a->nposters, r->posted, total, r->scqes, want);
	gt_read_state(fx, &st);
	if (st.sq_reserved != bbs || st.sq_ready != bbs || st.sq_submitted != bbs ||
	    st.sq_completed != bbs || st.sq_db_lock || st.scq_ci != want)
		GT_FAIL(fx,
			"state: reserved %u ready %u submitted %u completed %u (want %u) lock %u "
			"scq_ci %u (want %u)",
			st.sq_reserved, st.sq_ready, st.sq_submitted, st.sq_completed, bbs,
			st.sq_db_lock, st.scq_ci, want);
	for (c = 0; c < total; c++) {
		const uint8_t *p = dst + (size_t)c * a->chunk;
		uint32_t seed = gt_chunk_seed(c);

		/* UC: a send completion says the WRITE left, not that it landed. */
		bad = fx->o.type == GPUNIC_QPT_UC ? gt_await_pattern(p, a->chunk, seed) :
						    gt_mismatch(p, a->chunk, seed);
		if (bad != a->chunk)
			GT_FAIL(fx, "chunk %u (poster %u, request %u): byte %u differs", c,
				c / a->per_poster, c % a->per_poster, bad);
	}
	if (!rig_all(dst - GT_GUARD_BYTES, GT_GUARD_BYTES, GT_GUARD) ||
	    !rig_all(dst + (size_t)total * a->chunk, GT_GUARD_BYTES, GT_GUARD))
		GT_FAIL(fx, "written outside the chunks");
}

static inline void gt_posters_prepare(struct gt_fix *fx, struct gt_args *a, uint32_t nposters,
				      uint32_t per_poster, uint32_t chunk)
{
	size_t total = (size_t)nposters * per_poster * chunk;

	gt_args_init(fx, a);
	a->nposters = nposters;
	a->per_poster = per_poster;
	a->chunk = chunk;
	a->roff = GT_DST_OFF;
	CHECK(total + GT_DST_OFF + GT_GUARD_BYTES <= GT_BUF_BYTES);
	memset(fx->c.buf + GT_DST_OFF - GT_GUARD_BYTES, GT_GUARD, total + 2 * GT_GUARD_BYTES);
}

/*
 * Case 3: @blocks x @threads threads share the send queue through gpunic_dev_post_send_mt, each
 * WRITEing @per_poster chunks of @chunk bytes with its own pattern; one more thread consumes the
 * send CQ. A send queue of @max_send_wr WQEs, smaller than the run, makes posters wait for room.
 */
static inline void gt_mt_case(const struct gt_backend *be, enum gpunic_qp_type type,
			      enum gpunic_handler_mode mode, uint32_t blocks, uint32_t threads,
			      uint32_t per_poster, uint32_t chunk, uint32_t max_send_wr)
{
	struct gt_opts o = { .type = type, .mode = mode, .max_send_wr = max_send_wr,
			     .cqe = 4 * max_send_wr };
	uint32_t want, bbs;
	struct gt_args a;
	struct gt_fix fx;

	gt_setup(&fx, be, &o);
	gt_posters_prepare(&fx, &a, blocks * threads, per_poster, chunk);
	/* No run of unsignalled WQEs is longer than one per poster (gt_mt_signalled). */
	CHECK(fx.g.dq.sq_wqebb_cnt > a.nposters);
	gt_expect(&a, &fx.g.dq, 0, &want, &bbs);
	a.want_scqes = want;
	gt_launch(&fx, GT_K_MT, &a, blocks, threads);
	gt_wait(&fx);
	gt_posters_check(&fx, &a, want, bbs);
	printf("%s %s mt %ux%u: %u WRITEs of %u bytes, %u completions, %u retries on a full "
	       "queue of %u blocks, %.3f ms\n",
	       be->name, mode == GPUNIC_HANDLER_CPU_PROXY ? "CPU_PROXY" : "GPU_DB", blocks,
	       threads, a.nposters * per_poster, chunk, want, fx.res.enomem,
	       fx.g.dq.sq_wqebb_cnt, (double)fx.res.ns / 1e6);
	gt_teardown(&fx);
}

/*
 * Case 4: @blocks x @warps_per_block warps post through gpunic_dev_post_send_warp, batches of
 * @nwr_max requests (@full) or of 1..@nwr_max (partial warps), every third chunk inline when
 * @inl; one more thread consumes the send CQ.
 */
static inline void gt_warp_case(const struct gt_backend *be, enum gpunic_handler_mode mode,
				uint32_t blocks, uint32_t warps_per_block, uint32_t per_warp,
				uint32_t chunk, uint32_t nwr_max, bool full, bool inl)
{
	struct gt_opts o = { .type = GPUNIC_QPT_RC, .mode = mode, .max_send_wr = 128,
			     .cqe = 1024 };
	uint32_t want, bbs;
	struct gt_args a;
	struct gt_fix fx;

	gt_setup(&fx, be, &o);
	gt_posters_prepare(&fx, &a, blocks * warps_per_block, per_warp, chunk);
	a.nwr_max = nwr_max;
	a.flags = (full ? GT_F_FULL : 0) | (inl ? GT_F_INLINE : 0);
	CHECK(nwr_max >= 1 && nwr_max <= GPUNIC_DEV_WARP_SIZE);
	CHECK(!inl || chunk <= fx.g.dq.max_inline);
	/* A whole batch fits beside the one unsignalled WQE a batch may leave behind. */
	CHECK(fx.g.dq.sq_wqebb_cnt >= 4 * nwr_max);
	gt_expect(&a, &fx.g.dq, 1, &want, &bbs);
	a.want_scqes = want;
	gt_launch(&fx, GT_K_WARP, &a, blocks, warps_per_block * GPUNIC_DEV_WARP_SIZE);
	gt_wait(&fx);
	gt_posters_check(&fx, &a, want, bbs);
	printf("%s %s warp %ux%u: %u WRITEs of %u bytes in %s batches (max %u)%s, %u completions, "
	       "%u retries, %.3f ms\n",
	       be->name, mode == GPUNIC_HANDLER_CPU_PROXY ? "CPU_PROXY" : "GPU_DB", blocks,
	       warps_per_block, a.nposters * per_warp, chunk, full ? "full" : "partial", nwr_max,
	       inl ? " with inline" : "", want, fx.res.enomem, (double)fx.res.ns / 1e6);
	gt_teardown(&fx);
}

/* ---------------------------------------------------------------- case 6: the forwarder */

#define GT_LOOP_SLOTS 64u
#define GT_LOOP_MSG 32u
#define GT_LOOP_WINDOW 16u        /* messages in flight, well below the ring's slots */
#define GT_LOOP_RECV_OFF (1u << 20) /* c: where the echoes land, 64 bytes each */
#define GT_LOOP_SEED 7000u

/* The forwarder's context on g's UC QP: a ring of GT_LOOP_SLOTS slots in g's buffer, zero-length
 * receives (WRITE_WITH_IMM) or receives into the slots (@send_mode). */
static inline void gt_loop_ctx(struct gt_fix *fx, struct gpunic_loop_ctx *ctx, bool send_mode)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->qp = &fx->g.dq;
	ctx->ring = fx->g.xbuf;
	ctx->ring_iova = (uint64_t)(uintptr_t)fx->g.buf;
	ctx->ring_lkey = fx->g.mr->lkey;
	ctx->slot_bytes = GPUNIC_LOOP_MAX_MSG;
	ctx->slots = GT_LOOP_SLOTS;
	ctx->signal_every = 16;
	ctx->recv_with_buffers = send_mode;
	CHECK((size_t)ctx->slots * ctx->slot_bytes <= GT_BUF_BYTES);
}

/* The peer sends message @n (@len bytes at @src in c's buffer): a SEND, or a WRITE_WITH_IMM into
 * ring slot n % slots, immediate = slot. */
static inline void gt_loop_send(struct gt_fix *fx, const struct gpunic_loop_ctx *ctx,
				bool send_mode, uint32_t src, uint32_t len, uint32_t n)
{
	uint32_t slot = n % ctx->slots;

	if (send_mode)
		gt_peer_post(fx, MLX5_OPCODE_SEND, src, len, 0, 0, 0);
	else
		gt_peer_post(fx, MLX5_OPCODE_RDMA_WRITE_IMM, src, len,
			     (uint64_t)(uintptr_t)fx->g.buf + (uint64_t)slot * ctx->slot_bytes,
			     fx->g.mr->rkey, slot);
}

/*
 * The peer's next reply, in *@cqe (its send completions checked on the way). Return: true with
 * one, false when none is there yet; fails the case when none came for GT_PEER_WAIT_NS since
 * *@idle_since (reset by every reply), after stopping the forwarder for its counters. @got,
 * @want, @sent: replies so far, expected, requests sent, for the message.
 */
static inline bool gt_loop_reply(struct gt_fix *fx, const struct gt_backend *be, void *loop,
				 struct gpunic_dev_cqe *cqe, uint64_t *idle_since, uint32_t got,
				 uint32_t want, uint32_t sent)
{
	struct gpunic_loop_ctx fin;

	while (gpunic_dev_poll_scq(&fx->c.dq, cqe))
		if (cqe->opcode != MLX5_CQE_REQ)
			GT_FAIL(fx, "sensor send CQE opcode 0x%x syndrome 0x%x", cqe->opcode,
				cqe->syndrome);
	if (gpunic_dev_poll_rcq(&fx->c.dq, cqe)) {
		*idle_since = rig_ns();
		return true;
	}
	if (rig_ns() - *idle_since > GT_PEER_WAIT_NS) {
		memset(&fin, 0, sizeof(fin));
		be->loop_stop(loop, &fin, fx->why, sizeof(fx->why));
		GT_FAIL(fx, "reply %u of %u did not come (sent %u); forwarder echoed %" PRIu64
			", errors %" PRIu64, got, want, sent, fin.echoed,
			fin.errors + fin.send_errors);
	}
	sched_yield();
	return false;
}

/* Stop the forwarder into *@fin: it must have sent @want replies and met no error. */
static inline void gt_loop_stop(struct gt_fix *fx, const struct gt_backend *be, void *loop,
				struct gpunic_loop_ctx *fin, uint32_t want)
{
	if (be->loop_stop(loop, fin, fx->why, sizeof(fx->why)))
		GT_FAIL(fx, "%s forwarder stop: %s", be->name, fx->why);
	if (fin->echoed != want || fin->errors || fin->send_errors)
		GT_FAIL(fx, "forwarder: sent %" PRIu64 " replies of %u, errors %" PRIu64
			" (last syndrome 0x%x)", fin->echoed, want, fin->errors + fin->send_errors,
			fin->last_syndrome);
}

/*
 * Case 6: the persistent forwarder (gpunic_loop_step) on g's UC QP, the peer as the sensor:
 * @nmsg messages of 32 bytes, as WRITE_WITH_IMM into ring slot i % slots with immediate = slot
 * (zero-length receives), or as SENDs into the receive buffers (@send_mode, scattered into the
 * CQE with @scatter). Each echo is checked: SEND, 32 bytes, the message (+1 per byte with
 * ADD_ONE) and nothing written past it.
 */
static inline void gt_loop_case(const struct gt_backend *be, enum gpunic_handler_mode mode,
				bool send_mode, uint32_t work, bool scatter, uint32_t nmsg)
{
	struct gt_opts o = { .type = GPUNIC_QPT_UC, .mode = mode, .scatter = scatter,
			     .max_recv_wr = GT_LOOP_SLOTS };
	struct gpunic_loop_ctx ctx, fin;
	uint32_t sent = 0, echoed = 0, k;
	struct gpunic_dev_cqe cqe;
	uint64_t t0, idle_since;
	void *loop = NULL;
	struct gt_fix fx;
	uint8_t *echo;

	gt_setup(&fx, be, &o);
	memset(&fin, 0, sizeof(fin));
	gt_loop_ctx(&fx, &ctx, send_mode);
	ctx.work = work;
	if (be->loop_start(&ctx, &loop, fx.why, sizeof(fx.why)))
		GT_FAIL(&fx, "%s forwarder start: %s", be->name, fx.why);

	for (k = 0; k < GT_LOOP_WINDOW; k++) {
		memset(fx.c.buf + GT_LOOP_RECV_OFF + k * 64, GT_GUARD, 64);
		gt_peer_post_recv(&fx, GT_LOOP_RECV_OFF + k * 64, 64);
	}
	t0 = rig_ns();
	idle_since = t0;
	while (echoed < nmsg) {
		while (sent < nmsg && sent - echoed < GT_LOOP_WINDOW) {
			uint32_t src = (sent % GT_LOOP_SLOTS) * 64;

			gt_fill(fx.c.buf + src, GT_LOOP_MSG, GT_LOOP_SEED + sent);
			gt_loop_send(&fx, &ctx, send_mode, src, GT_LOOP_MSG, sent);
			sent++;
		}
		if (!gt_loop_reply(&fx, be, loop, &cqe, &idle_since, echoed, nmsg, sent))
			continue;
		k = echoed % GT_LOOP_WINDOW;
		echo = fx.c.buf + GT_LOOP_RECV_OFF + k * 64;
		if (cqe.opcode != MLX5_CQE_RESP_SEND || cqe.byte_cnt != GT_LOOP_MSG)
			GT_FAIL(&fx, "echo %u: opcode 0x%x syndrome 0x%x bytes %u", echoed,
				cqe.opcode, cqe.syndrome, cqe.byte_cnt);
		for (uint32_t b = 0; b < GT_LOOP_MSG; b++) {
			uint8_t want = (uint8_t)(gt_pat(GT_LOOP_SEED + echoed, b) +
						 (work == GPUNIC_LOOP_WORK_ADD_ONE));

			if (echo[b] != want)
				GT_FAIL(&fx, "echo %u byte %u: 0x%02x, want 0x%02x", echoed, b,
					echo[b], want);
		}
		if (!rig_all(echo + GT_LOOP_MSG, 64 - GT_LOOP_MSG, GT_GUARD))
			GT_FAIL(&fx, "echo %u: written past its 32 bytes", echoed);
		memset(echo, GT_GUARD, 64);
		gt_peer_post_recv(&fx, GT_LOOP_RECV_OFF + k * 64, 64);
		echoed++;
	}
	gt_loop_stop(&fx, be, loop, &fin, nmsg);
	printf("%s forwarder %s%s%s: %u echoes in %.3f ms\n", be->name,
	       send_mode ? "SEND" : "WRITE_WITH_IMM", scatter ? " scatter" : "",
	       work == GPUNIC_LOOP_WORK_ADD_ONE ? " add-one" : "", nmsg,
	       (double)(rig_ns() - t0) / 1e6);
	gt_teardown(&fx);
}

/* ---------------------------------------------------------------- case 7: RPC in the forwarder */

#define GT_RPC_KINDS 12u
#define GT_RPC_SRC_STRIDE 2048u   /* c: each request's bytes, as sent */
#define GT_RPC_RECV_STRIDE 2048u  /* c: each response's receive */
#define GT_RPC_ID_NONE 0xb18ae409u /* "no_such_function": in no table */

/* What request @i is: its bytes in @buf, its length, and what the forwarder must answer. */
struct gt_rpc_req {
	uint32_t len;            /* bytes sent */
	uint32_t reason;         /* enum gpunic_rpc_reason the forwarder counts it under */
	bool droppable;          /* dropped when the table has GPUNIC_RPC_CUDAQ_DROPS */
	int32_t status;          /* the response's */
	uint32_t want_len;       /* its result bytes */
	uint8_t want[1024];
};

/*
 * Request @i: twelve kinds in turn, each size chosen for a path of the GPU's forwarder (the
 * fast path's answers in one block, a response longer than one block for a request the fast
 * path took, the thread-scope path for long requests), and every protocol fault.
 */
static inline void gt_rpc_request(uint32_t i, uint8_t *buf, struct gt_rpc_req *r)
{
	static const uint32_t arg_lens[GT_RPC_KINDS] = { 8, 20, 1, 36, 4, 200, 8, 8, 8, 0, 1000,
							 0 };
	uint32_t k = i % GT_RPC_KINDS, fid, arg_len = arg_lens[k];
	struct gpunic_rpc_header *h = (struct gpunic_rpc_header *)buf;
	uint8_t args[1024];

	fid = k == 1 || k == 10 ? GPUNIC_RPC_ID_ADD_ONE :
	      k == 2 || k == 9 ? GPUNIC_RPC_ID_SURFACE_D3 :
	      k == 4 ? GT_RPC_ID_NONE : GPUNIC_RPC_ID_ECHO;
	memset(r, 0, sizeof(*r));
	CHECK_EQ(gpunic_rpc_builtin_args(fid == GT_RPC_ID_NONE ? GPUNIC_RPC_ID_ECHO : fid, i, args,
					 arg_len), arg_len);
	r->len = gpunic_rpc_request_write(buf, GT_RPC_SRC_STRIDE, fid, args, arg_len, i,
					  0x5000000000ull + i);
	CHECK_EQ(r->len, GPUNIC_RPC_HEADER_BYTES + arg_len);
	r->reason = GPUNIC_RPC_R_OK;
	switch (k) {
	case 4:
		r->reason = GPUNIC_RPC_R_UNKNOWN_FUNCTION;
		r->droppable = true;
		break;
	case 6:
		h->magic = GPUNIC_RPC_MAGIC_RESPONSE;  /* a response where a request belongs */
		r->reason = GPUNIC_RPC_R_BAD_MAGIC;
		r->droppable = true;
		break;
	case 7:
		h->arg_len = 0xfffff000u;              /* past any slot */
		r->reason = GPUNIC_RPC_R_TOO_LONG;
		break;
	case 8:
		h->arg_len = arg_len + 1;              /* one byte more than arrives */
		r->reason = GPUNIC_RPC_R_TRUNCATED;
		break;
	case 9:
		r->reason = GPUNIC_RPC_R_SCHEMA;       /* surface_d3 takes one byte */
		break;
	}
	if (r->reason == GPUNIC_RPC_R_OK)
		CHECK_EQ(gpunic_rpc_builtin_reference(fid, args, arg_len, r->want, sizeof(r->want),
						      &r->want_len), 0);
	else
		r->status = 1 - (int32_t)r->reason;
}

/*
 * Case 7: the forwarder as an RPC server (ctx.rpc: the built-in functions), @nmsg requests of
 * gt_rpc_request()'s kinds from the peer, as WRITE_WITH_IMM into ring slots or SENDs (@scatter:
 * those of at most 32 bytes in the CQE), @drops: the table drops unknown functions and bad
 * magic as CUDA-Q does. @polls: the GPU's polling warps (1 or 2). Every response is matched
 * by its request_id and checked whole (status, id, timestamp, results against the CPU
 * references); a dropped request gets none; the forwarder's counters hold every reason.
 */
static inline void gt_loop_rpc_case(const struct gt_backend *be, enum gpunic_handler_mode mode,
				    bool send_mode, bool scatter, bool drops, uint32_t polls,
				    uint32_t nmsg)
{
	struct gt_opts o = { .type = GPUNIC_QPT_UC, .mode = mode, .scatter = scatter,
			     .max_recv_wr = GT_LOOP_SLOTS };
	struct gpunic_rpc_counters want = { { 0 }, 0 };
	uint32_t sent = 0, answered = 0, expected = 0, completions = 0, k, id, i;
	struct gpunic_rpc_table table;
	struct gpunic_loop_ctx ctx, fin;
	struct gpunic_dev_cqe cqe;
	struct gt_rpc_req *req;
	uint64_t t0, idle_since;
	enum gpunic_rpc_check chk;
	uint8_t *got, *resp;
	void *loop = NULL;
	struct gt_fix fx;
	char why[256];

	req = calloc(nmsg, sizeof(*req));
	got = calloc(nmsg, 1);
	CHECK(req && got);
	gpunic_rpc_table_init(&table, drops ? GPUNIC_RPC_CUDAQ_DROPS : 0);
	CHECK_EQ(gpunic_rpc_register_builtins(&table, why, sizeof(why)), 0);
	gt_setup(&fx, be, &o);
	memset(&fin, 0, sizeof(fin));
	gt_loop_ctx(&fx, &ctx, send_mode);
	ctx.polls_in_flight = polls;
	ctx.rpc = &table;
	if (be->loop_start(&ctx, &loop, fx.why, sizeof(fx.why)))
		GT_FAIL(&fx, "%s forwarder start: %s", be->name, fx.why);

	for (k = 0; k < GT_LOOP_WINDOW; k++)
		gt_peer_post_recv(&fx, GT_LOOP_RECV_OFF + k * GT_RPC_RECV_STRIDE,
				  GT_RPC_RECV_STRIDE);
	t0 = rig_ns();
	idle_since = t0;
	for (;;) {
		/* a dropped request is done when it is sent: what stays in flight is answered,
		 * well inside the ring and the peer's receives */
		while (sent < nmsg && expected - answered < GT_LOOP_WINDOW) {
			uint32_t src = (sent % GT_LOOP_SLOTS) * GT_RPC_SRC_STRIDE;
			struct gt_rpc_req *r = &req[sent];

			gt_rpc_request(sent, fx.c.buf + src, r);
			want.by_reason[r->reason]++;
			if (drops && r->droppable)
				want.dropped++;
			else
				expected++;
			gt_loop_send(&fx, &ctx, send_mode, src, r->len, sent);
			sent++;
		}
		if (sent == nmsg && answered == expected)
			break;
		if (!gt_loop_reply(&fx, be, loop, &cqe, &idle_since, answered, expected, sent))
			continue;
		/* receives complete in the order they were posted */
		k = completions++ % GT_LOOP_WINDOW;
		resp = fx.c.buf + GT_LOOP_RECV_OFF + k * GT_RPC_RECV_STRIDE;
		if (cqe.opcode != MLX5_CQE_RESP_SEND || cqe.byte_cnt < GPUNIC_RPC_HEADER_BYTES)
			GT_FAIL(&fx, "response %u: opcode 0x%x syndrome 0x%x bytes %u", answered,
				cqe.opcode, cqe.syndrome, cqe.byte_cnt);
		memcpy(&id, resp + 12, 4);
		if (id >= sent || got[id] || (drops && req[id].droppable))
			GT_FAIL(&fx, "response %u names request %u (sent %u, answered before: %u)",
				answered, id, sent, id < sent ? got[id] : 0);
		chk = gpunic_rpc_response_check(resp, cqe.byte_cnt, id, 0x5000000000ull + id,
						req[id].status, req[id].want, req[id].want_len);
		if (chk != GPUNIC_RPC_CHECK_OK || cqe.byte_cnt != GPUNIC_RPC_HEADER_BYTES +
								  req[id].want_len)
			GT_FAIL(&fx, "request %u (kind %u, %u bytes): response of %u bytes: %s",
				id, id % GT_RPC_KINDS, req[id].len, cqe.byte_cnt,
				gpunic_rpc_check_name(chk));
		got[id] = 1;
		answered++;
		gt_peer_post_recv(&fx, GT_LOOP_RECV_OFF + k * GT_RPC_RECV_STRIDE,
				  GT_RPC_RECV_STRIDE);
	}
	gt_loop_stop(&fx, be, loop, &fin, expected);
	for (i = 0; i < GPUNIC_RPC_REASONS; i++)
		if (fin.rpc_counts.by_reason[i] != want.by_reason[i])
			GT_FAIL(&fx, "forwarder counted %" PRIu64 " %s, want %" PRIu64,
				fin.rpc_counts.by_reason[i], gpunic_rpc_reason_name(i),
				want.by_reason[i]);
	if (fin.rpc_counts.dropped != want.dropped)
		GT_FAIL(&fx, "forwarder dropped %" PRIu64 ", want %" PRIu64,
			fin.rpc_counts.dropped, want.dropped);
	printf("%s forwarder RPC %s%s%s, %u warp(s): %u requests, %u answered, %" PRIu64
	       " dropped, in %.3f ms\n", be->name, send_mode ? "SEND" : "WRITE_WITH_IMM",
	       scatter ? " scatter" : "", drops ? " dropping as CUDA-Q" : "", polls ? polls : 1,
	       nmsg, answered, fin.rpc_counts.dropped, (double)(rig_ns() - t0) / 1e6);
	gt_teardown(&fx);
	free(req);
	free(got);
}

#endif /* GT_FIXTURE_H */
