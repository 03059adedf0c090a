// SPDX-License-Identifier: MIT
/*
 * What a report tells about its run: typed meta.extra values with the version and commit, an
 * HdrHistogram .hgrm per series, plot titles with the run's parameters, x ticks whose labels
 * cannot collide, percentile markers on the tail plot and a latency-over-time plot per series.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>

#include "apps_test.h"
#include "report.h"

#define HGRM_HEADER "       Value     Percentile TotalCount 1/(1-Percentile)\n\n"
#define PARAMS "32 B write-imm, link shm, 1000 messages every 10 us"

/* "fast": seq k took (k + 1) us, 1000 samples; "slow": 100 samples of 1..100 ms. */
static struct report *make_report(const char *dir)
{
	static char *argv[] = { "gpunic", "bench", "loopback" };
	struct report_meta meta = {
		.argc = 3, .argv = argv, .gpu_name = "Test GPU", .link = "shm",
		.msg_bytes = 32, .interval_ns = 10000, .params = PARAMS,
	};
	struct stats_rec fast, slow;
	struct report *r;

	CHECK_EQ(stats_rec_init(&fast, 1000), 0);
	CHECK_EQ(stats_rec_init(&slow, 100), 0);
	for (uint64_t k = 0; k < 1000; k++)
		CHECK_EQ(stats_rec_add(&fast, k, (k + 1) * 1000, STATS_SAMPLE_VERIFIED), 0);
	for (uint64_t k = 0; k < 100; k++)
		CHECK_EQ(stats_rec_add(&slow, k, (k + 1) * 1000000, STATS_SAMPLE_VERIFIED), 0);
	CHECK_EQ(stats_rec_finish(&fast, 1000), 0);
	CHECK_EQ(stats_rec_finish(&slow, 100), 0);
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_add_series(r, "fast", &fast), 0);
	CHECK_EQ(report_add_series(r, "slow", &slow), 0);
	stats_rec_free(&fast);
	stats_rec_free(&slow);
	return r;
}

static const char typed_checks[] =
	"import json, sys\n"
	"m = json.load(open(sys.argv[1]))['meta']\n"
	"x = m['extra']\n"
	"assert x['count'] == 20000 and type(x['count']) is int, x\n"
	"assert x['ratio'] == 1.25 and type(x['ratio']) is float, x\n"
	"assert x['whole'] == 36000 and type(x['whole']) is float, x\n"
	"assert x['large'] == 1.70095e6 and type(x['large']) is float, x\n"
	"assert x['closed_loop'] is False and x['all_verified'] is True, x\n"
	"assert x['unmeasured'] is None, x\n"
	"assert x['mode'] == 'write-imm', x\n"
	"assert isinstance(m['version'], str) and m['version'], m\n"
	"assert isinstance(m['commit'], str) and m['commit'], m\n";

TEST(report_extra_typed)
{
	const char *dir;
	struct report *r;

	if (access(SYSTEM_PYTHON, X_OK) != 0)
		SKIP("%s not installed", SYSTEM_PYTHON);
	dir = tmpdir_make();
	r = make_report(dir);
	CHECK_EQ(report_set_extra_u64(r, "count", 20000), 0);
	CHECK_EQ(report_set_extra_num(r, "ratio", 1.25), 0);
	/* a ratio that comes out whole (a loaded machine's) stays a real number */
	CHECK_EQ(report_set_extra_num(r, "whole", 36000), 0);
	CHECK_EQ(report_set_extra_num(r, "large", 1700950), 0);
	CHECK_EQ(report_set_extra_bool(r, "closed_loop", false), 0);
	CHECK_EQ(report_set_extra_bool(r, "all_verified", true), 0);
	CHECK_EQ(report_set_extra_num(r, "unmeasured", NAN), 0);
	CHECK_EQ(report_set_extra(r, "mode", "write-imm"), 0);
	CHECK_EQ(report_set_extra_u64(r, "", 1), EINVAL);
	CHECK_EQ(report_write(r), 0);
	report_close(r);
	CHECK_EQ(run_python(typed_checks, tmp_path(dir, REPORT_SUMMARY_JSON)), 0);
}

struct hgrm_row {
	double value, pct, inv;
	unsigned long count;
	int cols;
};

