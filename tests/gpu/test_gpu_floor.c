// SPDX-License-Identifier: MIT
/*
 * The CPU<->GPU floors and the PCIe probes on a GPU (src/gpu/floor.cu, src/gpu/pcie.cu): every
 * poller count and both poll loops complete every round with an answer for that round (the
 * CPU side waits for the exact round and, for the line, every word of it), and bad arguments
 * are refused before anything runs. Skipped (77) without a GPU; the arguments' checks also run
 * in CI on a build with CUDA and no GPU.
 */
#include <errno.h>
#include <string.h>

#include "gpunic/gpu.h"
#include "harness.h"

#define ROUNDS 2000u

static void need_gpu(void)
{
	struct gpunic_gpu_info info;

	if (gpunic_gpu_probe(0, &info))
		SKIP("%s", info.reason);
}

static void floor_all_pollers(enum gpunic_floor_kind kind, bool stop_every_poll)
{
	static uint64_t rtt[ROUNDS];

	need_gpu();
	for (uint32_t k = 1; k <= GPUNIC_FLOOR_POLLERS_MAX; k++) {
		struct gpunic_floor_opts o = { .kind = kind, .pollers = k,
					       .stop_every_poll = stop_every_poll };
		struct gpunic_floor_result r;

		memset(rtt, 0, sizeof(rtt));
		CHECK_EQ(gpunic_gpu_floor_run(0, &o, ROUNDS, 100, rtt, &r), 0);
		CHECK_EQ(r.pollers, k);
		CHECK_EQ(r.done, ROUNDS);
		/* the kernel timed a read to stagger its pollers by */
		CHECK(k == 1 ? r.stagger_ns == 0 : r.stagger_ns > 0);
		for (uint32_t i = 0; i < ROUNDS; i++)
			CHECK(rtt[i] > 0);
	}
}

TEST(floor_flag_pollers)
{
	floor_all_pollers(GPUNIC_FLOOR_FLAG, false);
}

TEST(floor_line_pollers)
{
	floor_all_pollers(GPUNIC_FLOOR_LINE, false);
}

TEST(floor_acqrel_pollers)
{
	floor_all_pollers(GPUNIC_FLOOR_FLAG_ACQREL, false);
}

TEST(floor_stop_every_poll)
{
	floor_all_pollers(GPUNIC_FLOOR_FLAG, true);
	floor_all_pollers(GPUNIC_FLOOR_LINE, true);
}

static int stop_calls;

static bool stop_at_third_look(void)
{
	return ++stop_calls == 3;
}

/* Asked every 256 round trips, the third answer stops it: 767 done, 100 of them warm-up. */
TEST(floor_stop_ends_the_run)
{
	struct gpunic_floor_opts o = { .kind = GPUNIC_FLOOR_LINE, .pollers = 2,
				       .stop = stop_at_third_look };
	struct gpunic_floor_result r;
	static uint64_t rtt[ROUNDS];

	need_gpu();
	CHECK_EQ(gpunic_gpu_floor_run(0, &o, ROUNDS, 100, rtt, &r), 0);
	CHECK_EQ(stop_calls, 3);
	CHECK_EQ(r.done, 767 - 100);
	for (uint32_t i = 0; i < r.done; i++)
		CHECK(rtt[i] > 0);
}

/* Refused before the GPU is touched: also where the build has CUDA and the machine no GPU. */
TEST(floor_bad_args)
{
	struct gpunic_floor_opts o = { .kind = GPUNIC_FLOOR_FLAG, .pollers = 1 };
	uint64_t rtt[4];

	if (gpunic_gpu_floor_run(0, NULL, 4, 0, rtt, NULL) == ENODEV)
		SKIP("built without CUDA");
	CHECK_EQ(gpunic_gpu_floor_run(0, NULL, 4, 0, rtt, NULL), EINVAL);
	CHECK_EQ(gpunic_gpu_floor_run(0, &o, 4, 0, NULL, NULL), EINVAL);
	o.pollers = GPUNIC_FLOOR_POLLERS_MAX + 1;
	CHECK_EQ(gpunic_gpu_floor_run(0, &o, 4, 0, rtt, NULL), EINVAL);
	o.pollers = 1;
	o.kind = (enum gpunic_floor_kind)7;
	CHECK_EQ(gpunic_gpu_floor_run(0, &o, 4, 0, rtt, NULL), EINVAL);
}

TEST(read_cost_sizes)
{
	static const uint32_t sizes[][2] = { { 4, 1 }, { 64, 1 }, { 256, 1 }, { 512, 1 },
					     { 128, 2 } };

	need_gpu();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int w = 0; w < 2; w++) {
			struct gpunic_read_cost_opts o = { .bytes = sizes[i][0],
							   .lines = sizes[i][1], .iters = 400,
							   .cpu_writes = w == 1 };
			struct gpunic_read_cost r;

			CHECK_EQ(gpunic_gpu_read_cost(0, &o, &r), 0);
			CHECK_EQ(r.count, 350);
			CHECK(r.min_ns > 0 && r.min_ns <= r.p50_ns && r.p50_ns <= r.p99_ns);
		}
	}
}

TEST(read_cost_bad_args)
{
	struct gpunic_read_cost_opts o = { .bytes = 64, .lines = 1, .iters = 10 };
	struct gpunic_read_cost r;

	if (gpunic_gpu_read_cost(0, NULL, &r) == ENODEV)
		SKIP("built without CUDA");
	o.bytes = 48;	/* not 4 or a multiple of 16 * lines */
	o.lines = 2;
	CHECK_EQ(gpunic_gpu_read_cost(0, &o, &r), EINVAL);
	o.bytes = 1024;
	o.lines = 1;
	CHECK_EQ(gpunic_gpu_read_cost(0, &o, &r), EINVAL);
	o.bytes = 4;
	o.lines = 2;
	CHECK_EQ(gpunic_gpu_read_cost(0, &o, &r), EINVAL);
	o.lines = 3;
	o.bytes = 96;
	CHECK_EQ(gpunic_gpu_read_cost(0, &o, &r), EINVAL);
	o.lines = 1;
	o.iters = 0;
	CHECK_EQ(gpunic_gpu_read_cost(0, &o, &r), EINVAL);
}

/* Every way is tried and says what it met, whether or not one works. */
TEST(write_paths_each_reported)
{
	struct gpunic_write_path p[GPUNIC_WRITE_PATHS_MAX];
	size_t n = 0;

	need_gpu();
	CHECK_EQ(gpunic_gpu_write_paths(0, p, GPUNIC_WRITE_PATHS_MAX, &n), 0);
	CHECK_EQ(n, GPUNIC_WRITE_PATHS_MAX);
	for (size_t i = 0; i < n; i++)
		CHECK(p[i].name && *p[i].name && p[i].detail[0]);
	CHECK_EQ(gpunic_gpu_write_paths(0, p, 2, &n), 0);
	CHECK_EQ(n, 2);
}
