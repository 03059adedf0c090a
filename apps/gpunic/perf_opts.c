// SPDX-License-Identifier: MIT
/*
 * `gpunic perf`'s options (perf_opts.h). perftest's option letters and long names are perftest
 * 4.5's; each takes perftest's meaning where it has one here, is accepted and shown where it
 * names hardware gpunic does not have (-d, -i, -x, -F), and is refused with the reason where it
 * cannot apply (rdma_cm, several ports, events, ...).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpunic/endpoint.h"
#include "perf_opts.h"

#define CMD "perf"
#define PERF_MAX_ITERS 10000000u
#define PERF_MAX_TIMEOUT_MS 3600000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpunic perf TEST [HOST] [options]\n"
		"  TEST: send_lat write_lat read_lat send_bw write_bw read_bw put_bw\n"
		"        atomic_lat atomic_bw\n"
		"  without HOST: server (waits for the client); with HOST: client, as perftest.\n"
		"  perftest's command lines run unchanged: its flags keep their meanings here.\n"
		"\n"
		"Test:\n"
		"  -c, --connection RC|UC    transport (default RC; read, atomic tests need RC)\n"
		"  -s, --size BYTES          message size, 1..%u (default 2 for *_lat, 65536\n"
		"                            for *_bw; atomics: 8 only)\n"
		"  -A, --atomic_type CMP_AND_SWAP|FETCH_AND_ADD   atomic tests' operation\n"
		"                            (default FETCH_AND_ADD, as perftest)\n"
		"  -a, --all                 sweep sizes 2 .. 2^23 (capped by --max-size); each\n"
		"                            size's line is printed as it completes\n"
		"      --max-size BYTES      largest size of a sweep, 2..%u (default %u)\n"
		"  -n, --iters N             iterations, 1..%u (default 1000 for *_lat, 5000\n"
		"                            for *_bw)\n"
		"  -m, --mtu BYTES           path MTU 256|512|1024|2048|4096 (default: link's)\n"
		"  -t, --tx-depth N          bandwidth: operations in flight, 1..1024 (default 128)\n"
		"  -I, --inline_size BYTES   messages up to this size go inline in the WQE, 0..%u\n"
		"                            (default %u; the QP rounds it up to its WQE; not for\n"
		"                            read and atomic tests, as perftest)\n"
		"      --psn N               this side's first PSN, 0..16777215 (default random)\n"
		"      --report_gbits        bandwidth in Gb/s (10^9 bits) instead of MB/s (2^20 B)\n"
		"\n"
		"Connection:\n"
		"  -p, --port, --oob-port PORT   TCP port of perftest's exchange (default 18515)\n"
		"      --oob-bind A.B.C.D    server: address its listener binds (default 127.0.0.1:\n"
		"                            this host only; 0.0.0.0 or an interface's address for\n"
		"                            a client elsewhere: the exchange hands out this side's\n"
		"                            rkey and buffer address, docs/SECURITY.md)\n"
		"      --timeout SECONDS     connection wait and no-progress limit, 0.001..3600\n"
		"                            (decimals allowed; default 60); a server waits\n"
		"                            for its client until one comes unless it is given\n"
		"      --link SPEC           udp:IP[:PORT] | shm:NAME,a|b[,create] |\n"
		"                            dgram:LOCALIP:PORT,REMOTEIP:PORT\n"
		"                            (default: udp on --ip)\n"
		"      --ip A.B.C.D          this side's RoCE address (default: the address the\n"
		"                            out-of-band connection uses; a client whose server\n"
		"                            runs on this host steps aside by itself: on loopback\n"
		"                            to a free 127.0.0.x, elsewhere to a free UDP port)\n"
		"      --mac MAC             this side's MAC (default 02:00 + its IPv4 address)\n"
		"      --peer-mac MAC        a non-gpunic peer's MAC on shm/dgram links\n"
		"                            (default 02:00 + its IPv4 address)\n"
		"\n"
		"Executor:\n"
		"      --executor gpu|cpu    who posts: a CUDA kernel or host threads\n"
		"                            (default gpu when a GPU exists)\n"
		"      --gpu N               CUDA device, 0..255 (default 0)\n"
		"      --use_cuda=N          perftest's spelling of --executor gpu --gpu N\n"
		"      --handler gpu-db|gpu-bf|cpu-proxy|auto   how posts reach the NIC (default\n"
		"                                        auto: gpu-bf)\n"
		"      --threads N           put_bw: posting threads, 1..%u (default 4 cpu, 128 gpu)\n"
		"      --check-threads N     send_bw server, read_bw client: threads that help\n"
		"                            check each message, 0..%u (default 0 cpu, %u gpu)\n"
		"      --engine-cpu N        pin the NIC engine thread (default: unpinned)\n"
		"      --exec-cpu N          pin CPU executor threads from CPU N on\n"
		"      --pair                run the server too, in this process on its own\n"
		"                            softnic over a private shm cable (no HOST); the\n"
		"                            client's lines stream, the server's table follows\n"
		"      --peer-executor gpu|cpu   --pair: the server's executor (default: ours)\n"
		"      --peer-gpu N          --pair: the server's CUDA device (default: --gpu)\n"
		"\n"
		"Output:\n"
		"      --json                one JSON object with the same numbers\n"
		"  -U, --report-unsorted     *_lat: every iteration's latency, in order, before\n"
		"                            the row\n"
		"  -H, --report-histogrm     *_lat: the same, sorted\n"
		"      --profile             *_lat: after each row, where the executor's time\n"
		"                            went (own work, waiting, polls, torn CQE lines)\n"
		CLI_COMMON_USAGE
		"  -h, --help\n"
		"\n"
		"perftest flags accepted and shown in the banner, with no use here:\n"
		"  -d, --ib-dev NAME         the device is this softnic\n"
		"  -i, --ib-port N           1..255: it has one port\n"
		"  -x, --gid-index N         0..255: it has one GID, ::ffff:<its IPv4>\n"
		"  -F, --CPU-freq            no CPU frequency to check: times come from\n"
		"                            clock_gettime\n"
		"  -q, --qp N                1 only: one QP per side\n"
		"perftest flags that cannot apply (exit 2, with the reason): -R, -z (rdma_cm),\n"
		"  -b (bidirectional), -e (events), -O (dual port), -g (multicast),\n"
		"  -D (duration)\n",
		PERF_MAX_SIZE, PERF_MAX_SIZE, PERF_MAX_SIZE, PERF_MAX_ITERS, PERF_MAX_INLINE_DATA,
		PERF_MAX_INLINE, PERF_MAX_THREADS, PERF_MAX_THREADS - 1, PERF_GPU_CHECK_THREADS);
	cli_usage_exit(f, "the test ran, and every check of the data passed",
		       "the run failed: no peer in time, a link, QP or executor error, wrong data",
		       NULL);
}

enum {
	OPT_MAX_SIZE = 400,
	OPT_LINK,
	OPT_IP,
	OPT_PEER_MAC,
	OPT_MAC,
	OPT_EXECUTOR,
	OPT_HANDLER,
	OPT_GPU,
	OPT_USE_CUDA,
	OPT_THREADS,
	OPT_ENGINE_CPU,
	OPT_EXEC_CPU,
	OPT_TIMEOUT,
	OPT_JSON,
	OPT_PAIR,
	OPT_PEER_EXECUTOR,
	OPT_PEER_GPU,
	OPT_CHECK_THREADS,
	OPT_PROFILE,
	OPT_OOB_BIND,
	OPT_PSN,
	OPT_REPORT_GBITS,
};

static const struct option perf_longopts[] = {
	{ "connection", required_argument, NULL, 'c' },
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "iters", required_argument, NULL, 'n' },
	{ "mtu", required_argument, NULL, 'm' },
	{ "oob-port", required_argument, NULL, 'p' },
	{ "port", required_argument, NULL, 'p' },
	{ "oob-bind", required_argument, NULL, OPT_OOB_BIND },
	{ "link", required_argument, NULL, OPT_LINK },
	{ "ip", required_argument, NULL, OPT_IP },
	{ "peer-mac", required_argument, NULL, OPT_PEER_MAC },
	{ "mac", required_argument, NULL, OPT_MAC },
	{ "executor", required_argument, NULL, OPT_EXECUTOR },
	{ "handler", required_argument, NULL, OPT_HANDLER },
	{ "gpu", required_argument, NULL, OPT_GPU },
	{ "use_cuda", required_argument, NULL, OPT_USE_CUDA },
	{ "tx-depth", required_argument, NULL, 't' },
	{ "inline_size", required_argument, NULL, 'I' },
	{ "psn", required_argument, NULL, OPT_PSN },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "engine-cpu", required_argument, NULL, OPT_ENGINE_CPU },
	{ "exec-cpu", required_argument, NULL, OPT_EXEC_CPU },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "profile", no_argument, NULL, OPT_PROFILE },
	{ "report_gbits", no_argument, NULL, OPT_REPORT_GBITS },
	{ "pair", no_argument, NULL, OPT_PAIR },
	{ "peer-executor", required_argument, NULL, OPT_PEER_EXECUTOR },
	{ "peer-gpu", required_argument, NULL, OPT_PEER_GPU },
	{ "check-threads", required_argument, NULL, OPT_CHECK_THREADS },
	{ "atomic_type", required_argument, NULL, 'A' },
	/* perftest's, with no use or no meaning here */
	{ "ib-dev", required_argument, NULL, 'd' },
	{ "ib-port", required_argument, NULL, 'i' },
	{ "gid-index", required_argument, NULL, 'x' },
	{ "CPU-freq", no_argument, NULL, 'F' },
	{ "qp", required_argument, NULL, 'q' },
	{ "rdma_cm", no_argument, NULL, 'R' },
	{ "comm_rdma_cm", no_argument, NULL, 'z' },
	{ "bidirectional", no_argument, NULL, 'b' },
	{ "events", no_argument, NULL, 'e' },
	{ "dualport", no_argument, NULL, 'O' },
	{ "mcg", no_argument, NULL, 'g' },
	{ "duration", required_argument, NULL, 'D' },
	{ "report-unsorted", no_argument, NULL, 'U' },
	{ "report-histogrm", no_argument, NULL, 'H' },
	{ "help", no_argument, NULL, 'h' },
	CLI_COMMON_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

