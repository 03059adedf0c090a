// SPDX-License-Identifier: MIT
/*
 * gpunic perf end to end: a server and a client process of the real CLI, CPU executor, over
 * shm and udp (127.0.0.1 / 127.0.0.2), RC and UC where legal, small iteration counts. No
 * timing is asserted: only exit codes, the verification line and the JSON's shape.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/gpu.h"
#include "harness.h"

#ifndef GPUNIC_CLI
#error "GPUNIC_CLI must name the gpunic binary"
#endif
#ifndef GPUNIC_PYTHON
#define GPUNIC_PYTHON ""
#endif

#define MAX_ARGS 48
#define RUN_LIMIT_S 120

struct proc {
	pid_t pid;
	char out[256];
};

static char workdir[128];

/* The outputs are shown on stderr when a case fails; the folder goes either way. */
static void remove_workdir(void)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/server.txt", workdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/client.txt", workdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/alone.txt", workdir);
	unlink(path);
	rmdir(workdir);
}

static void make_workdir(void)
{
	if (workdir[0])
		return;
	snprintf(workdir, sizeof(workdir), "/tmp/gpunic-perf-test-%d", (int)getpid());
	mkdir(workdir, 0700);
	atexit(remove_workdir);
}

static void spawn(struct proc *p, const char *tag, char *const argv[])
{
	int fd;

	snprintf(p->out, sizeof(p->out), "%s/%s.txt", workdir, tag);
	fflush(stdout);
	fflush(stderr);
	p->pid = fork();
	CHECK(p->pid >= 0);
	if (p->pid == 0) {
		fd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(GPUNIC_CLI, argv);
		_exit(127);
	}
}

/* Exit status of @p, killing it past RUN_LIMIT_S. */
static int reap(struct proc *p)
{
	time_t t0 = time(NULL);
	int status;

	for (;;) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid)
			break;
		if (time(NULL) - t0 > RUN_LIMIT_S) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			return -1;
		}
		usleep(20000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf[0] = 0;
	fclose(f);
	return buf ? buf : strdup("");
}

static void show(const struct proc *p)
{
	char *s = slurp(p->out);

	fprintf(stderr, "---- %s\n%s", p->out, s);
	free(s);
}

static unsigned seq;

/* A port the kernel just had free on @ip (TCP or UDP): other programs may share the machine. */
static uint16_t free_port(int type, const char *ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, type, 0);
	uint16_t port;

	CHECK(fd >= 0);
	inet_pton(AF_INET, ip, &a.sin_addr);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static uint16_t unique_port(unsigned k)
{
	(void)k;
	return free_port(SOCK_STREAM, "0.0.0.0");
}

/* Build argv: "gpunic" "perf" then the words of @fmt's expansion split at blanks. */
static void argv_of(char **argv, char *line)
{
	int n = 0;

	argv[n++] = (char *)"gpunic";
	argv[n++] = (char *)"perf";
	for (char *tok = strtok(line, " "); tok && n < MAX_ARGS - 1; tok = strtok(NULL, " "))
		argv[n++] = tok;
	argv[n] = NULL;
}

/*
 * Run TEST between a server and a client over @link ("shm" or "udp") with @conn and @extra
 * options; both must exit with @want. Returns with the outputs kept in @srv / @cli.
 */
