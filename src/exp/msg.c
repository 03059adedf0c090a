// SPDX-License-Identifier: MIT
/*
 * The loopback message (format and checks) and the names of the experiment's choices, as the
 * command line and the JSON reports spell them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_loc.h"

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t lb_mix64(uint64_t x)
{
	/* splitmix64's finaliser: every input bit reaches every output bit */
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

/* Byte @i (counted from 16) of the pattern of message (@word, @ts): one 64-bit value per 8. */
static inline uint64_t pattern_word(uint64_t word, uint64_t ts, uint32_t block)
{
	return lb_mix64(word * 0x9E3779B97F4A7C15ull ^ ts ^ ((uint64_t)block << 40));
}

void lb_msg_fill(uint8_t *m, uint32_t len, uint64_t word, uint64_t ts_ns)
{
	uint64_t x = 0;

	put_le64(m, word);
	put_le64(m + 8, ts_ns);
	for (uint32_t i = LB_MSG_MIN; i < len; i++) {
		uint32_t k = i - LB_MSG_MIN;

		if ((k & 7) == 0)
			x = pattern_word(word, ts_ns, k >> 3);
		m[i] = (uint8_t)(x >> (8 * (k & 7)));
	}
}

enum lb_verdict lb_msg_check(const uint8_t *m, uint32_t len, uint32_t want_len, bool add_one,
			     uint64_t *word, uint64_t *ts_ns)
{
	uint8_t d = add_one ? 1 : 0;
	uint64_t w = 0, t = 0, x = 0;

	*word = 0;
	*ts_ns = 0;
	if (len < LB_MSG_MIN)
		return LB_MSG_BAD_LEN;
	for (int i = 7; i >= 0; i--) {
		w = w << 8 | (uint8_t)(m[i] - d);
		t = t << 8 | (uint8_t)(m[8 + i] - d);
	}
	*word = w;
	*ts_ns = t;
	if (len != want_len)
		return LB_MSG_BAD_LEN;
	for (uint32_t i = LB_MSG_MIN; i < len; i++) {
		uint32_t k = i - LB_MSG_MIN;

		if ((k & 7) == 0)
			x = pattern_word(w, t, k >> 3);
		if ((uint8_t)(m[i] - d) != (uint8_t)(x >> (8 * (k & 7))))
			return LB_MSG_BAD_PATTERN;
	}
	return LB_MSG_OK;
}


const char *lb_mode_name(enum lb_mode m)
{
	return m == LB_MODE_SEND ? "send" : "write-imm";
}

int lb_mode_parse(const char *s, enum lb_mode *m)
{
	if (strcmp(s, "write-imm") == 0)
		*m = LB_MODE_WRITE_IMM;
	else if (strcmp(s, "send") == 0)
		*m = LB_MODE_SEND;
	else
		return EINVAL;
	return 0;
}

const char *lb_work_name(uint32_t work)
{
	return work == GPUNIC_LOOP_WORK_ADD_ONE ? "add-one" : "none";
}

int lb_work_parse(const char *s, uint32_t *work)
{
	if (strcmp(s, "none") == 0)
		*work = GPUNIC_LOOP_WORK_NONE;
	else if (strcmp(s, "add-one") == 0)
		*work = GPUNIC_LOOP_WORK_ADD_ONE;
	else
		return EINVAL;
	return 0;
}

const char *lb_handler_name(enum gpunic_handler_mode h)
{
	switch (h) {
	case GPUNIC_HANDLER_GPU_DB:
		return "GPU_DB";
	case GPUNIC_HANDLER_CPU_PROXY:
		return "CPU_PROXY";
	case GPUNIC_HANDLER_GPU_BF:
		return "GPU_BF";
	default:
		return "AUTO";
	}
}

int lb_handler_parse(const char *s, enum gpunic_handler_mode *h)
{
	if (strcmp(s, "gpu-db") == 0)
		*h = GPUNIC_HANDLER_GPU_DB;
	else if (strcmp(s, "cpu-proxy") == 0)
		*h = GPUNIC_HANDLER_CPU_PROXY;
	else if (strcmp(s, "gpu-bf") == 0)
		*h = GPUNIC_HANDLER_GPU_BF;
	else if (strcmp(s, "auto") == 0)
		*h = GPUNIC_HANDLER_AUTO;
	else
		return EINVAL;
	return 0;
}

const char *lb_executor_name(enum lb_executor e)
{
	switch (e) {
	case LB_EXEC_GPU:
		return "gpu";
	case LB_EXEC_CPU:
		return "cpu";
	default:
		return "naive";
	}
}

int lb_executor_parse(const char *s, enum lb_executor *e)
{
	if (strcmp(s, "gpu") == 0)
		*e = LB_EXEC_GPU;
	else if (strcmp(s, "cpu") == 0)
		*e = LB_EXEC_CPU;
	else if (strcmp(s, "naive") == 0)
		*e = LB_EXEC_NAIVE;
	else
		return EINVAL;
	return 0;
}

int lb_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	unsigned long long x;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x < min || x > max)
		return EINVAL;
	*v = x;
	return 0;
}

int lb_parse_us(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+')
		return EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e9)
		return EINVAL;
	*ns = (uint64_t)llround(v * 1000.0);
	return 0;
}