/* The data rows of an .hgrm file; the header and footer are checked by the caller. */
static size_t hgrm_rows(char *text, struct hgrm_row *rows, size_t max)
{
	size_t n = 0;

	for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n")) {
		struct hgrm_row *r = &rows[n];

		if (line[0] == '#' || strstr(line, "Value"))
			continue;
		r->cols = sscanf(line, "%lf %lf %lu %lf", &r->value, &r->pct, &r->count, &r->inv);
		CHECK(r->cols >= 3);
		n++;
	}
	return n;
}

TEST(report_hgrm_percentile_distribution)
{
	static struct hgrm_row rows[512];
	const char *dir = tmpdir_make();
	struct report *r = make_report(dir);
	char *text, *copy;
	size_t n;

	CHECK_EQ(report_write(r), 0);
	report_close(r);
	text = slurp(tmp_path(dir, "fast.hgrm"));
	CHECK(text != NULL);
	/* HdrHistogram's header: four right-aligned column names, then an empty line */
	CHECK(strncmp(text, HGRM_HEADER, strlen(HGRM_HEADER)) == 0);
	CHECK(strstr(text, "#[Mean    =      500.500, StdDeviation   =      288.675]\n"));
	CHECK(strstr(text, "#[Max     =     1000.000, Total count    =         1000]\n"));
	copy = strdup(text);
	n = hgrm_rows(copy, rows, 512);
	CHECK(n > 20);
	/* the first row is the minimum at percentile 0, the last the maximum at 1, alone */
	CHECK(rows[0].value == 1.0 && rows[0].pct == 0.0 && rows[0].count == 1);
	CHECK(rows[0].cols == 4 && rows[0].inv == 1.0);
	CHECK(rows[n - 1].value == 1000.0 && rows[n - 1].pct == 1.0 && rows[n - 1].count == 1000);
	CHECK_EQ(rows[n - 1].cols, 3);
	for (size_t i = 1; i < n; i++) {
		CHECK(rows[i].pct > rows[i - 1].pct);
		CHECK(rows[i].value >= rows[i - 1].value);
		CHECK(rows[i].count >= rows[i - 1].count);
		/* nearest rank on exact samples: value k us is the k-th sample */
		CHECK_EQ((unsigned long)rows[i].value, rows[i].count);
		if (rows[i].cols == 4)
			CHECK(fabs(rows[i].inv - 1 / (1 - rows[i].pct)) < 0.01);
	}
	/* the median row: 50% of 1000 samples is the 500th, 500 us */
	for (size_t i = 0; i < n; i++)
		if (rows[i].pct == 0.5)
			CHECK(rows[i].value == 500.0 && rows[i].count == 500);
	free(copy);
	free(text);
	CHECK(access(tmp_path(dir, "slow.hgrm"), R_OK) == 0);
}

TEST(plot_titles_carry_run_parameters)
{
	const char *dir = tmpdir_make();
	struct report *r = make_report(dir);
	enum plot_renderer used;
	char *gp, *py;

	/* no renderer: the scripts are written all the same */
	CHECK_EQ(report_plot(r, "", "", &used), 0);
	CHECK_EQ(used, PLOT_NONE);
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	py = slurp(tmp_path(dir, PLOT_PYTHON_SCRIPT));
	CHECK(gp && py);
	/* the run's parameters, its UTC date and both processors, on every plot */
	CHECK(strstr(gp, "set title 'Latency histogram'.\"\\n\".'" PARAMS ", 20"));
	CHECK(strstr(gp, " UTC - "));
	CHECK(strstr(gp, ", Test GPU'\n"));
	CHECK(strstr(py, "PARAMS = \"" PARAMS ", 20"));
	CHECK(strstr(py, "Test GPU"));
	free(gp);
	free(py);
	report_close(r);
}

TEST(plot_log_tics_never_collide)
{
	double tic[32];
	char a[32], b[32];
	int n;

	/* 1 us to 200 ms, the range of a run with one long stall: one tick per decade */
	n = plot_log_tics(0.8, 250000, tic, 32);
	CHECK_EQ(n, 6);
	for (int i = 1; i < n; i++)
		CHECK(tic[i] / tic[i - 1] >= 9.99);
	/* labels say their unit once the axis reaches a millisecond */
	plot_tic_label(100000, true, a, sizeof(a));
	plot_tic_label(10, true, b, sizeof(b));
	CHECK(strcmp(a, "100 ms") == 0 && strcmp(b, "10 us") == 0);
	plot_tic_label(2e6, true, a, sizeof(a));
	CHECK(strcmp(a, "2 s") == 0);
	/* a narrow axis keeps its 1-2-5 steps */
	n = plot_log_tics(1.5, 60, tic, 32);
	CHECK_EQ(n, 5);
	CHECK(tic[0] == 2 && tic[1] == 5 && tic[2] == 10 && tic[3] == 20 && tic[4] == 50);
	plot_tic_label(5, false, a, sizeof(a));
	CHECK(strcmp(a, "5") == 0);
}

