/* SPDX-License-Identifier: MIT */
/*
 * Stale and torn lines the softnic must not act on, built deterministically: this thread plays
 * the data path of a GPU_BF queue pair on a CPU-executor NIC (gpunic_dev.h on host memory) and
 * runs that NIC's engine itself (gpunic_nic_poll: its thread is not started), so every state
 * the softnic reads is one the data path may legally leave between two of its stores. The peer
 * is a plain CPU NIC with its engine on a thread. A case FAILS, saying "FINDING n", when the
 * softnic executes a line it should have read again (tests/tear/README.md, "findings").
 *
 * The cases whose finding stands are registered DISABLED (CMakeLists.txt); run one by hand:
 *     <build>/tests/tear/test_tear_repro <case>
 *
 * Every wait is bounded: a number of engine polls, or TEAR_WAIT_NS without progress.
 */
#include <sched.h>

#include "tear_fixture.h"

static int repro_probe(char *why, size_t n)
{
	(void)why;
	(void)n;
	return 0;
}

static int repro_read_state(const struct gpunic_dev_qp_state *xstate,
			    struct gpunic_dev_qp_state *out, char *why, size_t n)
{
	(void)why;
	(void)n;
	memcpy(out, xstate, sizeof(*out));
	return 0;
}

/* Only the fixture's setup is used: the data path and g's engine run on this thread. */
static const struct tear_backend repro_backend = {
	.name = "cpu",
	.gpu = 0,
	.probe = repro_probe,
	.read_state = repro_read_state,
};

/* Enough engine polls for the softnic to have done all it can with what it sees now. */
#define REPRO_POLLS 16

static void repro_poll(struct tear_fix *fx, int n)
{
	for (int k = 0; k < n; k++)
		gpunic_nic_poll(fx->g.nic, 64);
}

/* The peer's next receive, polling g meanwhile; fails after TEAR_WAIT_NS. */
static void repro_recv(struct tear_fix *fx, struct gpunic_dev_cqe *cqe, const char *what)
{
	uint64_t end = rig_ns() + TEAR_WAIT_NS;

	while (!gpunic_dev_poll_rcq(&fx->c.dq, cqe)) {
		if (rig_ns() > end)
			TEAR_FAIL(fx, "%s never arrived", what);
		repro_poll(fx, 1);
		sched_yield();
	}
}

static void repro_fill(uint8_t *msg, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		msg[k] = tear_pat(seed, k);
}

/*
 * WQE @idx as the library builds it for a BlueFlame page, sealed, into the scratch lines @sring
 * and @sbf (a one-WQEBB shadow of @dq), not into @dq's queue: an inline SEND_IMM of the 40
 * pattern bytes @msg of @seed, immediate @imm, with @flags.
 */
static void repro_scratch_wqe(const struct gpunic_dev_qp *dq, uint32_t idx, uint32_t seed,
			      uint32_t imm, uint8_t flags, uint8_t msg[40], uint64_t sring[8],
			      uint64_t sbf[8])
{
	struct gpunic_dev_qp shadow;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	int ds;

	repro_fill(msg, 40, seed);
	sge.addr = (uint64_t)(uintptr_t)msg;
	sge.length = 40;
	sge.lkey = 0;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = MLX5_OPCODE_SEND_IMM;
	wr.flags = GPUNIC_DEV_SEND_INLINE | flags;
	wr.num_sge = 1;
	wr.imm = imm;
	wr.sg_list = &sge;
	shadow = *dq;
	shadow.sq_buf = (uint8_t *)sring;
	shadow.sq_wqebb_cnt = 1;
	shadow.bf = (uint8_t *)sbf;
	shadow.bf_lines = 1;
	memset(sring, 0, 64);
	memset(sbf, 0, 64);
	ds = gpunic_dev_send_wqe_ds(&shadow, &wr);
	CHECK(ds == 4);
	gpunic_dev_wqe_write_send(&shadow, idx, &wr, (uint32_t)ds);
}

