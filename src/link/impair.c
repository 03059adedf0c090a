// SPDX-License-Identifier: MIT
/*
 * The impair link: a link wrapping a link, for tests. On send it drops, duplicates, corrupts,
 * reorders or delays frames, each decision drawn from a splitmix64 generator seeded by the
 * caller, so a run can be replayed: the same seed and the same sequence of send calls give the
 * same decisions.
 *
 * Per frame, in this order: drop; else duplicate (it goes out twice, back to back); corrupt (one
 * byte after the Ethernet header is XORed with a non-zero value); then either delay (held for
 * delay_usec by the monotonic clock) or reorder (held until the next frame has gone out, or for
 * reorder_hold_usec, default IMPAIR_REORDER_HOLD_NS). One frame at most is held for reordering. Held frames leave on later
 * send and recv calls; close frees whatever is still held.
 *
 * Stats: tx_* count frames handed to the inner link (duplicates and released frames included),
 * rx_* what came back from it, imp_* the decisions.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link_loc.h"

#define PPM 1000000u
/* A reordered frame waits for the next one at most this long, so a last frame still leaves. */
#define IMPAIR_REORDER_HOLD_NS 1000000ull
/* Beyond this many held frames send pushes back with EAGAIN instead of holding more. */
#define IMPAIR_MAX_HELD 4096u

struct held_frame {
	struct held_frame *next;
	uint64_t due_ns;
	unsigned copies;
	size_t len;
	uint8_t data[];
};

struct impair_link {
	struct gpunic_link link;
	struct gpunic_link *inner;
	struct gpunic_impair_attr attr;
	uint64_t rng;
	struct held_frame *reorder;    /* waiting for the next frame */
	struct held_frame *delay_head; /* FIFO; every delay is the same, so it is in due order */
	struct held_frame *delay_tail;
	unsigned nheld;
	uint8_t *scratch;              /* a corrupted copy of a frame that is sent at once */
};

static struct impair_link *to_impair(struct gpunic_link *link)
{
	return (struct impair_link *)link;
}

