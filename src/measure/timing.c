// SPDX-License-Identifier: MIT
/*
 * Clock choice and cost, paced schedules, busy-waiting, CPU pinning (see timing.h for why).
 */
#include "timing.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#define COST_BATCH 64	/* readings per batch: amortises the two bracketing reads */
#define COST_ROUNDS 32	/* the best batch is the clock's cost without interruptions */

clockid_t timing_clockid = CLOCK_MONOTONIC_RAW;

static struct timing_clock clock_info;
static cpu_set_t allowed;
static int allowed_count;
static int init_err;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static double measure_cost(void)
{
	double best = -1.0;

	for (int r = 0; r < COST_ROUNDS; r++) {
		uint64_t t0 = timing_now_ns(), t1;
		double per;

		for (int i = 0; i < COST_BATCH; i++)
			(void)timing_now_ns();
		t1 = timing_now_ns();
		/* t0 to t1 spans COST_BATCH + 1 readings: the loop's and t1's own. */
		per = (double)(t1 - t0) / (COST_BATCH + 1);
		if (best < 0 || per < best)
			best = per;
	}
	return best;
}

static int pick_clock(void)
{
	static const struct {
		clockid_t id;
		const char *name;
	} choices[] = {
		{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW" },
		{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC" },
	};
	int err = ENOSYS;

	for (size_t i = 0; i < sizeof(choices) / sizeof(choices[0]); i++) {
		struct timespec ts;

		if (clock_gettime(choices[i].id, &ts) != 0) {
			err = errno;
			continue;
		}
		timing_clockid = choices[i].id;
		clock_info.id = choices[i].id;
		clock_info.name = choices[i].name;
		if (clock_getres(choices[i].id, &ts) == 0)
			clock_info.res_ns = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
		/* Warm the vDSO page and the caches before the cost counts. */
		(void)measure_cost();
		clock_info.cost_ns = measure_cost();
		return 0;
	}
	return err;
}

static void do_init(void)
{
	int err = pick_clock();

	if (err) {
		fprintf(stderr, "gpunic: no monotonic clock: %s\n", strerror(err));
		init_err = err;
		return;
	}
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
		init_err = errno;
		fprintf(stderr, "gpunic: sched_getaffinity: %s\n", strerror(init_err));
		return;
	}
	allowed_count = CPU_COUNT(&allowed);
}

int timing_init(void)
{
	pthread_once(&init_once, do_init);
	return init_err;
}

const struct timing_clock *timing_clock(void)
{
	timing_init();
	return &clock_info;
}

uint64_t timing_spin_until(uint64_t deadline_ns)
{
	uint64_t now;

	while ((now = timing_now_ns()) < deadline_ns)
		timing_cpu_relax();
	return now;
}

void timing_pace_init(struct timing_pace *p, uint64_t start_ns, uint64_t interval_ns)
{
	memset(p, 0, sizeof(*p));
	p->start_ns = start_ns;
	p->interval_ns = interval_ns;
}

uint64_t timing_pace_deadline(const struct timing_pace *p, uint64_t k)
{
	uint64_t offset, deadline;

	if (__builtin_mul_overflow(k, p->interval_ns, &offset) ||
	    __builtin_add_overflow(p->start_ns, offset, &deadline))
		return UINT64_MAX;
	return deadline;
}

uint64_t timing_pace_wait(struct timing_pace *p, uint64_t *now_ns)
{
	uint64_t k = p->next++;
	uint64_t deadline = timing_pace_deadline(p, k);
	uint64_t now = timing_now_ns();

	if (now > deadline) {
		p->late++;
		if (now - deadline > p->max_late_ns)
			p->max_late_ns = now - deadline;
	} else {
		now = timing_spin_until(deadline);
	}
	if (now_ns)
		*now_ns = now;
	return k;
}

int timing_cpu_count(void)
{
	timing_init();
	return allowed_count;
}

bool timing_cpu_allowed(int cpu)
{
	timing_init();
	return cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed);
}

int timing_cpu_nth(unsigned int k, int *cpu)
{
	timing_init();
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &allowed))
			continue;
		if (k-- == 0) {
			*cpu = c;
			return 0;
		}
	}
	return ERANGE;
}

int timing_cpu_list(char *buf, size_t len)
{
	size_t used = 0;

	timing_init();
	if (len == 0)
		return ENOSPC;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int last = c;
		int n;

		if (!CPU_ISSET(c, &allowed))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &allowed))
			last++;
		if (last == c)
			n = snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
		else
			n = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, last);
		if (n < 0 || (size_t)n >= len - used)
			return ENOSPC;
		used += (size_t)n;
		c = last;
	}
	return 0;
}

/* The "clear error" of the pinning calls: which CPU, and what would have been allowed. */
static int check_allowed(int cpu)
{
	char list[256];

	if (timing_cpu_allowed(cpu))
		return 0;
	if (timing_cpu_list(list, sizeof(list)) != 0)
		strcpy(list, "(too long to print)");
	fprintf(stderr,
		"gpunic: cannot pin to CPU %d: not in this process's allowed CPUs %s "
		"(taskset or cgroup cpuset)\n",
		cpu, list);
	return EINVAL;
}

int timing_pin_self(int cpu)
{
	cpu_set_t one;
	int err = check_allowed(cpu);

	if (err)
		return err;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	err = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	if (err)
		fprintf(stderr, "gpunic: cannot pin to CPU %d: %s\n", cpu, strerror(err));
	return err;
}

int timing_thread_start(pthread_t *thr, const char *name, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t one;
	int err;

	if (cpu >= 0) {
		err = check_allowed(cpu);
		if (err)
			return err;
	} else {
		timing_init();
	}
	err = pthread_attr_init(&attr);
	if (err)
		return err;
	if (cpu >= 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		/* Set in the attributes, so the thread's first instruction already runs there. */
		err = pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		if (err)
			goto out;
	}
	err = pthread_create(thr, &attr, fn, arg);
	if (err) {
		fprintf(stderr, "gpunic: cannot start thread %s on CPU %d: %s\n", name ? name : "",
			cpu, strerror(err));
		goto out;
	}
	if (name) {
		char shortname[16];

		/* Linux keeps 15 characters; a longer name would fail with ERANGE. */
		snprintf(shortname, sizeof(shortname), "%s", name);
		(void)pthread_setname_np(*thr, shortname);
	}
out:
	pthread_attr_destroy(&attr);
	return err;
}
