// SPDX-License-Identifier: MIT
/*
 * gpunic bench pcie: what crossing PCIe costs this GPU, the unit every GPU series is made of.
 * One warp's read of host-pinned memory by size and by the lines it spans (idle, and with a
 * CPU thread storing to those lines), then whether the CPU can store into GPU memory without
 * the gdrdrv module (each way tried, with its error). The measurements are
 * gpunic_gpu_read_cost() and gpunic_gpu_write_paths() (src/gpu/pcie.cu).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gpunic/gpu.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: gpunic bench pcie [--gpu N] [--count N]\n"
		     "\n"
		     "What one read of host-pinned memory by one warp costs this GPU, timed on\n"
		     "the GPU from issue to the data being usable: by size (4 bytes to 512, one\n"
		     "coalesced access), split over two lines 4 KiB apart (a CQE and its slot),\n"
		     "and with a CPU thread storing to the lines meanwhile. Then each way the\n"
		     "driver offers for CPU stores into GPU memory without gdrdrv, and its error.\n"
		     "\n"
		     "  --gpu N              CUDA device (default 0)\n"
		     "  --count N            reads per row (default 20000)\n"
		     CLI_COMMON_USAGE);
	cli_usage_exit(out, "measured", "no GPU, or a CUDA call failed", NULL);
}

/* The rows: a size alone, the same split over two lines, the CPU storing to them. */
static const struct { uint32_t bytes, lines; } rows[] = {
	{ 4, 1 }, { 16, 1 }, { 64, 1 }, { 128, 1 }, { 256, 1 }, { 512, 1 },
	{ 128, 2 }, { 256, 2 },
};

int bench_pcie(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gpu", required_argument, NULL, 'g' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cli_getopt g = { .cmd = "bench pcie", .shortopts = ":hv", .longopts = opts,
				.usage = usage };
	struct gpunic_write_path wp[GPUNIC_WRITE_PATHS_MAX];
	struct gpunic_gpu_info info;
	uint64_t gpu = 0, count = 20000;
	size_t nwp = 0;
	int c, err;

	while ((c = cli_getopt_next(&g, argc, argv))) {
		switch (c) {
		case 'g':
			if (cli_num(g.cmd, "--gpu", optarg, 0, 63, &gpu))
				return 2;
			break;
		case 'n':
			if (cli_num(g.cmd, "--count", optarg, 100, 10000000, &count))
				return 2;
			break;
		}
	}
	if (g.exit >= 0)
		return g.exit;
	if (optind < argc)
		return cli_extra_arg(g.cmd, argv[optind]);
	if (gpunic_gpu_probe((int)gpu, &info)) {
		fprintf(stderr, "gpunic bench pcie: %s\n", info.reason);
		return 1;
	}
	printf("GPU %d: %s; reads of host-pinned memory by one warp, %llu each, ns\n", (int)gpu,
	       info.name, (unsigned long long)count);
	printf("  %-6s %-6s | %8s %8s %8s | %8s %8s %8s\n", "bytes", "lines", "min", "p50", "p99",
	       "min", "p50", "p99");
	printf("  %-6s %-6s | %26s | %26s\n", "", "", "lines idle", "a CPU storing to them");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gpunic_read_cost r[2];

		for (int w = 0; w < 2; w++) {
			struct gpunic_read_cost_opts o = {
				.bytes = rows[i].bytes,
				.lines = rows[i].lines,
				.iters = (uint32_t)count,
				.cpu_writes = w == 1,
			};

			err = gpunic_gpu_read_cost((int)gpu, &o, &r[w]);
			if (err) {
				fprintf(stderr, "gpunic bench pcie: %u bytes: %s\n", rows[i].bytes,
					strerror(err));
				return 1;
			}
		}
		printf("  %-6u %-6u | %8llu %8llu %8llu | %8llu %8llu %8llu\n", rows[i].bytes,
		       rows[i].lines, (unsigned long long)r[0].min_ns,
		       (unsigned long long)r[0].p50_ns, (unsigned long long)r[0].p99_ns,
		       (unsigned long long)r[1].min_ns, (unsigned long long)r[1].p50_ns,
		       (unsigned long long)r[1].p99_ns);
	}
	printf("\nCPU stores into GPU memory without gdrdrv:\n");
	err = gpunic_gpu_write_paths((int)gpu, wp, GPUNIC_WRITE_PATHS_MAX, &nwp);
	if (err) {
		fprintf(stderr, "gpunic bench pcie: %s\n", strerror(err));
		return 1;
	}
	for (size_t i = 0; i < nwp; i++)
		printf("  %-11s %-4s %s\n", wp[i].name, wp[i].works ? "yes" : "no", wp[i].detail);
	return 0;
}