#define PERF_SHORTOPTS ":c:s:an:m:p:t:A:I:d:i:x:q:D:FRzbeOgUHvh"

/* The option as the user typed it ("-R" or "--rdma_cm"), for messages. */
static const char *typed(char **argv)
{
	/* "-D 5": the value was the last word taken, the option the one before */
	if (optarg && optind >= 2 && optarg == argv[optind - 1] && argv[optind - 2][0] == '-')
		return argv[optind - 2];
	return argv[optind - 1];
}

/* perftest flags that cannot apply, and why. Return: 2, or 0 when @c is not one of them. */
static int not_applicable(int c, char **argv)
{
	static const struct {
		int c;
		const char *why;
	} na[] = {
		{ 'R', "gpunic has no rdma_cm; the TCP exchange is used" },
		{ 'z', "gpunic has no rdma_cm; the TCP exchange is used" },
		{ 'b', "gpunic perf measures one direction per run: run a second pair with "
		       "the roles swapped" },
		{ 'e', "gpunic's executors poll their CQs: there are no completion events" },
		{ 'O', "the softnic has one port" },
		{ 'g', "gpunic runs RC and UC: no UD, no multicast" },
		{ 'D', "both sides run -n iterations, which perftest's exchange keeps in step; "
		       "no executor stops on a clock: give -n" },
	};

	for (size_t i = 0; i < sizeof(na) / sizeof(na[0]); i++)
		if (na[i].c == c)
			return cli_not_applicable(CMD, typed(argv), na[i].why);
	return 0;
}

