// SPDX-License-Identifier: MIT
/*
 * Report folder: summary.json, per-series CSVs, the side-by-side table, plots (see report.h).
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/version.h"
#include "outfile.h"
#include "timing.h"

#define HIST_BINS_MAX 100	/* log-spaced over the whole range: ~3% per bin for 2-50 us */
#define CCDF_EXACT_TAIL 1000	/* the last samples are the tail: keep every one */
#define CCDF_STEP 1.02		/* below that, a point each time the fraction drops 2% */
#define INFO_LEN 256
#define HGRM_TICKS_PER_HALF 5	/* HdrHistogram's default reporting resolution */

struct series {
	char *label;
	char *file;		/* label made safe for a file name */
	uint64_t *seq;		/* [n] valid samples, arrival order */
	uint64_t *lat_ns;	/* [n] */
	uint64_t *sorted;	/* [n] the same latencies, ascending */
	size_t n;
	struct stats_summary sum;
};

struct extra {
	char *key;
	char *value;	/* a string's text, or a JSON number or boolean literal */
	bool literal;	/* value goes out as it is, not as a string */
};

struct report {
	char *dir;
	char *command;
	char **argv;
	int argc;
	char *gpu;
	char *link;
	char *baseline;
	char *params;
	uint64_t msg_bytes;
	uint64_t interval_ns;
	char date[32];
	char hostname[INFO_LEN];
	char cpu_model[INFO_LEN];
	char kernel[INFO_LEN];
	char kernel_build[INFO_LEN];
	char machine[INFO_LEN];
	char cpus[INFO_LEN];
	struct series *series;
	size_t nseries;
	struct extra *extra;
	size_t nextra;
	bool written;
};

/* strdup that keeps NULL as NULL; *err is set to ENOMEM when a real copy fails. */
static char *dup_or_null(const char *s, int *err)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*err = ENOMEM;
	return d;
}

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len = strlen(dir);

	if (len == 0)
		return EINVAL;
	if (len >= sizeof(path))
		return ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	/* Each parent in turn; one that exists already (as anything) is checked at the end. */
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return errno;
		*p = '/';
	}
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return errno;
	if (stat(path, &st) != 0)
		return errno;
	return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* Letters, digits and "._-": safe in a file name and in a shell word. Not locale-dependent. */
static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* Characters a shell leaves alone, so "gpunic bench loopback -n 1000" needs no quotes. */
static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!name_char(*s) && !strchr("@%+=:,/", *s))
			return false;
	return true;
}

/* The command line as one string a user can paste back into a shell. */
static char *quote_argv(int argc, char *const *argv)
{
	size_t len = 1;
	char *out, *p;

	for (int i = 0; i < argc; i++)
		len += 3 + 4 * strlen(argv[i]);	/* worst case: every char is ' -> '\'' */
	out = malloc(len);
	if (!out)
		return NULL;
	p = out;
	for (int i = 0; i < argc; i++) {
		if (i)
			*p++ = ' ';
		if (shell_safe(argv[i])) {
			p = stpcpy(p, argv[i]);
			continue;
		}
		*p++ = '\'';
		for (const char *s = argv[i]; *s; s++) {
			if (*s == '\'')
				p = stpcpy(p, "'\\''");
			else
				*p++ = *s;
		}
		*p++ = '\'';
	}
	*p = '\0';
	return out;
}

static void trim(char *s)
{
	size_t len = strlen(s);
	char *start = s;

	while (len && (s[len - 1] == '\n' || s[len - 1] == ' ' || s[len - 1] == '\t'))
		s[--len] = '\0';
	while (*start == ' ' || *start == '\t')
		start++;
	memmove(s, start, strlen(start) + 1);
}

/*
 * CPU model from /proc/cpuinfo: x86 says "model name"; arm64 kernels often print no name,
 * so fall back to the keys other architectures use before giving up.
 */
