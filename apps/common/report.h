/* SPDX-License-Identifier: MIT */
/*
 * The report folder a benchmark leaves behind, and the side-by-side table it prints.
 *
 * Layout of the folder (created with its parents, like mkdir -p):
 *   summary.json        run metadata and one entry per series (below)
 *   <label>.csv         "seq,latency_ns": the samples that entered the summary, arrival order
 *   <label>.hist.csv    "lo_ns,hi_ns,count": log-spaced bins shared by every series
 *   <label>.ccdf.csv    "latency_ns,fraction_ge": the tail curve; every one of the last 1000
 *                       samples, then about one point per 2% of the rest
 *   <label>.hgrm        HdrHistogram's percentile distribution (outputPercentileDistribution:
 *                       Value in us, Percentile, TotalCount, 1/(1-Percentile), and the
 *                       Mean/StdDeviation and Max/Total count footer)
 *   plot.gp, plot.py, plot.log, latency_hist.png, latency_ccdf.png,
 *   <label>.time.png (latency over the run, one per series)   (report_plot)
 * <label> is the series label with every character outside [A-Za-z0-9._-] replaced by '_'.
 *
 * summary.json:
 *   { "schema": "gpunic-report-1",
 *     "meta": { "command", "argv", "date" (UTC, ISO 8601), "hostname", "cpu_model",
 *               "kernel" (uname -sr), "kernel_build" (uname -v), "machine" (uname -m),
 *               "gpu" (or null), "link" (or null), "message_bytes", "interval_ns",
 *               "clock", "clock_cost_ns", "cpus_allowed", "baseline" (or null),
 *               "version", "commit",
               "extra": { caller's keys: strings, numbers and booleans, as set } },
 *     "series": [ { "label", "files": { "samples", "hist", "ccdf" },
 *                   "count", "ns": { min p50 p90 p99 p999 max mean stdev },
 *                   "us": { the same in microseconds },
 *                   "loss": { sent received lost dup reorder corrupt },
 *                   "ratio_to_baseline": { min p50 p90 p99 p999 max mean } or null } ] }
 * A ratio is this series' value divided by the baseline series' value (DESIGN.md: results are
 * ratios taken in one run); null where the baseline value is 0 or there is no baseline.
 * Numbers are printed in the C locale's format; do not call setlocale(LC_NUMERIC) around it.
 *
 * Every function returns 0 or a positive errno value; file errors are also reported on stderr
 * with the path and strerror().
 */
#ifndef GPUNIC_APPS_REPORT_H
#define GPUNIC_APPS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plot.h"
#include "stats.h"

#define REPORT_SUMMARY_JSON "summary.json"
#define REPORT_SCHEMA "gpunic-report-1"

struct report_meta {
	int argc;			/* the command line, recorded as "argv" and shell-quoted */
	char *const *argv;		/* as "command" */
	const char *gpu_name;		/* NULL: recorded as null (a CPU-only run) */
	const char *link;		/* "shm", "udp", ... */
	uint64_t msg_bytes;
	uint64_t interval_ns;		/* send interval; 0 for back-to-back */
	const char *baseline;		/* label of the series others are divided by; NULL: none */
	const char *params;		/* the run in a few words, for plot titles ("32 B
					 * write-imm, link shm, 20000 messages every 10 us");
					 * NULL: none */
};

struct report;

/*
 * report_open - create the folder @dir (and parents) and gather host facts: date, hostname,
 * CPU model, kernel, clock. @meta's strings are copied.
 */
int report_open(struct report **out, const char *dir, const struct report_meta *meta);

/* Add a "meta.extra" string, e.g. ("nic_mode", "GPU_DB"). Both strings are copied. */
int report_set_extra(struct report *r, const char *key, const char *value);
/* ... a count, a measured number (NaN and infinities become null), a yes/no: typed in the
 * JSON, so jq and pandas read them as what they are. */
int report_set_extra_u64(struct report *r, const char *key, uint64_t v);
int report_set_extra_num(struct report *r, const char *key, double v);
int report_set_extra_bool(struct report *r, const char *key, bool v);

/*
 * report_add_series - summarise @rec under @label (copied) and keep its valid samples, so @rec
 * may be freed or reused right after. Return: 0, EINVAL (empty label), EEXIST (a label whose
 * file name another series already has), ENOMEM.
 */
int report_add_series(struct report *r, const char *label, const struct stats_rec *rec);

/* The summary of a series added earlier; NULL for an unknown label. */
const struct stats_summary *report_series_summary(const struct report *r, const char *label);

/* Write summary.json and every series' CSV files. */
int report_write(struct report *r);

/*
 * report_print_table - one column per series; rows samples, min, p50, p90, p99, p99.9, max,
 * mean (microseconds, 3 decimals), loss (count and percentage of sent), and p50 and p99 as
 * ratios to the baseline when there is one. Return: 0 or the stream's errno.
 */
int report_print_table(const struct report *r, FILE *out);

/*
 * report_plot - render the histogram, tail and latency-over-time plots from the CSVs written by
 * report_write(), titled with the run's parameters, its date, the CPU model and the GPU; the
 * tail plot marks each series' p50, p99 and p99.9. @gnuplot and @python as in struct plot_job
 * (NULL for the defaults). Return: as plot_render(); *used says which renderer drew them.
 */
int report_plot(struct report *r, const char *gnuplot, const char *python,
		enum plot_renderer *used);

const char *report_dir(const struct report *r);

void report_close(struct report *r);

#endif
