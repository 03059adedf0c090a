// SPDX-License-Identifier: MIT
/* Library logging: GPUNIC_LOG_LEVEL parsing (read once), prefix, sinks, rate limits, threads.
 * Each case runs in its own process, so the read-once level starts fresh in every case. */
#include "harness.h"

#include <gpunic/log.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define MAX_LINES 4096

static char *lines[MAX_LINES];
static int levels[MAX_LINES];
static int nlines;

static void capture(int level, const char *line, void *arg)
{
	(void)arg;
	if (nlines < MAX_LINES) {
		levels[nlines] = level;
		lines[nlines++] = strdup(line);
	}
}

static void capture_start(void)
{
	for (int i = 0; i < nlines; i++)
		free(lines[i]);
	nlines = 0;
	gpunic_log_set_sink(capture, NULL);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Unset: errors and warnings reach the user, the chatter below them does not. */
TEST(log_default_errors_and_warnings)
{
	unsetenv("GPUNIC_LOG_LEVEL");
	capture_start();
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_DEFAULT);
	CHECK_EQ(GPUNIC_LOG_DEFAULT, GPUNIC_LOG_WARNING);
	gpunic_err("an error");
	gpunic_warn("a warning");
	gpunic_info("info");
	gpunic_dbg("debug");
	CHECK_EQ(nlines, 2);
}

TEST(log_level_number)
{
	setenv("GPUNIC_LOG_LEVEL", "4", 1);
	capture_start();
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_WARNING);
	gpunic_warn("value %d", 42);
	gpunic_info("not shown");
	CHECK_EQ(nlines, 1);
	CHECK_EQ(levels[0], GPUNIC_LOG_WARNING);
	CHECK(strcmp(lines[0], "gpunic: warning: test_log_level_number: value 42\n") == 0);
}

TEST(log_level_name)
{
	setenv("GPUNIC_LOG_LEVEL", "debug", 1);
	capture_start();
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_DEBUG);
	gpunic_dbg("trailing newline kept single\n");
	CHECK_EQ(nlines, 1);
	CHECK(strcmp(lines[0],
		     "gpunic: debug: test_log_level_name: trailing newline kept single\n") == 0);
}

TEST(log_parse_levels)
{
	static const struct {
		const char *text;
		int level;
	} ok[] = {
		{ "0", 0 },	     { "7", 7 },	  { "3", 3 },	     { "emerg", 0 },
		{ "alert", 1 },	     { "crit", 2 },	  { "err", 3 },	     { "error", 3 },
		{ "warning", 4 },    { "warn", 4 },	  { "notice", 5 },   { "info", 6 },
		{ "debug", 7 },	     { "DEBUG", 7 },	  { "Warning", 4 },
	};
	static const char *const bad[] = { "", "8", "-1", "3x", "loud", "99999999999999999999",
					   " 3", "infos" };
	int level;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		level = -1;
		CHECK_EQ(gpunic_log_parse_level(ok[i].text, &level), 0);
		CHECK_EQ(level, ok[i].level);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(gpunic_log_parse_level(bad[i], &level), EINVAL);
	CHECK_EQ(gpunic_log_parse_level(NULL, &level), EINVAL);
	CHECK_EQ(gpunic_log_parse_level("3", NULL), EINVAL);
	CHECK(strcmp(gpunic_log_level_str(GPUNIC_LOG_ERR), "err") == 0);
	CHECK(strcmp(gpunic_log_level_str(8), "?") == 0);
}

TEST(log_level_invalid_warns)
{
	setenv("GPUNIC_LOG_LEVEL", "loud", 1);
	capture_start();
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_DEFAULT);
	CHECK_EQ(nlines, 1);
	CHECK_EQ(levels[0], GPUNIC_LOG_WARNING);
	CHECK(strstr(lines[0], "gpunic: warning: ") == lines[0]);
	CHECK(strstr(lines[0], "GPUNIC_LOG_LEVEL=\"loud\" is not a level"));
	/* Read once: the warning does not repeat. */
	gpunic_log_level();
	CHECK_EQ(nlines, 1);
}

