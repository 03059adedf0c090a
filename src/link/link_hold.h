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
#include "wire/fixed.h"

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

/* Here, not in link_loc.h, because link_tx_ring_publish() below uses it, as
 * link_rx_take_slot() uses link_count_rx. The frames counter's address is hidden from gcc,
 * which would otherwise pair the two adds into a vector add (7 instructions for 2). */
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

/* The emulations over a bounce buffer (link.c), out of line, for links without the zero-copy
 * ops. */
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
 * bytes and a 32-byte WRITE_WITH_IMM 110, so with the slot's 8-byte head each spans two lines,
 * and the consumer's core fetches the second only after the first says the frame is there:
 * 50-95 ns more a hop on the H200 host (docs/ARCHITECTURE.md, "One line a frame"). Frames of
 * one stream repeat most of their first bytes, and the wire layer says which (wire/fixed.h):
 * a head, and for some frames a tail after a gap. The producer sends a frame whole, marked as
 * the template (LINK_SLOT_TMPL), whenever those bytes differ from the last template's;
 * afterwards a frame that matches it crosses in the first line (LINK_SLOT_PACKED) as the gap
 * and what follows the fixed bytes, and the consumer rebuilds it byte for byte in its own
 * memory (zc.rx_unpacked). Nothing here depends on what the bytes mean: the bytes compared
 * equal the template's, the others travel, so any frame packs losslessly, and both sides ask
 * the wire layer the same question of the same template to know whether a tail is compared.
 * Slots are taken in order, so the template the consumer holds is the one the producer packed
 * against; an end that attaches again counts itself in the cable's header (shm.c), and the
 * producer sends the next template whole when that count moves.
 */
#define LINK_SLOT_PACKED (1u << 31)
#define LINK_SLOT_TMPL (1u << 30)
enum {
	LINK_PACK_CARRY_OFF = WIRE_FIXED_HEAD,		/* bytes before it compared */
	LINK_PACK_TAIL_OFF = WIRE_FIXED_TAIL_OFF,	/* with a tail: the gap carried, the tail compared */
	LINK_PACK_TMPL_BYTES = WIRE_FIXED_TAIL_END,
	LINK_PACK_LINE = LINK_SLOT_LINE - LINK_SLOT_FRAME_OFF,			/* 56 */
	LINK_PACK_MAX_HEAD = LINK_PACK_CARRY_OFF + LINK_PACK_LINE,		/* 106 */
	LINK_PACK_GAP = LINK_PACK_TAIL_OFF - LINK_PACK_CARRY_OFF,		/* 12 */
	LINK_PACK_MAX_TAIL = LINK_PACK_TMPL_BYTES + LINK_PACK_LINE - LINK_PACK_GAP, /* 114 */
};

_Static_assert(sizeof(((struct gpunic_link_zc *)0)->rx_unpacked) >= LINK_PACK_MAX_TAIL,
	       "a packed frame rebuilt");
_Static_assert(sizeof(((struct gpunic_link_zc *)0)->tx_tmpl) == LINK_PACK_TMPL_BYTES,
	       "a template");
_Static_assert(sizeof(((struct gpunic_link_zc *)0)->tx_stage) >= LINK_PACK_MAX_TAIL,
	       "a frame that may pack is staged whole");
_Static_assert((unsigned)GPUNIC_MAX_FRAME_BYTES < LINK_SLOT_TMPL, "the length word's flags");
_Static_assert(LINK_PACK_CARRY_OFF == 50 && LINK_PACK_TAIL_OFF - LINK_PACK_CARRY_OFF == 12 &&
	       LINK_PACK_TMPL_BYTES - LINK_PACK_TAIL_OFF == 8,
	       "link_pack_differs compares 6 words and a half, then one word");

static inline uint64_t link_ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint16_t link_ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* The head of @f and @t differ, or, with @tail, their tails. */
static inline bool link_pack_differs(const uint8_t *f, const uint8_t *t, bool tail)
{
	uint64_t d = (uint16_t)(link_ld16(f + 48) ^ link_ld16(t + 48));

	for (int i = 0; i < 48; i += 8)
		d |= link_ld64(f + i) ^ link_ld64(t + i);
	if (tail)
		d |= link_ld64(f + LINK_PACK_TAIL_OFF) ^ link_ld64(t + LINK_PACK_TAIL_OFF);
	return d != 0;
}

/* Take a template's bytes and whether its tail is compared, on either side (link.c). Out of
 * line: a stream takes a template once, and the frames after it only compare against it. */
void link_pack_take_tmpl(uint8_t *tmpl, bool *tail, const uint8_t *f, size_t len)
	__attribute__((visibility("hidden"), cold));