/*
 * Finding 1 (src/nic/req.c at db3823c; fixed by 6411af0, "a ctrl names QP and size"). A fresh
 * (or reset) queue pair's ring is zeroed, and a zeroed ctrl segment names WQE index 0 with a zero seal field, which wqe_consistent() takes
 * for "unsealed: checked by its index alone". So when the producer covers WQE 0 before WQE 0's
 * bytes land, which the GPU fast path allows in GPU_BF mode (loop_dev.h: ring copy, BlueFlame
 * line, then the record by a relaxed store with no fence: "the NIC takes a sealed WQE when it
 * is whole, whatever arrives first"), the softnic executes the zeroed slot: ds 0,
 * LOCAL_QP_OP_ERR, and the queue pair goes to ERR before the real WQE 0 lands.
 *
 * Here: the record says 1 while WQE 0 is not written at all; the engine polls; the queue pair
 * must still be in RTS with no completion; WQE 0, written then, must be what reaches the peer.
 */
TEST(zero_ring_slot_not_taken_as_wqe_0)
{
	struct tear_opts o = { .type = GPUNIC_QPT_UC, .mode = GPUNIC_HANDLER_GPU_BF,
			       .manual_g = true };
	struct gpunic_qp_counters qc;
	struct gpunic_dev_cqe cqe;
	uint8_t msg[8];
	struct tear_fix fx;

	tear_setup(&fx, &repro_backend, &o);
	memset(fx.c.buf, TEAR_GUARD, 64);
	tear_peer_post_recv(&fx, 0, 64);
	/* the record first, as a fence-less store may land */
	gpunic_dev_store_relaxed_u32(&fx.g.dq.dbrec[MLX5_SND_DBR], gpunic_dev_htobe32(1));
	repro_poll(&fx, REPRO_POLLS);
	CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &qc), 0);
	if (qc.tx_messages)
		TEAR_FAIL(&fx, "FINDING 1: the softnic sent %" PRIu64 " message(s) for a zeroed "
			  "ring slot", qc.tx_messages);
	if (gpunic_dev_poll_scq(&fx.g.dq, &cqe))
		TEAR_FAIL(&fx,
			  "FINDING 1: the softnic executed the zeroed ring slot of WQE 0 before it "
			  "was written: send CQE opcode 0x%x syndrome 0x%x, queue pair %s",
			  cqe.opcode, cqe.syndrome, gpunic_qp_state_name(fx.g.qp->state));
	CHECK_EQ(fx.g.qp->state, GPUNIC_QPS_RTS);
	/* now WQE 0, whole: it must be the one that goes out */
	repro_fill(msg, sizeof(msg), 0);
	CHECK_EQ(gpunic_dev_post_send_inline(&fx.g.dq, MLX5_OPCODE_SEND_IMM,
					     GPUNIC_DEV_SEND_SIGNALED, msg, sizeof(msg), 0, 0, 0),
		 0);
	CHECK_EQ(gpunic_dev_submit(&fx.g.dq), 0);
	repro_recv(&fx, &cqe, "WQE 0");
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(cqe.imm, 0);
	CHECK_EQ(tear_msg_mismatch(fx.c.buf, 64, sizeof(msg), 0), 64);
	printf("a zeroed ring slot under the record was waited for, then WQE 0 went out whole\n");
	tear_teardown(&fx);
}

/*
 * Finding 1, continued (db3823c and after 6411af0). The seal can be opted out of by the bytes
 * a tear leaves old: wqe_consistent() checks the seal only when bytes 9-10 carry its mark, and
 * otherwise takes the WQE by its ctrl (index, and since 6411af0 QPN and size), all in bytes 0-7.
 * A slot never written before (the ring's first lap) holds zeros in bytes 9-10, so a sealed WQE
 * of which only the first 8 bytes have landed (one 16-byte store seen in two halves) passes, and
 * the softnic executes bytes that are not written yet. The GPU fast path lets the record arrive
 * before the ring copy (relaxed store, no fence, in GPU_BF mode), which is when the softnic
 * reads the ring before the line.
 *
 * Fixed by the seal's second mark, bit 7 of the DS byte (GPUNIC_DEV_CTRL_SEALED_DS), which
 * sits in those same first 8 bytes: a ctrl that carries it runs only with its seal whole.
 *
 * Here, on a GPU executor's queue pair (the fake GPU): the record says 1, and of WQE 0's sealed
 * ring copy only bytes 0-7 are in the slot; the engine polls; nothing may go out until the rest
 * lands, and then WQE 0 itself.
 */