TEST(log_level_read_once)
{
	setenv("GPUNIC_LOG_LEVEL", "7", 1);
	CHECK_EQ(gpunic_log_level(), 7);
	setenv("GPUNIC_LOG_LEVEL", "3", 1);
	CHECK_EQ(gpunic_log_level(), 7);
}

TEST(log_set_level_clamps)
{
	setenv("GPUNIC_LOG_LEVEL", "2", 1);
	gpunic_log_set_level(99);
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_DEBUG);
	gpunic_log_set_level(-5);
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_EMERG);
	gpunic_log_set_level(GPUNIC_LOG_INFO);
	CHECK_EQ(gpunic_log_level(), GPUNIC_LOG_INFO);
}

TEST(log_truncates_long_lines)
{
	char big[3000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	gpunic_log_set_level(GPUNIC_LOG_ERR);
	capture_start();
	gpunic_err("%s", big);
	CHECK_EQ(nlines, 1);
	CHECK(strlen(lines[0]) < 1024);
	CHECK(lines[0][strlen(lines[0]) - 1] == '\n');
}

TEST(log_ratelimit_window)
{
	struct gpunic_ratelimit rl = GPUNIC_RATELIMIT_INIT(100, 3);
	uint32_t missed = 99;
	int ok = 0;

	for (int i = 0; i < 10; i++)
		ok += gpunic_ratelimit_ok(&rl, &missed);
	CHECK_EQ(ok, 3);
	CHECK_EQ(missed, 0);
	sleep_ms(150);
	CHECK(gpunic_ratelimit_ok(&rl, &missed));
	CHECK_EQ(missed, 7);
	CHECK(gpunic_ratelimit_ok(&rl, &missed));
	CHECK_EQ(missed, 0);
}

TEST(log_ratelimited_macro_caps_floods)
{
	gpunic_log_set_level(GPUNIC_LOG_WARNING);
	capture_start();
	for (int i = 0; i < 1000; i++)
		gpunic_warn_ratelimited("flood %d", i);
	CHECK_EQ(nlines, GPUNIC_RATELIMIT_BURST);
	CHECK(strstr(lines[0], "flood 0"));
	/* Below the threshold a rate-limited message costs nothing and is not counted. */
	gpunic_log_set_level(GPUNIC_LOG_ERR);
	for (int i = 0; i < 10; i++)
		gpunic_dbg_ratelimited("hidden");
	CHECK_EQ(nlines, GPUNIC_RATELIMIT_BURST);
}

#define LOG_THREADS 8
#define LOG_PER_THREAD 200

static void *log_worker(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < LOG_PER_THREAD; i++)
		gpunic_info("thread %ld message %d end", id, i);
	return NULL;
}

TEST(log_threads_whole_lines)
{
	pthread_t t[LOG_THREADS];

	gpunic_log_set_level(GPUNIC_LOG_INFO);
	capture_start();
	for (long i = 0; i < LOG_THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, log_worker, (void *)i), 0);
	for (int i = 0; i < LOG_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(nlines, LOG_THREADS * LOG_PER_THREAD);
	for (int i = 0; i < nlines; i++) {
		CHECK(strncmp(lines[i], "gpunic: info: log_worker: thread ", 33) == 0);
		CHECK(strstr(lines[i], " end\n") != NULL);
	}
}

TEST(log_default_sink_is_stderr)
{
	/* No sink: output goes to stderr; restoring NULL after a sink must work too. */
	capture_start();
	gpunic_log_set_sink(NULL, NULL);
	gpunic_log_set_level(GPUNIC_LOG_ERR);
	gpunic_err("to stderr (expected in the test output)");
	CHECK_EQ(nlines, 0);
}
