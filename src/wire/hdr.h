/* SPDX-License-Identifier: MIT */
/*
 * Private to src/wire: header offsets and raw big-endian accessors on header pointers, the
 * rxe_hdr.h "__bth_psn" level. Every shift, mask and byte swap of the wire lives here; callers
 * have already checked that the bytes they point at exist.
 */
#ifndef GPUNIC_WIRE_HDR_H
#define GPUNIC_WIRE_HDR_H

#include <stdint.h>

#include "gpunic/wire.h"

/* Offsets from the Ethernet frame start (IPv4, IHL 5, no VLAN: docs/WIRE.md 1.1). */
enum {
	ETH_OFF = 0,
	IP4_OFF = GPUNIC_ETH_BYTES,
	UDP_OFF = IP4_OFF + GPUNIC_IP4_BYTES,
	BTH_OFF = UDP_OFF + GPUNIC_UDP_BYTES,
};

/* Offsets inside each header. */
enum {
	ETH_DST = 0,
	ETH_SRC = 6,
	ETH_TYPE = 12,

	IP4_VER_IHL = 0,
	IP4_TOS = 1,
	IP4_TOTLEN = 2,
	IP4_ID = 4,
	IP4_FRAG = 6,
	IP4_TTL = 8,
	IP4_PROTO = 9,
	IP4_CSUM = 10,
	IP4_SRC = 12,
	IP4_DST = 16,

	UDP_SPORT = 0,
	UDP_DPORT = 2,
	UDP_LEN = 4,
	UDP_CSUM = 6,

	BTH_OPCODE = 0,
	BTH_FLAGS = 1,
	BTH_PKEY = 2,
	BTH_RESV8A = 4,
	BTH_QPN = 5,   /* 24 bits */
	BTH_APSN = 8,  /* A bit, resv7, then the 24-bit PSN */
};

#define IP4_VER_IHL_RFC791 0x45u
#define IP4_PROTO_UDP 17u
#define IP4_FRAG_MF 0x2000u
#define IP4_FRAG_OFF_MASK 0x1FFFu

/* BTH byte 1 (docs/WIRE.md 2.1). */
#define BTH_SE_MASK 0x80u
#define BTH_MIG_MASK 0x40u
#define BTH_PAD_MASK 0x30u
#define BTH_PAD_SHIFT 4
#define BTH_TVER_MASK 0x0Fu
/* BTH bytes 8..11 as one word. */
#define BTH_ACK_MASK 0x80000000u
#define BTH_RESV7_MASK 0x7F000000u
#define BTH_RESV7_SHIFT 24

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* The ICRC is the one little-endian field on the wire (docs/WIRE.md 3.1). */
static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Raw BTH accessors on a pointer to the BTH's first byte. */
static inline uint8_t bth_opcode(const uint8_t *bth)
{
	return bth[BTH_OPCODE];
}

static inline bool bth_se(const uint8_t *bth)
{
	return bth[BTH_FLAGS] & BTH_SE_MASK;
}

static inline bool bth_migreq(const uint8_t *bth)
{
	return bth[BTH_FLAGS] & BTH_MIG_MASK;
}

static inline uint8_t bth_pad(const uint8_t *bth)
{
	return (bth[BTH_FLAGS] & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
}

static inline uint8_t bth_tver(const uint8_t *bth)
{
	return bth[BTH_FLAGS] & BTH_TVER_MASK;
}

static inline uint16_t bth_pkey(const uint8_t *bth)
{
	return get_be16(bth + BTH_PKEY);
}

static inline uint32_t bth_qpn(const uint8_t *bth)
{
	return get_be24(bth + BTH_QPN);
}

static inline bool bth_ack(const uint8_t *bth)
{
	return get_be32(bth + BTH_APSN) & BTH_ACK_MASK;
}

static inline uint8_t bth_resv7(const uint8_t *bth)
{
	return (uint8_t)((get_be32(bth + BTH_APSN) & BTH_RESV7_MASK) >> BTH_RESV7_SHIFT);
}

static inline uint32_t bth_psn(const uint8_t *bth)
{
	return get_be32(bth + BTH_APSN) & GPUNIC_PSN_MASK;
}

#endif /* GPUNIC_WIRE_HDR_H */