/*
 * Put the small frame of @len bytes staged in zc.tx_stage into @slot and return the slot's
 * length word: packed into the slot's first line when it matches the template the peer holds;
 * otherwise whole and marked as the new template, or, when it is too long for one line, whole
 * and unmarked. Only for a link with zc.tx_gen. The frame is read from our own memory and the
 * slot is only written, one line of it when the frame packs.
 */
static inline uint32_t link_tx_pack(struct gpunic_link_zc *zc, uint8_t *slot, size_t len)
{
	const uint8_t *f = zc->tx_stage;
	uint8_t *room = slot + LINK_SLOT_FRAME_OFF;
	uint32_t gen = __atomic_load_n(zc->tx_gen, __ATOMIC_RELAXED);
	bool tail = zc->tx_tmpl_tail;
	uint32_t word = (uint32_t)len;

	if (len >= LINK_PACK_CARRY_OFF &&
	    __builtin_expect(!zc->tx_tmpl_ok || gen != zc->tx_gen_seen ||
			     (tail && len < LINK_PACK_TMPL_BYTES) ||
			     link_pack_differs(f, zc->tx_tmpl, tail), 0)) {
		link_pack_take_tmpl(zc->tx_tmpl, &zc->tx_tmpl_tail, f, len);
		zc->tx_tmpl_ok = true;
		zc->tx_gen_seen = gen;
		word |= LINK_SLOT_TMPL;
	} else if (len >= LINK_PACK_CARRY_OFF &&
		   len <= (tail ? LINK_PACK_MAX_TAIL : LINK_PACK_MAX_HEAD)) {
		/* Fixed-size copies: what they carry past the frame's end is never read. */
		if (tail) {
			memcpy(room, f + LINK_PACK_CARRY_OFF, LINK_PACK_GAP);
			memcpy(room + LINK_PACK_GAP, f + LINK_PACK_TMPL_BYTES,
			       LINK_PACK_LINE - LINK_PACK_GAP);
		} else {
			memcpy(room, f + LINK_PACK_CARRY_OFF, LINK_PACK_LINE);
		}
		return word | LINK_SLOT_PACKED;
	}
	memcpy(room, f, sizeof(zc->tx_stage));
	return word;
}

/*
 * Open the published frame in @slot: read its length word once, take it as the template when
 * it is marked so, and rebuild a packed frame in zc.rx_unpacked. Sets *frame and *len on
 * success. Return: 0, or EBADMSG for an impossible length or a packed frame without a template.
 */
static inline int link_slot_open(struct gpunic_link *link, const uint8_t *slot,
				 const uint8_t **frame, size_t *len)
{
	struct gpunic_link_zc *zc = &link->zc;
	const uint8_t *line = slot + LINK_SLOT_FRAME_OFF;
	uint32_t w = __atomic_load_n((const uint32_t *)(slot + LINK_SLOT_LEN_OFF),
				     __ATOMIC_RELAXED);
	uint32_t n = w & ~(LINK_SLOT_PACKED | LINK_SLOT_TMPL);
	uint8_t *u = zc->rx_unpacked;
	bool tail = zc->rx_tmpl_tail;

	if (__builtin_expect(!(w & LINK_SLOT_PACKED), 0)) {
		if (n > link->mtu || n < GPUNIC_ETH_BYTES ||
		    ((w & LINK_SLOT_TMPL) && n < LINK_PACK_CARRY_OFF))
			return EBADMSG;
		/* Ask for the slot's second line now, while the headers in the first are being
		 * decoded; otherwise its transfer from the producer's core starts only when the
		 * decoder reaches it (24-56 ns off the engine's receive on the H200 host:
		 * docs/BENCHMARKS.md, "Where a round trip's time goes") */
		__builtin_prefetch(slot + LINK_SLOT_LINE, 0, 3);
		if (w & LINK_SLOT_TMPL) {
			link_pack_take_tmpl(zc->rx_tmpl, &zc->rx_tmpl_tail, line, n);
			zc->rx_tmpl_ok = true;
		}
		*frame = line;
		*len = n;
		return 0;
	}
	if ((w & LINK_SLOT_TMPL) || !zc->rx_tmpl_ok ||
	    n < (tail ? LINK_PACK_TMPL_BYTES : LINK_PACK_CARRY_OFF) ||
	    n > (tail ? LINK_PACK_MAX_TAIL : LINK_PACK_MAX_HEAD))
		return EBADMSG;
	memcpy(u, zc->rx_tmpl, LINK_PACK_TMPL_BYTES);
	/* The whole line, in fixed-size copies: what lies past the frame is never read. */
	if (tail) {
		memcpy(u + LINK_PACK_CARRY_OFF, line, LINK_PACK_GAP);
		memcpy(u + LINK_PACK_TMPL_BYTES, line + LINK_PACK_GAP,
		       LINK_PACK_LINE - LINK_PACK_GAP);
	} else {
		memcpy(u + LINK_PACK_CARRY_OFF, line, LINK_PACK_LINE);
	}
	*frame = u;
	*len = n;
	return 0;
}

