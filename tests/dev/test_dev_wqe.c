/* SPDX-License-Identifier: MIT */
/*
 * gpunic_dev.h send and receive WQEs, byte for byte against the decoder in dev_fixture.h: every
 * opcode with SGEs and inline data, one and several basic blocks, ring wrap, flags, immediate
 * byte order, doorbell record / doorbell / mailbox, receive WQEs.
 */
#include "dev_fixture.h"

static const uint8_t all_opcodes[] = {
	MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM, MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
	MLX5_OPCODE_RDMA_READ,
};

static struct gpunic_dev_send_wr mkwr(uint8_t opcode, uint8_t flags,
				      const struct gpunic_dev_sge *sg, uint16_t n)
{
	struct gpunic_dev_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = opcode;
	wr.flags = flags;
	wr.num_sge = n;
	wr.imm = 0xa1b2c3d4;
	wr.remote_addr = 0x1122334455667788ull;
	wr.rkey = 0xfeedf00d;
	wr.sg_list = sg;
	return wr;
}

static int is_rdma(uint8_t op)
{
	return op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_RDMA_WRITE_IMM ||
	       op == MLX5_OPCODE_RDMA_READ;
}

static int has_imm(uint8_t op)
{
	return op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM;
}

/* Everything a WQE must say about @wr, posted at @idx. */
static void check_wqe(const struct fix *f, uint32_t idx, const struct gpunic_dev_send_wr *wr)
{
	static const uint8_t no_imm[4];
	const uint8_t imm_be[4] = { 0xa1, 0xb2, 0xc3, 0xd4 };
	struct dec_wqe d;
	uint32_t i, n = 0, len = 0, expect_fm = 0;
	uint8_t buf[DEC_MAX_INLINE];

	dec_wqe(f, idx, &d);
	CHECK_EQ(d.opmod, 0);
	CHECK_EQ(d.idx, idx & 0xffff);
	CHECK_EQ(d.opcode, wr->opcode);
	CHECK_EQ(d.qpn, f->qp.qpn);
	CHECK_EQ(d.signature, 0);
	CHECK_EQ(d.dci, 0);
	if (wr->flags & GPUNIC_DEV_SEND_SIGNALED)
		expect_fm |= 0x08;
	if (wr->flags & GPUNIC_DEV_SEND_SOLICITED)
		expect_fm |= 0x02;
	if (wr->flags & GPUNIC_DEV_SEND_FENCE)
		expect_fm |= 0x80;
	CHECK_EQ(d.fm_ce_se, expect_fm);
	CHECK_MEM(d.imm_bytes, has_imm(wr->opcode) ? imm_be : no_imm, 4);
	CHECK_EQ(d.has_raddr, is_rdma(wr->opcode));
	if (d.has_raddr) {
		CHECK_EQ(d.raddr, wr->remote_addr);
		CHECK_EQ(d.rkey, wr->rkey);
		CHECK_EQ(d.raddr_rsvd, 0);
	}
	if (wr->flags & GPUNIC_DEV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(buf + len, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		CHECK_EQ(d.is_inline, len != 0);
		CHECK_EQ(d.inl_len, len);
		CHECK_MEM(d.inl, buf, len);
		CHECK_EQ(d.ds, 1 + (uint32_t)is_rdma(wr->opcode) + (len ? (4 + len + 15) / 16 : 0));
		return;
	}
	CHECK(!d.is_inline);
	for (i = 0; i < wr->num_sge; i++) {
		if (!wr->sg_list[i].length)
			continue;
		CHECK(n < d.nsge);
		CHECK_EQ(d.sge[n].len, wr->sg_list[i].length);
		CHECK_EQ(d.sge[n].lkey, wr->sg_list[i].lkey);
		CHECK_EQ(d.sge[n].addr, wr->sg_list[i].addr);
		n++;
	}
	CHECK_EQ(d.nsge, n);
	CHECK_EQ(d.ds, 1 + (uint32_t)is_rdma(wr->opcode) + n);
}

/* Post through the thread-scope API and check the bytes and the counters. */
static uint32_t post_check(struct fix *f, const struct gpunic_dev_send_wr *wr)
{
	uint32_t before = f->qp.state->sq_reserved;
	int64_t idx = gpunic_dev_post_send(&f->qp, wr);
	struct dec_wqe d;

	CHECK(idx >= 0);
	CHECK_EQ(idx, before);
	check_wqe(f, (uint32_t)idx, wr);
	dec_wqe(f, (uint32_t)idx, &d);
	CHECK_EQ(f->qp.state->sq_reserved, before + dec_bbs(&d));
	CHECK_EQ(f->qp.state->sq_ready, before + dec_bbs(&d));
	CHECK_EQ(gpunic_dev_send_wqe_bbs(&f->qp, wr), dec_bbs(&d));
	return (uint32_t)idx;
}

/* Make room again as a NIC would: a signalled-looking CQE for the last WQE posted. */
static void complete_all(struct fix *f, uint32_t last_idx)
{
	struct nic_cqe c;
	struct gpunic_dev_cqe out;

	memset(&c, 0, sizeof(c));
	c.opcode = MLX5_CQE_REQ;
	c.wqe_counter = (uint16_t)last_idx;
	c.qpn = f->qp.qpn;
	nic_write_cqe(&f->qp.scq, f->scq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f->qp, &out), 1);
	CHECK_EQ(f->qp.state->sq_completed, f->qp.state->sq_reserved);
}

