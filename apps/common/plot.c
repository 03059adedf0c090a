// SPDX-License-Identifier: MIT
/*
 * Plot scripts (gnuplot, matplotlib) and running them (see plot.h for the contract).
 */
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"

extern char **environ;

#define PLOT_WIDTH_PX 1200
#define PLOT_HEIGHT_PX 800
#define PY_NO_MATPLOTLIB 3	/* plot.py's exit status when matplotlib does not import */
#define WAIT_POLL_NS 10000000	/* 10 ms between checks on a running renderer */
#define REASONS_MAX 1024

static const unsigned char png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

/* The numbers both scripts share, computed once so the two renderers draw the same thing. */
#define XTICS_MAX 32

#define TIC_SPREAD_DECADES 3	/* wider than this, one labelled tick per decade */

struct axes {
	bool log_x;
	double x_lo_us;
	double x_hi_us;
	double xtic[XTICS_MAX];	/* log axis only: labelled (plot_log_tics) */
	int nxtics;
	bool units;		/* labels carry their unit: the axis reaches a millisecond */
	double y_min;		/* bottom of the tail plot: half of 1/N */
	int decades;		/* y tics 1, 0.1, ... 10^-(decades-1) */
};

int plot_log_tics(double lo_us, double hi_us, double *tic, int max)
{
	static const double steps[] = { 1, 2, 5 };
	/* 1-2-5 while the decades are few; beyond, their labels would run into each other */
	int nsteps, n = 0;

	if (lo_us <= 0 || hi_us <= lo_us)
		return 0;
	nsteps = log10(hi_us / lo_us) > TIC_SPREAD_DECADES ? 1 : 3;

	for (int e = -3; e <= 7; e++) {
		for (int k = 0; k < nsteps && n < max; k++) {
			double t = steps[k] * pow(10, e);

			if (t >= lo_us && t <= hi_us)
				tic[n++] = t;
		}
	}
	return n;
}

void plot_tic_label(double us, bool units, char *buf, size_t len)
{
	if (us >= 1e6)
		snprintf(buf, len, "%g s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%g ms", us / 1e3);
	else
		snprintf(buf, len, units ? "%g us" : "%g", us);
}

static void compute_axes(const struct plot_job *job, struct axes *ax)
{
	double lo = job->min_ns / 1000.0, hi = job->max_ns / 1000.0;
	uint64_t n = job->max_samples ? job->max_samples : 1;

	ax->log_x = job->min_ns > 0 && job->max_ns >= 10 * job->min_ns;
	if (ax->log_x) {
		ax->x_lo_us = lo / 1.25;
		ax->x_hi_us = hi * 1.25;
	} else {
		/* 5% margins; a single value still gets a visible range around it. */
		double pad = (hi - lo) * 0.05;

		if (pad <= 0)
			pad = hi > 0 ? hi * 0.05 : 0.001;
		ax->x_lo_us = lo - pad > 0 ? lo - pad : 0;
		ax->x_hi_us = hi + pad;
	}
	ax->nxtics = ax->log_x ? plot_log_tics(ax->x_lo_us, ax->x_hi_us, ax->xtic, XTICS_MAX) : 0;
	ax->units = ax->x_hi_us >= 1000;
	ax->y_min = 0.5 / (double)n;
	ax->decades = 1;
	while (ax->decades < 12 && pow(10, -ax->decades) >= ax->y_min)
		ax->decades++;
}

/* Tail-plot tic label for 10^-d: the percentile it marks, which is how people read it. */
static void ytic_label(int d, char *buf, size_t len)
{
	static const char *const named[] = { "1", "0.1 (p90)", "0.01 (p99)", "0.001 (p99.9)" };

	if (d < 4)
		snprintf(buf, len, "%s", named[d]);
	else
		snprintf(buf, len, "1e-%d (p99.%.*s)", d, d - 2, "9999999999");
}

/* A gnuplot single-quoted string: only ' is special (doubled); newlines cannot appear. */
static void gp_str(struct outf *o, const char *s)
{
	outf_printf(o, "'");
	for (; *s; s++) {
		if (*s == '\'')
			outf_printf(o, "''");
		else if ((unsigned char)*s < 0x20)
			outf_printf(o, " ");
		else
			outf_printf(o, "%c", *s);
	}
	outf_printf(o, "'");
}

