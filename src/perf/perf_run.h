/* SPDX-License-Identifier: MIT */
/*
 * libgpunic_perf, what `gpunic perf` runs (its command line and output stay in apps/gpunic):
 * one side (server or client) of a perftest-style test, over any gpunic link,
 * with the posting loop on the GPU (src/gpu/perf.cu) or on host threads (the CPU executor),
 * both running perf_dev.h. The out-of-band exchange is perftest's (gpunic/perftest.h), so
 * either side may be a real perftest tool.
 *
 * Every function returns 0 or a positive errno value and reports what failed on stderr,
 * prefixed "gpunic perf: ".
 */
#ifndef GPUNIC_PERF_RUN_H
#define GPUNIC_PERF_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/perf_dev.h"
#include "gpunic/verbs.h"
#include "gpunic/perftest.h"
#include "stats.h"

#define PERF_ERR(...) fprintf(stderr, "gpunic perf: " __VA_ARGS__)

/* Sweep (-a): 2^1 .. 2^23 bytes, as perftest's RUN_ALL. */
#define PERF_SWEEP_MIN_LOG 1
#define PERF_SWEEP_MAX_LOG 23
#define PERF_MAX_SIZE (1u << PERF_SWEEP_MAX_LOG)
#define PERF_MAX_RESULTS (PERF_SWEEP_MAX_LOG + 1)
/* Bandwidth payload slots: as many messages as fit here keep their own slot (see perf_dev.h). */
#define PERF_RING_BYTES (16u << 20)
#define PERF_DEFAULT_TX_DEPTH 128u	/* perftest's */
#define PERF_MAX_THREADS 1024u
#define PERF_DEFAULT_LAT_ITERS 1000u	/* perftest's defaults */
#define PERF_DEFAULT_BW_ITERS 5000u
#define PERF_DEFAULT_LAT_SIZE 2u
#define PERF_DEFAULT_BW_SIZE 65536u
#define PERF_MAX_INLINE 64u		/* default -I: what the QP is asked to carry inline */
#define PERF_MAX_INLINE_DATA 972u	/* largest -I: ctrl + raddr + inline header in 63 DS */
/* Default checker threads of a GPU executor: one thread's loads across PCIe cannot keep up. */
#define PERF_GPU_CHECK_THREADS 32u

struct perf_cfg;
struct perf_result;

/*
 * What a caller sees while a side runs (each may be NULL): a server's listener is up, both QPs
 * are known (res: addresses, MTU), one size's numbers are in res->r[i]. Called on the side's
 * own thread; what they print is the caller's business.
 */
struct perf_hooks {
	void (*waiting)(void *arg, const struct perf_cfg *cfg);
	/* a client, before it waits for its server (it may not listen yet) */
	void (*connecting)(void *arg, const struct perf_cfg *cfg);
	void (*connected)(void *arg, const struct perf_cfg *cfg, const struct perf_result *res);
	void (*size_done)(void *arg, const struct perf_cfg *cfg, const struct perf_result *res,
			  unsigned i);
	void *arg;
};

struct perf_cfg {
	enum gpunic_perf_test test;
	const char *host;		/* client: the server's name; NULL: we are the server */
	const char *link;		/* link spec; NULL: udp on the address below */
	uint32_t ip;			/* our IPv4; 0: the out-of-band connection's address */
	bool mac_set;
	uint8_t mac[6];			/* our MAC (else 02:00 + our IPv4) */
	bool peer_mac_set;
	uint8_t peer_mac[6];		/* a non-gpunic peer's MAC (else derived from its IP) */
	enum gpunic_qp_type qp_type;
	uint32_t size;
	bool sweep;
	uint32_t max_size;		/* largest size of a sweep */
	uint32_t iters;
	int mtu;			/* enum gpunic_mtu; 0: the largest the link carries */
	bool gpu_exec;
	int gpu;			/* CUDA device */
	enum gpunic_handler_mode handler;
	uint16_t oob_port;
	const char *oob_bind;		/* server: the listener's address; NULL: every address */
	bool psn_set;
	uint32_t psn;			/* first PSN (else random) */
	uint32_t inline_size;		/* max_inline_data asked of the QP (perftest -I) */
	const struct perf_hooks *hooks;	/* NULL: none */
	bool keep_samples;		/* latency: keep each iteration's time (perftest -U, -H) */
	int timeout_ms;			/* out-of-band waits and the executor watchdog */
	int accept_ms;			/* server: the wait for a client; 0: until one comes,
					 * as perftest's server waits */
	uint32_t threads;		/* put_bw posting threads */
	uint32_t check_threads;		/* send_bw server, read_bw client: threads that help
					 * check each message (beside the one running the test) */
	uint32_t tx_depth;
	int engine_cpu;			/* -1: unpinned */
	int exec_cpu;			/* first CPU executor thread's CPU; -1: unpinned */
	bool atomic_cas;		/* atomic_*: CMP_AND_SWAP (else FETCH_AND_ADD, perftest -A) */
	bool profile;			/* latency: time the executor's stages (--profile) */
};