TEST(ring_slot_half_written_not_taken)
{
	/* a GPU executor's queue pair (on the fake GPU): its WQEs come sealed */
	struct tear_opts o = { .type = GPUNIC_QPT_UC, .mode = GPUNIC_HANDLER_GPU_BF,
			       .gpu_queues = true, .manual_g = true };
	struct gpunic_qp_counters qc;
	struct gpunic_dev_cqe cqe;
	uint64_t sring[8] __attribute__((aligned(64))), sbf[8] __attribute__((aligned(64)));
	uint8_t msg[40], *slot;
	struct tear_fix fx;
	uint32_t k;

	tear_setup(&fx, &repro_backend, &o);
	memset(fx.c.buf, TEAR_GUARD, 64);
	tear_peer_post_recv(&fx, 0, 64);
	/* WQE 0 as the library builds it for a BlueFlame page, sealed */
	repro_scratch_wqe(&fx.g.dq, 0, 0, 0x5eed, GPUNIC_DEV_SEND_SIGNALED, msg, sring, sbf);
	CHECK(gpunic_dev_wqe_seal_ok((const uint32_t *)sbf));
	/* the record, then the first 8 bytes of the ring copy */
	gpunic_dev_store_relaxed_u32(&fx.g.dq.dbrec[MLX5_SND_DBR], gpunic_dev_htobe32(1));
	slot = gpunic_dev_sq_seg(&fx.g.dq, 0, 0);
	__atomic_store_n((uint64_t *)(void *)slot, sbf[0], __ATOMIC_RELEASE);
	repro_poll(&fx, REPRO_POLLS);
	CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &qc), 0);
	if (qc.tx_messages || fx.g.qp->state != GPUNIC_QPS_RTS)
		TEAR_FAIL(&fx,
			  "FINDING 1: the softnic executed WQE 0 from a ring slot of which only "
			  "bytes 0-7 were written (the zero seal field of the old bytes read as "
			  "\"unsealed\"): %" PRIu64 " message(s) sent, queue pair %s",
			  qc.tx_messages, gpunic_qp_state_name(fx.g.qp->state));
	/* the rest lands: now WQE 0, whole */
	for (k = 1; k < 8; k++)
		__atomic_store_n((uint64_t *)(void *)slot + k, sbf[k], __ATOMIC_RELEASE);
	repro_recv(&fx, &cqe, "WQE 0");
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(cqe.imm, 0x5eed);
	CHECK_EQ(tear_msg_mismatch(fx.c.buf, 64, sizeof(msg), 0), 64);
	printf("a half-written ring slot under the record was waited for\n");
	tear_teardown(&fx);
}

/*
 * Finding 2. A BlueFlame line is trusted when its ctrl names the 16-bit WQE index the softnic
 * expects (and, sealed, its seal holds): req_bf_line. A line is rewritten only by a one-block
 * WQE whose index falls on it, so a line can keep a whole WQE while the send queue moves on
 * with larger WQEs, which go through the ring. 65536 blocks later the 16-bit index comes round
 * to the line's old WQE, which then passes every check and is executed in place of the WQE the
 * data path posted there (and the next one, stale the same way); the real WQE is never sent.
 *
 * Here: WQEs 0 and 1 are one-block inline SEND_IMMs (taken from their BlueFlame lines), then
 * two-block inline SEND_IMMs (60 bytes, through the ring and the record) from index 2 on, so
 * the index reaches 65536 = 0 (mod 2^16) at message 32769. Message s carries immediate s; the
 * peer must receive 0, 1, 2, ... in order, each with its own bytes.
 */
#define REPRO_ALIAS_MSGS 32800u
#define REPRO_ALIAS_WINDOW 32u

static uint32_t repro_alias_index(uint32_t s)
{
	return s < 2 ? s : 2 + 2 * (s - 2);
}

