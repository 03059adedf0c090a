// SPDX-License-Identifier: MIT
/*
 * gpunic loop: the host with the GPU. A UC QP, a receive ring of slots, and a forwarder that
 * sends every message back: a persistent GPU kernel (--executor gpu), the same per-message code
 * on a host thread (cpu), or copy-in / launch / copy-out per message (naive). With --rpc it
 * answers every message as an RPC request through its function table (docs/RPC.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "gpunic/gpu.h"
#include "gpunic/parse.h"
#include "cli.h"
#include "loopback.h"
#include "outfile.h"
#include "timing.h"

/* How often the wait for the sensor's end-of-run message looks at signals and counters. */
#define LOOP_POLL_MS 200

_Static_assert(GPUNIC_DEV_MAX_RING == 32768, "--slots' error message says 2..32768");

struct loop_opts {
	struct cli_net net;
	bool exec_given;
	bool engine_given;
	struct lb_fwd_cfg fwd;
	uint64_t count;
	uint64_t duration_ns;
	bool json;
	bool work_given;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic loop [options]\n"
		"\n"
		"The forwarder on the host with the GPU: receive each message of\n"
		"`gpunic sensor` (WRITE_WITH_IMM into a ring slot, or SEND) and send it back as\n"
		"a SEND. Runs until the sensor says it is done, --count or --duration-s is\n"
		"reached, or SIGINT.\n"
		"\n"
		"  --link SPEC          shm:NAME,a|b[,create] | udp:IP[:PORT] | dgram:...\n"
		"                       (default shm:/gpunic-loop,a,create)\n"
		"  --ip A.B.C.D         this end's address on shm/dgram links (192.168.0.101)\n"
		"  --oob-port N         TCP port where the sensor exchanges QP info (default %d)\n"
		"  --oob-bind A.B.C.D   address that port listens on (default 127.0.0.1: only\n"
		"                       this host; 0.0.0.0 for a sensor on another host; the\n"
		"                       exchange hands out the ring's key: docs/SECURITY.md)\n"
		"  --timeout S          wait this long (seconds, decimals allowed) for the sensor\n"
		"                       to connect (default: until it comes, as perftest's\n"
		"                       server waits; --oob-timeout-s is the old name)\n"
		"  --executor E         gpu: persistent kernel (default when there is a GPU)\n"
		"                       cpu: the same gpunic_loop_step() on a host thread\n"
		"                       naive: host thread, per message copy in, launch, copy out\n"
		"  --handler H          gpu-db | gpu-bf | cpu-proxy | auto (default auto: gpu-bf):\n"
		"                       how the executor tells the NIC it posted a send\n"
		"  --mode MODE          write-imm (zero-length receives, HSB) or send (slot\n"
		"                       receives); must match the sensor (default write-imm)\n"
		"  --work W             none | add-one (add 1 to every byte) (default none)\n"
		"  --rpc                answer every message as an RPC request (docs/RPC.md)\n"
		"                       through the built-in functions echo, add_one and\n"
		"                       surface_d3 (gpu and cpu executors)\n"
		"  --handler-lib FILE   with --rpc: also the CPU handlers of the shared library\n"
		"                       FILE (its gpunic_rpc_plugin()); the cpu executor only,\n"
		"                       chosen when --executor is not given. It runs in this\n"
		"                       process: load only a library you trust\n"
		"  --rpc-drop LIST      with --rpc: send nothing back, as CUDA-Q's dispatcher,\n"
		"                       for these requests: unknown (a function not in the\n"
		"                       table, or without a handler on this executor), magic\n"
		"                       (not 'CUQR'), both (cudaq), or none (default: every\n"
		"                       request is answered, a bad one with its negative status)\n"
		"  --slots N            receive ring slots of %u bytes, 2..%u (default %u)\n"
		"  --gpu N              CUDA device (default 0)\n"
		"  --engine-cpu N       pin the NIC engine thread\n"
		"  --exec-cpu N         pin the cpu/naive executor thread\n"
		"  --engine MODE        thread | inline: with the cpu and naive executors the\n"
		"                       executor thread can drive the NIC itself (default:\n"
		"                       inline on machines with fewer than 3 CPUs, else thread)\n"
		"  --count N            stop once N messages were echoed (looked at every\n"
		"                       0.2 s; the sensor's end-of-run message also stops it)\n"
		"  --duration-s F       stop after F seconds\n"
		"  --json               print one JSON object instead of the text report\n"
		CLI_COMMON_USAGE
		"  -h, --help           show this help\n"
		"\n"
		"The report ends with the receive errors: frames the link threw away (runts,\n"
		"oversized, unreadable) and frames the NIC found malformed, by reason; with\n"
		"--rpc, the requests by how they ended (ok, unknown_function, ...) and how many\n"
		"were dropped.\n"
		"\n",
		LB_DEFAULT_OOB_PORT, LB_SLOT_BYTES, GPUNIC_DEV_MAX_RING, LB_DEFAULT_SLOTS);
	cli_net_usage(out, false);
	cli_usage_exit(out, "the run ended normally (the sensor's end-of-run message, --count,\n"
			    "     --duration-s or SIGINT) with at least one message echoed",
		       "it could not run (no GPU for --executor gpu, a link that does not open,\n"
		       "     no sensor within --timeout), the executor failed, or nothing was\n"
		       "     echoed",
		       NULL);
}