static void read_cpu_model(char *buf, size_t len)
{
	static const char *const keys[] = { "model name", "Model", "Hardware", "cpu model",
					     "cpu" };
	char best[INFO_LEN] = "";
	size_t best_rank = sizeof(keys) / sizeof(keys[0]);
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0 && best_rank > 0) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		*colon = '\0';
		trim(line);
		for (size_t k = 0; k < best_rank; k++) {
			if (strcmp(line, keys[k]) == 0) {
				snprintf(best, sizeof(best), "%s", colon + 1);
				trim(best);
				best_rank = k;
				break;
			}
		}
	}
	free(line);
	fclose(f);
	if (best[0])
		snprintf(buf, len, "%s", best);
}

static void gather_host(struct report *r)
{
	struct utsname u;
	struct tm tm;
	time_t now = time(NULL);

	if (gmtime_r(&now, &tm))
		strftime(r->date, sizeof(r->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (gethostname(r->hostname, sizeof(r->hostname)) != 0)
		snprintf(r->hostname, sizeof(r->hostname), "unknown");
	r->hostname[sizeof(r->hostname) - 1] = '\0';
	read_cpu_model(r->cpu_model, sizeof(r->cpu_model));
	if (uname(&u) == 0) {
		snprintf(r->kernel, sizeof(r->kernel), "%s %s", u.sysname, u.release);
		snprintf(r->kernel_build, sizeof(r->kernel_build), "%s", u.version);
		snprintf(r->machine, sizeof(r->machine), "%s", u.machine);
	}
	if (timing_cpu_list(r->cpus, sizeof(r->cpus)) != 0)
		snprintf(r->cpus, sizeof(r->cpus), "(too many to list)");
}

int report_open(struct report **out, const char *dir, const struct report_meta *meta)
{
	struct report *r;
	int err = 0;

	*out = NULL;
	if (!dir || !meta || meta->argc < 0 || (meta->argc && !meta->argv))
		return EINVAL;
	err = mkdir_p(dir);
	if (err)
		return outf_report(dir, err);
	r = calloc(1, sizeof(*r));
	if (!r)
		return ENOMEM;
	r->dir = dup_or_null(dir, &err);
	r->gpu = dup_or_null(meta->gpu_name, &err);
	r->link = dup_or_null(meta->link, &err);
	r->baseline = dup_or_null(meta->baseline, &err);
	r->params = dup_or_null(meta->params, &err);
	r->command = quote_argv(meta->argc, meta->argv);
	r->argv = calloc((size_t)meta->argc + 1, sizeof(*r->argv));
	if (!r->command || !r->argv)
		err = ENOMEM;
	for (int i = 0; !err && i < meta->argc; i++) {
		r->argv[i] = dup_or_null(meta->argv[i], &err);
		r->argc = i + 1;
	}
	if (err) {
		report_close(r);
		return err;
	}
	r->msg_bytes = meta->msg_bytes;
	r->interval_ns = meta->interval_ns;
	gather_host(r);
	*out = r;
	return 0;
}

static int add_extra(struct report *r, const char *key, const char *value, bool literal)
{
	struct extra *e;
	int err = 0;

	if (!key || !*key || !value)
		return EINVAL;
	e = realloc(r->extra, (r->nextra + 1) * sizeof(*e));
	if (!e)
		return ENOMEM;
	r->extra = e;
	e = &r->extra[r->nextra];
	e->key = dup_or_null(key, &err);
	e->value = dup_or_null(value, &err);
	if (err) {
		free(e->key);
		free(e->value);
		return err;
	}
	e->literal = literal;
	r->nextra++;
	return 0;
}

int report_set_extra(struct report *r, const char *key, const char *value)
{
	return add_extra(r, key, value, false);
}

int report_set_extra_u64(struct report *r, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return add_extra(r, key, buf, true);
}

int report_set_extra_num(struct report *r, const char *key, double v)
{
	char buf[40];

	/* JSON has no NaN or infinity */
	if (!isfinite(v))
		return add_extra(r, key, "null", true);
	snprintf(buf, sizeof(buf), "%.6g", v);
	/* a whole value keeps reading as a real number (36000.0, not 36000): a reader that types
	 * the field, as a ratio that came out whole on a loaded machine, sees one type */
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
	return add_extra(r, key, buf, true);
}

int report_set_extra_bool(struct report *r, const char *key, bool v)
{
	return add_extra(r, key, v ? "true" : "false", true);
}

static char *safe_name(const char *label)
{
	char *s = strdup(label);

	for (char *p = s; p && *p; p++)
		if (!name_char(*p))
			*p = '_';
	/* "." and ".." would name directories, not files. */
	if (s && (strcmp(s, ".") == 0 || strcmp(s, "..") == 0))
		memset(s, '_', strlen(s));
	return s;
}

static void series_free(struct series *s)
{
	free(s->label);
	free(s->file);
	free(s->seq);
	free(s->lat_ns);
	free(s->sorted);
}

int report_add_series(struct report *r, const char *label, const struct stats_rec *rec)
{
	struct series s = { 0 }, *grown;
	size_t m = 0;
	int err;

	if (!label || !*label)
		return EINVAL;
	s.file = safe_name(label);
	s.label = strdup(label);
	if (!s.file || !s.label) {
		series_free(&s);
		return ENOMEM;
	}
	for (size_t i = 0; i < r->nseries; i++) {
		if (strcmp(r->series[i].file, s.file) == 0) {
			fprintf(stderr,
				"gpunic: report: series '%s' would overwrite '%s' (%s.csv)\n",
				label, r->series[i].label, s.file);
			series_free(&s);
			return EEXIST;
		}
	}
	err = stats_rec_sorted(rec, &s.sorted, &s.n);
	if (err) {
		series_free(&s);
		return err;
	}
	stats_summarize_sorted(s.sorted, s.n, &rec->counts, &s.sum);
	s.seq = malloc((s.n ? s.n : 1) * sizeof(*s.seq));
	s.lat_ns = malloc((s.n ? s.n : 1) * sizeof(*s.lat_ns));
	grown = realloc(r->series, (r->nseries + 1) * sizeof(*grown));
	if (grown)
		r->series = grown;
	if (!s.seq || !s.lat_ns || !grown) {
		series_free(&s);
		return ENOMEM;
	}
	for (size_t i = 0; i < rec->n; i++) {
		if (!stats_sample_valid(rec->flags[i]))
			continue;
		s.seq[m] = rec->seq[i];
		s.lat_ns[m] = rec->lat_ns[i];
		m++;
	}
	r->series[r->nseries++] = s;
	return 0;
}

static const struct series *find_series(const struct report *r, const char *label)
{
	for (size_t i = 0; label && i < r->nseries; i++)
		if (strcmp(r->series[i].label, label) == 0)
			return &r->series[i];
	return NULL;
}

const struct stats_summary *report_series_summary(const struct report *r, const char *label)
{
	const struct series *s = find_series(r, label);

	return s ? &s->sum : NULL;
}

const char *report_dir(const struct report *r)
{
	return r->dir;
}

static int path_of(char *buf, const struct report *r, const char *stem, const char *suffix)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s%s", r->dir, stem, suffix);

	if (n < 0 || n >= PATH_MAX)
		return outf_report(r->dir, ENAMETOOLONG);
	return 0;
}

static int write_samples(const struct report *r, const struct series *s)
{
	char path[PATH_MAX];
	struct outf o;
	int err = path_of(path, r, s->file, ".csv");

	if (!err)
		err = outf_open(&o, path);
	if (err)
		return err;
	outf_printf(&o, "seq,latency_ns\n");
	for (size_t i = 0; i < s->n && !o.err; i++)
		outf_printf(&o, "%" PRIu64 ",%" PRIu64 "\n", s->seq[i], s->lat_ns[i]);
	return outf_close(&o);
}

/* Range over every series, so their histograms share bins and can be compared bin by bin. */
static void latency_range(const struct report *r, uint64_t *lo, uint64_t *hi, uint64_t *most)
{
	bool any = false;

	*lo = *hi = *most = 0;
	for (size_t i = 0; i < r->nseries; i++) {
		const struct series *s = &r->series[i];

		if (s->n > *most)
			*most = s->n;
		if (!s->n)
			continue;
		if (!any || s->sorted[0] < *lo)
			*lo = s->sorted[0];
		if (!any || s->sorted[s->n - 1] > *hi)
			*hi = s->sorted[s->n - 1];
		any = true;
	}
}

static int write_hist(const struct report *r, const struct series *s, uint64_t lo, uint64_t hi)
{
	char path[PATH_MAX];
	struct stats_hist h;
	struct outf o;
	int err;

	/* Log bins need lo >= 1; the top sample must fall inside the half-open last bin. */
	if (lo == 0)
		lo = 1;
	hi = hi + 1 > lo ? hi + 1 : lo + 1;
	err = stats_hist_init_log(&h, lo, hi, hi - lo < HIST_BINS_MAX ? hi - lo : HIST_BINS_MAX);
	if (err)
		return err;
	for (size_t i = 0; i < s->n; i++)
		stats_hist_add(&h, s->sorted[i] < lo ? lo : s->sorted[i]);
	err = path_of(path, r, s->file, ".hist.csv");
	if (!err)
		err = outf_open(&o, path);
	if (err) {
		stats_hist_free(&h);
		return err;
	}
	outf_printf(&o, "lo_ns,hi_ns,count\n");
	for (size_t b = 0; b < h.nbins; b++)
		outf_printf(&o, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", h.edge[b], h.edge[b + 1],
			    h.count[b]);
	stats_hist_free(&h);
	return outf_close(&o);
}

/*
 * Tail curve: for each distinct latency x (its first index i in sorted order), the fraction
 * of samples >= x is (n - i) / n. All of the last CCDF_EXACT_TAIL samples are kept; before
 * them a point whenever the fraction fell by CCDF_STEP, so a million samples make ~1500 rows.
 */
static int write_ccdf(const struct report *r, const struct series *s)
{
	char path[PATH_MAX];
	struct outf o;
	size_t last_above = 0;
	int err = path_of(path, r, s->file, ".ccdf.csv");

	if (!err)
		err = outf_open(&o, path);
	if (err)
		return err;
	outf_printf(&o, "latency_ns,fraction_ge\n");
	for (size_t i = 0; i < s->n && !o.err; i++) {
		size_t above = s->n - i;

		if (i && s->sorted[i] == s->sorted[i - 1])
			continue;
		if (i && above > CCDF_EXACT_TAIL && above * CCDF_STEP > last_above)
			continue;
		outf_printf(&o, "%" PRIu64 ",%.9g\n", s->sorted[i], (double)above / s->n);
		last_above = above;
	}
	return outf_close(&o);
}

/* The nearest-rank sample at percentile @pct (0..100) of @s: always a measured value. */
static size_t rank_at(const struct series *s, double pct)
{
	double r = ceil(pct / 100.0 * (double)s->n);

	if (r < 1)
		return 0;
	return r >= (double)s->n ? s->n - 1 : (size_t)r - 1;
}

/* Samples <= sorted[i]: the end of its run of equal values. */
static size_t count_to(const struct series *s, size_t i)
{
	while (i + 1 < s->n && s->sorted[i + 1] == s->sorted[i])
		i++;
	return i + 1;
}

/*
 * HdrHistogram's percentile distribution (outputPercentileDistribution, values in us, five
 * ticks per half distance to 100%): HdrHistogram's plotter and tools read it. The values are
 * the exact nearest-rank samples, not bucket edges, so there is no Buckets line.
 */
static int write_hgrm(const struct report *r, const struct series *s)
{
	char path[PATH_MAX];
	struct outf o;
	double pct = 0;
	int err = path_of(path, r, s->file, ".hgrm");

	if (!err)
		err = outf_open(&o, path);
	if (err)
		return err;
	outf_printf(&o, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
		    "1/(1-Percentile)");
	while (s->n && !o.err) {
		size_t i = rank_at(s, pct), n = count_to(s, i);
		double half;

		outf_printf(&o, "%12.3f %2.12f %10zu %14.2f\n", s->sorted[i] / 1000.0, pct / 100.0,
			    n, 1.0 / (1.0 - pct / 100.0));
		/* the top value is reported once at its level, then at 100% below */
		if (n >= s->n)
			break;
		half = pow(2, floor(log2(100.0 / (100.0 - pct))) + 1);
		pct += 100.0 / (HGRM_TICKS_PER_HALF * half);
	}
	if (s->n)
		outf_printf(&o, "%12.3f %2.12f %10zu\n", s->sorted[s->n - 1] / 1000.0, 1.0, s->n);
	outf_printf(&o, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n",
		    s->sum.mean_ns / 1000.0, s->sum.stdev_ns / 1000.0);
	outf_printf(&o, "#[Max     = %12.3f, Total count    = %12zu]\n",
		    s->n ? s->sorted[s->n - 1] / 1000.0 : 0.0, s->n);
	return outf_close(&o);
}

/*
 * JSON writing: a comma before every member but the first of its object or array. The
 * deepest nesting summary.json has is 4 (root, "series", one series, "ns").
 */
struct json {
	struct outf o;
	int depth;
	bool first[8];
};

static void json_sep(struct json *j)
{
	if (!j->first[j->depth])
		outf_printf(&j->o, ",");
	j->first[j->depth] = false;
	outf_printf(&j->o, "\n%*s", 2 * j->depth, "");
}

static void json_key(struct json *j, const char *key)
{
	json_sep(j);
	outf_json_str(&j->o, key);
	outf_printf(&j->o, ": ");
}

static void json_open(struct json *j, const char *key, char bracket)
{
	if (key)
		json_key(j, key);
	else if (j->depth)
		json_sep(j);
	outf_printf(&j->o, "%c", bracket);
	j->first[++j->depth] = true;
}

static void json_close(struct json *j, char bracket)
{
	bool empty = j->first[j->depth];

	j->depth--;
	if (!empty)
		outf_printf(&j->o, "\n%*s", 2 * j->depth, "");
	outf_printf(&j->o, "%c", bracket);
}

static void json_str(struct json *j, const char *key, const char *value)
{
	if (key)
		json_key(j, key);
	else
		json_sep(j);
	if (value)
		outf_json_str(&j->o, value);
	else
		outf_printf(&j->o, "null");
}

static void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	outf_printf(&j->o, "%" PRIu64, v);
}

