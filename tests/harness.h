/* Minimal test harness: TEST(name) registers a case; the binary runs one case by name (how CTest
 * calls it) or, with no argument, every case in a forked child with a summary line.
 * A failed CHECK prints file:line and exits 1; SKIP() exits 77, which CTest reports as skipped. */
#ifndef GPUNIC_TEST_HARNESS_H
#define GPUNIC_TEST_HARNESS_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS_SKIP_CODE 77

void harness_register(const char *name, void (*fn)(void));
_Noreturn void harness_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
_Noreturn void harness_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define TEST(name)                                                        \
	static void test_##name(void);                                        \
	__attribute__((constructor)) static void register_##name(void)       \
	{                                                                     \
		harness_register(#name, test_##name);                         \
	}                                                                     \
	static void test_##name(void)

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond))                                                  \
			harness_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
	} while (0)

#define CHECK_EQ(a, b)                                                          \
	do {                                                                    \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                \
		if (a_ != b_)                                                   \
			harness_fail(__FILE__, __LINE__,                        \
				     "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, \
				     #b, a_, b_);                                 \
	} while (0)

#define CHECK_MEM(a, b, n)                                                        \
	do {                                                                      \
		if (memcmp((a), (b), (n)) != 0)                                   \
			harness_fail(__FILE__, __LINE__, "memory %s != %s (%zu bytes)", \
				     #a, #b, (size_t)(n));                        \
	} while (0)

#define SKIP(...) harness_skip(__VA_ARGS__)

#endif
