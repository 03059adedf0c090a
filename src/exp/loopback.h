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
 * With RPC (docs/RPC.md) each message is instead a request to a built-in function, request_id =
 * the sequence number and ptp_timestamp the sender's clock (lb_rpc_clock); the forwarder answers
 * through its function table and the sensor checks every response against the function's CPU
 * reference (lb_rpc_* below).
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
#include <time.h>

#include "gpunic/endpoint.h"
#include "gpunic/rpc.h"
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

/* ---------------------------------------------------------------- RPC messages */

/* The bad requests a sensor can send (lb_run_cfg.rpc_fault), each answered by the forwarder
 * with its negative status, or dropped where its table says so. */
enum lb_rpc_fault {
	LB_RPC_FAULT_NONE = 0,
	LB_RPC_FAULT_UNKNOWN,    /* a function no table has ("no_such_function") */
	LB_RPC_FAULT_MAGIC,      /* the response's magic where the request's belongs */
	LB_RPC_FAULT_TOO_LONG,   /* arg_len past any slot */
	LB_RPC_FAULT_TRUNCATED,  /* arg_len one byte more than the request carries */
	LB_RPC_FAULT_SCHEMA,     /* surface_d3 with no argument byte (its schema takes one) */
	LB_RPC_FAULTS
};

/* "none", "unknown", "magic", "too-long", "truncated", "schema". */
const char *lb_rpc_fault_name(enum lb_rpc_fault f);
int lb_rpc_fault_parse(const char *s, enum lb_rpc_fault *f);

/* A built-in function the sensor can check ("echo", "add_one", "surface_d3"): its id. */
int lb_rpc_fn_parse(const char *name, uint32_t *id);
/* Its name; "?" for another id. */
const char *lb_rpc_fn_name(uint32_t id);
/* The names, comma-separated, for messages ("echo, add_one or surface_d3"). */
#define LB_RPC_FN_NAMES "echo, add_one or surface_d3"
/* Bytes of a good request to @fn with a message size of @size: @size for the functions that take
 * any number of bytes, what the others take (surface_d3: 25). 0 when @size cannot hold it. */
uint32_t lb_rpc_request_len(uint32_t fn, uint32_t size);

/*
 * Request @seq to @fn, or with @fault, stamped @ts, into @m (@max bytes, 8-byte aligned, at
 * least lb_rpc_request_len()). Return: the bytes to send.
 */
uint32_t lb_rpc_fill(uint8_t *m, uint32_t max, uint32_t fn, enum lb_rpc_fault fault,
		     uint32_t size, uint64_t seq, uint64_t ts);
/*
 * What the forwarder must answer to that request: its status, and its results into @want
 * (@max bytes) and *@want_len; the slot it lands in holds @slot_bytes.
 */
int32_t lb_rpc_expect(uint32_t fn, enum lb_rpc_fault fault, uint32_t size, uint64_t seq,
		      uint32_t slot_bytes, uint8_t *want, uint32_t max, uint32_t *want_len);

/*
 * The sender's clock for ptp_timestamp: a PTP hardware clock (/dev/ptpN, read with
 * clock_gettime on its dynamic clock id) where one is present, else CLOCK_REALTIME.
 */
struct lb_rpc_clock {
	clockid_t id;
	int fd;                 /* the PTP device's, -1 for CLOCK_REALTIME */
	char name[48];          /* "/dev/ptp0 (PTP hardware clock)", "CLOCK_REALTIME" */
};

/*
 * Open @which: "auto" (the first /dev/ptpN that reads, else CLOCK_REALTIME), "realtime", or a
 * device path. Return: 0, or an errno (a device that does not open or read; said on stderr).
 */
int lb_rpc_clock_open(struct lb_rpc_clock *c, const char *which);
void lb_rpc_clock_close(struct lb_rpc_clock *c);
/* Its time now, ns. */
uint64_t lb_rpc_clock_ns(const struct lb_rpc_clock *c);

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
	/*
	 * RPC: every message is a request to built-in function rpc_fn (0: plain messages), its
	 * ptp_timestamp read from rpc_clock before the send's own stamp, so that a slow clock
	 * stays outside the round trip; every rpc_fault_every-th request (1: each) has
	 * rpc_fault instead. A reply whose echoed timestamp is older than the run is stale.
	 */
	uint32_t rpc_fn;
	const struct lb_rpc_clock *rpc_clock;
	enum lb_rpc_fault rpc_fault;
	uint32_t rpc_fault_every;
	/* NULL, or where the verified round trips by the echoed timestamp go (rpc_clock at the
	 * reply minus the timestamp it echoed; reset first) */
	struct stats_rec *rpc_ts_rec;
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
	/* RPC: the replies of this run by the first fault gpunic_rpc_response_check() found
	 * ([GPUNIC_RPC_CHECK_OK]: those that passed), and the bad requests sent */
	uint64_t rpc_checks[GPUNIC_RPC_CHECKS];
	uint64_t rpc_faults_sent;
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
/*
 * lb_sensor_drive_also - the sensor's thread also drives @nic (the forwarder's), before its own
 * on every turn: the FPGA and the NIC the loop runs on are hardware, not CPUs, and one thread
 * for all of it meets one CPU's interruptions instead of two or three. Before a run.
 */
