// SPDX-License-Identifier: MIT
/*
 * Report folder of the apps toolkit: folder creation, CSV rows, summary.json read back by an
 * independent parser (Python's json module), escaping, the side-by-side table, write errors.
 */
#include <errno.h>
#include <inttypes.h>

#include "apps_test.h"
#include "outfile.h"
#include "report.h"

/* floor: seq k took (k + 1) us; gpu: twice that, and 3 of its 1003 messages never came back. */
static void fill_series(struct stats_rec *floor, struct stats_rec *gpu)
{
	CHECK_EQ(stats_rec_init(floor, 1000), 0);
	CHECK_EQ(stats_rec_init(gpu, 1003), 0);
	for (uint64_t k = 0; k < 1000; k++) {
		CHECK_EQ(stats_rec_add(floor, k, (k + 1) * 1000, STATS_SAMPLE_VERIFIED), 0);
		CHECK_EQ(stats_rec_add(gpu, k, (k + 1) * 2000, STATS_SAMPLE_VERIFIED), 0);
	}
	CHECK_EQ(stats_rec_finish(floor, 1000), 0);
	CHECK_EQ(stats_rec_finish(gpu, 1003), 0);
}

static struct report *make_report(const char *dir)
{
	static char *argv[] = { "gpunic", "bench", "loopback", "--label", "a b" };
	struct report_meta meta = {
		.argc = 5, .argv = argv, .gpu_name = "NVIDIA H200", .link = "shm",
		.msg_bytes = 32, .interval_ns = 10000, .baseline = "floor",
	};
	struct stats_rec floor, gpu;
	struct report *r;

	fill_series(&floor, &gpu);
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_set_extra(r, "nic_mode", "GPU_DB"), 0);
	CHECK_EQ(report_add_series(r, "floor", &floor), 0);
	CHECK_EQ(report_add_series(r, "gpu", &gpu), 0);
	/* The report keeps its own copy: the recorders can go. */
	stats_rec_free(&floor);
	stats_rec_free(&gpu);
	return r;
}

static bool exists(const char *dir, const char *name)
{
	return access(tmp_path(dir, name), F_OK) == 0;
}

TEST(report_folder_created)
{
	const char *tmp = tmpdir_make();
	char dir[PATH_MAX];
	struct report *r;
	static const char *const files[] = { "summary.json", "floor.csv", "floor.hist.csv",
					     "floor.ccdf.csv", "gpu.csv", "gpu.hist.csv",
					     "gpu.ccdf.csv" };

	/* Parents that do not exist yet are created, like mkdir -p. */
	path_join(dir, tmp, "runs/2025/loopback");
	r = make_report(dir);
	CHECK(strcmp(report_dir(r), dir) == 0);
	CHECK_EQ(report_write(r), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!exists(dir, files[i]))
			harness_fail(__FILE__, __LINE__, "%s/%s missing", dir, files[i]);
	report_close(r);

	/* An existing folder is fine too. */
	r = make_report(dir);
	CHECK_EQ(report_write(r), 0);
	report_close(r);
}

TEST(report_csv_rows)
{
	const char *dir = tmpdir_make();
	struct report_meta meta = { .link = "shm" };
	struct stats_rec rec;
	struct report *r;
	char *text;

	CHECK_EQ(stats_rec_init(&rec, 8), 0);
	CHECK_EQ(stats_rec_add(&rec, 0, 1500, 0), 0);
	CHECK_EQ(stats_rec_add(&rec, 2, 1700, 0), 0);
	CHECK_EQ(stats_rec_add(&rec, 1, 1600, 0), 0);
	CHECK_EQ(stats_rec_add(&rec, 3, 99999, STATS_SAMPLE_CORRUPT), 0);
	CHECK_EQ(stats_rec_finish(&rec, 5), 0);
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_add_series(r, "cpu exec/2", &rec), 0);
	stats_rec_free(&rec);
	CHECK_EQ(report_write(r), 0);

	/* Arrival order, valid samples only; the label became a safe file name. */
	text = slurp(tmp_path(dir, "cpu_exec_2.csv"));
	CHECK(text);
	CHECK(strcmp(text, "seq,latency_ns\n0,1500\n2,1700\n1,1600\n") == 0);
	free(text);

	text = slurp(tmp_path(dir, "cpu_exec_2.ccdf.csv"));
	CHECK(text);
	CHECK(strcmp(text, "latency_ns,fraction_ge\n"
			   "1500,1\n1600,0.666666667\n1700,0.333333333\n") == 0);
	free(text);

	text = slurp(tmp_path(dir, "cpu_exec_2.hist.csv"));
	CHECK(text);
	CHECK(strncmp(text, "lo_ns,hi_ns,count\n1500,", 23) == 0);
	free(text);
	report_close(r);
}

