/* SPDX-License-Identifier: MIT */
/*
 * The FPGA -> GPU -> FPGA loopback experiment, shared by `gpunic sensor`, `gpunic loop` and
 * `gpunic bench loopback`: the message format, the sensor (the FPGA/HSB emulator) and the
 * forwarder on the host with the GPU, for each executor.
 *
 * Message (--size bytes, at least LB_MSG_MIN), little-endian:
 *   bytes 0-7    sequence word: run epoch (16 bits) << 48 | sequence number (48 bits)
 *   bytes 8-15   send timestamp, ns on the sensor's clock (timing_now_ns)
 *   bytes 16-    pattern derived from the sequence word and the timestamp
 * The forwarder echoes the message as a SEND, optionally adding 1 to every byte (work add-one);
 * the sensor undoes that, checks the pattern, that the timestamp is the one it recorded for that
 * sequence number and that the length is right. A reply that fails any check is corrupt, and
 * corrupt, lost, duplicated and reordered replies are all counted and reported.
 *
 * The sensor sends either HSB-style RDMA WRITE_WITH_IMM into slot seq % slots of the forwarder's
 * receive ring (immediate = slot index; the ring's slot stride is LB_SLOT_BYTES, which is what
 * the ring's length in struct gpunic_qp_info divides by) or a plain SEND. It drives its NIC
 * inline (gpunic_nic_poll from the sending thread: run-to-completion, as an FPGA has no
 * separate engine).
 *
 * This is libgpunic_exp (src/exp): the CLI's sensor, loop and bench commands only parse options
 * and print what it returns. Links come from gpunic_ep_link_open() (gpunic/endpoint.h), which
 * also says where each end stands (struct gpunic_ep_addr).
 *
 * Every function returns 0 or a positive errno value and reports what failed on stderr,
 * prefixed "gpunic: ".
 */
#ifndef GPUNIC_EXP_LOOPBACK_H
#define GPUNIC_EXP_LOOPBACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/endpoint.h"
#include "gpunic/loop_dev.h"
#include "gpunic/verbs.h"
#include "stats.h"

#define LB_MSG_MIN 16u
#define LB_MSG_MAX GPUNIC_LOOP_MAX_MSG
/* Stride of the forwarder's receive ring (the HSB "page increment"), fixed for the CLI. */
#define LB_SLOT_BYTES GPUNIC_LOOP_MAX_MSG
#define LB_DEFAULT_SLOTS 1024u
/* Most QPs a forwarder's NIC holds for --qps (the active one and the idle ones). */
#define LB_MAX_QPS 4000u
#define LB_SEQ_BITS 48
#define LB_SEQ_MASK ((1ull << LB_SEQ_BITS) - 1)

/* Defaults the CLI commands share. */
#define LB_DEFAULT_SIZE 32u
#define LB_DEFAULT_INTERVAL_NS 10000ull
#define LB_DEFAULT_OOB_PORT 18515
#define LB_DEFAULT_TIMEOUT_MS 1000u
#define LB_SENSOR_IP 0xC0A80002u	/* 192.168.0.2, the FPGA's address in the NVQLink demo */
#define LB_LOOP_IP 0xC0A80065u		/* 192.168.0.101, the host NIC's */

/* ---------------------------------------------------------------- message */

enum lb_mode {
	LB_MODE_WRITE_IMM = 0,	/* RDMA WRITE_WITH_IMM into a ring slot, immediate = slot */
	LB_MODE_SEND = 1,	/* plain SEND into the forwarder's posted slot receives */
};

enum lb_verdict {
	LB_MSG_OK = 0,
	LB_MSG_BAD_LEN,		/* not the size that was sent */
	LB_MSG_BAD_PATTERN,	/* a byte past the header is wrong */
};

void lb_msg_fill(uint8_t *m, uint32_t len, uint64_t word, uint64_t ts_ns);

/*
 * Check a reply of @len bytes (@add_one: the forwarder added 1 to each byte). The header is
 * returned in *word and *ts_ns whenever @len is at least LB_MSG_MIN, even for a bad pattern,
 * so that the caller can attribute the corruption to a message.
 */
