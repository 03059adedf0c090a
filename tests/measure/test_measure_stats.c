// SPDX-License-Identifier: MIT
/*
 * Statistics of the benchmark kit (src/measure/stats.h): nearest-rank percentiles on known
 * data, stdev, the sample recorder's counters, perftest-shaped lines and histogram binning.
 */
#include <errno.h>
#include <math.h>

#include "apps_test.h"
#include "stats.h"

static struct stats_summary summary_of(const uint64_t *values, size_t n)
{
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	struct stats_summary s;

	CHECK(v);
	memcpy(v, values, n * sizeof(*v));
	stats_sort_ns(v, n);
	stats_summarize_sorted(v, n, NULL, &s);
	free(v);
	return s;
}

static bool near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

TEST(stats_percentile_one_sample)
{
	const uint64_t v[] = { 42 };
	struct stats_summary s = summary_of(v, 1);

	CHECK_EQ(s.count, 1);
	CHECK_EQ(s.min_ns, 42);
	CHECK_EQ(s.p50_ns, 42);
	CHECK_EQ(s.p90_ns, 42);
	CHECK_EQ(s.p99_ns, 42);
	CHECK_EQ(s.p999_ns, 42);
	CHECK_EQ(s.max_ns, 42);
	CHECK(s.mean_ns == 42.0);
	CHECK(s.stdev_ns == 0.0);
}

TEST(stats_percentile_two_samples)
{
	/* Nearest rank: p50 of two is rank ceil(1.0) = 1, the smaller one; p90 is rank 2. */
	const uint64_t v[] = { 20, 10 };
	struct stats_summary s = summary_of(v, 2);

	CHECK_EQ(s.min_ns, 10);
	CHECK_EQ(s.p50_ns, 10);
	CHECK_EQ(s.p90_ns, 20);
	CHECK_EQ(s.p99_ns, 20);
	CHECK_EQ(s.p999_ns, 20);
	CHECK_EQ(s.max_ns, 20);
	CHECK(s.mean_ns == 15.0);
	CHECK(s.stdev_ns == 5.0);
}

TEST(stats_percentile_all_equal)
{
	uint64_t v[500];
	struct stats_summary s;

	for (size_t i = 0; i < 500; i++)
		v[i] = 7000;
	s = summary_of(v, 500);
	CHECK_EQ(s.count, 500);
	CHECK_EQ(s.min_ns, 7000);
	CHECK_EQ(s.p50_ns, 7000);
	CHECK_EQ(s.p99_ns, 7000);
	CHECK_EQ(s.p999_ns, 7000);
	CHECK_EQ(s.max_ns, 7000);
	CHECK(s.mean_ns == 7000.0);
	CHECK(s.stdev_ns == 0.0);
}

