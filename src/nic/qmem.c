// SPDX-License-Identifier: MIT
/*
 * Queue memory: every buffer the data path shares with the engine (send and receive rings,
 * doorbell record, doorbell word, mailbox, data-path counters, CQ rings and their doorbell
 * records) comes from nic_qmem_alloc. Placement (host-pinned, GPU, GPU-mapped: DESIGN.md piece 7)
 * is decided here and nowhere else, so the memory layer replaces this one file.
 */
#include <stdlib.h>
#include <string.h>

#include "nic_loc.h"

#define QMEM_ALIGN 4096u

void *nic_qmem_alloc(size_t bytes, enum nic_qmem_use use)
{
	size_t rounded = (bytes + QMEM_ALIGN - 1) & ~(size_t)(QMEM_ALIGN - 1);
	void *p;

	(void)use;	/* host memory for every use until a placement layer is plugged in */
	if (!rounded)
		rounded = QMEM_ALIGN;
	p = aligned_alloc(QMEM_ALIGN, rounded);
	if (p)
		memset(p, 0, rounded);
	return p;
}

void nic_qmem_free(void *p, size_t bytes, enum nic_qmem_use use)
{
	(void)bytes;
	(void)use;
	free(p);
}
