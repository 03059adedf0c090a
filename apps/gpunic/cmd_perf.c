// SPDX-License-Identifier: MIT
/*
 * gpunic perf TEST [HOST]: perftest-style latency and bandwidth tests, GPU- or CPU-initiated.
 * Without HOST this side is the server; with it, the client (as ib_write_lat and friends).
 * Either side may be a real perftest tool: the out-of-band exchange is perftest's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gpunic/endpoint.h"
#include "gpunic/gpu.h"
#include "outfile.h"
#include "perf_pair.h"
#include "perf_run.h"

#define PERF_USAGE_EXIT 2

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpunic perf TEST [HOST] [options]\n"
		"  TEST: send_lat write_lat read_lat send_bw write_bw read_bw put_bw\n"
		"        atomic_lat atomic_bw\n"
		"  without HOST: server (waits for the client); with HOST: client, as perftest\n"
		"\n"
		"  -c, --connection RC|UC    transport (default RC; read, atomic tests need RC)\n"
		"  -s, --size BYTES          message size (default 2 for *_lat, 65536 for *_bw;\n"
		"                            atomics: 8 only)\n"
		"  -A, --atomic_type CMP_AND_SWAP|FETCH_AND_ADD   atomic tests' operation\n"
		"                            (default FETCH_AND_ADD, as perftest)\n"
		"  -a, --all                 sweep sizes 2 .. 2^23 (capped by --max-size)\n"
		"      --max-size BYTES      largest size of a sweep (default 8388608)\n"
		"  -n, --iters N             iterations (default 1000 for *_lat, 5000 for *_bw)\n"
		"  -m, --mtu BYTES           path MTU 256|512|1024|2048|4096 (default: link's)\n"
		"  -p, --oob-port PORT       TCP port of the out-of-band exchange (default 18515)\n"
		"      --link SPEC           udp:IP[:PORT] | shm:NAME,a|b[,create] |\n"
		"                            dgram:LOCALIP:PORT,REMOTEIP:PORT\n"
		"                            (default: udp on --ip)\n"
		"      --ip A.B.C.D          this side's RoCE address (default: the address the\n"
		"                            out-of-band connection uses)\n"
		"      --mac MAC             this side's MAC (default 02:00 + its IPv4 address)\n"
		"      --peer-mac MAC        a non-gpunic peer's MAC on shm/dgram links\n"
		"                            (default 02:00 + its IPv4 address)\n"
		"      --executor gpu|cpu    who posts: a CUDA kernel or host threads\n"
		"                            (default gpu when a GPU exists)\n"
		"      --handler gpu-db|gpu-bf|cpu-proxy|auto   how posts reach the NIC (default\n"
		"                                        auto: gpu-bf)\n"
		"      --gpu N               CUDA device (default 0)\n"
		"      --pair                run the server too, in this process on its own\n"
		"                            softnic over a private shm cable (no HOST)\n"
		"      --peer-executor gpu|cpu   --pair: the server's executor (default: ours)\n"
		"      --peer-gpu N          --pair: the server's CUDA device (default: --gpu)\n"
		"  -t, --tx-depth N          bandwidth: operations in flight (default 128)\n"
		"      --threads N           put_bw: posting threads (default 4 cpu, 128 gpu)\n"
		"      --check-threads N     send_bw server, read_bw client: threads that help\n"
		"                            check each message (default 0 cpu, %u gpu)\n"
		"      --engine-cpu N        pin the NIC engine thread (default: unpinned)\n"
		"      --exec-cpu N          pin CPU executor threads from CPU N on\n"
		"      --timeout SEC         connection wait and no-progress limit (default 60)\n"
		"      --json                one JSON object with the same numbers\n"
		"  -h, --help\n", PERF_GPU_CHECK_THREADS);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!s || !*s || *s == '-' || *s == '+')
		return EINVAL;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end || x < min || x > max)
		return EINVAL;
	*v = x;
	return 0;
}

static int parse_mtu(const char *s, int *mtu)
{
	uint64_t v;

	if (parse_u64(s, 256, 4096, &v))
		return EINVAL;
	for (int m = GPUNIC_MTU_256; m <= GPUNIC_MTU_4096; m++) {
		if (gpunic_mtu_bytes((enum gpunic_mtu)m) == v) {
			*mtu = m;
			return 0;
		}
	}
	return EINVAL;
}

enum {
	OPT_MAX_SIZE = 256,
	OPT_LINK,
	OPT_IP,
	OPT_PEER_MAC,
	OPT_MAC,
	OPT_EXECUTOR,
	OPT_HANDLER,
	OPT_GPU,
	OPT_THREADS,
	OPT_ENGINE_CPU,
	OPT_EXEC_CPU,
	OPT_TIMEOUT,
	OPT_JSON,
	OPT_PAIR,
	OPT_PEER_EXECUTOR,
	OPT_PEER_GPU,
	OPT_CHECK_THREADS,
};

static const struct option perf_opts[] = {
	{ "connection", required_argument, NULL, 'c' },
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "iters", required_argument, NULL, 'n' },
	{ "mtu", required_argument, NULL, 'm' },
	{ "oob-port", required_argument, NULL, 'p' },
	{ "link", required_argument, NULL, OPT_LINK },
	{ "ip", required_argument, NULL, OPT_IP },
	{ "peer-mac", required_argument, NULL, OPT_PEER_MAC },
	{ "mac", required_argument, NULL, OPT_MAC },
	{ "executor", required_argument, NULL, OPT_EXECUTOR },
	{ "handler", required_argument, NULL, OPT_HANDLER },
	{ "gpu", required_argument, NULL, OPT_GPU },
	{ "tx-depth", required_argument, NULL, 't' },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "engine-cpu", required_argument, NULL, OPT_ENGINE_CPU },
	{ "exec-cpu", required_argument, NULL, OPT_EXEC_CPU },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "pair", no_argument, NULL, OPT_PAIR },
	{ "peer-executor", required_argument, NULL, OPT_PEER_EXECUTOR },
	{ "peer-gpu", required_argument, NULL, OPT_PEER_GPU },
	{ "check-threads", required_argument, NULL, OPT_CHECK_THREADS },
	{ "atomic_type", required_argument, NULL, 'A' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct perf_opts_seen {
	bool size, iters, executor, threads, json, port, check_threads, atomic_type;
	bool addressing;		/* --link, --ip, --mac or --peer-mac */
	/* --pair: the server's side */
	bool pair, peer_executor, peer_gpu_exec, peer_gpu_set;
	int peer_gpu;
};

