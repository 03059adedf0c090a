// SPDX-License-Identifier: MIT
/*
 * The xdp link: raw Ethernet on one receive queue of an interface through an AF_XDP socket
 * (libxdp's xsk API), fed by xdp_roce.bpf.c, which libbpf loads and attaches through a BPF link
 * (gone with the process, so a crash leaves no program behind). That program hands RoCEv2 frames
 * and ARP for our address to the socket and passes everything else to the kernel, so the host
 * keeps its own traffic on the same port.
 *
 * Native (driver) XDP where the driver has it, else generic; zero-copy where the driver supports
 * it, else copy mode. The UMEM is one 4 KiB chunk per frame: 2048 for receive (the fill ring
 * keeps them all posted, a few windows of PMTU frames from many QPs) and 1024 for transmit. A
 * chunk keeps XDP_PACKET_HEADROOM for the kernel, so frames up to 3840 bytes: path MTU 2048.
 * Received frames are parsed where they lie and transmitted ones built in their chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raw.h"

#define KIND "xdp"

#ifndef GPUNIC_HAVE_XDP

struct gpunic_link *gpunic_link_xdp_open(const struct gpunic_raw_link_attr *attr)
{
	if (!attr || !attr->ifname) {
		errno = EINVAL;
		return NULL;
	}
	return raw_fail(EOPNOTSUPP, KIND, "built without libxdp (install libxdp-dev libbpf-dev "
			"clang and rebuild)");
}

#else

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "gpunic/log.h"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

#define XDP_CHUNK_BYTES 4096u
#define XDP_RX_CHUNKS 2048u
#define XDP_TX_CHUNKS 1024u
#define XDP_CHUNKS (XDP_RX_CHUNKS + XDP_TX_CHUNKS)
#define XDP_MAX_FRAME (XDP_CHUNK_BYTES - XDP_PACKET_HEADROOM)
#define XDP_BUSY_BUDGET 64
#define XDP_BUSY_RETRIES 100    /* 10 ms apart */

/* The BPF object, built from xdp_roce.bpf.c and embedded (xdp_roce_obj.c, generated). */
extern const unsigned char gpunic_xdp_roce_obj[];
extern const size_t gpunic_xdp_roce_obj_len;

struct xdp_link {
	struct gpunic_link link;
	uint8_t *area;                  /* the UMEM */
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	struct bpf_object *obj;
	int link_fd;                    /* the program's attachment; closing it detaches */
	int mac_fd;                     /* holds our MAC on the interface, or -1 */
	bool zerocopy;
	bool native;
	bool busy;                      /* kick the kernel on every empty poll */
	bool kick;                      /* transmits wait for a kick */
	uint64_t rx_addr;               /* the chunk rx_peek handed out */
	uint64_t tx_addr;               /* the chunk tx_reserve handed out */
	bool tx_held;
	uint32_t tx_nfree;
	uint64_t tx_free[XDP_TX_CHUNKS];
};

static struct xdp_link *to_xdp(struct gpunic_link *link)
{
	return (struct xdp_link *)link;
}

/* ---------------------------------------------------------------- transmit */

