// SPDX-License-Identifier: MIT
/*
 * Completion queues in mlx5 format: a ring of mlx5_cqe64 that the engine produces into and the
 * data path consumes from. Entry i is software-owned when its opcode is not MLX5_CQE_INVALID and
 * its owner bit equals (ci / cqe_cnt) & 1. Entries start as 0xF1 (INVALID, owner 1), as libmlx5
 * initialises them, so that a poller testing only the owner bit does not take slot 0 as done.
 *
 * A CQE is built in a staging line and written to the ring in one 64-byte store (line.c), so a
 * GPU reading the line in one access gets op_own, the fields and scattered data together. On a
 * queue with GPUNIC_CQ_LINE_CHECK (every CQ of a GPU executor's NIC) the CQE also carries a
 * check of its whole line (gpunic_dev_cqe_check, bytes 40-43), so a reader can reject a torn or
 * stale line. The engine never overwrites an entry the consumer has not passed: it reads the
 * consumer counter from the CQ's doorbell record before each CQE, as a ConnectX does, and
 * reports an overflow instead; unless the CQ ignores overrun (mlx5's "oi"), whose consumer
 * never writes that record and must keep up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpunic/gpunic_dev.h"
#include "gpunic/log.h"
#include "nic_loc.h"

#define CQ_DBREC_BYTES 64u

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

void cq_reset(struct nic_cq *cq)
{
	for (uint32_t i = 0; i < cq->pub.cqe_cnt; i++) {
		memset(&cq->buf[i], 0, sizeof(cq->buf[i]));
		cq->buf[i].op_own = MLX5_CQE_INVALID << 4 | MLX5_CQE_OWNER_MASK;
	}
	cq->dbrec[0] = 0;
	cq->pi = 0;
	cq->ci_seen = 0;
}

struct gpunic_cq *gpunic_cq_create_ex(struct gpunic_nic *nic, const struct gpunic_cq_init_attr *attr)
{
	struct nic_cq *cq;
	uint32_t cnt;

	if (!nic || !attr || attr->comp_mask || !attr->cqe || attr->cqe > NIC_MAX_CQE ||
	    (attr->flags & ~(uint32_t)(GPUNIC_CQ_OVERRUN_IGNORE | GPUNIC_CQ_LINE_CHECK))) {
		errno = EINVAL;
		return NULL;
	}
	cnt = roundup_pow2(attr->cqe < 2 ? 2 : attr->cqe);
	cq = aligned_alloc(64, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	memset(cq, 0, sizeof(*cq));
	cq->flags = attr->flags;
	/* across PCIe a reader cannot rely on store order: every GPU CQ carries the check */
	if (nic->attr.executor == GPUNIC_EXECUTOR_GPU)
		cq->flags |= GPUNIC_CQ_LINE_CHECK;
	cq->slow_publish = (cq->flags & GPUNIC_CQ_LINE_CHECK) ||
			   (nic->attr.flags & GPUNIC_NIC_TEST_TEAR_CQES);
	cq->owner_shift = (uint8_t)__builtin_ctz(cnt);
	cq->buf = nic_qmem_alloc(nic, (size_t)cnt * sizeof(*cq->buf), GPUNIC_QUEUE_CQ, &cq->buf_dev);
	cq->dbrec = nic_qmem_alloc(nic, CQ_DBREC_BYTES, GPUNIC_QUEUE_DBREC, &cq->dbrec_dev);
	/* The engine writes CQEs and reads the consumer counter: both need a CPU view. */
	if (!cq->buf || !cq->dbrec) {
		nic_qmem_free(nic, cq->buf_dev, (size_t)cnt * sizeof(*cq->buf));
		nic_qmem_free(nic, cq->dbrec_dev, CQ_DBREC_BYTES);
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->pub.nic = nic;
	cq->pub.cqe_cnt = cnt;
	cq_reset(cq);
	nic_lock(nic);
	cq->pub.cqn = ++nic->cqn_next;
	cq->next = nic->cqs;
	nic->cqs = cq;
	nic_unlock(nic);
	return &cq->pub;
}

struct gpunic_cq *gpunic_cq_create(struct gpunic_nic *nic, uint32_t min_cqe)
{
	struct gpunic_cq_init_attr attr = { .cqe = min_cqe };

	return gpunic_cq_create_ex(nic, &attr);
}

static void cq_free(struct nic_cq *cq)
{
	nic_qmem_free(cq->pub.nic, cq->buf_dev, (size_t)cq->pub.cqe_cnt * sizeof(*cq->buf));
	nic_qmem_free(cq->pub.nic, cq->dbrec_dev, CQ_DBREC_BYTES);
	free(cq);
}

