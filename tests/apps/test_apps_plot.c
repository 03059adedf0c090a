// SPDX-License-Identifier: MIT
/*
 * Plots of the apps toolkit: gnuplot when present, the matplotlib fallback when present, and
 * a run that goes on (scripts kept, one line saying why) when neither renderer works.
 */
#include <errno.h>
#include <fcntl.h>

#include "apps_test.h"
#include "report.h"

static const unsigned char png_magic[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

static bool is_png(const char *path)
{
	unsigned char head[8];
	FILE *f = fopen(path, "rb");
	bool ok;

	if (!f)
		return false;
	ok = fread(head, 1, sizeof(head), f) == sizeof(head) &&
	     memcmp(head, png_magic, sizeof(head)) == 0;
	fclose(f);
	return ok;
}

/* Two series, one with a long tail so the x-axis spans decades. */
static struct report *make_report(const char *dir, const char *label_b, bool wide)
{
	struct report_meta meta = { .gpu_name = "Test GPU", .link = "shm", .msg_bytes = 32,
				    .baseline = "floor" };
	struct stats_rec a, b;
	struct report *r;

	CHECK_EQ(stats_rec_init(&a, 5000), 0);
	CHECK_EQ(stats_rec_init(&b, 5000), 0);
	for (uint64_t k = 0; k < 5000; k++) {
		CHECK_EQ(stats_rec_add(&a, k, 800 + k % 40, 0), 0);
		CHECK_EQ(stats_rec_add(&b, k, wide && k % 500 == 0 ? 50000 + k : 2000 + k % 300, 0),
			 0);
	}
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_add_series(r, "floor", &a), 0);
	CHECK_EQ(report_add_series(r, label_b, &b), 0);
	stats_rec_free(&a);
	stats_rec_free(&b);
	CHECK_EQ(report_write(r), 0);
	return r;
}

/* A Python with matplotlib, the way plot.c looks for one; NULL if there is none. */
static const char *python_with_matplotlib(void)
{
	static const char *const candidates[] = { "python3", SYSTEM_PYTHON };

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		char *argv[] = { (char *)candidates[i], "-c", "import matplotlib", NULL };
		int devnull = open("/dev/null", O_WRONLY), saved = dup(STDERR_FILENO);
		int rc;

		/* An ImportError traceback here is expected noise: hide it. */
		dup2(devnull, STDERR_FILENO);
		rc = run_prog(argv);
		dup2(saved, STDERR_FILENO);
		close(devnull);
		close(saved);
		if (rc == 0)
			return candidates[i];
	}
	return NULL;
}

TEST(plot_gnuplot_renders)
{
	const char *dir;
	enum plot_renderer used;
	struct report *r;
	char *gp;

	if (!have_prog("gnuplot"))
		SKIP("gnuplot not installed");
	dir = tmpdir_make();
	/* A quote in a label must survive gnuplot's string syntax. */
	r = make_report(dir, "gpu 'loop'", true);
	CHECK_EQ(report_plot(r, NULL, "", &used), 0);
	CHECK_EQ(used, PLOT_GNUPLOT);
	CHECK(strcmp(plot_renderer_name(used), "gnuplot") == 0);
	CHECK(is_png(tmp_path(dir, PLOT_HIST_PNG)));
	CHECK(is_png(tmp_path(dir, PLOT_CCDF_PNG)));
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	CHECK(gp);
	CHECK(strstr(gp, "'gpu ''loop'''"));
	CHECK(strstr(gp, "gpu__loop_.ccdf.csv"));
	CHECK(strstr(gp, "Test GPU"));
	CHECK(strstr(gp, "\nset logscale x"));	/* 0.8 to 55 us: more than a decade */
	free(gp);
	/* Both scripts stay for re-rendering by hand. */
	CHECK(access(tmp_path(dir, PLOT_PYTHON_SCRIPT), R_OK) == 0);
	report_close(r);
}