static int bad_flag(const char *what, const char *value)
{
	fprintf(stderr, "gpunic perf: bad %s '%s' (gpunic perf --help)\n", what, value);
	return PERF_USAGE_EXIT;
}

/* Return: 0, PERF_USAGE_EXIT, or -1 for --help (exit 0). */
static int parse_args(int argc, char **argv, struct perf_cfg *cfg, struct perf_opts_seen *seen)
{
	uint64_t v;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:s:an:m:p:t:A:h", perf_opts, NULL)) != -1) {
		switch (c) {
		case 'A':
			if (strcmp(optarg, "CMP_AND_SWAP") == 0)
				cfg->atomic_cas = true;
			else if (strcmp(optarg, "FETCH_AND_ADD") == 0)
				cfg->atomic_cas = false;
			else
				return bad_flag("atomic type (CMP_AND_SWAP or FETCH_AND_ADD)",
						optarg);
			seen->atomic_type = true;
			break;
		case 'c':
			if (strcmp(optarg, "RC") == 0 || strcmp(optarg, "rc") == 0)
				cfg->qp_type = GPUNIC_QPT_RC;
			else if (strcmp(optarg, "UC") == 0 || strcmp(optarg, "uc") == 0)
				cfg->qp_type = GPUNIC_QPT_UC;
			else
				return bad_flag("connection (RC or UC)", optarg);
			break;
		case 's':
			if (parse_u64(optarg, 1, PERF_MAX_SIZE, &v))
				return bad_flag("size (1 .. 8388608 bytes)", optarg);
			cfg->size = (uint32_t)v;
			seen->size = true;
			break;
		case 'a':
			cfg->sweep = true;
			break;
		case OPT_MAX_SIZE:
			if (parse_u64(optarg, 2, PERF_MAX_SIZE, &v))
				return bad_flag("max size (2 .. 8388608 bytes)", optarg);
			cfg->max_size = (uint32_t)v;
			break;
		case 'n':
			if (parse_u64(optarg, 1, 10000000, &v))
				return bad_flag("iteration count (1 .. 10000000)", optarg);
			cfg->iters = (uint32_t)v;
			seen->iters = true;
			break;
		case 'm':
			if (parse_mtu(optarg, &cfg->mtu))
				return bad_flag("MTU (256, 512, 1024, 2048 or 4096)", optarg);
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &v))
				return bad_flag("port", optarg);
			cfg->oob_port = (uint16_t)v;
			seen->port = true;
			break;
		case 't':
			if (parse_u64(optarg, 1, 1024, &v))
				return bad_flag("tx depth (1 .. 1024)", optarg);
			cfg->tx_depth = (uint32_t)v;
			break;
		case OPT_LINK:
			seen->addressing = true;
			cfg->link = optarg;
			break;
		case OPT_IP:
			seen->addressing = true;
			if (gpunic_parse_ipv4(optarg, &cfg->ip) || cfg->ip == 0)
				return bad_flag("IPv4 address", optarg);
			break;
		case OPT_PEER_MAC:
			seen->addressing = true;
			if (gpunic_parse_mac(optarg, cfg->peer_mac))
				return bad_flag("MAC address (xx:xx:xx:xx:xx:xx)", optarg);
			cfg->peer_mac_set = true;
			break;
		case OPT_MAC:
			seen->addressing = true;
			if (gpunic_parse_mac(optarg, cfg->mac))
				return bad_flag("MAC address (xx:xx:xx:xx:xx:xx)", optarg);
			cfg->mac_set = true;
			break;
		case OPT_EXECUTOR:
			if (strcmp(optarg, "gpu") && strcmp(optarg, "cpu"))
				return bad_flag("executor (gpu or cpu)", optarg);
			cfg->gpu_exec = strcmp(optarg, "gpu") == 0;
			seen->executor = true;
			break;
		case OPT_HANDLER:
			if (strcmp(optarg, "gpu-db") == 0)
				cfg->handler = GPUNIC_HANDLER_GPU_DB;
			else if (strcmp(optarg, "cpu-proxy") == 0)
				cfg->handler = GPUNIC_HANDLER_CPU_PROXY;
			else if (strcmp(optarg, "gpu-bf") == 0)
				cfg->handler = GPUNIC_HANDLER_GPU_BF;
			else if (strcmp(optarg, "auto") == 0)
				cfg->handler = GPUNIC_HANDLER_AUTO;
			else
				return bad_flag("handler (gpu-db, gpu-bf, cpu-proxy or auto)", optarg);
			break;
		case OPT_GPU:
			if (parse_u64(optarg, 0, 255, &v))
				return bad_flag("GPU ordinal", optarg);
			cfg->gpu = (int)v;
			break;
		case OPT_THREADS:
			if (parse_u64(optarg, 1, PERF_MAX_THREADS, &v))
				return bad_flag("thread count (1 .. 1024)", optarg);
			cfg->threads = (uint32_t)v;
			seen->threads = true;
			break;
		case OPT_CHECK_THREADS:
			if (parse_u64(optarg, 0, PERF_MAX_THREADS - 1, &v))
				return bad_flag("check thread count (0 .. 1023)", optarg);
			cfg->check_threads = (uint32_t)v;
			seen->check_threads = true;
			break;
		case OPT_ENGINE_CPU:
			if (parse_u64(optarg, 0, 4095, &v))
				return bad_flag("engine CPU", optarg);
			cfg->engine_cpu = (int)v;
			break;
		case OPT_EXEC_CPU:
			if (parse_u64(optarg, 0, 4095, &v))
				return bad_flag("executor CPU", optarg);
			cfg->exec_cpu = (int)v;
			break;
		case OPT_TIMEOUT:
			if (parse_u64(optarg, 1, 3600, &v))
				return bad_flag("timeout (1 .. 3600 s)", optarg);
			cfg->timeout_ms = (int)v * 1000;
			break;
		case OPT_JSON:
			seen->json = true;
			break;
		case OPT_PAIR:
			seen->pair = true;
			break;
		case OPT_PEER_EXECUTOR:
			if (strcmp(optarg, "gpu") && strcmp(optarg, "cpu"))
				return bad_flag("peer executor (gpu or cpu)", optarg);
			seen->peer_gpu_exec = strcmp(optarg, "gpu") == 0;
			seen->peer_executor = true;
			break;
		case OPT_PEER_GPU:
			if (parse_u64(optarg, 0, 255, &v))
				return bad_flag("peer GPU ordinal", optarg);
			seen->peer_gpu = (int)v;
			seen->peer_gpu_set = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		case ':':
			fprintf(stderr, "gpunic perf: option '%s' needs a value "
				"(gpunic perf --help)\n", argv[optind - 1]);
			return PERF_USAGE_EXIT;
		default:
			fprintf(stderr, "gpunic perf: unknown option '%s' (gpunic perf --help)\n",
				argv[optind - 1]);
			return PERF_USAGE_EXIT;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gpunic perf: which test? (gpunic perf --help)\n");
		return PERF_USAGE_EXIT;
	}
	if (perf_test_parse(argv[optind], &cfg->test)) {
		fprintf(stderr, "gpunic perf: unknown test '%s': send_lat write_lat read_lat "
			"send_bw write_bw read_bw put_bw atomic_lat atomic_bw\n", argv[optind]);
		return PERF_USAGE_EXIT;
	}
	if (optind + 1 < argc)
		cfg->host = argv[optind + 1];
	if (optind + 2 < argc) {
		fprintf(stderr, "gpunic perf: unexpected argument '%s'\n", argv[optind + 2]);
		return PERF_USAGE_EXIT;
	}
	return 0;
}

