// SPDX-License-Identifier: MIT
/*
 * One side of a `gpunic perf` test: resources, the perftest-shaped sequence of out-of-band
 * steps, the executor (a kernel or host threads running perf_dev.h) and the numbers.
 *
 * The steps follow perftest 4.5+0.17's mains (read from its binaries and sources):
 *   prologue        versions, sys data, MTU (gpunic_perftest_prologue)
 *   handshakes      write_lat, read_lat, atomic_lat: 4 before the test; send_lat and every
 *                   *_bw: 3.
 *                   Our QP connects after the first (perftest connects between them too).
 *   per size        send_lat, send_bw: receives posted, then one handshake, then the run;
 *                   the others run back to back (a sweep has no sync between sizes)
 *   end             write_lat: nothing (perftest just exits); send_lat, read_lat, send_bw,
 *                   atomic_lat: close (handshake + "done"); write_bw, read_bw, atomic_bw:
 *                   handshake, bandwidth reports (the client's; the server prints it), close.
 * put_bw is gpunic's own test and follows write_bw's steps. perftest's atomic_lat and atomic_bw
 * mains are its read_lat and read_bw with the atomic verb: same steps. An atomic server checks
 * its targets once the client is done (atomic_server_verify).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/endpoint.h"
#include "gpunic/gpu.h"
#include "gpunic/gpu_perf.h"
#include "gpunic/mem.h"
#include "perf_run.h"
#include "timing.h"

#define PERF_LAT_RX_DEPTH 4u
#define PERF_BW_RX_MAX 512u
#define PERF_SQ_PUT 512u
#define PERF_MIN_RBUF (64u << 10)	/* perftest addresses up to a cycle buffer past vaddr */
#define PERF_READY_WAIT_MS 10000
#define PERF_UC_SETTLE_TRIES 50
#define PERF_MIN_RNR_TIMER 12		/* perftest's MIN_RNR_TIMER */
#define PERF_QP_TIMEOUT 14		/* perftest's default -u */
/* A client speaks once its NIC is open (CUDA's start-up on a GPU executor): a few seconds at
 * most, and a loaded TCG guest needs margin. */
#define PERF_FIRST_MSG_MS 10000

static const char *const test_names[GPUNIC_PERF_TEST_MAX] = {
	[GPUNIC_PERF_SEND_LAT] = "send_lat", [GPUNIC_PERF_WRITE_LAT] = "write_lat",
	[GPUNIC_PERF_READ_LAT] = "read_lat", [GPUNIC_PERF_SEND_BW] = "send_bw",
	[GPUNIC_PERF_WRITE_BW] = "write_bw", [GPUNIC_PERF_READ_BW] = "read_bw",
	[GPUNIC_PERF_PUT_BW] = "put_bw", [GPUNIC_PERF_ATOMIC_LAT] = "atomic_lat",
	[GPUNIC_PERF_ATOMIC_BW] = "atomic_bw",
};

const char *perf_test_name(enum gpunic_perf_test t)
{
	return (unsigned)t < GPUNIC_PERF_TEST_MAX ? test_names[t] : "?";
}

int perf_test_parse(const char *s, enum gpunic_perf_test *t)
{
	for (unsigned i = 0; i < GPUNIC_PERF_TEST_MAX; i++) {
		if (strcmp(s, test_names[i]) == 0) {
			*t = (enum gpunic_perf_test)i;
			return 0;
		}
	}
	return EINVAL;
}

bool perf_test_is_lat(enum gpunic_perf_test t)
{
	return t == GPUNIC_PERF_SEND_LAT || t == GPUNIC_PERF_WRITE_LAT ||
	       t == GPUNIC_PERF_READ_LAT || t == GPUNIC_PERF_ATOMIC_LAT;
}

bool perf_test_is_atomic(enum gpunic_perf_test t)
{
	return t == GPUNIC_PERF_ATOMIC_LAT || t == GPUNIC_PERF_ATOMIC_BW;
}

uint32_t perf_slots(uint32_t size, uint32_t iters)
{
	uint32_t fit = size ? PERF_RING_BYTES / size : 1;

	if (fit < 1)
		fit = 1;
	return iters < fit ? (iters ? iters : 1) : fit;
}

void perf_verify_ring(const uint8_t *buf, uint32_t size, uint32_t slots, struct perf_result *res)
{
	for (uint32_t k = 0; k < slots; k++) {
		const uint8_t *p = buf + (size_t)k * size;
		int64_t off = gpunic_perf_check(p, size, k, 0);

		res->verified++;
		if (off < 0)
			continue;
		if (!res->bad) {
			res->bad_msg = k;
			res->bad_off = (uint64_t)off;
			res->bad_byte = p[off];
			res->want_byte = gpunic_perf_pattern(k, (uint32_t)off);
		}
		res->bad++;
	}
}

/* ---------------------------------------------------------------- resources */

/* A buffer both the control path (cpu) and the executor (exec) address. */
struct perf_buf {
	uint8_t *cpu;
	uint8_t *exec;
	size_t bytes;
	struct gpunic_mem_buf *mb;	/* GPU executor: CPU_GPU memory */
};

struct perf_side {
	const struct perf_cfg *cfg;
	struct perf_result *res;
	struct gpunic_perftest oob;
	int lfd;			/* server: the listener, -1 once closed */
	uint64_t accept_deadline;	/* server: the wait for a client ends here */
	gpunic_mem_t *mem;
	struct gpunic_nic *nic;
	bool engine_running;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq, *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	struct gpunic_mr *mr;
	struct perf_buf data;		/* lbuf | rbuf */
	size_t lbuf_bytes, rbuf_bytes;
	struct perf_buf ctl;
	struct perf_buf t_post, t_done;
	struct gpunic_ep_addr addr;
	enum gpunic_mtu mtu;
	uint32_t psn;
	struct gpunic_perftest_dest me, peer;
	uint32_t max_iters;
	uint32_t nthreads;
	uint32_t checkers;		/* of nthreads, the ones that help check payload */
	/* one run */
	struct gpunic_perf_ctx ctx;	/* executor addresses */
	pthread_t thr[PERF_MAX_THREADS];
	uint32_t nthr;
	struct gpunic_gpu_perf *kernel;
};

static int buf_alloc(struct perf_side *s, struct perf_buf *b, size_t bytes)
{
	size_t n = (bytes + 4095) & ~(size_t)4095;

	memset(b, 0, sizeof(*b));
	b->bytes = n ? n : 4096;
	if (s->cfg->gpu_exec) {
		b->mb = gpunic_mem_alloc(s->mem, b->bytes, 4096, GPUNIC_MEM_CPU_GPU);
		if (!b->mb || !b->mb->cpu || !b->mb->gpu) {
			PERF_ERR("%zu bytes of CPU_GPU memory: %s\n", b->bytes,
				 strerror(errno ? errno : ENOMEM));
			return errno ? errno : ENOMEM;
		}
		b->cpu = b->mb->cpu;
		b->exec = b->mb->gpu;
	} else {
		b->cpu = aligned_alloc(4096, b->bytes);
		if (!b->cpu)
			return ENOMEM;
		b->exec = b->cpu;
	}
	memset(b->cpu, 0, b->bytes);
	return 0;
}

