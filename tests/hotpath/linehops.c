// SPDX-License-Identifier: MIT
/*
 * What a hop between two cores costs by the lines it moves: the loopback's four CPU hops
 * (sensor -> engine -> executor -> engine -> sensor, three pinned threads, as the bench's
 * cpu-floor) with each hop a ring of slots laid out as the shm cable's, in several patterns:
 *
 *   1line     the message in the line of the slot's sequence word (the cpu-floor's case)
 *   2line     a frame of BYTES bytes from there on, the sequence word published last: the
 *             consumer waits for it, then reads the second line (the shm cable today)
 *   touch     2line, and the consumer prefetches the slot's second line on every poll that
 *             finds nothing
 *   load2     2line, and every poll loads a word of the second line before the sequence word
 *             (the value unused: the load only brings the line over with the first)
 *   stamp     2line, and the producer also stamps the second line's last word with the
 *             sequence, before the first's; every poll loads both and waits for both
 *   late1     2line, with the second line written first and the first line's bytes just
 *             before the sequence word: the line the consumer polls changes hands once
 *   hdrline   the sequence word on a line of its own, the frame from the next line on
 *   tail      the frame from the slot's first byte, the sequence word in the second line's
 *             last bytes: the consumer polls the line written last, the first line changes
 *             hands while nobody polls it
 *   own       2line, and the producer prefetches the next slot's lines for writing as soon
 *             as it has published one
 *   record    1line, and the producer then bumps a counter on a line of its own that the
 *             consumer polls first (a doorbell record before its WQE)
 *   room16    1line, and the producer reads a slot's sequence word only once every 16 slots,
 *             the 16th ahead's: the consumer hands slots back in order, so that one back means
 *             all 16 are (the slot it writes is otherwise only written, never read first)
 *   nopause   1line, every wait spinning without the pause instruction (what a wait loop's
 *             pause costs a hop: ~140 cycles on recent Xeons, against a leave-the-loop stall
 *             it avoids)
 *
 * GAP_US spaces the round trips: each starts that long after the last one started (0, the
 * default: back to back; up to 3 decimals, as the bench reads --interval-us). The bench's series are paced (one message every 10 us by default),
 * and on the H200 host the same hops cost more when the cores wait between messages
 * (docs/BENCHMARKS.md, "Where a round trip's time goes"): what a floor for a paced series has
 * to be measured at.
 *
 * The patterns run in turn, ROUNDS times, so that a noisy machine spreads over all of them.
 * It measures, it checks nothing but that every message arrived in order with its bytes: the
 * CTest runs it for a few hundred round trips.
 *
 * Usage: linehops [ITERS [ROUNDS [CPU_SENSOR CPU_ENGINE CPU_EXEC [BYTES [GAP_US]]]]]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunic/parse.h"
#include "timing.h"

#define LH_SLOTS 256u
/* The shm cable's slot: sequence word, length, a frame of up to the MTU, in whole lines. */
#define LH_SLOT_BYTES 4224u
#define LH_LINE 64u
#define LH_MAX_BYTES 116u	/* two lines with the slot's 8-byte header and "stamp"'s word */
#define LH_STALL_NS 5000000000ull

enum lh_pattern {
	LH_1LINE, LH_2LINE, LH_TOUCH, LH_LOAD2, LH_STAMP, LH_LATE1, LH_HDRLINE, LH_TAIL, LH_OWN,
	LH_RECORD, LH_NOPAUSE, LH_ROOM16, LH_NPAT
};
static const char *const lh_names[LH_NPAT] = { "1line", "2line",   "touch", "load2", "stamp",
					       "late1", "hdrline", "tail",  "own",   "record",
					       "nopause", "room16" };

/* Where the frame starts in the slot. */
static uint32_t lh_frame_at(enum lh_pattern pat)
{
	return pat == LH_HDRLINE ? LH_LINE : pat == LH_TAIL ? 0 : 8;
}

/* The slot's sequence word. */
static uint32_t lh_seq_at(enum lh_pattern pat)
{
	return pat == LH_TAIL ? 2 * LH_LINE - 4 : 0;
}