static int check_cfg(struct perf_cfg *cfg, const struct perf_opts_seen *seen)
{
	bool lat = perf_test_is_lat(cfg->test);

	if ((cfg->test == GPUNIC_PERF_READ_LAT || cfg->test == GPUNIC_PERF_READ_BW) &&
	    cfg->qp_type == GPUNIC_QPT_UC) {
		fprintf(stderr, "gpunic perf: %s needs RC: UC has no RDMA READ\n",
			perf_test_name(cfg->test));
		return PERF_USAGE_EXIT;
	}
	if (perf_test_is_atomic(cfg->test)) {
		if (cfg->qp_type == GPUNIC_QPT_UC) {
			fprintf(stderr, "gpunic perf: %s needs RC: UC has no atomics\n",
				perf_test_name(cfg->test));
			return PERF_USAGE_EXIT;
		}
		/* perftest's atomics are 8 bytes whatever -s says */
		if ((seen->size && cfg->size != 8) || cfg->sweep) {
			fprintf(stderr, "gpunic perf: %s moves 8 bytes per operation: no -s "
				"other than 8, no -a\n", perf_test_name(cfg->test));
			return PERF_USAGE_EXIT;
		}
	} else if (seen->atomic_type) {
		fprintf(stderr, "gpunic perf: -A is for atomic_lat and atomic_bw\n");
		return PERF_USAGE_EXIT;
	}
	if (cfg->sweep && seen->size) {
		fprintf(stderr, "gpunic perf: -a and -s exclude each other\n");
		return PERF_USAGE_EXIT;
	}
	if (!seen->pair && (seen->peer_executor || seen->peer_gpu_set)) {
		fprintf(stderr, "gpunic perf: --peer-executor and --peer-gpu are for --pair\n");
		return PERF_USAGE_EXIT;
	}
	if (seen->pair && (cfg->host || seen->addressing)) {
		fprintf(stderr, "gpunic perf: --pair runs both sides here over its own cable: no "
			"HOST, --link, --ip, --mac or --peer-mac\n");
		return PERF_USAGE_EXIT;
	}
	if (seen->threads && cfg->test != GPUNIC_PERF_PUT_BW) {
		fprintf(stderr, "gpunic perf: --threads is for put_bw\n");
		return PERF_USAGE_EXIT;
	}
	if (!seen->size)
		cfg->size = lat ? PERF_DEFAULT_LAT_SIZE : PERF_DEFAULT_BW_SIZE;
	if (perf_test_is_atomic(cfg->test))
		cfg->size = 8;
	if (!seen->iters)
		cfg->iters = lat ? PERF_DEFAULT_LAT_ITERS : PERF_DEFAULT_BW_ITERS;
	if (seen->check_threads && cfg->test != GPUNIC_PERF_SEND_BW &&
	    cfg->test != GPUNIC_PERF_READ_BW) {
		fprintf(stderr, "gpunic perf: --check-threads is for send_bw and read_bw\n");
		return PERF_USAGE_EXIT;
	}
	if (!seen->threads)
		cfg->threads = cfg->gpu_exec ? 128 : 4;
	if (!seen->check_threads)
		cfg->check_threads = cfg->gpu_exec ? PERF_GPU_CHECK_THREADS : 0;
	return 0;
}

