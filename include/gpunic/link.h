/* SPDX-License-Identifier: MIT */
/*
 * gpunic links: move whole Ethernet frames (no FCS) between two endpoints.
 *
 * A link is a const ops table plus its private state; nothing above this header knows which link
 * runs (rdma-core's verbs_context_ops pattern). Every call returns 0 or a positive errno value;
 * open functions return NULL and set errno.
 *
 *   udp    kernel UDP socket; the kernel builds L2-L4, the link strips/synthesises them
 *   dgram  one Ethernet frame per UDP datagram (QEMU -netdev socket,udp=...)
 *   shm    shared-memory cable between two endpoints on one host, busy-polled frame rings
 *   impair a link wrapping a link: seeded drop, reorder, duplicate, corrupt, delay (tests)
 */
#ifndef GPUNIC_LINK_H
#define GPUNIC_LINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpunic_link;

/* Capability bits a link advertises in gpunic_link.caps. */
enum gpunic_link_caps {
	/* Received frames carry synthesised L2-L4 headers (the kernel kept the real ones), so the
	 * receiver cannot verify the ICRC (reference/roce-wire.md pitfall 5). */
	GPUNIC_LINK_CAP_RX_NO_ICRC = 1u << 0,
	/* The link delivers frames addressed to any MAC/IP: the NIC must filter by address. */
	GPUNIC_LINK_CAP_SHARED_WIRE = 1u << 1,
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

struct gpunic_link {
	const struct gpunic_link_ops *ops;
	unsigned caps;               /* enum gpunic_link_caps */
	uint32_t mtu;                /* largest frame the link carries (Ethernet header included) */
	struct gpunic_link_stats stats;
};

static inline int gpunic_link_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	return link->ops->send(link, frame, len);
}

static inline int gpunic_link_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	return link->ops->recv(link, buf, cap, len);
}

static inline void gpunic_link_close(struct gpunic_link *link)
{
	if (link)
		link->ops->close(link);
}

/* ---------------------------------------------------------------- constructors */

/* IPv4 addresses and ports in host byte order. */
struct gpunic_udp_link_attr {
	uint32_t local_ip;     /* bound source address; frames must carry it as IP source */
	uint16_t local_port;   /* usually 4791 */
	uint8_t local_mac[6];  /* written as destination MAC of synthesised received frames */
	uint8_t peer_mac[6];   /* written as source MAC of synthesised received frames */
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

/* Impairments, each in parts per million of frames; all decisions come from @seed. */
struct gpunic_impair_attr {
	uint64_t seed;
	uint32_t drop_ppm;
	uint32_t reorder_ppm;     /* hold a frame back and send it after the next one */
	uint32_t duplicate_ppm;
	uint32_t corrupt_ppm;     /* flip one random byte after the Ethernet header */
	uint32_t delay_ppm;       /* hold a frame for delay_usec */
	uint32_t delay_usec;
};
/* Wraps @inner (and owns it from now on: closing the wrapper closes @inner). On failure @inner
 * is still the caller's. */
struct gpunic_link *gpunic_link_impair_open(struct gpunic_link *inner,
					    const struct gpunic_impair_attr *attr);

/**
 * gpunic_link_open_spec - open a link from a text spec, as the CLI takes it
 *   "udp:IP[:PORT]"                      e.g. udp:127.0.0.2:4791
 *   "dgram:LOCALIP:PORT,REMOTEIP:PORT"   e.g. dgram:127.0.0.1:10002,127.0.0.1:10001
 *   "shm:NAME,a|b[,create]"              e.g. shm:/gpunic0,a,create
 * Return: the link, or NULL with errno set (EINVAL for a malformed spec).
 */
struct gpunic_link *gpunic_link_open_spec(const char *spec);

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
