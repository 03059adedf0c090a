// SPDX-License-Identifier: MIT
/*
 * The shm link: a shared-memory cable between two endpoints on one host, the lowest-latency wire
 * (the analog of a direct-attach cable). One POSIX shm object holds a header and two
 * single-producer single-consumer rings of fixed-size frame slots, ring 0 carrying A -> B and
 * ring 1 carrying B -> A. Everything is busy-polled: no syscalls, no division, and frames are
 * built and parsed in their slots (gpunic_link_tx_reserve, gpunic_link_rx_peek) or copied once
 * (send, recv).
 *
 * One cache line per hop: each slot starts with a sequence word that carries the whole protocol
 * (a bounded queue whose slots say themselves whether they are full or free), so the line that
 * holds a frame's first bytes is the only line of control the two sides pass between them;
 * producer and consumer counters would cross cores as two more lines per frame. Positions are
 * free-running 32-bit counters each side keeps privately; position p lives in slot p & mask,
 * N slots a ring:
 *
 *   seq == p       the slot is free for the producer's position p
 *   seq == p + 1   position p is published: length and frame are written
 *   seq == p + N   the consumer handed it back: free for position p + N, the next lap
 *
 * The producer waits for seq == p (acquire), writes frame and length, then stores p + 1
 * (release); the consumer waits for seq == p + 1 (acquire), reads, then stores p + N (release).
 * The creator starts slot i at seq = i.
 *
 * The peer is not trusted (rxe_queue.h masks every index a peer can write): a sequence word is
 * read once and must equal the one value expected, anything else is "not yet"; the length is read
 * once and bounded by the MTU before any copy; slots are found from our own positions, masked;
 * the geometry is validated once at attach and only our own copy of it is used afterwards.
 *
 * The header also records, on a line of its own per ring and side, where each side stands. Only
 * its writer touches it while both run (so it never crosses cores); an end that attaches later
 * starts there, so a restarted process picks the cable up where the last one left it.
 *
 * A small frame travels in its slot's first line alone, packed against the first bytes of the
 * last frame sent whole as a template (link_hold.h, link_tx_pack and link_slot_open); the count
 * of consumer attaches in the header tells the producer when its peer holds no template.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "link_loc.h"

#define SHM_MAGIC 0x53436e67u /* "gnCS" */
/* 2: per-slot sequence words; the ring counters became attach-time records.
 * 3: small frames packed into one line (link_hold.h); the consumers' attach counts. */
#define SHM_VERSION 3u
#define SHM_LINE_BYTES 64u
/* A slot is the sequence word, the frame length, then the frame, rounded up to whole lines. */
#define SHM_SLOT_HDR_BYTES 8u
#define SHM_SLOT_BYTES \
	((SHM_SLOT_HDR_BYTES + LINK_MTU_BYTES + SHM_LINE_BYTES - 1) & ~(SHM_LINE_BYTES - 1))
#define SHM_DEFAULT_SLOTS 256u
#define SHM_MAX_SLOTS 65536u

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the rings need lock-free 32-bit atomics");

struct shm_slot {
	_Atomic uint32_t seq;
	_Atomic uint32_t len;
	uint8_t frame[];
};

_Static_assert(sizeof(struct shm_slot) == SHM_SLOT_HDR_BYTES, "slot header layout");
_Static_assert(offsetof(struct shm_slot, len) == LINK_SLOT_LEN_OFF &&
		       offsetof(struct shm_slot, frame) == LINK_SLOT_FRAME_OFF,
	       "the engine reads and publishes in our slots (link_hold.h)");

/* Where each side of one ring stands, for an end that attaches later; never polled. And how
 * often a consumer attached: the producer reads it at each frame it could pack, a line only
 * an attach writes, so it stays in the producer's cache. */
struct shm_ring_rec {
	alignas(SHM_LINE_BYTES) _Atomic uint32_t prod;
	alignas(SHM_LINE_BYTES) _Atomic uint32_t cons;
	alignas(SHM_LINE_BYTES) _Atomic uint32_t cons_attach;
};

/* The start of the shared object. The slots of ring r follow at hdr_bytes + r * slots * slot. */
struct shm_hdr {
	_Atomic uint32_t magic; /* written last by the creator: the rest is valid once it is set */
	uint32_t version;
	uint32_t hdr_bytes;
	uint32_t slots;
	uint32_t slot_bytes;
	uint32_t mtu;
	struct shm_ring_rec ring[2];
};

