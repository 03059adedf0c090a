/* SPDX-License-Identifier: MIT */
/*
 * gpunic links: move whole Ethernet frames (no FCS) between two endpoints.
 *
 * A link is a const ops table plus its private state; nothing above this header knows which link
 * runs (rdma-core's verbs_context_ops pattern). Every call returns 0 or a positive errno value;
 * open functions return NULL and set errno (the control path's rule: docs/DESIGN.md, "Errors").
 *
 *   udp    kernel UDP socket; the kernel builds L2-L4, the link strips/synthesises them
 *   dgram  one Ethernet frame per UDP datagram (QEMU -netdev socket,udp=...)
 *   shm    shared-memory cable between two endpoints on one host, busy-polled frame rings
 *   impair a link wrapping a link: seeded drop, reorder, duplicate, corrupt, delay (tests)
 *   learn  a link wrapping a link: learns the peer's MAC from its frames, asks for it by ARP
 *   packet raw Ethernet on an interface: AF_PACKET with mmap rings, BPF-filtered to RoCEv2 and ARP
 *   xdp    raw Ethernet on one queue of an interface: AF_XDP, an XDP program steers RoCEv2 to it
 *
 * Frames go out and come in two ways, freely mixed on one link: send/recv copy them from and to
 * the caller's buffer; tx_reserve/tx_commit and rx_peek/rx_release let the caller build a frame
 * where the link carries it and parse a received one where it lies (zero-copy on shm, a bounce
 * buffer in link.c on the other links, so callers never need to know which).
 */
#ifndef GPUNIC_LINK_H
#define GPUNIC_LINK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpunic_link;

/* Capability bits a link advertises in gpunic_link.caps. */
enum gpunic_link_caps {
	/* Received frames carry synthesised L2-L4 headers (the kernel kept the real ones), so the
	 * receiver cannot verify the ICRC (docs/WIRE.md 1.4). */
	GPUNIC_LINK_CAP_RX_NO_ICRC = 1u << 0,
	/* The link delivers frames addressed to any MAC/IP: the NIC must filter by address. */
	GPUNIC_LINK_CAP_SHARED_WIRE = 1u << 1,
	/* Frames arrive exactly as the peer's NIC built them: a memory cable cannot corrupt bits,
	 * so a receiver may skip verifying the ICRC; the sender still computes it. A wrapper that
	 * changes frames (impair) never passes it on. */
	GPUNIC_LINK_CAP_RX_INTACT = 1u << 2,
};

struct gpunic_link_ops {
	const char *name;
	/* Queue one frame for transmission. EAGAIN: no room now, retry later. EMSGSIZE: too big. */
	int (*send)(struct gpunic_link *link, const uint8_t *frame, size_t len);
	/* Take one received frame if any. EAGAIN: nothing there. EMSGSIZE: frame larger than
	 * @cap (it is consumed and dropped). Never blocks. */
	int (*recv)(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len);
	/* Release everything the link holds. */
	void (*close)(struct gpunic_link *link);
	/*
	 * Optional zero-copy ops, called only through the gpunic_link_tx_* and gpunic_link_rx_*
	 * functions, which check their arguments and keep the state every link shares. Without
	 * tx_reserve (or rx_peek) link.c emulates that group over send (or recv) with a bounce
	 * buffer. A link that has tx_reserve has tx_commit and tx_abort; one that has rx_peek has
	 * rx_release.
	 */
	/* Room for a frame of up to @max bytes (max <= mtu); EAGAIN: none now. Sets *buf only
	 * when it reserves the room. */
	int (*tx_reserve)(struct gpunic_link *link, size_t max, uint8_t **buf);
	/* Send the reserved frame's first @len bytes (len <= max); counts like send. */
	int (*tx_commit)(struct gpunic_link *link, size_t len);
	/* Give the reserved room back unsent. */
	void (*tx_abort)(struct gpunic_link *link);
	/* Hand out the next received frame where it lies; counts and fails like recv. Sets
	 * *frame and *len only when it hands one out. */
	int (*rx_peek)(struct gpunic_link *link, const uint8_t **frame, size_t *len);
	/* Consume the frame rx_peek handed out. */
	void (*rx_release)(struct gpunic_link *link);
};

