/* SPDX-License-Identifier: MIT */
/*
 * gpunic_dev.h completion polling against CQEs written here as the NIC writes them: owner bit
 * over many laps, consumer doorbell record, error CQEs, immediates, inline-scattered payload,
 * and send-queue space handed back through completions (unsignalled WQEs, 16-bit wrap, full).
 */
#include "dev_fixture.h"

static struct nic_cqe mkcqe(uint8_t opcode, uint16_t wqe_counter, uint32_t qpn)
{
	struct nic_cqe c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.wqe_counter = wqe_counter;
	c.qpn = qpn;
	return c;
}

TEST(empty_cq_never_polls)
{
	struct gpunic_dev_cqe out;
	struct fix f;
	uint32_t k;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 0);
	CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 0);
	/* Initialised as some drivers do (INVALID, owner 1): still nothing. */
	for (k = 0; k < 8; k++)
		f.qp.scq.buf[k * 64 + 63] = 0xf1;
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 0);
	CHECK_EQ(f.qp.state->scq_ci, 0);
	CHECK_EQ(*f.scq_dbrec, 0);
	fix_fini(&f);
}

TEST(owner_bit_over_laps)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	uint32_t n, burst, k;

	fix_init(&f, 16, 64, 16, 4, GPUNIC_HANDLER_GPU_DB);
	/* Bursts of 1..4 CQEs: the consumer must stop exactly where the NIC stopped, although the
	 * slot after it holds last lap's valid-looking CQE (owner bit differs). */
	n = 0;
	for (burst = 0; n < 4 * 9; burst++) {
		uint32_t cnt = burst % 4 + 1;

		for (k = 0; k < cnt; k++) {
			c = mkcqe(MLX5_CQE_RESP_SEND, (uint16_t)(n + k), f.qp.qpn);
			c.byte_cnt = 1000 + n + k;
			nic_write_cqe(&f.qp.rcq, n + k, &c);
		}
		for (k = 0; k < cnt; k++) {
			CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
			CHECK_EQ(out.opcode, MLX5_CQE_RESP_SEND);
			CHECK_EQ(out.byte_cnt, 1000 + n);
			CHECK_EQ(out.wqe_counter, n & 0xffff);
			CHECK_EQ(out.qpn, f.qp.qpn);
			n++;
			CHECK_EQ(f.qp.state->rcq_ci, n);
			CHECK_EQ(nic_cq_ci(&f.qp.rcq), n);
		}
		CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 0);
	}
	fix_fini(&f);
}

TEST(consumer_record_is_24_bits)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c = mkcqe(MLX5_CQE_RESP_SEND, 0, 1);
	struct fix f;
	uint32_t n;

	fix_init(&f, 16, 64, 16, 8, GPUNIC_HANDLER_GPU_DB);
	/* A consumer far into its life: lap parity comes from the full counter, the record
	 * keeps its low 24 bits. */
	f.qp.state->rcq_ci = 0x00fffffe;
	for (n = 0x00fffffe; n != 0x01000002; n++) {
		nic_write_cqe(&f.qp.rcq, n, &c);
		CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
		CHECK_EQ(f.qp.state->rcq_ci, n + 1);
		CHECK_EQ(nic_cq_ci(&f.qp.rcq), (n + 1) & 0xffffff);
		CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 0);
	}
	fix_fini(&f);
}

TEST(send_completion_fields)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	int64_t idx;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	idx = gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_RDMA_READ, GPUNIC_DEV_SEND_SIGNALED,
				       0x1000, 512, 1, 0x2000, 2, 0);
	CHECK_EQ(idx, 0);
	c = mkcqe(MLX5_CQE_REQ, 0, f.qp.qpn);
	c.wqe_opcode = MLX5_OPCODE_RDMA_READ;
	c.byte_cnt = 512;
	nic_write_cqe(&f.qp.scq, f.scq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
	CHECK_EQ(out.opcode, MLX5_CQE_REQ);
	CHECK_EQ(out.wqe_opcode, MLX5_OPCODE_RDMA_READ);
	CHECK_EQ(out.qpn, f.qp.qpn);
	CHECK_EQ(out.byte_cnt, 512);
	CHECK_EQ(out.wqe_idx, 0);
	CHECK_EQ(out.syndrome, 0);
	CHECK(!gpunic_dev_cqe_is_error(&out));
	CHECK(gpunic_dev_sq_done(&f.qp, 0));
	CHECK_EQ(gpunic_dev_sq_free(&f.qp), 16);
	fix_fini(&f);
}

