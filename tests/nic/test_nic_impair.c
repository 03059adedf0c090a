// SPDX-License-Identifier: MIT
/* Over a link that drops, reorders, duplicates and corrupts 5% of frames each: RC delivers
 * every message intact and in order; UC delivers only complete, intact messages and the rest
 * shows up in the counters. */
#include "nic_fixture.h"

#define IMP_MSGS 300
#define IMP_SLOT 8192
#define IMP_SLOTS 32
#define IMP_OUTSTANDING 16

static const struct gpunic_impair_attr imp = {
	.seed = 0x5EED,
	.drop_ppm = 50000,
	.reorder_ppm = 50000,
	.duplicate_ppm = 50000,
	.corrupt_ppm = 50000,
};

static uint32_t msg_len(uint32_t i)
{
	return (i * 977u) % 5000u;	/* 0..4999: single and multi-packet at PMTU 1024 */
}

/* Post and reap until every message is through (RC) or sent and settled (UC).
 * Return: messages delivered. */
static uint32_t stream(struct fixture *fx)
{
	struct player *s = &fx->a, *d = &fx->b;
	uint32_t sent = 0, done = 0, got = 0;
	bool rc = fx->o.type == GPUNIC_QPT_RC;
	uint64_t end = fx_now_ns() + FX_WAIT_NS, quiet = 0;
	struct gpunic_dev_cqe cqe;

	for (uint32_t k = 0; k < IMP_SLOTS; k++)
		fx_post_recv(d, FX_DST_OFF + k * IMP_SLOT, IMP_SLOT);
	while (rc ? got < IMP_MSGS : (done < IMP_MSGS || fx_now_ns() < quiet)) {
		CHECK(fx_now_ns() < end);
		while (sent < IMP_MSGS && sent - done < IMP_OUTSTANDING) {
			uint32_t off = (sent % IMP_SLOTS) * IMP_SLOT;

			fx_fill(s->buf + off, msg_len(sent), sent);
			CHECK(fx_post(s, MLX5_OPCODE_SEND_IMM, GPUNIC_DEV_SEND_SIGNALED, off,
				      msg_len(sent), d, 0, sent) >= 0);
			sent++;
		}
		pump(fx);
		while (gpunic_dev_poll_scq(&s->dq, &cqe)) {
			CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
			if (++done == IMP_MSGS)
				quiet = fx_now_ns() + 200000000ull;
		}
		while (gpunic_dev_poll_rcq(&d->dq, &cqe)) {
			uint32_t slot = FX_DST_OFF + (got % IMP_SLOTS) * IMP_SLOT;

			CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
			/* RC: exactly the next one; UC: a later one, never an older one */
			if (rc)
				CHECK_EQ(cqe.imm, got);
			CHECK(cqe.imm < IMP_MSGS);
			CHECK_EQ(cqe.byte_cnt, msg_len(cqe.imm));
			CHECK(fx_check(d->buf + slot, cqe.byte_cnt, cqe.imm));
			fx_post_recv(d, slot, IMP_SLOT);
			got++;
		}
	}
	return got;
}

static uint64_t impair_events(struct player *p)
{
	struct gpunic_nic_counters c;

	CHECK_EQ(gpunic_nic_query_counters(p->nic, &c), 0);
	return c.drops[GPUNIC_DROP_BAD_ICRC] + c.drops[GPUNIC_DROP_MALFORMED] +
	       c.drops[GPUNIC_DROP_PSN] + c.drops[GPUNIC_DROP_OPCODE_SEQUENCE];
}

TEST(rc_impaired_link_delivers_all_in_order)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .impair = &imp, .timeout = 10,
			     .retry_cnt = 7, .psn_a = 0xFFFF00 };
	struct gpunic_qp_counters c;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK_EQ(stream(&fx), IMP_MSGS);
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &c), 0);
	CHECK(c.retransmits > 0);
	CHECK(impair_events(&fx.b) > 0);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_RTS);
	fx_teardown(&fx);
}

TEST(uc_impaired_link_delivers_only_whole_messages)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC, .impair = &imp };
	struct fixture fx;
	uint32_t got;

	fx_setup(&fx, FX_LINK_SHM, &o);
	got = stream(&fx);
	CHECK(got > IMP_MSGS / 2);
	CHECK(got < IMP_MSGS);
	CHECK(impair_events(&fx.b) > 0);
	fx_teardown(&fx);
}

/* RC READ and WRITE under the same impairments: the data arrives whole. */
TEST(rc_impaired_link_read_write)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .impair = &imp, .timeout = 10,
			     .retry_cnt = 7, .mtu = GPUNIC_MTU_512 };
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	for (uint32_t i = 0; i < 20; i++) {
		fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_READ, 20000 + i * 1000, i);
		fx_xfer(&fx, &fx.b, &fx.a, MLX5_OPCODE_RDMA_WRITE_IMM, 20000 + i * 777, 100 + i);
	}
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_READ, 1u << 20, 1000);
	fx_teardown(&fx);
}