static int bad(const char *opt, const char *val, const char *want)
{
	return cli_bad_value("loop", opt, val, want);
}

/* --rpc-drop: a comma list of unknown, magic, cudaq (both), none. Return: 0 or 2. */
static int parse_rpc_drop(const char *arg, uint32_t *flags)
{
	const char *want = "unknown, magic, cudaq or none, comma-separated";
	char buf[64], *save = NULL, *tok;
	unsigned words = 0;

	*flags = 0;
	if (strlen(arg) >= sizeof(buf))
		return bad("--rpc-drop", arg, want);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), words++) {
		if (strcmp(tok, "unknown") == 0)
			*flags |= GPUNIC_RPC_DROP_UNKNOWN;
		else if (strcmp(tok, "magic") == 0)
			*flags |= GPUNIC_RPC_DROP_BAD_MAGIC;
		else if (strcmp(tok, "cudaq") == 0)
			*flags |= GPUNIC_RPC_CUDAQ_DROPS;
		else if (strcmp(tok, "none") != 0)
			return bad("--rpc-drop", arg, want);
	}
	return words ? 0 : bad("--rpc-drop", arg, want);
}

/* What --rpc and its options need of the others. Return: 0, or 2 after saying why. */
static int check_rpc_opts(struct loop_opts *o, bool drop_given)
{
	const char *cmd = "gpunic loop";

	if (!o->fwd.rpc) {
		if (o->fwd.rpc_handler_lib || drop_given) {
			fprintf(stderr, "%s: %s needs --rpc\n", cmd,
				o->fwd.rpc_handler_lib ? "--handler-lib" : "--rpc-drop");
			return 2;
		}
		return 0;
	}
	if (o->work_given && o->fwd.work != GPUNIC_LOOP_WORK_NONE) {
		fprintf(stderr, "%s: --rpc answers requests, it does no --work: the function is the "
				"work (add_one adds 1 to every argument byte)\n", cmd);
		return 2;
	}
	if (o->exec_given && o->fwd.exec == LB_EXEC_NAIVE) {
		fprintf(stderr, "%s: --rpc runs on the gpu and cpu executors, not naive\n", cmd);
		return 2;
	}
	if (o->fwd.rpc_handler_lib) {
		if (o->exec_given && o->fwd.exec == LB_EXEC_GPU) {
			fprintf(stderr, "%s: --handler-lib loads CPU handlers, which the gpu executor "
					"cannot call: use --executor cpu\n", cmd);
			return 2;
		}
		o->fwd.exec = LB_EXEC_CPU;
		o->exec_given = true;
	}
	return 0;
}