static void json_extra(struct json *j, const struct extra *e)
{
	if (!e->literal) {
		json_str(j, e->key, e->value);
		return;
	}
	json_key(j, e->key);
	outf_printf(&j->o, "%s", e->value);
}

/* Fixed decimals: ns integers divided by 1000 are exact with 3; JSON has no NaN. */
static void json_num(struct json *j, const char *key, double v, int decimals, bool valid)
{
	json_key(j, key);
	if (valid && isfinite(v))
		outf_printf(&j->o, "%.*f", decimals, v);
	else
		outf_printf(&j->o, "null");
}

/* The statistics in the order report.h lists them; "stdev" has no meaning as a ratio. */
static const char *const stat_names[] = { "min", "p50", "p90", "p99", "p999", "max", "mean",
					  "stdev" };
#define N_STATS (sizeof(stat_names) / sizeof(stat_names[0]))
#define N_RATIO_STATS (N_STATS - 1)

static void stat_values(const struct stats_summary *s, double v[N_STATS])
{
	v[0] = (double)s->min_ns;
	v[1] = (double)s->p50_ns;
	v[2] = (double)s->p90_ns;
	v[3] = (double)s->p99_ns;
	v[4] = (double)s->p999_ns;
	v[5] = (double)s->max_ns;
	v[6] = s->mean_ns;
	v[7] = s->stdev_ns;
}