static void run_pair(const char *test, const char *link, const char *conn, const char *extra,
		     int want, struct proc *srv, struct proc *cli)
{
	char sline[512], cline[512], sl[128], cl[128];
	char *sargv[MAX_ARGS], *cargv[MAX_ARGS];
	uint16_t oob = unique_port(0), ps = free_port(SOCK_DGRAM, "127.0.0.1"),
		 pc = free_port(SOCK_DGRAM, "127.0.0.2");
	int rs, rc;

	seq++;
	if (strcmp(link, "shm") == 0) {
		snprintf(sl, sizeof(sl), "--link shm:/gpunic-perftest-%d-%u,a,create --ip 10.0.0.1",
			 (int)getpid(), seq);
		snprintf(cl, sizeof(cl), "--link shm:/gpunic-perftest-%d-%u,b --ip 10.0.0.2",
			 (int)getpid(), seq);
	} else {
		snprintf(sl, sizeof(sl), "--link udp:127.0.0.1:%u", ps);
		snprintf(cl, sizeof(cl), "--link udp:127.0.0.2:%u", pc);
	}
	snprintf(sline, sizeof(sline), "%s --executor cpu -c %s -p %u --timeout 30 %s %s", test,
		 conn, oob, sl, extra);
	snprintf(cline, sizeof(cline), "%s 127.0.0.1 --executor cpu -c %s -p %u --timeout 30 %s %s",
		 test, conn, oob, cl, extra);
	argv_of(sargv, sline);
	argv_of(cargv, cline);
	spawn(srv, "server", sargv);
	spawn(cli, "client", cargv);
	rc = reap(cli);
	rs = reap(srv);
	if (rs != want || rc != want) {
		show(srv);
		show(cli);
		harness_fail(__FILE__, __LINE__, "%s over %s %s: server exit %d, client exit %d, "
			     "want %d", test, link, conn, rs, rc, want);
	}
}

static bool output_has(const struct proc *p, const char *what)
{
	char *s = slurp(p->out);
	bool yes = strstr(s, what) != NULL;

	free(s);
	return yes;
}

/* One pair; bandwidth tests must report verified payload on the receiving side. */
static void pair(const char *test, const char *link, const char *conn)
{
	struct proc srv, cli;
	bool bw = strstr(test, "_bw") != NULL;

	make_workdir();
	run_pair(test, link, conn, "-n 40 -s 3000", 0, &srv, &cli);
	if (bw) {
		const struct proc *rx = strcmp(test, "read_bw") == 0 ? &cli : &srv;

		if (!output_has(rx, "data verified: ") || !output_has(rx, " 0 errors")) {
			show(&srv);
			show(&cli);
			harness_fail(__FILE__, __LINE__, "%s: no verification line", test);
		}
	}
	CHECK(output_has(&cli, "#bytes"));
}

/*
 * Atomics: the client checks every fetched value and the server its targets, both exact
 * between two gpunic sides (the server's targets start at 0).
 */
static void atomic_pair(const char *test, const char *link, const char *type)
{
	struct proc srv, cli;
	char extra[64];

	make_workdir();
	snprintf(extra, sizeof(extra), "-n 300 -A %s", type);
	run_pair(test, link, "RC", extra, 0, &srv, &cli);
	if (!output_has(&cli, "atomic values verified: 300 fetched values") ||
	    !output_has(&srv, "atomic targets verified: 300 ") ||
	    !output_has(&srv, "every target exact") || output_has(&cli, "MISMATCH")) {
		show(&srv);
		show(&cli);
		harness_fail(__FILE__, __LINE__, "%s %s: no verification line", test, type);
	}
	CHECK(output_has(&cli, "#bytes"));
}

TEST(shm_rc_atomic_lat) { atomic_pair("atomic_lat", "shm", "FETCH_AND_ADD"); }
TEST(shm_rc_atomic_bw) { atomic_pair("atomic_bw", "shm", "FETCH_AND_ADD"); }
TEST(shm_rc_atomic_lat_cas) { atomic_pair("atomic_lat", "shm", "CMP_AND_SWAP"); }
TEST(udp_rc_atomic_bw_cas) { atomic_pair("atomic_bw", "udp", "CMP_AND_SWAP"); }