/* The plot's name, then the run and the hardware on a second line. */
static void gp_title(struct outf *o, const char *what, const struct plot_job *job)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s%s%s", job->params ? job->params : "",
		 job->params && job->hardware ? " - " : "", job->hardware ? job->hardware : "");
	outf_printf(o, "set title ");
	gp_str(o, what);
	if (buf[0]) {
		outf_printf(o, ".\"\\n\".");
		gp_str(o, buf);
	}
	outf_printf(o, "\n");
}

struct marker {
	double pct;
	const char *name;
};

static const struct marker markers[] = { { 50, "p50" }, { 99, "p99" }, { 99.9, "p99.9" } };
#define N_MARKERS (sizeof(markers) / sizeof(markers[0]))

/* The marker's latency, 0 when the series has none or too few samples to reach its level. */
static uint64_t marker_ns(const struct plot_series *s, size_t m)
{
	uint64_t v[] = { s->p50_ns, s->p99_ns, s->p999_ns };

	if ((double)s->count * (1 - markers[m].pct / 100.0) < 1 - 1e-9)
		return 0;
	return v[m];
}

/* "p99 8.84 ms": three digits, with the unit, as a marker's label. */
static void marker_label(size_t m, uint64_t ns, char *buf, size_t len)
{
	double us = ns / 1000.0;

	if (us >= 1e6)
		snprintf(buf, len, "%s %.3g s", markers[m].name, us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%s %.3g ms", markers[m].name, us / 1e3);
	else
		snprintf(buf, len, "%s %.3g us", markers[m].name, us);
}

/* Where @us lies across the x-axis, 0 (left) to 1 (right). */
static double x_frac(const struct axes *ax, double us)
{
	if (ax->log_x)
		return log(us / ax->x_lo_us) / log(ax->x_hi_us / ax->x_lo_us);
	return (us - ax->x_lo_us) / (ax->x_hi_us - ax->x_lo_us);
}

/* More series than this and the values beside the markers run into each other (the bench's
 * nine series on the H200): they go into the legend instead, the markers stay on the curves. */
#define MARKER_TEXT_MAX_SERIES 3

/* "gpu-bf: p50 6.22 us, p99 12.7 us, p99.9 24.5 us" into @buf: a tail plot's legend entry. */
static void legend_with_markers(const struct plot_series *s, char *buf, size_t len)
{
	char label[64];
	size_t n = (size_t)snprintf(buf, len, "%s", s->label);

	for (size_t m = 0; m < N_MARKERS && n < len; m++) {
		uint64_t ns = marker_ns(s, m);

		if (!ns)
			continue;
		marker_label(m, ns, label, sizeof(label));
		n += (size_t)snprintf(buf + n, len - n, "%s%s", m ? ", " : ": ", label);
	}
}

/*
 * Each series' p50, p99 and p99.9 on the tail curve, labelled with the value; a label near
 * the right edge goes to the left of its point, so that it stays inside the plot, and every
 * other series' labels go below their points, so that two series' p50s side by side do not
 * write over each other.
 */
static void gp_markers(struct outf *o, const struct plot_job *job, const struct axes *ax)
{
	char label[64];
	int tag = 1;

	for (size_t i = 0; i < job->nseries; i++) {
		for (size_t m = 0; m < N_MARKERS; m++) {
			uint64_t ns = marker_ns(&job->series[i], m);
			bool left;

			if (!ns)
				continue;
			left = x_frac(ax, ns / 1000.0) > 0.8;
			marker_label(m, ns, label, sizeof(label));
			if (job->nseries > MARKER_TEXT_MAX_SERIES)
				label[0] = 0;	/* in the legend */
			outf_printf(o, "set label %d '%s' at %.6g,%.6g %s point pt 7 ps 1.2 lc %zu "
				    "offset %s,%s front\n", tag++, label, ns / 1000.0,
				    1 - markers[m].pct / 100.0, left ? "right" : "left", i + 1,
				    left ? "-0.8" : "0.8", i % 2 ? "-0.9" : "0.6");
		}
	}
}

/* One plot per series: every sample's latency against its message number. */
static void gp_time(struct outf *o, const struct plot_job *job)
{
	for (size_t i = 0; i < job->nseries; i++) {
		const struct plot_series *s = &job->series[i];
		char what[256];

		if (!s->samples_csv)
			continue;
		snprintf(what, sizeof(what), "Latency over the run: %s", s->label);
		outf_printf(o, "\nset output ");
		gp_str(o, s->time_png);
		outf_printf(o, "\n");
		gp_title(o, what, job);
		outf_printf(o, "plot ");
		gp_str(o, s->samples_csv);
		outf_printf(o, " using 1:($2/1000.0) with points pt 7 ps 0.3 lc %zu title ", i + 1);
		gp_str(o, s->label);
		outf_printf(o, "\n");
	}
}

/* The latency axis' labelled ticks on @axis ('x' or 'y'). */
static void gp_tics(struct outf *o, char axis, const struct axes *ax)
{
	char label[32];

	outf_printf(o, "set %ctics (", axis);
	for (int i = 0; i < ax->nxtics; i++) {
		plot_tic_label(ax->xtic[i], ax->units, label, sizeof(label));
		outf_printf(o, "%s'%s' %g", i ? ", " : "", label, ax->xtic[i]);
	}
	outf_printf(o, ")\n");
}

static int write_gnuplot(const char *path, const struct plot_job *job, const struct axes *ax)
{
	struct outf o;
	char label[64], legend[192];
	int err = outf_open(&o, path);

	if (err)
		return err;
	outf_printf(&o,
		    "# Latency plots written by gpunic; re-render in this folder with: gnuplot %s\n"
		    "set encoding utf8\n"
		    "set datafile separator ','\n"
		    "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		    "\tset terminal pngcairo size %d,%d noenhanced\n"
		    "\tset style fill transparent solid 0.35 noborder\n"
		    "} else {\n"
		    "\tset terminal png size %d,%d noenhanced\n"
		    "\tset style fill empty\n"
		    "}\n"
		    "set grid\n"
		    "set key top right\n"
		    "set xlabel 'latency [µs]'\n"
		    "set xrange [%.6g:%.6g]\n"
		    "%s\n"
		    "set logscale y\n",
		    PLOT_GNUPLOT_SCRIPT, PLOT_WIDTH_PX, PLOT_HEIGHT_PX, PLOT_WIDTH_PX,
		    PLOT_HEIGHT_PX,
		    ax->x_lo_us, ax->x_hi_us, ax->log_x ? "set logscale x" : "unset logscale x");

	if (ax->nxtics)
		gp_tics(&o, 'x', ax);

	/* Histogram: one box per bin spanning [lo, hi); empty bins are NaN, i.e. not drawn. */
	outf_printf(&o, "\nset output '%s'\n", PLOT_HIST_PNG);
	gp_title(&o, "Latency histogram", job);
	outf_printf(&o, "set ylabel 'samples per bin'\nset yrange [0.8:*]\nplot ");
	for (size_t i = 0; i < job->nseries; i++) {
		outf_printf(&o, "%s", i ? ", \\\n     " : "");
		gp_str(&o, job->series[i].hist_csv);
		outf_printf(&o, " using (($1+$2)/2000.0):($3 > 0 ? $3 : NaN):(($2-$1)/1000.0) "
				"with boxes title ");
		gp_str(&o, job->series[i].label);
	}

	/* Tail: P(latency >= x) as a step function, so every one of the last samples shows. */
	outf_printf(&o, "\n\nset output '%s'\n", PLOT_CCDF_PNG);
	gp_title(&o, "Latency tail: fraction of samples >= x (1 - CDF), p50/p99/p99.9 marked", job);
	gp_markers(&o, job, ax);
	outf_printf(&o, "set ylabel 'fraction of samples >= x'\nset yrange [%.6g:1.5]\nset ytics (",
		    ax->y_min);
	for (int d = 0; d < ax->decades; d++) {
		ytic_label(d, label, sizeof(label));
		outf_printf(&o, "%s'%s' 1e-%d", d ? ", " : "", label, d);
	}
	outf_printf(&o, ")\nplot ");
	for (size_t i = 0; i < job->nseries; i++) {
		outf_printf(&o, "%s", i ? ", \\\n     " : "");
		gp_str(&o, job->series[i].ccdf_csv);
		outf_printf(&o, " using ($1/1000.0):2 with fsteps lw 2 title ");
		if (job->nseries > MARKER_TEXT_MAX_SERIES) {
			legend_with_markers(&job->series[i], legend, sizeof(legend));
			gp_str(&o, legend);
		} else {
			gp_str(&o, job->series[i].label);
		}
	}
	/* time plots: message number on x, latency on y (log when it spans a decade) */
	outf_printf(&o, "\n\nunset label\nunset xrange\nunset logscale x\nunset xtics\nset xtics\n"
			"set autoscale x\nset xlabel 'message number (sequence)'\n"
			"set ylabel 'latency [µs]'\nset yrange [%.6g:%.6g]\n%s\nunset ytics\n",
		    ax->x_lo_us, ax->x_hi_us, ax->log_x ? "set logscale y" : "unset logscale y");
	/* latency is on y now: the same labelled ticks as the other plots' x */
	if (ax->nxtics)
		gp_tics(&o, 'y', ax);
	else
		outf_printf(&o, "set ytics\n");
	gp_time(&o, job);
	outf_printf(&o, "\nset output\n");
	return outf_close(&o);
}

/* One SERIES entry of plot.py. Strings as JSON literals, which are Python literals too. */
static void py_series(struct outf *o, const struct plot_series *s, const struct axes *ax)
{
	char label[64];

	outf_printf(o, "    (");
	outf_json_str(o, s->label);
	outf_printf(o, ", ");
	outf_json_str(o, s->hist_csv);
	outf_printf(o, ", ");
	outf_json_str(o, s->ccdf_csv);
	outf_printf(o, ", ");
	if (s->samples_csv)
		outf_json_str(o, s->samples_csv);
	else
		outf_printf(o, "None");
	outf_printf(o, ", ");
	outf_json_str(o, s->time_png ? s->time_png : "");
	outf_printf(o, ", [");
	for (size_t m = 0, n = 0; m < N_MARKERS; m++) {
		uint64_t ns = marker_ns(s, m);

		if (!ns)
			continue;
		marker_label(m, ns, label, sizeof(label));
		outf_printf(o, "%s('%s', %.6g, %.6g, %s)", n++ ? ", " : "", label, ns / 1000.0,
			    1 - markers[m].pct / 100.0,
			    x_frac(ax, ns / 1000.0) > 0.8 ? "True" : "False");
	}
	outf_printf(o, "]),\n");
}

static int write_python(const char *path, const struct plot_job *job, const struct axes *ax)
{
	struct outf o;
	char label[64];
	int err = outf_open(&o, path);

	if (err)
		return err;
	/* Strings go out as JSON string literals, which are valid Python literals too. */
	outf_printf(&o,
		    "#!/usr/bin/env python3\n"
		    "# Latency plots written by gpunic; re-render with: python3 %s\n"
		    "# (the same plots as %s, for machines without gnuplot)\n"
		    "import csv\nimport os\nimport sys\n\n"
		    "os.chdir(os.path.dirname(os.path.abspath(__file__)))\n"
		    "try:\n"
		    "    import matplotlib\n"
		    "    matplotlib.use('Agg')\n"
		    "    import matplotlib.pyplot as plt\n"
		    "except ImportError as e:\n"
		    "    sys.stderr.write('plot.py: matplotlib is not available: %%s\\n' %% e)\n"
		    "    sys.exit(%d)\n\n"
		    "HARDWARE = ",
		    PLOT_PYTHON_SCRIPT, PLOT_GNUPLOT_SCRIPT, PY_NO_MATPLOTLIB);
	outf_json_str(&o, job->hardware ? job->hardware : "");
	outf_printf(&o, "\nPARAMS = ");
	outf_json_str(&o, job->params ? job->params : "");
	outf_printf(&o, "\n# label, hist, ccdf, samples (or None), time plot, [(text, us, fraction, left)]"
			"\nSERIES = [\n");
	for (size_t i = 0; i < job->nseries; i++)
		py_series(&o, &job->series[i], ax);
	outf_printf(&o, "]\nLOG_X = %s\nX_RANGE = (%.6g, %.6g)\nXTICKS = [",
		    ax->log_x ? "True" : "False", ax->x_lo_us, ax->x_hi_us);
	for (int i = 0; i < ax->nxtics; i++) {
		plot_tic_label(ax->xtic[i], ax->units, label, sizeof(label));
		outf_printf(&o, "%s(%g, '%s')", i ? ", " : "", ax->xtic[i], label);
	}
	outf_printf(&o, "]\nY_MIN = %.6g\nYTICKS = [", ax->y_min);
	for (int d = 0; d < ax->decades; d++) {
		ytic_label(d, label, sizeof(label));
		outf_printf(&o, "%s(1e-%d, '%s')", d ? ", " : "", d, label);
	}
	outf_printf(&o,
		    "]\n\n\n"
		    "def rows(path):\n"
		    "    with open(path, newline='') as f:\n"
		    "        r = csv.reader(f)\n"
		    "        next(r, None)\n"
		    "        return [[float(v) for v in row] for row in r if row]\n\n\n"
		    "def title(what):\n"
		    "    run = ' - '.join(t for t in (PARAMS, HARDWARE) if t)\n"
		    "    return what + ('\\n' + run if run else '')\n\n\n"
		    "def axes(ylabel, what):\n"
		    "    fig, ax = plt.subplots(figsize=(%d / 100, %d / 100), dpi=100)\n"
		    "    ax.set_xscale('log' if LOG_X else 'linear')\n"
		    "    ax.set_xlim(*X_RANGE)\n"
		    "    if XTICKS:\n"
		    "        ax.set_xticks([t[0] for t in XTICKS])\n"
		    "        ax.set_xticklabels([t[1] for t in XTICKS])\n"
		    "        ax.xaxis.set_minor_formatter(plt.NullFormatter())\n"
		    "    ax.set_yscale('log')\n"
		    "    ax.set_xlabel('latency [µs]')\n"
		    "    ax.set_ylabel(ylabel)\n"
		    "    ax.set_title(title(what))\n"
		    "    ax.grid(True, which='major', alpha=0.4)\n"
		    "    return fig, ax\n\n\n"
		    "fig, ax = axes('samples per bin', 'Latency histogram')\n"
		    "for label, hist, *_ in SERIES:\n"
		    "    bins = [b for b in rows(hist) if b[2] > 0]\n"
		    "    ax.bar([b[0] / 1000 for b in bins], [b[2] for b in bins],\n"
		    "           width=[(b[1] - b[0]) / 1000 for b in bins], align='edge',\n"
		    "           alpha=0.35, label=label)\n"
		    "ax.set_ylim(bottom=0.8)\n"
		    "ax.legend(loc='upper right')\n"
		    "fig.savefig('%s')\n"
		    "plt.close(fig)\n\n"
		    "fig, ax = axes('fraction of samples >= x',\n"
		    "               'Latency tail: fraction of samples >= x (1 - CDF), '\n"
		    "               'p50/p99/p99.9 marked')\n"
		    "for i, (label, _, ccdf, _, _, marks) in enumerate(SERIES):\n"
		    "    pts = rows(ccdf)\n"
		    "    line, = ax.step([p[0] / 1000 for p in pts], [p[1] for p in pts], where='pre',\n"
		    "                    linewidth=2, label=label)\n"
		    "    for text, us, frac, left in marks:\n"
		    "        ax.plot([us], [frac], 'o', color=line.get_color())\n"
		    "        if len(SERIES) > %d:\n"
		    "            continue\n"
		    "        ax.annotate(text, (us, frac), xytext=(-6 if left else 6, -14 if i %% 2 else 4),\n"
		    "                    textcoords='offset points',\n"
		    "                    ha='right' if left else 'left')\n"
		    "    if len(SERIES) > %d:\n"
		    "        line.set_label(label + ': ' + ', '.join(m[0] for m in marks))\n"
		    "ax.set_ylim(Y_MIN, 1.5)\n"
		    "ax.set_yticks([t[0] for t in YTICKS])\n"
		    "ax.set_yticklabels([t[1] for t in YTICKS])\n"
		    "ax.minorticks_off()\n"
		    "ax.legend(loc='upper right')\n"
		    "fig.savefig('%s')\n"
		    "plt.close(fig)\n\n"
		    "for label, _, _, samples, png, _ in SERIES:\n"
		    "    if not samples:\n"
		    "        continue\n"
		    "    pts = rows(samples)\n"
		    "    fig, ax = plt.subplots(figsize=(%d / 100, %d / 100), dpi=100)\n"
		    "    ax.scatter([p[0] for p in pts], [p[1] / 1000 for p in pts], s=1, label=label)\n"
		    "    ax.set_yscale('log' if LOG_X else 'linear')\n"
		    "    ax.set_ylim(*X_RANGE)\n"
		    "    if XTICKS:\n"
		    "        ax.set_yticks([t[0] for t in XTICKS])\n"
		    "        ax.set_yticklabels([t[1] for t in XTICKS])\n"
		    "        ax.yaxis.set_minor_formatter(plt.NullFormatter())\n"
		    "    ax.set_xlabel('message number (sequence)')\n"
		    "    ax.set_ylabel('latency [µs]')\n"
		    "    ax.set_title(title('Latency over the run: ' + label))\n"
		    "    ax.grid(True, which='major', alpha=0.4)\n"
		    "    ax.legend(loc='upper right')\n"
		    "    fig.savefig(png)\n"
		    "    plt.close(fig)\n",
		    PLOT_WIDTH_PX, PLOT_HEIGHT_PX, PLOT_HIST_PNG, MARKER_TEXT_MAX_SERIES,
		    MARKER_TEXT_MAX_SERIES, PLOT_CCDF_PNG, PLOT_WIDTH_PX, PLOT_HEIGHT_PX);
	return outf_close(&o);
}

static int join(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? ENAMETOOLONG : 0;
}

/*
 * Run @argv inside @dir with stdout and stderr appended to PLOT_LOG there.
 * Return: 0 with *status set (waitpid's), ENOENT and friends from posix_spawnp, or ETIMEDOUT
 * when the renderer had to be killed.
 */
static int run_in(const char *dir, char *const argv[], unsigned int timeout_s, int *status)
{
	posix_spawn_file_actions_t fa;
	struct timespec poll = { 0, WAIT_POLL_NS };
	uint64_t waited_ns = 0;
	pid_t pid;
	int err;

	err = posix_spawn_file_actions_init(&fa);
	if (err)
		return err;
	err = posix_spawn_file_actions_addchdir_np(&fa, dir);
	if (!err)
		err = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (!err)
		err = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, PLOT_LOG,
						       O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	if (!err)
		err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return err;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return errno;
		if (waited_ns >= (uint64_t)timeout_s * 1000000000u) {
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return ETIMEDOUT;
		}
		nanosleep(&poll, NULL);
		waited_ns += WAIT_POLL_NS;
	}
}