int gpunic_cq_destroy(struct gpunic_cq *pub)
{
	struct nic_cq *cq = to_cq(pub), **pp;
	struct gpunic_nic *nic;

	if (!pub)
		return EINVAL;
	nic = pub->nic;
	nic_lock(nic);
	if (cq->users) {
		nic_unlock(nic);
		return EBUSY;
	}
	for (pp = &nic->cqs; *pp; pp = &(*pp)->next) {
		if (*pp == cq) {
			*pp = cq->next;
			break;
		}
	}
	nic_unlock(nic);
	cq_free(cq);
	return 0;
}

void cq_destroy_all(struct gpunic_nic *nic)
{
	while (nic->cqs) {
		struct nic_cq *cq = nic->cqs;

		nic->cqs = cq->next;
		cq_free(cq);
	}
}

/* Test only (GPUNIC_NIC_TEST_TEAR_CQES): the line goes out in its four 16-byte chunks in a
 * random order, op_own's chunk possibly first, with a random pause of up to ~2 us after each,
 * so that readers meet torn lines and must reject every one of them. */
static void cq_store_torn(struct gpunic_nic *nic, void *dst, const void *src)
{
	uint8_t order[4] = { 0, 1, 2, 3 };
	uint64_t r = nic_rand(nic);

	for (int i = 3; i > 0; i--) {
		int j = (int)(r % (uint64_t)(i + 1));
		uint8_t t = order[i];

		r /= (uint64_t)(i + 1);
		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < 4; i++) {
		const uint64_t *s = (const uint64_t *)src + 2 * order[i];
		uint64_t *d = (uint64_t *)dst + 2 * order[i];
		uint64_t until = nic_clock_ns() + nic_rand(nic) % 2000;

		__atomic_store_n(&d[0], s[0], __ATOMIC_RELEASE);
		__atomic_store_n(&d[1], s[1], __ATOMIC_RELEASE);
		while (nic_clock_ns() < until)
			;
	}
	nic->cnt.cqes_torn_on_purpose++;
}

void cq_payload_check_slow(struct nic_cq *cq, struct mlx5_cqe64 *cqe, const uint8_t *data,
			   uint32_t len)
{
	uint32_t w[16] = { 0 }, c;

	memcpy(w, data, len < sizeof(w) ? len : sizeof(w));
	c = gpunic_dev_payload_check(w, len, cq->pi);
	memcpy((uint8_t *)cqe + 4 * GPUNIC_DEV_CQE_PAYLOAD_WORD, &c, sizeof(c));
}

void cq_publish_slow(struct nic_cq *cq, struct mlx5_cqe64 *slot, struct mlx5_cqe64 *cqe)
{
	struct gpunic_nic *nic = cq->pub.nic;
	uint32_t w[16], c;

	if (cq->flags & GPUNIC_CQ_LINE_CHECK) {
		memcpy(w, cqe, sizeof(w));
		c = gpunic_dev_cqe_check(w, cq->pi);
		memcpy((uint8_t *)cqe + 4 * GPUNIC_DEV_CQE_CHECK_WORD, &c, sizeof(c));
	}
	if (__builtin_expect(nic->attr.flags & GPUNIC_NIC_TEST_TEAR_CQES, 0))
		cq_store_torn(nic, slot, cqe);
	else
		gpunic_line_store64(slot, cqe);
}

bool cq_write_err(struct nic_cq *cq, uint8_t opcode, uint8_t syndrome, uint8_t wqe_opcode,
		  uint32_t qpn, uint16_t wqe_counter)
{
	struct mlx5_cqe64 *cqe = cq_next(cq);
	struct mlx5_err_cqe *err = (struct mlx5_err_cqe *)cqe;

	if (!cqe)
		return false;
	err->syndrome = syndrome;
	err->s_wqe_opcode_qpn = htobe32((uint32_t)wqe_opcode << 24 | (qpn & 0xFFFFFFu));
	err->wqe_counter = htobe16(wqe_counter);
	cq_publish(cq, cqe, opcode, 0);
	return true;
}

/* libmlx5's syndrome -> ibv_wc_status mapping (mlx5_handle_error_cqe), in
 * ibv_wc_status_str()'s words, so that gpunic's messages read like rdma-core's. */
const char *gpunic_syndrome_str(uint8_t syndrome)
{
	switch (syndrome) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return "local length error";
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return "local QP operation error";
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
		return "local protection error";
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
		return "Work Request Flushed Error";
	case MLX5_CQE_SYNDROME_MW_BIND_ERR:
		return "memory management operation error";
	case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
		return "bad response error";
	case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return "local access error";
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return "remote invalid request error";
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return "remote access error";
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
		return "remote operation error";
	case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return "transport retry counter exceeded";
	case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return "RNR retry counter exceeded";
	case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return "aborted error";
	default:
		return "unknown syndrome";
	}
}
