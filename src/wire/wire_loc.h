/* SPDX-License-Identifier: MIT */
/*
 * The wire codec's internal entry points for the engine (src/nic): the same decode and encode
 * as wire.h's, minus the work a caller that already holds the answer repeats on every frame
 * (the whole-struct clear, the opcode looked up three times per frame). Not exported.
 */
#ifndef GPUNIC_WIRE_LOC_H
#define GPUNIC_WIRE_LOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpunic/wire.h"

#define WIRE_HIDDEN __attribute__((visibility("hidden")))

/* Largest IPv4 total length; frames beyond it cannot be described by the IP header. */
#define WIRE_IP4_TOTLEN_MAX 0xFFFFu

/* The opcode table (opcode.c); an entry whose name is NULL is an unknown opcode. */
extern const struct gpunic_opcode_info wire_opcode_table[256] WIRE_HIDDEN;

/* gpunic_opcode_info(), inline. */
static inline const struct gpunic_opcode_info *wire_opcode_info(uint8_t opcode)
{
	const struct gpunic_opcode_info *info = &wire_opcode_table[opcode];

	return info->name ? info : NULL;
}

/* Does @opcode's transport field name the transport of a @type QP (RC or UC)? The opcode's
 * presence in the table is the caller's to check (gpunic_opcode_legal). */
static inline bool wire_transport_fits(uint8_t opcode, enum gpunic_qp_type type)
{
	uint8_t transport = opcode & GPUNIC_TRANSPORT_MASK;

	if (type == GPUNIC_QPT_RC)
		return transport == GPUNIC_TRANSPORT_RC;
	return type == GPUNIC_QPT_UC && transport == GPUNIC_TRANSPORT_UC;
}

/* gpunic_pkey_valid(), inline: low 15 bits the partition, 0x7FFF the default (IBA 10.9.1). */
static inline bool wire_pkey_valid(uint16_t pkey)
{
	return (pkey & 0x7FFFu) == 0x7FFFu;
}

/* The ICRC's remembered prefixes (icrc.c): the CRC of a frame's masked headers up to the PSN,
 * kept by the raw bytes it was computed over. */
#define WIRE_ICRC_PREFIX_BYTES (GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + 8)
#define WIRE_ICRC_MEMO_ENTRIES 8

struct wire_icrc_memo {
	uint8_t raw[WIRE_ICRC_PREFIX_BYTES];
	uint32_t crc;
	bool valid;
};

/*
 * gpunic_icrc_compute() with the caller's memo (WIRE_ICRC_MEMO_ENTRIES entries, zeroed at first,
 * used by one thread at a time), or the thread's own for NULL: the engine keeps one per NIC and
 * skips the thread-local lookup on every frame.
 */
uint32_t wire_icrc(const uint8_t *frame, size_t ib_end, struct wire_icrc_memo *memo) WIRE_HIDDEN;

/*
 * gpunic_frame_decode() without clearing @pkt first: on success every field is written, with the
 * same values; on failure the fields are undefined (the engine drops the frame unread). @memo as
 * for wire_icrc.
 */
enum gpunic_wire_err wire_decode(const uint8_t *frame, size_t len, unsigned flags,
				 struct gpunic_pkt *pkt, struct wire_icrc_memo *memo) WIRE_HIDDEN;

/* gpunic_frame_size() for an opcode already looked up (@info not NULL): payload only where the
 * table allows it, a pad only on packets that end a message, within an IPv4 total length. */
static inline size_t wire_frame_size(const struct gpunic_opcode_info *info, uint32_t paylen)
{
	uint64_t ip_total;

	if (paylen && !(info->mask & GPUNIC_MASK_PAYLOAD))
		return 0;
	if (gpunic_pad_bytes(paylen) && !(info->mask & GPUNIC_MASK_LAST))
		return 0;
	ip_total = (uint64_t)GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + info->hdr_bytes + paylen +
		   gpunic_pad_bytes(paylen) + GPUNIC_ICRC_BYTES;
	if (ip_total > WIRE_IP4_TOTLEN_MAX)
		return 0;
	return (size_t)(GPUNIC_ETH_BYTES + ip_total);
}

/* A payload of 16 to 32 bytes (the scatter-to-CQE size, the hot path's) in two overlapping
 * 16-byte moves, as libc would, without the call; any other length by libc. The engine places
 * received payloads and builds sent frames with it. */
static inline void wire_copy_payload(void *dst, const uint8_t *src, uint32_t len)
{
	if (len - 16 <= 16) {
		memcpy(dst, src, 16);
		memcpy((uint8_t *)dst + len - 16, src + len - 16, 16);
	} else if (len) {
		memcpy(dst, src, len);
	}
}

/*
 * A connection's frame template (gpunic_frame_template) and the heads of the frames last built
 * from it. Within one template a frame's headers up to the PSN word change only with the opcode,
 * the payload's length and the SE bit (the total length and the BTH flags byte follow from them),
 * so those three are the key (wire_tx_key): a compare of one word, then one copy of the head
 * whole, its lengths and IPv4 checksum set, with the CRC of its masked ICRC prefix, the opcode's
 * entry and the frame's size beside it. Two entries, for a QP that sends requests and answers.
 */
#define WIRE_TX_HEADS 2

struct wire_tx_head {
	uint8_t bytes[GPUNIC_FRAME_TMPL_BYTES];
	uint32_t crc;
	uint32_t size;                  /* wire_frame_size(info, the key's payload length) */
	uint64_t key;                   /* 0: empty (every key has its low bit set) */
	const struct gpunic_opcode_info *info;
};

struct wire_tx_tmpl {
	uint8_t hdr[GPUNIC_FRAME_TMPL_BYTES];
	struct wire_tx_head heads[WIRE_TX_HEADS];
};

/* Forget the remembered heads: @t->hdr was built again. */
static inline void wire_tx_tmpl_reset(struct wire_tx_tmpl *t)
{
	for (int i = 0; i < WIRE_TX_HEADS; i++)
		t->heads[i].key = 0;
}

/* The CRC after the LRH ones and the masked prefix (WIRE_ICRC_PREFIX_BYTES) of the IPv4 header
 * at @ip, computed afresh; then the CRC on from @crc over @len more bytes (icrc.c). */
uint32_t wire_icrc_prefix(const uint8_t *ip) WIRE_HIDDEN;
uint32_t wire_icrc_more(uint32_t crc, const uint8_t *p, size_t len) WIRE_HIDDEN;

#endif /* GPUNIC_WIRE_LOC_H */