TEST(send_one_sge_layout)
{
	struct fix f;
	struct gpunic_dev_sge sg = { 0x0000700012345678ull, 1500, 0x00001234 };
	struct gpunic_dev_send_wr wr = mkwr(MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, &sg, 1);
	const uint8_t expect[32] = {
		0x00, 0x00, 0x00, 0x0a, 0xab, 0xcd, 0xef, 0x02, /* idx 0, SEND; qpn, ds 2 */
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, /* CE; imm 0 */
		0x00, 0x00, 0x05, 0xdc, 0x00, 0x00, 0x12, 0x34, /* 1500 bytes, lkey */
		0x00, 0x00, 0x70, 0x00, 0x12, 0x34, 0x56, 0x78, /* addr */
	};

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), 0);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), 0);
	CHECK_MEM(f.qp.sq_buf, expect, sizeof(expect));
	CHECK_EQ(f.qp.state->sq_reserved, 1);
	CHECK_EQ(f.qp.state->sq_ready, 1);
	/* Nothing reaches the NIC before submit. */
	CHECK_EQ(f.dbrec[1], 0);
	CHECK_EQ(*f.db, 0);
	fix_fini(&f);
}

TEST(every_opcode_with_sges)
{
	struct gpunic_dev_sge sg[8];
	struct fix f;
	uint32_t k, n, last = 0;

	fix_init(&f, 64, 4, 32, 64, GPUNIC_HANDLER_GPU_DB);
	for (k = 0; k < 8; k++) {
		sg[k].addr = 0x100000000ull * (k + 1) + k * 0x1111;
		sg[k].length = 100 * (k + 1);
		sg[k].lkey = 0x50 + k;
	}
	for (k = 0; k < sizeof(all_opcodes); k++) {
		for (n = 0; n <= 8; n++) {
			struct gpunic_dev_send_wr wr = mkwr(all_opcodes[k], 0, sg, (uint16_t)n);

			if (gpunic_dev_sq_free(&f.qp) < 4)
				complete_all(&f, last);
			last = post_check(&f, &wr);
		}
	}
	fix_fini(&f);
}

TEST(zero_length_sge_skipped)
{
	struct gpunic_dev_sge sg[3] = {
		{ 0x1000, 0, 1 }, { 0x2000, 64, 2 }, { 0x3000, 0, 3 },
	};
	struct gpunic_dev_send_wr wr = mkwr(MLX5_OPCODE_RDMA_WRITE, 0, sg, 3);
	struct dec_wqe d;
	struct fix f;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	post_check(&f, &wr);
	dec_wqe(&f, 0, &d);
	CHECK_EQ(d.ds, 3);
	CHECK_EQ(d.nsge, 1);
	CHECK_EQ(d.sge[0].addr, 0x2000);
	/* All entries empty: a zero-length WRITE, ctrl + raddr only. */
	sg[1].length = 0;
	post_check(&f, &wr);
	dec_wqe(&f, 1, &d);
	CHECK_EQ(d.ds, 2);
	fix_fini(&f);
}

