/* gpunic: one CLI for every tool (DESIGN.md piece 9). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static int cmd_help(int argc, char **argv);

const struct gpunic_command gpunic_commands[] = {
	{ "decode", "decode RoCEv2 frames of a pcap file, one JSON object per frame", cmd_decode },
	{ "help", "list the commands", cmd_help },
	{ NULL, NULL, NULL },
};

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("usage: gpunic <command> [options]   (gpunic <command> --help for its options)\n\n");
	for (const struct gpunic_command *c = gpunic_commands; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(argc, argv) == 0 && argc >= 2 ? 0 : 2;
	for (const struct gpunic_command *c = gpunic_commands; c->name; c++)
		if (strcmp(c->name, argv[1]) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "gpunic: unknown command '%s' (try 'gpunic help')\n", argv[1]);
	return 2;
}