#define MAX_ROWS 4096

struct rows {
	size_t n;
	uint64_t a[MAX_ROWS];
	uint64_t b[MAX_ROWS];
	double c[MAX_ROWS];
};

/* Rows of a numeric CSV of two or three columns, header skipped. */
static void read_rows(const char *path, bool three, struct rows *out)
{
	char *text = slurp(path), *line, *save = NULL;
	uint64_t b;

	CHECK(text);
	out->n = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		bool ok;

		if (line == text)
			continue;
		CHECK(out->n < MAX_ROWS);
		if (three) {
			ok = sscanf(line, "%" SCNu64 ",%" SCNu64 ",%" SCNu64, &out->a[out->n],
				    &out->b[out->n], &b) == 3;
			out->c[out->n] = (double)b;
		} else {
			ok = sscanf(line, "%" SCNu64 ",%lf", &out->a[out->n], &out->c[out->n]) == 2;
		}
		CHECK(ok);
		out->n++;
	}
	free(text);
}

TEST(report_hist_and_ccdf_shapes)
{
	const char *dir = tmpdir_make();
	struct report_meta meta = { 0 };
	static struct rows ha, hb, cc;
	struct stats_rec a, b;
	struct report *r;
	double total = 0;

	/* 20000 samples with a long tail: a 1 us body, every 100th sample 1000x slower. */
	CHECK_EQ(stats_rec_init(&a, 20000), 0);
	CHECK_EQ(stats_rec_init(&b, 20000), 0);
	for (uint64_t k = 0; k < 20000; k++) {
		CHECK_EQ(stats_rec_add(&a, k, k % 100 ? 1000 + k % 50 : 1000000 + k, 0), 0);
		CHECK_EQ(stats_rec_add(&b, k, 2000 + k % 7, 0), 0);
	}
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_add_series(r, "a", &a), 0);
	CHECK_EQ(report_add_series(r, "b", &b), 0);
	CHECK_EQ(report_write(r), 0);

	/* Both histograms have the same bins, and every sample is in one of them. */
	read_rows(tmp_path(dir, "a.hist.csv"), true, &ha);
	read_rows(tmp_path(dir, "b.hist.csv"), true, &hb);
	CHECK(ha.n > 10 && ha.n <= 100);
	CHECK_EQ(ha.n, hb.n);
	CHECK_EQ(ha.a[0], 1000);
	CHECK(ha.b[ha.n - 1] > 1019900);
	for (size_t i = 0; i < ha.n; i++) {
		CHECK_EQ(ha.a[i], hb.a[i]);
		CHECK_EQ(ha.b[i], hb.b[i]);
		CHECK(ha.b[i] > ha.a[i]);
		CHECK(i == 0 || ha.a[i] == ha.b[i - 1]);
		total += ha.c[i];
	}
	CHECK(total == 20000.0);

	/* The tail curve: fractions fall from 1 to 1/n while latencies rise; few rows. */
	read_rows(tmp_path(dir, "a.ccdf.csv"), false, &cc);
	CHECK(cc.n > 200 && cc.n < 1000);
	CHECK(cc.c[0] == 1.0);
	for (size_t i = 1; i < cc.n; i++) {
		CHECK(cc.a[i] > cc.a[i - 1]);
		CHECK(cc.c[i] < cc.c[i - 1]);
	}
	CHECK_EQ(cc.a[cc.n - 1], 1000000 + 19900);
	CHECK(cc.c[cc.n - 1] > 0.9999 / 20000 && cc.c[cc.n - 1] < 1.0001 / 20000);
	stats_rec_free(&a);
	stats_rec_free(&b);
	report_close(r);
}