static void json_series(struct json *j, const struct series *s, const struct series *base)
{
	double v[N_STATS], b[N_STATS];
	bool have = s->sum.count > 0;
	char name[PATH_MAX];

	stat_values(&s->sum, v);
	json_open(j, NULL, '{');
	json_str(j, "label", s->label);
	json_open(j, "files", '{');
	snprintf(name, sizeof(name), "%s.csv", s->file);
	json_str(j, "samples", name);
	snprintf(name, sizeof(name), "%s.hist.csv", s->file);
	json_str(j, "hist", name);
	snprintf(name, sizeof(name), "%s.ccdf.csv", s->file);
	json_str(j, "ccdf", name);
	json_close(j, '}');
	json_u64(j, "count", s->sum.count);
	json_open(j, "ns", '{');
	for (size_t k = 0; k < N_STATS; k++)
		json_num(j, stat_names[k], v[k], k < 6 ? 0 : 3, have);
	json_close(j, '}');
	json_open(j, "us", '{');
	for (size_t k = 0; k < N_STATS; k++)
		json_num(j, stat_names[k], v[k] / 1000.0, k < 6 ? 3 : 6, have);
	json_close(j, '}');
	json_open(j, "loss", '{');
	json_u64(j, "sent", s->sum.counts.sent);
	json_u64(j, "received", s->sum.counts.received);
	json_u64(j, "lost", s->sum.counts.lost);
	json_u64(j, "dup", s->sum.counts.dup);
	json_u64(j, "reorder", s->sum.counts.reorder);
	json_u64(j, "corrupt", s->sum.counts.corrupt);
	json_close(j, '}');
	if (!base) {
		json_str(j, "ratio_to_baseline", NULL);
	} else {
		stat_values(&base->sum, b);
		json_open(j, "ratio_to_baseline", '{');
		for (size_t k = 0; k < N_RATIO_STATS; k++)
			json_num(j, stat_names[k], b[k] ? v[k] / b[k] : 0, 6,
				 have && base->sum.count && b[k] != 0);
		json_close(j, '}');
	}
	json_close(j, '}');
}