TEST(shm_rc_send_lat) { pair("send_lat", "shm", "RC"); }
TEST(shm_rc_write_lat) { pair("write_lat", "shm", "RC"); }
TEST(shm_rc_read_lat) { pair("read_lat", "shm", "RC"); }
TEST(shm_rc_send_bw) { pair("send_bw", "shm", "RC"); }
TEST(shm_rc_write_bw) { pair("write_bw", "shm", "RC"); }
TEST(shm_rc_read_bw) { pair("read_bw", "shm", "RC"); }
TEST(shm_rc_put_bw) { pair("put_bw", "shm", "RC"); }
TEST(shm_uc_send_lat) { pair("send_lat", "shm", "UC"); }
TEST(shm_uc_write_lat) { pair("write_lat", "shm", "UC"); }
TEST(shm_uc_send_bw) { pair("send_bw", "shm", "UC"); }
TEST(shm_uc_write_bw) { pair("write_bw", "shm", "UC"); }
TEST(shm_uc_put_bw) { pair("put_bw", "shm", "UC"); }
TEST(udp_rc_send_lat) { pair("send_lat", "udp", "RC"); }
TEST(udp_rc_write_lat) { pair("write_lat", "udp", "RC"); }
TEST(udp_rc_read_lat) { pair("read_lat", "udp", "RC"); }
TEST(udp_rc_send_bw) { pair("send_bw", "udp", "RC"); }
TEST(udp_rc_write_bw) { pair("write_bw", "udp", "RC"); }
TEST(udp_rc_read_bw) { pair("read_bw", "udp", "RC"); }
TEST(udp_rc_put_bw) { pair("put_bw", "udp", "RC"); }
TEST(udp_uc_send_lat) { pair("send_lat", "udp", "UC"); }
TEST(udp_uc_write_lat) { pair("write_lat", "udp", "UC"); }
TEST(udp_uc_send_bw) { pair("send_bw", "udp", "UC"); }
TEST(udp_uc_write_bw) { pair("write_bw", "udp", "UC"); }
TEST(udp_uc_put_bw) { pair("put_bw", "udp", "UC"); }

/* -a: every size from 2 up to --max-size, one result row each on the measuring side. */
TEST(sweep_write_lat)
{
	struct proc srv, cli;

	make_workdir();
	run_pair("write_lat", "shm", "RC", "-n 10 -a --max-size 1024", 0, &srv, &cli);
	CHECK(output_has(&cli, "\n      2  "));
	CHECK(output_has(&cli, "\n   1024  "));
	CHECK(!output_has(&cli, "\n   2048  "));
}

TEST(sweep_send_bw)
{
	struct proc srv, cli;

	make_workdir();
	run_pair("send_bw", "shm", "RC", "-n 8 -a --max-size 8192", 0, &srv, &cli);
	/* 13 sizes of 8 messages, every one checked by the server */
	CHECK(output_has(&srv, "data verified: 104 messages, 0 errors"));
}

TEST(put_bw_many_threads)
{
	struct proc srv, cli;

	make_workdir();
	run_pair("put_bw", "shm", "RC", "-n 200 -s 1024 --threads 8", 0, &srv, &cli);
	CHECK(output_has(&srv, "data verified: 200 messages, 0 errors"));
}

static void json_check(const struct proc *p, const char *script)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "%s -c '%s' < %s", GPUNIC_PYTHON, script, p->out);
	if (system(cmd) != 0) {
		show(p);
		harness_fail(__FILE__, __LINE__, "JSON check failed: %s", script);
	}
}

TEST(json_parses)
{
	struct proc srv, cli;

	if (!GPUNIC_PYTHON[0] || access(GPUNIC_PYTHON, X_OK))
		SKIP("no python3 for the JSON check");
	make_workdir();
	run_pair("write_bw", "shm", "RC", "-n 30 -s 512 --json", 0, &srv, &cli);
	json_check(&cli, "import json,sys; d=json.load(sys.stdin); "
			 "assert d[\"test\"]==\"write_bw\" and d[\"role\"]==\"client\"; "
			 "r=d[\"results\"][0]; assert r[\"bytes\"]==512 and r[\"iterations\"]==30; "
			 "assert r[\"bw_avg_mb_s\"]>0 and d[\"ok\"]");
	json_check(&srv, "import json,sys; d=json.load(sys.stdin); "
			 "v=d[\"verification\"]; assert v[\"ran\"] and v[\"messages\"]==30; "
			 "assert v[\"errors\"]==0 and d[\"peer\"]==\"gpunic\"");
	run_pair("send_lat", "shm", "UC", "-n 20 --json", 0, &srv, &cli);
	json_check(&cli, "import json,sys; d=json.load(sys.stdin); r=d[\"results\"][0]; "
			 "assert r[\"iterations\"]==20 and r[\"t_min_usec\"]<=r[\"t_max_usec\"]; "
			 "assert \"p99_9_usec\" in r and d[\"connection\"]==\"UC\"");
}

