/* SPDX-License-Identifier: MIT */
/*
 * Numbers as gpunic reads them from people: the commands' option values, link specs
 * (gpunic_link_open_spec) and GPUNIC_LOG_LEVEL, with one rule everywhere:
 *  - a whole number is decimal, or hexadecimal after 0x or 0X (QP numbers, PSNs, keys and
 *    addresses are printed that way), as perftest and rdma-core's examples read theirs;
 *  - a number with a fraction (a time: --timeout 0.5, --interval-us 2.5) is decimal, with at
 *    most as many decimals as its unit allows;
 *  - a 0 followed by more digits is refused ("010"), because those tools would read it as
 *    octal; no sign, no spaces, no exponent.
 * Calls return 0 or a positive errno value (the control path's rule: docs/DESIGN.md,
 * "Errors"): EINVAL for text that is not a number of that form, ERANGE for one outside the
 * range asked for.
 */
#ifndef GPUNIC_PARSE_H
#define GPUNIC_PARSE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * gpunic_parse_uint - a whole number in [@min, @max]
 * @s: the text, NUL-terminated
 * @min: the smallest value taken
 * @max: the largest value taken
 * @v: set on success only
 * Return: 0, EINVAL or ERANGE.
 */
int gpunic_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v);

/**
 * gpunic_parse_fixed - a decimal number with up to @decimals digits after its point, scaled
 * by 10^@decimals: "2.5" with 3 decimals is 2500 ("2.5" microseconds is 2500 ns)
 * @s: the text, NUL-terminated
 * @decimals: the most digits taken after the point, and the power of ten it is scaled by
 * @max: the largest scaled value taken
 * @v: set on success only
 * Return: 0, EINVAL (a sign, an exponent, more decimals than @decimals, no digit) or ERANGE.
 */
int gpunic_parse_fixed(const char *s, unsigned decimals, uint64_t max, uint64_t *v);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_PARSE_H */