struct lh_ring {
	uint8_t *slots;
	alignas(LH_LINE) _Atomic uint32_t record;	/* LH_RECORD: messages published */
	alignas(LH_LINE) uint32_t ppos;			/* producer's position (its own line) */
	uint32_t room_to;				/* room16: free up to here (exclusive) */
	alignas(LH_LINE) uint32_t cpos;			/* consumer's position */
};

struct lh {
	struct lh_ring ring[4];	/* 0: sensor->engine, 1: engine->exec, 2: exec->engine,
				 * 3: engine->sensor */
	enum lh_pattern pat;
	uint32_t bytes;		/* frame bytes after the slot header */
	uint32_t iters;
	uint64_t gap_ns;	/* from one round trip's start to the next's; 0: back to back */
	uint64_t *rtt;
	alignas(LH_LINE) _Atomic bool stop;
	int err;
};

static _Atomic uint32_t *seq_of(uint8_t *slot)
{
	return (_Atomic uint32_t *)(void *)slot;
}

static uint8_t *slot_at(struct lh_ring *r, uint32_t pos)
{
	return r->slots + (size_t)(pos & (LH_SLOTS - 1)) * LH_SLOT_BYTES;
}

/* A wait in progress: spins since the last clock reading, and when the wait began. */
struct lh_wait {
	uint64_t t0;
	uint32_t spins;
};

/* One more spin of a wait. Return: false when the run was stopped or the wait stalled. */
static bool lh_spin(struct lh *h, struct lh_wait *w)
{
	if (atomic_load_explicit(&h->stop, memory_order_relaxed))
		return false;
	if (h->pat != LH_NOPAUSE)
		timing_cpu_relax();
	/* a wait this long (tens of µs) means the other thread shares our core: let it run (a
	 * small CI machine); on the cores of a measurement it never happens */
	if (!(++w->spins & 1023))
		sched_yield();
	if (w->spins == 1u << 16) {
		w->spins = 0;
		if (!w->t0)
			w->t0 = timing_now_ns();
		else if (timing_now_ns() - w->t0 > LH_STALL_NS)
			return false;
	}
	return true;
}

/* The slot's sequence word as @pat places it, read with acquire. */
static uint32_t lh_seq(const struct lh *h, uint8_t *slot)
{
	return atomic_load_explicit(seq_of(slot + lh_seq_at(h->pat)), memory_order_acquire);
}

/* Write message @k into the ring's next slot and publish it. */
static bool lh_put(struct lh *h, struct lh_ring *r, uint32_t k)
{
	uint32_t pos = r->ppos;
	uint8_t *slot = slot_at(r, pos);
	struct lh_wait w = { 0, 0 };

	if (h->pat != LH_ROOM16 || (int32_t)(r->room_to - pos) <= 0) {
		uint32_t ahead = h->pat == LH_ROOM16 ? 15 : 0;

		while (lh_seq(h, slot_at(r, pos + ahead)) != pos + ahead)
			if (!lh_spin(h, &w))
				return false;
		r->room_to = pos + ahead + 1;
	}
	if (h->pat == LH_1LINE || h->pat == LH_RECORD || h->pat == LH_NOPAUSE ||
	    h->pat == LH_ROOM16) {
		memcpy(slot + 4, &k, 4);
	} else if (h->pat == LH_LATE1) {
		memset(slot + LH_LINE, (int)(k & 0xff), h->bytes + 8 - LH_LINE);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* keep the order written */
		memset(slot + 8, (int)(k & 0xff), LH_LINE - 8);
	} else {
		memset(slot + lh_frame_at(h->pat), (int)(k & 0xff), h->bytes);
	}
	if (h->pat == LH_STAMP)
		atomic_store_explicit(seq_of(slot + 2 * LH_LINE - 4), pos + 1,
				      memory_order_release);
	atomic_store_explicit(seq_of(slot + lh_seq_at(h->pat)), pos + 1, memory_order_release);
	if (h->pat == LH_RECORD)
		atomic_store_explicit(&r->record, pos + 1, memory_order_release);
	r->ppos = pos + 1;
	if (h->pat == LH_OWN) {
		uint8_t *next = slot_at(r, pos + 1);

		__builtin_prefetch(next, 1, 3);
		__builtin_prefetch(next + LH_LINE, 1, 3);
	}
	return true;
}