TEST(bf_line_index_alias_after_65536_blocks)
{
	struct tear_opts o = { .type = GPUNIC_QPT_UC, .mode = GPUNIC_HANDLER_GPU_BF,
			       .manual_g = true };
	uint32_t sent = 0, got = 0, len, k, off, idx;
	struct gpunic_dev_cqe cqe;
	uint8_t msg[64];
	struct tear_fix fx;
	int64_t r;

	tear_setup(&fx, &repro_backend, &o);
	CHECK(fx.c.dq.rq_wqe_cnt >= 64);
	for (k = 0; k < 64; k++) {
		memset(fx.c.buf + k * 64, TEAR_GUARD, 64);
		tear_peer_post_recv(&fx, k * 64, 64);
	}
	while (got < REPRO_ALIAS_MSGS) {
		while (sent < REPRO_ALIAS_MSGS && sent - got < REPRO_ALIAS_WINDOW) {
			len = sent < 2 ? 8 : 60;
			repro_fill(msg, len, sent);
			r = gpunic_dev_post_send_inline(&fx.g.dq, MLX5_OPCODE_SEND_IMM,
							sent % 8 == 7 ? GPUNIC_DEV_SEND_SIGNALED : 0,
							msg, len, 0, 0, sent);
			if (r == -ENOMEM)
				break;
			CHECK(r >= 0);
			CHECK_EQ((uint64_t)r, repro_alias_index(sent));
			CHECK_EQ(gpunic_dev_submit(&fx.g.dq), 0);
			sent++;
		}
		while (gpunic_dev_poll_scq(&fx.g.dq, &cqe))
			if (cqe.opcode != MLX5_CQE_REQ)
				TEAR_FAIL(&fx, "send CQE opcode 0x%x syndrome 0x%x", cqe.opcode,
					  cqe.syndrome);
		repro_recv(&fx, &cqe, "a message");
		len = got < 2 ? 8 : 60;
		off = (got % 64) * 64;
		idx = repro_alias_index(got);
		if (cqe.imm != got || cqe.byte_cnt != len)
			TEAR_FAIL(&fx,
				  "FINDING 2: message %u (WQE index %u, %u mod 65536) arrived as "
				  "message %u of %u bytes: the stale BlueFlame line %u was executed",
				  got, idx, idx & 0xffff, cqe.imm, cqe.byte_cnt,
				  (idx & 0xffff) % GPUNIC_DEV_BF_LINES);
		CHECK_EQ(tear_msg_mismatch(fx.c.buf + off, 64, len, got), 64);
		memset(fx.c.buf + off, TEAR_GUARD, 64);
		tear_peer_post_recv(&fx, off, 64);
		got++;
	}
	printf("%u messages, the 16-bit index wrapped, every one in order\n", got);
	tear_teardown(&fx);
}

/*
 * Finding 3 (the unsealed BlueFlame path of CPU executors, since 6411af0: req_bf_line when
 * !qp->bf_sealed). The line is trusted once its ctrl chunk, read first with acquire, names the
 * expected WQE (and says GPUNIC_DEV_BF_ORDERED); the rest is copied after it and never checked
 * again. But
 * the data path may be 64 WQEs ahead (the send queue has 128 blocks here), and then it rewrites
 * line i % 64 for WQE i + 64 while the softnic has not yet taken WQE i from it: it stores
 * chunks 1-3 first and the ctrl chunk last (gpunic_dev_priv_store_bb), so between those stores
 * the line still names WQE i and holds WQE i + 64's body. A softnic reading then sends WQE i's
 * header with WQE i + 64's payload. (A sealed line fails its seal in that state.)
 *
 * Here: WQEs 0-63 posted, one block each, not yet taken; then WQE 64's ring copy, the clearing
 * of line 0's ctrl chunk and chunks 1-3 of its line, exactly as gpunic_dev_priv_store_bb stores
 * them before the ctrl chunk; then the engine polls. The peer must receive message 0 with message
 * 0's bytes (from the ring: the line names no WQE while it is rewritten).
 */