/* Run the CLI alone; return its exit status and keep its output. */
static int run_alone(struct proc *p, const char *args)
{
	char line[512];
	char *argv[MAX_ARGS];

	snprintf(line, sizeof(line), "%s", args);
	argv_of(argv, line);
	spawn(p, "alone", argv);
	return reap(p);
}

TEST(bad_flags_exit_2)
{
	static const char *const bad[] = {
		"",				/* no test */
		"write_lat --bogus",
		"nosuch_lat",
		"write_lat -c XC",
		"read_lat -c UC",
		"read_bw -c UC",
		"write_lat -s 0",
		"write_lat -s 99999999",
		"write_bw -n 0",
		"write_bw -m 1000",
		"send_lat --executor fpga",
		"send_lat --handler magic",
		"write_lat --threads 4",
		"write_lat -a -s 64",
		"write_lat --ip 1.2.3",
		"write_lat -s",
		"write_lat host extra",
		"write_lat --pair 127.0.0.1",
		"write_lat --pair --link shm:/gpunic-x,a,create",
		"write_lat --pair --ip 10.0.0.9",
		"write_lat --peer-gpu 1",
		"write_lat --peer-executor cpu",
		"write_lat --pair --peer-executor fpga",
		"write_lat --pair --peer-gpu -1",
		"write_bw --check-threads 2",
		"send_bw --check-threads 1024",
		"atomic_lat -c UC",
		"atomic_bw -s 64",
		"atomic_bw -a",
		"atomic_lat -A SWAP",
		"write_lat -A FETCH_AND_ADD",
		"atomic_bw --check-threads 1",
	};
	struct proc p;

	make_workdir();
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = run_alone(&p, bad[i]);

		if (rc != 2 || !output_has(&p, "gpunic perf: ")) {
			show(&p);
			harness_fail(__FILE__, __LINE__, "'gpunic perf %s': exit %d, want 2 and a "
				     "message", bad[i], rc);
		}
	}
	CHECK_EQ(run_alone(&p, "--help"), 0);
	CHECK(output_has(&p, "usage: gpunic perf"));
}

TEST(gpu_executor_without_gpu)
{
	struct gpunic_gpu_info info;
	struct proc p;

	if (gpunic_gpu_probe(0, &info) == 0 && info.present)
		SKIP("a GPU is present: %s", info.name);
	make_workdir();
	CHECK_EQ(run_alone(&p, "write_lat 127.0.0.1 --executor gpu --timeout 2"), 1);
	CHECK(output_has(&p, "--executor gpu needs a GPU"));
}

/*
 * --pair: both sides in one process (server on a thread) over a private cable. Every test
 * completes, the receiving side verifies, and both sides' reports are printed.
 */
static void pair_in_process_sized(const char *test, const char *conn, const char *executor,
				  const char *size, const char *extra)
{
	bool atomic = strncmp(test, "atomic_", 7) == 0;
	char args[160];
	struct proc p;
	int rc;

	make_workdir();
	snprintf(args, sizeof(args), "%s --pair --executor %s -c %s -n 40 %s --timeout 30 %s",
		 test, executor, conn, atomic ? "" : size, extra);
	rc = run_alone(&p, args);
	if (rc != 0 || !output_has(&p, test) || !output_has(&p, ": client, ") ||
	    !output_has(&p, ": server, ") || !output_has(&p, "#bytes") ||
	    (strstr(extra, "--profile") && !output_has(&p, " profile (per round trip, mean): ")) ||
	    (strstr(test, "_bw") && !atomic && !output_has(&p, "data verified: ")) ||
	    (atomic && (!output_has(&p, "atomic values verified: 40 ") ||
			!output_has(&p, "atomic targets verified: 40 "))) ||
	    output_has(&p, "MISMATCH")) {
		show(&p);
		harness_fail(__FILE__, __LINE__, "'gpunic perf %s': exit %d", args, rc);
	}
}

static void pair_in_process_on(const char *test, const char *conn, const char *executor,
			       const char *extra)
{
	pair_in_process_sized(test, conn, executor, "-s 3000", extra);
}

