// SPDX-License-Identifier: MIT
/*
 * The loopback message: its format (loopback.h), the pattern that fills it and the checks of
 * every reply.
 */
#include "exp_loc.h"

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Each of the eight bytes of @x less @d (0 or 1), modulo 256, no borrow between them: undoes
 * the forwarder's add-one a word at a time (the sensor checks every reply, at millions a
 * second in a throughput search). */
static uint64_t bytes_minus(uint64_t x, uint8_t d)
{
	const uint64_t hi = 0x8080808080808080ull;

	return ((x | hi) - 0x0101010101010101ull * d) ^ (~x & hi);
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

/* Bytes 16 + 8 * @block .. + 7 of the pattern of message (@word, @ts), little-endian. */
static inline uint64_t pattern_word(uint64_t word, uint64_t ts, uint32_t block)
{
	return lb_mix64(word * 0x9E3779B97F4A7C15ull ^ ts ^ ((uint64_t)block << 40));
}

void lb_msg_fill(uint8_t *m, uint32_t len, uint64_t word, uint64_t ts_ns)
{
	uint32_t i, k;
	uint64_t x;

	put_le64(m, word);
	put_le64(m + 8, ts_ns);
	for (i = LB_MSG_MIN; i + 8 <= len; i += 8)
		put_le64(m + i, pattern_word(word, ts_ns, (i - LB_MSG_MIN) >> 3));
	if (i < len) {
		x = pattern_word(word, ts_ns, (i - LB_MSG_MIN) >> 3);
		for (k = 0; i + k < len; k++)
			m[i + k] = (uint8_t)(x >> (8 * k));
	}
}

enum lb_verdict lb_msg_check(const uint8_t *m, uint32_t len, uint32_t want_len, bool add_one,
			     uint64_t *word, uint64_t *ts_ns)
{
	uint8_t d = add_one ? 1 : 0;
	uint64_t w, t, x;
	uint32_t i, k;

	*word = 0;
	*ts_ns = 0;
	if (len < LB_MSG_MIN)
		return LB_MSG_BAD_LEN;
	w = bytes_minus(get_le64(m), d);
	t = bytes_minus(get_le64(m + 8), d);
	*word = w;
	*ts_ns = t;
	if (len != want_len)
		return LB_MSG_BAD_LEN;
	for (i = LB_MSG_MIN; i + 8 <= len; i += 8)
		if (bytes_minus(get_le64(m + i), d) != pattern_word(w, t, (i - LB_MSG_MIN) >> 3))
			return LB_MSG_BAD_PATTERN;
	if (i < len) {
		x = pattern_word(w, t, (i - LB_MSG_MIN) >> 3);
		for (k = 0; i + k < len; k++)
			if ((uint8_t)(m[i + k] - d) != (uint8_t)(x >> (8 * k)))
				return LB_MSG_BAD_PATTERN;
	}
	return LB_MSG_OK;
}
