/* SPDX-License-Identifier: MIT */
/*
 * gpunic wire codec: RoCEv2 packets as pure functions over byte buffers.
 *
 * A RoCEv2 frame is Ethernet | IPv4 | UDP (dst 4791) | BTH | ext headers | payload | pad | ICRC,
 * maybe followed by Ethernet minimum-frame padding. Every multi-byte header field is big-endian;
 * the ICRC goes out least-significant byte first. No I/O and no allocation happen here.
 *
 * The layout follows Linux rxe: one opcode table (gpunic_opcode_info) says which headers follow
 * the BTH, whether there is payload and where in a message the packet sits; parser, builder and
 * validator all read that table.
 *
 * Errors (docs/DESIGN.md, "Errors"): the decoder returns why a frame is refused (enum
 * gpunic_wire_err, GPUNIC_WIRE_OK for a good one), the encoders the bytes written or 0.
 */
#ifndef GPUNIC_WIRE_H
#define GPUNIC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUNIC_ROCE_UDP_PORT 4791u
#define GPUNIC_ETHERTYPE_IPV4 0x0800u
#define GPUNIC_ETHERTYPE_ARP 0x0806u

/* Header sizes in bytes. */
enum {
	GPUNIC_ETH_BYTES = 14,
	GPUNIC_IP4_BYTES = 20,
	GPUNIC_UDP_BYTES = 8,
	GPUNIC_BTH_BYTES = 12,
	GPUNIC_RETH_BYTES = 16,
	GPUNIC_AETH_BYTES = 4,
	GPUNIC_IMMDT_BYTES = 4,
	GPUNIC_ATMETH_BYTES = 28,
	GPUNIC_ATMACK_BYTES = 8,
	GPUNIC_IETH_BYTES = 4,
	GPUNIC_ICRC_BYTES = 4,
	/* Ethernet + IPv4 + UDP: what precedes the BTH in every frame we build. */
	GPUNIC_L2L4_BYTES = GPUNIC_ETH_BYTES + GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES,
	/* Minimum Ethernet frame without FCS. */
	GPUNIC_ETH_MIN_FRAME_BYTES = 60,
	/* Largest header stack between BTH start and payload (BTH + AtomicETH). */
	GPUNIC_MAX_IB_HDR_BYTES = GPUNIC_BTH_BYTES + GPUNIC_ATMETH_BYTES,
	/* Largest frame: headers + 4096-byte PMTU + pad-free payload + ICRC. */
	GPUNIC_MAX_FRAME_BYTES = GPUNIC_L2L4_BYTES + GPUNIC_MAX_IB_HDR_BYTES + 4096 + GPUNIC_ICRC_BYTES,
};

/* ---------------------------------------------------------------- opcodes */

/* BTH opcode values: bits 7..5 are the transport (RC 0x00, UC 0x20), bits 4..0 the operation. */
enum gpunic_opcode {
	GPUNIC_OP_SEND_FIRST = 0x00,
	GPUNIC_OP_SEND_MIDDLE = 0x01,
	GPUNIC_OP_SEND_LAST = 0x02,
	GPUNIC_OP_SEND_LAST_IMM = 0x03,
	GPUNIC_OP_SEND_ONLY = 0x04,
	GPUNIC_OP_SEND_ONLY_IMM = 0x05,
	GPUNIC_OP_WRITE_FIRST = 0x06,
	GPUNIC_OP_WRITE_MIDDLE = 0x07,
	GPUNIC_OP_WRITE_LAST = 0x08,
	GPUNIC_OP_WRITE_LAST_IMM = 0x09,
	GPUNIC_OP_WRITE_ONLY = 0x0A,
	GPUNIC_OP_WRITE_ONLY_IMM = 0x0B,
	GPUNIC_OP_READ_REQUEST = 0x0C,
	GPUNIC_OP_READ_RESPONSE_FIRST = 0x0D,
	GPUNIC_OP_READ_RESPONSE_MIDDLE = 0x0E,
	GPUNIC_OP_READ_RESPONSE_LAST = 0x0F,
	GPUNIC_OP_READ_RESPONSE_ONLY = 0x10,
	GPUNIC_OP_ACKNOWLEDGE = 0x11,
	GPUNIC_OP_ATOMIC_ACKNOWLEDGE = 0x12,
	GPUNIC_OP_COMPARE_SWAP = 0x13,
	GPUNIC_OP_FETCH_ADD = 0x14,
	GPUNIC_OP_SEND_LAST_INV = 0x16,
	GPUNIC_OP_SEND_ONLY_INV = 0x17,
};