/* perftest's -d, -i, -x, -F, -q. Return: 1 parsed, -1 not one of them, else 2. */
static int perftest_opt(int c, const char *arg, struct perf_opts *o)
{
	uint64_t v;
	int rc;

	switch (c) {
	case 'd':
		o->view.ib_dev = arg;
		return 1;
	case 'i':
		rc = cli_num(CMD, "-i/--ib-port", arg, 1, 255, &v);
		o->view.ib_port = (int)v;
		return rc ? rc : 1;
	case 'x':
		rc = cli_num(CMD, "-x/--gid-index", arg, 0, 255, &v);
		o->view.gid_index = (int)v;
		return rc ? rc : 1;
	case 'F':
		return 1;
	case 'q':
		/* one QP per side: put_bw --threads is how gpunic loads a QP from many posters */
		if (strcmp(arg, "1"))
			return cli_bad_value(CMD, "-q/--qp", arg, "1 (gpunic perf runs one QP per "
					     "side; put_bw --threads N posts from N threads)");
		return 1;
	default:
		return -1;
	}
}

static int executor_opt(int c, const char *arg, struct perf_cfg *cfg, struct perf_opts *o)
{
	uint64_t v;
	int rc;

	switch (c) {
	case OPT_EXECUTOR:
		if (strcmp(arg, "gpu") && strcmp(arg, "cpu"))
			return cli_bad_value(CMD, "--executor", arg, "gpu or cpu");
		if (o->executor && cfg->gpu_exec != (strcmp(arg, "gpu") == 0))
			return cli_not_applicable(CMD, "--executor", "--use_cuda already chose "
						  "the gpu executor");
		cfg->gpu_exec = strcmp(arg, "gpu") == 0;
		o->executor = true;
		return 1;
	case OPT_USE_CUDA:
		rc = cli_num(CMD, "--use_cuda", arg, 0, 255, &v);
		if (rc)
			return rc;
		if (o->executor && !cfg->gpu_exec)
			return cli_not_applicable(CMD, "--use_cuda", "--executor cpu already "
						  "chose host threads");
		cfg->gpu = (int)v;
		cfg->gpu_exec = true;
		o->executor = true;
		return 1;
	case OPT_GPU:
		rc = cli_num(CMD, "--gpu", arg, 0, 255, &v);
		cfg->gpu = (int)v;
		return rc ? rc : 1;
	case OPT_HANDLER:
		if (strcmp(arg, "gpu-db") == 0)
			cfg->handler = GPUNIC_HANDLER_GPU_DB;
		else if (strcmp(arg, "cpu-proxy") == 0)
			cfg->handler = GPUNIC_HANDLER_CPU_PROXY;
		else if (strcmp(arg, "gpu-bf") == 0)
			cfg->handler = GPUNIC_HANDLER_GPU_BF;
		else if (strcmp(arg, "auto") == 0)
			cfg->handler = GPUNIC_HANDLER_AUTO;
		else
			return cli_bad_value(CMD, "--handler", arg,
					     "gpu-db, gpu-bf, cpu-proxy or auto");
		return 1;
	case OPT_THREADS:
		rc = cli_num(CMD, "--threads", arg, 1, PERF_MAX_THREADS, &v);
		cfg->threads = (uint32_t)v;
		o->threads = true;
		return rc ? rc : 1;
	case OPT_CHECK_THREADS:
		rc = cli_num(CMD, "--check-threads", arg, 0, PERF_MAX_THREADS - 1, &v);
		cfg->check_threads = (uint32_t)v;
		o->check_threads = true;
		return rc ? rc : 1;
	case OPT_ENGINE_CPU:
		rc = cli_num(CMD, "--engine-cpu", arg, 0, 4095, &v);
		cfg->engine_cpu = (int)v;
		return rc ? rc : 1;
	case OPT_EXEC_CPU:
		rc = cli_num(CMD, "--exec-cpu", arg, 0, 4095, &v);
		cfg->exec_cpu = (int)v;
		return rc ? rc : 1;
	case OPT_PAIR:
		o->pair = true;
		return 1;
	case OPT_PEER_EXECUTOR:
		if (strcmp(arg, "gpu") && strcmp(arg, "cpu"))
			return cli_bad_value(CMD, "--peer-executor", arg, "gpu or cpu");
		o->peer_gpu_exec = strcmp(arg, "gpu") == 0;
		o->peer_executor = true;
		return 1;
	case OPT_PEER_GPU:
		rc = cli_num(CMD, "--peer-gpu", arg, 0, 255, &v);
		o->peer_gpu = (int)v;
		o->peer_gpu_set = true;
		return rc ? rc : 1;
	default:
		return -1;
	}
}