/* splitmix64 (Steele, Lea, Flood 2014): one add and a mixing function per draw. */
static uint64_t next_rand(struct impair_link *im)
{
	uint64_t z = (im->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform value below @n, by multiply-high: no division and no visible bias for small @n. */
static uint32_t rand_below(struct impair_link *im, uint32_t n)
{
	return (uint32_t)(((next_rand(im) >> 32) * n) >> 32);
}

/* Draws only when the rate is not zero, so unused impairments do not shift the sequence. */
static bool chance(struct impair_link *im, uint32_t ppm)
{
	return ppm && rand_below(im, PPM) < ppm;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Hands @copies copies to the inner link. Only the first copy's failure is reported. */
static int emit(struct impair_link *im, const uint8_t *frame, size_t len, unsigned copies)
{
	int err = gpunic_link_send(im->inner, frame, len);

	if (err)
		return err;
	link_count_tx(&im->link, len);
	for (unsigned i = 1; i < copies; i++) {
		if (gpunic_link_send(im->inner, frame, len) == 0)
			link_count_tx(&im->link, len);
	}
	return 0;
}

static struct held_frame *hold(struct impair_link *im, const uint8_t *frame, size_t len,
			       unsigned copies, uint64_t due_ns)
{
	struct held_frame *h = malloc(sizeof(*h) + len);

	if (!h)
		return NULL;
	h->next = NULL;
	h->due_ns = due_ns;
	h->copies = copies;
	h->len = len;
	memcpy(h->data, frame, len);
	im->nheld++;
	return h;
}

static void release(struct impair_link *im, struct held_frame *h)
{
	im->nheld--;
	free(h);
}

/*
 * Sends a held frame. Return: true when it is gone (sent, or refused for good and counted),
 * false when the inner link pushed back and it must stay held.
 */
static bool send_held(struct impair_link *im, struct held_frame *h)
{
	int err = emit(im, h->data, h->len, h->copies);

	if (err == EAGAIN)
		return false;
	if (err)
		im->link.stats.tx_errors++;
	release(im, h);
	return true;
}

/* Sends every held frame whose time has come, oldest first. */
static void flush_due(struct impair_link *im)
{
	uint64_t now;

	if (!im->nheld)
		return;
	now = now_ns();
	while (im->delay_head && im->delay_head->due_ns <= now) {
		struct held_frame *h = im->delay_head, *next = h->next;

		if (!send_held(im, h))
			break;
		im->delay_head = next;
		if (!next)
			im->delay_tail = NULL;
	}
	if (im->reorder && im->reorder->due_ns <= now && send_held(im, im->reorder))
		im->reorder = NULL;
}

static int hold_delayed(struct impair_link *im, const uint8_t *frame, size_t len,
			unsigned copies)
{
	uint64_t due = now_ns() + (uint64_t)im->attr.delay_usec * 1000u;
	struct held_frame *h = hold(im, frame, len, copies, due);

	if (!h)
		return ENOMEM;
	if (im->delay_tail)
		im->delay_tail->next = h;
	else
		im->delay_head = h;
	im->delay_tail = h;
	im->link.stats.imp_delayed++;
	return 0;
}

static int hold_reordered(struct impair_link *im, const uint8_t *frame, size_t len,
			  unsigned copies)
{
	uint64_t wait = im->attr.reorder_hold_usec ? (uint64_t)im->attr.reorder_hold_usec * 1000u :
						     IMPAIR_REORDER_HOLD_NS;

	im->reorder = hold(im, frame, len, copies, now_ns() + wait);
	if (!im->reorder)
		return ENOMEM;
	im->link.stats.imp_reordered++;
	return 0;
}

/* Flips one byte after the Ethernet header, in a copy. Return: the frame to send. */
static const uint8_t *corrupt(struct impair_link *im, const uint8_t *frame, size_t len)
{
	size_t off = GPUNIC_ETH_BYTES + rand_below(im, (uint32_t)(len - GPUNIC_ETH_BYTES));

	memcpy(im->scratch, frame, len);
	im->scratch[off] ^= (uint8_t)(1 + rand_below(im, 255));
	return im->scratch;
}

static int impair_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct impair_link *im = to_impair(link);
	bool dup, bad = false;
	unsigned copies;
	int err;

	if (len > link->mtu)
		return link_tx_error(link, EMSGSIZE);
	flush_due(im);
	if (im->nheld >= IMPAIR_MAX_HELD)
		return EAGAIN;

	if (chance(im, im->attr.drop_ppm)) {
		link->stats.imp_dropped++;
		return 0;
	}
	dup = chance(im, im->attr.duplicate_ppm);
	copies = dup ? 2 : 1;
	if (chance(im, im->attr.corrupt_ppm) && len > GPUNIC_ETH_BYTES) {
		frame = corrupt(im, frame, len);
		bad = true;
	}
	if (chance(im, im->attr.delay_ppm)) {
		err = hold_delayed(im, frame, len, copies);
	} else if (chance(im, im->attr.reorder_ppm) && !im->reorder) {
		err = hold_reordered(im, frame, len, copies);
	} else {
		err = emit(im, frame, len, copies);
		/* The held frame goes out behind the one that overtook it. */
		if (!err && im->reorder && send_held(im, im->reorder))
			im->reorder = NULL;
	}
	/* A frame refused here is not on the wire: the caller sends it again. */
	if (err)
		return err == EAGAIN ? EAGAIN : link_tx_error(link, err);
	link->stats.imp_duplicated += dup;
	link->stats.imp_corrupted += bad;
	return 0;
}

static int impair_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct impair_link *im = to_impair(link);
	int err;

	flush_due(im);
	err = gpunic_link_recv(im->inner, buf, cap, len);
	if (err)
		return err == EAGAIN ? EAGAIN : link_rx_error(link, err);
	link_count_rx(link, *len);
	return 0;
}

static void free_chain(struct held_frame *h)
{
	while (h) {
		struct held_frame *next = h->next;

		free(h);
		h = next;
	}
}

static void impair_close(struct gpunic_link *link)
{
	struct impair_link *im = to_impair(link);

	free_chain(im->delay_head);
	free(im->reorder);
	gpunic_link_close(im->inner);
	free(im->scratch);
	free(im);
}

static const struct gpunic_link_ops impair_ops = {
	.name = "impair",
	.send = impair_send,
	.recv = impair_recv,
	.close = impair_close,
};

struct gpunic_link *gpunic_link_impair_open(struct gpunic_link *inner,
					    const struct gpunic_impair_attr *attr)
{
	struct impair_link *im;

	if (!inner || !attr || attr->drop_ppm > PPM || attr->reorder_ppm > PPM ||
	    attr->duplicate_ppm > PPM || attr->corrupt_ppm > PPM || attr->delay_ppm > PPM) {
		errno = EINVAL;
		return NULL;
	}
	im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	im->scratch = malloc(inner->mtu ? inner->mtu : 1);
	if (!im->scratch) {
		free(im);
		errno = ENOMEM;
		return NULL;
	}
	/* It changes frames: whatever the inner link promises about their integrity is void. */
	link_init(&im->link, &impair_ops, inner->caps & ~(unsigned)GPUNIC_LINK_CAP_RX_INTACT,
		  inner->mtu);
	im->link.bound_ip = inner->bound_ip;
	im->link.bound_port = inner->bound_port;
	im->inner = inner;
	im->attr = *attr;
	im->rng = attr->seed;
	return &im->link;
}
