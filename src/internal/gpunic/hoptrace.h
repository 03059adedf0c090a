/* SPDX-License-Identifier: MIT */
/*
 * Hop trace: where a loopback round trip's wall time goes, hop by hop, on the machine it runs on.
 *
 * A build with -DGPUNIC_HOP_TRACE=ON stamps the TSC at fixed points of the path a message takes
 * through the sensor's thread, the forwarder's NIC engine and the CPU executor (the frame sent,
 * taken off the link, its CQE stored, the CQE taken, the answer posted, ...). Every thread names
 * its role once (hop_trace_role); a point is the role and what happened. With one message in
 * flight and no loss the n-th stamp of every point belongs to the n-th message, so the time
 * between two points of the path is a per-message difference: hop_trace_report() prints the
 * median and p90 of each. A hop between threads includes the line's transfer and the stores
 * ahead of it; a stretch on one thread is its instructions.
 *
 * Without the option the marks compile to nothing and the engine is the one measured
 * everywhere else; the analysis (hop_trace_segments) is always built, so its test runs in CI.
 * A diagnostic, not a benchmark: a stamp costs about 30 ns on the H200 host's VM (the fence and
 * the TSC read), which every stretch carries. The sensor's NIC is taken to be driven inline (the
 * default); with its engine on a thread of its own that thread stamps as the forwarder's engine
 * does, and the report says the counts differ.
 */
#ifndef GPUNIC_HOPTRACE_H
#define GPUNIC_HOPTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Who stamps: one role per thread. */
enum hop_role {
	HOP_ROLE_NONE,
	HOP_ROLE_SENSOR,   /* the sensor's thread, its NIC driven inline */
	HOP_ROLE_ENGINE,   /* the forwarder's NIC engine thread */
	HOP_ROLE_EXECUTOR, /* the CPU executor's thread */
	HOP_ROLES
};

/* What happened. */
enum hop_kind {
	HOP_SEND,  /* sensor: a message stamped and posted */
	HOP_WQE,   /* NIC: a WQE taken (from its BlueFlame line or the ring) */
	HOP_HOLD,  /* NIC: room for its frame held on the link */
	HOP_BUILT, /* NIC: the frame built there, ICRC included */
	HOP_TX,    /* NIC: a frame published on the link */
	HOP_RX,    /* NIC: a frame taken off the link */
	HOP_CQE,   /* NIC: a receive completion stored */
	HOP_TAKE,  /* executor, sensor: a receive completion taken */
	HOP_POST,  /* executor: the answer posted */
	HOP_KINDS
};

/* The role of the calling thread (HOP_ROLE_NONE: it stamps nothing). */
void hop_trace_role(enum hop_role role);

/* Start recording, up to @cap stamps per point, forgetting earlier ones. Return: 0 or ENOMEM. */
int hop_trace_begin(size_t cap);

/* Stop recording (the stamps stay for the report). */
void hop_trace_end(void);

/* Record a stamp @tsc of the calling thread's role: what hop_mark does. */
void hop_trace_record(enum hop_kind kind, uint64_t tsc);

/* Record a stamp of @role (the tests). */
void hop_trace_record_as(enum hop_role role, enum hop_kind kind, uint64_t tsc);

/* Whether this build stamps (GPUNIC_HOP_TRACE). */
bool hop_trace_built(void);

/* One stretch of the path between two consecutive points that were stamped. */
struct hop_segment {
	enum hop_role from_role, to_role;
	enum hop_kind from_kind, to_kind;
	size_t n;            /* messages measured: the smaller count of the two points */
	bool counts_differ;  /* the two points were stamped a different number of times */
	bool whole;          /* the whole path: its first point to its last */
	double p50_ns, p90_ns;
};

/*
 * The stretches of the path, in its order, with @ticks_per_ns the TSC's rate (0: the rate
 * measured between hop_trace_begin and hop_trace_end). The last entry, when there is room, is
 * the whole path from its first point to its last. Return: entries filled.
 */
size_t hop_trace_segments(struct hop_segment *out, size_t max, double ticks_per_ns);

/* Print the stretches to @f, headed by @label. */
void hop_trace_report(FILE *f, const char *label);

/* "sensor.tx", "engine.cqe", ...: a point's name, written into @buf of @size bytes ("?" for no
 * point). Return: @buf. */
const char *hop_point_name(enum hop_role role, enum hop_kind kind, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#if defined(GPUNIC_HOP_TRACE) && (defined(__x86_64__) || defined(__i386__))
#include <x86intrin.h>
/* Stamp @kind for the calling thread's role, if it has one and recording is on. The fence
 * first: without it the TSC is read as soon as the instruction is decoded, hundreds of
 * instructions before the work ahead of it is done. */
#define hop_mark(kind) hop_trace_record((kind), (_mm_lfence(), __rdtsc()))
#else
#define hop_mark(kind) ((void)0)
#endif

#endif /* GPUNIC_HOPTRACE_H */