static int connection_opt(int c, const char *arg, struct perf_cfg *cfg, struct perf_opts *o)
{
	uint64_t v;
	uint32_t ip;
	int rc, ms;

	switch (c) {
	case 'p':
		rc = cli_num(CMD, "-p/--port", arg, 1, 65535, &v);
		cfg->oob_port = (uint16_t)v;
		o->port = true;
		return rc ? rc : 1;
	case OPT_OOB_BIND:
		/* 0.0.0.0 is a listening address too: every interface */
		if (gpunic_parse_ipv4(arg, &ip))
			return cli_bad_value(CMD, "--oob-bind", arg, "an IPv4 address A.B.C.D");
		cfg->oob_bind = arg;
		o->oob_bind = true;
		return 1;
	case OPT_TIMEOUT:
		if (cli_parse_seconds(arg, 1, PERF_MAX_TIMEOUT_MS, &ms))
			return cli_bad_value(CMD, "--timeout", arg, "0.001..3600 (seconds)");
		cfg->timeout_ms = ms;
		cfg->accept_ms = ms;
		return 1;
	case OPT_LINK:
		o->addressing = true;
		cfg->link = arg;
		return 1;
	case OPT_IP:
		o->addressing = true;
		if (cli_parse_ip(arg, &cfg->ip))
			return cli_bad_value(CMD, "--ip", arg, "a nonzero IPv4 address A.B.C.D");
		return 1;
	case OPT_PEER_MAC:
		o->addressing = true;
		if (gpunic_parse_mac(arg, cfg->peer_mac))
			return cli_bad_value(CMD, "--peer-mac", arg, "a MAC xx:xx:xx:xx:xx:xx");
		cfg->peer_mac_set = true;
		return 1;
	case OPT_MAC:
		o->addressing = true;
		if (gpunic_parse_mac(arg, cfg->mac))
			return cli_bad_value(CMD, "--mac", arg, "a MAC xx:xx:xx:xx:xx:xx");
		cfg->mac_set = true;
		return 1;
	default:
		return -1;
	}
}