/* Checks run by Python on summary.json: an independent parser, and the expected numbers. */
static const char json_checks[] =
	"import json, sys\n"
	"d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"m = d['meta']\n"
	"assert d['schema'] == 'gpunic-report-1', d['schema']\n"
	"assert m['argv'] == ['gpunic', 'bench', 'loopback', '--label', 'a b'], m['argv']\n"
	"assert m['command'] == \"gpunic bench loopback --label 'a b'\", m['command']\n"
	"assert m['message_bytes'] == 32 and m['interval_ns'] == 10000\n"
	"assert m['gpu'] == 'NVIDIA H200' and m['link'] == 'shm', m\n"
	"assert m['baseline'] == 'floor', m['baseline']\n"
	"assert m['clock'] in ('CLOCK_MONOTONIC_RAW', 'CLOCK_MONOTONIC'), m['clock']\n"
	"assert m['clock_cost_ns'] >= 0\n"
	"assert m['hostname'] and m['cpu_model'] and m['cpus_allowed'], m\n"
	"assert m['kernel'].startswith('Linux '), m['kernel']\n"
	"assert len(m['date']) == 20 and m['date'].endswith('Z'), m['date']\n"
	"assert m['extra'] == {'nic_mode': 'GPU_DB'}, m['extra']\n"
	"assert [x['label'] for x in d['series']] == ['floor', 'gpu']\n"
	"f, g = d['series']\n"
	"assert f['count'] == 1000 and g['count'] == 1000\n"
	"ns = dict(f['ns']); sd = ns.pop('stdev')\n"
	"assert ns == {'min': 1000, 'p50': 500000, 'p90': 900000, 'p99': 990000,\n"
	"              'p999': 999000, 'max': 1000000, 'mean': 500500.0}, ns\n"
	"assert abs(sd - 288674.990) < 0.01, sd\n"
	"assert f['us']['min'] == 1.0 and f['us']['p99'] == 990.0, f['us']\n"
	"assert f['us']['p999'] == 999.0 and f['us']['mean'] == 500.5, f['us']\n"
	"assert abs(f['us']['stdev'] - 288.674990) < 1e-5, f['us']\n"
	"assert g['ns']['p99'] == 1980000 and g['us']['max'] == 2000.0, g\n"
	"assert f['loss'] == {'sent': 1000, 'received': 1000, 'lost': 0, 'dup': 0,\n"
	"                     'reorder': 0, 'corrupt': 0}, f['loss']\n"
	"assert g['loss'] == {'sent': 1003, 'received': 1000, 'lost': 3, 'dup': 0,\n"
	"                     'reorder': 0, 'corrupt': 0}, g['loss']\n"
	"r = g['ratio_to_baseline']\n"
	"assert sorted(r) == sorted(['min', 'p50', 'p90', 'p99', 'p999', 'max', 'mean']), r\n"
	"assert all(abs(v - 2.0) < 1e-9 for v in r.values()), r\n"
	"assert all(v == 1.0 for v in f['ratio_to_baseline'].values())\n"
	"assert f['files'] == {'samples': 'floor.csv', 'hist': 'floor.hist.csv',\n"
	"                      'ccdf': 'floor.ccdf.csv'}, f['files']\n";

TEST(report_json_parsed_by_python)
{
	const char *dir;
	struct report *r;

	if (access(SYSTEM_PYTHON, X_OK) != 0)
		SKIP("%s not installed", SYSTEM_PYTHON);
	dir = tmpdir_make();
	r = make_report(dir);
	CHECK_EQ(report_write(r), 0);
	report_close(r);
	CHECK_EQ(run_python(json_checks, tmp_path(dir, REPORT_SUMMARY_JSON)), 0);
}

static const char escape_checks[] =
	"import json, sys\n"
	"d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"m = d['meta']\n"
	"want = 'q\"uote b\\\\ack nl\\n tab\\t bell\\x07 mu\\u00b5 bad\\ufffd end'\n"
	"assert m['argv'][1] == want, repr(m['argv'][1])\n"
	"assert d['series'][0]['label'] == want, repr(d['series'][0]['label'])\n"
	"assert m['extra'] == {want: want}, m['extra']\n"
	"assert m['gpu'] is None and m['link'] is None and m['baseline'] is None, m\n"
	"assert m['command'].startswith(\"prog 'q\"), m['command']\n"
	"s = d['series'][0]\n"
	"assert s['ratio_to_baseline'] is None\n"
	"assert s['files']['samples'] == 'q_uote_b_ack_nl__tab__bell__mu___bad__end.csv', s\n";

TEST(report_json_escaping)
{
	/* Quote, backslash, newline, tab, a control byte, UTF-8 mu, and a stray 0xff byte. */
	static char weird[] = "q\"uote b\\ack nl\n tab\t bell\a mu\xc2\xb5 bad\xff end";
	char *argv[] = { "prog", weird };
	struct report_meta meta = { .argc = 2, .argv = argv };
	struct stats_rec rec;
	struct report *r;
	const char *dir;

	if (access(SYSTEM_PYTHON, X_OK) != 0)
		SKIP("%s not installed", SYSTEM_PYTHON);
	dir = tmpdir_make();
	CHECK_EQ(stats_rec_init(&rec, 2), 0);
	CHECK_EQ(stats_rec_add(&rec, 0, 100, 0), 0);
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_set_extra(r, weird, weird), 0);
	CHECK_EQ(report_add_series(r, weird, &rec), 0);
	CHECK_EQ(report_write(r), 0);
	report_close(r);
	stats_rec_free(&rec);
	CHECK_EQ(run_python(escape_checks, tmp_path(dir, REPORT_SUMMARY_JSON)), 0);
}