/* Transport bits of the opcode (bits 7..5). */
enum gpunic_transport {
	GPUNIC_TRANSPORT_RC = 0x00,
	GPUNIC_TRANSPORT_UC = 0x20,
};
#define GPUNIC_TRANSPORT_MASK 0xE0u
#define GPUNIC_OP_MASK 0x1Fu

/* Queue pair types that the softnic implements. */
enum gpunic_qp_type {
	GPUNIC_QPT_RC = 0,
	GPUNIC_QPT_UC = 1,
};

/* Property bits of an opcode, as rxe's rxe_hdr_mask: headers present, then roles. */
enum gpunic_opmask {
	GPUNIC_MASK_RETH = 1u << 0,
	GPUNIC_MASK_AETH = 1u << 1,
	GPUNIC_MASK_IMMDT = 1u << 2,
	GPUNIC_MASK_ATMETH = 1u << 3,
	GPUNIC_MASK_ATMACK = 1u << 4,
	GPUNIC_MASK_IETH = 1u << 5,
	GPUNIC_MASK_PAYLOAD = 1u << 6, /* may carry payload */
	GPUNIC_MASK_REQ = 1u << 7,     /* a request (requester -> responder) */
	GPUNIC_MASK_ACK = 1u << 8,     /* a response (ACK, NAK, read response, atomic ack) */
	GPUNIC_MASK_SEND = 1u << 9,
	GPUNIC_MASK_WRITE = 1u << 10,
	GPUNIC_MASK_READ = 1u << 11,
	GPUNIC_MASK_ATOMIC = 1u << 12,
	GPUNIC_MASK_FIRST = 1u << 13,
	GPUNIC_MASK_MIDDLE = 1u << 14,
	GPUNIC_MASK_LAST = 1u << 15,
	GPUNIC_MASK_ONLY = GPUNIC_MASK_FIRST | GPUNIC_MASK_LAST,
	GPUNIC_MASK_RWR = 1u << 16,  /* consumes a receive WQE (SEND*, WRITE*_IMM last/only) */
	GPUNIC_MASK_COMP = 1u << 17, /* completes a message at the responder */
	GPUNIC_MASK_INV = 1u << 18,  /* SEND with invalidate */
};

/* Offsets (from the BTH start) of the extension headers an opcode carries; 0 = absent. */
struct gpunic_opcode_info {
	const char *name;   /* "RC_SEND_ONLY", ...; NULL = unknown opcode */
	uint32_t mask;      /* enum gpunic_opmask bits */
	uint8_t hdr_bytes;  /* BTH start to payload start */
	uint8_t reth_off;
	uint8_t aeth_off;
	uint8_t immdt_off;
	uint8_t atmeth_off;
	uint8_t atmack_off;
	uint8_t ieth_off;
};

/**
 * gpunic_opcode_info - look an opcode up in the table
 * Return: the entry, or NULL for an opcode gpunic does not know (RD, UD, CNP, reserved...).
 */
const struct gpunic_opcode_info *gpunic_opcode_info(uint8_t opcode);

/**
 * gpunic_opcode_legal - whether an opcode may appear on a QP of the given type
 * UC: exactly 0x20-0x2B. RC: 0x00-0x14 and the invalidate sends.
 */
bool gpunic_opcode_legal(uint8_t opcode, enum gpunic_qp_type type);

