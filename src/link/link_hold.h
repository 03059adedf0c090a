/* SPDX-License-Identifier: MIT */
/*
 * The link layer's internal zero-copy entry points for the engine (src/nic): the frame received
 * and the room reserved are read from the link's own record (link->zc) instead of copied out
 * through the caller's pointers, so that the common call is a few checks, inline, and a call
 * into the link. Not exported; gpunic_link_rx_peek(), gpunic_link_rx_release(),
 * gpunic_link_tx_reserve() and gpunic_link_tx_commit() are the public forms.
 */
#ifndef GPUNIC_LINK_HOLD_H
#define GPUNIC_LINK_HOLD_H

#include <errno.h>
#include <string.h>

#include "gpunic/hoptrace.h"
#include "gpunic/link.h"
#include "gpunic/wire.h"

/* Returns @err after counting it, so error paths read "return link_tx_error(link, EINVAL);".
 * Here rather than in link_loc.h: the inline calls below count their errors too. */
static inline int link_tx_error(struct gpunic_link *link, int err)
{
	link->stats.tx_errors++;
	return err;
}

static inline int link_rx_error(struct gpunic_link *link, int err)
{
	link->stats.rx_errors++;
	return err;
}

/* Here for link_tx_ring_publish() below, as link_count_rx for link_rx_take_slot. The frames
 * counter's address is hidden from gcc, which would otherwise pair the two adds into a vector
 * (7 instructions for 2). */
static inline void link_count_tx(struct gpunic_link *link, size_t len)
{
	uint64_t *frames = &link->stats.tx_frames;

	__asm__("" : "+r"(frames));
	(*frames)++;
	link->stats.tx_bytes += len;
}

static inline void link_count_rx(struct gpunic_link *link, size_t len)
{
	link->stats.rx_frames++;
	link->stats.rx_bytes += len;
}

/* The bounce emulations (link.c), out of line: for links without the zero-copy ops. */
int link_rx_bounce(struct gpunic_link *link) __attribute__((visibility("hidden")));
int link_tx_bounce(struct gpunic_link *link) __attribute__((visibility("hidden")));

/* A ring link's slot (shm.c's struct shm_slot): sequence word, length, then the frame. */
enum {
	LINK_SLOT_LEN_OFF = 4,
	LINK_SLOT_FRAME_OFF = 8,
	LINK_SLOT_LINE = 64,
};

/*
 * One line a frame: a small frame packed into its slot's first line. A 32-byte SEND is 90
 * bytes, so with the slot's 8-byte head it spans two lines, and the consumer's core fetches
 * the second only after the first says the frame is there: 50-95 ns more a hop on the H200
 * host (docs/BENCHMARKS.md). Its Ethernet, IPv4 and UDP headers are those of the frame before
 * but for five fields, so the producer sends the headers whole once, marked as the template
 * (LINK_SLOT_TMPL), and afterwards, while they match it, only what differs: the IP ID, the IP
 * checksum and the UDP source port (6 bytes) and the frame from the BTH on, in the first line
 * (LINK_SLOT_PACKED); the two lengths follow from the frame's. The consumer rebuilds the frame
 * byte for byte in its own memory (zc.rx_unpacked). Slots are taken in order, so the
 * template the consumer holds is the one the producer packed against; an end that attaches
 * again counts itself in the cable's header (shm.c), and the producer sends the next
 * template whole when that count moves.
 */
#define LINK_SLOT_PACKED (1u << 31)
#define LINK_SLOT_TMPL (1u << 30)
enum {
	LINK_PACK_HDR_BYTES = 42,				/* Ethernet + IPv4 + UDP */
	LINK_PACK_CARRY_BYTES = 6,				/* IP ID, IP checksum, UDP sport */
	LINK_PACK_TAIL_OFF = LINK_SLOT_FRAME_OFF + LINK_PACK_CARRY_BYTES,
	LINK_PACK_TAIL_BYTES = LINK_SLOT_LINE - LINK_PACK_TAIL_OFF,
	LINK_PACK_MAX_FRAME = LINK_PACK_HDR_BYTES + LINK_PACK_TAIL_BYTES,	/* 92 */
};

_Static_assert((int)LINK_PACK_HDR_BYTES == (int)GPUNIC_L2L4_BYTES, "packed: the L2-L4 headers");
_Static_assert(sizeof(((struct gpunic_link_zc *)0)->rx_unpacked) >= LINK_PACK_MAX_FRAME,
	       "a packed frame rebuilt");
_Static_assert((unsigned)GPUNIC_MAX_FRAME_BYTES < LINK_SLOT_TMPL, "the length word's flags");

