/* SPDX-License-Identifier: MIT */
/*
 * Timing for benchmarks: one monotonic nanosecond clock, a paced send schedule that never
 * drifts, busy-waiting, and CPU pinning chosen from the process's allowed cores.
 *
 * The clock is CLOCK_MONOTONIC_RAW when the kernel has it, else CLOCK_MONOTONIC. RAW ticks at
 * the hardware counter's rate: NTP may slew MONOTONIC's rate (adjtimex, up to 500 ppm), RAW it
 * never touches, so a 4 us round trip means the same thing at every point of a long run. Both
 * are read through the vDSO on x86-64 and arm64 (RAW since Linux 5.3), so neither costs a
 * system call there; timing_init() measures what one reading costs on the machine at hand and
 * the report records it, so a slow clock (an old kernel, a VM without a stable TSC) is visible.
 *
 * Call timing_init() once at start-up, before any thread pins itself: it picks the clock,
 * measures its cost and snapshots the allowed CPU set that the pinning helpers choose from.
 * Every function returns 0 or a positive errno value unless its comment says otherwise.
 */
#ifndef GPUNIC_MEASURE_TIMING_H
#define GPUNIC_MEASURE_TIMING_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The clock every timestamp comes from; set by timing_init(), read by timing_now_ns(). */
extern clockid_t timing_clockid;

struct timing_clock {
	clockid_t id;
	const char *name;	/* "CLOCK_MONOTONIC_RAW" or "CLOCK_MONOTONIC" */
	uint64_t res_ns;	/* clock_getres() */
	double cost_ns;		/* one reading, best of several back-to-back batches */
};

/*
 * timing_init - pick the clock, measure its cost, snapshot the allowed CPU set.
 * Safe to call more than once and from several threads; only the first call does the work.
 * Return: 0, or the errno of clock_gettime()/sched_getaffinity() when neither clock works.
 */
int timing_init(void);

/* The chosen clock and its measured cost (runs timing_init() if nobody did). */
const struct timing_clock *timing_clock(void);

/* Nanoseconds on the chosen clock. Inline: it sits between a send and its timestamp. */
static inline uint64_t timing_now_ns(void)
{
	struct timespec ts;

	clock_gettime(timing_clockid, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tell the core we are spinning (x86 PAUSE, arm64 YIELD): saves power and the sibling thread. */
static inline void timing_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Busy-wait until the clock reads @deadline_ns or later. Return: that reading. */
uint64_t timing_spin_until(uint64_t deadline_ns);

/*
 * A paced schedule: message k is due at start + k * interval, computed from k every time, so
 * a late send never pushes later ones back (no drift, unlike "previous send + interval").
 * A wait that starts after its deadline returns at once and is counted as late.
 */
struct timing_pace {
	uint64_t start_ns;
	uint64_t interval_ns;
	uint64_t next;		/* index of the next slot timing_pace_wait() hands out */
	uint64_t late;		/* waits that began after their deadline */
	uint64_t max_late_ns;	/* worst lateness seen at the start of such a wait */
};

void timing_pace_init(struct timing_pace *p, uint64_t start_ns, uint64_t interval_ns);

/* Deadline of slot @k: start + k * interval, saturated at UINT64_MAX instead of wrapping. */
uint64_t timing_pace_deadline(const struct timing_pace *p, uint64_t k);

/*
 * Spin until the next slot's deadline and advance to the slot after it.
 * Return: the index k of the slot just reached; *now_ns (may be NULL) gets the clock reading
 * that ended the wait, which the caller can use as the send timestamp.
 */
uint64_t timing_pace_wait(struct timing_pace *p, uint64_t *now_ns);

/*
 * Allowed CPUs: the affinity mask of the thread that first called timing_init() (taskset,
 * cgroup cpuset), fixed from then on so that a thread that already pinned itself does not
 * shrink the choice for the next ones. Limited to CPU_SETSIZE (1024) CPUs.
 */
int timing_cpu_count(void);

/* Return: true if @cpu is in the allowed set. */
bool timing_cpu_allowed(int cpu);

/* *cpu = the @k-th allowed CPU, counting from 0 in increasing number. Return: 0 or ERANGE. */
int timing_cpu_nth(unsigned int k, int *cpu);

/* The allowed set as a list, e.g. "0-3,8". Return: 0, or ENOSPC if @len is too small. */
int timing_cpu_list(char *buf, size_t len);

/*
 * timing_pin_self - pin the calling thread to @cpu.
 * Return: 0; EINVAL with a message on stderr naming the allowed set when @cpu is not in it;
 * or the error of pthread_setaffinity_np() (the cpuset may have shrunk since the snapshot).
 */
int timing_pin_self(int cpu);

/*
 * timing_thread_start - start a thread already pinned to @cpu, so it never runs elsewhere.
 * @name: thread name shown by top/ps (cut to 15 characters), NULL for none.
 * @cpu: a CPU from the allowed set, or -1 to leave the thread unpinned (a small CI machine).
 * Return: 0, EINVAL (message on stderr) for a CPU outside the set, or pthread_create()'s error.
 */
int timing_thread_start(pthread_t *thr, const char *name, int cpu, void *(*fn)(void *), void *arg);

#endif
