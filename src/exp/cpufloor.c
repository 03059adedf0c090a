// SPDX-License-Identifier: MIT
/* The CPU floor of the loopback (cpufloor.h): one cache line per hop, nothing else. */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>

#include "cpufloor.h"
#include "timing.h"

/* A stall longer than this (beyond the pacing's interval, which a wait may also span) means a
 * thread is not running: the run ends with ETIMEDOUT. */
#define CF_STALL_NS 10000000000ull

/* Each hop's line on its own cache line: a hop moves exactly one line between two cores. */
struct cf_line {
	alignas(64) _Atomic uint32_t v;
};

struct cf {
	struct cf_line to_engine;   /* sensor -> engine (inline: sensor -> executor) */
	struct cf_line to_exec;     /* engine -> executor */
	struct cf_line from_exec;   /* executor -> engine */
	struct cf_line to_sensor;   /* engine -> sensor (inline: executor -> sensor) */
	alignas(64) _Atomic bool stop;
	uint32_t rounds;
	uint64_t interval_ns;	/* from one round trip's start to the next's; 0: back to back */
	bool inline_engine;
	uint64_t *rtt;
	uint32_t warmup;
	const atomic_bool *halt;	/* the caller's: start no further round trip */
	uint32_t done;			/* measured round trips completed */
	int err;
};

/* Wait until @l holds @want; false when the run was stopped or the wait stalled. */
static bool cf_wait(struct cf *c, struct cf_line *l, uint32_t want)
{
	uint64_t t0 = 0;
	uint32_t spins = 0;

	while (atomic_load_explicit(&l->v, memory_order_acquire) != want) {
		if (atomic_load_explicit(&c->stop, memory_order_relaxed))
			return false;
		timing_cpu_relax();
		if (++spins == 1u << 16) {
			spins = 0;
			if (!t0)
				t0 = timing_now_ns();
			else if (timing_now_ns() - t0 > CF_STALL_NS + c->interval_ns)
				return false;
		}
	}
	return true;
}

static void cf_put(struct cf_line *l, uint32_t v)
{
	atomic_store_explicit(&l->v, v, memory_order_release);
}

static void *cf_engine(void *arg)
{
	struct cf *c = arg;

	for (uint32_t k = 1; k <= c->rounds; k++) {
		if (!cf_wait(c, &c->to_engine, k))
			break;
		cf_put(&c->to_exec, k);
		if (!cf_wait(c, &c->from_exec, k))
			break;
		cf_put(&c->to_sensor, k);
	}
	return NULL;
}

static void *cf_exec(void *arg)
{
	struct cf *c = arg;
	struct cf_line *in = c->inline_engine ? &c->to_engine : &c->to_exec;
	struct cf_line *out = c->inline_engine ? &c->to_sensor : &c->from_exec;

	for (uint32_t k = 1; k <= c->rounds; k++) {
		if (!cf_wait(c, in, k))
			break;
		cf_put(out, k);
	}
	return NULL;
}

/*
 * Paced as the series it is the floor of: a round trip starts @interval_ns after the last one
 * started (at once when that one took longer), waiting as the sensor waits for a message's
 * time. The cores along the path then idle between messages as the series' do, which on a VM
 * host costs each hop more than a ring run back to back (four hops 0.91-1.21 µs at 10 µs
 * against 0.67-1.02 on the H200 host: docs/BENCHMARKS.md, "Where a round trip's time goes").
 */
static void *cf_sensor(void *arg)
{
	struct cf *c = arg;
	uint64_t t0 = 0;

	for (uint32_t k = 1; k <= c->rounds; k++) {
		/* looked at before the round trip's clock starts: it costs the measure nothing */
		if (atomic_load_explicit(c->halt, memory_order_relaxed))
			break;
		/* Back to back (interval 0) or already due: the wait is one clock reading. */
		t0 = timing_spin_until(t0 + c->interval_ns);
		cf_put(&c->to_engine, k);
		if (!cf_wait(c, &c->to_sensor, k)) {
			c->err = ETIMEDOUT;
			break;
		}
		if (k > c->warmup)
			c->rtt[c->done++] = timing_now_ns() - t0;
	}
	atomic_store_explicit(&c->stop, true, memory_order_relaxed);
	return NULL;
}

int cpu_floor_run(int cpu_sensor, int cpu_engine, int cpu_exec, bool inline_engine,
		  uint32_t iters, uint32_t warmup, uint64_t interval_ns, uint64_t *rtt_ns,
		  const atomic_bool *halt, uint32_t *done)
{
	static struct cf c;	/* 64-byte aligned lines, and too large for a thread's stack */
	pthread_t thr[3];
	int n = 0, err;

	memset(&c, 0, sizeof(c));
	c.rounds = iters + warmup;
	c.warmup = warmup;
	c.rtt = rtt_ns;
	c.interval_ns = interval_ns;
	c.inline_engine = inline_engine;
	c.halt = halt;
	err = timing_thread_start(&thr[n], "gpunic-cf-exec", cpu_exec, cf_exec, &c);
	if (!err)
		n++;
	if (!err && !inline_engine) {
		err = timing_thread_start(&thr[n], "gpunic-cf-eng", cpu_engine, cf_engine, &c);
		if (!err)
			n++;
	}
	if (!err) {
		err = timing_thread_start(&thr[n], "gpunic-cf-sens", cpu_sensor, cf_sensor, &c);
		if (!err)
			n++;
	}
	if (err)
		atomic_store(&c.stop, true);
	while (n)
		pthread_join(thr[--n], NULL);
	*done = c.done;
	return err ? err : c.err;
}
