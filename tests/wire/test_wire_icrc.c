// SPDX-License-Identifier: MIT
/*
 * gpunic_icrc_compute against a bit-at-a-time CRC-32 written from the definition, so the library
 * behind it (libdeflate or zlib, cmake/gpunic_deps.cmake) and its split into calls cannot change
 * a result: every length from an empty frame to the largest, the short frames that end inside the
 * masked headers, buffers at every alignment, and the per-thread memo of the header prefix.
 */
#include <pthread.h>
#include <stdlib.h>

#include "wire_util.h"

/* Reflected CRC-32, polynomial 0xEDB88320, initial and final XOR all ones (IEEE 802.3). */
static uint32_t crc32_bitwise(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xFFFFFFFFu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

/* The ICRC as docs/WIRE.md defines it: one CRC over 8 x 0xFF and the masked copy. */
static uint32_t icrc_reference(const uint8_t *frame, size_t ib_end)
{
	static uint8_t buf[8 + GPUNIC_MAX_FRAME_BYTES];
	static const size_t masked[] = {
		IP_OFF + 1, IP_OFF + 8, IP_OFF + 10, IP_OFF + 11, UDP_OFF + 6, UDP_OFF + 7,
		BTH_OFF + 4,
	};
	size_t n = ib_end > IP_OFF ? ib_end - IP_OFF : 0;

	CHECK(n <= GPUNIC_MAX_FRAME_BYTES);
	memset(buf, 0xFF, 8);
	memcpy(buf + 8, frame + IP_OFF, n);
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++)
		if (masked[i] < ib_end)
			buf[8 + masked[i] - IP_OFF] = 0xFF;
	return crc32_bitwise(buf, 8 + n);
}

static uint64_t rng_state = 0x1CC5;

static uint8_t rand_byte(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint8_t)(rng_state >> 56);
}

/* The reference itself: the standard CRC-32 check value of "123456789". */
TEST(icrc_reference_self_check)
{
	CHECK_EQ(crc32_bitwise((const uint8_t *)"123456789", 9), 0xCBF43926);
}

/* Every ib_end from 0 to the largest frame, random bytes (fresh for each length). */
TEST(icrc_every_length)
{
	uint8_t *f = malloc(GPUNIC_MAX_FRAME_BYTES);

	CHECK(f);
	for (size_t end = 0; end <= GPUNIC_MAX_FRAME_BYTES; end++) {
		for (size_t i = 0; i < end; i++)
			f[i] = rand_byte();
		if (gpunic_icrc_compute(f, end) != icrc_reference(f, end))
			harness_fail(__FILE__, __LINE__, "ib_end %zu: 0x%08x != 0x%08x", end,
				     gpunic_icrc_compute(f, end), icrc_reference(f, end));
	}
	free(f);
}

/* Real frames of every opcode and a spread of payloads, at every start alignment mod 64, each
 * in an exact-size heap buffer so the sanitizer sees a read past the ICRC's start. */
TEST(icrc_encoded_frames_every_alignment)
{
	static const uint8_t opcodes[] = { 0x24, 0x25, 0x2a, 0x2b, 0x00, 0x0c, 0x10, 0x11, 0x13 };
	static uint8_t payload[4096], frame[GPUNIC_MAX_FRAME_BYTES];
	struct gpunic_pkt p;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = rand_byte();
	for (size_t o = 0; o < sizeof(opcodes); o++) {
		bool data = gpunic_opcode_info(opcodes[o])->mask & GPUNIC_MASK_PAYLOAD;

		for (uint32_t len = 0; len <= (data ? 4096u : 0u); len += len < 64 ? 1 : 61) {
			size_t n, end;

			if (!gpunic_frame_size(opcodes[o], len))
				continue; /* pad on a FIRST: not a frame */
			fill_pkt(&p, opcodes[o], payload, len);
			n = encode_ok(&p, frame, sizeof(frame));
			end = n - GPUNIC_ICRC_BYTES;
			for (size_t align = 0; align < 64; align += 7) {
				uint8_t *raw = malloc(align + end), *f = raw + align;

				CHECK(raw);
				memcpy(f, frame, end);
				CHECK_EQ(gpunic_icrc_compute(f, end), icrc_reference(frame, end));
				free(raw);
			}
			/* The encoder put the same value on the wire, LSB first. */
			uint32_t wire = (uint32_t)frame[end] | (uint32_t)frame[end + 1] << 8 |
					(uint32_t)frame[end + 2] << 16 |
					(uint32_t)frame[end + 3] << 24;

			CHECK_EQ(wire, icrc_reference(frame, end));
		}
	}
}