/* Counters every link keeps. */
struct gpunic_link_stats {
	uint64_t tx_frames;
	uint64_t tx_bytes;
	uint64_t tx_errors;
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t rx_errors;   /* oversized, malformed or unreadable frames that were dropped */
	/* impairment layer only */
	uint64_t imp_dropped;
	uint64_t imp_duplicated;
	uint64_t imp_reordered;
	uint64_t imp_corrupted;
	uint64_t imp_delayed;
};

/* Zero-copy calls in progress. Private to src/link; zero (calloc) is the idle state. */
struct gpunic_link_zc {
	uint8_t *tx_buf;        /* the open reservation's room; NULL: none open */
	size_t tx_max;          /* and its size */
	const uint8_t *rx_frame; /* the frame rx_peek handed out; NULL: none held */
	size_t rx_len;
	uint8_t *bounce;        /* the emulation's buffers, tx then rx; allocated on first use */
	/* Set by a link with rx_peek that can tell cheaply (shm): while *rx_seq differs from
	 * rx_seq_want no frame waits, and the engine makes no call. NULL: no hint. A hint only:
	 * rx_peek still decides. */
	const uint32_t *rx_seq;
	uint32_t rx_seq_want;
	/* The hint names a whole slot (shm): the word after *rx_seq holds the frame's length
	 * and the frame follows it, so the engine takes a published frame as rx_peek would, with
	 * no call (link_hold.h); rx_release still hands it back. */
	bool rx_slot;
	/* Likewise for transmit: while *tx_seq equals tx_seq_want, tx_room is free for a frame,
	 * and the engine reserves it as tx_reserve would, with no call. NULL: no hint. */
	uint32_t *tx_seq;
	uint32_t tx_seq_want;
	uint8_t *tx_room;
	/* The slots before this position are known handed back (a ring link: link_hold.h,
	 * link_tx_room_ahead), and their sequence words are not read before they are written:
	 * the consumer polls the next one, and a read would fetch its line once more. */
	uint32_t tx_free_to;
	/* A link whose transmit is a ring of slots (shm) describes it here, and the engine
	 * publishes a frame with no call (link_hold.h): tx_seq's slot gets the length and
	 * tx_seq_want + 1, tx_rec the new position, and the next slot follows tx_slot_bytes on,
	 * or at tx_ring after the last. tx_ring_mask 0: no ring, commit calls the link. */
	uint32_t *tx_rec;
	uint8_t *tx_ring;
	uint32_t tx_ring_mask;
	uint32_t tx_slot_bytes;
	/* Small frames packed into a slot's first line (link_hold.h, link_tx_pack): the
	 * template the peer holds (the first bytes of the last frame marked as one), valid
	 * while *tx_gen, the consumer's attach count, still reads tx_gen_seen. NULL tx_gen: the
	 * link does not pack. _tail: the template's tail is compared too (the bytes a frame
	 * repeats: src/wire/fixed.h). The receiving side's template and the room a packed frame
	 * is rebuilt in follow. */
	const uint32_t *tx_gen;
	uint32_t tx_gen_seen;
	bool tx_tmpl_ok, tx_tmpl_tail;
	bool rx_tmpl_ok, rx_tmpl_tail;
	uint8_t tx_tmpl[70];		/* a frame's first bytes, its head and tail included */
	uint8_t rx_tmpl[70];
	uint8_t rx_unpacked[128];
	/* A small frame is built here, in our own memory, and packed from here into the slot:
	 * packed from the slot itself, its loads had to wait for the stores that built it. */
	uint8_t tx_stage[128];
};

struct gpunic_link {
	const struct gpunic_link_ops *ops;
	unsigned caps;               /* enum gpunic_link_caps */
	uint32_t mtu;                /* largest frame the link carries (Ethernet header included) */
	struct gpunic_link_stats stats;
	struct gpunic_link_zc zc;
	/* What the link bound (host order), for gpunic_link_bound_addr(); 0: carries any.
	 * Set by the constructor; a wrapper copies its inner link's. */
	uint32_t bound_ip;
	uint16_t bound_port;
};

