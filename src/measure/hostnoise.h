/* SPDX-License-Identifier: MIT */
/*
 * What takes the path's CPUs away from it: each CPU spins reading the clock, and a gap between
 * two readings of HOSTNOISE_GAP_NS or more is time its thread did not run (a timer tick, a
 * device interrupt, the hypervisor). A paced series' p99 is set by how often such a gap lands
 * on a message in flight (docs/BENCHMARKS.md, "Where the p99 comes from"); this measures the
 * gaps themselves, on the CPUs the bench pins to, before it runs, and says whether the kernel
 * keeps the tick off them (nohz_full) or the scheduler off them (isolcpus).
 *
 * Every function returns 0 or a positive errno value unless its comment says otherwise.
 */
#ifndef GPUNIC_MEASURE_HOSTNOISE_H
#define GPUNIC_MEASURE_HOSTNOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A gap this long is not the loop: a clock reading costs 20-50 ns, even in a VM. */
#define HOSTNOISE_GAP_NS 1000u
/* Gaps kept per CPU for the median and the spacing; more are counted and summed only. */
#define HOSTNOISE_MAX_GAPS 8192u
/* Spacings within this share of the median spacing count as "at the period" (1/20 = 5 %). */
#define HOSTNOISE_PERIOD_SLACK_DIV 20u
#define HOSTNOISE_MAX_SPAN_NS 10000000000ull	/* 10 s */

struct hostnoise_cpu {
	int cpu;
	int err;		/* its thread could not be pinned or started: nothing measured */
	uint64_t span_ns;	/* how long it watched */
	uint64_t gaps;		/* interruptions seen */
	uint64_t stolen_ns;	/* their lengths summed */
	uint64_t len_p50_ns;	/* median length of the kept ones */
	uint64_t len_max_ns;
	uint64_t period_ns;	/* median spacing of consecutive kept gaps; 0 with fewer than 3 */
	uint64_t at_period;	/* spacings within 5 % of it */
	bool nohz_full;		/* in /sys/devices/system/cpu/nohz_full */
	bool isolated;		/* in /sys/devices/system/cpu/isolated */
};

/*
 * hostnoise_summarise - @out's statistics from @n kept gaps (@start[i] when gap i began, in
 * increasing order; @len[i] its length) out of @total seen with @stolen_ns summed, over a watch
 * of @span_ns. Leaves @out->cpu, err, nohz_full and isolated alone.
 * Return: 0, EINVAL (@n > @total, a start out of order), or ENOMEM.
 */
int hostnoise_summarise(const uint64_t *start, const uint64_t *len, size_t n, uint64_t total,
			uint64_t stolen_ns, uint64_t span_ns, struct hostnoise_cpu *out);

/*
 * hostnoise_measure - watch @cpus[0..@n) for @span_ns, one pinned thread each, all at once (as
 * the bench's threads spin together), and fill @out[0..@n). A CPU whose thread cannot be
 * pinned or started gets that error in its err, and the others are still measured.
 * Return: 0, EINVAL (@n < 1 or @span_ns out of 1..HOSTNOISE_MAX_SPAN_NS) or ENOMEM.
 */
int hostnoise_measure(const int *cpus, int n, uint64_t span_ns, struct hostnoise_cpu *out);

/* Return: true if @cpu is in the kernel's CPU list @list ("0-3,8", "(null)" and "" for none). */
bool hostnoise_list_has(const char *list, int cpu);

/*
 * hostnoise_kernel_list - the first line of @path (a sysfs CPU list) into @buf without its
 * newline; "" when the kernel lists none there ("(null)" or an empty line).
 * Return: 0, or errno of reading it (the file is missing on kernels without the feature).
 */
int hostnoise_kernel_list(const char *path, char *buf, size_t len);

#define HOSTNOISE_NOHZ_PATH "/sys/devices/system/cpu/nohz_full"
#define HOSTNOISE_ISOLATED_PATH "/sys/devices/system/cpu/isolated"

#endif