static void pair_in_process(const char *test, const char *conn)
{
	pair_in_process_on(test, conn, "cpu", "");
}

/* Both sides GPU-initiated, their kernels side by side on one GPU (labelled gpu as well). */
static void pair_on_gpu(const char *test)
{
	struct gpunic_gpu_info info;

	if (gpunic_gpu_probe(0, &info) != 0 || !info.present)
		SKIP("no GPU: %s", info.reason);
	pair_in_process_on(test, "RC", "gpu", "");
}

/*
 * Small messages: on a GPU the latency tests' warp path (perf_lat_dev.h), with its stage
 * profile; on the CPU the same tests' thread loop, which it stands in for.
 */
static void pair_small(const char *test, const char *executor)
{
	struct gpunic_gpu_info info;

	if (!strcmp(executor, "gpu") && (gpunic_gpu_probe(0, &info) != 0 || !info.present))
		SKIP("no GPU: %s", info.reason);
	pair_in_process_sized(test, "RC", executor, "-s 32", "--profile");
}

TEST(pair_gpu_send_lat_small) { pair_small("send_lat", "gpu"); }
TEST(pair_gpu_write_lat_small) { pair_small("write_lat", "gpu"); }
TEST(pair_send_lat_small) { pair_small("send_lat", "cpu"); }
TEST(pair_write_lat_small) { pair_small("write_lat", "cpu"); }

TEST(pair_gpu_send_lat) { pair_on_gpu("send_lat"); }
TEST(pair_gpu_write_lat) { pair_on_gpu("write_lat"); }
TEST(pair_gpu_read_lat) { pair_on_gpu("read_lat"); }
TEST(pair_gpu_send_bw) { pair_on_gpu("send_bw"); }
TEST(pair_gpu_write_bw) { pair_on_gpu("write_bw"); }
TEST(pair_gpu_read_bw) { pair_on_gpu("read_bw"); }
TEST(pair_gpu_put_bw) { pair_on_gpu("put_bw"); }
TEST(pair_gpu_atomic_lat) { pair_on_gpu("atomic_lat"); }
TEST(pair_gpu_atomic_bw) { pair_on_gpu("atomic_bw"); }

/*
 * -a over a few sizes, with more iterations than receives kept posted (send_lat 4; send_bw 512
 * up to 32 KiB), so that each size reposts its receives: every size must post its own receive
 * WQEs, for its own length. A second size that reused the first size's WQEs failed with a
 * local length error under RC and hung under UC, which drops the message (the --timeout
 * watchdog then fails the run; reap() kills what outlives RUN_LIMIT_S). send_bw under UC keeps
 * to 512 messages a size: a UC sender is not held back by the receiver, and one that ran more
 * than rx_depth messages ahead of a slow (loaded, sanitized) receiver would lose some.
 */
static void pair_sweep(const char *test, const char *conn, const char *executor)
{
	struct gpunic_gpu_info info;
	bool bw = strstr(test, "_bw") != NULL;
	uint32_t iters = bw ? (strcmp(conn, "UC") ? 600 : 512) : 100, sizes = 8;
	char args[192], want[64];
	struct proc p;
	int rc;

	if (!strcmp(executor, "gpu") && (gpunic_gpu_probe(0, &info) != 0 || !info.present))
		SKIP("no GPU: %s", info.reason);
	make_workdir();
	/* 2 .. 256 bytes: on a GPU the latency warp's inline sizes and the thread loop's */
	snprintf(args, sizeof(args), "%s --pair --executor %s -c %s -n %u -a --max-size 256 "
		 "--timeout 30", test, executor, conn, iters);
	snprintf(want, sizeof(want), "data verified: %u messages, 0 errors", iters * sizes);
	rc = run_alone(&p, args);
	if (rc != 0 || !output_has(&p, "\n      2  ") || !output_has(&p, "\n     64  ") ||
	    !output_has(&p, "\n    256  ") || output_has(&p, "\n    512  ") ||
	    (bw && !output_has(&p, want)) || output_has(&p, "MISMATCH")) {
		show(&p);
		harness_fail(__FILE__, __LINE__, "'gpunic perf %s': exit %d", args, rc);
	}
}

