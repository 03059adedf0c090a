/* SPDX-License-Identifier: MIT */
/*
 * gpunic_dev.h atomic and NOP WQEs, byte for byte by the mlx5 PRM layout rdma-core's provider
 * writes (read by hand here, no code shared with the header): ctrl (opcode 0x11 / 0x12, ds 4),
 * raddr segment, atomic segment {swap_add, compare} big-endian, one 8-byte data segment; the
 * NOP's lone ctrl segment; the same WQE through gpunic_dev_post_send() with the operands in
 * struct gpunic_dev_send_wr; thread, shared and warp scope; and a completion's fields.
 */
#include "dev_fixture.h"

#define RADDR 0x00007f1122334450ull
#define RKEY 0xfeedf00du
#define LADDR 0x00007e0000001238ull
#define LKEY 0x00c0ffeeu

struct atomic_wqe {
	uint32_t opcode, idx, qpn, ds, fm_ce_se;
	uint8_t imm[4];
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add, compare;
	uint32_t byte_count, lkey;
	uint64_t addr;
};

static void dec_atomic(const struct fix *f, uint32_t idx, struct atomic_wqe *a)
{
	const uint8_t *c = dec_unit(f, idx, 0), *r = dec_unit(f, idx, 1);
	const uint8_t *s = dec_unit(f, idx, 2), *d = dec_unit(f, idx, 3);

	a->opcode = c[3];
	a->idx = rd_be16(c + 1);
	a->qpn = rd_be32(c + 4) >> 8;
	a->ds = c[7] & 0x3f;
	a->fm_ce_se = c[11];
	memcpy(a->imm, c + 12, 4);
	a->raddr = rd_be64(r);
	a->rkey = rd_be32(r + 8);
	CHECK_EQ(rd_be32(r + 12), 0);
	a->swap_add = rd_be64(s);
	a->compare = rd_be64(s + 8);
	a->byte_count = rd_be32(d);
	a->lkey = rd_be32(d + 4);
	a->addr = rd_be64(d + 8);
}

static void check_common(const struct fix *f, const struct atomic_wqe *a, uint32_t idx,
			 uint32_t opcode)
{
	static const uint8_t zero[4];

	CHECK_EQ(a->opcode, opcode);
	CHECK_EQ(a->idx, idx & 0xffff);
	CHECK_EQ(a->qpn, f->qp.qpn);
	CHECK_EQ(a->ds, 4);
	CHECK_MEM(a->imm, zero, 4);
	CHECK_EQ(a->raddr, RADDR);
	CHECK_EQ(a->rkey, RKEY);
	CHECK_EQ(a->byte_count, 8);
	CHECK_EQ(a->lkey, LKEY);
	CHECK_EQ(a->addr, LADDR);
}

TEST(atomic_cas_wqe_layout)
{
	struct atomic_wqe a;
	struct fix f;
	int64_t idx;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	idx = gpunic_dev_post_atomic_cas(&f.qp, GPUNIC_DEV_SEND_SIGNALED, LADDR, LKEY, RADDR, RKEY,
					 0x0102030405060708ull, 0x1112131415161718ull);
	CHECK_EQ(idx, 0);
	dec_atomic(&f, 0, &a);
	check_common(&f, &a, 0, 0x11);
	CHECK_EQ(a.fm_ce_se, 0x08);
	/* swap first, then compare (mlx5_wqe_atomic_seg) */
	CHECK_EQ(a.swap_add, 0x1112131415161718ull);
	CHECK_EQ(a.compare, 0x0102030405060708ull);
	CHECK_EQ(dec_unit(&f, 0, 2)[0], 0x11);	/* big-endian: the top byte first */
	CHECK_EQ(f.qp.state->sq_reserved, 1);	/* one basic block */
	fix_fini(&f);
}

TEST(atomic_fa_wqe_layout)
{
	struct atomic_wqe a;
	struct fix f;
	int64_t idx;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_post_nop(&f.qp, 0), 0);
	idx = gpunic_dev_post_atomic_fa(&f.qp, 0, LADDR, LKEY, RADDR, RKEY, 0xA0B0C0D0E0F00001ull);
	CHECK_EQ(idx, 1);
	dec_atomic(&f, 1, &a);
	check_common(&f, &a, 1, 0x12);
	CHECK_EQ(a.fm_ce_se, 0);
	CHECK_EQ(a.swap_add, 0xA0B0C0D0E0F00001ull);
	CHECK_EQ(a.compare, 0);
	fix_fini(&f);
}