enum lb_verdict lb_msg_check(const uint8_t *m, uint32_t len, uint32_t want_len, bool add_one,
			     uint64_t *word, uint64_t *ts_ns);

static inline uint64_t lb_word(uint32_t epoch, uint64_t seq)
{
	return (uint64_t)(epoch & 0xffff) << LB_SEQ_BITS | (seq & LB_SEQ_MASK);
}

/* ---------------------------------------------------------------- names (names.c) */

const char *lb_mode_name(enum lb_mode m);
int lb_mode_parse(const char *s, enum lb_mode *m);
const char *lb_work_name(uint32_t work);
int lb_work_parse(const char *s, uint32_t *work);
const char *lb_handler_name(enum gpunic_handler_mode h);
int lb_handler_parse(const char *s, enum gpunic_handler_mode *h);

/* ---------------------------------------------------------------- sensor */

struct lb_sensor;

/* Takes @link (closed on failure too). */
int lb_sensor_open(struct lb_sensor **out, struct gpunic_link *link,
		   const struct gpunic_ep_addr *addr, enum lb_mode mode, uint32_t size);
void lb_sensor_info(const struct lb_sensor *s, struct gpunic_qp_info *info);
/* Connect to the forwarder described by @remote (its QP and, for WRITE_WITH_IMM, its ring). */
int lb_sensor_connect(struct lb_sensor *s, const struct gpunic_qp_info *remote);
/* Start from @psn instead of a random PSN (a static peer expects it); before connecting. */
void lb_sensor_set_psn(struct lb_sensor *s, uint32_t psn);
void lb_sensor_close(struct lb_sensor *s);

struct lb_run_cfg {
	uint64_t count;		/* messages; 0: until duration_ns (or *stop) */
	uint64_t duration_ns;	/* 0: until count */
	uint64_t interval_ns;	/* paced: message k goes at start + k * interval */
	/*
	 * Paced, after a stall of the sending thread (one interval late or more): false sends the
	 * missed messages at once to hold the rate (throughput); true re-anchors the schedule
	 * there, so messages are never closer than the interval and a stall of the sensor does
	 * not turn into a burst that the forwarder queues (latency, as an FPGA never stalls).
	 */
	bool rephase;
	bool closed_loop;	/* send the next message when the previous one is back */
	bool expect_add_one;
	uint64_t timeout_ns;	/* how long the end of a run waits for the last replies;
				 * closed loop: how long one reply is waited for */
	uint32_t epoch;		/* tags this run's messages: replies of other runs are stale */
	const atomic_bool *stop;	/* may be NULL; set asynchronously (SIGINT) */
};

struct lb_run_result {
	uint64_t sent;
	uint64_t verified;	/* replies whose payload checked out */
	uint64_t corrupt_unmatched;	/* garbage no message can be blamed for; also in
					 * counts.corrupt */
	uint64_t stale;		/* replies of another run (an earlier one's stragglers) */
	uint64_t rx_errors;	/* error completions on the sensor's receive queue */
	uint64_t send_errors;	/* send completions with an error */
	uint64_t late_sends;	/* paced: sends that started a whole interval after their slot
				 * (with rephase: the schedule restarted there) */
	uint64_t max_late_ns;
	uint64_t send_ns;	/* first send to last send */
	uint64_t wall_ns;	/* first send to the end of the drain */
	/* the sensor's thread while it sent: all of it, and the rounds that found nothing to
	 * do (no send due, no reply, nothing for its NIC) */
	uint64_t loop_ns, idle_ns;
	bool stopped;		/* *stop ended the run early */
	bool rec_full;		/* the recorder's capacity ended a duration run */
	struct stats_counts counts;	/* as the recorder has them after stats_rec_finish */
};

/*
 * lb_sensor_run - send, receive and check one run's messages, recording each round trip in
 * @rec (reset first; its capacity limits a duration run). Must be called from one thread; the
 * NIC is polled from it.
 */
int lb_sensor_run(struct lb_sensor *s, const struct lb_run_cfg *cfg, struct stats_rec *rec,
		  struct lb_run_result *res);

/* What a progress reporter may read while a run is going on (any thread). */
void lb_sensor_progress(const struct lb_sensor *s, uint64_t *sent, uint64_t *received);