TEST(bf_line_rewritten_under_the_reader)
{
	struct tear_opts o = { .type = GPUNIC_QPT_UC, .mode = GPUNIC_HANDLER_GPU_BF,
			       .manual_g = true };
	struct gpunic_dev_cqe cqe;
	uint64_t sring[8] __attribute__((aligned(64))), sbf[8] __attribute__((aligned(64)));
	uint8_t msg[40], *line0;
	struct tear_fix fx;
	uint32_t s, k;

	tear_setup(&fx, &repro_backend, &o);
	CHECK(fx.g.dq.sq_wqebb_cnt >= 128);
	for (k = 0; k < 64; k++) {
		memset(fx.c.buf + k * 64, TEAR_GUARD, 64);
		tear_peer_post_recv(&fx, k * 64, 64);
	}
	/* WQEs 0..63, whole, through their lines; the record follows (what submit does) */
	for (s = 0; s < 64; s++) {
		repro_fill(msg, sizeof(msg), s);
		CHECK_EQ(gpunic_dev_post_send_inline(&fx.g.dq, MLX5_OPCODE_SEND_IMM,
						     s == 63 ? GPUNIC_DEV_SEND_SIGNALED : 0, msg,
						     sizeof(msg), 0, 0, s),
			 s);
	}
	CHECK_EQ(gpunic_dev_submit(&fx.g.dq), 0);
	/* WQE 64 as the library builds it (into scratch lines), then its stores up to, not
	 * including, the ctrl chunk of line 0 */
	repro_scratch_wqe(&fx.g.dq, 64, 64, 64, 0, msg, sring, sbf);
	memcpy(gpunic_dev_sq_seg(&fx.g.dq, 64, 0), sring, 64);
	line0 = gpunic_dev_bf_line(&fx.g.dq, 64);
	CHECK(line0 == gpunic_dev_bf_line(&fx.g.dq, 0));
	/* gpunic_dev_priv_store_bb clears the ctrl chunk before it touches the body */
	__atomic_store_n((uint64_t *)line0, 0, __ATOMIC_RELAXED);
	for (k = 1; k < 4; k++)
		gpunic_dev_store16_relaxed(line0 + 16 * k, sbf[2 * k], sbf[2 * k + 1]);
	/* the softnic, at WQE 0, reads line 0 now */
	repro_recv(&fx, &cqe, "message 0");
	if (cqe.imm != 0 || cqe.byte_cnt != sizeof(msg) ||
	    tear_msg_mismatch(fx.c.buf, 64, sizeof(msg), 0) != 64)
		TEAR_FAIL(&fx,
			  "FINDING 3: message 0 went out with another WQE's bytes: imm %u, %u bytes, "
			  "byte %u differs (0x%02x; message 64's byte is 0x%02x): line 0 named WQE 0 "
			  "while it held WQE 64's body, and was executed",
			  cqe.imm, cqe.byte_cnt, tear_msg_mismatch(fx.c.buf, 64, sizeof(msg), 0),
			  fx.c.buf[tear_msg_mismatch(fx.c.buf, 64, sizeof(msg), 0) & 63],
			  tear_pat(64, tear_msg_mismatch(fx.c.buf, 64, sizeof(msg), 0) & 63));
	printf("a line rewritten under the reader was not taken for the WQE it still named\n");
	tear_teardown(&fx);
}

/*
 * A two-block WQE's BlueFlame copy, sealed over both lines (gpunic_dev_priv_store_bb), on a GPU
 * executor's queue pair: the softnic must not take it while either line is torn or stale, nor
 * its ring copy while that lacks its second block; once the second line is whole, the WQE goes
 * out once, with its own bytes.
 *
 * Here: WQE 0, an inline SEND_IMM of 80 bytes (ds 7), built sealed into scratch lines; the
 * record covers it; the first line whole in the page and the ring's first block too, but the
 * second line and the ring's second block still zero; the engine polls: nothing may go out, and
 * the torn sightings show in bf_torn and wqes_torn. Then the second line but its third chunk
 * (a unit of the WQE): still nothing. Then that chunk: the message, whole.
 */