/**
 * gpunic_link_bound_addr - the IPv4 address and UDP port the link bound, if it did
 * @link: the link
 * @ip: set to the address frames must come from and go to (udp), else left alone
 * @port: set to the UDP port it sends from and receives on; 0 when any source port goes out
 *
 * A kernel UDP socket sends every datagram from the port it is bound to and refuses frames
 * that say otherwise, so a NIC on it must use that address and that source port.
 * Return: 0, or ENOENT for a link that carries frames of any address (shm, dgram).
 */
static inline int gpunic_link_bound_addr(const struct gpunic_link *link, uint32_t *ip,
					 uint16_t *port)
{
	if (!link->bound_ip)
		return ENOENT;
	*ip = link->bound_ip;
	*port = link->bound_port;
	return 0;
}

/* Queue one frame (ops->send). EBUSY while a gpunic_link_tx_reserve() reservation is open. */
static inline int gpunic_link_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	if (link->zc.tx_buf)
		return EBUSY;
	return link->ops->send(link, frame, len);
}

/* Take one frame (ops->recv). EBUSY while a gpunic_link_rx_peek() frame is held. */
static inline int gpunic_link_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	if (link->zc.rx_frame)
		return EBUSY;
	return link->ops->recv(link, buf, cap, len);
}

/**
 * gpunic_link_close - close a link (NULL is fine) and free what link.c kept for it
 * A frame still held or a reservation still open goes with it, unsent.
 */
void gpunic_link_close(struct gpunic_link *link);

/* ---------------------------------------------------------------- zero-copy */

/**
 * gpunic_link_tx_reserve - room to build the next frame in, where the link will carry it
 * @link: the link; one reservation at a time
 * @max: the most bytes the frame will have (at most link->mtu)
 * @buf: set to @max writable bytes
 *
 * On shm @buf is the frame slot itself for a frame of more than 128 bytes: the frame is never
 * copied. That is shared memory, so the peer can read it, and a hostile one change it, before
 * and after the commit: build the frame from your own data and never read a field back from
 * @buf to decide anything. A smaller frame is built in the link's own memory and moved into
 * the slot at commit, packed into one line where it can be (src/link/link_hold.h). Other links
 * give a buffer of link.c's, copied out by send at commit. While the reservation is open,
 * gpunic_link_send() gives EBUSY.
 * Return: 0; EAGAIN: no room now (shm; the other links find out only at commit); EMSGSIZE:
 * @max > mtu (counted in tx_errors, as send counts an oversized frame); EBUSY: a reservation
 * is open already; ENOMEM: no bounce buffer.
 */
int gpunic_link_tx_reserve(struct gpunic_link *link, size_t max, uint8_t **buf);

/**
 * gpunic_link_tx_commit - send the first @len bytes of the reserved room
 * @link: the link holding the reservation
 * @len: the frame's size, at most the reserved max
 *
 * Counts like gpunic_link_send() and fails like it: a frame the link refuses (shorter than an
 * Ethernet header, say) is counted in tx_errors and dropped.
 * Return: 0 when the frame is on its way; EAGAIN: the link pushed back (only links without a
 * native reservation, whose room is known only now): nothing was sent, the reservation and its
 * bytes stay, commit again later or abort; EINVAL: no reservation is open, or @len is larger
 * than it (counted in tx_errors; the reservation is gone); otherwise what send returns. Every
 * result but EAGAIN ends the reservation.
 */
int gpunic_link_tx_commit(struct gpunic_link *link, size_t len);

/* gpunic_link_tx_abort - end the open reservation (if any) without sending anything */
void gpunic_link_tx_abort(struct gpunic_link *link);

