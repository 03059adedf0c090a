// SPDX-License-Identifier: MIT
/*
 * The invariant CRC of a RoCEv2 packet (IBA Annex A17.3.3; docs/WIRE.md).
 *
 * ICRC = CRC-32 (the zlib/Ethernet one, not CRC-32C: docs/WIRE.md) over
 *   8 x 0xFF || IPv4 header || UDP header || BTH || extension headers || payload || pad
 * with the fields that routers may change set to all ones first. The 8 bytes of 0xFF stand in
 * for the masked InfiniBand LRH that RoCEv2 replaced with IP/UDP; rxe folds them into its seed
 * 0xDEBB20E3, which is the CRC register after those 8 bytes. We feed them to the CRC instead, so
 * the seed explains itself.
 *
 * The CRC comes from libdeflate (carry-less multiply where the CPU has it), or from zlib where
 * libdeflate is missing (cmake/gpunic_deps.cmake says which at configure time). zlib's crc32 is
 * table-driven a byte or a word at a time, and on these short buffers that was a third of the
 * engine's instructions; tests/wire/bench_icrc.c measures both.
 */
#include <stdbool.h>
#include <string.h>

#ifdef GPUNIC_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

#include "gpunic/wire.h"
#include "hdr.h"
#include "wire_loc.h"

/* The LRH stand-in, then IPv4 + UDP + BTH: the span that contains every masked field. */
enum {
	LRH_ONES_BYTES = 8,
	MASKED_SPAN_BYTES = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + GPUNIC_BTH_BYTES,
	/* IPv4 + UDP + BTH up to the PSN word: the same for every packet of one QP, opcode and
	 * length, and every masked field lies inside it. */
	PREFIX_BYTES = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + BTH_APSN,
};

/*
 * The CRC after the ones and the masked prefix, remembered for the last few prefixes seen, keyed
 * by the prefix's raw bytes (compared whole, so a hit is exact whatever the frame). A stream of
 * one QP then costs a 36-byte compare and one CRC call over the rest, in place: about half the
 * ICRC of a 100-byte frame (tests/wire/bench_icrc.c). A few entries, picked by bytes that tell
 * QPs apart, so the frames one engine sends and the ones it checks seldom evict each other; a
 * miss costs the compare and a 40-byte store. The engine keeps its own memo (wire_icrc); the
 * public call uses one per thread.
 */
static _Thread_local struct wire_icrc_memo prefix_memo[WIRE_ICRC_MEMO_ENTRIES];

_Static_assert((WIRE_ICRC_MEMO_ENTRIES & (WIRE_ICRC_MEMO_ENTRIES - 1)) == 0, "a power of two");
_Static_assert(WIRE_ICRC_PREFIX_BYTES == PREFIX_BYTES, "wire_loc.h's prefix is the prefix");

static uint32_t crc32_update(uint32_t crc, const uint8_t *buf, size_t len)
{
#ifdef GPUNIC_HAVE_LIBDEFLATE
	return libdeflate_crc32(crc, buf, len);
#else
	return (uint32_t)crc32_z(crc, buf, len);
#endif
}

/*
 * Mask IPv4+UDP+BTH in place (docs/WIRE.md): TOS, TTL and header checksum in IPv4, the UDP
 * checksum, and BTH byte 4 (FECN, BECN, resv6) become all ones. IP ID, flags, total length,
 * addresses, ports, resv7 and the A bit stay covered. Only the first @n
 * bytes exist; masks beyond them are skipped.
 */
static void mask_headers(uint8_t *hdr, size_t n)
{
	static const uint8_t masked[] = {
		IP4_TOS,
		IP4_TTL,
		IP4_CSUM,
		IP4_CSUM + 1,
		GPUNIC_IP4_BYTES + UDP_CSUM,
		GPUNIC_IP4_BYTES + UDP_CSUM + 1,
		GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + BTH_RESV8A,
	};

	for (size_t i = 0; i < sizeof(masked); i++)
		if (masked[i] < n)
			hdr[masked[i]] = 0xFF;
}

