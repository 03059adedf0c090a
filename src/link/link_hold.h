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
};

/*
 * The published frame of a slot hint (zc->rx_slot), held as the link's rx_peek would hold it:
 * its length read once and bounded by the MTU and the Ethernet header, counted. False, nothing
 * held, for an impossible length: rx_peek then reads it again, hands the slot back and counts
 * the error.
 */
static inline bool link_rx_take_slot(struct gpunic_link *link)
{
	struct gpunic_link_zc *zc = &link->zc;
	const uint8_t *slot = (const uint8_t *)zc->rx_seq;
	uint32_t n = __atomic_load_n((const uint32_t *)(slot + LINK_SLOT_LEN_OFF), __ATOMIC_RELAXED);

	if (n > link->mtu || n < GPUNIC_ETH_BYTES)
		return false;
	/* the slot's second line (a small frame's payload and ICRC) asked for now, while the
	 * headers in the first are decoded: else its transfer from the producer's core starts
	 * only when the decoder reaches it (the hop trace, docs/BENCHMARKS.md: 25-100 ns a
	 * frame on the H200 host) */
	__builtin_prefetch(slot + 64, 0, 3);
	zc->rx_frame = slot + LINK_SLOT_FRAME_OFF;
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

	__atomic_store_n((uint32_t *)(slot + LINK_SLOT_LEN_OFF), (uint32_t)len, __ATOMIC_RELAXED);
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