static void buf_free(struct perf_side *s, struct perf_buf *b)
{
	if (b->mb)
		gpunic_mem_free(s->mem, b->mb);
	else
		free(b->cpu);
	memset(b, 0, sizeof(*b));
}

static uint32_t rx_depth_for(const struct perf_cfg *cfg, uint32_t size)
{
	uint32_t d;

	if (cfg->test == GPUNIC_PERF_SEND_LAT)
		return PERF_LAT_RX_DEPTH;
	if (cfg->test != GPUNIC_PERF_SEND_BW)
		return 1;
	d = PERF_RING_BYTES / size;
	return d < 4 ? 4 : d > PERF_BW_RX_MAX ? PERF_BW_RX_MAX : d;
}

/* The sizes this run covers. */
static unsigned run_sizes(const struct perf_cfg *cfg, uint32_t *sizes)
{
	unsigned n = 0;

	if (!cfg->sweep) {
		sizes[0] = cfg->size;
		return 1;
	}
	for (unsigned l = PERF_SWEEP_MIN_LOG; l <= PERF_SWEEP_MAX_LOG; l++)
		if ((1u << l) <= cfg->max_size)
			sizes[n++] = 1u << l;
	return n;
}

int perf_port_free(int type, uint32_t ip, uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(*port),
				 .sin_addr.s_addr = htonl(ip) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen))
		err = errno;
	else
		*port = ntohs(a.sin_port);
	close(fd);
	return err;
}

/*
 * A client whose out-of-band connection ends at its own address runs on the server's host, and
 * the server's default link already holds that address's RoCEv2 port: a second udp link there
 * fails with "Address already in use". Step aside. On loopback take another 127/8 address (each
 * is local on Linux, and frames keep port 4791, as RoCEv2 and pcap readers expect); elsewhere a
 * UDP port the kernel has free, which a gpunic server learns from the version extension
 * (gpunic/perftest.h). Return: 0 with @spec set, or an errno (then the plain link is tried).
 */
static int same_host_spec(uint32_t *ip, char *spec, size_t len)
{
	char quad[16];
	uint16_t port = GPUNIC_ROCE_UDP_PORT;

	if ((*ip >> 24) == 127) {
		if (gpunic_ep_loopback_aside(ip, port))
			return EADDRINUSE;
		gpunic_ipv4_str(*ip, quad);
		snprintf(spec, len, "udp:%s", quad);
		return 0;
	}
	port = 0;
	if (perf_port_free(SOCK_DGRAM, *ip, &port))
		return EADDRINUSE;
	gpunic_ipv4_str(*ip, quad);
	snprintf(spec, len, "udp:%s:%u", quad, port);
	return 0;
}

static int open_link(struct perf_side *s, struct gpunic_link **link)
{
	const struct perf_cfg *cfg = s->cfg;
	uint32_t ip = cfg->ip ? cfg->ip : s->oob.local_ip;
	char *spec = s->res->link, quad[16];
	size_t len = sizeof(s->res->link);

	if (cfg->link) {
		snprintf(spec, len, "%s", cfg->link);
		return gpunic_ep_link_open("gpunic perf", cfg->link, ip,
					   cfg->mac_set ? cfg->mac : NULL, cfg->timeout_ms, link,
					   &s->addr);
	}
	gpunic_ipv4_str(ip, quad);
	snprintf(spec, len, "udp:%s", quad);
	if (cfg->host && !cfg->ip && s->oob.local_ip == s->oob.peer_ip &&
	    same_host_spec(&ip, spec, len))
		snprintf(spec, len, "udp:%s", quad);
	return gpunic_ep_link_open("gpunic perf", spec, ip, cfg->mac_set ? cfg->mac : NULL,
				   cfg->timeout_ms, link, &s->addr);
}

static int open_nic(struct perf_side *s)
{
	const struct perf_cfg *cfg = s->cfg;
	struct gpunic_nic_attr na = { 0 };
	struct gpunic_mem_attr ma = { .cuda_device = cfg->gpu };
	struct gpunic_link *link;
	enum gpunic_mtu max;
	int err;

	if (cfg->gpu_exec) {
		s->mem = gpunic_mem_open(&ma);
		if (!s->mem) {
			err = errno;
			PERF_ERR("memory context for GPU %d: %s\n", cfg->gpu, strerror(err));
			return err;
		}
	}
	err = open_link(s, &link);
	if (err)
		return err;
	max = gpunic_link_path_mtu(link);
	s->mtu = cfg->mtu ? (enum gpunic_mtu)cfg->mtu : max;
	if (s->mtu > max) {
		PERF_ERR("path MTU %u does not fit the link's %u-byte frames (at most %u)\n",
			 gpunic_mtu_bytes(s->mtu), link->mtu, gpunic_mtu_bytes(max));
		gpunic_link_close(link);
		return EINVAL;
	}
	na.link = link;
	gpunic_ep_nic_attr(&na, &s->addr);
	na.executor = cfg->gpu_exec ? GPUNIC_EXECUTOR_GPU : GPUNIC_EXECUTOR_CPU;
	na.mem = s->mem;
	s->nic = gpunic_nic_open(&na);
	if (!s->nic) {
		err = errno;
		PERF_ERR("cannot open the NIC: %s\n", strerror(err));
		gpunic_link_close(link);
		return err;
	}
	return 0;
}

