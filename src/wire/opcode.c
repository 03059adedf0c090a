// SPDX-License-Identifier: MIT
/*
 * The opcode table and the small code tables of the wire: AETH credits, RNR timers, names.
 *
 * One entry per BTH opcode, indexed by the opcode byte (rxe_opcode.c style). A zero entry means
 * "unknown": RD, UD, CNP, XRC and reserved opcodes. Parser, builder and validator all read this
 * table instead of switching on opcodes.
 */
#include <stddef.h>

#include "gpunic/wire.h"
#include "wire_loc.h"

/* Offsets from the BTH start (docs/WIRE.md 4, "header bytes"). */
enum {
	OFF_EXT = GPUNIC_BTH_BYTES,                       /* first extension header */
	OFF_AFTER_RETH = GPUNIC_BTH_BYTES + GPUNIC_RETH_BYTES,
	OFF_AFTER_AETH = GPUNIC_BTH_BYTES + GPUNIC_AETH_BYTES,
};

/*
 * Role bits. RWR marks the packet at which the responder takes a receive WQE: the FIRST or ONLY
 * packet of a SEND, and the packet carrying ImmDt of a WRITE with immediate. COMP marks the
 * packet that ends a message with a receive completion (rxe's RXE_RWR_MASK / RXE_COMP_MASK).
 */
#define M_SEND_REQ (GPUNIC_MASK_PAYLOAD | GPUNIC_MASK_REQ | GPUNIC_MASK_SEND)
#define M_WRITE_REQ (GPUNIC_MASK_PAYLOAD | GPUNIC_MASK_REQ | GPUNIC_MASK_WRITE)
#define M_RECV_DONE (GPUNIC_MASK_RWR | GPUNIC_MASK_COMP)
#define M_READ_RESP (GPUNIC_MASK_PAYLOAD | GPUNIC_MASK_ACK)
#define M_ATOMIC_REQ (GPUNIC_MASK_ATMETH | GPUNIC_MASK_REQ | GPUNIC_MASK_ATOMIC)

/*
 * The twelve operations that RC and UC share differ only in the transport bits, so each is
 * written once and instantiated with the transport's name prefix.
 */
#define OP_SEND_FIRST(t) { .name = #t "_SEND_FIRST", \
	.mask = M_SEND_REQ | GPUNIC_MASK_FIRST | GPUNIC_MASK_RWR, \
	.hdr_bytes = GPUNIC_BTH_BYTES }
#define OP_SEND_MIDDLE(t) { .name = #t "_SEND_MIDDLE", \
	.mask = M_SEND_REQ | GPUNIC_MASK_MIDDLE, \
	.hdr_bytes = GPUNIC_BTH_BYTES }
#define OP_SEND_LAST(t) { .name = #t "_SEND_LAST", \
	.mask = M_SEND_REQ | GPUNIC_MASK_LAST | GPUNIC_MASK_COMP, \
	.hdr_bytes = GPUNIC_BTH_BYTES }
#define OP_SEND_LAST_IMM(t) { .name = #t "_SEND_LAST_WITH_IMMEDIATE", \
	.mask = M_SEND_REQ | GPUNIC_MASK_IMMDT | GPUNIC_MASK_LAST | GPUNIC_MASK_COMP, \
	.hdr_bytes = OFF_EXT + GPUNIC_IMMDT_BYTES, .immdt_off = OFF_EXT }
#define OP_SEND_ONLY(t) { .name = #t "_SEND_ONLY", \
	.mask = M_SEND_REQ | GPUNIC_MASK_ONLY | M_RECV_DONE, \
	.hdr_bytes = GPUNIC_BTH_BYTES }
#define OP_SEND_ONLY_IMM(t) { .name = #t "_SEND_ONLY_WITH_IMMEDIATE", \
	.mask = M_SEND_REQ | GPUNIC_MASK_IMMDT | GPUNIC_MASK_ONLY | M_RECV_DONE, \
	.hdr_bytes = OFF_EXT + GPUNIC_IMMDT_BYTES, .immdt_off = OFF_EXT }
