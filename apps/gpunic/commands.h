/* The gpunic CLI's commands: each is int cmd_<name>(int argc, char **argv), argv[0] = name. */
#ifndef GPUNIC_APP_COMMANDS_H
#define GPUNIC_APP_COMMANDS_H

struct gpunic_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

/* Defined in main.c: every command, in the order `gpunic help` prints them. */
extern const struct gpunic_command gpunic_commands[];

int cmd_decode(int argc, char **argv);
int cmd_pingpong(int argc, char **argv);
int cmd_immtest(int argc, char **argv);
int cmd_sensor(int argc, char **argv);
int cmd_loop(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_perf(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* gpunic bench's experiments besides loopback (argv[0] = the experiment's name). */
int bench_pcie(int argc, char **argv);

#endif