/* Return: -1 to run, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct loop_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		CLI_COMMON_LONGOPTS,
		CLI_NET_LONGOPTS,
		{ "executor", required_argument, NULL, 'e' },
		{ "handler", required_argument, NULL, 'H' },
		{ "mode", required_argument, NULL, 'm' },
		{ "work", required_argument, NULL, 'w' },
		{ "slots", required_argument, NULL, 's' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "engine-cpu", required_argument, NULL, 'E' },
		{ "exec-cpu", required_argument, NULL, 'X' },
		{ "engine", required_argument, NULL, 'M' },
		{ "count", required_argument, NULL, 'n' },
		{ "duration-s", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "rpc", no_argument, NULL, 'R' },
		{ "handler-lib", required_argument, NULL, 'L' },
		{ "rpc-drop", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_getopt g = { .cmd = "loop", .shortopts = ":hv", .longopts = longopts,
				.usage = usage };
	bool drop_given = false;
	uint64_t v;
	int c, rc, ms;

	*o = (struct loop_opts){
		.net = { .link = "shm:/gpunic-loop,a,create", .ip = LB_LOOP_IP,
			 .oob_port = LB_DEFAULT_OOB_PORT, .oob_bind = "127.0.0.1" },
		.fwd = {
			.exec = LB_EXEC_GPU,
			.handler = GPUNIC_HANDLER_AUTO,
			.mode = LB_MODE_WRITE_IMM,
			.work = GPUNIC_LOOP_WORK_NONE,
			.slots = LB_DEFAULT_SLOTS,
			.engine_cpu = -1,
			.exec_cpu = -1,
		},
	};
	while ((c = cli_getopt_next(&g, argc, argv))) {
		switch (c) {
		case 'e':
			if (lb_executor_parse(optarg, &o->fwd.exec))
				return bad("--executor", optarg, "gpu, cpu or naive");
			o->exec_given = true;
			break;
		case 'H':
			if (lb_handler_parse(optarg, &o->fwd.handler))
				return bad("--handler", optarg, "gpu-db, gpu-bf, cpu-proxy or auto");
			break;
		case 'm':
			if (lb_mode_parse(optarg, &o->fwd.mode))
				return bad("--mode", optarg, "write-imm or send");
			break;
		case 'w':
			if (lb_work_parse(optarg, &o->fwd.work))
				return bad("--work", optarg, "none or add-one");
			o->work_given = true;
			break;
		case 'R':
			o->fwd.rpc = true;
			break;
		case 'L':
			if (!*optarg)
				return bad("--handler-lib", optarg, "a shared library's path");
			o->fwd.rpc_handler_lib = optarg;
			break;
		case 'D':
			if (parse_rpc_drop(optarg, &o->fwd.rpc_flags))
				return 2;
			drop_given = true;
			break;
		case 's':
			if (gpunic_parse_uint(optarg, 2, GPUNIC_DEV_MAX_RING, &v))
				return bad("--slots", optarg, "2..32768");
			o->fwd.slots = (uint32_t)v;
			break;
		case 'g':
			if (gpunic_parse_uint(optarg, 0, 255, &v))
				return bad("--gpu", optarg, "0..255");
			o->fwd.gpu = (int)v;
			break;
		case 'E':
			if (gpunic_parse_uint(optarg, 0, 1023, &v))
				return bad("--engine-cpu", optarg, "0..1023");
			o->fwd.engine_cpu = (int)v;
			break;
		case 'X':
			if (gpunic_parse_uint(optarg, 0, 1023, &v))
				return bad("--exec-cpu", optarg, "0..1023");
			o->fwd.exec_cpu = (int)v;
			break;
		case 'M':
			if (strcmp(optarg, "thread") == 0)
				o->fwd.inline_engine = false;
			else if (strcmp(optarg, "inline") == 0)
				o->fwd.inline_engine = true;
			else
				return bad("--engine", optarg, "thread or inline");
			o->engine_given = true;
			break;
		case 'n':
			if (gpunic_parse_uint(optarg, 1, UINT64_MAX >> 1, &o->count))
				return bad("--count", optarg, "1..2^63-1");
			break;
		case 'd':
			if (cli_parse_seconds(optarg, 1, 86400000, &ms))
				return bad("--duration-s", optarg, "0.001..86400 seconds");
			o->duration_ns = (uint64_t)ms * 1000000ull;
			break;
		case 'j':
			o->json = true;
			break;
		default:
			rc = cli_parse_net_opt("loop", c, optarg, &o->net);
			if (rc < 0)
				return cli_bad_option("loop", '?', argv[optind - 1]);
			if (rc != 1)
				return rc;
		}
	}
	if (g.exit >= 0)
		return g.exit;
	if (optind < argc)
		return cli_extra_arg("loop", argv[optind]);
	rc = cli_finish_net("loop", &o->net, false);
	if (rc)
		return rc;
	rc = check_rpc_opts(o, drop_given);
	if (rc)
		return rc;
	if (o->fwd.inline_engine && o->fwd.exec == LB_EXEC_GPU && o->exec_given) {
		fprintf(stderr, "gpunic loop: --engine inline needs the cpu or naive executor: "
				"a GPU kernel cannot drive the NIC\n");
		return 2;
	}
	return -1;
}

enum loop_end { END_SENSOR, END_COUNT, END_DURATION, END_SIGNAL, END_OOB_ERROR };

static const char *const end_names[] = {
	[END_SENSOR] = "sensor-done", [END_COUNT] = "count", [END_DURATION] = "duration",
	[END_SIGNAL] = "signal", [END_OOB_ERROR] = "oob-error",
};

/* Forward until something ends the run; *sensor_sent gets the sensor's count when it said. A
 * static peer says nothing: only the count, the duration or a signal end its run. */