struct perf_size_result {
	uint32_t bytes;
	uint64_t iters;
	bool lat;
	struct stats_summary sum;	/* latency tests */
	struct stats_bw bw;		/* bandwidth tests */
	bool measured;			/* false: this side was passive (nothing to report) */
	bool remote;			/* bw numbers are the client's report (a server) */
	uint64_t *samples;		/* keep_samples: each iteration's time (ns), in order */
	uint32_t nsamples;
	struct gpunic_perf_lat_profile prof;	/* latency tests: the executor's stage sums */
};

struct perf_result {
	struct perf_size_result r[PERF_MAX_RESULTS];
	unsigned n;
	const char *executor;		/* "gpu" or "cpu" */
	const char *handler;		/* resolved handler mode */
	char gpu_name[96];
	int mtu_bytes;
	const char *peer_kind;		/* "gpunic" or "perftest <version>" */
	char peer_version[GPUNIC_PERFTEST_VERSION_BYTES + 1];
	uint32_t local_qpn, remote_qpn;
	uint32_t local_ip, remote_ip;
	struct gpunic_perftest_dest local, remote;	/* what the two sides exchanged */
	uint32_t max_inline;		/* the QP's inline limit, bytes */
	uint32_t rx_depth;		/* receives posted ahead (send tests), first size */
	char link[64];			/* the link this side opened */
	/* payload verification */
	bool verify_ran;		/* this side checked payload */
	bool verify_skipped;		/* would have, but the peer is not gpunic */
	uint64_t verified;
	uint64_t bad;
	uint64_t bad_msg, bad_off;
	unsigned bad_byte, want_byte;
	uint64_t ring_messages;		/* messages sent into the ring (verified <= this) */
	/* atomic_*: the client checks every fetched value (verified, bad, bad_msg: the first
	 * wrong operation, bad_off: its target); the server its targets (atomic_server) */
	bool atomic_server;
	uint64_t atomic_got, atomic_want;	/* the first wrong value, and the right one */
	uint64_t atomic_executed;	/* server: atomics its QP executed */
	uint64_t atomic_sum;		/* server: what its targets add up to */
};

const char *perf_test_name(enum gpunic_perf_test t);
int perf_test_parse(const char *s, enum gpunic_perf_test *t);
bool perf_test_is_lat(enum gpunic_perf_test t);
bool perf_test_is_atomic(enum gpunic_perf_test t);

/* Run the test of @cfg (all sizes). Return: 0, EBADMSG (payload mismatch), or an errno. */
int perf_run(const struct perf_cfg *cfg, struct perf_result *res);

/* Nobody holds @port of socket @type (SOCK_DGRAM, SOCK_STREAM) on @ip (host order), or with
 * @port 0 one the kernel has free, in *port. Return: 0 or errno. */
int perf_port_free(int type, uint32_t ip, uint16_t *port);
/* Free what perf_run() left beside @res (the samples of keep_samples). */
void perf_result_release(struct perf_result *res);

/*
 * perf_verify_ring - check @slots payload slots of @size bytes at @buf (slot k holds the
 * pattern of seed k), counting into @res (verified, bad, first bad message and offset).
 * What a write_bw / put_bw server does once the client is done; public for the tests.
 */
void perf_verify_ring(const uint8_t *buf, uint32_t size, uint32_t slots, struct perf_result *res);

/* Number of payload slots for @size bytes and @iters messages (both sides compute it alike). */
uint32_t perf_slots(uint32_t size, uint32_t iters);

#endif
