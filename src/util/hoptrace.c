// SPDX-License-Identifier: MIT
/*
 * Hop trace (src/internal/gpunic/hoptrace.h): per-point TSC stamps and the per-message
 * differences between consecutive points of the loopback's path.
 */
#include <gpunic/hoptrace.h>

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* The path a message takes through the roles, in order; the points nobody stamped drop out: a
 * GPU executor stamps nothing (its stretch is engine.cqe -> engine.wqe), and a CPU executor
 * that drives the forwarder's NIC inline stamps the engine's points as its own. */
static const struct {
	enum hop_role role;
	enum hop_kind kind;
} hop_path[] = {
	{ HOP_ROLE_SENSOR, HOP_SEND },   { HOP_ROLE_SENSOR, HOP_WQE },
	{ HOP_ROLE_SENSOR, HOP_HOLD },   { HOP_ROLE_SENSOR, HOP_BUILT },
	{ HOP_ROLE_SENSOR, HOP_TX },     { HOP_ROLE_ENGINE, HOP_RX },
	{ HOP_ROLE_EXECUTOR, HOP_RX },   { HOP_ROLE_ENGINE, HOP_CQE },
	{ HOP_ROLE_EXECUTOR, HOP_CQE },  { HOP_ROLE_EXECUTOR, HOP_TAKE },
	{ HOP_ROLE_EXECUTOR, HOP_POST }, { HOP_ROLE_ENGINE, HOP_WQE },
	{ HOP_ROLE_EXECUTOR, HOP_WQE },  { HOP_ROLE_ENGINE, HOP_HOLD },
	{ HOP_ROLE_EXECUTOR, HOP_HOLD }, { HOP_ROLE_ENGINE, HOP_BUILT },
	{ HOP_ROLE_EXECUTOR, HOP_BUILT }, { HOP_ROLE_ENGINE, HOP_TX },
	{ HOP_ROLE_EXECUTOR, HOP_TX },   { HOP_ROLE_SENSOR, HOP_RX },
	{ HOP_ROLE_SENSOR, HOP_CQE },    { HOP_ROLE_SENSOR, HOP_TAKE },
};
#define HOP_PATH_LEN (sizeof(hop_path) / sizeof(hop_path[0]))

static struct {
	uint64_t *stamps[HOP_ROLES][HOP_KINDS];
	/* each role's counts on lines of their own (128 bytes: the adjacent-line prefetcher
	 * pairs lines): a role's thread writes them at every stamp, and counts of two roles on
	 * one line made every stamp fetch that line from the other's core, tens to a hundred ns
	 * charged to the stretch after it */
	struct {
		alignas(128) atomic_size_t n[HOP_KINDS];
	} count[HOP_ROLES];
	size_t cap;
	atomic_bool on;
	uint64_t tsc0, tsc1, ns0, ns1;
} hop;

static _Thread_local enum hop_role hop_thread_role;

void hop_trace_role(enum hop_role role)
{
	hop_thread_role = role < HOP_ROLES ? role : HOP_ROLE_NONE;
}

bool hop_trace_built(void)
{
#if defined(GPUNIC_HOP_TRACE) && (defined(__x86_64__) || defined(__i386__))
	return true;
#else
	return false;
#endif
}

static uint64_t hop_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return 0;
#endif
}

static uint64_t hop_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int hop_trace_begin(size_t cap)
{
	atomic_store(&hop.on, false);
	/* the counts first: a failure below leaves nothing of an earlier run to report */
	for (int r = 0; r < HOP_ROLES; r++)
		for (int k = 0; k < HOP_KINDS; k++)
			atomic_store_explicit(&hop.count[r].n[k], 0, memory_order_relaxed);
	for (int r = 0; cap > hop.cap && r < HOP_ROLES; r++) {
		for (int k = 0; k < HOP_KINDS; k++) {
			uint64_t *p = realloc(hop.stamps[r][k], cap * sizeof(*p));

			if (!p)
				return ENOMEM;
			hop.stamps[r][k] = p;
		}
	}
	if (cap > hop.cap)
		hop.cap = cap;
	hop.ns0 = hop_ns();
	hop.tsc0 = hop_tsc();
	hop.ns1 = hop.tsc1 = 0;
	atomic_store(&hop.on, true);
	return 0;
}

void hop_trace_end(void)
{
	atomic_store(&hop.on, false);
	hop.tsc1 = hop_tsc();
	hop.ns1 = hop_ns();
}

void hop_trace_record_as(enum hop_role role, enum hop_kind kind, uint64_t tsc)
{
	size_t n;

	if (role <= HOP_ROLE_NONE || role >= HOP_ROLES || kind >= HOP_KINDS ||
	    !atomic_load_explicit(&hop.on, memory_order_relaxed))
		return;
	n = atomic_load_explicit(&hop.count[role].n[kind], memory_order_relaxed);
	if (n >= hop.cap)
		return;
	hop.stamps[role][kind][n] = tsc;
	atomic_store_explicit(&hop.count[role].n[kind], n + 1, memory_order_release);
}

void hop_trace_record(enum hop_kind kind, uint64_t tsc)
{
	if (hop_thread_role != HOP_ROLE_NONE)
		hop_trace_record_as(hop_thread_role, kind, tsc);
}