static int test_opt(int c, const char *arg, struct perf_cfg *cfg, struct perf_opts *o)
{
	enum gpunic_mtu mtu;
	uint64_t v;
	int rc;

	switch (c) {
	case 'A':
		if (strcmp(arg, "CMP_AND_SWAP") == 0)
			cfg->atomic_cas = true;
		else if (strcmp(arg, "FETCH_AND_ADD") == 0)
			cfg->atomic_cas = false;
		else
			return cli_bad_value(CMD, "-A/--atomic_type", arg,
					     "CMP_AND_SWAP or FETCH_AND_ADD");
		o->atomic_type = true;
		return 1;
	case 'c':
		if (strcmp(arg, "RC") == 0 || strcmp(arg, "rc") == 0)
			cfg->qp_type = GPUNIC_QPT_RC;
		else if (strcmp(arg, "UC") == 0 || strcmp(arg, "uc") == 0)
			cfg->qp_type = GPUNIC_QPT_UC;
		else
			return cli_bad_value(CMD, "-c/--connection", arg, "RC or UC");
		return 1;
	case 's':
		rc = cli_num(CMD, "-s/--size", arg, 1, PERF_MAX_SIZE, &v);
		cfg->size = (uint32_t)v;
		o->size = true;
		return rc ? rc : 1;
	case 'a':
		cfg->sweep = true;
		return 1;
	case OPT_MAX_SIZE:
		rc = cli_num(CMD, "--max-size", arg, 2, PERF_MAX_SIZE, &v);
		cfg->max_size = (uint32_t)v;
		return rc ? rc : 1;
	case 'n':
		rc = cli_num(CMD, "-n/--iters", arg, 1, PERF_MAX_ITERS, &v);
		cfg->iters = (uint32_t)v;
		o->iters = true;
		return rc ? rc : 1;
	case 'm':
		if (cli_parse_mtu(arg, &mtu))
			return cli_bad_value(CMD, "-m/--mtu", arg, "256, 512, 1024, 2048 or 4096");
		cfg->mtu = mtu;
		return 1;
	case 't':
		rc = cli_num(CMD, "-t/--tx-depth", arg, 1, 1024, &v);
		cfg->tx_depth = (uint32_t)v;
		return rc ? rc : 1;
	case 'I':
		rc = cli_num(CMD, "-I/--inline_size", arg, 0, PERF_MAX_INLINE_DATA, &v);
		cfg->inline_size = (uint32_t)v;
		o->inline_size = true;
		return rc ? rc : 1;
	case OPT_PSN:
		rc = cli_num(CMD, "--psn", arg, 0, GPUNIC_PSN_MASK, &v);
		cfg->psn = (uint32_t)v;
		cfg->psn_set = true;
		return rc ? rc : 1;
	case OPT_REPORT_GBITS:
		o->view.gbits = true;
		return 1;
	case 'U':
	case 'H':
		*(c == 'U' ? &o->view.unsorted : &o->view.histogram) = true;
		cfg->keep_samples = true;
		return 1;
	case OPT_JSON:
		o->view.json = true;
		return 1;
	case OPT_PROFILE:
		o->view.profile = true;
		cfg->profile = true;
		return 1;
	default:
		return -1;
	}
}