TEST(stats_percentile_1000_samples)
{
	uint64_t v[1000];
	uint32_t x = 12345;
	struct stats_summary s;

	/* 1..1000 shuffled (Fisher-Yates, fixed LCG), so sorting is part of what is tested. */
	for (size_t i = 0; i < 1000; i++)
		v[i] = i + 1;
	for (size_t i = 999; i > 0; i--) {
		size_t j;
		uint64_t t;

		x = x * 1103515245u + 12345u;
		j = (x >> 8) % (i + 1);
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	s = summary_of(v, 1000);
	CHECK_EQ(s.min_ns, 1);
	CHECK_EQ(s.p50_ns, 500);
	CHECK_EQ(s.p90_ns, 900);
	CHECK_EQ(s.p99_ns, 990);
	CHECK_EQ(s.p999_ns, 999);
	CHECK_EQ(s.max_ns, 1000);
	CHECK(near(s.mean_ns, 500.5, 1e-9));
	/* Population stdev of 1..n is sqrt((n^2 - 1) / 12). */
	CHECK(near(s.stdev_ns, sqrt((1000.0 * 1000.0 - 1) / 12), 1e-6));
}

TEST(stats_percentile_rank_edges)
{
	uint64_t v[100];

	for (size_t i = 0; i < 100; i++)
		v[i] = (i + 1) * 10;
	CHECK_EQ(stats_percentile(v, 0, 50), 0);
	CHECK_EQ(stats_percentile(v, 100, 0), 10);
	CHECK_EQ(stats_percentile(v, 100, 100), 1000);
	/* Exact ranks that binary floating point would push one up (0.99 * 100 = 99.0000...1). */
	CHECK_EQ(stats_percentile(v, 100, 99), 990);
	CHECK_EQ(stats_percentile(v, 100, 10), 100);
	CHECK_EQ(stats_percentile(v, 100, 1), 10);
	CHECK_EQ(stats_percentile(v, 10, 10), 10);
	CHECK_EQ(stats_percentile(v, 10, 99.9), 100);
	/* Between ranks the next one up is taken: 50.5% of 100 is rank 51. */
	CHECK_EQ(stats_percentile(v, 100, 50.5), 510);
}

TEST(stats_stdev_known)
{
	const uint64_t v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct stats_summary s = summary_of(v, 8);

	CHECK(s.mean_ns == 5.0);
	CHECK(near(s.stdev_ns, 2.0, 1e-12));
}

TEST(stats_stdev_large_offset)
{
	/* A naive sum of squares loses these deviations next to 1e12^2. */
	const uint64_t v[] = { 1000000000000ull, 1000000000001ull, 1000000000002ull };
	struct stats_summary s = summary_of(v, 3);

	CHECK(near(s.mean_ns, 1000000000001.0, 1e-3));
	CHECK(near(s.stdev_ns, sqrt(2.0 / 3.0), 1e-6));
}

TEST(stats_empty_summary)
{
	struct stats_rec r;
	struct stats_summary s;

	CHECK_EQ(stats_rec_init(&r, 4), 0);
	CHECK_EQ(stats_rec_finish(&r, 4), 0);
	CHECK_EQ(stats_summarize(&r, &s), 0);
	CHECK_EQ(s.count, 0);
	CHECK_EQ(s.max_ns, 0);
	CHECK_EQ(s.counts.lost, 4);
	CHECK_EQ(s.counts.sent, 4);
	stats_rec_free(&r);
}

TEST(stats_rec_counters)
{
	struct stats_rec r;
	struct stats_summary s;

	CHECK_EQ(stats_rec_init(&r, 10), 0);
	CHECK_EQ(stats_rec_add(&r, 0, 100, STATS_SAMPLE_VERIFIED), 0);
	CHECK_EQ(stats_rec_add(&r, 1, 300, STATS_SAMPLE_VERIFIED), 0);
	CHECK_EQ(stats_rec_add(&r, 3, 200, STATS_SAMPLE_VERIFIED), 0);
	CHECK_EQ(stats_rec_add(&r, 2, 400, STATS_SAMPLE_VERIFIED), 0);	/* after 3: reorder */
	CHECK_EQ(stats_rec_add(&r, 1, 999, STATS_SAMPLE_VERIFIED), 0);	/* again: duplicate */
	CHECK_EQ(stats_rec_add(&r, 4, 5000, STATS_SAMPLE_CORRUPT), 0);
	CHECK_EQ(stats_rec_add(&r, 10, 1, 0), ERANGE);
	CHECK_EQ(stats_rec_finish(&r, 11), ERANGE);
	CHECK_EQ(stats_rec_finish(&r, 7), 0);	/* 5 and 6 never came back */

	CHECK_EQ(r.n, 7);
	CHECK_EQ(r.counts.sent, 7);
	CHECK_EQ(r.counts.received, 5);
	CHECK_EQ(r.counts.lost, 2);
	CHECK_EQ(r.counts.dup, 1);
	CHECK_EQ(r.counts.reorder, 1);
	CHECK_EQ(r.counts.corrupt, 1);
	CHECK_EQ(r.seq[5], 5);
	CHECK(r.flags[5] & STATS_SAMPLE_LOST);
	CHECK_EQ(r.lat_ns[1], 300);	/* the duplicate did not overwrite the first reply */

	/* Lost and corrupt samples stay out of the latency numbers. */
	CHECK_EQ(stats_summarize(&r, &s), 0);
	CHECK_EQ(s.count, 4);
	CHECK_EQ(s.min_ns, 100);
	CHECK_EQ(s.max_ns, 400);
	CHECK(s.mean_ns == 250.0);
	CHECK_EQ(s.counts.lost, 2);

	stats_rec_reset(&r);
	CHECK_EQ(r.n, 0);
	CHECK_EQ(r.counts.dup, 0);
	CHECK_EQ(stats_rec_add(&r, 1, 50, 0), 0);	/* not a duplicate after a reset */
	CHECK_EQ(r.counts.dup, 0);
	stats_rec_free(&r);
}

TEST(stats_lat_line_format)
{
	static const char header[] =
		" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
		"    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
	/* Where each header field ends: every number must end in the same column. */
	static const size_t field_end[] = { 7, 19, 34, 49, 66, 81, 98, 121, 146 };
	struct stats_summary s = {
		.count = 1000, .min_ns = 1500, .max_ns = 9870, .p50_ns = 2000,
		.mean_ns = 2104.4, .stdev_ns = 300, .p99_ns = 5000, .p999_ns = 9000,
	};
	char line[256];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f);
	CHECK_EQ(stats_lat_header_print(f), 0);
	CHECK_EQ(stats_lat_print(f, 32, &s), 0);
	CHECK_EQ(fclose(f), 0);
	CHECK(strstr(text, header));
	CHECK_EQ(strlen(header), 146);

	CHECK_EQ(stats_lat_format(line, sizeof(line), 32, &s), 0);
	CHECK(strcmp(line, "     32        1000           1.50           9.87             2.00"
			   "           2.10             0.30                   5.00"
			   "                     9.00") == 0);
	CHECK_EQ(strlen(line), strlen(header));
	for (size_t i = 0; i < sizeof(field_end) / sizeof(field_end[0]); i++) {
		CHECK(line[field_end[i] - 1] >= '0' && line[field_end[i] - 1] <= '9');
		CHECK(line[field_end[i]] == ' ' || line[field_end[i]] == '\0');
	}
	CHECK(strstr(text, line));
	CHECK_EQ(stats_lat_format(line, 20, 32, &s), ENOSPC);
	free(text);
}

