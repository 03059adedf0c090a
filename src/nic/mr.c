// SPDX-License-Identifier: MIT
/*
 * Protection domains and memory regions. A key is (index << 8) | tag, as an mlx5 mkey: the index
 * finds the region in one load, the random tag makes a stale or guessed key fail the compare.
 * lkey and rkey carry different tags, so knowing one does not give the other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nic_loc.h"

#define ACCESS_ALL (GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE | \
		    GPUNIC_ACCESS_REMOTE_READ | GPUNIC_ACCESS_REMOTE_ATOMIC)

/* xorshift64*: enough to make tags unpredictable to a remote peer that sees a few keys */
static uint8_t next_tag(struct gpunic_nic *nic)
{
	nic->rng ^= nic->rng >> 12;
	nic->rng ^= nic->rng << 25;
	nic->rng ^= nic->rng >> 27;
	return (uint8_t)((nic->rng * 0x2545F4914F6CDD1DULL) >> 56);
}

static uint32_t make_key(struct gpunic_nic *nic, uint32_t index)
{
	uint32_t key;

	do
		key = index << KEY_TAG_BITS | next_tag(nic);
	while (key == MLX5_INVALID_LKEY);	/* would end a receive SGE list */
	return key;
}

struct gpunic_pd *gpunic_pd_alloc(struct gpunic_nic *nic)
{
	struct nic_pd *pd;

	if (!nic) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	nic_lock(nic);
	pd->pub.nic = nic;
	pd->pub.handle = ++nic->pd_next;
	pd->next = nic->pds;
	nic->pds = pd;
	nic_unlock(nic);
	return &pd->pub;
}

static void pd_unlink(struct gpunic_nic *nic, struct nic_pd *pd)
{
	struct nic_pd **pp;

	for (pp = &nic->pds; *pp; pp = &(*pp)->next) {
		if (*pp == pd) {
			*pp = pd->next;
			return;
		}
	}
}

int gpunic_pd_free(struct gpunic_pd *pub)
{
	struct nic_pd *pd = to_pd(pub);
	struct gpunic_nic *nic;

	if (!pub)
		return EINVAL;
	nic = pub->nic;
	nic_lock(nic);
	if (pd->users) {
		nic_unlock(nic);
		return EBUSY;
	}
	pd_unlink(nic, pd);
	nic_unlock(nic);
	free(pd);
	return 0;
}

void pd_destroy_all(struct gpunic_nic *nic)
{
	while (nic->pds) {
		struct nic_pd *pd = nic->pds;

		nic->pds = pd->next;
		free(pd);
	}
}

struct gpunic_mr *gpunic_mr_reg(struct gpunic_pd *pub, void *addr, size_t length, unsigned access)
{
	struct nic_pd *pd = to_pd(pub);
	struct gpunic_nic *nic;
	struct nic_mr *mr;
	uint32_t i, idx;

	/* as ibv_reg_mr: remote write and remote atomic need local write */
	if (!pub || !addr || !length || (access & ~ACCESS_ALL) ||
	    ((access & GPUNIC_ACCESS_REMOTE_WRITE) && !(access & GPUNIC_ACCESS_LOCAL_WRITE)) ||
	    ((access & GPUNIC_ACCESS_REMOTE_ATOMIC) && !(access & GPUNIC_ACCESS_LOCAL_WRITE)) ||
	    (uintptr_t)addr > UINT64_MAX - length) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	nic = pub->nic;
	nic_lock(nic);
	for (i = 0; i < NIC_MAX_MR - 1; i++) {
		idx = 1 + (nic->mr_next + i) % (NIC_MAX_MR - 1);
		if (!nic->mrs[idx])
			break;
	}
	if (i == NIC_MAX_MR - 1) {
		nic_unlock(nic);
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	nic->mr_next = idx;
	mr->index = idx;
	mr->va = (uintptr_t)addr;
	mr->pub.pd = pub;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->pub.access = access;
	mr->pub.lkey = make_key(nic, idx);
	do
		mr->pub.rkey = make_key(nic, idx);
	while (mr->pub.rkey == mr->pub.lkey);
	nic->mrs[idx] = mr;
	pd->users++;
	nic_unlock(nic);
	return &mr->pub;
}

int gpunic_mr_dereg(struct gpunic_mr *pub)
{
	struct nic_mr *mr = to_mr(pub);
	struct gpunic_nic *nic;

	if (!pub)
		return EINVAL;
	nic = pub->pd->nic;
	nic_lock(nic);
	nic->mrs[mr->index] = NULL;
	to_pd(pub->pd)->users--;
	nic_unlock(nic);
	free(mr);
	return 0;
}

void mr_destroy_all(struct gpunic_nic *nic)
{
	for (uint32_t i = 0; i < NIC_MAX_MR; i++) {
		if (nic->mrs[i]) {
			to_pd(nic->mrs[i]->pub.pd)->users--;
			free(nic->mrs[i]);
			nic->mrs[i] = NULL;
		}
	}
}

bool mr_scatter(struct gpunic_nic *nic, struct nic_pd *pd, const struct nic_sge *sge,
		uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len)
{
	enum gpunic_drop_reason why;
	uint32_t base = 0, done = 0;

	for (uint32_t i = 0; i < nsge && done < len; i++) {
		uint32_t in, n;
		uint8_t *dst;

		if (base + sge[i].len <= off + done) {
			base += sge[i].len;
			continue;
		}
		in = off + done - base;
		n = sge[i].len - in;
		if (n > len - done)
			n = len - done;
		dst = mr_lookup_local(nic, pd, sge[i].lkey, sge[i].addr + in, n,
				      GPUNIC_ACCESS_LOCAL_WRITE, &why);
		if (!dst)
			return false;
		memcpy(dst, src + done, n);
		done += n;
		base += sge[i].len;
	}
	return done == len;
}
