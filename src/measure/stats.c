// SPDX-License-Identifier: MIT
/*
 * Sample recorder, summaries, perftest-shaped lines and histograms (definitions in stats.h).
 */
#include "stats.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BITS_PER_WORD 64
#define PPM 1000000u

/* perftest's separator: the width of its widest header line. */
static const char perf_rule[] =
	"---------------------------------------------------------------------------------------";

/*
 * Headers as perftest prints them; each value below is right-aligned to the end of its
 * header field, so a column of numbers sits under its name.
 */
static const char lat_header[] =
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
	"    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
static const char bw_header[] =
	" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";

static void *alloc_touched(size_t nmemb, size_t size)
{
	size_t bytes;
	void *p;

	if (__builtin_mul_overflow(nmemb, size, &bytes))
		return NULL;
	p = malloc(bytes ? bytes : 1);
	/* Writing every page now keeps first-touch page faults out of the measured loop. */
	if (p)
		memset(p, 0, bytes);
	return p;
}

int stats_rec_init(struct stats_rec *r, size_t cap)
{
	size_t words = (cap + BITS_PER_WORD - 1) / BITS_PER_WORD;

	memset(r, 0, sizeof(*r));
	r->lat_ns = alloc_touched(cap, sizeof(*r->lat_ns));
	r->seq = alloc_touched(cap, sizeof(*r->seq));
	r->flags = alloc_touched(cap, sizeof(*r->flags));
	r->seen = alloc_touched(words, sizeof(*r->seen));
	if (!r->lat_ns || !r->seq || !r->flags || !r->seen) {
		stats_rec_free(r);
		return ENOMEM;
	}
	r->cap = cap;
	return 0;
}

void stats_rec_free(struct stats_rec *r)
{
	free(r->lat_ns);
	free(r->seq);
	free(r->flags);
	free(r->seen);
	memset(r, 0, sizeof(*r));
}

void stats_rec_reset(struct stats_rec *r)
{
	memset(r->seen, 0, (r->cap + BITS_PER_WORD - 1) / BITS_PER_WORD * sizeof(*r->seen));
	r->n = 0;
	r->max_seq = 0;
	memset(&r->counts, 0, sizeof(r->counts));
}

int stats_rec_add(struct stats_rec *r, uint64_t seq, uint64_t lat_ns, unsigned int flags)
{
	uint64_t bit;
	size_t word;

	if (seq >= r->cap)
		return ERANGE;
	word = seq / BITS_PER_WORD;
	bit = 1ull << (seq % BITS_PER_WORD);
	if (r->seen[word] & bit) {
		r->counts.dup++;
		return 0;
	}
	r->seen[word] |= bit;
	if (flags & STATS_SAMPLE_LOST) {
		r->counts.lost++;
		lat_ns = 0;
	} else {
		if (r->counts.received && seq < r->max_seq)
			r->counts.reorder++;
		if (!r->counts.received || seq > r->max_seq)
			r->max_seq = seq;
		r->counts.received++;
		if (flags & STATS_SAMPLE_CORRUPT)
			r->counts.corrupt++;
	}
	/* n <= cap holds: each seq below cap is stored at most once. */
	r->lat_ns[r->n] = lat_ns;
	r->seq[r->n] = seq;
	r->flags[r->n] = (uint8_t)flags;
	r->n++;
	return 0;
}

int stats_rec_finish(struct stats_rec *r, uint64_t sent)
{
	if (sent > r->cap)
		return ERANGE;
	for (uint64_t seq = 0; seq < sent; seq++) {
		if (!(r->seen[seq / BITS_PER_WORD] & (1ull << (seq % BITS_PER_WORD))))
			stats_rec_add(r, seq, 0, STATS_SAMPLE_LOST);
	}
	r->counts.sent = sent;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void stats_sort_ns(uint64_t *ns, size_t n)
{
	if (n > 1)
		qsort(ns, n, sizeof(*ns), cmp_u64);
}

int stats_rec_sorted(const struct stats_rec *r, uint64_t **out, size_t *n)
{
	uint64_t *v;
	size_t m = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < r->n; i++)
		m += stats_sample_valid(r->flags[i]);
	if (m == 0)
		return 0;
	v = malloc(m * sizeof(*v));
	if (!v)
		return ENOMEM;
	m = 0;
	for (size_t i = 0; i < r->n; i++)
		if (stats_sample_valid(r->flags[i]))
			v[m++] = r->lat_ns[i];
	stats_sort_ns(v, m);
	*out = v;
	*n = m;
	return 0;
}

/* The most common value of sorted @v[n] (the smallest of equals), and how many lie within one
 * of it. */