TEST(error_cqes)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	int64_t idx;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	idx = gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0);
	CHECK_EQ(idx, 0);
	idx = gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_RDMA_WRITE, 0, 0x1000, 8, 1, 0, 0, 0);
	CHECK_EQ(idx, 1);
	c = mkcqe(MLX5_CQE_REQ_ERR, 1, f.qp.qpn);
	c.wqe_opcode = MLX5_OPCODE_RDMA_WRITE;
	c.syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	c.vendor = 0x88;
	nic_write_cqe(&f.qp.scq, f.scq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
	CHECK(gpunic_dev_cqe_is_error(&out));
	CHECK_EQ(out.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(out.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(out.vendor_syndrome, 0x88);
	CHECK_EQ(out.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(out.qpn, f.qp.qpn);
	CHECK_EQ(out.wqe_counter, 1);
	CHECK_EQ(out.wqe_idx, 1);
	CHECK_EQ(out.byte_cnt, 0);
	/* The failed WQE and the one before it are the NIC's no more. */
	CHECK_EQ(f.qp.state->sq_completed, 2);

	c = mkcqe(MLX5_CQE_RESP_ERR, 0, f.qp.qpn);
	c.syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	CHECK_EQ(gpunic_dev_post_recv(&f.qp, NULL, 0), 0);
	nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
	CHECK(gpunic_dev_cqe_is_error(&out));
	CHECK_EQ(out.opcode, MLX5_CQE_RESP_ERR);
	CHECK_EQ(out.syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	CHECK_EQ(out.wqe_opcode, 0);
	CHECK_EQ(out.wqe_idx, 0);
	CHECK_EQ(f.qp.state->rq_tail, 1);
	fix_fini(&f);
}

TEST(receive_imm_and_flags)
{
	static const uint8_t imm_wire[4] = { 0x11, 0x22, 0x33, 0x44 };
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	c = mkcqe(MLX5_CQE_RESP_WR_IMM, 0, f.qp.qpn);
	memcpy(c.imm_bytes, imm_wire, 4);
	c.byte_cnt = 4096;
	c.flags = 0x2; /* solicited */
	nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
	CHECK_EQ(out.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(out.imm, 0x11223344);
	CHECK_EQ(out.byte_cnt, 4096);
	CHECK_EQ(out.solicited, 1);
	CHECK_EQ(out.data_in_cqe, 0);

	c = mkcqe(MLX5_CQE_RESP_SEND, 1, f.qp.qpn);
	memcpy(c.imm_bytes, imm_wire, 4);
	nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
	CHECK_EQ(out.imm, 0); /* no immediate in a plain SEND */
	CHECK_EQ(out.solicited, 0);
	fix_fini(&f);
}

/* The whole trip of an immediate: the user's value in the sender's WQE, copied to the wire and
 * into the receiver's CQE byte for byte by the NIC, comes out as the same value. */
TEST(imm_round_trip_single_swap)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	int64_t idx;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	idx = gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND_IMM, 0, 0x1000, 8, 1, 0, 0,
				       0xdeadbeef);
	CHECK_EQ(idx, 0);
	c = mkcqe(MLX5_CQE_RESP_SEND_IMM, 0, f.qp.qpn);
	memcpy(c.imm_bytes, f.qp.sq_buf + 12, 4);
	c.byte_cnt = 8;
	nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
	CHECK_EQ(out.imm, 0xdeadbeef);
	fix_fini(&f);
}

TEST(inline_scatter_32)
{
	uint8_t payload[32];
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	uint32_t len, k;

	for (k = 0; k < 32; k++)
		payload[k] = (uint8_t)(0xa0 + k);
	fix_init(&f, 16, 64, 16, 8, GPUNIC_HANDLER_GPU_DB);
	for (len = 0; len <= 32; len++) {
		c = mkcqe(len & 1 ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND, (uint16_t)len,
			  f.qp.qpn);
		c.flags = MLX5_INLINE_SCATTER_32;
		c.inl = payload;
		c.inl_len = len;
		c.byte_cnt = len;
		c.imm_bytes[3] = 0x7;
		nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
		memset(&out, 0xcc, sizeof(out));
		CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
		CHECK_EQ(out.data_in_cqe, 1);
		CHECK_EQ(out.byte_cnt, len);
		CHECK_MEM(out.data, payload, len);
		/* The immediate sits at byte 36, past the 32 scattered bytes. */
		CHECK_EQ(out.imm, len & 1 ? 7 : 0);
		/* The copy is what counts: the NIC may reuse the slot now. */
		memset(f.qp.rcq.buf + ((f.rcq_pi - 1) % 8) * 64, 0x55, 32);
		CHECK_MEM(out.data, payload, len);
	}
	/* The same bit on a send CQE means nothing. */
	gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0);
	c = mkcqe(MLX5_CQE_REQ, 0, f.qp.qpn);
	c.flags = MLX5_INLINE_SCATTER_32;
	nic_write_cqe(&f.qp.scq, f.scq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
	CHECK_EQ(out.data_in_cqe, 0);
	fix_fini(&f);
}

/* Unsignalled WQEs complete with the next signalled one: a ConnectX user frees SQ space up to
 * the end of the WQE named by wqe_counter. */
TEST(unsignalled_completed_by_later_cqe)
{
	struct gpunic_dev_sge sg[5] = {
		{ 1, 1, 1 }, { 2, 1, 1 }, { 3, 1, 1 }, { 4, 1, 1 }, { 5, 1, 1 },
	};
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	int64_t idx[4];
	int k;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = MLX5_OPCODE_RDMA_WRITE;
	wr.sg_list = sg;
	for (k = 0; k < 4; k++) {
		wr.num_sge = (uint16_t)(k + 2); /* ds 4..7: 1 or 2 basic blocks */
		wr.flags = k == 2 ? GPUNIC_DEV_SEND_SIGNALED : 0;
		idx[k] = gpunic_dev_post_send(&f.qp, &wr);
		CHECK(idx[k] >= 0);
	}
	CHECK_EQ(idx[1], 1);
	CHECK_EQ(idx[2], 3);
	CHECK_EQ(idx[3], 5);
	CHECK_EQ(gpunic_dev_sq_free(&f.qp), 16 - 7);
	CHECK(!gpunic_dev_sq_done(&f.qp, 0));
	c = mkcqe(MLX5_CQE_REQ, 3, f.qp.qpn);
	nic_write_cqe(&f.qp.scq, f.scq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
	CHECK_EQ(out.wqe_idx, 3);
	/* WQE 2 (at 3, two basic blocks) and everything before it. */
	CHECK_EQ(f.qp.state->sq_completed, 5);
	CHECK(gpunic_dev_sq_done(&f.qp, 0));
	CHECK(gpunic_dev_sq_done(&f.qp, 1));
	CHECK(gpunic_dev_sq_done(&f.qp, 3));
	CHECK(!gpunic_dev_sq_done(&f.qp, 5));
	CHECK_EQ(gpunic_dev_sq_free(&f.qp), 16 - 2);
	fix_fini(&f);
}

TEST(bogus_wqe_counter_frees_nothing)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0);
	gpunic_dev_post_send_sge(&f.qp, MLX5_OPCODE_SEND, 0, 0x1000, 8, 1, 0, 0, 0);
	/* Index 9 was never posted. */
	c = mkcqe(MLX5_CQE_REQ, 9, f.qp.qpn);
	nic_write_cqe(&f.qp.scq, f.scq_pi++, &c);
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
	CHECK_EQ(f.qp.state->sq_completed, 0);
	CHECK_EQ(gpunic_dev_sq_free(&f.qp), 14);
	fix_fini(&f);
}

/* Fill the ring, get -ENOMEM with nothing changed, free space through CQEs; many laps, so the
 * 16-bit WQE index and wqe_counter wrap too. */
TEST(sq_full_backpressure)
{
	struct gpunic_dev_sge sg[3] = { { 0x1000, 8, 1 }, { 0x2000, 8, 1 }, { 0x3000, 8, 1 } };
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;
	uint32_t posted = 0, completed = 0, round;
	int64_t idx;

	fix_init(&f, 8, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = MLX5_OPCODE_RDMA_WRITE;
	wr.sg_list = sg;
	for (round = 0; round < 150000; round++) {
		/* Mix 1-basic-block (ds 3) and 2-basic-block (ds 5) WQEs so that the ring's end is
		 * met at every offset. */
		wr.num_sge = (uint16_t)(round % 3 == 0 || round % 5 == 0 ? 3 : 1);
		idx = gpunic_dev_post_send(&f.qp, &wr);
		if (idx == -ENOMEM) {
			uint32_t before = f.qp.state->sq_reserved;

			CHECK(f.qp.state->sq_reserved - completed + 2 > 8);
			CHECK_EQ(gpunic_dev_post_send(&f.qp, &wr), -ENOMEM);
			CHECK_EQ(f.qp.state->sq_reserved, before);
			/* Complete the oldest outstanding WQE only. */
			c = mkcqe(MLX5_CQE_REQ, (uint16_t)completed, f.qp.qpn);
			nic_write_cqe(&f.qp.scq, f.scq_pi++, &c);
			CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 1);
			CHECK_EQ(out.wqe_idx, completed);
			CHECK(f.qp.state->sq_completed > completed);
			completed = f.qp.state->sq_completed;
			continue;
		}
		CHECK(idx >= 0);
		CHECK_EQ(idx, posted);
		CHECK_EQ((f.qp.sq_buf[(idx % 8) * 64 + 1] << 8) | f.qp.sq_buf[(idx % 8) * 64 + 2],
			 idx & 0xffff);
		posted = f.qp.state->sq_reserved;
		CHECK(posted - completed <= 8);
	}
	CHECK(posted > 0x10000 + 8);
	fix_fini(&f);
}

TEST(cq_shared_counter_is_per_queue)
{
	struct gpunic_dev_cqe out;
	struct nic_cqe c;
	struct fix f;

	fix_init(&f, 16, 4, 32, 8, GPUNIC_HANDLER_GPU_DB);
	c = mkcqe(MLX5_CQE_RESP_SEND, 0, f.qp.qpn);
	nic_write_cqe(&f.qp.rcq, f.rcq_pi++, &c);
	/* A receive CQE on the receive CQ moves only the receive side. */
	CHECK_EQ(gpunic_dev_poll_scq(&f.qp, &out), 0);
	CHECK_EQ(gpunic_dev_poll_rcq(&f.qp, &out), 1);
	CHECK_EQ(f.qp.state->rcq_ci, 1);
	CHECK_EQ(f.qp.state->scq_ci, 0);
	CHECK_EQ(*f.scq_dbrec, 0);
	CHECK_EQ(nic_cq_ci(&f.qp.rcq), 1);
	fix_fini(&f);
}
