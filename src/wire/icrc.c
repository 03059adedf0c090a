// SPDX-License-Identifier: MIT
/*
 * The invariant CRC of a RoCEv2 packet (IBA Annex A17.3.3; roce-wire.md section 3).
 *
 * ICRC = CRC-32 (the zlib/Ethernet one, not CRC-32C: pitfall 7.2) over
 *   8 x 0xFF || IPv4 header || UDP header || BTH || extension headers || payload || pad
 * with the fields that routers may change set to all ones first. The 8 bytes of 0xFF stand in
 * for the masked InfiniBand LRH that RoCEv2 replaced with IP/UDP; rxe folds them into its seed
 * 0xDEBB20E3, which is the CRC register after those 8 bytes. We feed them to zlib instead, so
 * the seed explains itself.
 */
#include <string.h>
#include <zlib.h>

#include "gpunic/wire.h"
#include "hdr.h"

/* IPv4 + UDP + BTH: the span that contains every masked field. */
enum { MASKED_SPAN_BYTES = GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + GPUNIC_BTH_BYTES };

static const uint8_t lrh_ones[8] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };

/*
 * Mask a copy of IPv4+UDP+BTH (roce-wire.md 3.3): TOS, TTL and header checksum in IPv4, the UDP
 * checksum, and BTH byte 4 (FECN, BECN, resv6) become all ones. IP ID, flags, total length,
 * addresses, ports, resv7 and the A bit stay covered (pitfalls 7.3, 7.13). Only the first @n
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

/**
 * gpunic_icrc_compute - ICRC of a frame whose IPv4 header starts at @frame + 14
 * @frame: Ethernet frame (IPv4, IHL 5)
 * @ib_end: offset of the ICRC, i.e. the end of the pad
 *
 * The headers are masked on a 40-byte stack copy; everything after the BTH is fed to zlib in
 * place. No allocation.
 * Return: the CRC value; it goes on the wire least-significant byte first.
 */
uint32_t gpunic_icrc_compute(const uint8_t *frame, size_t ib_end)
{
	uint8_t hdr[MASKED_SPAN_BYTES];
	size_t n = 0;
	uLong crc;

	if (ib_end > IP4_OFF)
		n = ib_end - IP4_OFF;
	if (n > sizeof(hdr))
		n = sizeof(hdr);
	if (n)
		memcpy(hdr, frame + IP4_OFF, n);
	mask_headers(hdr, n);

	crc = crc32(0L, lrh_ones, sizeof(lrh_ones));
	crc = crc32_z(crc, hdr, n);
	if (ib_end > IP4_OFF + sizeof(hdr))
		crc = crc32_z(crc, frame + IP4_OFF + sizeof(hdr), ib_end - IP4_OFF - sizeof(hdr));
	return (uint32_t)crc;
}
