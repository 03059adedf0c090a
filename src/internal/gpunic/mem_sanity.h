/* SPDX-License-Identifier: MIT */
/*
 * A sanity suite for GDRCopy as the mem layer uses it, in the spirit of GDRCopy's own
 * gdrcopy_sanity test program: pin/map/unmap/unpin, aligned and unaligned offsets and
 * sizes, copies both ways with the data checked, a mapping not inherited across fork(), and
 * invalid calls rejected. `gpunic doctor` runs it; so can any tool.
 *
 * Each test runs in a forked child, in its own process group, with a timeout (GDRCopy's
 * testsuite habit): a crash or a hang fails that test only. A child opens CUDA (or the fake
 * GPU) and the library itself, so call gpunic_mem_sanity() BEFORE this process initialises
 * CUDA: CUDA does not survive fork().
 *
 * Results are passed, failed or waived, never "passed" for what did not run: without the
 * library, with GPUNIC_GDRCOPY=0 or without a GPU, tests are waived and say why.
 *
 * The same environment as gpunic_mem_open() applies (mem.h): GPUNIC_GDRCOPY, GPUNIC_GDRAPI_LIB,
 * GPUNIC_CUDA_LIB, GPUNIC_MEM_FAKE_GPU (tests only: then the suite runs against host memory
 * and says nothing about real BAR mappings).
 */
#ifndef GPUNIC_MEM_SANITY_H
#define GPUNIC_MEM_SANITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUNIC_SANITY_MAX_TESTS 16
#define GPUNIC_SANITY_DETAIL_BYTES 256

enum gpunic_sanity_status {
	GPUNIC_SANITY_PASSED = 0,
	GPUNIC_SANITY_FAILED = 1,
	GPUNIC_SANITY_WAIVED = 2,
	GPUNIC_SANITY_STATUS_MAX /* internal */
};

struct gpunic_sanity_result {
	const char *name;		/* family_variant, e.g. "invalid_double_map" (static) */
	const char *checks;		/* what the test checks, one sentence (static) */
	enum gpunic_sanity_status status;
	char detail[GPUNIC_SANITY_DETAIL_BYTES]; /* failed: what and the likely cause;
						  * waived: why; passed: a note or "" */
	uint32_t elapsed_ms;
};

struct gpunic_sanity_attr {
	int cuda_device;	/* CUDA device ordinal */
	uint32_t timeout_ms;	/* per test (0: 10000) */
};

struct gpunic_sanity_report {
	char lib[128];			/* the library file tried */
	bool fake_gpu;			/* ran against GPUNIC_MEM_FAKE_GPU=1 host memory */
	int runtime_major, runtime_minor;	/* libgdrapi; -1 if not learned */
	int driver_major, driver_minor;		/* gdrdrv; -1 if not learned */
	unsigned count, passed, failed, waived;
	struct gpunic_sanity_result tests[GPUNIC_SANITY_MAX_TESTS];
};

/**
 * gpunic_mem_sanity - run every test of the suite
 * @attr: may be NULL (device 0, 10 s per test)
 * Return: 0 when the suite ran (see rep->failed for the verdict; a fully waived suite also
 * returns 0), EINVAL for a NULL @rep, or the errno of a fork/pipe that failed.
 */
int gpunic_mem_sanity(const struct gpunic_sanity_attr *attr, struct gpunic_sanity_report *rep);

/* "passed", "failed", "waived"; "?" otherwise. */
const char *gpunic_sanity_status_str(enum gpunic_sanity_status status);

/**
 * gpunic_gdrdrv_check - can this process open /dev/gdrdrv read-write?
 * @why: receives a sentence naming the likely cause when it cannot (may be NULL)
 * Return: 0 when it opens, otherwise the errno of open(2): ENOENT (module not loaded),
 * EACCES (permissions), ...
 */
int gpunic_gdrdrv_check(char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_MEM_SANITY_H */