static bool png_ok(const char *dir, const char *name)
{
	char path[PATH_MAX];
	unsigned char head[sizeof(png_signature)];
	FILE *f;
	size_t got;

	if (join(path, dir, name))
		return false;
	f = fopen(path, "rb");
	if (!f)
		return false;
	got = fread(head, 1, sizeof(head), f);
	fclose(f);
	return got == sizeof(head) && memcmp(head, png_signature, sizeof(head)) == 0;
}

static void __attribute__((format(printf, 2, 3))) add_reason(char *reasons, const char *fmt, ...)
{
	size_t used = strlen(reasons);
	va_list ap;

	if (used && used + 2 < REASONS_MAX) {
		strcpy(reasons + used, "; ");
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(reasons + used, REASONS_MAX - used, fmt, ap);
	va_end(ap);
}

/*
 * One attempt: run @prog on @script, then check that both PNGs exist and are PNGs.
 * Return: true on success; else a reason is appended to @reasons.
 */
static bool try_renderer(const struct plot_job *job, const char *prog, const char *script,
			 char *reasons)
{
	char *argv[] = { (char *)prog, (char *)script, NULL };
	unsigned int timeout = job->timeout_s ? job->timeout_s : PLOT_TIMEOUT_S;
	int status = 0;
	int err = run_in(job->dir, argv, timeout, &status);

	if (err == ENOENT) {
		add_reason(reasons, "%s not found", prog);
		return false;
	}
	if (err == ETIMEDOUT) {
		add_reason(reasons, "%s killed after %u s", prog, timeout);
		return false;
	}
	if (err) {
		add_reason(reasons, "%s cannot run: %s", prog, strerror(err));
		return false;
	}
	if (WIFSIGNALED(status)) {
		add_reason(reasons, "%s killed by signal %d", prog, WTERMSIG(status));
		return false;
	}
	if (WEXITSTATUS(status) == PY_NO_MATPLOTLIB && strcmp(script, PLOT_PYTHON_SCRIPT) == 0) {
		add_reason(reasons, "%s has no matplotlib", prog);
		return false;
	}
	if (WEXITSTATUS(status) != 0) {
		add_reason(reasons, "%s exited with status %d", prog, WEXITSTATUS(status));
		return false;
	}
	if (!png_ok(job->dir, PLOT_HIST_PNG) || !png_ok(job->dir, PLOT_CCDF_PNG)) {
		add_reason(reasons, "%s wrote no valid PNG", prog);
		return false;
	}
	for (size_t i = 0; i < job->nseries; i++) {
		const struct plot_series *s = &job->series[i];

		if (s->samples_csv && !png_ok(job->dir, s->time_png)) {
			add_reason(reasons, "%s wrote no valid %s", prog, s->time_png);
			return false;
		}
	}
	return true;
}

/* Start plot.log afresh and remove PNGs of an earlier render, so success is this run's. */
static int reset_outputs(const struct plot_job *job)
{
	static const char *const stale[] = { PLOT_HIST_PNG, PLOT_CCDF_PNG };
	char path[PATH_MAX];
	struct outf o;
	int err;

	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]) + job->nseries; i++) {
		size_t k = i - sizeof(stale) / sizeof(stale[0]);
		const char *name = i < sizeof(stale) / sizeof(stale[0]) ? stale[i] :
				   job->series[k].samples_csv ? job->series[k].time_png : NULL;

		if (!name)
			continue;
		err = join(path, job->dir, name);
		if (!err && unlink(path) != 0 && errno != ENOENT)
			return outf_report(path, errno);
	}
	err = join(path, job->dir, PLOT_LOG);
	if (err)
		return outf_report(job->dir, err);
	err = outf_open(&o, path);
	if (err)
		return err;
	outf_printf(&o, "# output of the plot renderers, in the order gpunic tried them\n");
	return outf_close(&o);
}

