/* SPDX-License-Identifier: MIT */
/*
 * Latency statistics for benchmarks: a preallocated sample recorder with loss, duplicate,
 * reorder and corruption counters, a summary (nearest-rank percentiles, mean, stdev),
 * perftest-shaped output lines and a histogram.
 *
 * Percentile definition (nearest rank): on the n valid samples sorted ascending,
 * the p-th percentile is the sample of rank ceil(p/100 * n), ranks counted from 1 and clamped
 * to [1, n]. It is always a measured value, never an interpolation: p50 of {1, 2} is 1,
 * p99 of 1000 samples is the 990th smallest and p99.9 the 999th. The rank is computed in
 * integer parts per million, so 99.9% of 1000 is exactly 999 and not 1000 by rounding.
 * Standard deviation is the population one, sqrt(sum((x - mean)^2) / n): these are all the
 * samples of the run, not an estimate from a subset, and it is 0 (not undefined) for n = 1.
 *
 * Every function returns 0 or a positive errno value unless its comment says otherwise.
 */
#ifndef GPUNIC_MEASURE_STATS_H
#define GPUNIC_MEASURE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Per-sample flags. A sample is "valid" (enters the summary) unless LOST or CORRUPT. */
#define STATS_SAMPLE_VERIFIED 0x1u	/* the echoed payload was compared and matched */
#define STATS_SAMPLE_LOST 0x2u		/* no reply: the latency field means nothing */
#define STATS_SAMPLE_CORRUPT 0x4u	/* a reply came, its payload was wrong: not trusted */

struct stats_counts {
	uint64_t sent;		/* messages sent (stats_rec_finish), 0 if never said */
	uint64_t received;	/* replies recorded, corrupt ones included, duplicates not */
	uint64_t lost;		/* sequence numbers that never got a reply */
	uint64_t dup;		/* replies for a sequence number already recorded */
	uint64_t reorder;	/* replies whose sequence number is below one seen before */
	uint64_t corrupt;	/* replies flagged STATS_SAMPLE_CORRUPT */
};

/*
 * The recorder: one slot per sequence number 0..cap-1, filled in arrival order. All memory is
 * allocated and touched by stats_rec_init(), so recording never page-faults or allocates.
 * Sequence numbers are run-relative: a caller with wrapping or offset numbers unwraps them.
 */
struct stats_rec {
	uint64_t *lat_ns;	/* [n] latency in ns, arrival order */
	uint64_t *seq;		/* [n] sequence number of each sample */
	uint8_t *flags;		/* [n] STATS_SAMPLE_* */
	uint64_t *seen;		/* bitmap over 0..cap-1: recorded already (duplicate and loss) */
	size_t cap;
	size_t n;
	uint64_t max_seq;	/* highest sequence number recorded, for reorder counting */
	struct stats_counts counts;
};

int stats_rec_init(struct stats_rec *r, size_t cap);
void stats_rec_free(struct stats_rec *r);

/* Forget every sample and counter, keep the memory (a warm-up run before the measured one). */
void stats_rec_reset(struct stats_rec *r);

/*
 * stats_rec_add - record the reply for @seq.
 * A second reply for the same @seq is counted in counts.dup and not stored.
 * Return: 0 (stored or counted as duplicate), or ERANGE when @seq >= cap (nothing counted).
 */
int stats_rec_add(struct stats_rec *r, uint64_t seq, uint64_t lat_ns, unsigned int flags);

/*
 * stats_rec_finish - end of run: @sent messages (sequence numbers 0..sent-1) went out; each
 * one without a reply is recorded as a LOST sample. Return: 0, or ERANGE when @sent > cap.
 */
int stats_rec_finish(struct stats_rec *r, uint64_t sent);

static inline bool stats_sample_valid(unsigned int flags)
{
	return !(flags & (STATS_SAMPLE_LOST | STATS_SAMPLE_CORRUPT));
}

/*
 * stats_rec_sorted - the valid latencies, sorted ascending, in a new array (free() it).
 * Return: 0 (*out is NULL when *n is 0), or ENOMEM.
 */
int stats_rec_sorted(const struct stats_rec *r, uint64_t **out, size_t *n);

struct stats_summary {
	uint64_t count;		/* valid samples summarised */
	uint64_t min_ns;
	uint64_t p50_ns;
	uint64_t p90_ns;
	uint64_t p99_ns;
	uint64_t p999_ns;
	uint64_t max_ns;
	double mean_ns;
	double stdev_ns;
	struct stats_counts counts;	/* copied from the recorder */
};

/* Sort @n latencies ascending, in place. */
/*
 * How the slow samples are spaced: those above the run's p99, in the order they were sent.
 * A stall that recurs (a timer tick on a thread the path crosses) slows a message every so
 * many: most of them then share one distance to the one before. Neighbours (distance 1) are
 * left out of the search: one stall may slow two messages in a row.
 */