/* One of the command's own options. Return: 0 go on, else the exit status of a usage error. */
static int one_opt(int c, char **argv, struct perf_cfg *cfg, struct perf_opts *o)
{
	int rc = not_applicable(c, argv);

	if (rc)
		return rc;
	rc = test_opt(c, optarg, cfg, o);
	if (rc < 0)
		rc = connection_opt(c, optarg, cfg, o);
	if (rc < 0)
		rc = executor_opt(c, optarg, cfg, o);
	if (rc < 0)
		rc = perftest_opt(c, optarg, o);
	if (rc < 0)
		return cli_bad_option(CMD, '?', argv[optind - 1]);
	return rc == 1 ? 0 : rc;
}

int perf_opts_parse(int argc, char **argv, struct perf_cfg *cfg, struct perf_opts *o)
{
	struct cli_getopt g = { .cmd = CMD, .shortopts = PERF_SHORTOPTS,
				.longopts = perf_longopts, .usage = usage };
	int c, rc;

	o->view.gid_index = -1;
	while ((c = cli_getopt_next(&g, argc, argv))) {
		rc = one_opt(c, argv, cfg, o);
		if (rc)
			return rc;
	}
	if (g.exit >= 0)
		return g.exit ? g.exit : -1;
	if (optind >= argc) {
		fprintf(stderr, "gpunic perf: which test? (try 'gpunic perf --help')\n");
		return PERF_USAGE_EXIT;
	}
	if (perf_test_parse(argv[optind], &cfg->test))
		return cli_bad_value(CMD, "TEST", argv[optind], "send_lat, write_lat, read_lat, "
				     "send_bw, write_bw, read_bw, put_bw, atomic_lat or atomic_bw");
	if (optind + 1 < argc)
		cfg->host = argv[optind + 1];
	if (optind + 2 < argc)
		return cli_extra_arg(CMD, argv[optind + 2]);
	return 0;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gpunic perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return PERF_USAGE_EXIT;
}