static int create_qp(struct perf_side *s, size_t lbytes, size_t rbytes)
{
	const struct perf_cfg *cfg = s->cfg;
	struct gpunic_qp_init_attr ia = {
		.qp_type = cfg->qp_type,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = cfg->inline_size,
		.handler_mode = cfg->handler,
	};
	uint32_t sq = cfg->test == GPUNIC_PERF_PUT_BW ? PERF_SQ_PUT : cfg->tx_depth;
	int err;

	s->pd = gpunic_pd_alloc(s->nic);
	s->scq = gpunic_cq_create(s->nic, 2 * sq);
	s->rcq = gpunic_cq_create(s->nic, 2 * PERF_BW_RX_MAX);
	if (!s->pd || !s->scq || !s->rcq) {
		err = errno ? errno : ENOMEM;
		PERF_ERR("PD/CQ: %s\n", strerror(err));
		return err;
	}
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.max_send_wr = sq;
	/* send_lat: a ring of exactly its receives, which are then reposted without a write
	 * (gpunic_perf_post_recv) */
	ia.max_recv_wr = cfg->test == GPUNIC_PERF_SEND_LAT ? PERF_LAT_RX_DEPTH : PERF_BW_RX_MAX;
	s->qp = gpunic_qp_create(s->pd, &ia);
	if (!s->qp) {
		err = errno;
		PERF_ERR("QP: %s\n", strerror(err));
		return err;
	}
	err = gpunic_ep_qp_init("gpunic perf", s->qp, GPUNIC_ACCESS_REMOTE_WRITE |
				GPUNIC_ACCESS_REMOTE_READ | GPUNIC_ACCESS_REMOTE_ATOMIC);
	if (err)
		return err;
	s->lbuf_bytes = (lbytes + 4095) & ~(size_t)4095;
	s->rbuf_bytes = (rbytes + 4095) & ~(size_t)4095;
	err = buf_alloc(s, &s->data, s->lbuf_bytes + s->rbuf_bytes);
	if (err)
		return err;
	s->mr = gpunic_mr_reg(s->pd, s->data.cpu, s->data.bytes,
			      GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
				      GPUNIC_ACCESS_REMOTE_READ | GPUNIC_ACCESS_REMOTE_ATOMIC);
	if (!s->mr) {
		err = errno;
		PERF_ERR("memory registration: %s\n", strerror(err));
		return err;
	}
	err = gpunic_qp_export(s->qp, &s->dq);
	if (!err && gpunic_dev_qp_check(&s->dq))
		err = EINVAL;
	if (err) {
		PERF_ERR("QP export: %s\n", strerror(err));
		return err;
	}
	if (cfg->psn_set)
		s->psn = cfg->psn & GPUNIC_PSN_MASK;
	else
		s->psn = (uint32_t)((timing_now_ns() ^ (uint64_t)getpid() << 16) * 2654435761u) &
			 GPUNIC_PSN_MASK;
	memset(&s->me, 0, sizeof(s->me));
	s->me.out_reads = 16;	/* our max_dest_rd_atomic: the peer's initiator depth */
	s->me.qpn = s->qp->qp_num;
	s->me.psn = s->psn;
	s->me.rkey = s->mr->rkey;
	s->me.vaddr = (uint64_t)(uintptr_t)(s->data.cpu + s->lbuf_bytes);
	gpunic_gid_from_ipv4(s->addr.ip, s->me.gid);
	return 0;
}

static int connect_qp(struct perf_side *s)
{
	const struct perf_cfg *cfg = s->cfg;
	struct gpunic_ep_peer peer = { .qpn = s->peer.qpn, .psn = s->peer.psn };
	struct gpunic_ep_conn c = {
		.mtu = s->mtu,
		.sq_psn = s->psn,
		.rc = cfg->qp_type == GPUNIC_QPT_RC,
		.timeout = PERF_QP_TIMEOUT,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = PERF_MIN_RNR_TIMER,
		.max_dest_rd_atomic = 16,
		.max_rd_atomic = (uint8_t)(s->peer.out_reads == 0 ? 1 :
					   s->peer.out_reads > 16 ? 16 : s->peer.out_reads),
	};

	if (gpunic_gid_to_ipv4(s->peer.gid, &peer.ip)) {
		PERF_ERR("the peer's GID is not an IPv4-mapped RoCEv2 GID (use an IPv4 GID "
			 "index on the peer, e.g. perftest -x 1)\n");
		return EPROTO;
	}
	s->res->remote_ip = peer.ip;
	s->res->remote_qpn = s->peer.qpn;
	if (s->oob.peer.gpunic)
		memcpy(peer.mac, s->oob.peer.mac, 6);
	else if (cfg->peer_mac_set)
		memcpy(peer.mac, cfg->peer_mac, 6);
	else
		gpunic_mac_from_ipv4(peer.ip, peer.mac);
	peer.udp_port = s->oob.peer.gpunic ? s->oob.peer.udp_port : 0;
	return gpunic_ep_qp_connect("gpunic perf", s->qp, &s->addr, &peer, &c);
}

/* GPUNIC_PERF_DEBUG=1: the QP's and NIC's counters on stderr at the end. */
static void dump_counters(struct perf_side *s)
{
	struct gpunic_qp_counters qc;
	struct gpunic_nic_counters nc;
	const char *env = getenv("GPUNIC_PERF_DEBUG");

	if (!env || strcmp(env, "1") || !s->qp || gpunic_qp_query_counters(s->qp, &qc) ||
	    gpunic_nic_query_counters(s->nic, &nc))
		return;
	fprintf(stderr, "gpunic perf: qp tx %" PRIu64 " pkts %" PRIu64 " msgs, rx %" PRIu64
		" pkts %" PRIu64 " msgs, retransmits %" PRIu64 " timeouts %" PRIu64
		" naks %" PRIu64 "/%" PRIu64 " rnr %" PRIu64 "/%" PRIu64 ", nic rx %" PRIu64
		" tx %" PRIu64 " busy %" PRIu64, qc.tx_packets, qc.tx_messages, qc.rx_packets,
		qc.rx_messages, qc.retransmits, qc.timeouts, qc.naks_sent, qc.naks_received,
		qc.rnr_naks_sent, qc.rnr_naks_received, nc.rx_frames, nc.tx_frames, nc.tx_busy);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (nc.drops[i])
			fprintf(stderr, " %s=%" PRIu64, gpunic_drop_reason_name(i), nc.drops[i]);
	if (!s->cfg->gpu_exec && s->dq.state)
		fprintf(stderr, " sq reserved %u ready %u submitted %u completed %u",
			s->dq.state->sq_reserved, s->dq.state->sq_ready,
			s->dq.state->sq_submitted, s->dq.state->sq_completed);
	fprintf(stderr, "\n");
}

static void side_close(struct perf_side *s)
{
	if (s->nic)
		dump_counters(s);
	if (s->engine_running)
		gpunic_nic_stop(s->nic);
	s->engine_running = false;
	if (s->nic)
		gpunic_nic_close(s->nic);
	s->nic = NULL;
	buf_free(s, &s->data);
	buf_free(s, &s->ctl);
	buf_free(s, &s->t_post);
	buf_free(s, &s->t_done);
	if (s->mem)
		gpunic_mem_close(s->mem);
	s->mem = NULL;
	gpunic_perftest_close_fd(&s->oob);
	if (s->lfd >= 0)
		close(s->lfd);
	s->lfd = -1;
}

/* ---------------------------------------------------------------- executor */

static bool side_runs(const struct perf_cfg *cfg)
{
	bool client = cfg->host != NULL;

	switch (cfg->test) {
	case GPUNIC_PERF_WRITE_LAT:
	case GPUNIC_PERF_SEND_LAT:
	case GPUNIC_PERF_SEND_BW:
		return true;
	default:
		return client;
	}
}

static void *exec_thread(void *arg)
{
	struct perf_side *s = arg;
	uint32_t tid = __atomic_fetch_add(&s->nthr, 1, __ATOMIC_SEQ_CST);

	gpunic_perf_exec(&s->ctx, tid);
	return NULL;
}