TEST(inline_sizes_one_and_many_bbs)
{
	static uint8_t data[256];
	struct gpunic_dev_sge sg[3];
	struct fix f;
	uint32_t k, len, nsg, last = 0;

	for (k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(k * 7 + 3);
	fix_init(&f, 64, 4, 32, 64, GPUNIC_HANDLER_GPU_DB);
	for (k = 0; k < 4; k++) {
		uint8_t op = all_opcodes[k];

		for (len = 0; len <= f.qp.max_inline; len++) {
			for (nsg = 1; nsg <= 3; nsg++) {
				struct gpunic_dev_send_wr wr;
				uint32_t a = len / 3, b = len / 2;

				/* Split the payload over the SGEs at uneven points. */
				sg[0].addr = (uintptr_t)data;
				sg[0].length = nsg == 1 ? len : a;
				sg[1].addr = (uintptr_t)(data + a);
				sg[1].length = nsg == 2 ? len - a : b - a;
				sg[2].addr = (uintptr_t)(data + b);
				sg[2].length = len - b;
				sg[0].lkey = sg[1].lkey = sg[2].lkey = 0;
				wr = mkwr(op, GPUNIC_DEV_SEND_INLINE, sg, (uint16_t)nsg);
				if (gpunic_dev_sq_free(&f.qp) < 8)
					complete_all(&f, last);
				last = post_check(&f, &wr);
			}
		}
	}
	fix_fini(&f);
}

TEST(inline_first_bb_boundary)
{
	static uint8_t data[64];
	struct fix f;
	struct gpunic_dev_sge sg = { (uintptr_t)data, 0, 0 };
	struct gpunic_dev_send_wr wr;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_inline_one_bb_max(MLX5_OPCODE_SEND), 44);
	CHECK_EQ(gpunic_dev_inline_one_bb_max(MLX5_OPCODE_SEND_IMM), 44);
	CHECK_EQ(gpunic_dev_inline_one_bb_max(MLX5_OPCODE_RDMA_WRITE), 28);
	CHECK_EQ(gpunic_dev_inline_one_bb_max(MLX5_OPCODE_RDMA_WRITE_IMM), 28);
	wr = mkwr(MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_INLINE, &sg, 1);
	sg.length = 44;
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 4);
	CHECK_EQ(gpunic_dev_send_wqe_bbs(&f.qp, &wr), 1);
	sg.length = 45;
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 5);
	CHECK_EQ(gpunic_dev_send_wqe_bbs(&f.qp, &wr), 2);
	wr.opcode = MLX5_OPCODE_RDMA_WRITE;
	sg.length = 28;
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 4);
	CHECK_EQ(gpunic_dev_send_wqe_bbs(&f.qp, &wr), 1);
	sg.length = 29;
	CHECK_EQ(gpunic_dev_send_wqe_bbs(&f.qp, &wr), 2);
	/* Zero bytes: no inline segment. */
	sg.length = 0;
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 2);
	fix_fini(&f);
}

