/* SPDX-License-Identifier: MIT */
/*
 * `gpunic perf --pair`: both sides of one test in this process, the server on a thread and the
 * client on the caller's, each with its own softnic, joined by a private shm cable and an
 * out-of-band connection on 127.0.0.1. One process matters on one GPU: kernels of two
 * processes take turns on it (a ~2 ms time slice without MPS), kernels of one process on their
 * own streams run side by side, so a ping-pong between two GPU-initiated sides measures gpunic.
 */
#ifndef GPUNIC_PERF_PAIR_H
#define GPUNIC_PERF_PAIR_H

#include "perf_run.h"

/* Where perf_pair_run() keeps what the two configurations point at. */
struct perf_pair_names {
	char server_link[64];
	char client_link[64];
};

/*
 * perf_pair_run - run @server's and @client's sides of one test at once
 * @client, @server: complete except for the host, link, addresses and (when 0) the out-of-band
 *       port, which are set here; the server's executor and GPU may differ from the client's
 * Return: the client's perf_run() result; *@server_err gets the server's.
 */
int perf_pair_run(struct perf_cfg *client, struct perf_cfg *server, struct perf_pair_names *names,
		  struct perf_result *cres, struct perf_result *sres, int *server_err);

#endif
