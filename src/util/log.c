// SPDX-License-Identifier: MIT
/*
 * Library logging (include/gpunic/log.h). It lives beside mem because mem is its first user;
 * every module logs through the same header.
 */
#include <gpunic/log.h>
#include <gpunic/parse.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LOG_LINE_BYTES 1024

static const char *const level_names[] = {
	[GPUNIC_LOG_EMERG] = "emerg",	[GPUNIC_LOG_ALERT] = "alert", [GPUNIC_LOG_CRIT] = "crit",
	[GPUNIC_LOG_ERR] = "err",	[GPUNIC_LOG_WARNING] = "warning",
	[GPUNIC_LOG_NOTICE] = "notice", [GPUNIC_LOG_INFO] = "info",   [GPUNIC_LOG_DEBUG] = "debug",
};

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static atomic_int level_now = GPUNIC_LOG_DEFAULT;

/* One lock orders whole lines and guards the sink and every rate-limit state. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static gpunic_log_sink_fn sink_fn;
static void *sink_arg;

const char *gpunic_log_level_str(int level)
{
	if (level < GPUNIC_LOG_EMERG || level > GPUNIC_LOG_DEBUG)
		return "?";
	return level_names[level];
}

int gpunic_log_parse_level(const char *text, int *level)
{
	uint64_t v;

	if (!text || !*text || !level)
		return EINVAL;
	if (text[0] >= '0' && text[0] <= '9') {
		if (gpunic_parse_uint(text, GPUNIC_LOG_EMERG, GPUNIC_LOG_DEBUG, &v))
			return EINVAL;
		*level = (int)v;
		return 0;
	}
	for (int i = GPUNIC_LOG_EMERG; i <= GPUNIC_LOG_DEBUG; i++) {
		if (strcasecmp(text, level_names[i]) == 0) {
			*level = i;
			return 0;
		}
	}
	/* The spellings people type from habit (printk's "warn", "error"). */
	if (strcasecmp(text, "error") == 0) {
		*level = GPUNIC_LOG_ERR;
		return 0;
	}
	if (strcasecmp(text, "warn") == 0) {
		*level = GPUNIC_LOG_WARNING;
		return 0;
	}
	return EINVAL;
}

static void emit_line(int level, const char *line)
{
	pthread_mutex_lock(&log_lock);
	if (sink_fn)
		sink_fn(level, line, sink_arg);
	else
		fputs(line, stderr);
	pthread_mutex_unlock(&log_lock);
}

static void read_env_level(void)
{
	const char *text = getenv("GPUNIC_LOG_LEVEL");
	char line[LOG_LINE_BYTES];
	int level;

	if (!text)
		return;
	if (gpunic_log_parse_level(text, &level) == 0) {
		atomic_store(&level_now, level);
		return;
	}
	/* The user asked for logging and mistyped it: say so even though the level stays quiet. */
	snprintf(line, sizeof(line),
		 "gpunic: warning: %s: GPUNIC_LOG_LEVEL=\"%.64s\" is not a level (0-7 or emerg, "
		 "alert, crit, err, warning, notice, info, debug); using %d (%s)\n",
		 __func__, text, GPUNIC_LOG_DEFAULT, level_names[GPUNIC_LOG_DEFAULT]);
	emit_line(GPUNIC_LOG_WARNING, line);
}

int gpunic_log_level(void)
{
	pthread_once(&level_once, read_env_level);
	return atomic_load_explicit(&level_now, memory_order_relaxed);
}

void gpunic_log_set_level(int level)
{
	/* Read the environment first so that it cannot overwrite this later. */
	pthread_once(&level_once, read_env_level);
	if (level < GPUNIC_LOG_EMERG)
		level = GPUNIC_LOG_EMERG;
	if (level > GPUNIC_LOG_DEBUG)
		level = GPUNIC_LOG_DEBUG;
	atomic_store(&level_now, level);
}

void gpunic_log_set_sink(gpunic_log_sink_fn fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	sink_fn = fn;
	sink_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

void gpunic_log_emit(int level, const char *func, const char *fmt, ...)
{
	char line[LOG_LINE_BYTES];
	va_list ap;
	int n, m;

	n = snprintf(line, sizeof(line), "gpunic: %s: %s: ", gpunic_log_level_str(level),
		     func ? func : "?");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2; /* truncated: keep room for the newline */
	if (n == 0 || line[n - 1] != '\n')
		line[n++] = '\n';
	line[n] = '\0';
	emit_line(level, line);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool gpunic_ratelimit_ok(struct gpunic_ratelimit *rl, uint32_t *missed)
{
	uint64_t now = now_ns();
	bool ok;

	if (missed)
		*missed = 0;
	if (!rl->burst)
		return true;
	pthread_mutex_lock(&log_lock);
	if (!rl->window_start_ns ||
	    now - rl->window_start_ns >= (uint64_t)rl->interval_ms * 1000000u) {
		/* A new window: report what the old one swallowed along with this message. */
		if (missed)
			*missed = rl->missed;
		rl->window_start_ns = now;
		rl->printed = 0;
		rl->missed = 0;
	}
	ok = rl->printed < rl->burst;
	if (ok)
		rl->printed++;
	else
		rl->missed++;
	pthread_mutex_unlock(&log_lock);
	return ok;
}