/* Read and atomic tests' own rules. */
static int check_verbs(const struct perf_cfg *cfg, const struct perf_opts *o)
{
	const char *t = perf_test_name(cfg->test);
	bool read = cfg->test == GPUNIC_PERF_READ_LAT || cfg->test == GPUNIC_PERF_READ_BW;
	bool atomic = perf_test_is_atomic(cfg->test);

	if (read && cfg->qp_type == GPUNIC_QPT_UC)
		return usage_error("%s needs RC: UC has no RDMA READ", t);
	if (atomic && cfg->qp_type == GPUNIC_QPT_UC)
		return usage_error("%s needs RC: UC has no atomics", t);
	/* perftest's atomics are 8 bytes whatever -s says */
	if (atomic && ((o->size && cfg->size != 8) || cfg->sweep))
		return usage_error("%s moves 8 bytes per operation: no -s other than 8, no -a", t);
	if (!atomic && o->atomic_type)
		return usage_error("-A is for atomic_lat and atomic_bw");
	if (!perf_test_is_lat(cfg->test) && cfg->keep_samples)
		return usage_error("%s keeps no per-iteration latency: -U and -H are for *_lat", t);
	if (!perf_test_is_lat(cfg->test) && o->view.profile)
		return usage_error("%s has no latency stages: --profile is for *_lat", t);
	if ((read || atomic) && o->inline_size)
		return usage_error("%s sends no payload in its requests: -I does not apply", t);
	return 0;
}

int perf_opts_check(struct perf_cfg *cfg, const struct perf_opts *o)
{
	bool lat = perf_test_is_lat(cfg->test);
	int rc = check_verbs(cfg, o);

	if (rc)
		return rc;
	if (cfg->sweep && o->size)
		return usage_error("-a and -s exclude each other");
	if (!o->pair && (o->peer_executor || o->peer_gpu_set))
		return usage_error("--peer-executor and --peer-gpu are for --pair");
	if (o->pair && (cfg->host || o->addressing))
		return usage_error("--pair runs both sides here over its own cable: no HOST, "
				   "--link, --ip, --mac or --peer-mac");
	if (o->threads && cfg->test != GPUNIC_PERF_PUT_BW)
		return usage_error("--threads is for put_bw");
	if (o->check_threads && cfg->test != GPUNIC_PERF_SEND_BW &&
	    cfg->test != GPUNIC_PERF_READ_BW)
		return usage_error("--check-threads is for send_bw and read_bw");
	if (cfg->host && o->oob_bind)
		return usage_error("--oob-bind is the server's listener; a client connects to "
				   "HOST");
	if (cfg->host && cli_check_host("perf", cfg->host))
		return 2;
	if (!o->size)
		cfg->size = lat ? PERF_DEFAULT_LAT_SIZE : PERF_DEFAULT_BW_SIZE;
	if (perf_test_is_atomic(cfg->test))
		cfg->size = 8;
	if (!o->iters)
		cfg->iters = lat ? PERF_DEFAULT_LAT_ITERS : PERF_DEFAULT_BW_ITERS;
	if (!o->threads)
		cfg->threads = cfg->gpu_exec ? 128 : 4;
	if (!o->check_threads)
		cfg->check_threads = cfg->gpu_exec ? PERF_GPU_CHECK_THREADS : 0;
	return 0;
}