TEST(wrap_at_ring_end)
{
	static uint8_t data[200];
	struct gpunic_dev_sge sg[6];
	struct fix f;
	uint32_t k, lap, idx;

	for (k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(255 - k);
	for (k = 0; k < 6; k++) {
		sg[k].addr = 0xabc000 + k;
		sg[k].length = 1 + k;
		sg[k].lkey = k;
	}
	fix_init(&f, 8, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	/* Shift the start by one basic block per lap, so every multi-BB WQE size meets the end. */
	for (lap = 0; lap < 8; lap++) {
		struct gpunic_dev_sge inl = { (uintptr_t)data, 100 + lap * 12, 0 };
		struct gpunic_dev_send_wr big_inline =
			mkwr(MLX5_OPCODE_RDMA_WRITE_IMM, GPUNIC_DEV_SEND_INLINE, &inl, 1);
		struct gpunic_dev_send_wr big_sge = mkwr(MLX5_OPCODE_RDMA_READ, 0, sg, 6);
		struct gpunic_dev_send_wr small = mkwr(MLX5_OPCODE_SEND, 0, sg, 1);

		idx = post_check(&f, &small);
		complete_all(&f, idx);
		idx = post_check(&f, &big_inline);
		complete_all(&f, idx);
		idx = post_check(&f, &big_sge);
		complete_all(&f, idx);
	}
	CHECK(f.qp.state->sq_reserved > 3 * 8);
	fix_fini(&f);
}

TEST(flags_ce_se_fence)
{
	struct gpunic_dev_sge sg = { 0x1000, 8, 1 };
	uint8_t flags[] = {
		0, GPUNIC_DEV_SEND_SIGNALED, GPUNIC_DEV_SEND_SOLICITED, GPUNIC_DEV_SEND_FENCE,
		GPUNIC_DEV_SEND_SIGNALED | GPUNIC_DEV_SEND_SOLICITED | GPUNIC_DEV_SEND_FENCE,
	};
	struct fix f;
	uint32_t k;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	for (k = 0; k < sizeof(flags); k++) {
		struct gpunic_dev_send_wr wr = mkwr(MLX5_OPCODE_SEND_IMM, flags[k], &sg, 1);

		post_check(&f, &wr);
	}
	/* CE off means byte 11 has no 0x08: the NIC writes no CQE. */
	CHECK_EQ(f.qp.sq_buf[11], 0);
	CHECK_EQ(f.qp.sq_buf[64 + 11], MLX5_WQE_CTRL_CQ_UPDATE);
	fix_fini(&f);
}

TEST(imm_byte_order)
{
	struct fix f;
	const uint8_t wire[4] = { 0x11, 0x22, 0x33, 0x44 };
	int64_t idx;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	idx = gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_RDMA_WRITE_IMM, 0, 0x1000, 4, 1,
				       0x2000, 2, 0x11223344);
	CHECK_EQ(idx, 0);
	/* The value the user means, big-endian in the WQE: the NIC copies these bytes to the
	 * wire and the peer's CQE unchanged. */
	CHECK_MEM(f.qp.sq_buf + 12, wire, 4);
	idx = gpunic_dev_post_send_inline(&f.qp, MLX5_OPCODE_SEND_IMM, 0, wire, 4, 0, 0,
					  0x11223344);
	CHECK_EQ(idx, 1);
	CHECK_MEM(f.qp.sq_buf + 64 + 12, wire, 4);
	/* Opcodes without an immediate leave it zero whatever wr.imm says. */
	idx = gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 4, 1, 0, 0, 0x55);
	CHECK_EQ(rd_be32(f.qp.sq_buf + idx * 64 + 12), 0);
	fix_fini(&f);
}

TEST(invalid_requests)
{
	static uint8_t data[600];
	struct gpunic_dev_sge sg[64];
	struct gpunic_dev_send_wr wr;
	struct fix f;
	uint32_t k;

	for (k = 0; k < 64; k++) {
		sg[k].addr = (uintptr_t)data;
		sg[k].length = 1;
		sg[k].lkey = 1;
	}
	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	wr = mkwr(MLX5_OPCODE_RDMA_READ, GPUNIC_DEV_SEND_INLINE, sg, 1);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	wr = mkwr(MLX5_OPCODE_ATOMIC_CS, 0, sg, 1);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	wr = mkwr(MLX5_OPCODE_NOP, 0, sg, 1);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	/* Inline payload over max_inline, alone or summed over SGEs. */
	sg[0].length = f.qp.max_inline + 1;
	wr = mkwr(MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_INLINE, sg, 1);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	sg[0].length = f.qp.max_inline;
	wr = mkwr(MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_INLINE, sg, 2);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	sg[0].length = 1;
	/* ds has 6 bits: SEND with 62 SGEs is the largest WQE, 63 too many; WRITE one less. */
	wr = mkwr(MLX5_OPCODE_SEND, 0, sg, 62);
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 63);
	wr.num_sge = 63;
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	wr = mkwr(MLX5_OPCODE_RDMA_WRITE, 0, sg, 62);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	/* SGE list missing. */
	wr = mkwr(MLX5_OPCODE_SEND, 0, NULL, 1);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	/* A WQE larger than the whole ring. */
	fix_fini(&f);
	fix_init(&f, 2, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	wr = mkwr(MLX5_OPCODE_SEND, 0, sg, 12);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -EINVAL);
	/* Nothing was reserved by any of the failures. */
	CHECK_EQ(f.qp.state->sq_reserved, 0);
	fix_fini(&f);
}