static struct gpunic_perf_ctl *ctl_host(struct perf_side *s)
{
	return (struct gpunic_perf_ctl *)(void *)s->ctl.cpu;
}

static uint32_t ctl_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void ctl_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static int exec_finish(struct perf_side *s, bool go, struct gpunic_perf_ctx *fin);
static uint32_t atomic_step(const struct perf_side *s);
static void size_done(struct perf_side *s, unsigned i);

/* Start the executor for one size: it primes and raises ready. On failure nothing runs. */
static int exec_start(struct perf_side *s, uint32_t size, uint32_t slots)
{
	const struct perf_cfg *cfg = s->cfg;
	struct gpunic_perf_ctx *c = &s->ctx;
	struct gpunic_perf_ctl *ctl = ctl_host(s);
	struct gpunic_perf_ctx fin;
	uint64_t t0;
	int err = 0;

	memset(ctl, 0, sizeof(*ctl));
	memset(c, 0, sizeof(*c));
	c->qp = &s->dq;
	c->ctl = (struct gpunic_perf_ctl *)(void *)s->ctl.exec;
	c->test = cfg->test;
	/* the side that sends first; in perftest's run_iter_lat_write that is the server (the
	 * client polls first), everywhere else the client */
	c->client = (cfg->host != NULL) != (cfg->test == GPUNIC_PERF_WRITE_LAT);
	c->size = size;
	c->iters = cfg->iters;
	c->slots = slots;
	c->tx_depth = cfg->tx_depth;
	c->rx_depth = rx_depth_for(cfg, size);
	c->verify = s->oob.peer.gpunic;
	c->nthreads = s->nthreads;
	c->checkers = s->checkers;
	c->lkey = s->mr->lkey;
	c->rkey = s->peer.rkey;
	c->lbuf = s->data.exec;
	c->lbuf_iova = (uint64_t)(uintptr_t)s->data.cpu;
	c->rbuf = s->data.exec + s->lbuf_bytes;
	c->rbuf_iova = (uint64_t)(uintptr_t)(s->data.cpu + s->lbuf_bytes);
	c->remote_va = s->peer.vaddr;
	c->atomic_op = cfg->atomic_cas ? MLX5_OPCODE_ATOMIC_CS : MLX5_OPCODE_ATOMIC_FA;
	c->atomic_step = atomic_step(s);
	c->atomic_res_slots = (uint32_t)(s->lbuf_bytes / 8);
	c->profile = cfg->profile;
	c->t_post = (uint64_t *)(void *)s->t_post.exec;
	c->t_done = (uint64_t *)(void *)s->t_done.exec;
	s->nthr = 0;
	if (cfg->gpu_exec) {
		err = gpunic_gpu_perf_launch(cfg->gpu, c, s->nthreads, &s->kernel);
		if (err) {
			PERF_ERR("launching the perf kernel: %s\n", strerror(err));
			s->kernel = NULL;
			return err;
		}
	} else {
		for (uint32_t t = 0; t < s->nthreads; t++) {
			int cpu = cfg->exec_cpu < 0 ? -1 : cfg->exec_cpu + (int)t;

			err = timing_thread_start(&s->thr[t], "gpunic-perf", cpu, exec_thread, s);
			if (err) {
				PERF_ERR("starting executor thread %u: %s\n", t, strerror(err));
				ctl_store(&ctl->stop, 1);
				for (uint32_t u = 0; u < t; u++)
					pthread_join(s->thr[u], NULL);
				return err;
			}
		}
	}
	t0 = timing_now_ns();
	while (!ctl_load(&ctl->ready)) {
		if (timing_now_ns() - t0 > PERF_READY_WAIT_MS * 1000000ull) {
			PERF_ERR("the executor did not come up within %d ms\n", PERF_READY_WAIT_MS);
			exec_finish(s, false, &fin);
			return ETIMEDOUT;
		}
		sleep_us(50);
	}
	return 0;
}

/* Let the executor run, watch its progress, collect what it left. */
static int exec_finish(struct perf_side *s, bool go, struct gpunic_perf_ctx *fin)
{
	const struct perf_cfg *cfg = s->cfg;
	struct gpunic_perf_ctl *ctl = ctl_host(s);
	uint64_t last_change = timing_now_ns();
	uint32_t last = 0, p;
	int err = 0;

	if (go)
		ctl_store(&ctl->go, 1);
	else
		ctl_store(&ctl->stop, 1);
	while (ctl_load(&ctl->done) < s->nthreads) {
		p = ctl_load(&ctl->progress);
		if (p != last) {
			last = p;
			last_change = timing_now_ns();
		} else if (!ctl_load(&ctl->stop) &&
			   timing_now_ns() - last_change > (uint64_t)cfg->timeout_ms * 1000000ull) {
			PERF_ERR("no progress for %d ms (%u of %u done): stopping\n",
				 cfg->timeout_ms, p, cfg->iters);
			ctl_store(&ctl->stop, 1);
		}
		sleep_us(200);
	}
	if (cfg->gpu_exec) {
		err = gpunic_gpu_perf_wait(s->kernel, fin);
		s->kernel = NULL;
	} else {
		for (uint32_t t = 0; t < s->nthreads; t++)
			pthread_join(s->thr[t], NULL);
		*fin = s->ctx;
	}
	return err;
}

/* ---------------------------------------------------------------- numbers */

static int lat_numbers(struct perf_side *s, struct perf_size_result *r)
{
	const uint64_t *t = (const uint64_t *)(void *)s->t_post.cpu;
	uint32_t n = s->cfg->iters, m = n > 1 ? n - 1 : 1;
	unsigned factor = s->cfg->test == GPUNIC_PERF_READ_LAT ||
			  s->cfg->test == GPUNIC_PERF_ATOMIC_LAT ? 1 : 2;
	uint64_t *d = malloc(sizeof(*d) * m);

	if (!d)
		return ENOMEM;
	/* perftest: the time between consecutive posts; a round trip for SEND and WRITE, so
	 * halved, and one READ (one atomic) for READ (atomics) */
	for (uint32_t i = 0; i < m; i++)
		d[i] = (t[i + 1] - t[i]) / factor;
	if (s->cfg->keep_samples) {
		r->samples = malloc(sizeof(*d) * m);
		if (!r->samples) {
			free(d);
			return ENOMEM;
		}
		memcpy(r->samples, d, sizeof(*d) * m);
		r->nsamples = m;
	}
	stats_sort_ns(d, m);
	stats_summarize_sorted(d, m, NULL, &r->sum);
	r->sum.count = n;
	free(d);
	r->measured = true;
	return 0;
}