/** gpunic_opcode_name - table name, or "UNKNOWN" */
const char *gpunic_opcode_name(uint8_t opcode);

/* ---------------------------------------------------------------- PSN */

#define GPUNIC_PSN_MASK 0x00FFFFFFu

static inline uint32_t gpunic_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & GPUNIC_PSN_MASK;
}

/* >0: a after b, 0: equal, <0: a before b. Valid while |a - b| < 2^23 (rxe psn_compare). */
static inline int32_t gpunic_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

/* Pad bytes that bring a payload to a 4-byte multiple. */
static inline uint32_t gpunic_pad_bytes(uint32_t paylen)
{
	return (0u - paylen) & 3u;
}

/* ---------------------------------------------------------------- AETH */

/* AETH syndrome byte: bits 6..5 type, bits 4..0 value (IBA 9.7.5.1). */
enum gpunic_aeth_type {
	GPUNIC_AETH_ACK = 0x00,
	GPUNIC_AETH_RNR_NAK = 0x20,
	GPUNIC_AETH_RESERVED = 0x40,
	GPUNIC_AETH_NAK = 0x60,
};
#define GPUNIC_AETH_TYPE_MASK 0x60u
#define GPUNIC_AETH_VALUE_MASK 0x1Fu
/* Credit count 31 = "invalid": no end-to-end flow control (what rxe always sends). */
#define GPUNIC_AETH_ACK_UNLIMITED 0x1Fu

enum gpunic_nak_code {
	GPUNIC_NAK_PSN_SEQ_ERROR = 0,
	GPUNIC_NAK_INVALID_REQUEST = 1,
	GPUNIC_NAK_REMOTE_ACCESS = 2,
	GPUNIC_NAK_REMOTE_OP = 3,
	GPUNIC_NAK_INVALID_RD_REQUEST = 4,
};

/* Message credits encoded by ACK credit codes 0..30 (IBA table 45); 31 ("no flow control")
 * gives UINT32_MAX. Only the low 5 bits of @code are used. */
uint32_t gpunic_aeth_credits(uint8_t code);
/* RNR NAK timer code (0..31, low 5 bits of @code) to microseconds; code 0 is 655.36 ms. */
uint32_t gpunic_rnr_timer_usec(uint8_t code);
/* "ACK", "RNR_NAK", "NAK_PSN_SEQ_ERROR", ... for a syndrome byte. */
const char *gpunic_aeth_syndrome_name(uint8_t syndrome);

/* ---------------------------------------------------------------- packets */

/*
 * A packet's fields, filled by gpunic_frame_decode() and read by gpunic_frame_encode().
 * Addresses and multi-byte values are in host byte order, except imm, which is the wire's
 * four bytes read big-endian (what ntohl(wc.imm_data) gives an ibverbs user).
 */
struct gpunic_pkt {
	/* Ethernet */
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	/* IPv4 */
	uint8_t tos;
	uint8_t ttl;
	uint16_t ip_id;
	uint16_t ip_frag;   /* flags + fragment offset; 0x4000 = DF */
	uint32_t src_ip;
	uint32_t dst_ip;
	/* UDP */
	uint16_t src_port;
	uint16_t dst_port;
	uint16_t udp_csum;  /* rxe sends 0; masked in the ICRC */
	/* BTH */
	uint8_t opcode;
	bool se;
	bool migreq;
	uint8_t pad;        /* decode: from BTH; encode: computed from paylen */
	uint8_t tver;
	uint16_t pkey;
	uint8_t resv8a;     /* BTH byte 4: FECN, BECN, resv6 (masked in the ICRC) */
	uint32_t qpn;
	bool ack_req;
	uint8_t resv7;      /* must be 0, covered by the ICRC */
	uint32_t psn;
	/* Extension headers: valid when the opcode's mask says the header is present. */
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;
	uint32_t imm;
	uint64_t atm_va;
	uint32_t atm_rkey;
	uint64_t atm_swap_add;
	uint64_t atm_compare;
	uint64_t atmack_orig;
	uint32_t ieth_rkey;
	/* Payload (without pad). decode: points into the frame; encode: copied from here. */
	const uint8_t *payload;
	uint32_t paylen;
	/* Filled by decode. */
	uint32_t mask;        /* opcode table mask */
	uint32_t icrc;        /* value found on the wire (as a CRC value, LSB-first decoded) */
	uint32_t icrc_calc;   /* value computed over the frame */
	bool icrc_ok;
	uint32_t frame_bytes; /* Ethernet header to ICRC end (excludes min-frame padding) */
};