TEST(submit_gpu_db)
{
	struct gpunic_dev_sge sg[4] = {
		{ 0x1000, 8, 1 }, { 0x2000, 8, 1 }, { 0x3000, 8, 1 }, { 0x4000, 8, 1 },
	};
	struct gpunic_dev_send_wr wr = mkwr(MLX5_OPCODE_RDMA_WRITE, 0, sg, 4);
	struct fix f;
	uint32_t k;

	fix_init(&f, 64, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	CHECK_EQ(f.dbrec[1], 0);
	for (k = 0; k < 3; k++)
		post_check(&f, &wr); /* 2 basic blocks each */
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	CHECK_EQ(nic_sq_pi(&f), 6);
	/* The doorbell carries the last WQE's ctrl bytes 0..7 as they are in the ring. */
	CHECK_MEM(f.db, f.qp.sq_buf + 4 * 64, 8);
	CHECK_EQ(f.qp.state->sq_submitted, 6);
	CHECK_EQ(*f.mailbox, 0);
	/* Nothing new: no second ring. */
	*f.db = 0x5a5a;
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	CHECK_EQ(*f.db, 0x5a5a);
	/* The record holds 16 bits of the counter. */
	f.qp.state->sq_reserved = f.qp.state->sq_ready = f.qp.state->sq_submitted = 0xfffe;
	f.qp.state->sq_completed = 0xfffe;
	post_check(&f, &wr);
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	CHECK_EQ(nic_sq_pi(&f), 0);
	CHECK_EQ(f.qp.state->sq_submitted, 0x10000);
	CHECK_MEM(f.db, f.qp.sq_buf + (0xfffe % 64) * 64, 8);
	fix_fini(&f);
}

TEST(submit_cpu_proxy)
{
	struct fix f;

	fix_init(&f, 64, 4, 32, 16, GPUNIC_HANDLER_CPU_PROXY);
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), 0);
	CHECK(gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0) == 0);
	CHECK(gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0) == 1);
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	CHECK_EQ(nic_sq_pi(&f), 2);
	CHECK_EQ(*f.mailbox, 2);
	CHECK_EQ(*f.db, 0);
	fix_fini(&f);
}

TEST(submit_rejects_unresolved_mode)
{
	struct fix f;

	fix_init(&f, 64, 4, 32, 16, GPUNIC_HANDLER_AUTO);
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	CHECK(gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0) == 0);
	CHECK_EQ(gpunic_dev_submit(&f.qp), -EINVAL);
	CHECK_EQ(f.dbrec[1], 0);
	CHECK_EQ(*f.db, 0);
	CHECK_EQ(*f.mailbox, 0);
	fix_fini(&f);
}

TEST(qp_check)
{
	struct fix f;

	fix_init(&f, 64, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), 0);
	f.qp.sq_wqebb_cnt = 48;
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	f.qp.sq_wqebb_cnt = 65536;
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	f.qp.sq_wqebb_cnt = 64;
	f.qp.rq_stride = 24;
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	f.qp.rq_stride = 32;
	f.qp.rcq.cqe_cnt = 12;
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	f.qp.rcq.cqe_cnt = 16;
	f.qp.db = NULL;
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	f.qp.db = f.db;
	f.qp.handler_mode = 7;
	CHECK_EQ(gpunic_dev_qp_check(&f.qp), -EINVAL);
	fix_fini(&f);
}

/* ---------------------------------------------------------------- receive WQEs */

static void check_rseg(const uint8_t *p, uint32_t len, uint32_t lkey, uint64_t addr)
{
	CHECK_EQ(rd_be32(p), len);
	CHECK_EQ(rd_be32(p + 4), lkey);
	CHECK_EQ(rd_be64(p + 8), addr);
}

TEST(recv_layout_and_terminator)
{
	struct gpunic_dev_sge sg[2] = { { 0x7000100, 256, 0x11 }, { 0x7000400, 4096, 0x22 } };
	struct fix f;

	fix_init(&f, 16, 8, 64, 16, GPUNIC_HANDLER_GPU_DB);
	memset(f.qp.rq_buf, 0xee, 8 * 64);
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, sg, 2), 0);
	check_rseg(f.qp.rq_buf, 256, 0x11, 0x7000100);
	check_rseg(f.qp.rq_buf + 16, 4096, 0x22, 0x7000400);
	check_rseg(f.qp.rq_buf + 32, 0, MLX5_INVALID_LKEY, 0);
	CHECK_EQ(nic_rq_pi(&f), 1);
	CHECK_EQ(f.qp.state->rq_head, 1);
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, sg, 1), 1);
	check_rseg(f.qp.rq_buf + 64, 256, 0x11, 0x7000100);
	check_rseg(f.qp.rq_buf + 64 + 16, 0, MLX5_INVALID_LKEY, 0);
	CHECK_EQ(nic_rq_pi(&f), 2);
	fix_fini(&f);
}