/* The line of @table whose first word is @row. */
static const char *table_row(const char *table, const char *row)
{
	size_t len = strlen(row);

	for (const char *p = table; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, row, len) == 0 && p[len] == ' ')
			return p;
	return NULL;
}

static bool row_has(const char *table, const char *row, const char *a, const char *b)
{
	const char *line = table_row(table, row);
	const char *end = line ? strchr(line, '\n') : NULL;
	const char *pa = line ? strstr(line, a) : NULL;
	const char *pb = pa ? strstr(pa + strlen(a), b) : NULL;

	return pa && pb && end && pb < end;
}

TEST(report_side_by_side_table)
{
	const char *dir = tmpdir_make();
	struct report *r = make_report(dir);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f);
	CHECK_EQ(report_print_table(r, f), 0);
	CHECK_EQ(fclose(f), 0);
	fputs(text, stdout);
	CHECK(row_has(text, "[us]", "floor", "gpu"));
	CHECK(row_has(text, "samples", "1000", "1000"));
	CHECK(row_has(text, "min", "1.000", "2.000"));
	CHECK(row_has(text, "p50", "500.000", "1000.000"));
	CHECK(row_has(text, "p90", "900.000", "1800.000"));
	CHECK(row_has(text, "p99", "990.000", "1980.000"));
	CHECK(row_has(text, "p99.9", "999.000", "1998.000"));
	CHECK(row_has(text, "max", "1000.000", "2000.000"));
	CHECK(row_has(text, "mean", "500.500", "1001.000"));
	CHECK(row_has(text, "loss", "0 (0%)", "3 (0.299%)"));
	CHECK(row_has(text, "p50/floor", "1.00x", "2.00x"));
	CHECK(row_has(text, "p99/floor", "1.00x", "2.00x"));
	/* Columns line up: every row has the same length. */
	for (char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1)
		CHECK_EQ(nl - p, strchr(text, '\n') - text);
	CHECK(report_series_summary(r, "gpu")->p50_ns == 1000000);
	CHECK(report_series_summary(r, "nope") == NULL);
	free(text);
	report_close(r);
}

TEST(report_errors)
{
	const char *dir = tmpdir_make();
	struct report_meta meta = { .baseline = "missing" };
	struct stats_rec rec;
	struct report *r;
	char path[PATH_MAX];
	FILE *f;

	/* A folder below a regular file cannot exist. */
	path_join(path, dir, "plainfile");
	f = fopen(path, "w");
	CHECK(f);
	fclose(f);
	path_join(path, dir, "plainfile/sub");
	CHECK_EQ(report_open(&r, path, &meta), ENOTDIR);
	CHECK(r == NULL);
	path_join(path, dir, "plainfile");
	CHECK_EQ(report_open(&r, path, &meta), ENOTDIR);

	CHECK_EQ(stats_rec_init(&rec, 2), 0);
	CHECK_EQ(stats_rec_add(&rec, 0, 10, 0), 0);
	CHECK_EQ(report_open(&r, dir, &meta), 0);
	CHECK_EQ(report_add_series(r, "", &rec), EINVAL);
	CHECK_EQ(report_add_series(r, "a b", &rec), 0);
	CHECK_EQ(report_add_series(r, "a/b", &rec), EEXIST);	/* both would be a_b.csv */
	CHECK_EQ(report_set_extra(r, "", "x"), EINVAL);
	/* A baseline that was never added: the report is still written, without ratios. */
	CHECK_EQ(report_write(r), 0);
	report_close(r);
	stats_rec_free(&rec);
}

TEST(report_write_errors_are_reported)
{
	struct outf o;

	/* /dev/full accepts the open and fails every write with ENOSPC. */
	if (access("/dev/full", W_OK) != 0)
		SKIP("no /dev/full");
	CHECK_EQ(outf_open(&o, "/dev/full"), 0);
	for (int i = 0; i < 20000; i++)
		outf_printf(&o, "%d,%d\n", i, i);
	CHECK_EQ(outf_close(&o), ENOSPC);
	CHECK_EQ(outf_open(&o, "/nonexistent-dir/x.csv"), ENOENT);
}