/* One direction as this end sees it. */
struct shm_dir {
	uint8_t *slots;
	_Atomic uint32_t *rec;         /* our record of pos in the header */
	uint32_t pos;                  /* our position, never read back from shared memory; the
					* transmit side's is link.zc.tx_seq_want */
};

struct shm_link {
	struct gpunic_link link;
	struct shm_dir tx;
	struct shm_dir rx;
	uint32_t mask;
	uint32_t nslots;
	struct shm_slot *rx_next;      /* rx.pos's: also the one rx_peek handed out, if any */
	uint8_t *map;
	size_t map_bytes;
	char *unlink_name; /* the creator removes the name on close */
};

static struct shm_link *to_shm(struct gpunic_link *link)
{
	return (struct shm_link *)link;
}

static struct shm_slot *slot_at(const struct shm_dir *d, uint32_t mask, uint32_t pos)
{
	return (struct shm_slot *)(d->slots + (size_t)(pos & mask) * SHM_SLOT_BYTES);
}

/* The slot of position @pos + 1 in @d, @slot being @pos's: the slots lie in a row, so the next
 * one, or the first after the last. */
static struct shm_slot *slot_after(const struct shm_link *s, const struct shm_dir *d,
				   struct shm_slot *slot, uint32_t pos)
{
	return (pos + 1) & s->mask ? (struct shm_slot *)((uint8_t *)slot + SHM_SLOT_BYTES) :
				     (struct shm_slot *)d->slots;
}

/* ---------------------------------------------------------------- transmit */

/* Our transmit position and its slot live in link.zc, the ring described there, so that the
 * engine reserves and publishes as we would, with no call (link_hold.h). */
static void tx_ring_describe(struct shm_link *s, uint32_t pos)
{
	struct gpunic_link_zc *zc = &s->link.zc;
	struct shm_slot *slot = slot_at(&s->tx, s->mask, pos);

	zc->tx_seq = (uint32_t *)&slot->seq;
	zc->tx_seq_want = pos;
	zc->tx_free_to = pos;	/* nothing known yet */
	zc->tx_room = slot->frame;
	zc->tx_rec = (uint32_t *)s->tx.rec;
	zc->tx_ring = s->tx.slots;
	zc->tx_ring_mask = s->mask;
	zc->tx_slot_bytes = SHM_SLOT_BYTES;
}

static struct shm_slot *tx_slot(struct shm_link *s)
{
	return (struct shm_slot *)s->link.zc.tx_seq;
}

/* The slot for our next position, if the consumer has handed it back. */
static int shm_tx_reserve(struct gpunic_link *link, size_t max, uint8_t **buf)
{
	struct shm_link *s = to_shm(link);
	struct shm_slot *slot = tx_slot(s);

	(void)max; /* link.c bounds it by the MTU, which every slot holds */
	/* Acquire: the consumer's reads of the slot's last frame come before our writes. */
	if (atomic_load_explicit(&slot->seq, memory_order_acquire) != link->zc.tx_seq_want)
		return EAGAIN;
	*buf = slot->frame;
	return 0;
}

static int shm_tx_commit(struct gpunic_link *link, size_t len)
{
	if (len < GPUNIC_ETH_BYTES)
		return link_tx_error(link, EINVAL);
	link_tx_ring_publish(link, len);
	return 0;
}

/* Nothing to give back: the reserved room stays our position's slot until a commit moves on. */
static void shm_tx_abort(struct gpunic_link *link)
{
	(void)link;
}

/* ---------------------------------------------------------------- receive */

/* The next frame arrives in @slot, the slot of our position. rx_take looks there, and so does
 * the engine through the hint in link.zc (link_hold.h): it waits for the sequence value that
 * publishes the slot and then takes the frame as rx_take would (zc.rx_slot). */
static void rx_next_at(struct shm_link *s, struct shm_slot *slot)
{
	s->rx_next = slot;
	s->link.zc.rx_seq = (const uint32_t *)&slot->seq;
	s->link.zc.rx_seq_want = s->rx.pos + 1;
}

/* Hands our current slot back to the producer for its next lap, and moves on. */
static void rx_hand_back(struct shm_link *s, struct shm_slot *slot)
{
	uint32_t pos = s->rx.pos;

	/* Release: our reads of the frame come before the producer may write it again. */
	atomic_store_explicit(&slot->seq, pos + s->nslots, memory_order_release);
	s->rx.pos = pos + 1;
	atomic_store_explicit(s->rx.rec, pos + 1, memory_order_relaxed);
	rx_next_at(s, slot_after(s, &s->rx, slot, pos));
}