TEST(recv_zero_length)
{
	struct gpunic_dev_sge sg = { 0x1000, 0, 0x5 };
	struct fix f;

	fix_init(&f, 16, 8, 32, 16, GPUNIC_HANDLER_GPU_DB);
	memset(f.qp.rq_buf, 0xee, 8 * 32);
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, NULL, 0), 0);
	check_rseg(f.qp.rq_buf, 0, MLX5_INVALID_LKEY, 0);
	/* Only zero-length entries: the same. */
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, &sg, 1), 1);
	check_rseg(f.qp.rq_buf + 32, 0, MLX5_INVALID_LKEY, 0);
	CHECK_EQ(nic_rq_pi(&f), 2);
	fix_fini(&f);
}

TEST(recv_full_stride_no_terminator)
{
	struct gpunic_dev_sge sg[5];
	struct fix f;
	uint32_t k;

	for (k = 0; k < 5; k++) {
		sg[k].addr = 0x9000 + k * 0x100;
		sg[k].length = 0x100;
		sg[k].lkey = k + 1;
	}
	fix_init(&f, 16, 4, 64, 16, GPUNIC_HANDLER_GPU_DB);
	memset(f.qp.rq_buf, 0xee, 4 * 64 + 64);
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, sg, 4), 0);
	for (k = 0; k < 4; k++)
		check_rseg(f.qp.rq_buf + k * 16, 0x100, k + 1, 0x9000 + k * 0x100);
	/* The next WQE is untouched: nothing spilled past the stride. */
	CHECK_EQ(f.qp.rq_buf[64], 0xee);
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, sg, 5), -EINVAL);
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, NULL, 1), -EINVAL);
	CHECK_EQ(f.qp.state->rq_head, 1);
	fix_fini(&f);
}

TEST(recv_ring_wraps_and_full)
{
	struct gpunic_dev_sge sg = { 0x1000, 64, 9 };
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	uint32_t k;

	fix_init(&f, 16, 4, 16, 8, GPUNIC_HANDLER_GPU_DB);
	memset(&c, 0, sizeof(c));
	for (k = 0; k < 4; k++) {
		sg.addr = 0x1000 + k;
		CHECK_EQ(gpunic_dev_post_recv(&f.qp, &sg, 1), k);
	}
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, &sg, 1), -ENOMEM);
	CHECK_EQ(nic_rq_pi(&f), 4);
	/* Receives complete in order; each CQE hands one WQE back. */
	for (k = 0; k < 40; k++) {
		c.opcode = MLX5_CQE_RESP_SEND;
		c.wqe_counter = (uint16_t)k;
		c.byte_cnt = 64;
		nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
		CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
		CHECK_EQ(out.wqe_idx, k);
		sg.addr = 0x1000 + k + 4;
		CHECK_EQ(gpunic_dev_post_recv(&f.qp, &sg, 1), k + 4);
		CHECK_EQ(gpunic_dev_post_recv(&f.qp, &sg, 1), -ENOMEM);
		check_rseg(f.qp.rq_buf + ((k + 4) % 4) * 16, 64, 9, 0x1000 + k + 4);
		CHECK_EQ(nic_rq_pi(&f), k + 5);
	}
	fix_fini(&f);
}

/* A BlueFlame page for @f's QP (GPU_BF): GPUNIC_DEV_BF_LINES lines, sealed copies when @seal. */
static void fix_bf(struct fix *f, int seal)
{
	f->qp.bf = (uint8_t *)fix_zalloc(f, GPUNIC_DEV_BF_LINES * 64);
	f->qp.bf_lines = GPUNIC_DEV_BF_LINES;
	if (seal)
		f->qp.flags |= GPUNIC_DEV_QP_SEAL_BF;
}

/* The copy of the WQE at @idx in its BlueFlame lines: @nbb lines, in WQE order, into @w. */
static void bf_copy_words(const struct fix *f, uint32_t idx, uint32_t nbb, uint32_t *w)
{
	for (uint32_t b = 0; b < nbb; b++)
		memcpy(w + 16 * b, gpunic_dev_bf_line(&f->qp, idx + b), 64);
}

/*
 * GPU_BF: a WQE of two blocks (an inline WRITE of 32 bytes, ds 5) goes whole to two BlueFlame
 * lines, sealed over both, at the page's end and its start (the second line wraps), and is the
 * ring copy byte for byte; a change in any unit of the WQE, in either line, breaks the seal,
 * one past the WQE does not; with nothing left unsealed, submit needs no fence.
 */
