// SPDX-License-Identifier: MIT
/*
 * Where each queue the NIC shares with the data path lives (docs/DESIGN.md piece 7); the
 * NIC's one queue allocator (qmem.c) asks here. The softnic is a CPU thread; with a GPU
 * executor the kernel is the other side of every queue. What decides the placement is which
 * side reads: a CPU read through GDRCopy's write-combined BAR mapping costs about 1 us (reads
 * are uncached and not prefetched; GDRCopy's copylat measures 0.9-3 us for 1-64 B), while a CPU
 * write through it is posted and costs about 0.1 us. So the softnic reads only host-pinned
 * memory, and writes into GPU memory only through a GDRCopy mapping.
 */
#include "gpunic/verbs.h"

enum softnic_access {
	SOFTNIC_READS,	/* GPU produces, softnic consumes */
	SOFTNIC_WRITES,	/* softnic produces, GPU consumes */
	SOFTNIC_NEVER,	/* only the executor touches it on the data path */
};

static const struct {
	const char *name;
	enum softnic_access access;
} queue_kinds[GPUNIC_QUEUE_KIND_MAX] = {
	[GPUNIC_QUEUE_SQ] = { "SQ", SOFTNIC_READS },
	[GPUNIC_QUEUE_RQ] = { "RQ", SOFTNIC_READS },
	[GPUNIC_QUEUE_CQ] = { "CQ", SOFTNIC_WRITES },
	[GPUNIC_QUEUE_DBREC] = { "DBREC", SOFTNIC_READS },
	[GPUNIC_QUEUE_DOORBELL] = { "DOORBELL", SOFTNIC_READS },
	[GPUNIC_QUEUE_PAYLOAD] = { "PAYLOAD", SOFTNIC_WRITES },
	[GPUNIC_QUEUE_SEND_PAYLOAD] = { "SEND_PAYLOAD", SOFTNIC_READS },
	[GPUNIC_QUEUE_EXEC_STATE] = { "EXEC_STATE", SOFTNIC_NEVER },
};

const char *gpunic_queue_kind_str(enum gpunic_queue_kind kind)
{
	if ((unsigned)kind >= GPUNIC_QUEUE_KIND_MAX)
		return "?";
	return queue_kinds[kind].name;
}

/* GPU_CPU needs real BAR mappings: asked of the memory context once per queue allocated */
static bool has_gdrcopy(struct gpunic_mem *mem)
{
	struct gpunic_mem_caps caps;

	return mem && !gpunic_mem_query(mem, &caps) && caps.gdrcopy;
}

enum gpunic_mem_placement gpunic_mem_placement_for(struct gpunic_mem *mem,
						   enum gpunic_queue_kind kind, bool executor_is_gpu,
						   const char **why)
{
	const char *reason;
	enum gpunic_mem_placement p;

	if ((unsigned)kind >= GPUNIC_QUEUE_KIND_MAX) {
		p = GPUNIC_MEM_HOST;
		reason = "unknown queue kind";
	} else if (!executor_is_gpu) {
		p = GPUNIC_MEM_HOST;
		reason = "CPU executor: both sides are CPU threads, plain host memory serves";
	} else if (queue_kinds[kind].access == SOFTNIC_READS) {
		p = GPUNIC_MEM_CPU_GPU;
		reason = "the softnic reads it: host-pinned memory, since a CPU read through the "
			 "GPU BAR costs about 1 us";
	} else if (queue_kinds[kind].access == SOFTNIC_NEVER) {
		p = GPUNIC_MEM_GPU;
		reason = "only the GPU touches it on the data path: device memory, where its "
			 "atomics stay local (the control path writes it with gpunic_mem_write)";
	} else if (has_gdrcopy(mem)) {
		p = GPUNIC_MEM_GPU_CPU;
		reason = "the softnic only writes it and the GPU polls it: GPU memory through a "
			 "GDRCopy write-combined mapping (cheap CPU writes, local GPU polls)";
	} else {
		p = GPUNIC_MEM_CPU_GPU;
		reason = "the softnic only writes it, but GDRCopy is not in use: host-pinned "
			 "memory that the GPU reads over PCIe";
	}
	if (why)
		*why = reason;
	return p;
}