TEST(plot_tail_percentile_markers)
{
	const char *dir = tmpdir_make();
	struct report *r = make_report(dir);
	enum plot_renderer used;
	char *gp, *py;

	CHECK_EQ(report_plot(r, "", "", &used), 0);
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	py = slurp(tmp_path(dir, PLOT_PYTHON_SCRIPT));
	CHECK(gp && py);
	/* fast: p50 500 us at 0.5, p99 990 us at 0.01, p99.9 999 us at 0.001 */
	CHECK(strstr(gp, "'p50 500 us' at 500,0.5 "));
	CHECK(strstr(gp, "'p99 990 us' at 990,0.01 "));
	CHECK(strstr(gp, "'p99.9 999 us' at 999,0.001 "));
	/* slow has 100 samples: no p99.9 to mark; its p99 sits near the right edge, so its
	 * label goes to the left of the point */
	CHECK(strstr(gp, "'p99 99 ms' at 99000,0.01 right"));
	/* the second series' labels go below their points, the first's above */
	CHECK(strstr(gp, "lc 1 offset 0.8,0.6 front"));
	CHECK(strstr(gp, "lc 2 offset -0.8,-0.9 front"));
	CHECK(strstr(gp, "'p99.9 100 ms'") == NULL);
	CHECK(strstr(py, "('p50 500 us', 500, 0.5, False)"));
	/* plot.py must at least be Python where matplotlib is missing */
	if (access(SYSTEM_PYTHON, X_OK) == 0)
		CHECK_EQ(run_python("import ast, sys; ast.parse(open(sys.argv[1]).read())",
				    tmp_path(dir, PLOT_PYTHON_SCRIPT)), 0);
	free(gp);
	free(py);
	report_close(r);
}

/* Many series (the bench's nine on a GPU machine): the values leave the curves for the legend,
 * where they cannot run into each other; the markers stay. */
TEST(plot_tail_many_series_values_in_legend)
{
	const char *dir = tmpdir_make();
	struct report *r = make_report(dir);
	const char *extra[] = { "third", "fourth" };
	enum plot_renderer used;
	struct stats_rec s;
	char *gp, *py;

	for (size_t i = 0; i < 2; i++) {
		CHECK_EQ(stats_rec_init(&s, 1000), 0);
		for (uint64_t k = 0; k < 1000; k++)
			CHECK_EQ(stats_rec_add(&s, k, (k + 1) * 2000, STATS_SAMPLE_VERIFIED), 0);
		CHECK_EQ(stats_rec_finish(&s, 1000), 0);
		CHECK_EQ(report_add_series(r, extra[i], &s), 0);
		stats_rec_free(&s);
	}
	CHECK_EQ(report_plot(r, "", "", &used), 0);
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	py = slurp(tmp_path(dir, PLOT_PYTHON_SCRIPT));
	CHECK(gp && py);
	CHECK(strstr(gp, "'p50 500 us' at") == NULL);
	CHECK(strstr(gp, "'' at 500,0.5 left point pt 7"));
	CHECK(strstr(gp, "title 'fast: p50 500 us, p99 990 us, p99.9 999 us'"));
	CHECK(strstr(py, "if len(SERIES) > 3:"));
	free(gp);
	free(py);
	report_close(r);
}

TEST(plot_latency_over_time_per_series)
{
	const char *dir;
	struct report *r;
	enum plot_renderer used;
	char *gp;

	if (!have_prog("gnuplot"))
		SKIP("gnuplot not installed");
	dir = tmpdir_make();
	r = make_report(dir);
	CHECK_EQ(report_plot(r, NULL, "", &used), 0);
	CHECK_EQ(used, PLOT_GNUPLOT);
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	CHECK(gp && strstr(gp, "'fast.csv' using 1:($2/1000.0)"));
	free(gp);
	{
		const char *names[] = { "fast.time.png", "slow.time.png" };

		for (int i = 0; i < 2; i++) {
			char *png = slurp(tmp_path(dir, names[i]));

			CHECK(png && memcmp(png, "\x89PNG", 4) == 0);
			free(png);
		}
	}
	report_close(r);
}