static uint64_t mode_within_one(const uint64_t *v, size_t n, uint64_t *near)
{
	uint64_t best = 0;
	size_t best_run = 0, run, lo = 0, hi = 0;

	for (size_t i = 0; i < n; i += run) {
		for (run = 1; i + run < n && v[i + run] == v[i]; run++)
			;
		if (run > best_run) {
			best_run = run;
			best = v[i];
		}
	}
	*near = 0;
	if (!best_run)
		return 0;
	/* v[lo..hi) holds best - 1 .. best + 1 */
	while (lo < n && v[lo] + 1 < best)
		lo++;
	for (hi = lo; hi < n && v[hi] <= best + 1; hi++)
		;
	*near = hi - lo;
	return best;
}

int stats_tail_spacing(const struct stats_rec *r, struct stats_tail_spacing *out)
{
	uint64_t *sorted, *seq;
	size_t n, m = 0, g = 0;
	int err;

	memset(out, 0, sizeof(*out));
	err = stats_rec_sorted(r, &sorted, &n);
	if (err || !n)
		return err;
	out->threshold_ns = stats_percentile(sorted, n, 99.0);
	free(sorted);
	seq = malloc((n / 50 + 1) * sizeof(*seq));	/* above p99: about 1 % of them */
	if (!seq)
		return ENOMEM;
	for (size_t i = 0; i < r->n && m < n / 50 + 1; i++)
		if (stats_sample_valid(r->flags[i]) && r->lat_ns[i] > out->threshold_ns)
			seq[m++] = r->seq[i];
	out->slow = m;
	stats_sort_ns(seq, m);
	/* the distances, in place: seq[i + 1] - seq[i], neighbours left out */
	for (size_t i = 0; i + 1 < m; i++)
		if (seq[i + 1] - seq[i] > 1)
			seq[g++] = seq[i + 1] - seq[i];
	stats_sort_ns(seq, g);
	out->gap = mode_within_one(seq, g, &out->at_gap);
	free(seq);
	return 0;
}