/* Wait for message @k on the ring, read it whole and hand the slot back. */
static bool lh_get(struct lh *h, struct lh_ring *r, uint32_t k)
{
	uint32_t pos = r->cpos, got, i;
	uint8_t *slot = slot_at(r, pos);
	struct lh_wait w = { 0, 0 };
	bool ok = true;

	for (;;) {
		if (h->pat == LH_RECORD &&
		    atomic_load_explicit(&r->record, memory_order_acquire) != pos + 1)
			goto wait;
		if (h->pat == LH_LOAD2)
			(void)atomic_load_explicit(seq_of(slot + LH_LINE), memory_order_relaxed);
		if (h->pat == LH_STAMP) {
			uint32_t s2 = atomic_load_explicit(seq_of(slot + 2 * LH_LINE - 4),
							   memory_order_relaxed);

			if (lh_seq(h, slot) == pos + 1 && s2 == pos + 1)
				break;
			goto wait;
		}
		if (lh_seq(h, slot) == pos + 1)
			break;
		if (h->pat == LH_TOUCH)
			__builtin_prefetch(slot + LH_LINE, 0, 3);
wait:
		if (!lh_spin(h, &w))
			return false;
	}
	if (h->pat == LH_1LINE || h->pat == LH_RECORD || h->pat == LH_NOPAUSE ||
	    h->pat == LH_ROOM16) {
		memcpy(&got, slot + 4, 4);
		ok = got == k;
	} else {
		/* eight bytes at a time (the last eight may overlap): a byte loop here would cost
		 * the two-line patterns tens of ns per hop that are not the lines' */
		const uint8_t *f = slot + lh_frame_at(h->pat);
		uint64_t want = 0x0101010101010101ull * (uint8_t)k, v;

		for (i = 0; i + 8 <= h->bytes; i += 8) {
			memcpy(&v, f + i, 8);
			ok &= v == want;
		}
		memcpy(&v, f + h->bytes - 8, 8);
		ok &= v == want;
	}
	atomic_store_explicit(seq_of(slot + lh_seq_at(h->pat)), pos + LH_SLOTS, memory_order_release);
	r->cpos = pos + 1;
	if (!ok)
		h->err = EBADMSG;
	return ok;
}

static void *lh_engine(void *arg)
{
	struct lh *h = arg;

	for (uint32_t k = 1; k <= h->iters; k++)
		if (!lh_get(h, &h->ring[0], k) || !lh_put(h, &h->ring[1], k) ||
		    !lh_get(h, &h->ring[2], k) || !lh_put(h, &h->ring[3], k))
			break;
	return NULL;
}

static void *lh_exec(void *arg)
{
	struct lh *h = arg;

	for (uint32_t k = 1; k <= h->iters; k++)
		if (!lh_get(h, &h->ring[1], k) || !lh_put(h, &h->ring[2], k))
			break;
	return NULL;
}