static enum loop_end wait_for_end(const struct loop_opts *o, struct lb_fwd *f, int lfd,
				  struct lb_loop_session *ls, uint64_t *sensor_sent)
{
	uint64_t start = timing_now_ns();
	struct gpunic_qp_counters qc;
	struct timespec nap = { .tv_nsec = LOOP_POLL_MS * 1000000L };
	int err;

	for (;;) {
		if (atomic_load(&lb_stop_flag))
			return END_SIGNAL;
		if (o->net.peer_static) {
			nanosleep(&nap, NULL);
		} else {
			err = lb_session_loop_bye("gpunic loop", o->net.oob_port, lfd, LOOP_POLL_MS,
						  ls, sensor_sent);
			if (!err)
				return END_SENSOR;
			if (err != ETIMEDOUT && err != EINTR)
				return END_OOB_ERROR;
		}
		if (o->count && !lb_fwd_qp_counters(f, &qc) && qc.tx_messages >= o->count)
			return END_COUNT;
		if (o->duration_ns && timing_now_ns() - start >= o->duration_ns)
			return END_DURATION;
	}
}

/*
 * The handler as this executor uses it: the modes are named after the GPU executor, but a host
 * thread that rings the doorbell is not a GPU doing it.
 */
static const char *handler_text(const struct loop_opts *o, enum gpunic_handler_mode h)
{
	if (o->fwd.exec == LB_EXEC_GPU)
		return lb_handler_name(h);
	switch (h) {
	case GPUNIC_HANDLER_GPU_DB:
		return "doorbell (GPU_DB's path, rung by the host thread)";
	case GPUNIC_HANDLER_GPU_BF:
		return "BlueFlame (GPU_BF's path, written by the host thread)";
	default:
		return lb_handler_name(h);
	}
}

/* What the executor's last error was: an error CQE has a syndrome; a completion that was not an
 * error but could not be echoed (an immediate beyond the ring, a message longer than a slot) has
 * none. */
static void print_last_error(const struct lb_fwd_result *r)
{
	if (!r->errors)
		return;
	if (r->last_syndrome)
		printf(" (last: error CQE %s, syndrome 0x%x)",
		       gpunic_syndrome_str((uint8_t)r->last_syndrome), r->last_syndrome);
	else
		printf(" (last: a message skipped, no error CQE: its immediate names no slot of "
		       "the ring or it is longer than a slot)");
}

static void print_text(const struct loop_opts *o, const struct lb_loop_session *ls,
		       struct gpunic_link *link, const struct lb_fwd_result *r, enum loop_end end,
		       uint64_t sensor_sent)
{
	if (end == END_SENSOR)
		printf("gpunic loop: the sensor is done (it sent %llu)\n",
		       (unsigned long long)sensor_sent);
	else
		printf("gpunic loop: stopped (%s)\n", end_names[end]);
	printf(" echoed %llu  executor errors %llu", (unsigned long long)r->echoed,
	       (unsigned long long)r->errors);
	print_last_error(r);
	printf("\n NIC: rx %llu frames, tx %llu frames, tx busy %llu",
	       (unsigned long long)r->nic.rx_frames, (unsigned long long)r->nic.tx_frames,
	       (unsigned long long)r->nic.tx_busy);
	lb_print_drops(stdout, &r->nic);
	printf("\n QP: rx %llu messages, tx %llu messages\n", (unsigned long long)r->qp.rx_messages,
	       (unsigned long long)r->qp.tx_messages);
	printf(" out-of-band: %llu refused, %llu answered again, %llu abandoned, %llu dropped\n",
	       (unsigned long long)ls->refused, (unsigned long long)ls->repeated,
	       (unsigned long long)ls->abandoned, (unsigned long long)ls->dropped);
	if (o->fwd.rpc)
		lb_print_rpc_counters(stdout, &r->rpc);
	cli_print_rx_errors(stdout, link, &r->nic);
}