/**
 * gpunic_link_rx_peek - the next received frame, where it lies
 * @link: the link
 * @frame: set to the frame's first byte; valid until gpunic_link_rx_release() or close
 * @len: set to its size (an Ethernet header at least, at most link->mtu)
 *
 * The frame stays held, and is handed out again by another peek, until it is released; while
 * it is held, gpunic_link_recv() gives EBUSY. On shm @frame points into the cable's slot:
 * shared memory that a hostile peer can still change while it is parsed. Read each field once
 * into a local and check the local, never the frame twice (a length checked, then read again
 * for the copy, may have grown in between). Other links hand out a copy of link.c's.
 * Return: 0; EAGAIN: nothing there; otherwise what recv returns for a frame it drops (EBADMSG,
 * EMSGSIZE...), counted in rx_errors as recv counts it.
 */
int gpunic_link_rx_peek(struct gpunic_link *link, const uint8_t **frame, size_t *len);

/* gpunic_link_rx_release - consume the frame gpunic_link_rx_peek() handed out (if any) */
void gpunic_link_rx_release(struct gpunic_link *link);

/* ---------------------------------------------------------------- constructors */

/* The MAC every gpunic endpoint and link takes unless told otherwise: 02:00 (locally
 * administered, unicast) followed by the IPv4 address, so that a peer can derive it without
 * ARP. */
void gpunic_mac_from_ipv4(uint32_t ip, uint8_t mac[6]);

/* IPv4 addresses and ports in host byte order. */
struct gpunic_udp_link_attr {
	uint32_t local_ip;     /* bound source address; frames must carry it as IP source */
	uint16_t local_port;   /* usually 4791 */
	uint8_t local_mac[6];  /* written as destination MAC of synthesised received frames */
	uint8_t peer_mac[6];   /* written as source MAC of synthesised received frames; all
				* zero: each frame's from its source address, by
				* gpunic_mac_from_ipv4() */
};
struct gpunic_link *gpunic_link_udp_open(const struct gpunic_udp_link_attr *attr);

struct gpunic_dgram_link_attr {
	uint32_t local_ip;     /* where this end receives datagrams */
	uint16_t local_port;
	uint32_t remote_ip;    /* where datagrams are sent (QEMU's localaddr) */
	uint16_t remote_port;
};
struct gpunic_link *gpunic_link_dgram_open(const struct gpunic_dgram_link_attr *attr);

/* A shared-memory cable between end A (0) and end B (1). Either end may create it; usually A. */
enum gpunic_shm_end {
	GPUNIC_SHM_END_A = 0,
	GPUNIC_SHM_END_B = 1,
};
struct gpunic_shm_link_attr {
	const char *name;          /* shm object name, e.g. "/gpunic-cable0" */
	enum gpunic_shm_end end;
	uint32_t slots;            /* frames per direction, a power of two (0: default) */
	int create;                /* 1: create (and own) the object, EEXIST if the name exists;
				    * 0: attach to an existing one, EINVAL if it is not a valid cable */
};
struct gpunic_link *gpunic_link_shm_open(const struct gpunic_shm_link_attr *attr);

/*
 * Raw Ethernet links (packet, xdp): frames go on an interface as the NIC built them, no kernel IP
 * stack in between, so the wire can corrupt them (the NIC checks the ICRC) and carries frames for
 * other addresses (GPUNIC_LINK_CAP_SHARED_WIRE). Opening needs CAP_NET_RAW (packet) or
 * CAP_NET_ADMIN and CAP_BPF (xdp). On failure the reason is printed at error level whatever
 * GPUNIC_LOG_LEVEL says, since errno alone cannot tell "built without libxdp" from the rest.
 */
