// SPDX-License-Identifier: MIT
/*
 * gpunic doctor: check and explain, on the machine at hand, what gpunic can run: the GPU and
 * its driver, GDRCopy (with a sanity suite in the spirit of gdrcopy_sanity), the NIC handler
 * modes, the memory placements and the links. The exit status says whether the setup the flags
 * ask for can work (DESIGN.md pieces 7-9).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "commands.h"
#include "doctor_report.h"
#include "gpunic/log.h"
#include "gpunic/parse.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic doctor [--json] [--executor gpu|cpu]\n"
		"                     [--handler gpu-db|gpu-bf|cpu-proxy|auto]\n"
		"                     [--placement host|gpu|gpu-cpu|cpu-gpu] [--link SPEC]\n"
		"                     [--gpu N] [-v] [--quiet]\n"
		"\n"
		"Check what gpunic can run on this machine and explain why: GPU, driver and\n"
		"CUDA runtime; GDRCopy (library, /dev/gdrdrv, versions, and a sanity suite:\n"
		"pin/map/unmap/unpin, aligned and unaligned copies both ways, fork, invalid\n"
		"calls); NIC handler modes and what AUTO picks; memory placements (a small\n"
		"buffer of each is allocated); links (udp port 4791, dgram, shm, raw sockets).\n"
		"\n"
		"  --json             everything as one JSON object on stdout\n"
		"  --executor E       the data path runs on the gpu or the cpu (default cpu)\n"
		"  --handler H        NIC handler mode: gpu-db, gpu-bf, cpu-proxy or auto (default\n"
		"                     auto)\n"
		"  --placement P      a memory placement the setup needs (default: none)\n"
		"  --link SPEC        a link the setup opens: udp:IP[:PORT],\n"
		"                     dgram:LOCALIP:PORT,REMOTEIP:PORT or shm:NAME,a|b[,create]\n"
		"  --gpu N            CUDA device ordinal, 0..255 (default 0; --device N is the\n"
		"                     old name)\n"
		"  -v, --verbose      library messages at info level on stderr (again: debug)\n"
		"      --quiet        library errors only\n"
		"  -h, --help         show this help\n"
		"\n"
		"Environment: GPUNIC_GDRCOPY=0, GPUNIC_GDRAPI_LIB, GPUNIC_CUDA_LIB,\n"
		"GPUNIC_LOG_LEVEL (see docs/MEMORY.md).\n");
	cli_usage_exit(out, "the requested setup can work (perhaps with a fallback)",
		       "it cannot (the output names the likely cause)", NULL);
}

static bool parse_placement(const char *s, int *p)
{
	static const struct {
		const char *name;
		enum gpunic_mem_placement p;
	} names[] = {
		{ "host", GPUNIC_MEM_HOST },	   { "gpu", GPUNIC_MEM_GPU },
		{ "gpu-cpu", GPUNIC_MEM_GPU_CPU }, { "gpu_cpu", GPUNIC_MEM_GPU_CPU },
		{ "cpu-gpu", GPUNIC_MEM_CPU_GPU }, { "cpu_gpu", GPUNIC_MEM_CPU_GPU },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*p = (int)names[i].p;
			return true;
		}
	return false;
}

static bool parse_handler(const char *s, enum doc_handler *h)
{
	if (strcasecmp(s, "auto") == 0)
		*h = DOC_HANDLER_AUTO;
	else if (strcasecmp(s, "gpu-db") == 0 || strcasecmp(s, "gpu_db") == 0)
		*h = DOC_HANDLER_GPU_DB;
	else if (strcasecmp(s, "cpu-proxy") == 0 || strcasecmp(s, "cpu_proxy") == 0)
		*h = DOC_HANDLER_CPU_PROXY;
	else if (strcasecmp(s, "gpu-bf") == 0 || strcasecmp(s, "gpu_bf") == 0)
		*h = DOC_HANDLER_GPU_BF;
	else
		return false;
	return true;
}

static bool link_spec_known(const char *s)
{
	return strncmp(s, "udp:", 4) == 0 || strncmp(s, "dgram:", 6) == 0 ||
	       strncmp(s, "shm:", 4) == 0;
}

static int bad(const char *what, const char *value, const char *want)
{
	return cli_bad_value("doctor", what, value, want);
}

/* Return: -1 to go on, otherwise the exit status (0 for --help, 2 for bad usage). */
static int parse_args(int argc, char **argv, struct doc_request *req, bool *json)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "executor", required_argument, NULL, 'e' },
		{ "handler", required_argument, NULL, 'H' },
		{ "placement", required_argument, NULL, 'p' },
		{ "link", required_argument, NULL, 'l' },
		{ "gpu", required_argument, NULL, 'd' },
		{ "device", required_argument, NULL, 'd' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_getopt g = { .cmd = "doctor", .shortopts = ":hv", .longopts = longopts,
				.usage = usage };
	uint64_t v;
	int c;

	memset(req, 0, sizeof(*req));
	req->executor = DOC_EXEC_CPU;
	req->handler = DOC_HANDLER_AUTO;
	req->placement = -1;
	*json = false;
	while ((c = cli_getopt_next(&g, argc, argv))) {
		switch (c) {
		case 'j':
			*json = true;
			break;
		case 'e':
			if (strcasecmp(optarg, "cpu") == 0)
				req->executor = DOC_EXEC_CPU;
			else if (strcasecmp(optarg, "gpu") == 0)
				req->executor = DOC_EXEC_GPU;
			else
				return bad("--executor", optarg, "gpu or cpu");
			break;
		case 'H':
			if (!parse_handler(optarg, &req->handler))
				return bad("--handler", optarg, "gpu-db, gpu-bf, cpu-proxy or auto");
			break;
		case 'p':
			if (!parse_placement(optarg, &req->placement))
				return bad("--placement", optarg, "host, gpu, gpu-cpu or cpu-gpu");
			break;
		case 'l':
			if (!link_spec_known(optarg))
				return bad("--link", optarg, "udp:..., dgram:... or shm:...");
			req->link = optarg;
			break;
		case 'd':
			if (gpunic_parse_uint(optarg, 0, 255, &v))
				return bad("--gpu", optarg, "a CUDA device ordinal, 0..255");
			req->cuda_device = (int)v;
			break;
		}
	}
	if (g.exit >= 0)
		return g.exit;
	if (optind < argc)
		return cli_extra_arg("doctor", argv[optind]);
	return -1;
}

int cmd_doctor(int argc, char **argv)
{
	struct doc_request req;
	struct doc_report *report;
	struct doc_facts *facts;
	bool json;
	int ret;

	ret = parse_args(argc, argv, &req, &json);
	if (ret >= 0)
		return ret;
	facts = calloc(1, sizeof(*facts));
	report = calloc(1, sizeof(*report));
	if (!facts || !report) {
		fprintf(stderr, "gpunic doctor: out of memory\n");
		free(facts);
		free(report);
		return 1;
	}
	doc_probe(&req, facts);
	doc_build(&req, facts, report);
	if (json)
		doc_print_json(stdout, &req, facts, report);
	else
		doc_print_text(stdout, &req, facts, report);
	fflush(stdout);
	ret = report->ok ? 0 : 1;
	free(facts);
	free(report);
	return ret;
}