static void xdp_kick(struct xdp_link *x)
{
	int err;

	if (sendto(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0) {
		x->kick = false;
		return;
	}
	err = errno;
	/* EAGAIN: the kernel sent a batch and more wait; EBUSY, ENOBUFS: the device is full */
	x->kick = err == EAGAIN || err == EBUSY || err == ENOBUFS || err == EINTR;
	if (!x->kick)
		x->link.stats.tx_errors++;
}

/* Chunks whose frames went out come back to the free list. */
static void xdp_reclaim(struct xdp_link *x)
{
	uint32_t idx, n = xsk_ring_cons__peek(&x->cq, XDP_TX_CHUNKS, &idx);

	for (uint32_t i = 0; i < n; i++)
		x->tx_free[x->tx_nfree++] = *xsk_ring_cons__comp_addr(&x->cq, idx + i);
	if (n)
		xsk_ring_cons__release(&x->cq, n);
}

static int xdp_tx_reserve(struct gpunic_link *link, size_t max, uint8_t **buf)
{
	struct xdp_link *x = to_xdp(link);

	(void)max;	/* link.c checked it against the mtu, which fits a chunk */
	if (!x->tx_nfree)
		xdp_reclaim(x);
	if (!x->tx_nfree) {
		xdp_kick(x);
		return EAGAIN;
	}
	x->tx_addr = x->tx_free[--x->tx_nfree];
	x->tx_held = true;
	*buf = xsk_umem__get_data(x->area, x->tx_addr);
	return 0;
}

static void xdp_tx_abort(struct gpunic_link *link)
{
	struct xdp_link *x = to_xdp(link);

	if (x->tx_held)
		x->tx_free[x->tx_nfree++] = x->tx_addr;
	x->tx_held = false;
}

static int xdp_tx_commit(struct gpunic_link *link, size_t len)
{
	struct xdp_link *x = to_xdp(link);
	struct xdp_desc *d;
	uint32_t idx;

	if (len < GPUNIC_ETH_BYTES) {
		xdp_tx_abort(link);
		return link_tx_error(link, EINVAL);
	}
	/* never full: the ring has a slot for every transmit chunk */
	if (xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
		xdp_tx_abort(link);
		return link_tx_error(link, ENOBUFS);
	}
	d = xsk_ring_prod__tx_desc(&x->tx, idx);
	d->addr = x->tx_addr;
	d->len = (uint32_t)len;
	d->options = 0;
	xsk_ring_prod__submit(&x->tx, 1);
	x->tx_held = false;
	link_count_tx(link, len);
	if (xsk_ring_prod__needs_wakeup(&x->tx) || x->busy)
		xdp_kick(x);
	return 0;
}

/* ---------------------------------------------------------------- receive */

/* The chunk goes back on the fill ring, which has room for every receive chunk. */
static void xdp_refill(struct xdp_link *x, uint64_t addr)
{
	uint32_t idx;

	if (xsk_ring_prod__reserve(&x->fq, 1, &idx) != 1)
		return;
	*xsk_ring_prod__fill_addr(&x->fq, idx) = addr & ~(uint64_t)(XDP_CHUNK_BYTES - 1);
	xsk_ring_prod__submit(&x->fq, 1);
}

static void xdp_rx_release(struct gpunic_link *link)
{
	struct xdp_link *x = to_xdp(link);

	xsk_ring_cons__release(&x->rx, 1);
	xdp_refill(x, x->rx_addr);
}

static void xdp_poke_rx(struct xdp_link *x)
{
	if (x->kick)
		xdp_kick(x);
	/* zero-copy drivers sleep until asked; busy polling runs the driver's NAPI here */
	if (x->busy || xsk_ring_prod__needs_wakeup(&x->fq))
		(void)recvfrom(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

static int xdp_rx_peek(struct gpunic_link *link, const uint8_t **frame, size_t *len)
{
	struct xdp_link *x = to_xdp(link);
	const struct xdp_desc *d;
	uint32_t idx;

	for (uint32_t i = 0; i < XDP_RX_CHUNKS; i++) {
		if (xsk_ring_cons__peek(&x->rx, 1, &idx) != 1) {
			xdp_poke_rx(x);
			return EAGAIN;
		}
		d = xsk_ring_cons__rx_desc(&x->rx, idx);
		x->rx_addr = d->addr;
		/* the program sends ARP too; runts and oversized frames are counted drops */
		if (d->len < GPUNIC_ETH_BYTES || d->len > link->mtu) {
			link->stats.rx_errors++;
			xdp_rx_release(link);
			continue;
		}
		link_count_rx(link, d->len);
		*frame = xsk_umem__get_data(x->area, d->addr);
		*len = d->len;
		return 0;
	}
	return EAGAIN;
}

static void xdp_close(struct gpunic_link *link)
{
	struct xdp_link *x = to_xdp(link);

	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->link_fd >= 0)
		close(x->link_fd);
	if (x->obj)
		bpf_object__close(x->obj);
	if (x->mac_fd >= 0)
		close(x->mac_fd);
	if (x->area)
		munmap(x->area, (size_t)XDP_CHUNKS * XDP_CHUNK_BYTES);
	free(x);
}

static const struct gpunic_link_ops xdp_ops = {
	.name = KIND,
	.send = link_send_by_reserve,
	.recv = link_recv_by_peek,
	.close = xdp_close,
	.tx_reserve = xdp_tx_reserve,
	.tx_commit = xdp_tx_commit,
	.tx_abort = xdp_tx_abort,
	.rx_peek = xdp_rx_peek,
	.rx_release = xdp_rx_release,
};

/* ---------------------------------------------------------------- open */

/* libbpf and libxdp speak through gpunic's log (debug level), not straight to stderr. */
static int lib_vprint(const char *fmt, va_list ap)
{
	char text[256];
	size_t n;

	if (gpunic_log_level() < GPUNIC_LOG_DEBUG)
		return 0;
	vsnprintf(text, sizeof(text), fmt, ap);
	n = strlen(text);
	if (n && text[n - 1] == '\n')
		text[n - 1] = '\0';
	gpunic_log_emit(GPUNIC_LOG_DEBUG, "xdp", "%s", text);
	return 0;
}

static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return lib_vprint(fmt, ap);
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return lib_vprint(fmt, ap);
}

static void quiet_libs(void)
{
	libbpf_set_print(bpf_print);
	libxdp_set_print(xdp_print);
}

static void *xdp_open_fail(struct xdp_link *x, int err, const char *fmt, const char *a,
			   const char *b)
{
	xdp_close(&x->link);
	if (err == EPERM || err == EACCES)
		return raw_fail(err, KIND, "%s: not permitted (needs CAP_NET_ADMIN and CAP_BPF: "
				"run as root)", a);
	return raw_fail(err, KIND, fmt, a, b, strerror(err));
}

/* Loads the program and its maps; sets our address in the configuration map. */
static int xdp_load(struct xdp_link *x, uint32_t ip, int *prog_fd)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "gpunic_xdp_roce");
	struct bpf_program *prog;
	uint32_t key = 0, nip = htonl(ip);
	int err;

	x->obj = bpf_object__open_mem(gpunic_xdp_roce_obj, gpunic_xdp_roce_obj_len, &oo);
	if (!x->obj)
		return errno ? errno : EINVAL;
	err = -bpf_object__load(x->obj);
	if (err)
		return err;
	prog = bpf_object__find_program_by_name(x->obj, "xdp_roce");
	if (!prog)
		return ENOENT;
	*prog_fd = bpf_program__fd(prog);
	if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(x->obj, "cfg"), &key, &nip, 0))
		return errno;
	return 0;
}