/* "echo, add_one, surface_d3": the functions the table serves. */
static void print_rpc_functions(FILE *out, const struct gpunic_rpc_table *t, bool json)
{
	for (uint32_t i = 0; t && i < t->count; i++)
		fprintf(out, json ? "%s\"%s\"" : "%s%s", i ? ", " : "", t->entries[i].name);
}

/* "unknown,magic", "none": what the table drops. */
static const char *rpc_drop_text(uint32_t flags)
{
	switch (flags & GPUNIC_RPC_CUDAQ_DROPS) {
	case GPUNIC_RPC_CUDAQ_DROPS:
		return "unknown,magic";
	case GPUNIC_RPC_DROP_UNKNOWN:
		return "unknown";
	case GPUNIC_RPC_DROP_BAD_MAGIC:
		return "magic";
	default:
		return "none";
	}
}

static void print_json(const struct loop_opts *o, struct lb_fwd *f, struct gpunic_link *link,
		       const struct lb_loop_session *ls, const struct lb_fwd_result *r,
		       enum loop_end end, uint64_t sensor_sent)
{
	const char *gpu = lb_fwd_gpu_name(f);

	printf("{\"command\": \"loop\", ");
	json_fput_version(stdout, ", ");
	printf("\"executor\": \"%s\", \"handler\": \"%s\", "
	       "\"engine\": \"%s\", \"mode\": \"%s\", \"work\": \"%s\", \"slots\": %u, ",
	       lb_executor_name(o->fwd.exec), lb_handler_name(lb_fwd_handler(f)),
	       o->fwd.inline_engine && o->fwd.exec != LB_EXEC_GPU ? "inline" : "thread",
	       lb_mode_name(o->fwd.mode), lb_work_name(o->fwd.work), o->fwd.slots);
	if (gpu[0])
		printf("\"gpu\": \"%s\", ", gpu);
	else
		printf("\"gpu\": null, ");
	printf("\"end\": \"%s\", ", end_names[end]);
	if (end == END_SENSOR)
		printf("\"sensor_sent\": %llu, ", (unsigned long long)sensor_sent);
	else
		printf("\"sensor_sent\": null, ");
	if (o->fwd.rpc) {
		printf("\"rpc_functions\": [");
		print_rpc_functions(stdout, lb_fwd_rpc_table(f), true);
		printf("], \"rpc_drop\": \"%s\", ", rpc_drop_text(o->fwd.rpc_flags));
		lb_json_rpc_counters(stdout, &r->rpc);
		printf(", ");
	} else {
		printf("\"rpc_functions\": null, \"rpc_drop\": null, \"rpc\": null, ");
	}
	printf("\"echoed\": %llu, \"errors\": %llu, \"last_syndrome\": %u, \"last_error\": %s, "
	       "\"nic\": {\"rx_frames\": %llu, \"tx_frames\": %llu, \"tx_busy\": %llu, \"drops\": ",
	       (unsigned long long)r->echoed, (unsigned long long)r->errors, r->last_syndrome,
	       !r->errors ? "null" : r->last_syndrome ? "\"error-cqe\"" : "\"skipped-message\"",
	       (unsigned long long)r->nic.rx_frames, (unsigned long long)r->nic.tx_frames,
	       (unsigned long long)r->nic.tx_busy);
	lb_json_drops(stdout, &r->nic);
	printf(", \"rx_errors\": ");
	cli_json_rx_errors(stdout, link, &r->nic);
	printf("}, \"qp\": {\"rx_messages\": %llu, \"tx_messages\": %llu, \"rx_packets\": %llu, "
	       "\"tx_packets\": %llu}, ",
	       (unsigned long long)r->qp.rx_messages, (unsigned long long)r->qp.tx_messages,
	       (unsigned long long)r->qp.rx_packets, (unsigned long long)r->qp.tx_packets);
	printf("\"oob\": {\"refused\": %llu, \"repeated\": %llu, \"abandoned\": %llu, "
	       "\"dropped\": %llu}}\n",
	       (unsigned long long)ls->refused, (unsigned long long)ls->repeated,
	       (unsigned long long)ls->abandoned, (unsigned long long)ls->dropped);
}

