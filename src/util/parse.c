// SPDX-License-Identifier: MIT
/*
 * Numbers from people, one rule for all of gpunic (include/gpunic/parse.h). Written out rather
 * than strtoull(): that takes signs, leading spaces and octal, and says nothing of where a
 * number stopped being one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpunic/parse.h"

/* The value of hex digit @c, or 16 when it is none. */
static unsigned hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (unsigned)(c - 'A' + 10);
	return 16;
}

/* @x * @base + @d, unless that passes UINT64_MAX. */
static bool mul_add(uint64_t *x, unsigned base, unsigned d)
{
	if (*x > (UINT64_MAX - d) / base)
		return false;
	*x = *x * base + d;
	return true;
}

int gpunic_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	unsigned base = 10, d;
	uint64_t x = 0;

	if (!s || !*s)
		return EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!*s)
			return EINVAL;
	} else if (s[0] == '0' && s[1]) {
		return EINVAL;	/* octal to strtol(s, NULL, 0): refused rather than read otherwise */
	}
	for (; *s; s++) {
		d = hex_digit(*s);
		if (d >= base)
			return EINVAL;
		if (!mul_add(&x, base, d))
			return ERANGE;
	}
	if (x < min || x > max)
		return ERANGE;
	*v = x;
	return 0;
}

int gpunic_parse_fixed(const char *s, unsigned decimals, uint64_t max, uint64_t *v)
{
	unsigned digits = 0, after = 0;
	bool point = false;
	uint64_t x = 0;

	if (!s || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
		return EINVAL;	/* a leading 0, as in whole numbers */
	for (; *s; s++) {
		if (*s == '.' && !point) {
			point = true;
			continue;
		}
		if (*s < '0' || *s > '9' || (point && ++after > decimals))
			return EINVAL;
		if (!mul_add(&x, 10, (unsigned)(*s - '0')))
			return ERANGE;
		digits++;
	}
	if (!digits)
		return EINVAL;
	for (; after < decimals; after++)
		if (!mul_add(&x, 10, 0))
			return ERANGE;
	if (x > max)
		return ERANGE;
	*v = x;
	return 0;
}