/* Native XDP first (unless asked for generic), generic where the driver has none. */
static int xdp_attach(struct xdp_link *x, int prog_fd, int ifindex, unsigned flags)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts);
	int err = EOPNOTSUPP;

	if (!(flags & GPUNIC_RAW_XDP_SKB)) {
		opts.flags = XDP_FLAGS_DRV_MODE;
		x->link_fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
		x->native = x->link_fd >= 0;
		if (x->native)
			return 0;
		err = errno;
		/* busy or not allowed will not change in generic mode */
		if (err == EBUSY || err == EEXIST || err == EPERM)
			return err;
		gpunic_dbg("native XDP: %s; trying generic", strerror(err));
	}
	opts.flags = XDP_FLAGS_SKB_MODE;
	x->link_fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
	return x->link_fd >= 0 ? 0 : errno;
}

/* UMEM and socket in one go, so a failed zero-copy bind leaves nothing to reuse. */
static int xdp_socket(struct xdp_link *x, const char *ifname, uint32_t queue, uint16_t bind)
{
	const struct xsk_umem_config uc = {
		.fill_size = XDP_RX_CHUNKS,
		.comp_size = XDP_TX_CHUNKS,
		.frame_size = XDP_CHUNK_BYTES,
	};
	const struct xsk_socket_config sc = {
		.rx_size = XDP_RX_CHUNKS,
		.tx_size = XDP_TX_CHUNKS,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = (uint16_t)(bind | XDP_USE_NEED_WAKEUP),
	};
	int err;

	err = -xsk_umem__create(&x->umem, x->area, (uint64_t)XDP_CHUNKS * XDP_CHUNK_BYTES,
				&x->fq, &x->cq, &uc);
	if (err) {
		x->umem = NULL;
		return err;
	}
	/* a socket closed just now still holds the queue until the kernel frees it (deferred) */
	for (int i = 0; i < XDP_BUSY_RETRIES; i++) {
		err = -xsk_socket__create(&x->xsk, ifname, queue, x->umem, &x->rx, &x->tx, &sc);
		if (err != EBUSY)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000000L }, NULL);
	}
	if (err) {
		x->xsk = NULL;
		xsk_umem__delete(x->umem);
		x->umem = NULL;
	}
	return err;
}

