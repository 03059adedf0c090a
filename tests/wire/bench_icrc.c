// SPDX-License-Identifier: MIT
/*
 * bench_icrc: nanoseconds per ICRC, printed and never asserted (timing must not decide a test,
 * so this is a program, not a CTest). For a 100-byte and an 1100-byte frame (ICRC included) it
 * times gpunic_icrc_compute as this build has it (with its per-thread prefix memo hitting, as
 * for a stream of one QP, and missing on every call) and, where the libraries were found:
 *
 *   zlib-3call      the ICRC as src/wire/icrc.c computed it with zlib: ones, masked headers and
 *                   the rest, three crc32 calls
 *   zlib-cached     zlib from a cached CRC of the constant masked prefix, the rest in place
 *   deflate-2call   libdeflate, ones and masked headers in one stack buffer, the rest in place
 *                   (what icrc.c does with libdeflate)
 *   deflate-cached  libdeflate from the cached prefix, the rest in place
 *
 * The cached prefix: 8 x 0xFF, then IPv4 + UDP + the first 8 BTH bytes, masked. For one QP,
 * opcode and length these 44 bytes never change (the PSN, in BTH bytes 8..11, is the first byte
 * that does), so the CRC register after them could be kept per QP and the rest continued from
 * it, in place, with no copy and no masking: the question is whether that pays.
 *
 *   bench_icrc [ROUNDS]   each figure is the best of ROUNDS (default 9) timed loops
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef BENCH_HAVE_ZLIB
#include <zlib.h>
#endif

#include "gpunic/wire.h"

enum {
	IP_OFF = GPUNIC_ETH_BYTES,
	SPAN = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + GPUNIC_BTH_BYTES, /* IPv4 + UDP + BTH */
	PREFIX = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + 8,               /* up to the PSN word */
};

static const uint8_t ones[8] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };

/* The masks of src/wire/icrc.c, offsets from the IPv4 header (all inside PREFIX). */
static void mask(uint8_t *h)
{
	h[1] = h[8] = h[10] = h[11] = 0xFF;
	h[GPUNIC_IP4_BYTES + 6] = h[GPUNIC_IP4_BYTES + 7] = 0xFF;
	h[GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + 4] = 0xFF;
}

typedef uint32_t (*icrc_fn)(const uint8_t *frame, size_t ib_end);

/* The library's worst case: the IP ID changes every call, so its prefix memo (src/wire/icrc.c)
 * never hits. */
static uint32_t library_memo_miss(const uint8_t *frame, size_t ib_end)
{
	((uint8_t *)frame)[IP_OFF + 5] ^= 1;
	return gpunic_icrc_compute(frame, ib_end);
}

#ifdef BENCH_HAVE_ZLIB
static uint32_t prefix_crc_zlib; /* the cached prefix's CRC */

static uint32_t zlib_3call(const uint8_t *frame, size_t ib_end)
{
	uint8_t hdr[SPAN];
	uLong crc;

	memcpy(hdr, frame + IP_OFF, SPAN);
	mask(hdr);
	crc = crc32(0L, ones, sizeof(ones));
	crc = crc32_z(crc, hdr, SPAN);
	crc = crc32_z(crc, frame + IP_OFF + SPAN, ib_end - IP_OFF - SPAN);
	return (uint32_t)crc;
}

static uint32_t zlib_cached(const uint8_t *frame, size_t ib_end)
{
	return (uint32_t)crc32_z(prefix_crc_zlib, frame + IP_OFF + PREFIX,
				 ib_end - IP_OFF - PREFIX);
}
#endif

#ifdef BENCH_HAVE_LIBDEFLATE
static uint32_t prefix_crc_deflate; /* the cached prefix's CRC */

static uint32_t deflate_2call(const uint8_t *frame, size_t ib_end)
{
	uint8_t buf[8 + SPAN];
	uint32_t crc;

	memset(buf, 0xFF, 8);
	memcpy(buf + 8, frame + IP_OFF, SPAN);
	mask(buf + 8);
	crc = libdeflate_crc32(0, buf, sizeof(buf));
	return libdeflate_crc32(crc, frame + IP_OFF + SPAN, ib_end - IP_OFF - SPAN);
}

static uint32_t deflate_cached(const uint8_t *frame, size_t ib_end)
{
	return libdeflate_crc32(prefix_crc_deflate, frame + IP_OFF + PREFIX,
				ib_end - IP_OFF - PREFIX);
}

/* The whole covered span copied to the stack, masked, one call. */
static uint32_t deflate_1call_copy(const uint8_t *frame, size_t ib_end)
{
	uint8_t buf[8 + GPUNIC_MAX_FRAME_BYTES];

	memset(buf, 0xFF, 8);
	memcpy(buf + 8, frame + IP_OFF, ib_end - IP_OFF);
	mask(buf + 8);
	return libdeflate_crc32(0, buf, 8 + ib_end - IP_OFF);
}

/* A cache inside icrc.c, no API change: the last prefix seen (raw bytes) and its CRC, per
 * thread. A hit costs a 36-byte compare; a miss computes and stores it. */
static _Thread_local struct {
	uint8_t raw[PREFIX];
	uint32_t crc;
	int valid;
} memo;

