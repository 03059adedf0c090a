// SPDX-License-Identifier: MIT
/*
 * Timing of the benchmark kit (src/measure/timing.h): the clock choice, the paced schedule's
 * arithmetic (no drift, no wrap) and CPU pinning. No test asserts how fast anything runs:
 * performance never decides a test on a shared machine.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "apps_test.h"
#include "timing.h"

TEST(timing_clock_chosen)
{
	const struct timing_clock *c;
	uint64_t a, b;

	CHECK_EQ(timing_init(), 0);
	c = timing_clock();
	CHECK(c->name);
	CHECK(strcmp(c->name, "CLOCK_MONOTONIC_RAW") == 0 ||
	      strcmp(c->name, "CLOCK_MONOTONIC") == 0);
	CHECK(c->id == timing_clockid);
	CHECK(c->cost_ns >= 0);
	a = timing_now_ns();
	b = timing_now_ns();
	CHECK(b >= a);
	CHECK_EQ(timing_init(), 0);	/* a second call is harmless */
}

TEST(timing_pace_no_drift)
{
	struct timing_pace p;
	uint64_t prev;

	timing_pace_init(&p, 1000, 333);
	CHECK_EQ(timing_pace_deadline(&p, 0), 1000);
	CHECK_EQ(timing_pace_deadline(&p, 1), 1333);
	/* Slot k is start + k * interval, exactly: no error accumulates over a long run. */
	CHECK_EQ(timing_pace_deadline(&p, 1000000), 1000 + 333000000ull);
	CHECK_EQ(timing_pace_deadline(&p, 3000000000ull), 1000 + 999000000000ull);
	prev = timing_pace_deadline(&p, 0);
	for (uint64_t k = 1; k < 100000; k++) {
		uint64_t d = timing_pace_deadline(&p, k);

		CHECK_EQ(d - prev, 333);
		prev = d;
	}
}

TEST(timing_pace_saturates)
{
	struct timing_pace p;

	timing_pace_init(&p, UINT64_MAX - 10, 5);
	CHECK_EQ(timing_pace_deadline(&p, 2), UINT64_MAX);
	CHECK_EQ(timing_pace_deadline(&p, 3), UINT64_MAX);
	timing_pace_init(&p, 0, UINT64_MAX / 2 + 1);
	CHECK_EQ(timing_pace_deadline(&p, 2), UINT64_MAX);
}

TEST(timing_pace_late_keeps_schedule)
{
	struct timing_pace p;
	uint64_t now, first;

	/* A schedule that began long ago: every wait is late, yet the slots stay k, k+1, ... */
	timing_pace_init(&p, 0, 1);
	CHECK_EQ(timing_pace_wait(&p, &now), 0);
	CHECK(now >= timing_pace_deadline(&p, 0));
	CHECK_EQ(timing_pace_wait(&p, NULL), 1);
	CHECK_EQ(timing_pace_wait(&p, NULL), 2);
	CHECK_EQ(p.next, 3);
	CHECK_EQ(p.late, 3);
	CHECK(p.max_late_ns > 0);

	/* A schedule in the near future: the wait returns at or after each deadline. */
	first = timing_now_ns() + 2000;
	timing_pace_init(&p, first, 1000);
	for (uint64_t k = 0; k < 5; k++) {
		CHECK_EQ(timing_pace_wait(&p, &now), k);
		CHECK(now >= first + k * 1000);
	}
	CHECK(timing_spin_until(0) > 0);
}

TEST(timing_cpu_list_and_nth)
{
	char list[512];
	int cpu, n = timing_cpu_count();

	CHECK(n >= 1);
	CHECK_EQ(timing_cpu_list(list, sizeof(list)), 0);
	CHECK(list[0] >= '0' && list[0] <= '9');
	CHECK_EQ(timing_cpu_list(list, 1), ENOSPC);
	for (int k = 0; k < n; k++) {
		CHECK_EQ(timing_cpu_nth((unsigned int)k, &cpu), 0);
		CHECK(timing_cpu_allowed(cpu));
	}
	CHECK_EQ(timing_cpu_nth((unsigned int)n, &cpu), ERANGE);
	CHECK(!timing_cpu_allowed(-1));
	CHECK(!timing_cpu_allowed(CPU_SETSIZE));
}

static int only_cpu_of_self(void)
{
	cpu_set_t set;

	CHECK_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
	if (CPU_COUNT(&set) != 1)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return -1;
}

TEST(timing_pin_allowed_core)
{
	int n = timing_cpu_count(), cpu;

	/* The last allowed core, so a mistake that always pins to CPU 0 shows. */
	CHECK_EQ(timing_cpu_nth((unsigned int)(n - 1), &cpu), 0);
	CHECK_EQ(timing_pin_self(cpu), 0);
	CHECK_EQ(only_cpu_of_self(), cpu);
	CHECK_EQ(sched_getcpu(), cpu);
}

TEST(timing_pin_disallowed_core)
{
	int outside = -1;

	CHECK_EQ(timing_init(), 0);
	for (int c = 0; c < CPU_SETSIZE && outside < 0; c++)
		if (!timing_cpu_allowed(c))
			outside = c;
	if (outside < 0)
		SKIP("every one of %d CPUs is allowed", CPU_SETSIZE);
	CHECK_EQ(timing_pin_self(outside), EINVAL);
	CHECK_EQ(timing_pin_self(-1), EINVAL);
	CHECK_EQ(timing_pin_self(CPU_SETSIZE + 5), EINVAL);
	/* The failed calls left the thread's affinity alone. */
	CHECK(only_cpu_of_self() < 0 || timing_cpu_count() == 1);
}

struct where {
	atomic_int go;		/* set once timing_thread_start() returned and named the thread */
	int cpu;
	int seen_cpu;
	char name[16];
};

static void *report_where(void *arg)
{
	struct where *w = arg;

	w->cpu = only_cpu_of_self();
	w->seen_cpu = sched_getcpu();
	while (!atomic_load(&w->go))
		sched_yield();
	pthread_getname_np(pthread_self(), w->name, sizeof(w->name));
	return NULL;
}

TEST(timing_thread_start_pinned)
{
	struct where w = { 0, -2, -2, "" };
	pthread_t t;
	int n = timing_cpu_count(), cpu, outside = -1;

	CHECK_EQ(timing_cpu_nth((unsigned int)(n - 1), &cpu), 0);
	CHECK_EQ(timing_thread_start(&t, "gpunic-test-thread-long-name", cpu, report_where, &w), 0);
	atomic_store(&w.go, 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(w.cpu, cpu);
	CHECK_EQ(w.seen_cpu, cpu);
	CHECK(strncmp(w.name, "gpunic-test-thr", 15) == 0);

	/* -1: not pinned, the thread keeps the whole allowed set. */
	CHECK_EQ(timing_thread_start(&t, NULL, -1, report_where, &w), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK(n == 1 || w.cpu == -1);

	for (int c = 0; c < CPU_SETSIZE && outside < 0; c++)
		if (!timing_cpu_allowed(c))
			outside = c;
	CHECK_EQ(timing_thread_start(&t, "x", outside < 0 ? CPU_SETSIZE : outside, report_where,
				     &w),
		 EINVAL);
}