/*
 * The CRC after the ones and the first @n bytes of @frame's IPv4 header on, masked (n <= 40). The
 * bytes are read once: @keep (if not NULL) gets the very copy the CRC was computed over, so a
 * frame in shared memory that changes meanwhile cannot file one prefix under another's CRC.
 */
static uint32_t crc_masked_headers(const uint8_t *frame, size_t n, uint8_t *keep)
{
	uint8_t buf[LRH_ONES_BYTES + MASKED_SPAN_BYTES];

	memset(buf, 0xFF, LRH_ONES_BYTES);
	if (n)
		memcpy(buf + LRH_ONES_BYTES, frame + IP4_OFF, n);
	if (keep)
		memcpy(keep, buf + LRH_ONES_BYTES, n);
	mask_headers(buf + LRH_ONES_BYTES, n);
	return crc32_update(0, buf, LRH_ONES_BYTES + n);
}

/* Slot of a prefix: low bits of its total length, source port, opcode and destination QP. */
static struct wire_icrc_memo *memo_slot(struct wire_icrc_memo *memo, const uint8_t *ip)
{
	enum {
		TOTLEN_LO = IP4_TOTLEN + 1,
		SPORT_LO = GPUNIC_IP4_BYTES + UDP_SPORT + 1,
		OPCODE = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + BTH_OPCODE,
		QPN_LO = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + BTH_QPN + 2,
	};
	unsigned h = ip[TOTLEN_LO] ^ ip[SPORT_LO] ^ ip[OPCODE] ^ ip[QPN_LO];

	return &memo[(h ^ h >> 3) & (WIRE_ICRC_MEMO_ENTRIES - 1)];
}

/**
 * gpunic_icrc_compute - ICRC of a frame whose IPv4 header starts at @frame + 14
 * @frame: Ethernet frame (IPv4, IHL 5)
 * @ib_end: offset of the ICRC, i.e. the end of the pad
 *
 * No allocation. The ones and a masked copy of the headers up to the PSN go through the CRC in
 * one 44-byte stack buffer (or come from the per-thread memo of that prefix), then everything
 * from the PSN on goes through it in place: one or two CRC calls.
 * Return: the CRC value; it goes on the wire least-significant byte first.
 */
uint32_t gpunic_icrc_compute(const uint8_t *frame, size_t ib_end)
{
	return wire_icrc(frame, ib_end, NULL);
}

uint32_t wire_icrc_prefix(const uint8_t *ip)
{
	return crc_masked_headers(ip - IP4_OFF, PREFIX_BYTES, NULL);
}

uint32_t wire_icrc_more(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc32_update(crc, p, len);
}

uint32_t wire_icrc(const uint8_t *frame, size_t ib_end, struct wire_icrc_memo *memo)
{
	const uint8_t *ip;
	struct wire_icrc_memo *m;
	uint32_t crc;

	/* Too short to hold the prefix: only a malformed frame, never worth remembering. */
	if (ib_end < IP4_OFF + PREFIX_BYTES)
		return crc_masked_headers(frame, ib_end > IP4_OFF ? ib_end - IP4_OFF : 0, NULL);

	ip = frame + IP4_OFF;
	m = memo_slot(memo ? memo : prefix_memo, ip);
	if (m->valid && memcmp(m->raw, ip, PREFIX_BYTES) == 0) {
		crc = m->crc;
	} else {
		crc = crc_masked_headers(frame, PREFIX_BYTES, m->raw);
		m->crc = crc;
		m->valid = true;
	}
	if (ib_end > IP4_OFF + PREFIX_BYTES)
		crc = crc32_update(crc, ip + PREFIX_BYTES, ib_end - IP4_OFF - PREFIX_BYTES);
	return crc;
}