void lb_sensor_drive_also(struct lb_sensor *s, struct gpunic_nic *nic);

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
	/* No thread of the forwarder drives its NIC: another does (lb_sensor_drive_also(), one
	 * thread for all the emulated hardware). Overrides inline_engine. */
	bool nic_driven_elsewhere;
	uint32_t gpu_polls;	/* GPU: CQ reads in flight while idle (1, 2; 0: the default) */
	/*
	 * RPC (docs/RPC.md): answer every message as a request through the built-in functions
	 * and those of the shared library rpc_handler_lib (NULL: none; CPU handlers, so the cpu
	 * executor only), dropping what rpc_flags say (GPUNIC_RPC_DROP_*). gpu and cpu executors.
	 */
	bool rpc;
	uint32_t rpc_flags;
	const char *rpc_handler_lib;
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
	uint64_t echoed;	/* RPC: responses sent */
	uint64_t errors;
	uint32_t last_syndrome;
	struct gpunic_rpc_counters rpc;	/* RPC: every request by how it ended */
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
/* The forwarder's NIC, for the thread that drives it when cfg.nic_driven_elsewhere is set. */
struct gpunic_nic *lb_fwd_nic(struct lb_fwd *f);
/* The handler mode the QP got (AUTO resolved). */
enum gpunic_handler_mode lb_fwd_handler(const struct lb_fwd *f);
/* RPC: the function table it serves (NULL without RPC). */
const struct gpunic_rpc_table *lb_fwd_rpc_table(const struct lb_fwd *f);

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

/* ---------------------------------------------------------------- the sensor <-> loop exchange */

/*
 * Over gpunic's exchange (TCP, the loop listens; endpoint.h), one session in three steps, each a
 * new connection whose message says its step and the session's number (drawn by the sensor):
 * 1. hello: both swap their QP info; the sensor connects; the loop connects and starts. 2.
 * ready: the sensor asks; the loop answers once its QP is ready to receive. 3. bye: the sensor
 * says it is done, with the number of messages it sent in the va field. A step the sensor
 * retries (our answer did not reach it) is answered again; a message of another session,
 * another peer, or a step out of order is refused and counted; one whose sender had given up
 * before the loop read it is not acted on. A peer that speaks none of this (an FPGA) is given
 * to either side as a static peer instead: its QP info as the command line says, no exchange.
 * Every wait looks at lb_stop_flag at least twice a second. @who prefixes the messages
 * ("gpunic sensor").
 */
/* Steps 1 and 2 on the sensor's side; *session gets the session's number, for step 3. */
int lb_session_sensor_start(const char *who, struct lb_sensor *s, const char *host,
			    uint16_t port, int timeout_ms, const struct gpunic_qp_info *peer,
			    uint64_t *session);
/* Step 3, tried for up to @timeout_ms (the loop may be busy with other clients). Return: 0 when
 * the loop answered it; otherwise the loop has not taken it, unless it read it within the
 * last moment of that time (a loop does not act on a message whose sender has gone). */
int lb_session_sensor_bye(struct lb_sensor *s, const char *host, uint16_t port,
			  uint64_t session, int timeout_ms, uint64_t sent);
/* The loop listens once for the whole session (gpunic_oob_listen), on @bind_addr (NULL: every
 * address): a sensor never meets a closed port between two of its waits. */
int lb_session_loop_listen(const char *who, const char *bind_addr, uint16_t port, int *lfd);

/* The loop's side of a session: whom it serves, and what its port saw. */
struct lb_loop_session {
	uint64_t session;               /* the sensor's number, from its hello */
	struct gpunic_qp_info sensor;   /* the sensor's QP (a static peer's, without exchange) */
	struct gpunic_qp_info local;    /* what every answer carries */
	uint32_t done;                  /* the last step taken (enum gpunic_oob_kind); 0: none */
	uint64_t refused;               /* messages answered nothing: another session or peer, a
					 * step out of order */
	uint64_t repeated;              /* earlier steps the sensor asked again, answered again */
	uint64_t abandoned;             /* messages whose sender had gone before they were read */
	uint64_t dropped;               /* connections that sent no valid message */
};
/* Steps 1 and 2 on the loop's side, on @lfd, each waiting up to @timeout_ms (0: until the
 * sensor comes, as perftest's server waits for its client). */
int lb_session_loop_start(const char *who, struct lb_fwd *f, uint16_t port, int lfd,
			  int timeout_ms, const struct gpunic_qp_info *peer,
			  struct lb_loop_session *ls);
/* Wait up to @slice_ms for step 3. Return: 0 and *sent when our sensor said it is done;
 * ETIMEDOUT or EINTR when nothing that ends the run came; another errno when the port cannot
 * be served. */
int lb_session_loop_bye(const char *who, uint16_t port, int lfd, int slice_ms,
			struct lb_loop_session *ls, uint64_t *sent);

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

/*
 * An RPC run's own lines: the responses that failed a check, by reason, the bad requests sent,
 * and the round trip by the echoed timestamp (@ts: its summary, NULL when not recorded) with
 * the clock that stamped it (@clock).
 */
void lb_print_rpc(FILE *out, const struct lb_run_result *res, const struct stats_summary *ts,
		  const char *clock);
/* The same as JSON members (no braces): "rpc_checks": {...}, "rpc_faults_sent": N,
 * "rpc_clock": "...", "rpc_ts_latency_ns": {...} or null. */
void lb_json_rpc(FILE *out, const struct lb_run_result *res, const struct stats_summary *ts,
		 const char *clock);
/* The forwarder's counters of requests as JSON members ("rpc": {reason: N, ..., "dropped":
 * N}), and as one line " rpc: ok 100 unknown_function 3 ... dropped 0". */
void lb_json_rpc_counters(FILE *out, const struct gpunic_rpc_counters *c);
void lb_print_rpc_counters(FILE *out, const struct gpunic_rpc_counters *c);

#endif
