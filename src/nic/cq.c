// SPDX-License-Identifier: MIT
/*
 * Completion queues in mlx5 format: a ring of mlx5_cqe64 that the engine produces into and the
 * data path consumes from. Entry i is software-owned when its opcode is not MLX5_CQE_INVALID and
 * its owner bit equals (ci / cqe_cnt) & 1, so a CQE becomes visible by its op_own store alone;
 * everything else in the entry is written first (release ordering). The engine never overwrites
 * an entry the consumer has not passed: it reads the consumer counter from the CQ's doorbell
 * record before each CQE, as a ConnectX does, and reports an overflow instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nic_loc.h"

#define CQ_CI_MASK 0x00FFFFFFu	/* the consumer counter in dbrec is 24 bits */
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
		cq->buf[i].op_own = MLX5_CQE_INVALID << 4;
	}
	cq->dbrec[0] = 0;
	cq->pi = 0;
}

struct gpunic_cq *gpunic_cq_create(struct gpunic_nic *nic, uint32_t min_cqe)
{
	struct nic_cq *cq;
	uint32_t cnt;

	if (!nic || !min_cqe || min_cqe > NIC_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	cnt = roundup_pow2(min_cqe < 2 ? 2 : min_cqe);
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->buf = nic_qmem_alloc(nic, (size_t)cnt * sizeof(*cq->buf), NIC_QMEM_CQ, &cq->buf_dev);
	cq->dbrec = nic_qmem_alloc(nic, CQ_DBREC_BYTES, NIC_QMEM_CQ_DBREC, &cq->dbrec_dev);
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

bool cq_has_room(struct nic_cq *cq)
{
	uint32_t ci = load_be32_acquire(&cq->dbrec[0]);

	return ((cq->pi - ci) & CQ_CI_MASK) < cq->pub.cqe_cnt;
}

struct mlx5_cqe64 *cq_next(struct nic_cq *cq)
{
	struct mlx5_cqe64 *cqe;

	if (!cq_has_room(cq))
		return NULL;
	cqe = &cq->buf[cq->pi & (cq->pub.cqe_cnt - 1)];
	/* op_own stays as it is until cq_publish: it still reads "not yours" to the consumer */
	memset(cqe, 0, offsetof(struct mlx5_cqe64, op_own));
	return cqe;
}

void cq_publish(struct nic_cq *cq, struct mlx5_cqe64 *cqe, uint8_t opcode, uint8_t flags)
{
	uint8_t owner = (cq->pi / cq->pub.cqe_cnt) & MLX5_CQE_OWNER_MASK;

	__atomic_store_n(&cqe->op_own, (uint8_t)(opcode << 4 | flags | owner), __ATOMIC_RELEASE);
	cq->pi++;
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