TEST(pair_rc_send_lat_sweep) { pair_sweep("send_lat", "RC", "cpu"); }
TEST(pair_uc_send_lat_sweep) { pair_sweep("send_lat", "UC", "cpu"); }
TEST(pair_rc_send_bw_sweep) { pair_sweep("send_bw", "RC", "cpu"); }
TEST(pair_uc_send_bw_sweep) { pair_sweep("send_bw", "UC", "cpu"); }
TEST(pair_gpu_send_lat_sweep) { pair_sweep("send_lat", "RC", "gpu"); }
TEST(pair_gpu_send_bw_sweep) { pair_sweep("send_bw", "RC", "gpu"); }

TEST(pair_rc_send_lat) { pair_in_process("send_lat", "RC"); }
TEST(pair_rc_write_lat) { pair_in_process("write_lat", "RC"); }
TEST(pair_rc_read_lat) { pair_in_process("read_lat", "RC"); }
TEST(pair_rc_send_bw) { pair_in_process("send_bw", "RC"); }
TEST(pair_rc_write_bw) { pair_in_process("write_bw", "RC"); }
TEST(pair_rc_read_bw) { pair_in_process("read_bw", "RC"); }
TEST(pair_rc_put_bw) { pair_in_process("put_bw", "RC"); }
TEST(pair_uc_send_lat) { pair_in_process("send_lat", "UC"); }
TEST(pair_uc_write_bw) { pair_in_process("write_bw", "UC"); }
TEST(pair_rc_atomic_lat) { pair_in_process("atomic_lat", "RC"); }
TEST(pair_rc_atomic_bw) { pair_in_process("atomic_bw", "RC"); }

/* Checker threads sharing each message's check (the GPU's default) on host threads. */
TEST(pair_send_bw_checker_threads)
{
	pair_in_process_on("send_bw", "RC", "cpu", "--check-threads 3");
}

TEST(pair_read_bw_checker_threads)
{
	pair_in_process_on("read_bw", "RC", "cpu", "--check-threads 3");
}

TEST(pair_json_parses)
{
	struct proc p;

	if (!GPUNIC_PYTHON[0] || access(GPUNIC_PYTHON, X_OK))
		SKIP("no python3 for the JSON check");
	make_workdir();
	CHECK_EQ(run_alone(&p, "write_bw --pair --executor cpu -n 30 -s 512 --json"), 0);
	json_check(&p, "import json,sys; d=json.load(sys.stdin); assert d[\"pair\"]; "
		       "c=d[\"client\"]; s=d[\"server\"]; "
		       "assert c[\"role\"]==\"client\" and s[\"role\"]==\"server\"; "
		       "assert c[\"ok\"] and s[\"ok\"] and c[\"results\"][0][\"bw_avg_mb_s\"]>0; "
		       "v=s[\"verification\"]; assert v[\"ran\"] and v[\"messages\"]==30; "
		       "assert v[\"errors\"]==0 and c[\"local\"][\"ip\"]==\"10.0.0.2\"");
}

/* A GPU side with no GPU is refused before either side starts (no wait for a peer). */
TEST(pair_gpu_side_without_gpu)
{
	struct gpunic_gpu_info info;
	struct proc p;
	time_t t0 = time(NULL);

	if (gpunic_gpu_probe(0, &info) == 0 && info.present)
		SKIP("a GPU is present: %s", info.name);
	make_workdir();
	CHECK_EQ(run_alone(&p, "write_lat --pair --executor cpu --peer-executor gpu"), 1);
	CHECK(output_has(&p, "the server's executor is gpu, and there is no GPU 0"));
	CHECK(time(NULL) - t0 < 30);
}

/* A peer that never comes: the server gives up after --timeout with a clear error. */
TEST(no_client_times_out)
{
	char args[128];
	struct proc p;

	make_workdir();
	snprintf(args, sizeof(args), "write_lat --executor cpu -p %u --timeout 1",
		 unique_port(5));
	CHECK_EQ(run_alone(&p, args), 1);
	CHECK(output_has(&p, "no client on TCP port"));
}
