// SPDX-License-Identifier: MIT
/*
 * gpunic sensor: the FPGA / Holoscan Sensor Bridge emulator. A RoCE UC endpoint that sends
 * timestamped, sequence-numbered messages to `gpunic loop` (HSB-style WRITE_WITH_IMM into a ring
 * slot, or SEND), receives the echoes, checks every one and measures the round trip. With --rpc
 * the messages are RPC requests to a built-in function of `gpunic loop --rpc` (docs/RPC.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "cli.h"
#include "gpunic/parse.h"
#include "loopback.h"
#include "outfile.h"
#include "timing.h"

/* A duration run records at most this many samples (25 bytes each). */
#define SENSOR_MAX_SAMPLES 10000000ull

/* what the usage errors of --size, --count and --warmup say */
_Static_assert(LB_MSG_MIN == 16 && LB_MSG_MAX == 4096, "--size must be 16..4096");
_Static_assert(SENSOR_MAX_SAMPLES == 10000000ull, "--count must be 1..10000000");

struct sensor_opts {
	struct cli_net net;
	const char *oob_host;
	enum lb_mode mode;
	uint32_t size;
	uint64_t interval_ns;
	uint64_t count;
	uint64_t duration_ns;
	uint64_t warmup;
	bool add_one;
	uint64_t timeout_ns;
	int cpu;
	bool json;
	uint32_t rpc_fn;		/* 0: plain messages */
	enum lb_rpc_fault rpc_fault;
	uint32_t rpc_fault_every;
	const char *rpc_clock;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic sensor [options]\n"
		"\n"
		"The FPGA/HSB emulator: send timestamped messages to `gpunic loop`, receive the\n"
		"echoes, verify each one and measure the round trip. UC does not retransmit:\n"
		"lost, duplicated, reordered and corrupted messages are counted and printed.\n"
		"\n"
		"  --link SPEC          shm:NAME,a|b[,create] | udp:IP[:PORT] | dgram:...\n"
		"                       (default shm:/gpunic-loop,b; the loop creates end a)\n"
		"  --ip A.B.C.D         this end's address on shm/dgram links\n"
		"                       (default 192.168.0.2)\n"
		"  --oob-host HOST      where `gpunic loop` listens for the QP exchange\n"
		"                       (default 127.0.0.1)\n"
		"  --oob-port N         its TCP port (default %d)\n"
		"  --timeout S          wait this long (seconds, decimals allowed) for the loop\n"
		"                       (default 30; --oob-timeout-s is the old name)\n"
		"  --mode MODE          write-imm (HSB: RDMA WRITE_WITH_IMM into ring slot\n"
		"                       seq %% slots, immediate = slot) or send\n"
		"                       (default write-imm)\n"
		"  --size N             message bytes, %u..%u (default %u)\n"
		"  --interval-us F      one message every F us (default 10); 0 = closed loop:\n"
		"                       the next message goes when the previous one is back\n"
		"  --count N            messages to measure (default 100000)\n"
		"  --duration-s F       measure for F seconds instead (with --count: whichever\n"
		"                       ends first)\n"
		"  --warmup N           messages sent and checked first, not in the statistics\n"
		"                       (default 0)\n"
		"  --expect-add-one     the loop adds 1 to every byte\n"
		"                       (gpunic loop --work add-one)\n"
		"  --reply-timeout S    a reply not back S seconds after the last activity is\n"
		"                       lost (default %.3g; --timeout-ms N is the old name)\n"
		"  --cpu N              pin the sensor thread to CPU N\n"
		"  --rpc NAME           send RPC requests to NAME, a built-in function of\n"
		"                       `gpunic loop --rpc` (docs/RPC.md):\n"
		"                       %s;\n"
		"                       request_id = sequence number, ptp_timestamp = the\n"
		"                       --rpc-clock at sending. Every response is checked\n"
		"                       (magic, status, id, timestamp, results against the CPU\n"
		"                       reference) and the round trip is also reported by the\n"
		"                       echoed timestamp. --size is the request's bytes, header\n"
		"                       included (surface_d3 takes 25)\n"
		"  --rpc-clock C        with --rpc: auto (default: the first /dev/ptpN that\n"
		"                       reads, else CLOCK_REALTIME), realtime, or a /dev/ptpN\n"
		"  --rpc-fault KIND     with --rpc: send bad requests, each expected to be\n"
		"                       answered with its negative status: unknown (function),\n"
		"                       magic, too-long (arg_len past the slot), truncated,\n"
		"                       schema (surface_d3 without its argument byte)\n"
		"  --rpc-fault-every N  with --rpc-fault: every Nth request is the bad one\n"
		"                       (default 1: all), 1..1000000\n"
		"  --json               print one JSON object instead of the text report\n"
		CLI_COMMON_USAGE
		"  -h, --help           show this help\n"
		"\n",
		LB_DEFAULT_OOB_PORT, LB_MSG_MIN, LB_MSG_MAX, LB_DEFAULT_SIZE,
		LB_DEFAULT_TIMEOUT_MS / 1000.0, LB_RPC_FN_NAMES);
	cli_net_usage(out, true);
	cli_usage_exit(out, "the run completed (loss is reported, not an error)",
		       "it could not run (a link that does not open, no loop within --timeout),\n"
		       "     or none of the messages came back intact",
		       NULL);
}