uint64_t stats_percentile(const uint64_t *sorted, size_t n, double pct)
{
	uint64_t ppm, rank;

	if (n == 0)
		return 0;
	if (!(pct > 0))
		return sorted[0];
	if (pct >= 100)
		return sorted[n - 1];
	/* Integer ppm: 99.9 * 1000 / 100 in doubles is 999.0000000000001, whose ceil is 1000. */
	ppm = (uint64_t)llround(pct * (PPM / 100));
	rank = ((uint64_t)n * ppm + PPM - 1) / PPM;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

void stats_summarize_sorted(const uint64_t *sorted, size_t n, const struct stats_counts *counts,
			    struct stats_summary *s)
{
	long double sum = 0, sq = 0, mean;

	memset(s, 0, sizeof(*s));
	if (counts)
		s->counts = *counts;
	if (n == 0)
		return;
	s->count = n;
	s->min_ns = sorted[0];
	s->max_ns = sorted[n - 1];
	s->p50_ns = stats_percentile(sorted, n, 50);
	s->p90_ns = stats_percentile(sorted, n, 90);
	s->p99_ns = stats_percentile(sorted, n, 99);
	s->p999_ns = stats_percentile(sorted, n, 99.9);
	for (size_t i = 0; i < n; i++)
		sum += sorted[i];
	mean = sum / n;
	/* Two passes: summing squares of deviations does not cancel the way sum(x^2) would. */
	for (size_t i = 0; i < n; i++)
		sq += (sorted[i] - mean) * (sorted[i] - mean);
	s->mean_ns = (double)mean;
	s->stdev_ns = (double)sqrtl(sq / n);
}

int stats_summarize(const struct stats_rec *r, struct stats_summary *s)
{
	uint64_t *sorted;
	size_t n;
	int err = stats_rec_sorted(r, &sorted, &n);

	if (err)
		return err;
	stats_summarize_sorted(sorted, n, &r->counts, s);
	free(sorted);
	return 0;
}

/* A buffered stream reports most write errors at fflush()/fclose(), which its owner checks. */
static int put_line(FILE *f, const char *line)
{
	if (fprintf(f, "%s\n", line) < 0)
		return errno ? errno : EIO;
	return 0;
}

int stats_rule_print(FILE *f)
{
	return put_line(f, perf_rule);
}

int stats_lat_header_print(FILE *f)
{
	int err = put_line(f, perf_rule);

	return err ? err : put_line(f, lat_header);
}

static double us(double ns)
{
	return ns / 1000.0;
}

int stats_lat_format(char *buf, size_t len, uint64_t msg_bytes, const struct stats_summary *s)
{
	int n = snprintf(buf, len,
			 "%7" PRIu64 "%12" PRIu64 "%15.2f%15.2f%17.2f%15.2f%17.2f%23.2f%25.2f",
			 msg_bytes, s->count, us(s->min_ns), us(s->max_ns), us(s->p50_ns),
			 us(s->mean_ns), us(s->stdev_ns), us(s->p99_ns), us(s->p999_ns));

	return n < 0 || (size_t)n >= len ? ENOSPC : 0;
}

int stats_lat_print(FILE *f, uint64_t msg_bytes, const struct stats_summary *s)
{
	char line[256];
	int err = stats_lat_format(line, sizeof(line), msg_bytes, s);

	return err ? err : put_line(f, line);
}

int stats_bw_compute(struct stats_bw *bw, uint64_t msg_bytes, uint64_t msgs, uint64_t elapsed_ns,
		     uint64_t peak_msgs, uint64_t peak_ns)
{
	const double mb = 1024.0 * 1024.0;

	memset(bw, 0, sizeof(*bw));
	if (elapsed_ns == 0)
		return EINVAL;
	bw->msg_bytes = msg_bytes;
	bw->iters = msgs;
	bw->avg_mb_s = (double)msg_bytes * msgs / (elapsed_ns / 1e9) / mb;
	bw->msg_rate_mpps = (double)msgs / (elapsed_ns / 1e3);
	if (peak_ns)
		bw->peak_mb_s = (double)msg_bytes * peak_msgs / (peak_ns / 1e9) / mb;
	/* A window can only be as fast or faster than the whole run it lies in. */
	if (bw->peak_mb_s < bw->avg_mb_s)
		bw->peak_mb_s = bw->avg_mb_s;
	return 0;
}

int stats_bw_best_window(const uint64_t *done_ns, size_t n, size_t window, uint64_t *msgs,
			 uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	if (window == 0 || window >= n)
		return EINVAL;
	for (size_t i = 0; i + window < n; i++) {
		uint64_t span = done_ns[i + window] - done_ns[i];

		if (span < best)
			best = span;
	}
	*msgs = window;
	*ns = best;
	return 0;
}

int stats_bw_header_print(FILE *f)
{
	int err = put_line(f, perf_rule);

	return err ? err : put_line(f, bw_header);
}

int stats_bw_format(char *buf, size_t len, const struct stats_bw *bw)
{
	int n = snprintf(buf, len, "%7" PRIu64 "%16" PRIu64 "%19.2f%22.2f%16.6f", bw->msg_bytes,
			 bw->iters, bw->peak_mb_s, bw->avg_mb_s, bw->msg_rate_mpps);

	return n < 0 || (size_t)n >= len ? ENOSPC : 0;
}

int stats_bw_print(FILE *f, const struct stats_bw *bw)
{
	char line[256];
	int err = stats_bw_format(line, sizeof(line), bw);

	return err ? err : put_line(f, line);
}

static int hist_alloc(struct stats_hist *h, size_t nbins)
{
	memset(h, 0, sizeof(*h));
	if (nbins == 0 || nbins == SIZE_MAX)
		return EINVAL;
	h->edge = calloc(nbins + 1, sizeof(*h->edge));
	h->count = calloc(nbins, sizeof(*h->count));
	if (!h->edge || !h->count) {
		stats_hist_free(h);
		return ENOMEM;
	}
	h->nbins = nbins;
	return 0;
}

int stats_hist_init_fixed(struct stats_hist *h, uint64_t lo_ns, uint64_t width_ns, size_t nbins)
{
	uint64_t span;
	int err;

	if (width_ns == 0 || nbins == 0) {
		memset(h, 0, sizeof(*h));
		return EINVAL;
	}
	if (__builtin_mul_overflow((uint64_t)nbins, width_ns, &span) ||
	    __builtin_add_overflow(lo_ns, span, &span)) {
		memset(h, 0, sizeof(*h));
		return EOVERFLOW;
	}
	err = hist_alloc(h, nbins);
	if (err)
		return err;
	for (size_t i = 0; i <= nbins; i++)
		h->edge[i] = lo_ns + i * width_ns;
	return 0;
}

int stats_hist_init_log(struct stats_hist *h, uint64_t lo_ns, uint64_t hi_ns, size_t nbins)
{
	double ratio;
	int err;

	if (lo_ns == 0 || hi_ns <= lo_ns) {
		memset(h, 0, sizeof(*h));
		return EINVAL;
	}
	err = hist_alloc(h, nbins);
	if (err)
		return err;
	ratio = (double)hi_ns / (double)lo_ns;
	h->edge[0] = lo_ns;
	for (size_t i = 1; i <= nbins; i++) {
		double e = (double)lo_ns * pow(ratio, (double)i / (double)nbins);
		uint64_t v = i == nbins ? hi_ns : (uint64_t)llround(e);

		if (v <= h->edge[i - 1])
			v = h->edge[i - 1] + 1;
		h->edge[i] = v;
	}
	return 0;
}

void stats_hist_add(struct stats_hist *h, uint64_t ns)
{
	size_t lo = 0, hi = h->nbins;

	h->total++;
	if (ns < h->edge[0]) {
		h->under++;
		return;
	}
	if (ns >= h->edge[h->nbins]) {
		h->over++;
		return;
	}
	/* Invariant: edge[lo] <= ns < edge[hi]; ends when they are adjacent. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ns < h->edge[mid])
			hi = mid;
		else
			lo = mid;
	}
	h->count[lo]++;
}

void stats_hist_free(struct stats_hist *h)
{
	free(h->edge);
	free(h->count);
	memset(h, 0, sizeof(*h));
}