static const struct series *baseline_of(const struct report *r)
{
	const struct series *base = find_series(r, r->baseline);

	if (r->baseline && !base)
		fprintf(stderr, "gpunic: report: baseline series '%s' was never added; "
				"no ratios\n", r->baseline);
	return base;
}

static int write_json(const struct report *r)
{
	const struct timing_clock *clk = timing_clock();
	const struct series *base = baseline_of(r);
	char path[PATH_MAX];
	struct json j = { .depth = 0 };
	int err = path_of(path, r, "", REPORT_SUMMARY_JSON);

	if (!err)
		err = outf_open(&j.o, path);
	if (err)
		return err;
	json_open(&j, NULL, '{');
	json_str(&j, "schema", REPORT_SCHEMA);
	json_open(&j, "meta", '{');
	json_str(&j, "command", r->command);
	json_str(&j, "version", gpunic_version());
	json_str(&j, "commit", gpunic_commit());
	json_open(&j, "argv", '[');
	for (int i = 0; i < r->argc; i++)
		json_str(&j, NULL, r->argv[i]);
	json_close(&j, ']');
	json_str(&j, "date", r->date);
	json_str(&j, "hostname", r->hostname);
	json_str(&j, "cpu_model", r->cpu_model);
	json_str(&j, "kernel", r->kernel);
	json_str(&j, "kernel_build", r->kernel_build);
	json_str(&j, "machine", r->machine);
	json_str(&j, "gpu", r->gpu);
	json_str(&j, "link", r->link);
	json_u64(&j, "message_bytes", r->msg_bytes);
	json_u64(&j, "interval_ns", r->interval_ns);
	json_str(&j, "clock", clk->name);
	json_num(&j, "clock_cost_ns", clk->cost_ns, 1, true);
	json_str(&j, "cpus_allowed", r->cpus);
	json_str(&j, "baseline", base ? base->label : NULL);
	json_open(&j, "extra", '{');
	for (size_t i = 0; i < r->nextra; i++)
		json_extra(&j, &r->extra[i]);
	json_close(&j, '}');
	json_close(&j, '}');
	json_open(&j, "series", '[');
	for (size_t i = 0; i < r->nseries; i++)
		json_series(&j, &r->series[i], base);
	json_close(&j, ']');
	json_close(&j, '}');
	outf_printf(&j.o, "\n");
	return outf_close(&j.o);
}