TEST(bf_two_block_copy_half_written_not_taken)
{
	struct tear_opts o = { .type = GPUNIC_QPT_UC, .mode = GPUNIC_HANDLER_GPU_BF,
			       .gpu_queues = true, .manual_g = true };
	uint64_t sring[16] __attribute__((aligned(64))), sbf[16] __attribute__((aligned(64)));
	struct gpunic_qp_counters qc;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	struct gpunic_dev_qp shadow;
	struct gpunic_dev_cqe cqe;
	uint8_t msg[80], *line0, *line1;
	struct tear_fix fx;
	uint32_t k;
	int ds;

	tear_setup(&fx, &repro_backend, &o);
	memset(fx.c.buf, TEAR_GUARD, 128);
	tear_peer_post_recv(&fx, 0, 128);
	repro_fill(msg, sizeof(msg), 7);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uint64_t)(uintptr_t)msg;
	sge.length = sizeof(msg);
	sge.lkey = 0;
	wr.opcode = MLX5_OPCODE_SEND_IMM;
	wr.flags = GPUNIC_DEV_SEND_INLINE | GPUNIC_DEV_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.imm = 0x2b10c;
	wr.sg_list = &sge;
	shadow = fx.g.dq;
	shadow.sq_buf = (uint8_t *)sring;
	shadow.sq_wqebb_cnt = 2;
	shadow.bf = (uint8_t *)sbf;
	shadow.bf_lines = 2;
	memset(sring, 0, sizeof(sring));
	memset(sbf, 0, sizeof(sbf));
	ds = gpunic_dev_send_wqe_ds(&shadow, &wr);
	CHECK_EQ(ds, 7);
	gpunic_dev_wqe_write_send(&shadow, 0, &wr, (uint32_t)ds);
	CHECK(gpunic_dev_wqe_seal_ok_bbs((const uint32_t *)sbf, 2));
	CHECK_MEM(sring, sbf, 7 * 16);

	line0 = gpunic_dev_bf_line(&fx.g.dq, 0);
	line1 = gpunic_dev_bf_line(&fx.g.dq, 1);
	gpunic_dev_store_relaxed_u32(&fx.g.dq.dbrec[MLX5_SND_DBR], gpunic_dev_htobe32(2));
	memcpy(gpunic_dev_sq_seg(&fx.g.dq, 0, 0), sring, 64);
	for (k = 0; k < 4; k++)
		gpunic_dev_store16_relaxed(line0 + 16 * k, sbf[2 * k], sbf[2 * k + 1]);
	repro_poll(&fx, REPRO_POLLS);
	CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &qc), 0);
	if (qc.tx_messages || fx.g.qp->state != GPUNIC_QPS_RTS)
		TEAR_FAIL(&fx, "a two-block WQE went out with its second block unwritten: %" PRIu64
			  " message(s), queue pair %s", qc.tx_messages,
			  gpunic_qp_state_name(fx.g.qp->state));
	CHECK(qc.bf_torn > 0);
	CHECK(qc.wqes_torn > 0);

	/* the second line but chunk 6 of the WQE (its line's third) */
	for (k = 4; k < 8; k++)
		if (k != 6)
			gpunic_dev_store16_relaxed(line1 + 16 * (k - 4), sbf[2 * k], sbf[2 * k + 1]);
	repro_poll(&fx, REPRO_POLLS);
	CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &qc), 0);
	if (qc.tx_messages)
		TEAR_FAIL(&fx, "a two-block WQE went out with a unit of its second line unwritten");

	gpunic_dev_store16_relaxed(line1 + 32, sbf[12], sbf[13]);
	repro_recv(&fx, &cqe, "WQE 0");
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(cqe.imm, 0x2b10c);
	CHECK_EQ(cqe.byte_cnt, sizeof(msg));
	CHECK_EQ(tear_msg_mismatch(fx.c.buf, 128, sizeof(msg), 7), 128);
	repro_poll(&fx, REPRO_POLLS);
	CHECK_EQ(gpunic_qp_query_counters(fx.g.qp, &qc), 0);
	CHECK_EQ(qc.tx_messages, 1);
	CHECK_EQ(qc.bf_wqes, 1);
	printf("a two-block BlueFlame copy was taken only once both lines were whole\n");
	tear_teardown(&fx);
}
