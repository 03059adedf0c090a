// SPDX-License-Identifier: MIT
/*
 * The host-interruption probe (src/measure/hostnoise.h): its statistics from known gaps, the
 * kernel's CPU lists, and a live watch whose bookkeeping must add up. What the host does is
 * never asserted: a loaded machine has more gaps, not a failing test.
 */
#include <errno.h>
#include <sched.h>

#include "apps_test.h"
#include "hostnoise.h"
#include "timing.h"

#define MS 1000000ull

TEST(hostnoise_period_of_a_tick)
{
	/* a 1 ms tick of 2-4 us, and two other interruptions in between */
	uint64_t start[12], len[12], stolen = 0;
	struct hostnoise_cpu h = { .cpu = 7 };
	size_t n = 0;

	for (int k = 0; k < 10; k++) {
		start[n] = 5000 + k * MS;
		len[n] = 2000 + (k % 3) * 1000;
		stolen += len[n++];
		if (k == 3 || k == 6) {
			start[n] = 5000 + k * MS + 300000;
			len[n] = 50000;
			stolen += len[n++];
		}
	}
	CHECK_EQ(n, 12);
	CHECK_EQ(hostnoise_summarise(start, len, n, n, stolen, 10 * MS, &h), 0);
	CHECK_EQ(h.cpu, 7);
	CHECK_EQ(h.gaps, 12);
	CHECK_EQ(h.span_ns, 10 * MS);
	CHECK_EQ(h.stolen_ns, stolen);
	CHECK_EQ(h.len_max_ns, 50000);
	CHECK_EQ(h.len_p50_ns, 3000);
	CHECK_EQ(h.period_ns, MS);
	/* nine spacings of 1 ms less the two split by the extra gaps */
	CHECK_EQ(h.at_period, 7);
	/* its input is left as it was */
	CHECK_EQ(len[0], 2000);
	CHECK_EQ(start[1], 5000 + MS);
}

TEST(hostnoise_few_gaps)
{
	uint64_t start[2] = { 10, 20 }, len[2] = { 1500, 2500 };
	struct hostnoise_cpu h;

	memset(&h, 0xff, sizeof(h));
	CHECK_EQ(hostnoise_summarise(start, len, 0, 0, 0, MS, &h), 0);
	CHECK_EQ(h.gaps, 0);
	CHECK_EQ(h.len_max_ns, 0);
	CHECK_EQ(h.period_ns, 0);
	/* two gaps have one spacing: no period; more were seen than kept */
	CHECK_EQ(hostnoise_summarise(start, len, 2, 9000, 4000, MS, &h), 0);
	CHECK_EQ(h.gaps, 9000);
	CHECK_EQ(h.len_p50_ns, 1500);
	CHECK_EQ(h.len_max_ns, 2500);
	CHECK_EQ(h.period_ns, 0);
	CHECK_EQ(h.at_period, 0);
	/* more kept than seen, and starts out of order, are refused */
	CHECK_EQ(hostnoise_summarise(start, len, 2, 1, 0, MS, &h), EINVAL);
	start[1] = 5;
	CHECK_EQ(hostnoise_summarise(start, len, 2, 2, 0, MS, &h), EINVAL);
}

TEST(hostnoise_cpu_lists)
{
	CHECK(hostnoise_list_has("0-3,8", 0));
	CHECK(hostnoise_list_has("0-3,8", 3));
	CHECK(!hostnoise_list_has("0-3,8", 4));
	CHECK(hostnoise_list_has("0-3,8", 8));
	CHECK(!hostnoise_list_has("0-3,8", 9));
	CHECK(hostnoise_list_has("5", 5));
	CHECK(hostnoise_list_has("1,3-15", 15));
	CHECK(!hostnoise_list_has("", 0));
	CHECK(!hostnoise_list_has("(null)", 0));
	CHECK(!hostnoise_list_has("3-", 3));
	CHECK(!hostnoise_list_has("x-4", 3));
	CHECK(!hostnoise_list_has("2-4", -1));
	CHECK(!hostnoise_list_has(NULL, 0));
}

/* @text into @path, replacing what was there. */
static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f);
	CHECK(fputs(text, f) >= 0);
	CHECK_EQ(fclose(f), 0);
}

TEST(hostnoise_kernel_list_file)
{
	const char *dir = tmpdir_make();
	char path[PATH_MAX], buf[64];

	path_join(path, dir, "nohz_full");
	put_file(path, "(null)\n");
	CHECK_EQ(hostnoise_kernel_list(path, buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "") == 0);
	put_file(path, "2-15\n");
	CHECK_EQ(hostnoise_kernel_list(path, buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "2-15") == 0);
	put_file(path, "\n");
	CHECK_EQ(hostnoise_kernel_list(path, buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "") == 0);
	path_join(path, dir, "missing");
	CHECK_EQ(hostnoise_kernel_list(path, buf, sizeof(buf)), ENOENT);
	CHECK(strcmp(buf, "") == 0);
}

TEST(hostnoise_live_watch_adds_up)
{
	struct hostnoise_cpu h[2];
	int cpus[2], outside = -1;

	CHECK_EQ(timing_init(), 0);
	CHECK_EQ(timing_cpu_nth(0, &cpus[0]), 0);
	CHECK_EQ(hostnoise_measure(cpus, 1, 20 * MS, h), 0);
	CHECK_EQ(h[0].err, 0);
	CHECK_EQ(h[0].cpu, cpus[0]);
	CHECK(h[0].span_ns >= 20 * MS);
	CHECK(h[0].stolen_ns <= h[0].span_ns);
	CHECK(h[0].stolen_ns >= h[0].gaps * HOSTNOISE_GAP_NS);
	CHECK(h[0].at_period <= h[0].gaps);
	if (h[0].gaps)
		CHECK(h[0].len_max_ns >= h[0].len_p50_ns && h[0].len_p50_ns >= HOSTNOISE_GAP_NS);
	/* a CPU the process may not use is reported, and the other is still watched */
	for (int c = 0; c < CPU_SETSIZE && outside < 0; c++)
		if (!timing_cpu_allowed(c))
			outside = c;
	if (outside >= 0) {
		cpus[1] = outside;
		CHECK_EQ(hostnoise_measure(cpus, 2, 5 * MS, h), 0);
		CHECK_EQ(h[0].err, 0);
		CHECK(h[0].span_ns >= 5 * MS);
		CHECK_EQ(h[1].err, EINVAL);
		CHECK_EQ(h[1].cpu, outside);
		CHECK_EQ(h[1].gaps, 0);
	}
	CHECK_EQ(hostnoise_measure(cpus, 0, MS, h), EINVAL);
	CHECK_EQ(hostnoise_measure(cpus, 1, 0, h), EINVAL);
	CHECK_EQ(hostnoise_measure(cpus, 1, HOSTNOISE_MAX_SPAN_NS + 1, h), EINVAL);
}