int report_write(struct report *r)
{
	uint64_t lo, hi, most;
	int err;

	latency_range(r, &lo, &hi, &most);
	for (size_t i = 0; i < r->nseries; i++) {
		const struct series *s = &r->series[i];

		err = write_samples(r, s);
		if (!err)
			err = write_hist(r, s, lo, hi);
		if (!err)
			err = write_ccdf(r, s);
		if (!err)
			err = write_hgrm(r, s);
		if (err)
			return err;
	}
	err = write_json(r);
	if (!err)
		r->written = true;
	return err;
}

/* The table: cells are formatted first, so every column gets exactly the width it needs. */
#define TABLE_ROWS 12
#define CELL_LEN 40

static void fmt_us(char *cell, uint64_t count, double ns)
{
	if (count)
		snprintf(cell, CELL_LEN, "%.3f", ns / 1000.0);
	else
		snprintf(cell, CELL_LEN, "-");
}

static void fmt_ratio(char *cell, const struct series *s, const struct series *base, double v,
		      double b)
{
	if (base && s->sum.count && base->sum.count && b > 0)
		snprintf(cell, CELL_LEN, "%.2fx", v / b);
	else
		snprintf(cell, CELL_LEN, "-");
}

static size_t table_rows(const struct report *r, const struct series *base,
			 char rows[TABLE_ROWS][CELL_LEN], char (*cells)[TABLE_ROWS][CELL_LEN])
{
	static const char *const stat_rows[] = { "min", "p50", "p90", "p99", "p99.9", "max",
						 "mean" };
	size_t nrows = 0;

	snprintf(rows[nrows++], CELL_LEN, "[us]");
	snprintf(rows[nrows++], CELL_LEN, "samples");
	for (size_t k = 0; k < sizeof(stat_rows) / sizeof(stat_rows[0]); k++)
		snprintf(rows[nrows++], CELL_LEN, "%s", stat_rows[k]);
	snprintf(rows[nrows++], CELL_LEN, "loss");
	if (base) {
		snprintf(rows[nrows++], CELL_LEN, "p50/%.*s", CELL_LEN - 5, base->label);
		snprintf(rows[nrows++], CELL_LEN, "p99/%.*s", CELL_LEN - 5, base->label);
	}
	for (size_t i = 0; i < r->nseries; i++) {
		const struct series *s = &r->series[i];
		const struct stats_summary *m = &s->sum;
		double v[N_STATS];
		size_t row = 0;

		stat_values(m, v);
		snprintf(cells[i][row++], CELL_LEN, "%.*s", CELL_LEN - 1, s->label);
		snprintf(cells[i][row++], CELL_LEN, "%" PRIu64, m->count);
		for (size_t k = 0; k < 7; k++)
			fmt_us(cells[i][row++], m->count, v[k]);
		if (m->counts.sent)
			/* %g: 3 of 100000 reads 0.003%, not a reassuring 0.00%. */
			snprintf(cells[i][row++], CELL_LEN, "%" PRIu64 " (%.3g%%)", m->counts.lost,
				 100.0 * m->counts.lost / m->counts.sent);
		else
			snprintf(cells[i][row++], CELL_LEN, "%" PRIu64, m->counts.lost);
		if (base) {
			fmt_ratio(cells[i][row++], s, base, v[1], (double)base->sum.p50_ns);
			fmt_ratio(cells[i][row++], s, base, v[3], (double)base->sum.p99_ns);
		}
	}
	return nrows;
}