/*
 * The frame at our position, if published: its slot and length, the length read once and
 * bounded. A frame with an impossible length is handed back, counted and refused (EBADMSG).
 */
static int rx_take(struct shm_link *s, struct shm_slot **slotp, const uint8_t **frame,
		   size_t *lenp)
{
	struct shm_slot *slot = s->rx_next;

	/* Exactly "published for our position": any other value, whoever wrote it, is not yet. */
	if (atomic_load_explicit(&slot->seq, memory_order_acquire) != s->rx.pos + 1)
		return EAGAIN;
	if (link_slot_open(&s->link, (const uint8_t *)slot, frame, lenp)) {
		rx_hand_back(s, slot);
		return link_rx_error(&s->link, EBADMSG);
	}
	*slotp = slot;
	return 0;
}

static int shm_rx_peek(struct gpunic_link *link, const uint8_t **frame, size_t *len)
{
	struct shm_link *s = to_shm(link);
	struct shm_slot *slot;
	int err = rx_take(s, &slot, frame, len);

	if (err)
		return err;
	link_count_rx(link, *len);
	return 0;
}

static void shm_rx_release(struct gpunic_link *link)
{
	struct shm_link *s = to_shm(link);

	rx_hand_back(s, s->rx_next);
}

static int shm_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct shm_link *s = to_shm(link);
	struct shm_slot *slot;
	const uint8_t *frame;
	size_t n;
	int err = rx_take(s, &slot, &frame, &n);

	if (err)
		return err;
	if (n > cap) {
		err = link_rx_error(link, EMSGSIZE);
	} else {
		memcpy(buf, frame, n);
		link_count_rx(link, n);
		*len = n;
	}
	rx_hand_back(s, slot);
	return err;
}

static void shm_close(struct gpunic_link *link)
{
	struct shm_link *s = to_shm(link);

	munmap(s->map, s->map_bytes);
	if (s->unlink_name) {
		shm_unlink(s->unlink_name);
		free(s->unlink_name);
	}
	free(s);
}

static const struct gpunic_link_ops shm_ops = {
	.name = "shm",
	.send = link_send_by_reserve,
	.recv = shm_recv,
	.close = shm_close,
	.tx_reserve = shm_tx_reserve,
	.tx_commit = shm_tx_commit,
	.tx_abort = shm_tx_abort,
	.rx_peek = shm_rx_peek,
	.rx_release = shm_rx_release,
};

static size_t object_bytes(uint32_t slots)
{
	return sizeof(struct shm_hdr) + 2 * (size_t)slots * SHM_SLOT_BYTES;
}

static int valid_slots(uint32_t slots)
{
	return slots >= 2 && slots <= SHM_MAX_SLOTS && (slots & (slots - 1)) == 0;
}

/* Creates, sizes and maps the object, then writes the header; the name is gone on failure. */
static int create_object(struct shm_link *s, const char *name, uint32_t slots)
{
	struct shm_hdr *h;
	void *map;
	int fd, err;

	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	s->map_bytes = object_bytes(slots);
	if (ftruncate(fd, (off_t)s->map_bytes) < 0) {
		err = errno;
		goto err_unlink;
	}
	/* Populate now so the first frames do not take page faults. */
	map = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED) {
		err = errno;
		goto err_unlink;
	}
	close(fd);

	s->map = map;
	h = map;
	/* Slot i of each ring starts free for position i; the magic's release publishes that. */
	for (uint32_t r = 0; r < 2; r++) {
		struct shm_dir ring = {
			.slots = s->map + sizeof(*h) + (size_t)r * slots * SHM_SLOT_BYTES,
		};

		for (uint32_t i = 0; i < slots; i++)
			atomic_store_explicit(&slot_at(&ring, slots - 1, i)->seq, i,
					      memory_order_relaxed);
	}
	h->version = SHM_VERSION;
	h->hdr_bytes = sizeof(*h);
	h->slots = slots;
	h->slot_bytes = SHM_SLOT_BYTES;
	h->mtu = LINK_MTU_BYTES;
	atomic_store_explicit(&h->magic, SHM_MAGIC, memory_order_release);
	return 0;

