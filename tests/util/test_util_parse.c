// SPDX-License-Identifier: MIT
/*
 * Numbers as gpunic reads them from people (include/gpunic/parse.h): decimal or 0x hex, no
 * leading 0 (octal to perftest and rdma-core), no sign, no space; fractions decimal, with no
 * more decimals than asked for and no leading 0 either; ranges kept, overflow caught.
 */
#include <errno.h>
#include <string.h>

#include "gpunic/parse.h"
#include "harness.h"

TEST(parse_uint_decimal_and_hex)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 },
		{ "7", 7 },
		{ "4791", 4791 },
		{ "0x0", 0 },
		{ "0x12b7", 4791 },
		{ "0X12B7", 4791 },
		{ "0xfffff0", 0xfffff0 },
		{ "0x00ff", 255 },
		{ "18446744073709551615", UINT64_MAX },
		{ "0xffffffffffffffff", UINT64_MAX },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 1234;
		CHECK_EQ(gpunic_parse_uint(ok[i].s, 0, UINT64_MAX, &v), 0);
		CHECK_EQ(v, ok[i].v);
	}
}

TEST(parse_uint_refuses_what_is_not_one_number)
{
	static const char *const bad[] = {
		"", "x", "0x", "0xg", "12x", "1 ", " 1", "+1", "-1", "1.5", "1e3", "0b101",
		/* octal to strtol(s, NULL, 0): perftest would read 010 as 8 */
		"010", "00", "0777",
	};
	uint64_t v = 99;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(gpunic_parse_uint(bad[i], 0, UINT64_MAX, &v), EINVAL);
	CHECK_EQ(gpunic_parse_uint(NULL, 0, 1, &v), EINVAL);
	CHECK_EQ(v, 99);	/* left alone on failure */
}

TEST(parse_uint_range_and_overflow)
{
	uint64_t v = 99;

	CHECK_EQ(gpunic_parse_uint("17", 1, 20, &v), 0);
	CHECK_EQ(v, 17);
	CHECK_EQ(gpunic_parse_uint("21", 1, 20, &v), ERANGE);
	CHECK_EQ(gpunic_parse_uint("0", 1, 20, &v), ERANGE);
	CHECK_EQ(gpunic_parse_uint("0x15", 1, 20, &v), ERANGE);
	CHECK_EQ(gpunic_parse_uint("18446744073709551616", 0, UINT64_MAX, &v), ERANGE);
	CHECK_EQ(gpunic_parse_uint("0x10000000000000000", 0, UINT64_MAX, &v), ERANGE);
	CHECK_EQ(v, 17);
}

TEST(parse_fixed_decimals)
{
	uint64_t v = 0;

	CHECK_EQ(gpunic_parse_fixed("2.5", 3, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 2500);
	CHECK_EQ(gpunic_parse_fixed("10", 3, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 10000);
	CHECK_EQ(gpunic_parse_fixed("0.001", 3, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(gpunic_parse_fixed(".5", 3, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 500);
	CHECK_EQ(gpunic_parse_fixed("5.", 3, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 5000);
	CHECK_EQ(gpunic_parse_fixed("3600", 3, 3600000, &v), 0);
	CHECK_EQ(v, 3600000);
	CHECK_EQ(gpunic_parse_fixed("3600.001", 3, 3600000, &v), ERANGE);
	CHECK_EQ(gpunic_parse_fixed("99999999999999999999", 0, UINT64_MAX, &v), ERANGE);
	CHECK_EQ(gpunic_parse_fixed("18446744073709551.616", 3, UINT64_MAX, &v), ERANGE);
}

TEST(parse_fixed_refuses)
{
	static const char *const bad[] = {
		"", ".", "1.2345", "1..2", "1.2.3", "-1", "+1", "1e3", "inf", "nan", " 1", "0x10",
		"007", "00.5",
	};
	uint64_t v = 99;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(gpunic_parse_fixed(bad[i], 3, UINT64_MAX, &v), EINVAL);
	CHECK_EQ(gpunic_parse_fixed(NULL, 3, UINT64_MAX, &v), EINVAL);
	CHECK_EQ(v, 99);
}
