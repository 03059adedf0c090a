/* SPDX-License-Identifier: MIT */
/*
 * `gpunic perf`'s command line: gpunic's options and perftest's (ib_write_lat and friends),
 * with perftest's meanings where they have one here and a reason where they cannot apply.
 */
#ifndef GPUNIC_APP_PERF_OPTS_H
#define GPUNIC_APP_PERF_OPTS_H

#include <stdbool.h>

#include "perf_print.h"
#include "perf_run.h"

#define PERF_USAGE_EXIT 2

/* What the command line said beyond struct perf_cfg, and which defaults it overrode. */
struct perf_opts {
	struct perf_view view;
	bool size, iters, executor, threads, port, check_threads, atomic_type, inline_size;
	bool addressing;		/* --link, --ip, --mac or --peer-mac */
	bool oob_bind;
	/* --pair: the server's side */
	bool pair, peer_executor, peer_gpu_exec, peer_gpu_set;
	int peer_gpu;
};

/* Return: 0, PERF_USAGE_EXIT (said on stderr), or -1 after --help (exit 0). */
int perf_opts_parse(int argc, char **argv, struct perf_cfg *cfg, struct perf_opts *o);

/* After the executor is known: the options' combinations, and the defaults they leave.
 * Return: 0 or PERF_USAGE_EXIT. */
int perf_opts_check(struct perf_cfg *cfg, const struct perf_opts *o);

#endif
