/* SPDX-License-Identifier: MIT */
/*
 * Test fixture for gpunic_dev.h on the host: a queue pair's memory laid out as the control path
 * exports it, an independent WQE decoder (byte offsets of the mlx5 PRM read by hand, sharing no
 * code with the header) and a CQE writer that plays the NIC.
 */
#ifndef GPUNIC_TEST_DEV_FIXTURE_H
#define GPUNIC_TEST_DEV_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include <gpunic/gpunic_dev.h>

#include "harness.h"

#define FIX_MAX_MEM 12

struct fix {
	struct gpunic_dev_qp qp;
	void *mem[FIX_MAX_MEM];     /* every buffer, page-aligned, so a GPU test can register */
	size_t mem_len[FIX_MAX_MEM];
	int nmem;
	uint32_t *dbrec;     /* [0] receive, [1] send */
	uint64_t *db;
	uint32_t *mailbox;
	uint32_t *scq_dbrec;
	uint32_t *rcq_dbrec;
	uint32_t scq_pi;     /* CQEs the test NIC wrote */
	uint32_t rcq_pi;
};

static inline void *fix_zalloc(struct fix *f, size_t n)
{
	size_t len = (n + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, len);

	if (!p || f->nmem == FIX_MAX_MEM)
		abort();
	memset(p, 0, len);
	f->mem[f->nmem] = p;
	f->mem_len[f->nmem++] = len;
	return p;
}

/* A QP as gpunic_qp_export() publishes it; CQ entries start INVALID with owner 0. */
static inline void fix_init(struct fix *f, uint32_t sq_bbs, uint32_t rq_cnt, uint32_t rq_stride,
			    uint32_t cqe_cnt, uint32_t mode)
{
	uint32_t i;

	memset(f, 0, sizeof(*f));
	f->qp.qpn = 0x00abcdef & 0xffffff;
	f->qp.qp_type = 0;
	f->qp.handler_mode = mode;
	f->qp.max_inline = 256;
	f->qp.sq_buf = (uint8_t *)fix_zalloc(f, (size_t)sq_bbs * 64);
	f->qp.sq_wqebb_cnt = sq_bbs;
	f->qp.rq_stride = rq_stride;
	f->qp.rq_buf = (uint8_t *)fix_zalloc(f, (size_t)rq_cnt * rq_stride + 64);
	f->qp.rq_wqe_cnt = rq_cnt;
	f->dbrec = (uint32_t *)fix_zalloc(f, 64);
	f->db = (uint64_t *)fix_zalloc(f, 64);
	f->mailbox = (uint32_t *)fix_zalloc(f, 64);
	f->qp.dbrec = f->dbrec;
	f->qp.db = f->db;
	f->qp.mailbox = f->mailbox;
	f->qp.scq.buf = (uint8_t *)fix_zalloc(f, (size_t)cqe_cnt * 64);
	f->qp.scq.cqe_cnt = cqe_cnt;
	f->qp.scq.cqn = 1;
	f->scq_dbrec = (uint32_t *)fix_zalloc(f, 64);
	f->qp.scq.dbrec = f->scq_dbrec;
	f->qp.rcq.buf = (uint8_t *)fix_zalloc(f, (size_t)cqe_cnt * 64);
	f->qp.rcq.cqe_cnt = cqe_cnt;
	f->qp.rcq.cqn = 2;
	f->rcq_dbrec = (uint32_t *)fix_zalloc(f, 64);
	f->qp.rcq.dbrec = f->rcq_dbrec;
	for (i = 0; i < cqe_cnt; i++) {
		f->qp.scq.buf[i * 64 + 63] = 0xf0;
		f->qp.rcq.buf[i * 64 + 63] = 0xf0;
	}
	f->qp.state = (struct gpunic_dev_qp_state *)fix_zalloc(f, sizeof(*f->qp.state));
}

static inline void fix_fini(struct fix *f)
{
	while (f->nmem)
		free(f->mem[--f->nmem]);
}

/* ---------------------------------------------------------------- big-endian by hand */

static inline uint32_t rd_be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t rd_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd_be64(const uint8_t *p)
{
	return (uint64_t)rd_be32(p) << 32 | rd_be32(p + 4);
}

static inline void wr_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ---------------------------------------------------------------- independent WQE decoder */

#define DEC_MAX_SGE 64
#define DEC_MAX_INLINE 1024

struct dec_wqe {
	uint32_t opmod, idx, opcode;
	uint32_t qpn, ds;
	uint32_t signature, dci, fm_ce_se;
	uint8_t imm_bytes[4];
	int has_raddr;
	uint64_t raddr;
	uint32_t rkey, raddr_rsvd;
	int is_inline;
	uint32_t inl_len;
	uint8_t inl[DEC_MAX_INLINE];
	uint32_t nsge;
	struct {
		uint32_t len, lkey;
		uint64_t addr;
	} sge[DEC_MAX_SGE];
};

/* 16-byte unit @u of the WQE at basic block counter @idx, wrapping at the ring's end. */
static inline const uint8_t *dec_unit(const struct fix *f, uint32_t idx, uint32_t u)
{
	uint32_t units = f->qp.sq_wqebb_cnt * 4;

	return f->qp.sq_buf + (size_t)(((uint64_t)idx * 4 + u) % units) * 16;
}

