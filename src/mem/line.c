// SPDX-License-Identifier: MIT
/*
 * 64-byte lines in one instruction (mem.h). A CQE the softnic writes for a GPU, and a BlueFlame
 * WQE it reads from one, cross PCIe in one round trip when each side moves the whole line in one
 * access (docs/ARCHITECTURE.md, "the fast path"). On x86 that is an AVX-512 load or store, or
 * MOVDIR64B (a 64-byte direct store with 64-byte write atomicity); which one this CPU has is
 * found once, at the first use. Without either, the fallback moves four 16-byte chunks
 * and, for a CQE, stores the chunk holding op_own last with release ordering, so a reader that
 * checks op_own first (a CPU) still sees a whole CQE and one that reads the line at once (a
 * GPU) sees a torn one at worst, which the CQE's line check rejects.
 */
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gpunic/log.h"
#include "gpunic/mem.h"

static void store64_chunks(void *dst, const void *src)
{
	uint64_t *d = dst;
	const uint64_t *s = src;

	/* unrolled: a CQE per message goes through here */
	__atomic_store_n(&d[0], s[0], __ATOMIC_RELAXED);
	__atomic_store_n(&d[1], s[1], __ATOMIC_RELAXED);
	__atomic_store_n(&d[2], s[2], __ATOMIC_RELAXED);
	__atomic_store_n(&d[3], s[3], __ATOMIC_RELAXED);
	__atomic_store_n(&d[4], s[4], __ATOMIC_RELAXED);
	__atomic_store_n(&d[5], s[5], __ATOMIC_RELAXED);
	__atomic_store_n(&d[6], s[6], __ATOMIC_RELEASE);
	__atomic_store_n(&d[7], s[7], __ATOMIC_RELEASE);
}

static void load64_chunks(void *dst, const void *src)
{
	uint64_t *d = dst;
	const uint64_t *s = src;

	for (int i = 0; i < 8; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void store64_avx512(void *dst, const void *src)
{
	/* earlier stores (the payload) stay before the line: x86 keeps store order, the fence
	 * only stops the compiler from moving them */
	__atomic_signal_fence(__ATOMIC_RELEASE);
	_mm512_store_si512(dst, _mm512_loadu_si512(src));
}

__attribute__((target("avx512f"))) static void load64_avx512(void *dst, const void *src)
{
	_mm512_storeu_si512(dst, _mm512_load_si512(src));
	__atomic_signal_fence(__ATOMIC_ACQUIRE);
}

__attribute__((target("movdir64b"))) static void store64_movdir(void *dst, const void *src)
{
	__atomic_signal_fence(__ATOMIC_RELEASE);
	_movdir64b(dst, src);
}
#endif

typedef void (*line_fn)(void *dst, const void *src);

/* store and load are published last, with release: a caller that finds them set needs no
 * pthread_once call (two calls on every CQE) */
static struct {
	pthread_once_t once;
	line_fn store;
	line_fn load;
	const char *name;
} line = { .once = PTHREAD_ONCE_INIT };

static void line_pick(void)
{
	line_fn store = store64_chunks, load = load64_chunks;

	line.name = "4 x 16-byte chunks, op_own last (no AVX-512 or MOVDIR64B on this CPU)";
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		store = store64_avx512;
		load = load64_avx512;
		line.name = "AVX-512 64-byte load and store";
	} else {
		unsigned a, b, c, d;

		/* CPUID leaf 7, ECX bit 28: MOVDIR64B (no __builtin_cpu_supports name for it) */
		__asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
		if (c & (1u << 28)) {
			store = store64_movdir;
			line.name = "MOVDIR64B 64-byte store, 16-byte loads";
		}
	}
#endif
	gpunic_info("64-byte lines: %s", line.name);
	__atomic_store_n(&line.load, load, __ATOMIC_RELEASE);
	__atomic_store_n(&line.store, store, __ATOMIC_RELEASE);
}

const char *gpunic_line_init(void)
{
	pthread_once(&line.once, line_pick);
	return line.name;
}

/* The first calls, out of line: the common call then needs no frame of its own and ends in a
 * tail call. */
static __attribute__((noinline, cold)) void line_store_first(void *dst, const void *src)
{
	pthread_once(&line.once, line_pick);
	line.store(dst, src);
}

static __attribute__((noinline, cold)) void line_load_first(void *dst, const void *src)
{
	pthread_once(&line.once, line_pick);
	line.load(dst, src);
}

void gpunic_line_store64(void *dst, const void *src)
{
	line_fn store = __atomic_load_n(&line.store, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!store, 0))
		store = line_store_first;
	store(dst, src);
}

void gpunic_line_load64(void *dst, const void *src)
{
	line_fn load = __atomic_load_n(&line.load, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!load, 0))
		load = line_load_first;
	load(dst, src);
}