TEST(stats_bw_line_format)
{
	static const char header[] =
		" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
	struct stats_bw bw;
	char line[256];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	/* 1e6 messages of 32 B in 1 s; the best window did 1000 in 500 us. MB = 2^20 B. */
	CHECK_EQ(stats_bw_compute(&bw, 32, 1000000, 1000000000, 1000, 500000), 0);
	CHECK(near(bw.avg_mb_s, 32e6 / 1048576.0, 1e-9));
	CHECK(near(bw.peak_mb_s, 64e6 / 1048576.0, 1e-9));
	CHECK(near(bw.msg_rate_mpps, 1.0, 1e-12));
	CHECK_EQ(stats_bw_format(line, sizeof(line), &bw), 0);
	CHECK(strcmp(line, "     32         1000000              61.04                 30.52"
			   "        1.000000") == 0);
	CHECK_EQ(strlen(line), strlen(header));

	f = open_memstream(&text, &len);
	CHECK(f);
	CHECK_EQ(stats_bw_header_print(f), 0);
	CHECK_EQ(stats_bw_print(f, &bw), 0);
	CHECK_EQ(stats_rule_print(f), 0);
	CHECK_EQ(fclose(f), 0);
	CHECK(strncmp(text, "--------", 8) == 0);
	CHECK(strstr(text, header));
	CHECK(strstr(text, line));
	free(text);

	/* No window faster than the average: the peak is the average, never below it. */
	CHECK_EQ(stats_bw_compute(&bw, 32, 1000, 1000000, 0, 0), 0);
	CHECK(bw.peak_mb_s == bw.avg_mb_s);
	CHECK_EQ(stats_bw_compute(&bw, 32, 1000, 0, 0, 0), EINVAL);
}

TEST(stats_bw_best_window)
{
	const uint64_t done[] = { 0, 10, 15, 40, 41, 42, 100 };
	uint64_t msgs, ns;

	CHECK_EQ(stats_bw_best_window(done, 7, 2, &msgs, &ns), 0);
	CHECK_EQ(msgs, 2);
	CHECK_EQ(ns, 2);
	CHECK_EQ(stats_bw_best_window(done, 7, 6, &msgs, &ns), 0);
	CHECK_EQ(ns, 100);
	CHECK_EQ(stats_bw_best_window(done, 7, 0, &msgs, &ns), EINVAL);
	CHECK_EQ(stats_bw_best_window(done, 7, 7, &msgs, &ns), EINVAL);
}