/* Why a frame was rejected: every reason has a name (gpunic_wire_err_name). */
enum gpunic_wire_err {
	GPUNIC_WIRE_OK = 0,
	GPUNIC_WIRE_ETH_TRUNCATED,     /* shorter than an Ethernet header */
	GPUNIC_WIRE_NOT_IPV4,          /* EtherType is not IPv4 */
	GPUNIC_WIRE_IP_TRUNCATED,      /* shorter than an IPv4 header */
	GPUNIC_WIRE_IP_VERSION,        /* version != 4 */
	GPUNIC_WIRE_IP_OPTIONS,        /* IHL != 5 (RoCEv2 sends no options) */
	GPUNIC_WIRE_IP_LENGTH,         /* total length < headers or > the bytes in the frame */
	GPUNIC_WIRE_IP_FRAGMENT,       /* MF set or fragment offset != 0 */
	GPUNIC_WIRE_IP_CHECKSUM,       /* IPv4 header checksum does not verify */
	GPUNIC_WIRE_NOT_UDP,           /* IP protocol != 17 */
	GPUNIC_WIRE_UDP_LENGTH,        /* UDP length != IP total length - IP header */
	GPUNIC_WIRE_UDP_PORT,          /* UDP destination port != the expected RoCEv2 port */
	GPUNIC_WIRE_BTH_TRUNCATED,     /* too short for BTH + ICRC */
	GPUNIC_WIRE_OPCODE_UNKNOWN,    /* no table entry (RD, UD, CNP, reserved) */
	GPUNIC_WIRE_HDR_TRUNCATED,     /* too short for the headers the opcode carries */
	GPUNIC_WIRE_TVER,              /* BTH transport version != 0 */
	GPUNIC_WIRE_PKEY,              /* P_Key does not match the default partition */
	GPUNIC_WIRE_PAD,               /* pad count larger than the payload, or pad on FIRST/MIDDLE */
	GPUNIC_WIRE_PAYLOAD_UNEXPECTED,/* payload on an opcode that carries none */
	GPUNIC_WIRE_OPCODE_QP_TYPE,    /* opcode not legal for the QP type */
	GPUNIC_WIRE_ICRC,              /* ICRC does not verify */
	GPUNIC_WIRE_ERR_MAX,
};

const char *gpunic_wire_err_name(enum gpunic_wire_err err);

/* Decode flags. */
enum gpunic_decode_flags {
	/* compute nothing: the link cannot see the real IP header (icrc_calc 0, icrc_ok false) */
	GPUNIC_DECODE_SKIP_ICRC = 1u << 0,
	GPUNIC_DECODE_SKIP_IP_CSUM = 1u << 1,  /* do not verify the IPv4 header checksum */
	GPUNIC_DECODE_ANY_PORT = 1u << 2,      /* accept any UDP destination port */
};

/**
 * gpunic_frame_decode - validate and parse one Ethernet frame
 * @frame: frame bytes (no FCS); Ethernet minimum-frame padding after the ICRC is allowed
 * @len: bytes in @frame
 * @flags: enum gpunic_decode_flags
 * @pkt: filled with every field; payload points into @frame
 *
 * Checks every length and offset before reading it: the frame, IPv4 header and total length, UDP
 * length, BTH, the opcode's headers, pad and ICRC. The ICRC is found from the IP total length.
 * On failure @pkt holds whatever was parsed before the failing check.
 * Return: GPUNIC_WIRE_OK or the reason for rejection.
 */