static void bw_numbers(struct perf_side *s, struct perf_size_result *r, uint32_t size)
{
	const uint64_t *done = (const uint64_t *)(void *)s->t_done.cpu;
	const uint64_t *post = (const uint64_t *)(void *)s->t_post.cpu;
	uint64_t n = s->cfg->iters, start, msgs, pk_msgs = 0, pk_ns = 0;
	size_t window;

	if (s->cfg->test == GPUNIC_PERF_SEND_BW && !s->cfg->host && n > 1) {
		start = done[0];	/* the receiver: from the first arrival */
		msgs = n - 1;
	} else {
		start = post[0];
		msgs = n;
	}
	/* the peak: the best stretch of at least one full pipeline (tx_depth completions) or a
	 * tenth of the run; completions polled in one burst would make shorter ones meaningless */
	window = n / 10 > s->cfg->tx_depth ? n / 10 : s->cfg->tx_depth;
	if (window >= n)
		window = n > 1 ? n - 1 : 1;
	if (window < n && stats_bw_best_window(done, n, window, &pk_msgs, &pk_ns))
		pk_ns = 0;
	if (stats_bw_compute(&r->bw, size, msgs, done[n - 1] > start ? done[n - 1] - start : 1,
			     pk_msgs, pk_ns))
		memset(&r->bw, 0, sizeof(r->bw));
	r->bw.iters = n;
	r->measured = true;
}

/* ---------------------------------------------------------------- steps */

static int pre_handshakes(enum gpunic_perf_test t)
{
	return (t == GPUNIC_PERF_WRITE_LAT || t == GPUNIC_PERF_READ_LAT ||
		t == GPUNIC_PERF_ATOMIC_LAT) ? 4 : 3;
}

static bool per_size_sync(enum gpunic_perf_test t)
{
	return t == GPUNIC_PERF_SEND_LAT || t == GPUNIC_PERF_SEND_BW;
}

static int hs(struct perf_side *s)
{
	struct gpunic_perftest_dest theirs;

	return gpunic_perftest_hand_shake(&s->oob, &s->me, &theirs);
}

/* Fill what this side sends or serves for @size: the pattern (gpunic peers check it). */
static void fill_payload(struct perf_side *s, uint32_t size, uint32_t slots)
{
	const struct perf_cfg *cfg = s->cfg;
	bool client = cfg->host != NULL;
	uint8_t *l = s->data.cpu;

	if (perf_test_is_lat(cfg->test) || perf_test_is_atomic(cfg->test))
		return;
	if (client && cfg->test != GPUNIC_PERF_READ_BW) {
		for (uint32_t k = 0; k < slots; k++)
			gpunic_perf_fill(l + (size_t)k * size, size, k, 0);
	} else if (client) {
		memset(l, 0, (size_t)slots * size);
	}
}

/*
 * Payload slots for @size: message i uses slot i % slots, locally and at the peer's vaddr.
 * A gpunic peer: perf_slots (each slot's pattern is checked). A perftest peer (its buffer is
 * one cycle buffer per side): perftest's run_iter_bw moves its addresses on by the size rounded
 * up to a cache line and back to the start every cycle_buffer / that step messages, and only
 * while the size is at most half the cycle buffer; larger messages all go to vaddr. We cycle
 * through as many slots, so the peer's buffer is never overrun (the addresses match perftest's
 * exactly when the size is a multiple of the cache line). Latency tests: one slot, as perftest.
 * atomic_bw cycles through perftest's targets whatever the peer, so that a gpunic server knows
 * what each target must hold at the end (atomic_server_verify).
 */
static uint32_t msg_slots(const struct perf_side *s, uint32_t size)
{
	uint32_t cyc = s->oob.cycle_buffer ? s->oob.cycle_buffer : 4096;
	uint32_t cl = s->oob.cache_line ? s->oob.cache_line : 64;
	uint32_t step;

	if (perf_test_is_lat(s->cfg->test))
		return 1;
	if (s->oob.peer.gpunic && !perf_test_is_atomic(s->cfg->test))
		return perf_slots(size, s->cfg->iters);
	if (!size || size > cyc / 2)
		return 1;
	step = (size + cl - 1) / cl * cl;
	if (perf_test_is_atomic(s->cfg->test) && cyc / step > GPUNIC_PERF_ATOMIC_MAX_SLOTS)
		return GPUNIC_PERF_ATOMIC_MAX_SLOTS;
	return cyc / step ? cyc / step : 1;
}

/* Bytes between two atomic targets: the size rounded up to the cache line (perftest's INC). */
static uint32_t atomic_step(const struct perf_side *s)
{
	uint32_t cl = s->oob.cache_line ? s->oob.cache_line : 64;

	return (8 + cl - 1) / cl * cl;
}

static int run_size(struct perf_side *s, uint32_t size, struct perf_size_result *r)
{
	const struct perf_cfg *cfg = s->cfg;
	uint32_t slots = msg_slots(s, size);
	struct gpunic_perf_ctx fin;
	bool runs = side_runs(cfg);
	int err = 0, e;

	r->bytes = size;
	r->iters = cfg->iters;
	r->lat = perf_test_is_lat(cfg->test);
	/* write_lat polls bytes that start at 0: the buffers are zeroed once, and each size's
	 * last byte lies beyond every smaller size's message (no reset: the peer may already be
	 * writing the next size) */
	if (cfg->host || cfg->test == GPUNIC_PERF_SEND_BW)
		fill_payload(s, size, slots);
	if (runs) {
		err = exec_start(s, size, slots);
		if (err)
			return err;
	}
	if (per_size_sync(cfg->test)) {
		/* this handshake lets the peer start sending: a receiving server (send_lat,
		 * send_bw) is at RTR with its receives posted, and polls from here on, as
		 * perftest's does (its first move is a receive, so starting early is harmless) */
		if (runs && !cfg->host)
			ctl_store(&ctl_host(s)->go, 1);
		err = hs(s);
		if (err) {
			if (runs)
				exec_finish(s, false, &fin);
			return err;
		}
	}
	if (!runs)
		return 0;
	e = exec_finish(s, true, &fin);
	if (e)
		return e;
	if (fin.err) {
		if (fin.err == -EIO)
			PERF_ERR("%s, %u bytes: error completion: %s (syndrome 0x%x) after %"
				 PRIu64 " of %u\n", perf_test_name(cfg->test), size,
				 gpunic_syndrome_str((uint8_t)fin.syndrome), fin.syndrome,
				 fin.completed, cfg->iters);
		else
			PERF_ERR("%s, %u bytes: stopped after %" PRIu64 " of %u operations: %s\n",
				 perf_test_name(cfg->test), size, fin.completed, cfg->iters,
				 strerror(-fin.err));
		return fin.err == -ETIMEDOUT ? ETIMEDOUT : EIO;
	}
	if (fin.verified) {
		struct perf_result *res = s->res;

		res->verify_ran = true;
		if (fin.bad && !res->bad) {
			res->bad_msg = fin.bad_msg;
			res->bad_off = fin.bad_off;
			res->bad_byte = fin.bad_byte;
			res->want_byte = fin.want_byte;
			res->atomic_got = fin.atomic_got;
			res->atomic_want = fin.atomic_want;
		}
		res->verified += fin.verified;
		res->bad += fin.bad;
		res->ring_messages += cfg->iters;
	}
	if (r->lat) {
		r->prof = fin.prof;
		return lat_numbers(s, r);
	}
	if (cfg->host || cfg->test == GPUNIC_PERF_SEND_BW)
		bw_numbers(s, r, size);
	return 0;
}