static int bad(const char *opt, const char *val, const char *want)
{
	return cli_bad_value("sensor", opt, val, want);
}

/* What --rpc and its options need of the others. Return: 0, or 2 after saying why. */
static int check_rpc_opts(const struct sensor_opts *o, bool every_given)
{
	char want[64], val[16];

	if (!o->rpc_fn) {
		if (o->rpc_fault || every_given || o->rpc_clock) {
			fprintf(stderr, "gpunic sensor: %s needs --rpc\n",
				o->rpc_fault ? "--rpc-fault" : every_given ? "--rpc-fault-every" :
									    "--rpc-clock");
			return 2;
		}
		return 0;
	}
	if (every_given && !o->rpc_fault) {
		fprintf(stderr, "gpunic sensor: --rpc-fault-every needs --rpc-fault\n");
		return 2;
	}
	if (o->add_one) {
		fprintf(stderr, "gpunic sensor: --rpc checks each function's own results: "
				"--expect-add-one is for plain messages (add_one is a function)\n");
		return 2;
	}
	/* the default size holds every request: only a --size given can be short */
	if (!lb_rpc_request_len(o->rpc_fn, o->size)) {
		snprintf(val, sizeof(val), "%u", o->size);
		snprintf(want, sizeof(want), "at least %u for requests to %s",
			 o->rpc_fn == GPUNIC_RPC_ID_SURFACE_D3 ? 25 : 24,
			 lb_rpc_fn_name(o->rpc_fn));
		return bad("--size", val, want);
	}
	return 0;
}


