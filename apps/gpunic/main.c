/* gpunic: one CLI for every tool (docs/DESIGN.md piece 9). */
#include <stdio.h>
#include <string.h>

#include <gpunic/version.h>

#include "commands.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

const struct gpunic_command gpunic_commands[] = {
	{ "sensor", "FPGA/HSB emulator: send timestamped messages, verify echoes, time them",
	  cmd_sensor },
	{ "loop", "the forwarder on the GPU host: echo each message (gpu, cpu or naive)", cmd_loop },
	{ "bench", "run a whole experiment on one machine and write a report", cmd_bench },
	{ "perf", "perftest-style latency and bandwidth tests (GPU- or CPU-initiated)", cmd_perf },
	{ "decode", "decode RoCEv2 frames of a pcap file, one JSON object per frame", cmd_decode },
	{ "doctor", "check GPU, GDRCopy, handler modes, placements and links here", cmd_doctor },
	{ "pingpong", "ibv_rc/uc_pingpong counterpart, for real RoCE peers", cmd_pingpong },
	{ "immtest", "SEND/WRITE_WITH_IMM both ways against the interop immtest", cmd_immtest },
	{ "help", "list the commands; help CMD: CMD's options", cmd_help },
	{ "version", "print the version and the commit gpunic was built from", cmd_version },
	{ NULL, NULL, NULL },
};

static const struct gpunic_command *find_command(const char *name)
{
	for (const struct gpunic_command *c = gpunic_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* gpunic help: the commands; gpunic help CMD: what gpunic CMD --help prints. */
static int cmd_help(int argc, char **argv)
{
	const struct gpunic_command *c;
	char *sub[] = { NULL, "--help", NULL };

	if (argc > 2) {
		fprintf(stderr, "gpunic help: one command at most (try 'gpunic help')\n");
		return 2;
	}
	if (argc == 2 && strcmp(argv[1], "help") != 0) {
		c = find_command(argv[1]);
		if (!c) {
			fprintf(stderr, "gpunic help: unknown command '%s' (try 'gpunic help')\n",
				argv[1]);
			return 2;
		}
		sub[0] = (char *)c->name;
		return c->run(2, sub);
	}
	printf("usage: gpunic <command> [options]   (gpunic help <command>, or\n"
	       "       gpunic <command> --help, for its options)\n\n");
	for (c = gpunic_commands; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	printf("\n"
	       "Every command takes -v/--verbose (more library messages; GPUNIC_LOG_LEVEL sets\n"
	       "the level too), --quiet and -h/--help; a timeout is --timeout SECONDS.\n"
	       "\n"
	       "Exit status:\n"
	       "  0  success\n"
	       "  1  the command ran and failed (each command's help says how)\n"
	       "  2  usage error: an unknown command or option, an invalid value\n");
	return 0;
}

/* The library's release and commit, as loaded: what a bug report needs. */
static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("gpunic %s (commit %s)\n", gpunic_version(), gpunic_commit());
	return 0;
}

int main(int argc, char **argv)
{
	const struct gpunic_command *c;

	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0))
		return cmd_version(argc - 1, argv + 1);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(1, argv) == 0 && argc >= 2 ? 0 : 2;
	c = find_command(argv[1]);
	if (c)
		return c->run(argc - 1, argv + 1);
	fprintf(stderr, "gpunic: unknown command '%s' (try 'gpunic help')\n", argv[1]);
	return 2;
}
