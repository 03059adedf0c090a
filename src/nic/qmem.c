// SPDX-License-Identifier: MIT
/*
 * Queue memory: every buffer the data path shares with the engine (send and receive rings,
 * doorbell record, doorbell word, mailbox, data-path counters, CQ rings and their doorbell
 * records) comes from nic_qmem_alloc. Placement is decided here and nowhere else: a NIC whose
 * executor is the CPU gets page-aligned host memory; a NIC driven by a GPU kernel asks the memory
 * policy where each kind of queue belongs (placement.c, docs/DESIGN.md piece 7) and keeps
 * both views: the CPU address the engine uses and the address the kernel uses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpunic/log.h"
#include "nic_loc.h"

#define QMEM_ALIGN 4096u

/* Under ASan the slack after a queue is poisoned, so an engine write past a ring's end is
 * reported even though it stays inside the page-rounded allocation. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define qmem_poison(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define qmem_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define qmem_poison(p, n) ((void)(p), (void)(n))
#define qmem_unpoison(p, n) ((void)(p), (void)(n))
#endif

static size_t qmem_round(size_t bytes)
{
	size_t rounded = (bytes + QMEM_ALIGN - 1) & ~(size_t)(QMEM_ALIGN - 1);

	return rounded ? rounded : QMEM_ALIGN;
}

static bool qmem_placed(const struct gpunic_nic *nic)
{
	return nic->attr.executor == GPUNIC_EXECUTOR_GPU && nic->attr.mem;
}

void *nic_qmem_alloc(struct gpunic_nic *nic, size_t bytes, enum gpunic_queue_kind kind,
		     void **dev)
{
	enum gpunic_mem_placement where;
	struct nic_qmem_rec *rec;
	const char *why = "";
	void *p;

	*dev = NULL;
	if (!qmem_placed(nic)) {
		p = aligned_alloc(QMEM_ALIGN, qmem_round(bytes));
		if (p) {
			memset(p, 0, qmem_round(bytes));
			qmem_poison((uint8_t *)p + bytes, qmem_round(bytes) - bytes);
		}
		*dev = p;
		return p;
	}
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return NULL;
	where = gpunic_mem_placement_for(nic->attr.mem, kind, true, &why);
	rec->buf = gpunic_mem_alloc(nic->attr.mem, qmem_round(bytes), QMEM_ALIGN, where);
	if (!rec->buf) {
		gpunic_err("%zu bytes of %s memory for %s: %s", bytes,
			   gpunic_mem_placement_str(where), gpunic_queue_kind_str(kind),
			   strerror(errno));
		free(rec);
		return NULL;
	}
	gpunic_dbg("%s: %s (%s): %s", gpunic_queue_kind_str(kind),
		   gpunic_mem_placement_str(rec->buf->placement),
		   gpunic_mem_backend_str(rec->buf->backend), why);
	rec->cpu = rec->buf->cpu;
	rec->dev = rec->buf->gpu;
	pthread_mutex_lock(&nic->qmem_lock);
	rec->next = nic->qmem;
	nic->qmem = rec;
	pthread_mutex_unlock(&nic->qmem_lock);
	*dev = rec->dev;
	return rec->cpu;
}

static struct nic_qmem_rec **qmem_find(struct gpunic_nic *nic, void *dev)
{
	struct nic_qmem_rec **pp;

	for (pp = &nic->qmem; *pp; pp = &(*pp)->next)
		if ((*pp)->dev == dev)
			return pp;
	return NULL;
}

void nic_qmem_free(struct gpunic_nic *nic, void *dev, size_t bytes)
{
	struct nic_qmem_rec **pp, *rec;

	(void)bytes;
	if (!dev)
		return;
	if (!qmem_placed(nic)) {
		qmem_unpoison(dev, qmem_round(bytes));
		free(dev);
		return;
	}
	pthread_mutex_lock(&nic->qmem_lock);
	pp = qmem_find(nic, dev);
	rec = pp ? *pp : NULL;
	if (rec)
		*pp = rec->next;
	pthread_mutex_unlock(&nic->qmem_lock);
	if (!rec)
		return;
	gpunic_mem_free(nic->attr.mem, rec->buf);
	free(rec);
}

int nic_qmem_zero(struct gpunic_nic *nic, void *dev, size_t bytes)
{
	static const uint8_t zeros[256];
	struct nic_qmem_rec **pp, *rec;
	size_t off, n;
	int rc;

	if (!qmem_placed(nic)) {
		memset(dev, 0, bytes);
		return 0;
	}
	pthread_mutex_lock(&nic->qmem_lock);
	pp = qmem_find(nic, dev);
	rec = pp ? *pp : NULL;
	pthread_mutex_unlock(&nic->qmem_lock);
	if (!rec)
		return EINVAL;
	if (rec->cpu) {
		memset(rec->cpu, 0, bytes);
		return 0;
	}
	/* GPU-resident (data-path state): only the memory layer's copy reaches it. */
	for (off = 0; off < bytes; off += n) {
		n = bytes - off < sizeof(zeros) ? bytes - off : sizeof(zeros);
		rc = gpunic_mem_write(nic->attr.mem, rec->buf, off, zeros, n);
		if (rc)
			return rc;
	}
	return 0;
}

void nic_qmem_release_all(struct gpunic_nic *nic)
{
	struct nic_qmem_rec *rec;

	while ((rec = nic->qmem)) {
		nic->qmem = rec->next;
		gpunic_mem_free(nic->attr.mem, rec->buf);
		free(rec);
	}
}