/* Decode by the PRM: ctrl (opmod_idx_opcode @0, qpn_ds @4, signature @8, dci @9, fm_ce_se @11,
 * imm @12), raddr (va @0, rkey @8) for RDMA, then data segments (byte_count @0, lkey @4,
 * addr @8) or one inline segment (byte_count | 0x80000000, data from byte 4, padded to 16). */
static inline void dec_wqe(const struct fix *f, uint32_t idx, struct dec_wqe *d)
{
	const uint8_t *c = dec_unit(f, idx, 0);
	uint32_t w, u, got, n;

	memset(d, 0, sizeof(*d));
	w = rd_be32(c);
	d->opmod = w >> 24;
	d->idx = (w >> 8) & 0xffff;
	d->opcode = w & 0xff;
	w = rd_be32(c + 4);
	d->qpn = w >> 8;
	d->ds = w & 0x3f;
	d->signature = c[8];
	d->dci = rd_be16(c + 9);
	d->fm_ce_se = c[11];
	memcpy(d->imm_bytes, c + 12, 4);
	u = 1;
	if (d->opcode == 0x08 || d->opcode == 0x09 || d->opcode == 0x10) {
		const uint8_t *r = dec_unit(f, idx, u++);

		d->has_raddr = 1;
		d->raddr = rd_be64(r);
		d->rkey = rd_be32(r + 8);
		d->raddr_rsvd = rd_be32(r + 12);
	}
	if (u >= d->ds)
		return;
	w = rd_be32(dec_unit(f, idx, u));
	if (w & 0x80000000u) {
		d->is_inline = 1;
		d->inl_len = w & 0x7fffffff;
		CHECK(d->inl_len <= DEC_MAX_INLINE);
		CHECK_EQ(u + (4 + d->inl_len + 15) / 16, d->ds);
		for (got = 0; got < d->inl_len; got += n) {
			uint32_t pos = 4 + got;
			const uint8_t *src = dec_unit(f, idx, u + pos / 16) + pos % 16;

			n = 16 - pos % 16;
			if (n > d->inl_len - got)
				n = d->inl_len - got;
			memcpy(d->inl + got, src, n);
		}
		return;
	}
	for (; u < d->ds; u++) {
		const uint8_t *s = dec_unit(f, idx, u);

		CHECK(d->nsge < DEC_MAX_SGE);
		d->sge[d->nsge].len = rd_be32(s);
		d->sge[d->nsge].lkey = rd_be32(s + 4);
		d->sge[d->nsge].addr = rd_be64(s + 8);
		d->nsge++;
	}
}

static inline uint32_t dec_bbs(const struct dec_wqe *d)
{
	return (d->ds * 16 + 63) / 64;
}

/* ---------------------------------------------------------------- the NIC's side of a CQ */

struct nic_cqe {
	uint8_t opcode;
	uint8_t flags;       /* op_own bits 1-3: SE, MLX5_INLINE_SCATTER_32 */
	uint16_t wqe_counter;
	uint32_t qpn;
	uint8_t wqe_opcode;  /* REQ / REQ_ERR: sop_drop_qpn or s_wqe_opcode_qpn top byte */
	uint32_t byte_cnt;
	uint8_t imm_bytes[4];
	uint8_t syndrome, vendor;
	const uint8_t *inl;  /* copied into bytes 0..31 */
	uint32_t inl_len;
};

/* Write CQE number @n as the NIC does: body, then op_own with the lap's owner bit, released. */
static inline void nic_write_cqe(const struct gpunic_dev_cq *cq, uint32_t n,
				 const struct nic_cqe *c)
{
	uint8_t *p = cq->buf + (size_t)(n & (cq->cqe_cnt - 1)) * 64;
	uint8_t owner = (n / cq->cqe_cnt) & 1;

	memset(p, 0, 63);
	if (c->opcode == 13 || c->opcode == 14) {
		p[54] = c->vendor;
		p[55] = c->syndrome;
		wr_be32(p + 56, (uint32_t)c->wqe_opcode << 24 | c->qpn);
	} else {
		if (c->inl)
			memcpy(p, c->inl, c->inl_len);
		memcpy(p + 36, c->imm_bytes, 4);
		wr_be32(p + 44, c->byte_cnt);
		wr_be32(p + 56, (uint32_t)c->wqe_opcode << 24 | c->qpn);
	}
	wr_be16(p + 60, c->wqe_counter);
	__atomic_store_n(&p[63], (uint8_t)(c->opcode << 4 | c->flags | owner), __ATOMIC_RELEASE);
}

/* A big-endian record the data path publishes, read as the NIC must: with acquire. */
static inline uint32_t nic_rd_record(const uint32_t *p)
{
	uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);

	return rd_be32((const uint8_t *)&v);
}

static inline uint32_t nic_cq_ci(const struct gpunic_dev_cq *cq)
{
	return nic_rd_record(cq->dbrec) & 0xffffff;
}

static inline uint32_t nic_sq_pi(const struct fix *f)
{
	return nic_rd_record(&f->dbrec[MLX5_SND_DBR]);
}

static inline uint32_t nic_rq_pi(const struct fix *f)
{
	return nic_rd_record(&f->dbrec[MLX5_RCV_DBR]);
}

#endif /* GPUNIC_TEST_DEV_FIXTURE_H */
