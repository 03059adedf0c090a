/* SPDX-License-Identifier: MIT */
/*
 * gpunic doctor: what it learns about the machine (doctor_probe.c), and the verdicts and
 * output built from it (doctor_report.c). cmd_doctor.c parses the flags and runs the two.
 */
#ifndef GPUNIC_APP_DOCTOR_REPORT_H
#define GPUNIC_APP_DOCTOR_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/gpu.h"
#include "gpunic/mem.h"
#include "gpunic/mem_sanity.h"
#include "gpunic/verbs.h"

#define DOC_TEXT 256

/* What the flags ask for: the setup whose verdicts decide the exit status. */
enum doc_executor { DOC_EXEC_CPU = 0, DOC_EXEC_GPU = 1 };
enum doc_handler {
	DOC_HANDLER_AUTO = 0,
	DOC_HANDLER_GPU_DB = 1,
	DOC_HANDLER_CPU_PROXY = 2,
	DOC_HANDLER_GPU_BF = 3,
};

struct doc_request {
	enum doc_executor executor;
	enum doc_handler handler;
	int placement;		/* enum gpunic_mem_placement, or -1: none asked for */
	const char *link;	/* link spec, or NULL */
	int cuda_device;
};

/* One link check. */
struct doc_link {
	const char *name;	/* "udp", "dgram", "shm", "packet", "xdp", "xdp-skb", "requested" */
	char what[DOC_TEXT];	/* what was tried, e.g. "bind UDP 127.0.0.1:4791" */
	bool ok;
	int err;		/* errno when !ok */
	char detail[DOC_TEXT];	/* result, or the failure */
	char cause[DOC_TEXT];	/* likely cause of a failure; "" */
};

enum doc_link_id { DOC_LINK_UDP, DOC_LINK_DGRAM, DOC_LINK_SHM, DOC_LINK_PACKET,
		   DOC_LINK_XDP, DOC_LINK_XDP_SKB, DOC_LINK_REQUESTED, DOC_LINK_MAX };

/* One placement, proven by allocating, writing and reading back a small buffer. */
struct doc_placement {
	bool ok;
	int err;
	enum gpunic_mem_placement got;
	enum gpunic_mem_backend backend;
	char detail[DOC_TEXT];
};

struct doc_queue {
	enum gpunic_mem_placement placement;
	const char *why;
};

struct doc_facts {
	/* host */
	unsigned cpus;			/* CPUs this process may run on */
	bool iommu_on;			/* /sys/class/iommu has entries */
	unsigned iommu_units;
	bool iommu_pt;			/* iommu=pt on the kernel command line */
	char iommu_cmdline[DOC_TEXT];	/* the iommu words of /proc/cmdline */
	char nvidia_driver[DOC_TEXT];	/* /proc/driver/nvidia/version, first line */
	bool nvidia_dev;		/* /dev/nvidia0 exists */

	/* GPU and memory */
	int gpu_ret;
	struct gpunic_gpu_info gpu;
	bool mem_open;
	struct gpunic_mem_caps caps;
	struct doc_placement placements[GPUNIC_MEM_PLACEMENT_MAX];
	struct doc_queue queues[GPUNIC_QUEUE_KIND_MAX];	/* for the requested executor */

	/* GDRCopy */
	int gdrdrv_err;			/* 0: /dev/gdrdrv opens */
	char gdrdrv_why[DOC_TEXT];
	int sanity_ret;
	struct gpunic_sanity_report sanity;

	/* links */
	struct doc_link links[DOC_LINK_MAX];
};

/* doctor_probe.c: fill @f. Runs the GDRCopy sanity suite first, before CUDA starts here. */
void doc_probe(const struct doc_request *req, struct doc_facts *f);

/* doctor_report.c */
enum doc_verdict {
	DOC_WORKS = 0,
	DOC_FALLBACK,	/* works, with something less than asked for */
	DOC_DEGRADED,	/* works, slower than it should */
	DOC_WAIVED,	/* could not be checked here; the reason says why */
	DOC_NO,
	DOC_VERDICT_MAX
};

#define DOC_MAX_ROWS 32

struct doc_row {
	const char *section;	/* "executor", "handler", "memory", "gdrcopy", "link" */
	char scenario[DOC_TEXT];
	char needs[DOC_TEXT];
	char available[DOC_TEXT];
	enum doc_verdict verdict;
	char detail[DOC_TEXT];	/* what the verdict means here */
	char cause[DOC_TEXT];	/* likely cause of a failure; "" */
	bool requested;		/* part of the setup the flags ask for */
};

struct doc_report {
	unsigned nrows;
	struct doc_row rows[DOC_MAX_ROWS];
	bool ok;		/* every requested row works (perhaps with a fallback) */
};

void doc_build(const struct doc_request *req, const struct doc_facts *f, struct doc_report *r);
void doc_print_text(FILE *out, const struct doc_request *req, const struct doc_facts *f,
		    const struct doc_report *r);
void doc_print_json(FILE *out, const struct doc_request *req, const struct doc_facts *f,
		    const struct doc_report *r);

const char *doc_verdict_str(enum doc_verdict v);
const char *doc_handler_str(enum doc_handler h);
const char *doc_executor_str(enum doc_executor e);

#endif