/* write_bw / put_bw server, once the client is done: the final bytes of every ring slot. */
static void server_verify(struct perf_side *s, uint32_t size)
{
	const struct perf_cfg *cfg = s->cfg;
	uint32_t slots = perf_slots(size, cfg->iters);
	struct perf_result *res = s->res;
	int tries = 0;

	for (;;) {
		res->verified = 0;
		res->bad = 0;
		perf_verify_ring(s->data.cpu + s->lbuf_bytes, size, slots, res);
		/* UC: a WRITE completes at the sender when it leaves, so the last ones may still
		 * be on the wire when the handshake arrives; give them a moment */
		if (!res->bad || cfg->qp_type != GPUNIC_QPT_UC || ++tries > PERF_UC_SETTLE_TRIES)
			break;
		sleep_us(10000);
	}
	res->verify_ran = true;
	res->ring_messages = cfg->iters;
}

/*
 * An atomic server once the client is done: what its targets hold, against the atomics its QP
 * executed (the softnic counts them). A gpunic client's targets started at 0 and each visit
 * added one (CMP_AND_SWAP included, msg_slots and perf_dev.h): target k holds exactly the
 * number of operations i < iters with i % slots == k, and nothing else moved. A perftest client
 * (its warm-up included) adds 1 per FETCH_AND_ADD, so the targets sum to the atomics executed;
 * its CMP_AND_SWAP values are its own, so only the count and the area are checked.
 */
static void atomic_server_verify(struct perf_side *s)
{
	const struct perf_cfg *cfg = s->cfg;
	const uint64_t *w = (const uint64_t *)(const void *)(s->data.cpu + s->lbuf_bytes);
	uint32_t slots = msg_slots(s, 8), step = atomic_step(s) / 8;
	size_t nw = s->rbuf_bytes / 8, last = perf_test_is_lat(cfg->test) ? 1 :
					       (size_t)slots * step;
	struct perf_result *res = s->res;
	struct gpunic_qp_counters qc;
	uint64_t sum = 0, want, n = 0;

	res->verify_ran = true;
	res->atomic_server = true;
	if (gpunic_qp_query_counters(s->qp, &qc)) {
		res->bad++;
		return;
	}
	res->atomic_executed = qc.atomics_executed;
	for (size_t k = 0; k < nw; k++) {
		sum += w[k];
		want = 0;
		if (s->oob.peer.gpunic && k < last && k % step == 0) {
			uint32_t t = (uint32_t)(k / step);

			want = cfg->iters / slots + (t < cfg->iters % slots);
			n++;
		}
		/* a perftest client's targets: only the FETCH_AND_ADD sum can be known */
		if (!s->oob.peer.gpunic && (k < last || w[k] == 0))
			continue;
		if (w[k] != want) {
			if (!res->bad) {
				res->bad_msg = k;
				res->bad_off = k * 8;
				res->atomic_got = w[k];
				res->atomic_want = want;
			}
			res->bad++;
		}
	}
	res->atomic_sum = sum;
	res->verified = s->oob.peer.gpunic ? n : 1;
	res->ring_messages = 0;
	/* every operation executed once (a perftest client may add its warm-up) */
	if (s->oob.peer.gpunic ? qc.atomics_executed != cfg->iters :
				 qc.atomics_executed < cfg->iters ||
				 (!cfg->atomic_cas && sum != qc.atomics_executed)) {
		if (!res->bad) {
			res->bad_msg = UINT64_MAX;
			res->atomic_got = cfg->atomic_cas ? qc.atomics_executed : sum;
			res->atomic_want = cfg->atomic_cas ? cfg->iters : qc.atomics_executed;
		}
		res->bad++;
	}
}

static int end_steps(struct perf_side *s, uint32_t last_size)
{
	const struct perf_cfg *cfg = s->cfg;
	struct perf_result *res = s->res;
	struct gpunic_perftest_bw mine = { 0 }, theirs;
	int err;

	switch (cfg->test) {
	case GPUNIC_PERF_WRITE_LAT:
		gpunic_perftest_close_fd(&s->oob);
		return 0;
	case GPUNIC_PERF_ATOMIC_LAT:
		/* the client's close comes once its atomics are all done */
		err = gpunic_perftest_finish(&s->oob, &s->me);
		if (!err && !cfg->host)
			atomic_server_verify(s);
		return err;
	case GPUNIC_PERF_SEND_LAT:
	case GPUNIC_PERF_READ_LAT:
	case GPUNIC_PERF_SEND_BW:
		return gpunic_perftest_finish(&s->oob, &s->me);
	default:
		break;
	}
	err = hs(s);
	if (err)
		return err;
	if (cfg->host && res->n) {
		const struct stats_bw *bw = &res->r[res->n - 1].bw;

		mine.size = bw->msg_bytes;
		mine.iters = bw->iters;
		mine.bw_peak = bw->peak_mb_s;
		mine.bw_avg = bw->avg_mb_s;
		mine.msg_rate = bw->msg_rate_mpps;
	}
	err = gpunic_perftest_bw_reports(&s->oob, &mine, &theirs);
	if (err)
		return err;
	if (!cfg->host) {
		/* the server shows the client's numbers, as perftest's does */
		struct perf_size_result *r = &res->r[res->n - 1];

		r->bw.msg_bytes = theirs.size;
		r->bw.iters = theirs.iters;
		r->bw.peak_mb_s = theirs.bw_peak;
		r->bw.avg_mb_s = theirs.bw_avg;
		r->bw.msg_rate_mpps = theirs.msg_rate;
		r->measured = true;
		r->remote = true;
		size_done(s, res->n - 1);
		if (cfg->test == GPUNIC_PERF_ATOMIC_BW) {
			atomic_server_verify(s);
		} else if (cfg->test != GPUNIC_PERF_READ_BW) {
			if (s->oob.peer.gpunic)
				server_verify(s, last_size);
			else
				res->verify_skipped = true;
		}
	}
	return gpunic_perftest_finish(&s->oob, &s->me);
}