/* Return: -1 to run, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct sensor_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		CLI_COMMON_LONGOPTS,
		CLI_NET_LONGOPTS,
		{ "oob-host", required_argument, NULL, 'H' },
		{ "mode", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "duration-s", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "expect-add-one", no_argument, NULL, 'a' },
		{ "reply-timeout", required_argument, NULL, 'T' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "rpc", required_argument, NULL, 'R' },
		{ "rpc-clock", required_argument, NULL, 'C' },
		{ "rpc-fault", required_argument, NULL, 'F' },
		{ "rpc-fault-every", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_getopt g = { .cmd = "sensor", .shortopts = ":hv", .longopts = longopts,
				.usage = usage };
	bool count_given = false, every_given = false;
	uint64_t v;
	int c, rc, ms;

	*o = (struct sensor_opts){
		.net = { .link = "shm:/gpunic-loop,b", .ip = LB_SENSOR_IP,
			 .oob_port = LB_DEFAULT_OOB_PORT, .oob_timeout_ms = 30000 },
		.oob_host = "127.0.0.1",
		.mode = LB_MODE_WRITE_IMM,
		.size = LB_DEFAULT_SIZE,
		.interval_ns = LB_DEFAULT_INTERVAL_NS,
		.count = 100000,
		.timeout_ns = LB_DEFAULT_TIMEOUT_MS * 1000000ull,
		.cpu = -1,
	};
	while ((c = cli_getopt_next(&g, argc, argv))) {
		switch (c) {
		case 'H':
			o->oob_host = optarg;
			break;
		case 'm':
			if (lb_mode_parse(optarg, &o->mode))
				return bad("--mode", optarg, "write-imm or send");
			break;
		case 's':
			if (gpunic_parse_uint(optarg, LB_MSG_MIN, LB_MSG_MAX, &v))
				return bad("--size", optarg, "16..4096");
			o->size = (uint32_t)v;
			break;
		case 'i':
			if (cli_parse_us(optarg, &o->interval_ns))
				return bad("--interval-us", optarg,
					   "0 or more microseconds, up to 3 decimals");
			break;
		case 'n':
			if (gpunic_parse_uint(optarg, 1, SENSOR_MAX_SAMPLES, &o->count))
				return bad("--count", optarg, "1..10000000");
			count_given = true;
			break;
		case 'd':
			if (cli_parse_seconds(optarg, 1, 86400000, &ms))
				return bad("--duration-s", optarg, "0.001..86400 seconds");
			o->duration_ns = (uint64_t)ms * 1000000ull;
			break;
		case 'w':
			if (gpunic_parse_uint(optarg, 0, SENSOR_MAX_SAMPLES, &o->warmup))
				return bad("--warmup", optarg, "0..10000000");
			break;
		case 'a':
			o->add_one = true;
			break;
		case 'T':
			if (cli_parse_seconds(optarg, 1, 3600000, &ms))
				return bad("--reply-timeout", optarg, "0.001..3600 seconds");
			o->timeout_ns = (uint64_t)ms * 1000000ull;
			break;
		case 't':
			if (gpunic_parse_uint(optarg, 1, 3600000, &v))
				return bad("--timeout-ms", optarg, "1..3600000 milliseconds");
			o->timeout_ns = v * 1000000ull;
			break;
		case 'c':
			if (gpunic_parse_uint(optarg, 0, 1023, &v))
				return bad("--cpu", optarg, "0..1023");
			o->cpu = (int)v;
			break;
		case 'j':
			o->json = true;
			break;
		case 'R':
			if (lb_rpc_fn_parse(optarg, &o->rpc_fn))
				return bad("--rpc", optarg, LB_RPC_FN_NAMES);
			break;
		case 'C':
			if (strcmp(optarg, "auto") && strcmp(optarg, "realtime") &&
			    strncmp(optarg, "/dev/ptp", 8))
				return bad("--rpc-clock", optarg, "auto, realtime or a /dev/ptpN");
			o->rpc_clock = optarg;
			break;
		case 'F':
			if (lb_rpc_fault_parse(optarg, &o->rpc_fault) || !o->rpc_fault)
				return bad("--rpc-fault", optarg,
					   "unknown, magic, too-long, truncated or schema");
			break;
		case 'N':
			if (cli_num("sensor", "--rpc-fault-every", optarg, 1, 1000000, &v))
				return 2;
			o->rpc_fault_every = (uint32_t)v;
			every_given = true;
			break;
		default:
			rc = cli_parse_net_opt("sensor", c, optarg, &o->net);
			if (rc < 0)
				return cli_bad_option("sensor", '?', argv[optind - 1]);
			if (rc != 1)
				return rc;
		}
	}
	if (g.exit >= 0)
		return g.exit;
	if (optind < argc)
		return cli_extra_arg("sensor", argv[optind]);
	rc = cli_finish_net("sensor", &o->net, o->mode == LB_MODE_WRITE_IMM);
	if (rc)
		return rc;
	rc = check_rpc_opts(o, every_given);
	if (rc)
		return rc;
	if (!o->net.peer_static && cli_check_host("sensor", o->oob_host))
		return 2;
	/* --duration-s alone: the duration decides; the recorder is sized from it */
	if (o->duration_ns && !count_given)
		o->count = 0;
	return -1;
}

/* Samples a duration run can produce, bounded by what the recorder may hold. */
static uint64_t duration_capacity(const struct sensor_opts *o)
{
	uint64_t per = o->interval_ns ? o->interval_ns : 1000; /* closed loop: >= 1 us each */
	uint64_t n = o->duration_ns / per + 16;

	return n < SENSOR_MAX_SAMPLES ? n : SENSOR_MAX_SAMPLES;
}

/* The end-of-run message, and what became of it when the loop did not answer. Return: what
 * the report says of it ("confirmed": the loop answered). */
static const char *bye(const struct sensor_opts *o, struct lb_sensor *s, uint64_t session,
		       uint64_t sent)
{
	int err = lb_session_sensor_bye(s, o->oob_host, o->net.oob_port, session,
					o->net.oob_timeout_ms, sent);

	if (err == EINTR)
		fprintf(stderr, "gpunic sensor: stopped before the loop answered the end-of-run "
				"message\n");
	else if (err == ETIMEDOUT)
		fprintf(stderr, "gpunic sensor: the loop did not answer the end-of-run message "
				"within %.3g s: it has stopped already, or is still busy (a loop "
				"that reads it later drops it, its sender having gone)\n",
			o->net.oob_timeout_ms / 1000.0);
	else if (err)
		fprintf(stderr, "gpunic sensor: the end-of-run message: %s\n", strerror(err));
	return err ? "unconfirmed" : "confirmed";
}