/* Every receive chunk posted, every transmit chunk free. */
static void xdp_fill(struct xdp_link *x)
{
	uint32_t idx;

	if (xsk_ring_prod__reserve(&x->fq, XDP_RX_CHUNKS, &idx) == XDP_RX_CHUNKS) {
		for (uint32_t i = 0; i < XDP_RX_CHUNKS; i++)
			*xsk_ring_prod__fill_addr(&x->fq, idx + i) = (uint64_t)i * XDP_CHUNK_BYTES;
		xsk_ring_prod__submit(&x->fq, XDP_RX_CHUNKS);
	}
	for (uint32_t i = 0; i < XDP_TX_CHUNKS; i++)
		x->tx_free[i] = (uint64_t)(XDP_RX_CHUNKS + i) * XDP_CHUNK_BYTES;
	x->tx_nfree = XDP_TX_CHUNKS;
}

static void xdp_busy_poll(struct xdp_link *x, uint32_t usec)
{
	int fd = xsk_socket__fd(x->xsk), one = 1, us = (int)usec, budget = XDP_BUSY_BUDGET;

	/* best effort: an older kernel without them still polls the rings */
	(void)setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us));
	(void)setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget));
	x->busy = true;
}

static int xdp_mac_socket(struct xdp_link *x, const struct raw_if *rif)
{
	if (!memcmp(rif->use_mac, rif->mac, 6))
		return 0;
	/* an AF_PACKET socket that never binds holds the address for as long as it is open */
	x->mac_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->mac_fd < 0) {
		raw_fail_errno(errno, KIND, "socket for the MAC", rif->name);
		return errno;
	}
	return raw_add_mac(KIND, x->mac_fd, rif);
}

struct gpunic_link *gpunic_link_xdp_open(const struct gpunic_raw_link_attr *attr)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *ifname;
	struct xdp_link *x;
	struct raw_if rif;
	char q[16];
	int err, prog_fd = -1;

	if (!attr || !attr->ifname) {
		errno = EINVAL;
		return NULL;
	}
	ifname = attr->ifname;
	pthread_once(&once, quiet_libs);
	err = raw_if_lookup(KIND, attr, &rif);
	if (err) {
		errno = err;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->link_fd = -1;
	x->mac_fd = -1;
	link_init(&x->link, &xdp_ops, GPUNIC_LINK_CAP_SHARED_WIRE,
		  raw_link_mtu(&rif, XDP_MAX_FRAME));
	snprintf(q, sizeof(q), "%u", attr->queue);
	x->area = mmap(NULL, (size_t)XDP_CHUNKS * XDP_CHUNK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		return xdp_open_fail(x, errno, "UMEM for %s queue %s: %s", ifname, q);
	}
	err = xdp_load(x, attr->local_ip, &prog_fd);
	if (err)
		return xdp_open_fail(x, err, "loading the XDP program for %s%s: %s", ifname, "");
	err = xdp_attach(x, prog_fd, rif.index, attr->flags);
	if (err == EBUSY || err == EEXIST)
		return xdp_open_fail(x, err, "%s already runs an XDP program (another xdp link or "
				     "tool; `ip link set dev %s xdp off` removes it): %s", ifname,
				     ifname);
	if (err)
		return xdp_open_fail(x, err, "attaching XDP to %s%s: %s (no XDP support?)", ifname,
				     "");
	err = EOPNOTSUPP;
	if (x->native && !(attr->flags & GPUNIC_RAW_XDP_COPY))
		err = xdp_socket(x, ifname, attr->queue, XDP_ZEROCOPY);
	x->zerocopy = !err;
	if (err)
		err = xdp_socket(x, ifname, attr->queue, XDP_COPY);
	if (err == EINVAL)
		return xdp_open_fail(x, err, "AF_XDP socket on %s queue %s: %s (no such queue?)",
				     ifname, q);
	if (err)
		return xdp_open_fail(x, err, "AF_XDP socket on %s queue %s: %s", ifname, q);
	xdp_fill(x);
	err = -xsk_socket__update_xskmap(x->xsk, bpf_object__find_map_fd_by_name(x->obj, "xsks"));
	if (err)
		return xdp_open_fail(x, err, "steering %s queue %s to the socket: %s", ifname, q);
	if (attr->busy_poll_us)
		xdp_busy_poll(x, attr->busy_poll_us);
	err = xdp_mac_socket(x, &rif);
	if (err) {
		xdp_close(&x->link);
		errno = err;
		return NULL;
	}
	gpunic_info("xdp link on %s queue %u: %s XDP, %s", ifname, attr->queue,
		    x->native ? "native" : "generic", x->zerocopy ? "zero-copy" : "copy mode");
	return &x->link;
}

#endif /* GPUNIC_HAVE_XDP */