static int alloc_side_bufs(struct perf_side *s, const uint32_t *sizes, unsigned n,
			   size_t *lbytes, size_t *rbytes)
{
	const struct perf_cfg *cfg = s->cfg;
	size_t l = 0, r = PERF_MIN_RBUF;
	int err;

	/* a perftest peer's slots (msg_slots) span at most its cycle buffer */
	if (!perf_test_is_lat(cfg->test))
		l = GPUNIC_PERFTEST_MAX_CYCLE;
	for (unsigned i = 0; i < n; i++) {
		uint32_t sz = sizes[i];
		uint32_t slots = perf_test_is_lat(cfg->test) ? 1 : perf_slots(sz, cfg->iters);
		uint32_t rx = rx_depth_for(cfg, sz);
		size_t need_l = (size_t)slots * sz;
		size_t need_r = (size_t)(slots > rx ? slots : rx) * sz;

		l = need_l > l ? need_l : l;
		r = need_r > r ? need_r : r;
	}
	*lbytes = l;
	*rbytes = r;
	err = buf_alloc(s, &s->ctl, sizeof(struct gpunic_perf_ctl));
	if (!err)
		err = buf_alloc(s, &s->t_post, sizeof(uint64_t) * ((size_t)cfg->iters + 1));
	if (!err)
		err = buf_alloc(s, &s->t_done, sizeof(uint64_t) * ((size_t)cfg->iters + 1));
	return err;
}

/* The side that checks each message as it arrives (gpunic_perf_checks_each()). */
static bool perf_side_checks_each(const struct perf_cfg *cfg)
{
	return (cfg->test == GPUNIC_PERF_SEND_BW && !cfg->host) ||
	       (cfg->test == GPUNIC_PERF_READ_BW && cfg->host);
}

/* The side that receives the payload of a bandwidth test and checks it. */
static bool perf_side_verifies(const struct perf_cfg *cfg)
{
	switch (cfg->test) {
	case GPUNIC_PERF_READ_BW:
		return cfg->host != NULL;
	case GPUNIC_PERF_SEND_BW:
	case GPUNIC_PERF_WRITE_BW:
	case GPUNIC_PERF_PUT_BW:
		return cfg->host == NULL;
	default:
		return false;
	}
}

void perf_result_release(struct perf_result *res)
{
	for (unsigned i = 0; i < PERF_MAX_RESULTS; i++) {
		free(res->r[i].samples);
		res->r[i].samples = NULL;
		res->r[i].nsamples = 0;
	}
}

/* Tell the caller a size's numbers are in (a passive side has none to tell). */
static void size_done(struct perf_side *s, unsigned i)
{
	const struct perf_hooks *h = s->cfg->hooks;

	if (h && h->size_done && s->res->r[i].measured)
		h->size_done(h->arg, s->cfg, s->res, i);
}

/*
 * Whether the connection on @fd opens with a perftest version message (a NUL-terminated
 * number, at least the oldest perftest we speak with) within @ms: looked at with MSG_PEEK, so
 * the prologue still reads it. Return: 0, or why not (EPROTO: garbage, ETIMEDOUT: silence,
 * ECONNRESET: closed before 16 bytes).
 */
static int peek_version(int fd, int ms)
{
	char v[GPUNIC_PERFTEST_VERSION_BYTES];
	uint64_t deadline = gpunic_ep_deadline(ms);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t len;
	ssize_t n;

	for (;;) {
		n = recv(fd, v, sizeof(v), MSG_PEEK);
		if (n == (ssize_t)sizeof(v))
			break;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return ECONNRESET;
		if (!gpunic_ep_ms_left(deadline, 1))
			return ETIMEDOUT;
		/* part of it: let the rest come (poll would answer at once) */
		if (n > 0)
			sleep_us(1000);
		else
			poll(&p, 1, gpunic_ep_ms_left(deadline, 1));
	}
	len = strnlen(v, sizeof(v));
	if (!len || len == sizeof(v) || strspn(v, "0123456789.") != len ||
	    atof(v) < GPUNIC_PERFTEST_MIN_PEER_VERSION)
		return EPROTO;
	return 0;
}