/* The header bytes that must equal the template's for a frame to pack, as masks of the 64-bit
 * words of frame bytes 16-39 (0-15 and 40-41 are compared whole): all but IPv4 total length
 * (16-17), ID (18-19) and checksum (24-25), UDP source port (34-35) and length (38-39). The
 * packed line's carried fields are read from the same words. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LINK_PACK_KEEP2 0xffffffff00000000ull	/* bytes 16-23: flags, TTL, protocol */
#define LINK_PACK_KEEP3 0xffffffffffff0000ull	/* bytes 24-31: source address */
#define LINK_PACK_KEEP4 0x0000ffff0000ffffull	/* bytes 32-39: address end, dport */
#define LINK_PACK_FIELD(w, byte) ((uint32_t)((w) >> (8 * (byte))) & 0xffffu)
#define LINK_PACK_BE16(w, byte) ((uint32_t)__builtin_bswap16((uint16_t)LINK_PACK_FIELD(w, byte)))
#else
#define LINK_PACK_KEEP2 0x00000000ffffffffull
#define LINK_PACK_KEEP3 0x0000ffffffffffffull
#define LINK_PACK_KEEP4 0xffff0000ffff0000ull
#define LINK_PACK_FIELD(w, byte) ((uint32_t)((w) >> (8 * (6 - (byte)))) & 0xffffu)
#define LINK_PACK_BE16(w, byte) LINK_PACK_FIELD(w, byte)
#endif

static inline uint64_t link_ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint16_t link_ld_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The two bytes LINK_PACK_FIELD took out of a word, back in their order. */
static inline void link_st16(uint8_t *p, uint32_t v)
{
	uint16_t h = (uint16_t)v;

	memcpy(p, &h, 2);
}

static inline void link_st_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* IPv4 without options carrying UDP, its lengths the frame's: the headers a template holds. */
static inline bool link_pack_headers_plain(const uint8_t *f, size_t len)
{
	return len >= LINK_PACK_HDR_BYTES && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 &&
	       f[23] == 17 && link_ld_be16(f + 16) == len - GPUNIC_ETH_BYTES &&
	       link_ld_be16(f + 38) == len - GPUNIC_ETH_BYTES - GPUNIC_IP4_BYTES;
}

/* A new template: @f's headers, kept whole for the match below. */
static inline uint32_t link_tx_pack_tmpl(struct gpunic_link_zc *zc, const uint8_t *f,
					  size_t len, uint32_t gen)
{
	memcpy(zc->tx_tmpl, f, LINK_PACK_HDR_BYTES);
	zc->tx_tmpl_ok = true;
	zc->tx_gen_seen = gen;
	return (uint32_t)len | LINK_SLOT_TMPL;
}

/*
 * The length word for the frame of @len bytes in @slot's room (a ring link's transmit): the
 * frame packed into the slot's first line when the peer's template allows, else left whole,
 * marked as the new template when its headers can be one. Only for a link with zc.tx_gen.
 * The common case, a frame that matches, is a few words compared and the line moved: the
 * headers it matches passed link_pack_headers_plain when they became the template, and only
 * the lengths remain to check.
 */
static inline uint32_t link_tx_pack(struct gpunic_link_zc *zc, uint8_t *slot, size_t len)
{
	uint8_t *f = slot + LINK_SLOT_FRAME_OFF, *t = zc->tx_tmpl;
	uint32_t gen = __atomic_load_n(zc->tx_gen, __ATOMIC_RELAXED);
	uint64_t w2, w3, w4, d;
	uint8_t a[16], b[16], c[16], e[16];
	uint16_t x, y;

	if (len < LINK_PACK_HDR_BYTES)
		return (uint32_t)len;
	w2 = link_ld64(f + 16);
	w3 = link_ld64(f + 24);
	w4 = link_ld64(f + 32);
	memcpy(&x, f + 40, 2);
	memcpy(&y, t + 40, 2);
	d = (link_ld64(f) ^ link_ld64(t)) | (link_ld64(f + 8) ^ link_ld64(t + 8)) |
	    ((w2 ^ link_ld64(t + 16)) & LINK_PACK_KEEP2) |
	    ((w3 ^ link_ld64(t + 24)) & LINK_PACK_KEEP3) |
	    ((w4 ^ link_ld64(t + 32)) & LINK_PACK_KEEP4) | (uint16_t)(x ^ y);
	if (__builtin_expect(d || !zc->tx_tmpl_ok || gen != zc->tx_gen_seen, 0))
		return link_pack_headers_plain(f, len) ? link_tx_pack_tmpl(zc, f, len, gen) :
							 (uint32_t)len;
	/* the lengths, big-endian on the wire: what the packed form leaves out must follow */
	if (LINK_PACK_BE16(w2, 0) != len - GPUNIC_ETH_BYTES ||
	    LINK_PACK_BE16(w4, 6) != len - GPUNIC_ETH_BYTES - GPUNIC_IP4_BYTES ||
	    len > LINK_PACK_MAX_FRAME)
		return (uint32_t)len;
	/* the tail read whole before any store: the packed line overlaps the frame it comes
	 * from (bytes 42-91 move to the line's 6-55) */
	memcpy(a, f + 42, 16);
	memcpy(b, f + 58, 16);
	memcpy(c, f + 74, 16);
	memcpy(e, f + 76, 16);
	link_st16(f, LINK_PACK_FIELD(w2, 2));		/* IP ID */
	link_st16(f + 2, LINK_PACK_FIELD(w3, 0));	/* IP checksum */
	link_st16(f + 4, LINK_PACK_FIELD(w4, 2));	/* UDP source port */
	memcpy(f + 6, a, 16);
	memcpy(f + 22, b, 16);
	memcpy(f + 38, c, 16);
	memcpy(f + 40, e, 16);
	return (uint32_t)len | LINK_SLOT_PACKED;
}

