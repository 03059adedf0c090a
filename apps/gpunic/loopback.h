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
 * Every function returns 0 or a positive errno value and reports what failed on stderr,
 * prefixed "gpunic: ".
 */
#ifndef GPUNIC_APP_LOOPBACK_H
#define GPUNIC_APP_LOOPBACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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

/* ---------------------------------------------------------------- endpoints and links */

struct lb_addr {
	uint32_t ip;		/* host byte order */
	uint8_t mac[6];
	uint16_t udp_port;	/* 0: 4791 */
	bool kernel_udp;	/* udp link: the kernel socket sends from udp_port */
};

/* The MAC the udp link's spec form uses for @ip (02:00:a.b.c.d); every endpoint uses it. */
void lb_addr_init(struct lb_addr *a, uint32_t ip, uint16_t udp_port, bool kernel_udp);

/*
 * Open a link from a CLI spec ("shm:NAME,a|b[,create]", "udp:IP[:PORT]", "dgram:...") and
 * fill @addr: a udp link's own address is the NIC's; the others carry any, so @default_ip.
 * @wait_ms: an shm cable that does not exist yet is waited for this long (the other side
 * creates it). Return: 0 or errno (reported).
 */
int lb_link_open(const char *spec, uint32_t default_ip, int wait_ms, struct gpunic_link **link,
		 struct lb_addr *addr);

const char *lb_mode_name(enum lb_mode m);
int lb_mode_parse(const char *s, enum lb_mode *m);
const char *lb_work_name(uint32_t work);
int lb_work_parse(const char *s, uint32_t *work);
const char *lb_handler_name(enum gpunic_handler_mode h);
int lb_handler_parse(const char *s, enum gpunic_handler_mode *h);

/* ---------------------------------------------------------------- sensor */

struct lb_sensor;

/* Takes @link (closed on failure too). */
int lb_sensor_open(struct lb_sensor **out, struct gpunic_link *link, const struct lb_addr *addr,
		   enum lb_mode mode, uint32_t size);
void lb_sensor_info(const struct lb_sensor *s, struct gpunic_qp_info *info);
/* Connect to the forwarder described by @remote (its QP and, for WRITE_WITH_IMM, its ring). */
int lb_sensor_connect(struct lb_sensor *s, const struct gpunic_qp_info *remote);
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
	uint64_t timeout_ns;	/* drain at the end; closed loop: give up on one reply */
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

/* ---------------------------------------------------------------- forwarder */

enum lb_executor {
	LB_EXEC_GPU = 0,	/* persistent kernel running gpunic_loop_step() */
	LB_EXEC_CPU = 1,	/* the same gpunic_loop_step() on a host thread */
	LB_EXEC_NAIVE = 2,	/* host thread: copy in, launch, copy out per message */
};

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
};

struct lb_fwd;

/* Takes @link (closed on failure too). Checks for a GPU first where the executor needs one. */
int lb_fwd_open(struct lb_fwd **out, const struct lb_fwd_cfg *cfg, struct gpunic_link *link,
		const struct lb_addr *addr);
void lb_fwd_info(const struct lb_fwd *f, struct gpunic_qp_info *info);
/* Post the receives and start the executor (and engine): before the sensor connects. */
int lb_fwd_start(struct lb_fwd *f);
int lb_fwd_connect(struct lb_fwd *f, const struct gpunic_qp_info *remote);

struct lb_fwd_result {
	uint64_t echoed;
	uint64_t errors;
	uint32_t last_syndrome;
	struct gpunic_nic_counters nic;
	struct gpunic_qp_counters qp;
};

/* The QP's counters now, while the forwarder runs. */
int lb_fwd_qp_counters(struct lb_fwd *f, struct gpunic_qp_counters *qc);
/* What the forwarder has done so far (the executor's counters are read after it stops). */
int lb_fwd_stop(struct lb_fwd *f, struct lb_fwd_result *res);
/* Stops whatever still runs (kernel, threads, engine), then frees everything. NULL: no-op. */
void lb_fwd_close(struct lb_fwd *f);

/* Name of the GPU the forwarder runs on ("" for the CPU executor). */
const char *lb_fwd_gpu_name(const struct lb_fwd *f);
/* The handler mode the QP got (AUTO resolved). */
enum gpunic_handler_mode lb_fwd_handler(const struct lb_fwd *f);

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

/* Parse a non-negative decimal number of microseconds ("10", "2.5") into ns. */
int lb_parse_us(const char *s, uint64_t *ns);
/* Parse an unsigned integer within [min, max]. */
int lb_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v);

/* Command-line helpers shared by sensor, loop and bench (@cmd: "sensor", "bench loopback"...).
 * The usage errors print what is wrong and where help is, and return the exit status 2. */
int lb_parse_ip(const char *s, uint32_t *ip);
int lb_bad_value(const char *cmd, const char *opt, const char *val);
int lb_bad_option(const char *cmd, int c, const char *opt);	/* c == ':': value missing */
int lb_extra_arg(const char *cmd, const char *arg);

#endif