/* Has the peer closed its side of the out-of-band connection (ended, or killed)? */
static bool peer_gone(const struct perf_side *s)
{
	struct pollfd p = { .fd = s->oob.fd, .events = POLLIN | POLLRDHUP };
	char b;

	if (s->oob.fd < 0 || poll(&p, 1, 0) != 1)
		return false;
	if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return true;
	return recv(s->oob.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Server: the next client, within what is left of the wait for one (cfg->accept_ms: 0, until
 * one comes). The exchange with it then has --timeout for each wait. */
static int take_client(struct perf_side *s)
{
	int err;

	if (s->accept_deadline && !gpunic_ep_ms_left(s->accept_deadline, 0))
		return ETIMEDOUT;
	err = gpunic_perftest_serve(&s->oob, "gpunic perf", s->lfd,
				    gpunic_ep_ms_left(s->accept_deadline, 0));
	s->oob.timeout_ms = s->cfg->timeout_ms;
	return err;
}

/*
 * Server: the UDP port its link will bind, checked before it listens, where the address is
 * known by then (--ip, a --oob-bind address, a udp --link). Found taken once a client was in,
 * it could only end the exchange, which the client saw as a closed connection; now the server
 * fails at once, naming the port and, where it can see it, the holder.
 */
static int check_udp_port(const struct perf_cfg *cfg)
{
	uint32_t ip = cfg->ip;
	uint16_t port = GPUNIC_ROCE_UDP_PORT;
	char quad[16], holder[128];
	int err;

	if (cfg->link) {
		if (strncmp(cfg->link, "udp:", 4) || gpunic_parse_ipv4_port(cfg->link + 4, &ip, &port))
			return 0;
	} else if (!ip && (!cfg->oob_bind || gpunic_parse_ipv4(cfg->oob_bind, &ip) || !ip)) {
		return 0;	/* the client's connection says the address */
	}
	err = perf_port_free(SOCK_DGRAM, ip, &port);
	if (err != EADDRINUSE)
		return 0;	/* anything else the link says itself */
	gpunic_ipv4_str(ip, quad);
	if (gpunic_ep_udp_holder(ip, port, holder, sizeof(holder)))
		snprintf(holder, sizeof(holder), "another socket");
	PERF_ERR("UDP %s:%u, where this server's link receives, is in use by %s: stop it, or "
		 "give --ip another address\n", quad, port, holder);
	return err;
}

/* Server: listen on --oob-bind, say so, take the first client. */
static int serve(struct perf_side *s)
{
	const struct perf_cfg *cfg = s->cfg;
	int err;

	err = check_udp_port(cfg);
	if (err)
		return err;
	err = gpunic_tcp_listen(cfg->oob_bind, cfg->oob_port, &s->lfd);
	if (err) {
		s->lfd = -1;
		PERF_ERR("cannot listen on TCP %s:%u: %s\n", cfg->oob_bind ? cfg->oob_bind :
			 "0.0.0.0", cfg->oob_port, strerror(err));
		return err;
	}
	if (cfg->hooks && cfg->hooks->waiting)
		cfg->hooks->waiting(cfg->hooks->arg, cfg);
	s->accept_deadline = gpunic_ep_deadline(cfg->accept_ms);
	return take_client(s);
}

/*
 * Server, its NIC open (a client on a shm cable waits for it before it speaks): keep the first
 * client that speaks perftest's exchange. A connection that sends garbage, or nothing within
 * PERF_FIRST_MSG_MS, is dropped with a line and the next one taken until --timeout: a stray or
 * hostile connection neither ends the run nor learns anything (the server reads first).
 */
static int serve_check(struct perf_side *s)
{
	const struct perf_cfg *cfg = s->cfg;
	char quad[16];
	int left, err;

	for (;;) {
		left = gpunic_ep_ms_left(s->accept_deadline, PERF_FIRST_MSG_MS);
		err = peek_version(s->oob.fd, left < PERF_FIRST_MSG_MS ? left : PERF_FIRST_MSG_MS);
		if (!err)
			break;
		gpunic_ipv4_str(s->oob.peer_ip, quad);
		PERF_ERR("dropped a connection from %s: %s; still waiting\n", quad,
			 err == EPROTO ? "not perftest's exchange" :
			 err == ETIMEDOUT ? "it sent nothing" : "it closed");
		gpunic_perftest_close_fd(&s->oob);
		err = take_client(s);
		if (err)
			return err;
		/* the NIC took the first connection's address; a wildcard listener may differ */
		if (!cfg->ip && !cfg->link && s->oob.local_ip != s->addr.ip) {
			gpunic_ipv4_str(s->oob.local_ip, quad);
			PERF_ERR("the client came in on %s, not the address the NIC runs on: give "
				 "--ip or --oob-bind\n", quad);
			return EADDRNOTAVAIL;
		}
	}
	close(s->lfd);
	s->lfd = -1;
	return 0;
}

static int check_gpu(struct perf_side *s)
{
	struct gpunic_gpu_info info;
	int err = gpunic_gpu_probe(s->cfg->gpu, &info);

	if (err || !info.present) {
		PERF_ERR("--executor gpu needs a GPU, and there is none: %s\n",
			 info.reason[0] ? info.reason : strerror(err ? err : ENODEV));
		return ENODEV;
	}
	snprintf(s->res->gpu_name, sizeof(s->res->gpu_name), "%s", info.name);
	return 0;
}

int perf_run(const struct perf_cfg *cfg, struct perf_result *res)
{
	static const char *const handler_names[] = { "auto", "gpu-db", "cpu-proxy", "gpu-bf" };
	struct perf_side *s;
	uint32_t sizes[PERF_MAX_RESULTS];
	unsigned nsizes = run_sizes(cfg, sizes);
	struct gpunic_perftest_ext ext = { 0 };
	size_t lbytes, rbytes;
	int err, agreed, i;

	memset(res, 0, sizeof(*res));
	res->executor = cfg->gpu_exec ? "gpu" : "cpu";
	if (timing_init())
		return EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ENOMEM;
	s->cfg = cfg;
	s->res = res;
	s->oob.fd = -1;
	s->lfd = -1;
	s->nthreads = cfg->test == GPUNIC_PERF_PUT_BW && cfg->host ? cfg->threads : 1;
	if (perf_side_checks_each(cfg)) {
		s->checkers = cfg->check_threads;
		s->nthreads += s->checkers;
	}
	if (cfg->gpu_exec) {
		err = check_gpu(s);
		if (err)
			goto out;
	}
	if (cfg->host && cfg->hooks && cfg->hooks->connecting)
		cfg->hooks->connecting(cfg->hooks->arg, cfg);
	if (cfg->host)
		err = gpunic_perftest_connect(&s->oob, "gpunic perf", cfg->host, cfg->oob_port,
					      cfg->timeout_ms);
	else
		err = serve(s);
	if (err)
		goto out;
	err = open_nic(s);
	if (!err)
		err = alloc_side_bufs(s, sizes, nsizes, &lbytes, &rbytes);
	if (!err)
		err = create_qp(s, lbytes, rbytes);
	if (!err && !cfg->host)
		err = serve_check(s);
	if (err)
		goto out;
	res->local_ip = s->addr.ip;
	res->local_qpn = s->qp->qp_num;
	res->mtu_bytes = (int)gpunic_mtu_bytes(s->mtu);
	res->handler = handler_names[s->dq.handler_mode <= 3 ? s->dq.handler_mode : 0];
	memcpy(ext.mac, s->addr.mac, 6);
	ext.udp_port = s->addr.udp_port;
	ext.gpunic = true;
	err = gpunic_perftest_prologue(&s->oob, &ext, (int)s->mtu, &agreed);
	if (err)
		goto out;
	s->mtu = (enum gpunic_mtu)agreed;
	res->mtu_bytes = (int)gpunic_mtu_bytes(s->mtu);
	snprintf(res->peer_version, sizeof(res->peer_version), "%s", s->oob.peer_version);
	res->peer_kind = s->oob.peer.gpunic ? "gpunic" : "perftest";
	/* the peer may now run as long as it likes between our reads */
	s->oob.timeout_ms = 0;
	/* READ data lives at the server: one pattern over the whole buffer, every size */
	if (!cfg->host && (cfg->test == GPUNIC_PERF_READ_BW || cfg->test == GPUNIC_PERF_READ_LAT))
		gpunic_perf_fill(s->data.cpu + s->lbuf_bytes, (uint32_t)s->rbuf_bytes,
				 GPUNIC_PERF_READ_SEED, 0);
	err = gpunic_nic_start(s->nic, cfg->engine_cpu);
	if (err) {
		PERF_ERR("starting the NIC engine thread: %s\n", strerror(err));
		goto out;
	}
	s->engine_running = true;
	err = gpunic_perftest_hand_shake(&s->oob, &s->me, &s->peer);
	if (!err) {
		res->local = s->me;
		res->remote = s->peer;
		res->max_inline = s->dq.max_inline;
		res->rx_depth = rx_depth_for(cfg, sizes[0]);
		err = connect_qp(s);
	}
	if (!err && cfg->hooks && cfg->hooks->connected)
		cfg->hooks->connected(cfg->hooks->arg, cfg, res);
	for (i = 1; !err && i < pre_handshakes(cfg->test); i++)
		err = hs(s);
	for (unsigned k = 0; !err && k < nsizes; k++) {
		err = run_size(s, sizes[k], &res->r[res->n]);
		if (!err)
			size_done(s, res->n++);
	}
	if (!err)
		err = end_steps(s, sizes[nsizes - 1]);
	if (!err && !s->oob.peer.gpunic && perf_side_verifies(cfg))
		res->verify_skipped = true;
	if (!err && res->bad)
		err = EBADMSG;
out:
	/* a peer that went away shows as whatever broke first (a write to its closed socket, an
	 * error completion, no progress): say what happened instead */
	if (err && err != EBADMSG && peer_gone(s)) {
		PERF_ERR("the %s went away during the test: its connection closed\n",
			 cfg->host ? "server" : "client");
		err = ECONNRESET;
	}
	side_close(s);
	free(s);
	return err;
}