enum gpunic_raw_link_flags {
	GPUNIC_RAW_XDP_SKB = 1u << 0,   /* xdp: generic (SKB) mode even where the driver has XDP */
	GPUNIC_RAW_XDP_COPY = 1u << 1,  /* xdp: copy mode even where zero-copy would work */
};
struct gpunic_raw_link_attr {
	const char *ifname;
	uint32_t queue;         /* xdp: the receive queue the socket serves (packet: ignored) */
	uint32_t local_ip;      /* host order; 0: every RoCEv2 frame, and no ARP, reaches us */
	uint8_t local_mac[6];   /* made a unicast address of the interface when it is not its own;
				 * all zero: 02:00 + local_ip, or the interface's own without one */
	unsigned flags;         /* enum gpunic_raw_link_flags */
	uint32_t busy_poll_us;  /* xdp: SO_BUSY_POLL and a kick per empty poll; 0: rings only */
};
struct gpunic_link *gpunic_link_packet_open(const struct gpunic_raw_link_attr *attr);
struct gpunic_link *gpunic_link_xdp_open(const struct gpunic_raw_link_attr *attr);

/* Impairments, each in parts per million of frames; all decisions come from @seed. */
struct gpunic_impair_attr {
	uint64_t seed;
	uint32_t drop_ppm;
	uint32_t reorder_ppm;     /* hold a frame back and send it after the next one */
	uint32_t duplicate_ppm;
	uint32_t corrupt_ppm;     /* flip one random byte after the Ethernet header */
	uint32_t delay_ppm;       /* hold a frame for delay_usec */
	uint32_t delay_usec;
	uint32_t reorder_hold_usec; /* longest a reordered frame waits for the next; 0: 1000 */
};
/* Wraps @inner (and owns it from now on: closing the wrapper closes @inner). On failure @inner
 * is still the caller's. */
struct gpunic_link *gpunic_link_impair_open(struct gpunic_link *inner,
					    const struct gpunic_impair_attr *attr);

/*
 * An ARP-learning wrapper: notes the MAC of every frame (ARP or IPv4) that the watched IPv4
 * address sends, and can ask for it with a broadcast ARP request, so that an endpoint meeting
 * a real RoCE stack on a shared wire needs no static neighbour entry. Owns @inner like impair;
 * on failure @inner is still the caller's.
 */
struct gpunic_link *gpunic_link_learn_open(struct gpunic_link *inner);
/* Watch @ip (host order); what was learned for another address is forgotten. */
void gpunic_link_learn_watch(struct gpunic_link *link, uint32_t ip);
/* Return: 0 and @mac once the watched address was seen; EAGAIN: not yet; EINVAL: not a
 * learning link. */
int gpunic_link_learn_mac(const struct gpunic_link *link, uint8_t mac[6]);
/* Broadcast "who has @tip, tell @sip" from @smac (RFC 826) on the inner link. */
int gpunic_link_learn_arp_request(struct gpunic_link *link, const uint8_t smac[6], uint32_t sip,
				  uint32_t tip);

/**
 * gpunic_link_open_spec - open a link from a text spec, as the CLI takes it
 *   "udp:IP[:PORT]"                      e.g. udp:127.0.0.2:4791
 *   "dgram:LOCALIP:PORT,REMOTEIP:PORT"   e.g. dgram:127.0.0.1:10002,127.0.0.1:10001
 *   "shm:NAME,a|b[,create]"              e.g. shm:/gpunic0,a,create
 *   "packet:IFNAME[,ip=IP][,mac=MAC]"    e.g. packet:eth1,ip=10.0.0.1
 *   "xdp:IFNAME[:QUEUE][,ip=IP][,mac=MAC][,skb][,copy][,busy=USEC]"   e.g. xdp:eth1:0,ip=10.0.0.1
 * Return: the link, or NULL with errno set (EINVAL for a malformed spec).
 */
struct gpunic_link *gpunic_link_open_spec(const char *spec);
/* Does @spec name a kind of link gpunic_link_open_spec() knows (its prefix only; the rest is
 * checked when it opens)? */
bool gpunic_link_spec_known(const char *spec);

/**
 * gpunic_link_open_spec_wait - gpunic_link_open_spec(), where the joining end of a shm cable
 * (no ",create") waits up to @wait_ms for the other side to create it: ENOENT (not there yet)
 * and EINVAL (its header not written yet) are retried every 10 ms. Other specs open at once.
 * Return: as gpunic_link_open_spec().
 */
struct gpunic_link *gpunic_link_open_spec_wait(const char *spec, int wait_ms);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_LINK_H */