#define OP_WRITE_FIRST(t) { .name = #t "_RDMA_WRITE_FIRST", \
	.mask = M_WRITE_REQ | GPUNIC_MASK_RETH | GPUNIC_MASK_FIRST, \
	.hdr_bytes = OFF_AFTER_RETH, .reth_off = OFF_EXT }
#define OP_WRITE_MIDDLE(t) { .name = #t "_RDMA_WRITE_MIDDLE", \
	.mask = M_WRITE_REQ | GPUNIC_MASK_MIDDLE, \
	.hdr_bytes = GPUNIC_BTH_BYTES }
#define OP_WRITE_LAST(t) { .name = #t "_RDMA_WRITE_LAST", \
	.mask = M_WRITE_REQ | GPUNIC_MASK_LAST, \
	.hdr_bytes = GPUNIC_BTH_BYTES }
#define OP_WRITE_LAST_IMM(t) { .name = #t "_RDMA_WRITE_LAST_WITH_IMMEDIATE", \
	.mask = M_WRITE_REQ | GPUNIC_MASK_IMMDT | GPUNIC_MASK_LAST | M_RECV_DONE, \
	.hdr_bytes = OFF_EXT + GPUNIC_IMMDT_BYTES, .immdt_off = OFF_EXT }
#define OP_WRITE_ONLY(t) { .name = #t "_RDMA_WRITE_ONLY", \
	.mask = M_WRITE_REQ | GPUNIC_MASK_RETH | GPUNIC_MASK_ONLY, \
	.hdr_bytes = OFF_AFTER_RETH, .reth_off = OFF_EXT }
/* BTH, RETH, ImmDt in that order (docs/WIRE.md 2.2; the third golden frame of 3.2). */
#define OP_WRITE_ONLY_IMM(t) { .name = #t "_RDMA_WRITE_ONLY_WITH_IMMEDIATE", \
	.mask = M_WRITE_REQ | GPUNIC_MASK_RETH | GPUNIC_MASK_IMMDT | GPUNIC_MASK_ONLY | \
		M_RECV_DONE, \
	.hdr_bytes = OFF_AFTER_RETH + GPUNIC_IMMDT_BYTES, .reth_off = OFF_EXT, \
	.immdt_off = OFF_AFTER_RETH }

#define RC(op) (GPUNIC_TRANSPORT_RC | (op))
#define UC(op) (GPUNIC_TRANSPORT_UC | (op))