static uint32_t deflate_memo(const uint8_t *frame, size_t ib_end)
{
	const uint8_t *h = frame + IP_OFF;

	if (!memo.valid || memcmp(memo.raw, h, PREFIX) != 0) {
		uint8_t buf[8 + PREFIX];

		memset(buf, 0xFF, 8);
		memcpy(buf + 8, h, PREFIX);
		mask(buf + 8);
		memcpy(memo.raw, h, PREFIX);
		memo.crc = libdeflate_crc32(0, buf, sizeof(buf));
		memo.valid = 1;
	}
	return libdeflate_crc32(memo.crc, h + PREFIX, ib_end - IP_OFF - PREFIX);
}

/* The memo's worst case: every call a miss (the cache forgotten, as two QPs alternating do). */
static uint32_t deflate_memo_miss(const uint8_t *frame, size_t ib_end)
{
	memo.raw[0] ^= 1;
	return deflate_memo(frame, ib_end);
}
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint32_t sink;

/* Best of @rounds loops of @iters calls, in ns per call. The PSN changes every call, as it
 * does between packets, and each result feeds the sink so no call can be skipped. */
static double time_fn(icrc_fn fn, uint8_t *frame, size_t ib_end, unsigned rounds,
		      unsigned iters)
{
	double best = 1e30;

	for (unsigned r = 0; r < rounds; r++) {
		uint32_t acc = 0;
		uint64_t t0 = now_ns();

		for (unsigned i = 0; i < iters; i++) {
			frame[IP_OFF + PREFIX + 3] = (uint8_t)i;
			acc += fn(frame, ib_end);
		}
		double ns = (double)(now_ns() - t0) / iters;

		sink += acc;
		if (ns < best)
			best = ns;
	}
	return best;
}

struct impl {
	const char *name;
	icrc_fn fn;
};

int main(int argc, char **argv)
{
	static const size_t frame_sizes[] = { 100, 1100 };
	static const struct impl impls[] = {
		{ "gpunic_icrc_compute", gpunic_icrc_compute },
		{ "  ... memo missing", library_memo_miss },
#ifdef BENCH_HAVE_ZLIB
		{ "zlib-3call", zlib_3call },
		{ "zlib-cached", zlib_cached },
#endif
#ifdef BENCH_HAVE_LIBDEFLATE
		{ "deflate-2call", deflate_2call },
		{ "deflate-cached", deflate_cached },
		{ "deflate-1call-copy", deflate_1call_copy },
		{ "deflate-memo-hit", deflate_memo },
		{ "deflate-memo-miss", deflate_memo_miss },
#endif
	};
	unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 9;
	static uint8_t payload[2048], frame[GPUNIC_MAX_FRAME_BYTES];
	static uint8_t pristine[GPUNIC_MAX_FRAME_BYTES];

	if (!rounds)
		rounds = 1;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 131 + 7);
	printf("%-20s %10s %10s\n", "ns per ICRC", "100 B", "1100 B");
	double table[sizeof(impls) / sizeof(impls[0])][2];

	for (size_t s = 0; s < 2; s++) {
		/* UC SEND_ONLY: 42 bytes of L2-L4, 12 of BTH, payload, pad, 4 of ICRC. Pad keeps a
		 * RoCE frame at 46 + 4k bytes, so the payload is rounded up and the ICRC is taken
		 * over the first 96 (1096) bytes: the work of a 100 (1100) byte frame. */
		struct gpunic_pkt p = {
			.dst_mac = { 2, 0, 0, 0, 0, 2 }, .src_mac = { 2, 0, 0, 0, 0, 1 },
			.ttl = 64, .ip_frag = 0x4000, .src_ip = 0xC0A80001, .dst_ip = 0xC0A80002,
			.src_port = 0xC000, .dst_port = GPUNIC_ROCE_UDP_PORT, .opcode = 0x24,
			.pkey = 0xFFFF, .qpn = 0x11, .psn = 1, .payload = payload,
			.paylen = (uint32_t)(frame_sizes[s] - GPUNIC_L2L4_BYTES - GPUNIC_BTH_BYTES -
					     GPUNIC_ICRC_BYTES + 3) & ~3u,
		};
		size_t n = gpunic_frame_encode(&p, frame, sizeof(frame)), end;
		uint8_t prefix[8 + PREFIX];

		if (n < frame_sizes[s]) {
			fprintf(stderr, "bench_icrc: encoded %zu bytes, wanted %zu\n", n,
				frame_sizes[s]);
			return 1;
		}
		end = frame_sizes[s] - GPUNIC_ICRC_BYTES;
		/* What a per-QP cache would hold, computed once. */
		memset(prefix, 0xFF, 8);
		memcpy(prefix + 8, frame + IP_OFF, PREFIX);
		mask(prefix + 8);
#ifdef BENCH_HAVE_ZLIB
		prefix_crc_zlib = (uint32_t)crc32(0L, prefix, sizeof(prefix));
#endif
#ifdef BENCH_HAVE_LIBDEFLATE
		prefix_crc_deflate = libdeflate_crc32(0, prefix, sizeof(prefix));
#endif
		memcpy(pristine, frame, n);
		for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
			memcpy(frame, pristine, n);
			uint32_t got = impls[k].fn(frame, end);
			uint32_t want = gpunic_icrc_compute(frame, end);

			if (got != want) {
				fprintf(stderr, "bench_icrc: %s gives 0x%08x, expected 0x%08x\n",
					impls[k].name, got, want);
				return 1;
			}
			table[k][s] = time_fn(impls[k].fn, frame, end, rounds,
					      s ? 200000 : 1000000);
		}
	}
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++)
		printf("%-20s %10.1f %10.1f\n", impls[k].name, table[k][0], table[k][1]);
	return 0;
}