enum gpunic_wire_err gpunic_frame_decode(const uint8_t *frame, size_t len, unsigned flags,
					 struct gpunic_pkt *pkt);

/**
 * gpunic_pkt_check_qp_type - the transport rule the decoder cannot know: is pkt's opcode legal
 * on a QP of @type?
 * Return: GPUNIC_WIRE_OK or GPUNIC_WIRE_OPCODE_QP_TYPE.
 */
enum gpunic_wire_err gpunic_pkt_check_qp_type(const struct gpunic_pkt *pkt, enum gpunic_qp_type type);

/**
 * gpunic_frame_size - bytes gpunic_frame_encode() writes for an opcode and payload length
 * Return: the size, or 0 if the opcode is unknown, carries no payload but @paylen > 0, would need
 * a pad on a FIRST/MIDDLE packet, or the packet would not fit the IPv4 total length: 0 means the
 * decoder would reject the frame.
 */
size_t gpunic_frame_size(uint8_t opcode, uint32_t paylen);

/**
 * gpunic_frame_encode - build a complete frame from @pkt
 * Writes Ethernet, IPv4 (total length and checksum computed), UDP (length computed, checksum =
 * pkt->udp_csum), BTH (pad computed from paylen; pkt->pad is ignored), the extension headers the
 * opcode carries, payload, zero pad and the ICRC. No minimum-frame padding is added.
 * Return: bytes written, or 0 if gpunic_frame_size() is 0, @cap is too small, or payload is NULL
 * with paylen > 0.
 */
size_t gpunic_frame_encode(const struct gpunic_pkt *pkt, uint8_t *buf, size_t cap);

/* Bytes of a frame template: Ethernet, IPv4, UDP and the BTH. */
#define GPUNIC_FRAME_TMPL_BYTES (GPUNIC_L2L4_BYTES + GPUNIC_BTH_BYTES)

/**
 * gpunic_frame_template - the headers every frame of one connection shares
 * @pkt: addresses, ports, IPv4 ID/flags/TOS/TTL, UDP checksum, P_Key, QPN, migreq/tver/resv
 *       fields as gpunic_frame_encode() would write them; opcode, SE, PSN, A and lengths are
 *       ignored (they change per frame)
 * @tmpl: GPUNIC_FRAME_TMPL_BYTES bytes, for gpunic_frame_encode_tmpl()
 */
void gpunic_frame_template(const struct gpunic_pkt *pkt, uint8_t *tmpl);

/**
 * gpunic_frame_encode_tmpl - gpunic_frame_encode() from a template: the same bytes, with the
 * connection's headers copied from @tmpl and only the lengths, the IPv4 checksum (updated, not
 * summed again), the BTH opcode, SE, pad, A and PSN, the extension headers, payload, pad and
 * ICRC written per frame. The header fields of @pkt other than those are not read.
 * Return: as gpunic_frame_encode().
 */
size_t gpunic_frame_encode_tmpl(const uint8_t *tmpl, const struct gpunic_pkt *pkt, uint8_t *buf,
				size_t cap);

/**
 * gpunic_icrc_compute - ICRC of a frame whose IPv4 header starts at @frame + 14
 * @frame: Ethernet frame
 * @ib_end: offset of the ICRC (end of pad)
 * Return: the CRC value (store it least-significant byte first).
 */
uint32_t gpunic_icrc_compute(const uint8_t *frame, size_t ib_end);

/* IPv4 header checksum (RFC 791) over @len bytes, returned in host order. */
uint16_t gpunic_ip4_checksum(const uint8_t *hdr, size_t len);

/* RoCEv2 UDP source port from the flow label or QPNs, as rdma_get_udp_sport() computes it. */
uint16_t gpunic_roce_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);

/* P_Key acceptance: low 15 bits equal to the default partition's (0x7FFF), and not 0. */
bool gpunic_pkey_valid(uint16_t pkey);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_WIRE_H */