int report_print_table(const struct report *r, FILE *out)
{
	const struct series *base = find_series(r, r->baseline);
	char rows[TABLE_ROWS][CELL_LEN];
	char (*cells)[TABLE_ROWS][CELL_LEN];
	size_t nrows, *width, label_w = 0;
	int err = 0;

	cells = calloc(r->nseries ? r->nseries : 1, sizeof(*cells));
	width = calloc(r->nseries ? r->nseries : 1, sizeof(*width));
	if (!cells || !width) {
		free(cells);
		free(width);
		return ENOMEM;
	}
	nrows = table_rows(r, base, rows, cells);
	for (size_t row = 0; row < nrows; row++) {
		if (strlen(rows[row]) > label_w)
			label_w = strlen(rows[row]);
		for (size_t i = 0; i < r->nseries; i++)
			if (strlen(cells[i][row]) > width[i])
				width[i] = strlen(cells[i][row]);
	}
	for (size_t row = 0; row < nrows && !err; row++) {
		if (fprintf(out, "%-*s", (int)label_w, rows[row]) < 0)
			err = errno ? errno : EIO;
		for (size_t i = 0; i < r->nseries && !err; i++)
			if (fprintf(out, "  %*s", (int)width[i], cells[i][row]) < 0)
				err = errno ? errno : EIO;
		if (!err && fprintf(out, "\n") < 0)
			err = errno ? errno : EIO;
	}
	free(cells);
	free(width);
	return err;
}

