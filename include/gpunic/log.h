/* SPDX-License-Identifier: MIT */
/*
 * gpunic library logging: errors and warnings by default, more when asked.
 *
 * Environment:
 *   GPUNIC_LOG_LEVEL  threshold, read once on first use: a syslog number 0 (emerg) .. 7 (debug)
 *                     or a name: emerg, alert, crit, err (error), warning (warn), notice, info,
 *                     debug. Unset: 4 (warning), so a failure the library meets (a link
 *                     that cannot send, a capture that stopped, memory it could not map)
 *                     reaches the user without a variable to set; 0 silences everything.
 *                     An invalid value keeps the default and prints one warning saying so.
 *
 * Messages read "gpunic: <level>: <function>: <text>" and go to stderr, or to the sink an
 * application installs. Every entry point is thread-safe; one message is one write. A call that
 * can fail returns 0 or a positive errno value (the control path's rule: docs/DESIGN.md,
 * "Errors").
 */
#ifndef GPUNIC_LOG_H
#define GPUNIC_LOG_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* syslog(3) numbering, so the numbers people already know mean the same thing here. */
enum gpunic_log_level {
	GPUNIC_LOG_EMERG = 0,
	GPUNIC_LOG_ALERT = 1,
	GPUNIC_LOG_CRIT = 2,
	GPUNIC_LOG_ERR = 3,
	GPUNIC_LOG_WARNING = 4,
	GPUNIC_LOG_NOTICE = 5,
	GPUNIC_LOG_INFO = 6,
	GPUNIC_LOG_DEBUG = 7,
};

#define GPUNIC_LOG_DEFAULT GPUNIC_LOG_WARNING

/* Current threshold: messages at or below it are printed. Reads GPUNIC_LOG_LEVEL once. */
int gpunic_log_level(void);

/* Override the threshold (a CLI's -v, a test). Values outside 0..7 are clamped. */
void gpunic_log_set_level(int level);

/*
 * Parse a GPUNIC_LOG_LEVEL value: "0".."7" or a level name (case-insensitive).
 * Return: 0 and *level set, or EINVAL (NULL, empty, unknown name, out of range).
 */
int gpunic_log_parse_level(const char *text, int *level);

/* "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"; "?" otherwise. */
const char *gpunic_log_level_str(int level);

/*
 * Where finished lines go. @line has the prefix and a trailing newline. NULL restores stderr.
 * The sink is called with the log lock held, one call per message: it must not log.
 */
typedef void (*gpunic_log_sink_fn)(int level, const char *line, void *arg);
void gpunic_log_set_sink(gpunic_log_sink_fn fn, void *arg);

/* Format and emit one message unconditionally; callers go through the macros below. */
void gpunic_log_emit(int level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Rate limit: at most @burst messages per @interval_ms per call site; the first message after
 * a suppressed stretch reports how many were dropped. Like gdr_dbgc, it stops a warning in a
 * hot path from flooding the terminal. Fields are private; use GPUNIC_RATELIMIT_INIT.
 */
struct gpunic_ratelimit {
	uint32_t interval_ms;
	uint32_t burst;
	uint64_t window_start_ns;
	uint32_t printed;
	uint32_t missed;
};

#define GPUNIC_RATELIMIT_INIT(interval_ms_, burst_) \
	{ .interval_ms = (interval_ms_), .burst = (burst_) }

/* Defaults for the *_ratelimited macros: 10 messages per 5 seconds. */
#define GPUNIC_RATELIMIT_INTERVAL_MS 5000
#define GPUNIC_RATELIMIT_BURST 10

/*
 * Return: true if a message may be printed now. When it is the first after suppressed ones,
 * *missed (if not NULL) gets how many were suppressed; else 0.
 */
bool gpunic_ratelimit_ok(struct gpunic_ratelimit *rl, uint32_t *missed);

#define gpunic_log_at(level, ...)                                         \
	do {                                                              \
		if ((level) <= gpunic_log_level())                        \
			gpunic_log_emit((level), __func__, __VA_ARGS__);  \
	} while (0)

#define gpunic_log_at_ratelimited(level, ...)                                                \
	do {                                                                                 \
		static struct gpunic_ratelimit gpunic_rl_ =                                  \
			GPUNIC_RATELIMIT_INIT(GPUNIC_RATELIMIT_INTERVAL_MS,                  \
					      GPUNIC_RATELIMIT_BURST);                       \
		uint32_t gpunic_missed_;                                                     \
		if ((level) <= gpunic_log_level() &&                                         \
		    gpunic_ratelimit_ok(&gpunic_rl_, &gpunic_missed_)) {                     \
			if (gpunic_missed_)                                                  \
				gpunic_log_emit((level), __func__,                           \
						"%u similar messages suppressed",            \
						(unsigned)gpunic_missed_);                   \
			gpunic_log_emit((level), __func__, __VA_ARGS__);                     \
		}                                                                            \
	} while (0)

#define gpunic_err(...) gpunic_log_at(GPUNIC_LOG_ERR, __VA_ARGS__)
#define gpunic_warn(...) gpunic_log_at(GPUNIC_LOG_WARNING, __VA_ARGS__)
#define gpunic_info(...) gpunic_log_at(GPUNIC_LOG_INFO, __VA_ARGS__)
#define gpunic_dbg(...) gpunic_log_at(GPUNIC_LOG_DEBUG, __VA_ARGS__)

#define gpunic_err_ratelimited(...) gpunic_log_at_ratelimited(GPUNIC_LOG_ERR, __VA_ARGS__)
#define gpunic_warn_ratelimited(...) gpunic_log_at_ratelimited(GPUNIC_LOG_WARNING, __VA_ARGS__)
#define gpunic_dbg_ratelimited(...) gpunic_log_at_ratelimited(GPUNIC_LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