/*
 * The frame in @slot, published: its length word read once, a packed frame rebuilt in
 * zc.rx_unpacked, a template taken. *frame and *len set on success.
 * Return: 0, or EBADMSG for an impossible length or a packed frame without a template.
 */
static inline int link_slot_open(struct gpunic_link *link, const uint8_t *slot,
				 const uint8_t **frame, size_t *len)
{
	struct gpunic_link_zc *zc = &link->zc;
	uint32_t w = __atomic_load_n((const uint32_t *)(slot + LINK_SLOT_LEN_OFF),
				     __ATOMIC_RELAXED);
	uint32_t n = w & ~(LINK_SLOT_PACKED | LINK_SLOT_TMPL);
	uint8_t *u = zc->rx_unpacked;

	if (__builtin_expect(!(w & LINK_SLOT_PACKED), 0)) {
		if (n > link->mtu || n < GPUNIC_ETH_BYTES ||
		    ((w & LINK_SLOT_TMPL) && n < LINK_PACK_HDR_BYTES))
			return EBADMSG;
		/* the slot's second line (a small frame's payload and ICRC) asked for now, while
		 * the headers in the first are decoded: else its transfer from the producer's
		 * core starts only when the decoder reaches it (the hop trace,
		 * docs/BENCHMARKS.md: 25-100 ns a frame on the H200 host) */
		__builtin_prefetch(slot + LINK_SLOT_LINE, 0, 3);
		if (w & LINK_SLOT_TMPL) {
			memcpy(zc->rx_tmpl, slot + LINK_SLOT_FRAME_OFF, LINK_PACK_HDR_BYTES);
			zc->rx_tmpl_ok = true;
		}
		*frame = slot + LINK_SLOT_FRAME_OFF;
		*len = n;
		return 0;
	}
	if ((w & LINK_SLOT_TMPL) || n < LINK_PACK_HDR_BYTES || n > LINK_PACK_MAX_FRAME ||
	    !zc->rx_tmpl_ok)
		return EBADMSG;
	memcpy(u, zc->rx_tmpl, LINK_PACK_HDR_BYTES);
	memcpy(u + 18, slot + LINK_SLOT_FRAME_OFF, 2);
	memcpy(u + 24, slot + LINK_SLOT_FRAME_OFF + 2, 2);
	memcpy(u + 34, slot + LINK_SLOT_FRAME_OFF + 4, 2);
	link_st_be16(u + 16, n - GPUNIC_ETH_BYTES);
	link_st_be16(u + 38, n - GPUNIC_ETH_BYTES - GPUNIC_IP4_BYTES);
	/* the whole line's tail, a fixed move: what lies past the frame is never read */
	memcpy(u + LINK_PACK_HDR_BYTES, slot + LINK_PACK_TAIL_OFF, LINK_PACK_TAIL_BYTES);
	*frame = u;
	*len = n;
	return 0;
}

/*
 * The published frame of a slot hint (zc->rx_slot), held as the link's rx_peek would hold it:
 * its length read once and bounded by the MTU and the Ethernet header, counted. False, nothing
 * held, for an impossible length: rx_peek then reads it again, hands the slot back and counts
 * the error.
 */
static inline bool link_rx_take_slot(struct gpunic_link *link)
{
	struct gpunic_link_zc *zc = &link->zc;
	const uint8_t *frame;
	size_t n;

	if (link_slot_open(link, (const uint8_t *)zc->rx_seq, &frame, &n))
		return false;
	zc->rx_frame = frame;
	zc->rx_len = n;
	link_count_rx(link, n);
	return true;
}

/*
 * Hold the next received frame in link->zc (rx_frame, rx_len), unless one is held already.
 * Inline: an empty link, which every poll meets once, costs a load and a compare where the
 * link gives a hint (zc->rx_seq), and a frame in a slot the hint names costs no call.
 * Return: 0 with the frame there; else what gpunic_link_rx_peek() returns, nothing held.
 */