struct stats_tail_spacing {
	uint64_t threshold_ns;	/* p99: a sample above it is slow */
	uint64_t slow;		/* slow samples */
	uint64_t gap;		/* the most common distance, in sequence numbers (0: none) */
	uint64_t at_gap;	/* slow samples at gap - 1..gap + 1 from the slow one before */
};

/* stats_tail_spacing - @out for the valid samples of @r. Return: 0 or ENOMEM. */
int stats_tail_spacing(const struct stats_rec *r, struct stats_tail_spacing *out);

void stats_sort_ns(uint64_t *ns, size_t n);

/* Nearest-rank percentile @pct (0 < pct <= 100) of @sorted. Return: the value, 0 if n is 0. */
uint64_t stats_percentile(const uint64_t *sorted, size_t n, double pct);

/* Summary of an already sorted array; @counts may be NULL. Never fails; n = 0 gives zeros. */
void stats_summarize_sorted(const uint64_t *sorted, size_t n, const struct stats_counts *counts,
			    struct stats_summary *s);

/* Summary of a recorder's valid samples. Return: 0 or ENOMEM (for the sorted copy). */
int stats_summarize(const struct stats_rec *r, struct stats_summary *s);

/*
 * perftest-shaped output, as ib_send_lat and ib_send_bw print it, so scripts written for
 * perftest read ours. Latency: one line per message size,
 *   #bytes #iterations t_min t_max t_typical(p50) t_avg t_stdev p99 p99.9   (usec, 2 decimals)
 * Bandwidth: #bytes #iterations BW peak BW average [MB/sec] MsgRate[Mpps]. Like perftest,
 * an MB is 2^20 bytes and MsgRate is messages per microsecond.
 * The format functions return 0 or ENOSPC; the print functions 0 or the stream's errno.
 */
int stats_rule_print(FILE *f);
int stats_lat_header_print(FILE *f);
int stats_lat_format(char *buf, size_t len, uint64_t msg_bytes, const struct stats_summary *s);
int stats_lat_print(FILE *f, uint64_t msg_bytes, const struct stats_summary *s);

struct stats_bw {
	uint64_t msg_bytes;
	uint64_t iters;		/* messages in the run */
	double peak_mb_s;	/* best window (stats_bw_best_window), or the average */
	double avg_mb_s;
	double msg_rate_mpps;	/* average messages per microsecond */
};

/*
 * stats_bw_compute - bandwidth of @msgs messages of @msg_bytes completed in @elapsed_ns;
 * the peak comes from @peak_msgs completed within @peak_ns (0 for "same as the average").
 * Return: 0, or EINVAL when @elapsed_ns is 0.
 */
int stats_bw_compute(struct stats_bw *bw, uint64_t msg_bytes, uint64_t msgs, uint64_t elapsed_ns,
		     uint64_t peak_msgs, uint64_t peak_ns);

/*
 * stats_bw_best_window - from @n ascending completion times, the shortest span holding
 * @window + 1 consecutive completions: *msgs = @window messages completed in *ns.
 * Return: 0, or EINVAL when @window is 0 or not below @n.
 */
int stats_bw_best_window(const uint64_t *done_ns, size_t n, size_t window, uint64_t *msgs,
			 uint64_t *ns);

int stats_bw_header_print(FILE *f);
int stats_bw_format(char *buf, size_t len, const struct stats_bw *bw);
int stats_bw_print(FILE *f, const struct stats_bw *bw);

/*
 * A histogram with fixed-width or log-spaced bins. Bin i holds [edge[i], edge[i+1]); values
 * below edge[0] count in under, values at or above edge[nbins] in over.
 */
struct stats_hist {
	uint64_t *edge;		/* [nbins + 1], strictly increasing */
	uint64_t *count;	/* [nbins] */
	size_t nbins;
	uint64_t under;
	uint64_t over;
	uint64_t total;		/* every value added, under and over included */
};

/* @nbins bins of @width_ns from @lo_ns. Return: 0, EINVAL (0 bins or width), EOVERFLOW, ENOMEM. */
int stats_hist_init_fixed(struct stats_hist *h, uint64_t lo_ns, uint64_t width_ns, size_t nbins);

/*
 * @nbins bins whose edges grow geometrically from @lo_ns to @hi_ns (1 <= lo < hi), rounded to
 * whole ns; where rounding would repeat an edge the bin is 1 ns wide, so the last edge can
 * exceed @hi_ns for very narrow ranges. Return: 0, EINVAL or ENOMEM.
 */
int stats_hist_init_log(struct stats_hist *h, uint64_t lo_ns, uint64_t hi_ns, size_t nbins);

void stats_hist_add(struct stats_hist *h, uint64_t ns);
void stats_hist_free(struct stats_hist *h);

#endif