/*
 * Hold and count the published frame in the slot the hint names (zc->rx_slot), as the link's
 * rx_peek would (link_slot_open). Return: true; false, with nothing held, for an impossible
 * length or a packed frame without a template: rx_peek then reads it again, hands the slot
 * back and counts the error.
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
		/* Acquire: the slot's length and frame are read after the word that publishes
		 * them. */
		if (__atomic_load_n(zc->rx_seq, __ATOMIC_ACQUIRE) != zc->rx_seq_want)
			return EAGAIN;
		if (zc->rx_slot && link_rx_take_slot(link))
			return 0;
	}
	/* The link writes the frame straight into the record of what is held, and only on
	 * success. */
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

/* How far ahead of the next slot a ring link's producer looks for room (link_tx_room_ahead). */
#define LINK_ROOM_AHEAD 16u

/*
 * Whether the ring's next slot is free, found out for several slots at once. The consumer
 * hands its slots back in order, each with a release store of its sequence word, so when the
 * slot LINK_ROOM_AHEAD - 1 ahead is back, every one before it is too, and the next ones are
 * written without a read first (zc->tx_free_to). Reading the next slot's word before every
 * frame fetched the line the consumer polls once more per frame, only for the write to take
 * it back again. Acquire: the consumer's reads of those slots' last frames come before our
 * writes.
 */
static inline bool link_tx_room_ahead(struct gpunic_link_zc *zc)
{
	uint32_t ahead = zc->tx_ring_mask < LINK_ROOM_AHEAD - 1 ? zc->tx_ring_mask :
								  LINK_ROOM_AHEAD - 1;
	uint32_t pos = zc->tx_seq_want + ahead;
	const uint32_t *far = (const uint32_t *)(zc->tx_ring +
						 (size_t)(pos & zc->tx_ring_mask) *
							 zc->tx_slot_bytes);

	if (ahead && __atomic_load_n(far, __ATOMIC_ACQUIRE) == pos) {
		zc->tx_free_to = pos + 1;
		return true;
	}
	if (__atomic_load_n(zc->tx_seq, __ATOMIC_ACQUIRE) != zc->tx_seq_want)
		return false;
	zc->tx_free_to = zc->tx_seq_want + 1;
	return true;
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
	/* The size first: the room, set on success only, is what says a reservation is open. */
	zc->tx_max = max;
	if (zc->tx_seq) {
		if ((int32_t)(zc->tx_free_to - zc->tx_seq_want) <= 0 && !link_tx_room_ahead(zc))
			return EAGAIN;
		/* A frame small enough to pack is built in our own memory (link_tx_pack). */
		zc->tx_buf = zc->tx_gen && max <= sizeof(zc->tx_stage) ? zc->tx_stage : zc->tx_room;
		return 0;
	}
	if (!link->ops->tx_reserve)
		return link_tx_bounce(link);
	return link->ops->tx_reserve(link, max, &zc->tx_buf);
}

/*
 * Publish a frame of @len bytes in the ring slot the reservation holds and move on to the next
 * slot, as link->zc describes the ring: shm's commit, inline for the engine.
 */
static inline void link_tx_ring_publish(struct gpunic_link *link, size_t len)
{
	struct gpunic_link_zc *zc = &link->zc;
	uint8_t *slot = (uint8_t *)zc->tx_seq;
	uint32_t next = zc->tx_seq_want + 1;
	uint32_t word = zc->tx_buf == zc->tx_stage ? link_tx_pack(zc, slot, len) : (uint32_t)len;

	__atomic_store_n((uint32_t *)(slot + LINK_SLOT_LEN_OFF), word, __ATOMIC_RELAXED);
	/* Release: the frame and its length are visible before the slot is published. */
	__atomic_store_n((uint32_t *)slot, next, __ATOMIC_RELEASE);
	hop_mark(HOP_TX);
	__atomic_store_n(zc->tx_rec, next, __ATOMIC_RELAXED);
	slot = next & zc->tx_ring_mask ? slot + zc->tx_slot_bytes : zc->tx_ring;
	zc->tx_seq = (uint32_t *)slot;
	zc->tx_seq_want = next;
	zc->tx_room = slot + LINK_SLOT_FRAME_OFF;
	link_count_tx(link, len);
}

/* What gpunic_link_tx_commit() does with a bad length: give the reservation back and count
 * the error. */
int link_tx_commit_bad(struct gpunic_link *link) __attribute__((visibility("hidden")));

/* gpunic_link_tx_commit(), inline. */
static inline int link_tx_commit(struct gpunic_link *link, size_t len)
{
	uint8_t *room = link->zc.tx_buf;
	int err;

	if (!room || len > link->zc.tx_max)
		return link_tx_commit_bad(link);
	/* A ring link publishes the whole frame here, with no call (a runt goes to the link,
	 * which refuses it). */
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