TEST(stats_hist_fixed_bins)
{
	struct stats_hist h;

	CHECK_EQ(stats_hist_init_fixed(&h, 100, 10, 5), 0);
	CHECK_EQ(h.edge[0], 100);
	CHECK_EQ(h.edge[5], 150);
	stats_hist_add(&h, 99);
	stats_hist_add(&h, 100);
	stats_hist_add(&h, 109);
	stats_hist_add(&h, 110);
	stats_hist_add(&h, 149);
	stats_hist_add(&h, 150);
	CHECK_EQ(h.under, 1);
	CHECK_EQ(h.count[0], 2);
	CHECK_EQ(h.count[1], 1);
	CHECK_EQ(h.count[2], 0);
	CHECK_EQ(h.count[4], 1);
	CHECK_EQ(h.over, 1);
	CHECK_EQ(h.total, 6);
	stats_hist_free(&h);

	CHECK_EQ(stats_hist_init_fixed(&h, 0, 0, 5), EINVAL);
	CHECK_EQ(stats_hist_init_fixed(&h, 0, 10, 0), EINVAL);
	CHECK_EQ(stats_hist_init_fixed(&h, UINT64_MAX - 10, 10, 5), EOVERFLOW);
}

TEST(stats_hist_log_bins)
{
	struct stats_hist h;

	CHECK_EQ(stats_hist_init_log(&h, 1000, 100000, 4), 0);
	CHECK_EQ(h.edge[0], 1000);
	CHECK_EQ(h.edge[1], 3162);
	CHECK_EQ(h.edge[2], 10000);
	CHECK_EQ(h.edge[3], 31623);
	CHECK_EQ(h.edge[4], 100000);
	stats_hist_add(&h, 9999);
	stats_hist_add(&h, 10000);
	stats_hist_add(&h, 99999);
	stats_hist_add(&h, 100000);
	CHECK_EQ(h.count[1], 1);
	CHECK_EQ(h.count[2], 1);
	CHECK_EQ(h.count[3], 1);
	CHECK_EQ(h.over, 1);
	stats_hist_free(&h);

	/* Narrower than one ns per bin: edges stay strictly increasing, 1 ns apart. */
	CHECK_EQ(stats_hist_init_log(&h, 10, 12, 5), 0);
	for (size_t i = 0; i < 5; i++)
		CHECK(h.edge[i + 1] > h.edge[i]);
	stats_hist_add(&h, 12);
	CHECK_EQ(h.over, 0);
	stats_hist_free(&h);

	CHECK_EQ(stats_hist_init_log(&h, 0, 100, 4), EINVAL);
	CHECK_EQ(stats_hist_init_log(&h, 100, 100, 4), EINVAL);
	CHECK_EQ(stats_hist_init_log(&h, 1, 100, 0), EINVAL);
}

/* A stall every 125 messages that now and then slows the next one too, over noise: the
 * spacing search finds the period. */
TEST(stats_tail_spacing_finds_a_period)
{
	struct stats_rec r;
	struct stats_tail_spacing t;
	uint64_t x = 12345;

	CHECK_EQ(stats_rec_init(&r, 20000), 0);
	for (uint64_t k = 0; k < 20000; k++) {
		uint64_t lat = 1000 + (x = x * 6364136223846793005ull + 1442695040888963407ull) % 97;

		if (k % 125 == 7 || k % 1000 == 8)
			lat = 9000;	/* the stall, and now and then its neighbour */
		CHECK_EQ(stats_rec_add(&r, k, lat, STATS_SAMPLE_VERIFIED), 0);
	}
	CHECK_EQ(stats_rec_finish(&r, 20000), 0);
	CHECK_EQ(stats_tail_spacing(&r, &t), 0);
	/* p99 is the 19800th of 20000: noise; the 160 stalls and 20 neighbours are above it */
	CHECK(t.threshold_ns >= 1000 && t.threshold_ns < 1097);
	CHECK_EQ(t.slow, 180);
	/* 179 distances: 20 of 1 (left out), 20 of 124 (from a neighbour), 139 of 125 */
	CHECK_EQ(t.gap, 125);
	CHECK_EQ(t.at_gap, 159);

	/* No period: noise alone spreads the slow ones over many distances. */
	stats_rec_reset(&r);
	for (uint64_t k = 0; k < 20000; k++)
		CHECK_EQ(stats_rec_add(&r, k, 1000 + (x = x * 6364136223846793005ull +
						       1442695040888963407ull) % 100003,
				       STATS_SAMPLE_VERIFIED), 0);
	CHECK_EQ(stats_rec_finish(&r, 20000), 0);
	CHECK_EQ(stats_tail_spacing(&r, &t), 0);
	CHECK(t.slow >= 190 && t.slow <= 200);
	CHECK(t.at_gap < t.slow / 10);
	stats_rec_free(&r);
}