err_unlink:
	close(fd);
	shm_unlink(name);
	return err;
}

/* Checks a header written by someone else against our own geometry; 0 or EINVAL. */
static int check_header(const struct shm_hdr *h, size_t have, uint32_t want_slots,
			uint32_t *slots)
{
	uint32_t n;

	if (atomic_load_explicit(&h->magic, memory_order_acquire) != SHM_MAGIC)
		return EINVAL;
	n = h->slots;
	if (h->version != SHM_VERSION || h->hdr_bytes != sizeof(*h) ||
	    h->slot_bytes != SHM_SLOT_BYTES || h->mtu != LINK_MTU_BYTES || !valid_slots(n) ||
	    (want_slots && want_slots != n) || object_bytes(n) > have)
		return EINVAL;
	*slots = n;
	return 0;
}

static int attach_object(struct shm_link *s, const char *name, uint32_t want_slots,
			 uint32_t *slots)
{
	struct stat st;
	void *map;
	int fd, err;

	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return err;
	}
	if (st.st_size < (off_t)sizeof(struct shm_hdr) ||
	    st.st_size > (off_t)object_bytes(SHM_MAX_SLOTS)) {
		close(fd);
		return EINVAL;
	}
	s->map_bytes = (size_t)st.st_size;
	map = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	err = errno;
	close(fd);
	if (map == MAP_FAILED)
		return err;
	s->map = map;
	err = check_header(map, s->map_bytes, want_slots, slots);
	if (err)
		munmap(map, s->map_bytes);
	return err;
}

/* Points each direction at its ring; our positions start where the records say this end stood
 * (0 on a new cable). A record is only a hint: a wrong one makes the sequence words disagree
 * and the ring stall, never a read out of bounds. */
static void wire_up(struct shm_link *s, enum gpunic_shm_end end, uint32_t slots)
{
	struct shm_hdr *h = (struct shm_hdr *)s->map;
	uint8_t *rings = s->map + sizeof(*h);
	size_t ring_bytes = (size_t)slots * SHM_SLOT_BYTES;
	unsigned tx_ring = end == GPUNIC_SHM_END_A ? 0 : 1, rx_ring = tx_ring ^ 1;

	s->mask = slots - 1;
	s->nslots = slots;
	s->tx.rec = &h->ring[tx_ring].prod;
	s->tx.slots = rings + tx_ring * ring_bytes;
	tx_ring_describe(s, atomic_load_explicit(s->tx.rec, memory_order_relaxed));

	/* We start with no template, while the peer's producer packs against the one its last
	 * consumer held: our attach count tells it to send the next template whole. */
	s->link.zc.tx_gen = (const uint32_t *)&h->ring[tx_ring].cons_attach;
	atomic_fetch_add_explicit(&h->ring[rx_ring].cons_attach, 1, memory_order_relaxed);
	s->rx.rec = &h->ring[rx_ring].cons;
	s->rx.slots = rings + rx_ring * ring_bytes;
	s->rx.pos = atomic_load_explicit(s->rx.rec, memory_order_relaxed);
	rx_next_at(s, slot_at(&s->rx, s->mask, s->rx.pos));
}

struct gpunic_link *gpunic_link_shm_open(const struct gpunic_shm_link_attr *attr)
{
	struct shm_link *s;
	uint32_t slots = 0;
	int err;

	if (!attr || !attr->name || attr->name[0] != '/' ||
	    (attr->end != GPUNIC_SHM_END_A && attr->end != GPUNIC_SHM_END_B) ||
	    (attr->slots && !valid_slots(attr->slots))) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* A memory cable delivers the peer's bytes unchanged: no ICRC check is needed. */
	link_init(&s->link, &shm_ops, GPUNIC_LINK_CAP_RX_INTACT, LINK_MTU_BYTES);
	s->link.zc.rx_slot = true;

	if (attr->create) {
		s->unlink_name = strdup(attr->name);
		if (!s->unlink_name) {
			err = ENOMEM;
			goto err_free;
		}
		slots = attr->slots ? attr->slots : SHM_DEFAULT_SLOTS;
		err = create_object(s, attr->name, slots);
	} else {
		err = attach_object(s, attr->name, attr->slots, &slots);
	}
	if (err)
		goto err_free;
	wire_up(s, attr->end, slots);
	return &s->link;

err_free:
	free(s->unlink_name);
	free(s);
	errno = err;
	return NULL;
}