/* shared with the engine through wire_loc.h, looked up inline on every frame */
const struct gpunic_opcode_info wire_opcode_table[256] = {
	[RC(GPUNIC_OP_SEND_FIRST)] = OP_SEND_FIRST(RC),
	[RC(GPUNIC_OP_SEND_MIDDLE)] = OP_SEND_MIDDLE(RC),
	[RC(GPUNIC_OP_SEND_LAST)] = OP_SEND_LAST(RC),
	[RC(GPUNIC_OP_SEND_LAST_IMM)] = OP_SEND_LAST_IMM(RC),
	[RC(GPUNIC_OP_SEND_ONLY)] = OP_SEND_ONLY(RC),
	[RC(GPUNIC_OP_SEND_ONLY_IMM)] = OP_SEND_ONLY_IMM(RC),
	[RC(GPUNIC_OP_WRITE_FIRST)] = OP_WRITE_FIRST(RC),
	[RC(GPUNIC_OP_WRITE_MIDDLE)] = OP_WRITE_MIDDLE(RC),
	[RC(GPUNIC_OP_WRITE_LAST)] = OP_WRITE_LAST(RC),
	[RC(GPUNIC_OP_WRITE_LAST_IMM)] = OP_WRITE_LAST_IMM(RC),
	[RC(GPUNIC_OP_WRITE_ONLY)] = OP_WRITE_ONLY(RC),
	[RC(GPUNIC_OP_WRITE_ONLY_IMM)] = OP_WRITE_ONLY_IMM(RC),
	[RC(GPUNIC_OP_READ_REQUEST)] = {
		.name = "RC_RDMA_READ_REQUEST",
		.mask = GPUNIC_MASK_RETH | GPUNIC_MASK_REQ | GPUNIC_MASK_READ | GPUNIC_MASK_ONLY,
		.hdr_bytes = OFF_AFTER_RETH,
		.reth_off = OFF_EXT,
	},
	/* READ_RESPONSE_MIDDLE carries no AETH (docs/WIRE.md 5.4). */
	[RC(GPUNIC_OP_READ_RESPONSE_FIRST)] = {
		.name = "RC_RDMA_READ_RESPONSE_FIRST",
		.mask = GPUNIC_MASK_AETH | M_READ_RESP | GPUNIC_MASK_FIRST,
		.hdr_bytes = OFF_AFTER_AETH,
		.aeth_off = OFF_EXT,
	},
	[RC(GPUNIC_OP_READ_RESPONSE_MIDDLE)] = {
		.name = "RC_RDMA_READ_RESPONSE_MIDDLE",
		.mask = M_READ_RESP | GPUNIC_MASK_MIDDLE,
		.hdr_bytes = GPUNIC_BTH_BYTES,
	},
	[RC(GPUNIC_OP_READ_RESPONSE_LAST)] = {
		.name = "RC_RDMA_READ_RESPONSE_LAST",
		.mask = GPUNIC_MASK_AETH | M_READ_RESP | GPUNIC_MASK_LAST,
		.hdr_bytes = OFF_AFTER_AETH,
		.aeth_off = OFF_EXT,
	},
	[RC(GPUNIC_OP_READ_RESPONSE_ONLY)] = {
		.name = "RC_RDMA_READ_RESPONSE_ONLY",
		.mask = GPUNIC_MASK_AETH | M_READ_RESP | GPUNIC_MASK_ONLY,
		.hdr_bytes = OFF_AFTER_AETH,
		.aeth_off = OFF_EXT,
	},
	[RC(GPUNIC_OP_ACKNOWLEDGE)] = {
		.name = "RC_ACKNOWLEDGE",
		.mask = GPUNIC_MASK_AETH | GPUNIC_MASK_ACK | GPUNIC_MASK_ONLY,
		.hdr_bytes = OFF_AFTER_AETH,
		.aeth_off = OFF_EXT,
	},
	/* AtomicAckETH follows the AETH (docs/WIRE.md 2.2). */
	[RC(GPUNIC_OP_ATOMIC_ACKNOWLEDGE)] = {
		.name = "RC_ATOMIC_ACKNOWLEDGE",
		.mask = GPUNIC_MASK_AETH | GPUNIC_MASK_ATMACK | GPUNIC_MASK_ACK | GPUNIC_MASK_ONLY,
		.hdr_bytes = OFF_AFTER_AETH + GPUNIC_ATMACK_BYTES,
		.aeth_off = OFF_EXT,
		.atmack_off = OFF_AFTER_AETH,
	},
	[RC(GPUNIC_OP_COMPARE_SWAP)] = {
		.name = "RC_COMPARE_SWAP",
		.mask = M_ATOMIC_REQ | GPUNIC_MASK_ONLY,
		.hdr_bytes = OFF_EXT + GPUNIC_ATMETH_BYTES,
		.atmeth_off = OFF_EXT,
	},
	[RC(GPUNIC_OP_FETCH_ADD)] = {
		.name = "RC_FETCH_ADD",
		.mask = M_ATOMIC_REQ | GPUNIC_MASK_ONLY,
		.hdr_bytes = OFF_EXT + GPUNIC_ATMETH_BYTES,
		.atmeth_off = OFF_EXT,
	},
	[RC(GPUNIC_OP_SEND_LAST_INV)] = {
		.name = "RC_SEND_LAST_WITH_INVALIDATE",
		.mask = M_SEND_REQ | GPUNIC_MASK_IETH | GPUNIC_MASK_LAST | GPUNIC_MASK_COMP |
			GPUNIC_MASK_INV,
		.hdr_bytes = OFF_EXT + GPUNIC_IETH_BYTES,
		.ieth_off = OFF_EXT,
	},
	[RC(GPUNIC_OP_SEND_ONLY_INV)] = {
		.name = "RC_SEND_ONLY_WITH_INVALIDATE",
		.mask = M_SEND_REQ | GPUNIC_MASK_IETH | GPUNIC_MASK_ONLY | M_RECV_DONE |
			GPUNIC_MASK_INV,
		.hdr_bytes = OFF_EXT + GPUNIC_IETH_BYTES,
		.ieth_off = OFF_EXT,
	},

	/* UC: exactly the SEND and WRITE operations 0x20-0x2B (docs/WIRE.md 4). */
	[UC(GPUNIC_OP_SEND_FIRST)] = OP_SEND_FIRST(UC),
	[UC(GPUNIC_OP_SEND_MIDDLE)] = OP_SEND_MIDDLE(UC),
	[UC(GPUNIC_OP_SEND_LAST)] = OP_SEND_LAST(UC),
	[UC(GPUNIC_OP_SEND_LAST_IMM)] = OP_SEND_LAST_IMM(UC),
	[UC(GPUNIC_OP_SEND_ONLY)] = OP_SEND_ONLY(UC),
	[UC(GPUNIC_OP_SEND_ONLY_IMM)] = OP_SEND_ONLY_IMM(UC),
	[UC(GPUNIC_OP_WRITE_FIRST)] = OP_WRITE_FIRST(UC),
	[UC(GPUNIC_OP_WRITE_MIDDLE)] = OP_WRITE_MIDDLE(UC),
	[UC(GPUNIC_OP_WRITE_LAST)] = OP_WRITE_LAST(UC),
	[UC(GPUNIC_OP_WRITE_LAST_IMM)] = OP_WRITE_LAST_IMM(UC),
	[UC(GPUNIC_OP_WRITE_ONLY)] = OP_WRITE_ONLY(UC),
	[UC(GPUNIC_OP_WRITE_ONLY_IMM)] = OP_WRITE_ONLY_IMM(UC),
};