int lb_sensor_counters(struct lb_sensor *s, struct gpunic_nic_counters *nic);

/* Give the sensor's NIC an engine thread of its own, pinned to @cpu (-1: unpinned), before the
 * first run: the sensor's thread then only posts and takes completions, as an FPGA's logic
 * beside its NIC. Without it the sensor's thread drives its NIC inline. */
int lb_sensor_start_engine(struct lb_sensor *s, int cpu);

/* ---------------------------------------------------------------- forwarder */

enum lb_executor {
	LB_EXEC_GPU = 0,	/* persistent kernel running gpunic_loop_step() */
	LB_EXEC_CPU = 1,	/* the same gpunic_loop_step() on a host thread */
	LB_EXEC_NAIVE = 2,	/* host thread: copy in, launch, copy out per message */
};

/* names.c, with the other names */
const char *lb_executor_name(enum lb_executor e);
int lb_executor_parse(const char *s, enum lb_executor *e);

struct lb_fwd_cfg {
	enum lb_executor exec;
	enum gpunic_handler_mode handler;	/* GPU executor; AUTO: the NIC picks */
	enum lb_mode mode;
	uint32_t work;				/* enum gpunic_loop_work */
	uint32_t slots;				/* receive ring slots (power of two) */
	int gpu;				/* CUDA device */
	int engine_cpu;				/* NIC engine thread; -1: unpinned */
	int exec_cpu;				/* CPU/naive executor thread; -1: unpinned */
	/* CPU and naive: the executor thread also drives the NIC (no engine thread), for
	 * machines with too few cores for three busy threads. */
	bool inline_engine;
	/* Connected QPs beside the forwarder's that never post: what they cost the active one. */
	uint32_t idle_qps;
	/* The engine thread times its polls (GPUNIC_NIC_TIME_ENGINE): how busy it was. */
	bool time_engine;
};

struct lb_fwd;

/* Takes @link (closed on failure too). Checks for a GPU first where the executor needs one. */
int lb_fwd_open(struct lb_fwd **out, const struct lb_fwd_cfg *cfg, struct gpunic_link *link,
		const struct gpunic_ep_addr *addr);
void lb_fwd_info(const struct lb_fwd *f, struct gpunic_qp_info *info);
/* Post the receives and start the executor (and engine): before the sensor connects. */
int lb_fwd_start(struct lb_fwd *f);
int lb_fwd_connect(struct lb_fwd *f, const struct gpunic_qp_info *remote);
/* Start from @psn instead of a random PSN (a static peer expects it); before connecting. */
void lb_fwd_set_psn(struct lb_fwd *f, uint32_t psn);

struct lb_fwd_result {
	uint64_t echoed;
	uint64_t errors;
	uint32_t last_syndrome;
	struct gpunic_nic_counters nic;
	struct gpunic_qp_counters qp;
};

/* The QP's counters now, while the forwarder runs. */
int lb_fwd_qp_counters(struct lb_fwd *f, struct gpunic_qp_counters *qc);
/* The NIC's counters now, while the forwarder runs. */
int lb_fwd_nic_counters(struct lb_fwd *f, struct gpunic_nic_counters *nc);
/* What the forwarder has done so far (the executor's counters are read after it stops). */
int lb_fwd_stop(struct lb_fwd *f, struct lb_fwd_result *res);
/* Stops whatever still runs (kernel, threads, engine), then frees everything. NULL: no-op. */
void lb_fwd_close(struct lb_fwd *f);

/* Name of the GPU the forwarder runs on ("" for the CPU executor). */
const char *lb_fwd_gpu_name(const struct lb_fwd *f);
/* The handler mode the QP got (AUTO resolved). */
enum gpunic_handler_mode lb_fwd_handler(const struct lb_fwd *f);

/* ---------------------------------------------------------------- both ends in one process */

struct lb_pair {
	struct lb_sensor *s;
	struct lb_fwd *f;
};