TEST(plot_gnuplot_linear_axis)
{
	const char *dir;
	enum plot_renderer used;
	struct report *r;
	char *gp;

	if (!have_prog("gnuplot"))
		SKIP("gnuplot not installed");
	dir = tmpdir_make();
	r = make_report(dir, "gpu", false);
	CHECK_EQ(report_plot(r, NULL, "", &used), 0);
	CHECK_EQ(used, PLOT_GNUPLOT);
	CHECK(is_png(tmp_path(dir, PLOT_CCDF_PNG)));
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	CHECK(gp && strstr(gp, "\nunset logscale x"));
	free(gp);
	report_close(r);
}

TEST(plot_python_fallback_renders)
{
	const char *python = python_with_matplotlib();
	const char *dir;
	enum plot_renderer used;
	struct report *r;

	if (!python)
		SKIP("no python3 with matplotlib");
	dir = tmpdir_make();
	r = make_report(dir, "gpu \"loop\"", true);
	/* No gnuplot (as on the GPU machine): the fallback draws the same two plots. */
	CHECK_EQ(report_plot(r, "", NULL, &used), 0);
	CHECK_EQ(used, PLOT_PYTHON);
	CHECK(is_png(tmp_path(dir, PLOT_HIST_PNG)));
	CHECK(is_png(tmp_path(dir, PLOT_CCDF_PNG)));
	report_close(r);
}

TEST(plot_skipped_when_no_renderer)
{
	const char *dir = tmpdir_make();
	char errpath[PATH_MAX], *msg, *gp, *py;
	enum plot_renderer used = PLOT_GNUPLOT;
	struct report *r = make_report(dir, "gpu", true);
	int saved = dup(STDERR_FILENO), fd;

	/* Catch stderr, where the one "plots skipped" line goes. */
	path_join(errpath, dir, "stderr.txt");
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && saved >= 0);
	dup2(fd, STDERR_FILENO);
	CHECK_EQ(report_plot(r, "/nonexistent/gnuplot", "/nonexistent/python3", &used), 0);
	dup2(saved, STDERR_FILENO);
	close(fd);
	close(saved);

	CHECK_EQ(used, PLOT_NONE);
	CHECK(strcmp(plot_renderer_name(used), "none") == 0);
	msg = slurp(errpath);
	CHECK(msg);
	fputs(msg, stdout);
	CHECK(strstr(msg, "plots skipped"));
	CHECK(strstr(msg, "/nonexistent/gnuplot not found"));
	CHECK(strstr(msg, "/nonexistent/python3 not found"));
	CHECK_EQ(strchr(msg, '\n') - msg + 1, (long)strlen(msg));	/* exactly one line */
	free(msg);
	CHECK(access(tmp_path(dir, PLOT_HIST_PNG), F_OK) != 0);
	gp = slurp(tmp_path(dir, PLOT_GNUPLOT_SCRIPT));
	py = slurp(tmp_path(dir, PLOT_PYTHON_SCRIPT));
	CHECK(gp && strstr(gp, "'floor.hist.csv'") && strstr(gp, "'gpu.ccdf.csv'"));
	CHECK(py && strstr(py, "\"floor.hist.csv\"") && strstr(py, "\"gpu.ccdf.csv\""));
	free(gp);
	free(py);
	report_close(r);
}

TEST(plot_failing_renderer_is_reported)
{
	const char *dir = tmpdir_make();
	enum plot_renderer used;
	struct report *r = make_report(dir, "gpu", false);
	char *log;

	/* A renderer that runs but fails: "false" exits 1 without drawing anything. */
	CHECK_EQ(report_plot(r, "false", "", &used), 0);
	CHECK_EQ(used, PLOT_NONE);
	log = slurp(tmp_path(dir, PLOT_LOG));
	CHECK(log);
	free(log);
	report_close(r);
}

TEST(plot_job_invalid)
{
	struct plot_job job = { .dir = "/tmp" };
	enum plot_renderer used = PLOT_GNUPLOT;

	CHECK_EQ(plot_render(&job, &used), EINVAL);
	CHECK_EQ(used, PLOT_NONE);
}