const struct gpunic_opcode_info *gpunic_opcode_info(uint8_t opcode)
{
	return wire_opcode_info(opcode);
}

bool gpunic_opcode_legal(uint8_t opcode, enum gpunic_qp_type type)
{
	return wire_opcode_info(opcode) && wire_transport_fits(opcode, type);
}

const char *gpunic_opcode_name(uint8_t opcode)
{
	const struct gpunic_opcode_info *info = gpunic_opcode_info(opcode);

	return info ? info->name : "UNKNOWN";
}

/*
 * ACK credit codes 0..30 (IBA table 45; rdmavt credit_table). Code 31 means "no end-to-end flow
 * control", reported as UINT32_MAX.
 */
static const uint32_t credit_table[32] = {
	0,    1,    2,    3,    4,    6,    8,     12,    16,    24,   32,
	48,   64,   96,   128,  192,  256,  384,   512,   768,   1024, 1536,
	2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, UINT32_MAX,
};

uint32_t gpunic_aeth_credits(uint8_t code)
{
	return credit_table[code & GPUNIC_AETH_VALUE_MASK];
}

/*
 * RNR NAK timer codes in microseconds (IBA table 46). Code 0 is the longest; code 25 is
 * 61.44 ms (rxe's table has 61410 there by mistake: docs/WIRE.md 2.3).
 */