/*
 * icrc.c remembers the CRC of the header prefix (up to the PSN) per thread: a frame whose prefix
 * differs from the remembered one in any bit, or in a masked byte only, must still get its own
 * ICRC, and a stream of one prefix with changing tails must too.
 */
TEST(icrc_prefix_memo_exact)
{
	static uint8_t payload[256], f[GPUNIC_MAX_FRAME_BYTES];
	const size_t prefix_end = BTH_OFF + 8;
	struct gpunic_pkt p;
	size_t n, end;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = rand_byte();
	fill_pkt(&p, 0x2b, payload, sizeof(payload));
	n = encode_ok(&p, f, sizeof(f));
	end = n - GPUNIC_ICRC_BYTES;
	for (uint32_t psn = 0; psn < 1000; psn++) {
		f[BTH_OFF + 11] = (uint8_t)psn;
		f[end - 1 - psn % 200] ^= (uint8_t)psn;
		CHECK_EQ(gpunic_icrc_compute(f, end), icrc_reference(f, end));
	}
	for (size_t off = IP_OFF; off < prefix_end; off++) {
		for (int bit = 0; bit < 8; bit++) {
			CHECK_EQ(gpunic_icrc_compute(f, end), icrc_reference(f, end));
			f[off] ^= (uint8_t)(1u << bit);
			CHECK_EQ(gpunic_icrc_compute(f, end), icrc_reference(f, end));
			f[off] ^= (uint8_t)(1u << bit);
		}
	}
	/* Frames that end inside the prefix or right at its end are never remembered wrongly. */
	for (size_t e = prefix_end - 3; e <= prefix_end + 3; e++) {
		CHECK_EQ(gpunic_icrc_compute(f, e), icrc_reference(f, e));
		CHECK_EQ(gpunic_icrc_compute(f, end), icrc_reference(f, end));
	}
}

/* Two prefixes alternating, many different prefixes, then back: no stale entry is ever used. */
TEST(icrc_prefix_memo_many_prefixes)
{
	static uint8_t f[512];

	for (size_t i = 0; i < sizeof(f); i++)
		f[i] = rand_byte();
	for (uint32_t k = 0; k < 20000; k++) {
		size_t off = IP_OFF + rand_byte() % (BTH_OFF + 8 - IP_OFF);
		size_t end = BTH_OFF + 8 + rand_byte() % 200;

		if (k % 3 == 0)
			f[off] = rand_byte();
		CHECK_EQ(gpunic_icrc_compute(f, end), icrc_reference(f, end));
	}
}

struct thread_job {
	uint8_t frame[300];
	uint32_t want;
	int bad;
};

static void *hammer(void *arg)
{
	struct thread_job *j = arg;

	for (int i = 0; i < 100000; i++)
		if (gpunic_icrc_compute(j->frame, sizeof(j->frame)) != j->want)
			j->bad++;
	return NULL;
}

/* The memo is per thread: threads with different prefixes never see each other's entries. */
TEST(icrc_prefix_memo_threads)
{
	static struct thread_job jobs[4];
	pthread_t t[4];

	for (int k = 0; k < 4; k++) {
		for (size_t i = 0; i < sizeof(jobs[k].frame); i++)
			jobs[k].frame[i] = rand_byte();
		/* The same memo slot for all four: only the IP ID differs between them. */
		if (k)
			memcpy(jobs[k].frame, jobs[0].frame, BTH_OFF + 8);
		jobs[k].frame[IP_OFF + 5] = (uint8_t)k;
		jobs[k].want = icrc_reference(jobs[k].frame, sizeof(jobs[k].frame));
	}
	for (int k = 0; k < 4; k++)
		CHECK_EQ(pthread_create(&t[k], NULL, hammer, &jobs[k]), 0);
	for (int k = 0; k < 4; k++) {
		CHECK_EQ(pthread_join(t[k], NULL), 0);
		CHECK_EQ(jobs[k].bad, 0);
	}
}
