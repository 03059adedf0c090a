// SPDX-License-Identifier: MIT
/*
 * The shm link: a shared-memory cable between two endpoints on one host, the lowest-latency wire
 * (the analog of a direct-attach cable). One POSIX shm object holds a header and two
 * single-producer single-consumer rings of fixed-size frame slots, ring 0 carrying A -> B and
 * ring 1 carrying B -> A. Send and recv are busy-polled: no syscalls, no division, one memcpy.
 *
 * Ordering: the producer fills a slot, then publishes it with a release store of its counter;
 * the consumer reads the counter with acquire, copies the slot out, then hands the slot back with
 * a release store of its own counter, which the producer reads with acquire before reusing it.
 * Counters are free-running 32-bit values; each sits on its own 64-byte line so the two sides do
 * not bounce one line between them.
 *
 * The peer is not trusted (rxe_queue.h masks every index a peer can write): each side keeps its
 * own counter privately and only publishes it, indices read from the mapping are masked, lengths
 * are bounded by the slot before any copy, and the geometry is validated once at attach and then
 * only our own copy of it is used.
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
#define SHM_VERSION 1u
#define SHM_LINE_BYTES 64u
/* A slot is a 32-bit length, 4 spare bytes, then the frame, rounded up to whole lines. */
#define SHM_SLOT_HDR_BYTES 8u
#define SHM_SLOT_BYTES \
	((SHM_SLOT_HDR_BYTES + LINK_MTU_BYTES + SHM_LINE_BYTES - 1) & ~(SHM_LINE_BYTES - 1))
#define SHM_DEFAULT_SLOTS 256u
#define SHM_MAX_SLOTS 65536u

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the rings need lock-free 32-bit atomics");

/* Counters of one ring, the producer's and the consumer's on separate lines. */
struct shm_ring_ctl {
	alignas(SHM_LINE_BYTES) _Atomic uint32_t prod;
	alignas(SHM_LINE_BYTES) _Atomic uint32_t cons;
};

/* The start of the shared object. The slots of ring r follow at hdr_bytes + r * slots * slot. */
struct shm_hdr {
	_Atomic uint32_t magic; /* written last by the creator: the rest is valid once it is set */
	uint32_t version;
	uint32_t hdr_bytes;
	uint32_t slots;
	uint32_t slot_bytes;
	uint32_t mtu;
	struct shm_ring_ctl ring[2];
};

/* One direction as this end sees it: a private counter, a cached copy of the other side's. */
struct shm_dir {
	_Atomic uint32_t *own;         /* the counter we publish */
	const _Atomic uint32_t *other; /* the counter the peer publishes (untrusted) */
	uint8_t *slots;
	uint32_t pos;                  /* our counter, never read back from shared memory */
	uint32_t other_cache;
};

struct shm_link {
	struct gpunic_link link;
	struct shm_dir tx;
	struct shm_dir rx;
	uint32_t mask;
	uint8_t *map;
	size_t map_bytes;
	char *unlink_name; /* the creator removes the name on close */
};

static struct shm_link *to_shm(struct gpunic_link *link)
{
	return (struct shm_link *)link;
}

static _Atomic uint32_t *slot_len(uint8_t *slot)
{
	return (_Atomic uint32_t *)slot;
}

static int shm_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct shm_link *s = to_shm(link);
	uint32_t head = s->tx.pos;
	uint8_t *slot;

	if (len > LINK_MTU_BYTES)
		return link_tx_error(link, EMSGSIZE);
	if (len < GPUNIC_ETH_BYTES)
		return link_tx_error(link, EINVAL);
	/* Full as far as we last knew: look at the consumer again. */
	if (head - s->tx.other_cache > s->mask) {
		s->tx.other_cache = atomic_load_explicit(s->tx.other, memory_order_acquire);
		if (head - s->tx.other_cache > s->mask)
			return EAGAIN;
	}
	slot = s->tx.slots + (size_t)(head & s->mask) * SHM_SLOT_BYTES;
	memcpy(slot + SHM_SLOT_HDR_BYTES, frame, len);
	atomic_store_explicit(slot_len(slot), (uint32_t)len, memory_order_relaxed);
	atomic_store_explicit(s->tx.own, head + 1, memory_order_release);
	s->tx.pos = head + 1;
	link_count_tx(link, len);
	return 0;
}

static int shm_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct shm_link *s = to_shm(link);
	uint32_t tail = s->rx.pos;
	uint8_t *slot;
	uint32_t n;
	int err = 0;

	if (tail == s->rx.other_cache) {
		s->rx.other_cache = atomic_load_explicit(s->rx.other, memory_order_acquire);
		if (tail == s->rx.other_cache)
			return EAGAIN;
	}
	slot = s->rx.slots + (size_t)(tail & s->mask) * SHM_SLOT_BYTES;
	/* Read the length once: a hostile peer may change it under us. */
	n = atomic_load_explicit(slot_len(slot), memory_order_relaxed);
	if (n > LINK_MTU_BYTES || n < GPUNIC_ETH_BYTES)
		err = link_rx_error(link, EBADMSG);
	else if (n > cap)
		err = link_rx_error(link, EMSGSIZE);
	else
		memcpy(buf, slot + SHM_SLOT_HDR_BYTES, n);
	atomic_store_explicit(s->rx.own, tail + 1, memory_order_release);
	s->rx.pos = tail + 1;
	if (err)
		return err;
	link_count_rx(link, n);
	*len = n;
	return 0;
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
	.send = shm_send,
	.recv = shm_recv,
	.close = shm_close,
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

/* Points each direction at its ring; our counters start where the shared ones stand. */
static void wire_up(struct shm_link *s, enum gpunic_shm_end end, uint32_t slots)
{
	struct shm_hdr *h = (struct shm_hdr *)s->map;
	uint8_t *rings = s->map + sizeof(*h);
	size_t ring_bytes = (size_t)slots * SHM_SLOT_BYTES;
	unsigned tx_ring = end == GPUNIC_SHM_END_A ? 0 : 1, rx_ring = tx_ring ^ 1;

	s->mask = slots - 1;
	s->tx.own = &h->ring[tx_ring].prod;
	s->tx.other = &h->ring[tx_ring].cons;
	s->tx.slots = rings + tx_ring * ring_bytes;
	s->tx.pos = atomic_load_explicit(s->tx.own, memory_order_acquire);
	s->tx.other_cache = atomic_load_explicit(s->tx.other, memory_order_acquire);

	s->rx.own = &h->ring[rx_ring].cons;
	s->rx.other = &h->ring[rx_ring].prod;
	s->rx.slots = rings + rx_ring * ring_bytes;
	s->rx.pos = atomic_load_explicit(s->rx.own, memory_order_acquire);
	s->rx.other_cache = s->rx.pos;
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
	link_init(&s->link, &shm_ops, 0, LINK_MTU_BYTES);

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