static const uint32_t rnr_usec_table[32] = {
	655360, 10,    20,    30,    40,    60,     80,     120,
	160,    240,   320,   480,   640,   960,    1280,   1920,
	2560,   3840,  5120,  7680,  10240, 15360,  20480,  30720,
	40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint32_t gpunic_rnr_timer_usec(uint8_t code)
{
	return rnr_usec_table[code & GPUNIC_AETH_VALUE_MASK];
}

static const char *const nak_names[] = {
	[GPUNIC_NAK_PSN_SEQ_ERROR] = "NAK_PSN_SEQ_ERROR",
	[GPUNIC_NAK_INVALID_REQUEST] = "NAK_INVALID_REQUEST",
	[GPUNIC_NAK_REMOTE_ACCESS] = "NAK_REMOTE_ACCESS_ERROR",
	[GPUNIC_NAK_REMOTE_OP] = "NAK_REMOTE_OPERATIONAL_ERROR",
	[GPUNIC_NAK_INVALID_RD_REQUEST] = "NAK_INVALID_RD_REQUEST",
};

/* Syndrome bits 6..5 give the type, bits 4..0 the credit, timer or NAK code (IBA 9.7.5.1). */
const char *gpunic_aeth_syndrome_name(uint8_t syndrome)
{
	uint8_t value = syndrome & GPUNIC_AETH_VALUE_MASK;

	switch (syndrome & GPUNIC_AETH_TYPE_MASK) {
	case GPUNIC_AETH_ACK:
		return "ACK";
	case GPUNIC_AETH_RNR_NAK:
		return "RNR_NAK";
	case GPUNIC_AETH_NAK:
		if (value < sizeof(nak_names) / sizeof(nak_names[0]))
			return nak_names[value];
		return "NAK_RESERVED";
	default:
		return "RESERVED";
	}
}

static const char *const wire_err_names[] = {
	[GPUNIC_WIRE_OK] = "ok",
	[GPUNIC_WIRE_ETH_TRUNCATED] = "eth_truncated",
	[GPUNIC_WIRE_NOT_IPV4] = "not_ipv4",
	[GPUNIC_WIRE_IP_TRUNCATED] = "ip_truncated",
	[GPUNIC_WIRE_IP_VERSION] = "ip_version",
	[GPUNIC_WIRE_IP_OPTIONS] = "ip_options",
	[GPUNIC_WIRE_IP_LENGTH] = "ip_length",
	[GPUNIC_WIRE_IP_FRAGMENT] = "ip_fragment",
	[GPUNIC_WIRE_IP_CHECKSUM] = "ip_checksum",
	[GPUNIC_WIRE_NOT_UDP] = "not_udp",
	[GPUNIC_WIRE_UDP_LENGTH] = "udp_length",
	[GPUNIC_WIRE_UDP_PORT] = "udp_port",
	[GPUNIC_WIRE_BTH_TRUNCATED] = "bth_truncated",
	[GPUNIC_WIRE_OPCODE_UNKNOWN] = "opcode_unknown",
	[GPUNIC_WIRE_HDR_TRUNCATED] = "hdr_truncated",
	[GPUNIC_WIRE_TVER] = "tver",
	[GPUNIC_WIRE_PKEY] = "pkey",
	[GPUNIC_WIRE_PAD] = "pad",
	[GPUNIC_WIRE_PAYLOAD_UNEXPECTED] = "payload_unexpected",
	[GPUNIC_WIRE_OPCODE_QP_TYPE] = "opcode_qp_type",
	[GPUNIC_WIRE_ICRC] = "icrc",
};

_Static_assert(sizeof(wire_err_names) / sizeof(wire_err_names[0]) == GPUNIC_WIRE_ERR_MAX,
	       "every enum gpunic_wire_err value needs a name");

const char *gpunic_wire_err_name(enum gpunic_wire_err err)
{
	if ((unsigned)err >= GPUNIC_WIRE_ERR_MAX || !wire_err_names[err])
		return "unknown";
	return wire_err_names[err];
}

/* Low 15 bits are the partition, bit 15 the membership (IBA 10.9.1); 0x7FFF is the default. */
bool gpunic_pkey_valid(uint16_t pkey)
{
	return wire_pkey_valid(pkey);
}

/*
 * The UDP source port both ends derive from the flow label, or from the QPN pair when there is
 * none, in the ephemeral range 0xC000-0xFFFF (rdma_get_udp_sport; docs/WIRE.md 1.3).
 */
uint16_t gpunic_roce_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	uint32_t fl = flow_label;

	if (!fl) {
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)(v & 0xFFFFFu);
	}
	return (uint16_t)(((fl & 0x3FFFu) ^ ((fl & 0xFC000u) >> 14)) | 0xC000u);
}