struct lb_pair_cfg {
	bool udp;		/* udp links 127.0.0.1 (sensor) <-> 127.0.0.2 (loop), else shm */
	uint16_t udp_port;	/* both ends' */
	/* else, when set: link specs of the forwarder's end and the sensor's (two raw ports of
	 * one wire, e.g. "packet:veth0" and "packet:veth1"); each end takes its IP address */
	const char *spec_fwd, *spec_sensor;
	enum lb_mode mode;
	uint32_t size;
	/* NULL, or impairments of the sensor's end of the cable (tests) */
	const struct gpunic_impair_attr *impair;
	bool sensor_engine;	/* the sensor's NIC on an engine thread (lb_sensor_start_engine) */
	int sensor_engine_cpu;	/* its CPU; -1: unpinned */
};

/* A sensor and a forwarder on the two ends of a new cable, connected, the forwarder running. */
int lb_pair_open(struct lb_pair *p, const struct lb_fwd_cfg *fc, const struct lb_pair_cfg *pc);
void lb_pair_close(struct lb_pair *p);

/* ---------------------------------------------------------------- process helpers */

/* Set by SIGINT and SIGTERM once lb_catch_signals() ran: runs end early and report. */
extern atomic_bool lb_stop_flag;
int lb_catch_signals(void);

/*
 * gpunic_oob_exchange() in slices of at most half a second, so that lb_stop_flag ends a long
 * wait for the other side promptly. Return: as gpunic_oob_exchange(), or EINTR when stopped.
 */
int lb_oob_exchange(const char *host, uint16_t port, int timeout_ms,
		    const struct gpunic_qp_info *local, struct gpunic_qp_info *remote);

/* ---------------------------------------------------------------- the sensor <-> loop exchange */

/*
 * Over gpunic_oob_exchange() (TCP, the loop listens): 1. both swap their QP info; the sensor
 * connects; the loop connects and starts. 2. The sensor asks again; the loop answers once its QP
 * is ready to receive. 3. At the end the sensor says it is done, with the number of messages it
 * sent in the va field. A peer that speaks none of this (an FPGA) is given to either side as a
 * static peer instead: its QP info as the command line says, no exchange at all.
 * @who prefixes the messages ("gpunic sensor").
 */
int lb_session_sensor_start(const char *who, struct lb_sensor *s, const char *host,
			    uint16_t port, int timeout_ms, const struct gpunic_qp_info *peer);
/* Step 3; a loop that stopped already is no error worth more than a note (returned). */
int lb_session_sensor_bye(struct lb_sensor *s, const char *host, uint16_t port,
			  uint64_t sent);
/* The loop listens once for the whole session (gpunic_oob_listen), on @bind_addr (NULL: every
 * address): a sensor never meets a closed port between two of its waits. */
int lb_session_loop_listen(const char *who, const char *bind_addr, uint16_t port, int *lfd);
/* Steps 1 and 2 on the loop's side, on @lfd; *sensor gets the sensor's info. */
int lb_session_loop_start(const char *who, struct lb_fwd *f, uint16_t port, int lfd,
			  int timeout_ms, const struct gpunic_qp_info *peer,
			  struct gpunic_qp_info *sensor);
/* Wait up to @slice_ms for step 3. Return: 0 and *sent when our sensor said it is done;
 * ETIMEDOUT (or EINTR, ECONNRESET, EPROTO) when nothing that ends the run came; another errno
 * when the port cannot be served. */
int lb_session_loop_bye(const char *who, struct lb_fwd *f, uint16_t port, int lfd,
			int slice_ms, const struct gpunic_qp_info *sensor, uint64_t *sent);

/* ---------------------------------------------------------------- output helpers */

/* Print the nonzero drop counters of @c as " name=N" (nothing when there are none). */
void lb_print_drops(FILE *out, const struct gpunic_nic_counters *c);
/* The same as JSON members ("drops": {...}) after a comma-less key. */
void lb_json_drops(FILE *out, const struct gpunic_nic_counters *c);

/* The run's latency summary and counters as one JSON object (no newline). */
void lb_json_run(FILE *out, const struct stats_summary *sum, const struct lb_run_result *res);
/* perftest-shaped latency block and a line of counters; "(no samples)" when nothing came. */
void lb_print_run(FILE *out, uint32_t size, const struct stats_summary *sum,
		  const struct lb_run_result *res);

#endif