int plot_render(const struct plot_job *job, enum plot_renderer *used)
{
	static const char *const default_pythons[] = { "python3", "/usr/bin/python3" };
	char path[PATH_MAX];
	char reasons[REASONS_MAX] = "";
	struct axes ax;
	int err;

	*used = PLOT_NONE;
	if (!job->dir || !job->series || job->nseries == 0)
		return EINVAL;
	for (size_t i = 0; i < job->nseries; i++)
		if (job->series[i].samples_csv && !job->series[i].time_png)
			return EINVAL;
	compute_axes(job, &ax);
	err = join(path, job->dir, PLOT_GNUPLOT_SCRIPT);
	if (err)
		return outf_report(job->dir, err);
	err = write_gnuplot(path, job, &ax);
	if (err)
		return err;
	err = join(path, job->dir, PLOT_PYTHON_SCRIPT);
	if (err)
		return outf_report(job->dir, err);
	err = write_python(path, job, &ax);
	if (err)
		return err;
	err = reset_outputs(job);
	if (err)
		return err;

	if (!job->gnuplot || job->gnuplot[0]) {
		if (try_renderer(job, job->gnuplot ? job->gnuplot : "gnuplot", PLOT_GNUPLOT_SCRIPT,
				 reasons)) {
			*used = PLOT_GNUPLOT;
			return 0;
		}
	}
	if (!job->python || job->python[0]) {
		size_t n = job->python ? 1 : sizeof(default_pythons) / sizeof(default_pythons[0]);

		for (size_t i = 0; i < n; i++) {
			const char *py = job->python ? job->python : default_pythons[i];

			if (try_renderer(job, py, PLOT_PYTHON_SCRIPT, reasons)) {
				*used = PLOT_PYTHON;
				return 0;
			}
		}
	}
	if (!reasons[0])
		snprintf(reasons, sizeof(reasons), "no renderer enabled");
	/* Diagnostics go to stderr: stdout carries tables and perftest lines that scripts parse. */
	fprintf(stderr, "gpunic: plots skipped: %s (log: %s/%s); scripts kept: %s/%s, %s/%s\n",
		reasons, job->dir, PLOT_LOG, job->dir, PLOT_GNUPLOT_SCRIPT, job->dir,
		PLOT_PYTHON_SCRIPT);
	return 0;
}

const char *plot_renderer_name(enum plot_renderer r)
{
	switch (r) {
	case PLOT_GNUPLOT:
		return "gnuplot";
	case PLOT_PYTHON:
		return "python3-matplotlib";
	case PLOT_NONE:
		break;
	}
	return "none";
}