static int run(struct loop_opts *o)
{
	struct gpunic_qp_info local;
	struct lb_loop_session ls = { 0 };
	uint64_t sensor_sent = 0;
	struct lb_fwd_result res;
	struct gpunic_gpu_info gi;
	struct gpunic_link *link;
	struct lb_fwd *f = NULL;
	struct gpunic_ep_addr addr;
	enum loop_end end;
	int err, stop_err, lfd = -1;

	if (!o->exec_given && gpunic_gpu_probe(o->fwd.gpu, &gi) != 0) {
		fprintf(stderr, "gpunic loop: no GPU (%s): using the CPU executor\n", gi.reason);
		o->fwd.exec = LB_EXEC_CPU;
	}
	/* three busy threads (sensor, engine, executor) do not fit on two cores */
	if (!o->engine_given)
		o->fwd.inline_engine = timing_cpu_count() < 3;
	err = gpunic_ep_link_open("gpunic", o->net.link, o->net.ip, NULL, 0, &link, &addr);
	if (err)
		return 1;
	err = lb_fwd_open(&f, &o->fwd, link, &addr);
	if (err)
		return 1;
	/* receives posted and the executor running before the sensor can send anything */
	err = lb_fwd_start(f);
	if (err)
		goto out;
	if (!o->json)
		printf("gpunic loop: executor %s%s%s, handler %s, engine %s, mode %s, work %s, "
		       "%u slots, link %s\n",
		       lb_executor_name(o->fwd.exec), lb_fwd_gpu_name(f)[0] ? " on " : "",
		       lb_fwd_gpu_name(f), handler_text(o, lb_fwd_handler(f)),
		       o->fwd.inline_engine && o->fwd.exec != LB_EXEC_GPU ? "inline" : "thread",
		       lb_mode_name(o->fwd.mode), lb_work_name(o->fwd.work), o->fwd.slots, o->net.link);
	if (!o->json && o->fwd.rpc) {
		printf("gpunic loop: RPC, serving ");
		print_rpc_functions(stdout, lb_fwd_rpc_table(f), false);
		printf("; dropping %s\n", rpc_drop_text(o->fwd.rpc_flags));
	}
	fflush(stdout);
	if (o->net.psn_given)
		lb_fwd_set_psn(f, o->net.psn);
	if (o->net.peer_static) {
		lb_fwd_info(f, &local);
		cli_print_local(stderr, "loop", &local);
	}
	if (!o->net.peer_static) {
		err = lb_session_loop_listen("gpunic loop", o->net.oob_bind, o->net.oob_port,
					     &lfd);
		if (err)
			goto out;
		/* as perftest's server says it waits: the next line comes only with a sensor */
		fprintf(stderr, "gpunic loop: waiting for the sensor's exchange on %s:%u ",
			o->net.oob_bind, o->net.oob_port);
		if (o->net.oob_timeout_ms)
			fprintf(stderr, "(up to %.3f s) ...\n", o->net.oob_timeout_ms / 1000.0);
		else
			fprintf(stderr, "(until it comes) ...\n");
	}
	err = lb_session_loop_start("gpunic loop", f, o->net.oob_port, lfd, o->net.oob_timeout_ms,
				    o->net.peer_static ? &o->net.peer : NULL, &ls);
	if (err)
		goto out;
	end = wait_for_end(o, f, lfd, &ls, &sensor_sent);
	stop_err = lb_fwd_stop(f, &res);
	if (o->json)
		print_json(o, f, link, &ls, &res, end, sensor_sent);
	else
		print_text(o, &ls, link, &res, end, sensor_sent);
	fflush(stdout);
	err = stop_err ? stop_err : end == END_OOB_ERROR ? EIO : 0;
	/* a run that echoed nothing did not do its job, however it ended */
	if (!err && !res.echoed) {
		fprintf(stderr, "gpunic loop: nothing was echoed");
		if (end == END_SENSOR)
			fprintf(stderr, " (the sensor said it sent %llu)",
				(unsigned long long)sensor_sent);
		fprintf(stderr, "\n");
		err = ENODATA;
	}
out:
	if (lfd >= 0)
		close(lfd);
	lb_fwd_close(f);
	return err ? 1 : 0;
}

int cmd_loop(int argc, char **argv)
{
	struct loop_opts o;
	int rc = parse_args(argc, argv, &o);

	if (rc >= 0)
		return rc;
	timing_init();
	lb_catch_signals();
	return run(&o);
}