/* NOP: the ctrl segment alone (ds 1), flags as asked, nothing after it. */
TEST(nop_wqe_layout)
{
	const uint8_t *c;
	struct fix f;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	memset(f.qp.sq_buf, 0xEE, 64);
	CHECK_EQ(gpunic_dev_post_nop(&f.qp, GPUNIC_DEV_SEND_SIGNALED | GPUNIC_DEV_SEND_FENCE), 0);
	c = dec_unit(&f, 0, 0);
	CHECK_EQ(c[3], 0x00);
	CHECK_EQ(rd_be16(c + 1), 0);
	CHECK_EQ(rd_be32(c + 4) >> 8, f.qp.qpn);
	CHECK_EQ(c[7] & 0x3f, 1);
	CHECK_EQ(c[11], 0x08 | 0x80);
	CHECK_EQ(rd_be32(c + 12), 0);
	CHECK_EQ(f.qp.state->sq_reserved, 1);
	fix_fini(&f);
}

/* The generic post with the operands in the request, in every scope, at a ring wrap. */
TEST(atomic_through_send_wr_all_scopes)
{
	struct gpunic_dev_send_wr wr, wrs[3];
	struct gpunic_dev_sge sge, sges[3];
	struct atomic_wqe a;
	struct fix f;
	int64_t idx;

	fix_init(&f, 4, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	/* three NOPs so that the next WQEs wrap past the end of the 4-block ring */
	for (int i = 0; i < 3; i++)
		CHECK(gpunic_dev_post_nop(&f.qp, 0) >= 0);
	f.qp.state->sq_completed = 3;	/* as if the NIC had completed them */
	gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_CS, 0, LADDR, LKEY, RADDR, RKEY, 5, 6);
	CHECK_EQ(gpunic_dev_send_wqe_bbs(&f.qp, &wr), 1);
	idx = gpunic_dev_post_send(&f.qp, &wr);
	CHECK_EQ(idx, 3);
	dec_atomic(&f, 3, &a);
	check_common(&f, &a, 3, 0x11);
	CHECK_EQ(a.swap_add, 6);
	CHECK_EQ(a.compare, 5);
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	f.qp.state->sq_completed = 4;

	idx = gpunic_dev_post_atomic_fa_mt(&f.qp, 0, LADDR, LKEY, RADDR, RKEY, 9);
	CHECK_EQ(idx, 4);
	dec_atomic(&f, 4, &a);
	check_common(&f, &a, 4, 0x12);
	CHECK_EQ(a.swap_add, 9);
	CHECK_EQ(rd_be32((const uint8_t *)&f.dbrec[1]), 5);	/* _mt rang the record */
	f.qp.state->sq_completed = 5;

	for (int i = 0; i < 3; i++)
		gpunic_dev_atomic_wr(&wrs[i], &sges[i], MLX5_OPCODE_ATOMIC_FA, 0, LADDR, LKEY,
				     RADDR, RKEY, 100 + (uint64_t)i, 0);
	CHECK_EQ(gpunic_dev_post_send_warp(&f.qp, wrs, 3), 5);
	for (int i = 0; i < 3; i++) {
		dec_atomic(&f, 5 + (uint32_t)i, &a);
		check_common(&f, &a, 5 + (uint32_t)i, 0x12);
		CHECK_EQ(a.swap_add, 100 + (uint64_t)i);
	}
	fix_fini(&f);
}

/* A send CQE for an atomic: opcode, byte count 8 and its WQE, as the softnic writes them. */
TEST(atomic_completion_fields)
{
	struct nic_cqe c;
	struct gpunic_dev_cqe out;
	struct fix f;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_post_atomic_fa(&f.qp, GPUNIC_DEV_SEND_SIGNALED, LADDR, LKEY, RADDR,
					   RKEY, 1), 0);
	memset(&c, 0, sizeof(c));
	c.opcode = MLX5_CQE_REQ;
	c.wqe_counter = 0;
	c.qpn = f.qp.qpn;
	c.wqe_opcode = MLX5_OPCODE_ATOMIC_FA;
	c.byte_cnt = 8;
	nic_write_cqe(&f.qp.scq, 0, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
	CHECK_EQ(out.opcode, MLX5_CQE_REQ);
	CHECK_EQ(out.wqe_opcode, MLX5_OPCODE_ATOMIC_FA);
	CHECK_EQ(out.byte_cnt, 8);
	CHECK_EQ(out.wqe_idx, 0);
	CHECK(gpunic_dev_sq_done(&f.qp, 0));
	fix_fini(&f);
}