static void *lh_sensor(void *arg)
{
	struct lh *h = arg;
	uint64_t t0 = 0;

	for (uint32_t k = 1; k <= h->iters; k++) {
		t0 = timing_spin_until(t0 + h->gap_ns);

		if (!lh_put(h, &h->ring[0], k) || !lh_get(h, &h->ring[3], k)) {
			if (!h->err)
				h->err = ETIMEDOUT;
			break;
		}
		h->rtt[k - 1] = timing_now_ns() - t0;
	}
	atomic_store_explicit(&h->stop, true, memory_order_relaxed);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One run of @pat: fresh rings (slot i starts free for position i), three threads. */
static int lh_run(struct lh *h, enum lh_pattern pat, const int cpu[3], uint64_t *p50,
		  uint64_t *p99)
{
	pthread_t thr[3];
	int n = 0, err = 0;

	h->pat = pat;
	h->err = 0;
	atomic_store(&h->stop, false);
	for (int r = 0; r < 4; r++) {
		for (uint32_t i = 0; i < LH_SLOTS; i++)
			*seq_of(slot_at(&h->ring[r], i) + lh_seq_at(pat)) = i;
		atomic_store(&h->ring[r].record, 0);
		h->ring[r].ppos = 0;
		h->ring[r].cpos = 0;
		h->ring[r].room_to = 0;
	}
	static const char *const names[3] = { "lh-exec", "lh-eng", "lh-sens" };
	void *(*const fns[3])(void *) = { lh_exec, lh_engine, lh_sensor };

	for (int i = 0; i < 3 && !err; i++) {
		err = timing_thread_start(&thr[n], names[i], cpu[2 - i], fns[i], h);
		if (!err)
			n++;
	}
	if (err)
		atomic_store(&h->stop, true);
	while (n)
		pthread_join(thr[--n], NULL);
	if (err || h->err)
		return err ? err : h->err;
	/* the first tenth warms the rings up */
	qsort(h->rtt + h->iters / 10, h->iters - h->iters / 10, sizeof(uint64_t), cmp_u64);
	*p50 = h->rtt[h->iters / 10 + (h->iters - h->iters / 10) / 2];
	*p99 = h->rtt[h->iters / 10 + (uint64_t)(h->iters - h->iters / 10) * 99 / 100];
	return 0;
}

int main(int argc, char **argv)
{
	static struct lh h;
	uint32_t iters = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 100000;
	uint32_t rounds = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 3;
	int cpu[3] = { -1, -1, -1 };
	uint64_t p50[LH_NPAT][16], p99[LH_NPAT][16];

	if (argc > 5)
		for (int i = 0; i < 3; i++)
			cpu[i] = atoi(argv[3 + i]);
	h.bytes = argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 0) : 110;
	if (iters < 100 || !rounds || rounds > 16 || h.bytes < 57 || h.bytes > LH_MAX_BYTES ||
	    (argc > 7 && gpunic_parse_fixed(argv[7], 3, 1000000000ull, &h.gap_ns))) {
		fprintf(stderr, "usage: linehops [ITERS>=100 [ROUNDS<=16 [CPU_SENSOR CPU_ENGINE "
				"CPU_EXEC [BYTES 57..%u [GAP_US 0..1000000]]]]]\n", LH_MAX_BYTES);
		return 2;
	}
	timing_init();
	h.iters = iters;
	h.rtt = calloc(iters, sizeof(*h.rtt));
	for (int r = 0; r < 4; r++)
		h.ring[r].slots = aligned_alloc(4096, (size_t)LH_SLOTS * LH_SLOT_BYTES);
	if (!h.rtt || !h.ring[0].slots || !h.ring[1].slots || !h.ring[2].slots ||
	    !h.ring[3].slots) {
		fprintf(stderr, "linehops: out of memory\n");
		return 1;
	}
	for (int r = 0; r < 4; r++)
		memset(h.ring[r].slots, 0, (size_t)LH_SLOTS * LH_SLOT_BYTES);
	for (uint32_t round = 0; round < rounds; round++)
		for (int p = 0; p < LH_NPAT; p++) {
			int err = lh_run(&h, (enum lh_pattern)p, cpu, &p50[p][round],
					 &p99[p][round]);

			if (err) {
				fprintf(stderr, "linehops: %s: %s\n", lh_names[p], strerror(err));
				return 1;
			}
		}
	printf("# linehops: %u round trips per run, %u rounds in turn, cpus %d %d %d, "
	       "frame %u bytes, %.3f us from one start to the next; p50 (p99) ns per round trip "
	       "of four hops\n", iters, rounds, cpu[0], cpu[1], cpu[2], h.bytes, (double)h.gap_ns / 1e3);
	for (int p = 0; p < LH_NPAT; p++) {
		printf("%-7s", lh_names[p]);
		for (uint32_t round = 0; round < rounds; round++)
			printf(" %6llu (%llu)", (unsigned long long)p50[p][round],
			       (unsigned long long)p99[p][round]);
		printf("\n");
	}
	return 0;
}
