/* SPDX-License-Identifier: MIT */
/*
 * What `gpunic perf` prints: perftest's banner, address lines and result table (so that eyes
 * and scripts used to ib_write_lat and friends read ours), gpunic's verification lines, and
 * the --json object. A side's lines come as it runs (perf_view_hooks) or all at its end.
 */
#ifndef GPUNIC_APP_PERF_PRINT_H
#define GPUNIC_APP_PERF_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "perf_run.h"

/* How one side is shown, and what it has shown so far. */
struct perf_view {
	bool json;		/* stdout holds one JSON object: the rest goes to stderr or nowhere */
	bool gbits;		/* --report_gbits: bandwidth in Gb/s (10^9 bits), as perftest's */
	const char *ib_dev;	/* perftest's -d, -i, -x as given (NULL, 0, -1: not given) */
	int ib_port;
	int gid_index;
	bool unsorted;		/* -U: each latency sample in iteration order before the row */
	bool histogram;		/* -H: the same, sorted */
	bool profile;		/* --profile: the executor's stage times after each latency row */
	/* progress */
	bool headed;		/* banner and table header printed */
	unsigned rows;		/* result rows printed */
};

/* Hooks that print @v's side as it runs: the server's wait, the banner, each size's row
 * (none with --json). */
void perf_view_hooks(struct perf_view *v, struct perf_hooks *h);

/* Once the side is done: what is not printed yet, the verification lines, the error if any. */
void perf_report(struct perf_view *v, const struct perf_cfg *cfg, const struct perf_result *res,
		 int err);

/* One side's JSON object, without a line end (--pair nests two). */
void perf_print_json(const struct perf_cfg *cfg, const struct perf_result *res, int err);

#endif
