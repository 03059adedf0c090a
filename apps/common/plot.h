/* SPDX-License-Identifier: MIT */
/*
 * PNG plots of latency series: a histogram, a tail plot (1 - CDF on a log y-axis, so p99
 * and p99.9 are readable, each series' p50, p99 and p99.9 marked), one curve per series, and
 * for each series its latency over the run (message number on x: when the spikes came),
 * latencies in microseconds. Titles carry the run's parameters and the hardware; a log x-axis
 * labels at most one tick per decade once it spans more than three (labels never run into each
 * other), with units (us, ms, s).
 *
 * The plots are drawn from CSV files in the report folder (report.h writes them):
 *   hist CSV:  "lo_ns,hi_ns,count"        one row per bin, bins shared by every series
 *   ccdf CSV:  "latency_ns,fraction_ge"   fraction of samples >= latency, ascending latency
 *   samples CSV: "seq,latency_ns"         every sample, arrival order
 * plot_render() writes two scripts beside them, plot.gp (gnuplot) and plot.py (matplotlib),
 * and keeps both, so anyone can re-render by hand: cd DIR && gnuplot plot.gp (or python3
 * plot.py). It runs gnuplot first; if that is missing or fails, python3 with matplotlib
 * (the GPU machine has matplotlib but no gnuplot). Renderer output goes to DIR/plot.log.
 * When neither works, it prints one line on stderr saying that the plots were skipped and why,
 * and still returns 0: a missing plotting tool never fails a benchmark run.
 *
 * Renderers run with posix_spawn and a chdir into the folder (glibc 2.29 or later), so
 * plotting is safe while the caller's benchmark threads still exist.
 */
#ifndef GPUNIC_APPS_PLOT_H
#define GPUNIC_APPS_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum plot_renderer {
	PLOT_NONE = 0,
	PLOT_GNUPLOT,
	PLOT_PYTHON,
};

#define PLOT_HIST_PNG "latency_hist.png"
#define PLOT_CCDF_PNG "latency_ccdf.png"
#define PLOT_GNUPLOT_SCRIPT "plot.gp"
#define PLOT_PYTHON_SCRIPT "plot.py"
#define PLOT_LOG "plot.log"

struct plot_series {
	const char *label;	/* legend text */
	const char *hist_csv;	/* file name inside the folder */
	const char *ccdf_csv;	/* file name inside the folder */
	const char *samples_csv;	/* file name inside the folder; NULL: no time plot */
	const char *time_png;		/* the time plot's file name */
	uint64_t p50_ns, p99_ns, p999_ns;	/* markers on the tail plot; 0: none */
	uint64_t count;				/* samples: which markers the y-axis reaches */
};

struct plot_job {
	const char *dir;	/* folder holding the CSVs; scripts and PNGs go there too */
	const char *hardware;	/* appended to the titles (CPU and GPU names); NULL: none */
	const char *params;	/* the run's parameters and date, the titles' second line */
	const struct plot_series *series;
	size_t nseries;
	/*
	 * Smallest and largest latency over all series: the x-range. A range wider than one
	 * decade gets a log x-axis, so a rare 1 ms outlier does not squash a 2 us body.
	 */
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t max_samples;	/* largest series: the tail plot's y-axis reaches 1/N */
	const char *gnuplot;	/* NULL: "gnuplot" from PATH; "": do not try gnuplot */
	const char *python;	/* NULL: "python3" (PATH), then /usr/bin/python3; "": none */
	unsigned int timeout_s;	/* per renderer run; 0: PLOT_TIMEOUT_S */
};

#define PLOT_TIMEOUT_S 120	/* the first matplotlib import builds a font cache: slow */

/* Labelled ticks of a log x-axis from @lo_us to @hi_us into @tic (at most @max).
 * Return: how many; 0 for a range that is not positive. */
int plot_log_tics(double lo_us, double hi_us, double *tic, int max);
/* A tick label: "500" (us), "2 ms", "1 s"; @units: "us" added below a millisecond too. */
void plot_tic_label(double us, bool units, char *buf, size_t len);

/*
 * plot_render - write plot.gp and plot.py into job->dir and render every PNG.
 * @used: gets the renderer that produced the PNGs, PLOT_NONE when plots were skipped.
 * Return: 0 (plots skipped included), EINVAL for a job without folder or series, or the errno
 * of writing a script (reported with its path).
 */
int plot_render(const struct plot_job *job, enum plot_renderer *used);

/* "gnuplot", "python3-matplotlib" or "none". */
const char *plot_renderer_name(enum plot_renderer r);

#endif