static void print_ip(FILE *f, uint32_t ip)
{
	fprintf(f, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

static void print_text(const struct perf_cfg *cfg, const struct perf_result *res)
{
	bool lat = perf_test_is_lat(cfg->test);
	bool any = false;

	printf("gpunic perf %s: %s, %s, executor %s%s%s, handler %s, MTU %d, peer %s %s\n",
	       perf_test_name(cfg->test), cfg->host ? "client" : "server",
	       cfg->qp_type == GPUNIC_QPT_RC ? "RC" : "UC", res->executor,
	       res->gpu_name[0] ? " on " : "", res->gpu_name, res->handler ? res->handler : "?",
	       res->mtu_bytes, res->peer_kind ? res->peer_kind : "?", res->peer_version);
	printf(" local  QPN %#08x IP ", res->local_qpn);
	print_ip(stdout, res->local_ip);
	printf("\n remote QPN %#08x IP ", res->remote_qpn);
	print_ip(stdout, res->remote_ip);
	printf("\n");
	if (lat)
		stats_lat_header_print(stdout);
	else
		stats_bw_header_print(stdout);
	for (unsigned i = 0; i < res->n; i++) {
		const struct perf_size_result *r = &res->r[i];

		if (!r->measured)
			continue;
		any = true;
		if (lat)
			stats_lat_print(stdout, r->bytes, &r->sum);
		else
			stats_bw_print(stdout, &r->bw);
	}
	if (!any)
		printf(" (passive side: the client measures)\n");
	stats_rule_print(stdout);
	if (!lat && !cfg->host && res->n && res->r[res->n - 1].remote)
		printf(" (the client's numbers, as it reported them)\n");
}

static void print_verify_atomic(FILE *f, const struct perf_cfg *cfg,
				const struct perf_result *res)
{
	const char *op = cfg->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD";
	bool exact = res->peer_kind && !strcmp(res->peer_kind, "gpunic");

	if (res->atomic_server) {
		if (res->bad && res->bad_msg == UINT64_MAX)
			fprintf(f, "ATOMIC MISMATCH: %" PRIu64 " where %" PRIu64 " was due (%"
				PRIu64 " atomics executed, targets sum to %" PRIu64 ")\n",
				res->atomic_got, res->atomic_want, res->atomic_executed,
				res->atomic_sum);
		else if (res->bad)
			fprintf(f, "ATOMIC MISMATCH: the target at offset %" PRIu64 " holds %#"
				PRIx64 ", expected %#" PRIx64 " (%" PRIu64 " wrong)\n",
				res->bad_off, res->atomic_got, res->atomic_want, res->bad);
		else
			fprintf(f, "atomic targets verified: %" PRIu64 " %s executed once each, "
				"targets sum to %" PRIu64 "%s\n", res->atomic_executed, op,
				res->atomic_sum, exact ? ", every target exact" : "");
		return;
	}
	if (res->bad)
		fprintf(f, "ATOMIC MISMATCH at operation %" PRIu64 " (target %" PRIu64
			"): fetched %#" PRIx64 ", expected %#" PRIx64 " (%" PRIu64 " of %" PRIu64
			" wrong)\n",
			res->bad_msg, res->bad_off, res->atomic_got, res->atomic_want, res->bad,
			res->verified);
	else if (res->verify_ran)
		fprintf(f, "atomic values verified: %" PRIu64 " fetched values of %s, 0 errors "
			"(%s)\n", res->verified, op, exact ?
			"exact: the server's targets started at 0" :
			"each target's values after its first, perftest's buffer holds anything");
}

static void print_verify(FILE *f, const struct perf_result *res)
{
	if (res->bad) {
		fprintf(f, "DATA MISMATCH at message %" PRIu64 " offset %" PRIu64
			": got 0x%02x, expected 0x%02x (%" PRIu64 " of %" PRIu64
			" messages wrong)\n", res->bad_msg, res->bad_off, res->bad_byte,
			res->want_byte, res->bad, res->verified);
		return;
	}
	if (res->verify_ran) {
		fprintf(f, "data verified: %" PRIu64 " messages, 0 errors", res->verified);
		if (res->ring_messages > res->verified)
			fprintf(f, " (the ring held the last %" PRIu64 " of %" PRIu64
				" messages at the end)", res->verified, res->ring_messages);
		fprintf(f, "\n");
	} else if (res->verify_skipped) {
		fprintf(f, "data not verified: the peer is not gpunic perf (its payload carries "
			"no pattern)\n");
	}
}

static void json_lat(const struct perf_size_result *r)
{
	const struct stats_summary *s = &r->sum;

	printf("{\"bytes\":%u,\"iterations\":%" PRIu64 ",\"measured\":true,\"t_min_usec\":%.3f,"
	       "\"t_max_usec\":%.3f,\"t_typical_usec\":%.3f,\"t_avg_usec\":%.3f,"
	       "\"t_stdev_usec\":%.3f,\"p99_usec\":%.3f,\"p99_9_usec\":%.3f}",
	       r->bytes, r->iters, s->min_ns / 1e3, s->max_ns / 1e3, s->p50_ns / 1e3,
	       s->mean_ns / 1e3, s->stdev_ns / 1e3, s->p99_ns / 1e3, s->p999_ns / 1e3);
}

static void json_bw(const struct perf_size_result *r)
{
	printf("{\"bytes\":%" PRIu64 ",\"iterations\":%" PRIu64 ",\"measured\":true,"
	       "\"bw_peak_mb_s\":%.3f,\"bw_avg_mb_s\":%.3f,\"msg_rate_mpps\":%.6f,"
	       "\"remote\":%s}",
	       r->bw.msg_bytes, r->bw.iters, r->bw.peak_mb_s, r->bw.avg_mb_s, r->bw.msg_rate_mpps,
	       r->remote ? "true" : "false");
}

/* One side's object, without a line end (--pair nests two). */
static void print_json(const struct perf_cfg *cfg, const struct perf_result *res, int err)
{
	bool lat = perf_test_is_lat(cfg->test);

	putchar('{');
	json_fput_version(stdout, ",");
	printf("\"test\":\"%s\",\"role\":\"%s\",\"connection\":\"%s\",\"executor\":\"%s\","
	       "\"gpu\":", perf_test_name(cfg->test), cfg->host ? "client" : "server",
	       cfg->qp_type == GPUNIC_QPT_RC ? "RC" : "UC", res->executor);
	json_fput_str(stdout, res->gpu_name);
	printf(",\"handler\":");
	json_fput_str(stdout, res->handler ? res->handler : "");
	printf(",\"mtu\":%d,\"peer\":", res->mtu_bytes);
	json_fput_str(stdout, res->peer_kind ? res->peer_kind : "");
	printf(",\"peer_version\":");
	json_fput_str(stdout, res->peer_version);
	printf(",\"local\":{\"qpn\":%u,\"ip\":\"%u.%u.%u.%u\"},", res->local_qpn,
	       res->local_ip >> 24, (res->local_ip >> 16) & 255, (res->local_ip >> 8) & 255,
	       res->local_ip & 255);
	printf("\"remote\":{\"qpn\":%u,\"ip\":\"%u.%u.%u.%u\"},\"results\":[", res->remote_qpn,
	       res->remote_ip >> 24, (res->remote_ip >> 16) & 255, (res->remote_ip >> 8) & 255,
	       res->remote_ip & 255);
	for (unsigned i = 0; i < res->n; i++) {
		const struct perf_size_result *r = &res->r[i];

		if (i)
			putchar(',');
		if (!r->measured)
			printf("{\"bytes\":%u,\"iterations\":%" PRIu64 ",\"measured\":false}",
			       r->bytes, r->iters);
		else if (lat)
			json_lat(r);
		else
			json_bw(r);
	}
	printf("],\"verification\":{\"ran\":%s,\"skipped\":%s,\"messages\":%" PRIu64
	       ",\"errors\":%" PRIu64 ",\"ring_messages\":%" PRIu64,
	       res->verify_ran ? "true" : "false", res->verify_skipped ? "true" : "false",
	       res->verified, res->bad, res->ring_messages);
	if (res->bad)
		printf(",\"first_bad\":{\"message\":%" PRIu64 ",\"offset\":%" PRIu64
		       ",\"got\":%u,\"expected\":%u}", res->bad_msg, res->bad_off, res->bad_byte,
		       res->want_byte);
	if (perf_test_is_atomic(cfg->test))
		printf(",\"atomic\":{\"type\":\"%s\",\"server\":%s,\"executed\":%" PRIu64
		       ",\"target_sum\":%" PRIu64 ",\"got\":%" PRIu64 ",\"expected\":%" PRIu64 "}",
		       cfg->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
		       res->atomic_server ? "true" : "false", res->atomic_executed, res->atomic_sum,
		       res->atomic_got, res->atomic_want);
	printf("},\"ok\":%s,\"error\":", err ? "false" : "true");
	json_fput_str(stdout, err ? strerror(err) : "");
	printf("}");
}

static void report(const struct perf_cfg *cfg, const struct perf_result *res, int err,
		   bool json)
{
	bool atomic = perf_test_is_atomic(cfg->test);

	if (json) {
		if (res->bad && atomic)
			print_verify_atomic(stderr, cfg, res);
		else if (res->bad)
			print_verify(stderr, res);
	} else if (res->n || res->verify_ran || res->verify_skipped) {
		print_text(cfg, res);
		if (atomic)
			print_verify_atomic(stdout, cfg, res);
		else
			print_verify(stdout, res);
	}
	if (err && err != EBADMSG)
		fprintf(stderr, "gpunic perf: %s %s failed: %s\n", perf_test_name(cfg->test),
			cfg->host ? "client" : "server", strerror(err));
}

/* A GPU side without a GPU fails before it connects: say so before starting either side. */
static int gpu_present(int gpu, const char *who)
{
	struct gpunic_gpu_info info;

	if (gpunic_gpu_probe(gpu, &info) == 0 && info.present)
		return 0;
	fprintf(stderr, "gpunic perf: --pair: the %s's executor is gpu, and there is no GPU %d: "
		"%s\n", who, gpu, info.reason[0] ? info.reason : "not found");
	return ENODEV;
}

/* --pair: the server's configuration is the client's with its own executor and GPU. */
static int cmd_perf_pair(struct perf_cfg *cfg, const struct perf_opts_seen *seen)
{
	struct perf_cfg srv = *cfg;
	struct perf_pair_names names;
	struct perf_result *res = calloc(2, sizeof(*res));
	int err, serr = 0;

	if (!res)
		return 1;
	if (!seen->port)
		cfg->oob_port = 0;
	srv.gpu_exec = seen->peer_executor ? seen->peer_gpu_exec : cfg->gpu_exec;
	srv.gpu = seen->peer_gpu_set ? seen->peer_gpu : cfg->gpu;
	if (!seen->check_threads)
		srv.check_threads = srv.gpu_exec ? PERF_GPU_CHECK_THREADS : 0;
	/* pins name the client's CPUs; two sides on one CPU would take turns */
	srv.engine_cpu = -1;
	srv.exec_cpu = -1;
	if ((cfg->gpu_exec && gpu_present(cfg->gpu, "client")) ||
	    (srv.gpu_exec && gpu_present(srv.gpu, "server"))) {
		free(res);
		return 1;
	}
	err = perf_pair_run(cfg, &srv, &names, &res[0], &res[1], &serr);
	if (seen->json) {
		printf("{\"pair\":true,\"client\":");
		print_json(cfg, &res[0], err);
		printf(",\"server\":");
		print_json(&srv, &res[1], serr);
		printf("}\n");
	}
	report(cfg, &res[0], err, seen->json);
	report(&srv, &res[1], serr, seen->json);
	free(res);
	return err || serr ? 1 : 0;
}

int cmd_perf(int argc, char **argv)
{
	struct perf_cfg cfg = {
		.qp_type = GPUNIC_QPT_RC,
		.max_size = PERF_MAX_SIZE,
		.oob_port = GPUNIC_PERFTEST_PORT,
		.timeout_ms = 60000,
		.tx_depth = PERF_DEFAULT_TX_DEPTH,
		.engine_cpu = -1,
		.exec_cpu = -1,
		.handler = GPUNIC_HANDLER_AUTO,
	};
	struct perf_opts_seen seen = { 0 };
	struct gpunic_gpu_info info;
	struct perf_result *res;
	int rc, err;

	rc = parse_args(argc, argv, &cfg, &seen);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!seen.executor)
		cfg.gpu_exec = gpunic_gpu_probe(cfg.gpu, &info) == 0 && info.present;
	rc = check_cfg(&cfg, &seen);
	if (rc)
		return rc;
	if (seen.pair)
		return cmd_perf_pair(&cfg, &seen);
	res = calloc(1, sizeof(*res));
	if (!res)
		return 1;
	err = perf_run(&cfg, res);
	if (seen.json) {
		print_json(&cfg, res, err);
		printf("\n");
	}
	report(&cfg, res, err, seen.json);
	free(res);
	return err ? 1 : 0;
}