const char *hop_point_name(enum hop_role role, enum hop_kind kind, char *buf, size_t size)
{
	static const char *const roles[HOP_ROLES] = {
		[HOP_ROLE_SENSOR] = "sensor", [HOP_ROLE_ENGINE] = "engine",
		[HOP_ROLE_EXECUTOR] = "executor",
	};
	static const char *const kinds[HOP_KINDS] = {
		[HOP_SEND] = "send", [HOP_WQE] = "wqe", [HOP_HOLD] = "hold", [HOP_BUILT] = "built",
		[HOP_TX] = "tx",     [HOP_RX] = "rx",   [HOP_CQE] = "cqe",   [HOP_TAKE] = "take",
		[HOP_POST] = "post",
	};

	if (role <= HOP_ROLE_NONE || role >= HOP_ROLES || kind >= HOP_KINDS)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%s.%s", roles[role], kinds[kind]);
	return buf;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank of a sorted array. */
static int64_t rank_of(const int64_t *v, size_t n, unsigned pct)
{
	size_t r = (n * pct + 99) / 100;

	return v[r ? r - 1 : 0];
}

/* The differences b[i] - a[i] over the first @n stamps, as a segment. Return: false without
 * memory. */
static bool hop_measure(struct hop_segment *s, const uint64_t *a, const uint64_t *b, size_t n,
			double ticks_per_ns)
{
	int64_t *d = malloc((n ? n : 1) * sizeof(*d));

	if (!d)
		return false;
	for (size_t i = 0; i < n; i++)
		d[i] = (int64_t)(b[i] - a[i]);
	qsort(d, n, sizeof(*d), cmp_i64);
	s->n = n;
	s->p50_ns = n ? (double)rank_of(d, n, 50) / ticks_per_ns : 0;
	s->p90_ns = n ? (double)rank_of(d, n, 90) / ticks_per_ns : 0;
	free(d);
	return true;
}

static size_t hop_count(enum hop_role r, enum hop_kind k)
{
	return atomic_load_explicit(&hop.count[r].n[k], memory_order_acquire);
}

/* The stretch from path point @ia to @ib into @s. Return: false without memory. */
static bool hop_stretch(struct hop_segment *s, size_t ia, size_t ib, double ticks_per_ns)
{
	enum hop_role ra = hop_path[ia].role, rb = hop_path[ib].role;
	enum hop_kind ka = hop_path[ia].kind, kb = hop_path[ib].kind;
	size_t na = hop_count(ra, ka), nb = hop_count(rb, kb);

	memset(s, 0, sizeof(*s));
	s->from_role = ra;
	s->from_kind = ka;
	s->to_role = rb;
	s->to_kind = kb;
	s->counts_differ = na != nb;
	return hop_measure(s, hop.stamps[ra][ka], hop.stamps[rb][kb], na < nb ? na : nb,
			   ticks_per_ns);
}

size_t hop_trace_segments(struct hop_segment *out, size_t max, double ticks_per_ns)
{
	size_t at[HOP_PATH_LEN], npts = 0, filled = 0;

	if (ticks_per_ns <= 0) {
		if (hop.ns1 <= hop.ns0 || hop.tsc1 <= hop.tsc0)
			return 0;
		ticks_per_ns = (double)(hop.tsc1 - hop.tsc0) / (double)(hop.ns1 - hop.ns0);
	}
	for (size_t i = 0; i < HOP_PATH_LEN; i++)
		if (hop_count(hop_path[i].role, hop_path[i].kind))
			at[npts++] = i;
	for (size_t j = 0; j + 1 < npts && filled < max; j++) {
		if (!hop_stretch(&out[filled], at[j], at[j + 1], ticks_per_ns))
			return filled;
		filled++;
	}
	/* the whole path, where it has more than one stretch */
	if (npts > 2 && filled < max && hop_stretch(&out[filled], at[0], at[npts - 1], ticks_per_ns)) {
		out[filled].whole = true;
		filled++;
	}
	return filled;
}

void hop_trace_report(FILE *f, const char *label)
{
	struct hop_segment seg[HOP_PATH_LEN + 1];
	size_t n;

	if (!hop_trace_built())
		return;
	n = hop_trace_segments(seg, HOP_PATH_LEN + 1, 0);
	fprintf(f, "hop trace, %s (TSC, per message; ns):\n", label);
	if (!n) {
		fprintf(f, "  nothing stamped\n");
		return;
	}
	fprintf(f, "  %-30s %9s %9s %8s\n", "stretch", "p50", "p90", "messages");
	for (size_t i = 0; i < n; i++) {
		char name[64], a[24], b[24];

		snprintf(name, sizeof(name), "%s -> %s",
			 hop_point_name(seg[i].from_role, seg[i].from_kind, a, sizeof(a)),
			 hop_point_name(seg[i].to_role, seg[i].to_kind, b, sizeof(b)));
		fprintf(f, "  %-30s %9.0f %9.0f %8zu%s\n", seg[i].whole ? "whole path" : name,
			seg[i].p50_ns, seg[i].p90_ns, seg[i].n,
			seg[i].counts_differ ? "  (counts differ: misaligned)" : "");
	}
}