TEST(bf_two_blocks_sealed_over_both_lines)
{
	uint8_t msg[32];
	struct gpunic_dev_sge sg = { 0, sizeof(msg), 0 };
	struct gpunic_dev_send_wr wr = mkwr(MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_INLINE, &sg, 1);
	uint32_t w[32], ring[32], idx = GPUNIC_DEV_BF_LINES - 1, k;
	struct fix f;

	for (k = 0; k < sizeof(msg); k++)
		msg[k] = (uint8_t)(0x40 + k);
	sg.addr = (uint64_t)(uintptr_t)msg;
	fix_init(&f, 2 * GPUNIC_DEV_BF_LINES, 4, 32, 16, GPUNIC_HANDLER_GPU_BF);
	fix_bf(&f, 1);
	f.qp.state->sq_reserved = f.qp.state->sq_ready = idx;
	f.qp.state->sq_submitted = f.qp.state->sq_completed = idx;
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 5);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), idx);
	bf_copy_words(&f, idx, 2, w);
	memcpy(ring, gpunic_dev_sq_seg(&f.qp, idx, 0), 64);
	memcpy(ring + 16, gpunic_dev_sq_seg(&f.qp, idx, 4), 64);
	CHECK_MEM(w, ring, 5 * 16);
	CHECK(gpunic_dev_bf_line(&f.qp, idx + 1) == f.qp.bf);
	CHECK(gpunic_dev_wqe_claims_seal(w));
	CHECK_EQ(gpunic_dev_wqe_seal_ok_bbs(w, 2), 1);
	for (k = 4; k < 32; k++) {
		w[k] ^= 0x100;
		CHECK_EQ(gpunic_dev_wqe_seal_ok_bbs(w, 2), k >= 20 ? 1 : 0);
		w[k] ^= 0x100;
	}
	/* sealed in the lines: the record follows as a plain store, nothing else */
	CHECK_EQ(gpunic_dev_submit(&f.qp), 0);
	CHECK_EQ(nic_sq_pi(&f), (idx + 2) & 0xffff);
	CHECK_EQ(f.qp.state->sq_submitted, idx + 2);
	fix_fini(&f);
}

/* GPU_BF: a WQE of three blocks is not copied; the lines it would cover are cleared so that
 * none names a WQE; on an unsealed page (a CPU executor's) neither is one of two blocks. */
TEST(bf_three_blocks_clear_their_lines)
{
	uint8_t msg[120];
	struct gpunic_dev_sge sg = { 0, 100, 0 };
	struct gpunic_dev_send_wr wr = mkwr(MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_INLINE, &sg, 1);
	uint32_t w[32], k;
	struct fix f;

	memset(msg, 0x33, sizeof(msg));
	sg.addr = (uint64_t)(uintptr_t)msg;
	fix_init(&f, 64, 4, 32, 16, GPUNIC_HANDLER_GPU_BF);
	fix_bf(&f, 1);
	memset(f.qp.bf, 0xee, GPUNIC_DEV_BF_LINES * 64);
	CHECK_EQ(gpunic_dev_send_wqe_ds(&f.qp, &wr), 8);
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), 0);	/* ds 8: the largest copy */
	bf_copy_words(&f, 0, 2, w);
	CHECK_EQ(gpunic_dev_wqe_seal_ok_bbs(w, 2), 1);
	sg.length = 120;			/* ds 9: three blocks */
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), 2);
	for (k = 2; k < 5; k++)
		CHECK_EQ(*(const uint64_t *)(const void *)gpunic_dev_bf_line(&f.qp, k), 0);
	fix_fini(&f);

	fix_init(&f, 64, 4, 32, 16, GPUNIC_HANDLER_GPU_BF);
	fix_bf(&f, 0);
	memset(f.qp.bf, 0xee, GPUNIC_DEV_BF_LINES * 64);
	sg.length = 44;				/* ds 4: one block, ctrl chunk last */
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), 0);
	bf_copy_words(&f, 0, 1, w);
	CHECK_EQ(gpunic_dev_wqe_seal_field(w), GPUNIC_DEV_BF_ORDERED);
	sg.length = 60;				/* ds 5 */
	CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), 1);
	for (k = 1; k < 3; k++)
		CHECK_EQ(*(const uint64_t *)(const void *)gpunic_dev_bf_line(&f.qp, k), 0);
	fix_fini(&f);
}