/* "32 B write-imm, ..., 2026-12-01 15:40 UTC": the titles' second line. */
static void plot_params(const struct report *r, char *buf, size_t len)
{
	char date[32];

	/* r->date is ISO 8601 (2026-12-01T15:40:12Z): a space reads better in a title */
	snprintf(date, sizeof(date), "%.10s %.5s UTC", r->date, r->date + 11);
	snprintf(buf, len, "%s%s%s", r->params ? r->params : "", r->params ? ", " : "", date);
}

static void plot_hardware(const struct report *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s, %s", r->cpu_model, r->gpu ? r->gpu : "no GPU");
}

int report_plot(struct report *r, const char *gnuplot, const char *python,
		enum plot_renderer *used)
{
	struct plot_series *ps;
	char (*names)[4][PATH_MAX];
	char params[512], hardware[2 * INFO_LEN + 16];
	struct plot_job job = { 0 };
	int err;

	*used = PLOT_NONE;
	if (!r->written) {
		err = report_write(r);
		if (err)
			return err;
	}
	if (r->nseries == 0)
		return EINVAL;
	ps = calloc(r->nseries, sizeof(*ps));
	names = calloc(r->nseries, sizeof(*names));
	if (!ps || !names) {
		free(ps);
		free(names);
		return ENOMEM;
	}
	for (size_t i = 0; i < r->nseries; i++) {
		const struct series *s = &r->series[i];

		snprintf(names[i][0], PATH_MAX, "%s.hist.csv", s->file);
		snprintf(names[i][1], PATH_MAX, "%s.ccdf.csv", s->file);
		snprintf(names[i][2], PATH_MAX, "%s.csv", s->file);
		snprintf(names[i][3], PATH_MAX, "%s.time.png", s->file);
		ps[i] = (struct plot_series){
			.label = s->label, .hist_csv = names[i][0], .ccdf_csv = names[i][1],
			.samples_csv = names[i][2], .time_png = names[i][3],
			.p50_ns = s->sum.p50_ns, .p99_ns = s->sum.p99_ns,
			.p999_ns = s->sum.p999_ns, .count = s->n,
		};
	}
	plot_params(r, params, sizeof(params));
	plot_hardware(r, hardware, sizeof(hardware));
	job.dir = r->dir;
	job.hardware = hardware;
	job.params = params;
	job.series = ps;
	job.nseries = r->nseries;
	latency_range(r, &job.min_ns, &job.max_ns, &job.max_samples);
	job.gnuplot = gnuplot;
	job.python = python;
	err = plot_render(&job, used);
	free(ps);
	free(names);
	return err;
}

void report_close(struct report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nseries; i++)
		series_free(&r->series[i]);
	for (size_t i = 0; i < r->nextra; i++) {
		free(r->extra[i].key);
		free(r->extra[i].value);
	}
	for (int i = 0; r->argv && i < r->argc; i++)
		free(r->argv[i]);
	free(r->series);
	free(r->extra);
	free(r->argv);
	free(r->command);
	free(r->dir);
	free(r->gpu);
	free(r->link);
	free(r->baseline);
	free(r->params);
	free(r);
}
