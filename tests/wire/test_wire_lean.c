/*
 * The engine's lean decoder (wire_decode_lean) against the general one (wire_decode), on every
 * opcode and on frames with one byte, the length or a flag changed: whenever the lean one says
 * yes, the general one must say OK with the same values in every field the lean one writes; and
 * on every frame the general one takes, of an opcode the lean one handles, it must say yes too
 * (else the engine's fast way would silently be the slow one). Built with src/wire's own
 * sources, as both decoders are private to the library.
 */
#include <stdlib.h>

#include "wire/lean.h"
#include "wire_util.h"

#define LEAN_OTHER (GPUNIC_MASK_ATMETH | GPUNIC_MASK_ATMACK | GPUNIC_MASK_IETH)

static const unsigned flag_sets[] = {
	0,
	GPUNIC_DECODE_SKIP_ICRC | GPUNIC_DECODE_SKIP_IP_CSUM,
	GPUNIC_DECODE_SKIP_ICRC | GPUNIC_DECODE_SKIP_IP_CSUM | GPUNIC_DECODE_ANY_PORT,
	GPUNIC_DECODE_ANY_PORT,
};

static uint8_t payload[2048];
static unsigned long lean_yes, general_ok;

/* Both decoders on one frame, under every flag set. */
static void compare(const uint8_t *frame, size_t len)
{
	for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
		struct wire_icrc_memo memo_a[WIRE_ICRC_MEMO_ENTRIES] = { 0 };
		struct wire_icrc_memo memo_b[WIRE_ICRC_MEMO_ENTRIES] = { 0 };
		struct gpunic_pkt a, b;
		enum gpunic_wire_err err;
		bool yes;

		memset(&a, 0, sizeof(a));
		memset(&b, 0x5A, sizeof(b));
		err = wire_decode(frame, len, flag_sets[f], &a, memo_a);
		yes = wire_decode_lean(frame, len, flag_sets[f], &b, memo_b);
		if (err == GPUNIC_WIRE_OK)
			general_ok++;
		if (!yes) {
			CHECK(err != GPUNIC_WIRE_OK || (a.mask & LEAN_OTHER));
			continue;
		}
		lean_yes++;
		CHECK_EQ(err, GPUNIC_WIRE_OK);
		CHECK_EQ(a.dst_ip, b.dst_ip);
		CHECK_EQ(a.src_ip, b.src_ip);
		CHECK_EQ(a.dst_port, b.dst_port);
		CHECK_EQ(a.opcode, b.opcode);
		CHECK_EQ(a.mask, b.mask);
		CHECK_EQ(a.se, b.se);
		CHECK_EQ(a.ack_req, b.ack_req);
		CHECK_EQ(a.qpn, b.qpn);
		CHECK_EQ(a.psn, b.psn);
		CHECK(a.payload == b.payload);
		CHECK_EQ(a.paylen, b.paylen);
		if (a.mask & GPUNIC_MASK_RETH) {
			CHECK_EQ(a.reth_va, b.reth_va);
			CHECK_EQ(a.reth_rkey, b.reth_rkey);
			CHECK_EQ(a.reth_len, b.reth_len);
		}
		if (a.mask & GPUNIC_MASK_IMMDT)
			CHECK_EQ(a.imm, b.imm);
		if (a.mask & GPUNIC_MASK_AETH) {
			CHECK_EQ(a.aeth_syndrome, b.aeth_syndrome);
			CHECK_EQ(a.aeth_msn, b.aeth_msn);
		}
	}
}

/* Every header byte set to a few values, with and without the checksums repaired after. */
static void mutate_bytes(uint8_t *frame, size_t len, size_t hdr_end)
{
	static const uint8_t values[] = { 0x00, 0xFF, 0x80, 0x45, 0x11, 0x08, 0x30, 0x12, 0xB7 };

	for (size_t i = 0; i < hdr_end && i < len; i++) {
		uint8_t keep = frame[i];

		for (size_t v = 0; v < sizeof(values) + 2; v++) {
			frame[i] = v < sizeof(values) ? values[v] : (uint8_t)(keep + (v == 9 ? 1 : -1));
			compare(frame, len);
			if (i >= IP_OFF && i < IP_OFF + 4 + GPUNIC_IP4_BYTES && rd16(frame + IP_OFF + 2) &&
			    IP_OFF + (size_t)rd16(frame + IP_OFF + 2) <= len &&
			    rd16(frame + IP_OFF + 2) >= GPUNIC_ICRC_BYTES) {
				uint8_t save[GPUNIC_MAX_FRAME_BYTES];

				memcpy(save, frame, len);
				fix_frame(frame);
				compare(frame, len);
				memcpy(frame, save, len);
			}
		}
		frame[i] = keep;
	}
}

/* The buffer's length against the frame's: short of it, at it, and with padding after it. */
static void mutate_len(const uint8_t *frame, size_t len)
{
	static uint8_t buf[GPUNIC_MAX_FRAME_BYTES + 64];

	memset(buf, 0, sizeof(buf));
	memcpy(buf, frame, len);
	for (size_t n = 0; n <= len + 40; n++)
		compare(buf, n);
}

TEST(lean_agrees_with_general)
{
	static uint8_t frame[GPUNIC_MAX_FRAME_BYTES + 64];
	static const uint32_t paylens[] = { 0, 1, 2, 3, 4, 5, 32, 33, 256, 1024 };

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 5);
	for (unsigned op = 0; op < 256; op++) {
		const struct gpunic_opcode_info *info = gpunic_opcode_info((uint8_t)op);

		if (!info)
			continue;
		for (size_t p = 0; p < sizeof(paylens) / sizeof(paylens[0]); p++) {
			struct gpunic_pkt pkt;
			size_t len;

			fill_pkt(&pkt, (uint8_t)op, payload, paylens[p]);
			len = gpunic_frame_encode(&pkt, frame, sizeof(frame));
			if (!len)
				continue;	/* no payload on this opcode, or no pad */
			compare(frame, len);
			pkt.se = false;
			pkt.ack_req = false;
			pkt.migreq = false;
			len = gpunic_frame_encode(&pkt, frame, sizeof(frame));
			compare(frame, len);
			mutate_bytes(frame, len, GPUNIC_L2L4_BYTES + info->hdr_bytes);
			mutate_len(frame, len);
		}
	}
	/* both answers came up often: the comparison was not vacuous */
	CHECK(lean_yes > 1000);
	CHECK(general_ok > lean_yes);
}