static inline int link_rx_hold(struct gpunic_link *link)
{
	struct gpunic_link_zc *zc = &link->zc;

	if (zc->rx_frame)
		return 0;
	if (zc->rx_seq) {
		/* acquire: the slot's length and frame are read after the word that publishes
		 * them */
		if (__atomic_load_n(zc->rx_seq, __ATOMIC_ACQUIRE) != zc->rx_seq_want)
			return EAGAIN;
		if (zc->rx_slot && link_rx_take_slot(link))
			return 0;
	}
	/* the link hands the frame straight to the record of what is held, on success only */
	if (!link->ops->rx_peek)
		return link_rx_bounce(link);
	return link->ops->rx_peek(link, &zc->rx_frame, &zc->rx_len);
}

/* gpunic_link_rx_release() for a caller that holds a frame (the engine, after link_rx_hold). */
static inline void link_rx_release_held(struct gpunic_link *link)
{
	/* cleared first: the link's release then ends the call */
	link->zc.rx_frame = NULL;
	if (link->ops->rx_release)
		link->ops->rx_release(link);
}

/* gpunic_link_rx_release(), inline. */
static inline void link_rx_release(struct gpunic_link *link)
{
	if (link->zc.rx_frame)
		link_rx_release_held(link);
}

/*
 * Reserve room for a frame of up to @max bytes in link->zc (tx_buf, tx_max).
 * Return: 0 with the room there; else what gpunic_link_tx_reserve() returns, nothing reserved.
 */
static inline int link_tx_hold(struct gpunic_link *link, size_t max)
{
	struct gpunic_link_zc *zc = &link->zc;

	if (zc->tx_buf)
		return EBUSY;
	if (max > link->mtu)
		return link_tx_error(link, EMSGSIZE);
	/* the size first: the room, set on success only, is what says a reservation is open */
	zc->tx_max = max;
	if (zc->tx_seq) {
		/* acquire: the consumer's reads of the room's last frame come before our writes */
		if (__atomic_load_n(zc->tx_seq, __ATOMIC_ACQUIRE) != zc->tx_seq_want)
			return EAGAIN;
		zc->tx_buf = zc->tx_room;
		return 0;
	}
	if (!link->ops->tx_reserve)
		return link_tx_bounce(link);
	return link->ops->tx_reserve(link, max, &zc->tx_buf);
}

/*
 * Publish a frame of @len bytes in the ring slot the reservation holds, and move on to the next
 * (link->zc, the ring's description, says how): shm's commit, inline for the engine.
 */
static inline void link_tx_ring_publish(struct gpunic_link *link, size_t len)
{
	struct gpunic_link_zc *zc = &link->zc;
	uint8_t *slot = (uint8_t *)zc->tx_seq;
	uint32_t next = zc->tx_seq_want + 1;
	uint32_t word = zc->tx_gen ? link_tx_pack(zc, slot, len) : (uint32_t)len;

	__atomic_store_n((uint32_t *)(slot + LINK_SLOT_LEN_OFF), word, __ATOMIC_RELAXED);
	/* release: frame and length are visible before the slot is published */
	__atomic_store_n((uint32_t *)slot, next, __ATOMIC_RELEASE);
	hop_mark(HOP_TX);
	__atomic_store_n(zc->tx_rec, next, __ATOMIC_RELAXED);
	slot = next & zc->tx_ring_mask ? slot + zc->tx_slot_bytes : zc->tx_ring;
	zc->tx_seq = (uint32_t *)slot;
	zc->tx_seq_want = next;
	zc->tx_room = slot + LINK_SLOT_FRAME_OFF;
	link_count_tx(link, len);
}

/* What gpunic_link_tx_commit() does with a bad length: the reservation given back, counted. */
int link_tx_commit_bad(struct gpunic_link *link) __attribute__((visibility("hidden")));

/* gpunic_link_tx_commit(), inline. */
static inline int link_tx_commit(struct gpunic_link *link, size_t len)
{
	uint8_t *room = link->zc.tx_buf;
	int err;

	if (!room || len > link->zc.tx_max)
		return link_tx_commit_bad(link);
	/* a ring link's frame, whole: no call (a runt goes to the link, which refuses it) */
	if (link->zc.tx_ring_mask && len >= GPUNIC_ETH_BYTES) {
		link_tx_ring_publish(link, len);
		link->zc.tx_buf = NULL;
		return 0;
	}
	/* The wrapper's EBUSY check must not see our own reservation: call the ops directly. */
	if (link->ops->tx_commit)
		err = link->ops->tx_commit(link, len);
	else
		err = link->ops->send(link, room, len);
	if (err != EAGAIN)
		link->zc.tx_buf = NULL;
	if (!err)
		hop_mark(HOP_TX);
	return err;
}

#endif /* GPUNIC_LINK_HOLD_H */