static int run(const struct sensor_opts *o, int argc, char **argv)
{
	struct gpunic_qp_info local;
	struct lb_run_result res, wres = { 0 };
	struct gpunic_nic_counters nic;
	struct lb_sensor *s = NULL;
	struct gpunic_link *link;
	struct stats_summary sum, ts_sum = { 0 };
	struct stats_rec rec = { 0 }, ts_rec = { 0 };
	struct lb_rpc_clock clock = { .fd = -1 };
	struct lb_run_cfg cfg;
	struct gpunic_ep_addr addr;
	uint64_t cap, session = 0;
	const char *end_of_run = NULL;
	int err;

	(void)argc;
	(void)argv;
	cap = o->count ? o->count : duration_capacity(o);
	if (o->warmup > cap)
		cap = o->warmup;
	err = stats_rec_init(&rec, cap);
	if (!err && o->rpc_fn)
		err = stats_rec_init(&ts_rec, cap);
	if (err) {
		fprintf(stderr, "gpunic sensor: sample recorder for %llu: %s\n",
			(unsigned long long)cap, strerror(err));
		stats_rec_free(&rec);
		return 1;
	}
	if (o->rpc_fn) {
		err = lb_rpc_clock_open(&clock, o->rpc_clock ? o->rpc_clock : "auto");
		if (err)
			goto out;
	}
	err = gpunic_ep_link_open("gpunic", o->net.link, o->net.ip, NULL, o->net.oob_timeout_ms,
				  &link, &addr);
	if (err)
		goto out;
	err = lb_sensor_open(&s, link, &addr, o->mode, o->size);
	if (err)
		goto out;
	if (o->net.psn_given)
		lb_sensor_set_psn(s, o->net.psn);
	if (o->net.peer_static) {
		lb_sensor_info(s, &local);
		cli_print_local(stderr, "sensor", &local);
	}
	err = lb_session_sensor_start("gpunic sensor", s, o->oob_host, o->net.oob_port,
				      o->net.oob_timeout_ms, o->net.peer_static ? &o->net.peer : NULL,
				      &session);
	if (err)
		goto out;
	if (o->cpu >= 0) {
		err = timing_pin_self(o->cpu);
		if (err)
			goto out;
	}
	if (!o->json)
		printf("gpunic sensor: %s, %u B, %s%.3f us, %s, link %s\n", lb_mode_name(o->mode),
		       o->rpc_fn ? lb_rpc_request_len(o->rpc_fn, o->size) : o->size,
		       o->interval_ns ? "paced " : "closed loop, timeout ",
		       o->interval_ns ? (double)o->interval_ns / 1000.0 :
					(double)o->timeout_ns / 1000.0,
		       o->rpc_fn ? "RPC requests" : o->add_one ? "expecting add-one" :
						      "expecting a plain echo",
		       o->net.link);
	if (!o->json && o->rpc_fn) {
		printf("gpunic sensor: RPC to %s (0x%08x), stamped by %s", lb_rpc_fn_name(o->rpc_fn),
		       o->rpc_fn, clock.name);
		if (o->rpc_fault)
			printf("; every %u%s request %s", o->rpc_fault_every ? o->rpc_fault_every : 1,
			       o->rpc_fault_every > 1 ? "th" : "", lb_rpc_fault_name(o->rpc_fault));
		printf("\n");
	}

	cfg = (struct lb_run_cfg){
		.interval_ns = o->interval_ns,
		.rephase = true,
		.closed_loop = o->interval_ns == 0,
		.expect_add_one = o->add_one,
		.timeout_ns = o->timeout_ns,
		.stop = &lb_stop_flag,
		.rpc_fn = o->rpc_fn,
		.rpc_clock = &clock,
		.rpc_fault = o->rpc_fault,
		.rpc_fault_every = o->rpc_fault_every,
		.rpc_ts_rec = o->rpc_fn ? &ts_rec : NULL,
	};
	if (o->warmup) {
		cfg.count = o->warmup;
		cfg.epoch = 1;
		err = lb_sensor_run(s, &cfg, &rec, &wres);
		if (err)
			goto out;
	}
	cfg.count = o->count;
	cfg.duration_ns = o->duration_ns;
	cfg.epoch = 2;
	err = lb_sensor_run(s, &cfg, &rec, &res);
	if (err)
		goto out;
	err = stats_summarize(&rec, &sum);
	if (!err && o->rpc_fn)
		err = stats_summarize(&ts_rec, &ts_sum);
	if (err)
		goto out;

	/* tell the loop we are done (every message it saw, warm-up included); it may have
	 * stopped on its own already, or be busy with other clients a while (5 s each at most).
	 * A static peer hears nothing. */
	if (!o->net.peer_static)
		end_of_run = bye(o, s, session, wres.sent + res.sent);
	lb_sensor_counters(s, &nic);

	if (o->json) {
		printf("{\"command\": \"sensor\", ");
		json_fput_version(stdout, ", ");
		printf("\"mode\": \"%s\", \"size\": %u, "
		       "\"interval_ns\": %llu, \"closed_loop\": %s, \"expect_add_one\": %s, "
		       "\"warmup\": {\"sent\": %llu, \"verified\": %llu, \"lost\": %llu, "
		       "\"corrupt\": %llu}, \"run\": ",
		       lb_mode_name(o->mode), o->size, (unsigned long long)o->interval_ns,
		       cfg.closed_loop ? "true" : "false", o->add_one ? "true" : "false",
		       (unsigned long long)wres.sent, (unsigned long long)wres.verified,
		       (unsigned long long)wres.counts.lost,
		       (unsigned long long)wres.counts.corrupt);
		lb_json_run(stdout, &sum, &res);
		if (o->rpc_fn) {
			printf(", \"rpc\": {\"function\": \"%s\", \"fault\": \"%s\", "
			       "\"fault_every\": %u, ",
			       lb_rpc_fn_name(o->rpc_fn), lb_rpc_fault_name(o->rpc_fault),
			       o->rpc_fault_every ? o->rpc_fault_every : 1);
			lb_json_rpc(stdout, &res, &ts_sum, clock.name);
			printf("}");
		} else {
			printf(", \"rpc\": null");
		}
		printf(", \"nic\": {\"rx_frames\": %llu, \"tx_frames\": %llu, \"tx_busy\": %llu, "
		       "\"drops\": ",
		       (unsigned long long)nic.rx_frames, (unsigned long long)nic.tx_frames,
		       (unsigned long long)nic.tx_busy);
		lb_json_drops(stdout, &nic);
		printf("}, \"end_of_run\": ");
		if (end_of_run)
			printf("\"%s\"}\n", end_of_run);
		else
			printf("null}\n");
	} else {
		if (o->warmup)
			printf(" warm-up: %llu sent, %llu verified, %llu lost, %llu corrupt\n",
			       (unsigned long long)wres.sent, (unsigned long long)wres.verified,
			       (unsigned long long)wres.counts.lost,
			       (unsigned long long)wres.counts.corrupt);
		lb_print_run(stdout, o->rpc_fn ? lb_rpc_request_len(o->rpc_fn, o->size) : o->size,
			     &sum, &res);
		if (o->rpc_fn)
			lb_print_rpc(stdout, &res, &ts_sum, clock.name);
		printf(" sensor NIC: rx %llu frames, tx %llu frames",
		       (unsigned long long)nic.rx_frames, (unsigned long long)nic.tx_frames);
		lb_print_drops(stdout, &nic);
		printf("\n");
	}
	fflush(stdout);
	/* loss is reported, not an error; nothing back at all is a run that did not work */
	if (wres.sent + res.sent && !wres.verified && !res.verified) {
		fprintf(stderr, "gpunic sensor: none of the %llu messages came back intact\n",
			(unsigned long long)(wres.sent + res.sent));
		err = ENODATA;
	}
out:
	lb_sensor_close(s);
	lb_rpc_clock_close(&clock);
	stats_rec_free(&rec);
	stats_rec_free(&ts_rec);
	return err ? 1 : 0;
}

int cmd_sensor(int argc, char **argv)
{
	struct sensor_opts o;
	int rc = parse_args(argc, argv, &o);

	if (rc >= 0)
		return rc;
	timing_init();
	lb_catch_signals();
	return run(&o, argc, argv);
}
