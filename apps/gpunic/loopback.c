// SPDX-License-Identifier: MIT
/*
 * The loopback experiment's moving parts (loopback.h): message format, links, the sensor that
 * plays the FPGA, and the forwarder for the GPU, CPU and naive executors.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/gpu.h"
#include "gpunic/mem.h"
#include "loopback.h"
#include "timing.h"

#define LB_ERR(...) fprintf(stderr, "gpunic: " __VA_ARGS__)

/* Sensor queues: the SQ holds what is in flight at high rates; every receive has a slot. */
#define SENSOR_SQ_WR 256u
#define SENSOR_RQ_WR 1024u
#define SENSOR_NIC_BUDGET 32
/* Forwarder send queue; signal every 16th send (what keeps the SQ from filling). */
#define FWD_SQ_WR 256u
#define FWD_SIGNAL_EVERY 16u
#define FWD_NIC_BUDGET 64
#define MAX_INLINE 64u
/* Executor thread back-off: spin this many idle rounds, then yield the core. */
#define EXEC_SPIN_ROUNDS 4096u


/* ---------------------------------------------------------------- message */

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser: every input bit reaches every output bit */
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

/* Byte @i (counted from 16) of the pattern of message (@word, @ts): one 64-bit value per 8. */
static inline uint64_t pattern_word(uint64_t word, uint64_t ts, uint32_t block)
{
	return mix64(word * 0x9E3779B97F4A7C15ull ^ ts ^ ((uint64_t)block << 40));
}

void lb_msg_fill(uint8_t *m, uint32_t len, uint64_t word, uint64_t ts_ns)
{
	uint64_t x = 0;

	put_le64(m, word);
	put_le64(m + 8, ts_ns);
	for (uint32_t i = LB_MSG_MIN; i < len; i++) {
		uint32_t k = i - LB_MSG_MIN;

		if ((k & 7) == 0)
			x = pattern_word(word, ts_ns, k >> 3);
		m[i] = (uint8_t)(x >> (8 * (k & 7)));
	}
}

enum lb_verdict lb_msg_check(const uint8_t *m, uint32_t len, uint32_t want_len, bool add_one,
			     uint64_t *word, uint64_t *ts_ns)
{
	uint8_t d = add_one ? 1 : 0;
	uint64_t w = 0, t = 0, x = 0;

	*word = 0;
	*ts_ns = 0;
	if (len < LB_MSG_MIN)
		return LB_MSG_BAD_LEN;
	for (int i = 7; i >= 0; i--) {
		w = w << 8 | (uint8_t)(m[i] - d);
		t = t << 8 | (uint8_t)(m[8 + i] - d);
	}
	*word = w;
	*ts_ns = t;
	if (len != want_len)
		return LB_MSG_BAD_LEN;
	for (uint32_t i = LB_MSG_MIN; i < len; i++) {
		uint32_t k = i - LB_MSG_MIN;

		if ((k & 7) == 0)
			x = pattern_word(w, t, k >> 3);
		if ((uint8_t)(m[i] - d) != (uint8_t)(x >> (8 * (k & 7))))
			return LB_MSG_BAD_PATTERN;
	}
	return LB_MSG_OK;
}

/* ---------------------------------------------------------------- names and parsing */

const char *lb_mode_name(enum lb_mode m)
{
	return m == LB_MODE_SEND ? "send" : "write-imm";
}

int lb_mode_parse(const char *s, enum lb_mode *m)
{
	if (strcmp(s, "write-imm") == 0)
		*m = LB_MODE_WRITE_IMM;
	else if (strcmp(s, "send") == 0)
		*m = LB_MODE_SEND;
	else
		return EINVAL;
	return 0;
}

const char *lb_work_name(uint32_t work)
{
	return work == GPUNIC_LOOP_WORK_ADD_ONE ? "add-one" : "none";
}

int lb_work_parse(const char *s, uint32_t *work)
{
	if (strcmp(s, "none") == 0)
		*work = GPUNIC_LOOP_WORK_NONE;
	else if (strcmp(s, "add-one") == 0)
		*work = GPUNIC_LOOP_WORK_ADD_ONE;
	else
		return EINVAL;
	return 0;
}

const char *lb_handler_name(enum gpunic_handler_mode h)
{
	switch (h) {
	case GPUNIC_HANDLER_GPU_DB:
		return "GPU_DB";
	case GPUNIC_HANDLER_CPU_PROXY:
		return "CPU_PROXY";
	case GPUNIC_HANDLER_GPU_BF:
		return "GPU_BF";
	default:
		return "AUTO";
	}
}

int lb_handler_parse(const char *s, enum gpunic_handler_mode *h)
{
	if (strcmp(s, "gpu-db") == 0)
		*h = GPUNIC_HANDLER_GPU_DB;
	else if (strcmp(s, "cpu-proxy") == 0)
		*h = GPUNIC_HANDLER_CPU_PROXY;
	else if (strcmp(s, "gpu-bf") == 0)
		*h = GPUNIC_HANDLER_GPU_BF;
	else if (strcmp(s, "auto") == 0)
		*h = GPUNIC_HANDLER_AUTO;
	else
		return EINVAL;
	return 0;
}

const char *lb_executor_name(enum lb_executor e)
{
	switch (e) {
	case LB_EXEC_GPU:
		return "gpu";
	case LB_EXEC_CPU:
		return "cpu";
	default:
		return "naive";
	}
}

int lb_executor_parse(const char *s, enum lb_executor *e)
{
	if (strcmp(s, "gpu") == 0)
		*e = LB_EXEC_GPU;
	else if (strcmp(s, "cpu") == 0)
		*e = LB_EXEC_CPU;
	else if (strcmp(s, "naive") == 0)
		*e = LB_EXEC_NAIVE;
	else
		return EINVAL;
	return 0;
}

int lb_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	unsigned long long x;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x < min || x > max)
		return EINVAL;
	*v = x;
	return 0;
}

int lb_parse_us(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+')
		return EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e9)
		return EINVAL;
	*ns = (uint64_t)llround(v * 1000.0);
	return 0;
}

/* ---------------------------------------------------------------- links */

void lb_addr_init(struct lb_addr *a, uint32_t ip, uint16_t udp_port, bool kernel_udp)
{
	memset(a, 0, sizeof(*a));
	a->ip = ip;
	a->udp_port = udp_port;
	a->kernel_udp = kernel_udp;
	a->mac[0] = 0x02;
	a->mac[1] = 0x00;
	a->mac[2] = (uint8_t)(ip >> 24);
	a->mac[3] = (uint8_t)(ip >> 16);
	a->mac[4] = (uint8_t)(ip >> 8);
	a->mac[5] = (uint8_t)ip;
}

/* "udp:IP[:PORT]": the address the link binds is the NIC's. */
static int parse_udp_spec(const char *rest, uint32_t *ip, uint16_t *port)
{
	char buf[64];
	unsigned a, b, c, d, p = GPUNIC_ROCE_UDP_PORT;
	char tail;
	int n;

	if (strlen(rest) >= sizeof(buf))
		return EINVAL;
	strcpy(buf, rest);
	n = sscanf(buf, "%u.%u.%u.%u:%u%c", &a, &b, &c, &d, &p, &tail);
	if (n != 4 && n != 5)
		return EINVAL;
	if (a > 255 || b > 255 || c > 255 || d > 255 || p == 0 || p > 65535)
		return EINVAL;
	*ip = a << 24 | b << 16 | c << 8 | d;
	*port = (uint16_t)p;
	return 0;
}

int lb_link_open(const char *spec, uint32_t default_ip, int wait_ms, struct gpunic_link **link,
		 struct lb_addr *addr)
{
	bool shm = strncmp(spec, "shm:", 4) == 0;
	bool create = shm && strstr(spec, ",create") != NULL;
	uint16_t port = 0;
	uint32_t ip = default_ip;
	int err;

	if (strncmp(spec, "udp:", 4) == 0) {
		if (parse_udp_spec(spec + 4, &ip, &port)) {
			LB_ERR("link '%s': expected udp:IP[:PORT]\n", spec);
			return EINVAL;
		}
	}
	lb_addr_init(addr, ip, port, strncmp(spec, "udp:", 4) == 0);
	/* the other side creates the cable: wait for it (and for its header) */
	*link = gpunic_link_open_spec_wait(spec, wait_ms);
	if (*link)
		return 0;
	err = errno;
	if (err == EEXIST)
		LB_ERR("link '%s': the shm cable exists already (another run, or a stale one: "
		       "remove /dev/shm%s)\n", spec, strchr(spec, '/') ? strchr(spec, '/') : "");
	else if (shm && !create && err == ENOENT)
		LB_ERR("link '%s': no such cable (start the side that creates it first)\n", spec);
	else if (err == EINVAL)
		LB_ERR("link '%s': not a valid link (shm:NAME,a|b[,create], udp:IP[:PORT], "
		       "dgram:LOCALIP:PORT,REMOTEIP:PORT)\n", spec);
	else
		LB_ERR("link '%s': %s\n", spec, strerror(err));
	return err;
}

static uint32_t pick_psn(uint32_t salt)
{
	return (uint32_t)(mix64(timing_now_ns() ^ (uint64_t)getpid() << 32 ^ salt) & 0xffffff);
}

static struct gpunic_nic *nic_open(struct gpunic_link *link, const struct lb_addr *a,
				   enum gpunic_executor exec, gpunic_mem_t *mem)
{
	struct gpunic_nic_attr na = { .link = link, .ip = a->ip, .udp_port = a->udp_port,
				      .executor = exec, .mem = mem };
	struct gpunic_nic *nic;

	memcpy(na.mac, a->mac, 6);
	nic = gpunic_nic_open(&na);
	if (!nic) {
		LB_ERR("cannot open the NIC: %s\n", strerror(errno));
		gpunic_link_close(link);
	}
	return nic;
}

static int qp_init(struct gpunic_qp *qp, unsigned access)
{
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_INIT, .qp_access_flags = access };
	int err = gpunic_qp_modify(qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS);

	if (err)
		LB_ERR("QP to INIT: %s (%s)\n", strerror(err), gpunic_qp_last_error(qp));
	return err;
}

static int qp_connect(struct gpunic_qp *qp, const struct lb_addr *me, uint32_t psn,
		      enum gpunic_mtu mtu, const struct gpunic_qp_info *peer)
{
	struct gpunic_qp_attr at = { 0 };
	int err;

	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = mtu;
	at.dest_qp_num = peer->qpn;
	at.rq_psn = peer->psn;
	at.remote_ip = peer->ip;
	memcpy(at.remote_mac, peer->mac, 6);
	at.remote_udp_port = peer->udp_port;
	/* a kernel UDP socket sends from the port it is bound to */
	at.src_udp_port = me->kernel_udp ? (me->udp_port ? me->udp_port : GPUNIC_ROCE_UDP_PORT) : 0;
	err = gpunic_qp_modify(qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN |
					       GPUNIC_QP_RQ_PSN | GPUNIC_QP_AV);
	if (err) {
		LB_ERR("QP to RTR: %s (%s)\n", strerror(err), gpunic_qp_last_error(qp));
		return err;
	}
	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = psn;
	err = gpunic_qp_modify(qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN);
	if (err)
		LB_ERR("QP to RTS: %s (%s)\n", strerror(err), gpunic_qp_last_error(qp));
	return err;
}

static void fill_info(struct gpunic_qp_info *info, const struct gpunic_qp *qp,
		      const struct lb_addr *a, uint32_t psn)
{
	memset(info, 0, sizeof(*info));
	info->qpn = qp->qp_num;
	info->psn = psn;
	info->ip = a->ip;
	memcpy(info->mac, a->mac, 6);
	info->udp_port = a->udp_port;
}

static void *zalloc_aligned(size_t bytes)
{
	size_t n = (bytes + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, n ? n : 4096);

	if (p)
		memset(p, 0, n ? n : 4096);
	return p;
}

/* ---------------------------------------------------------------- sensor */

struct lb_sensor {
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	struct lb_addr addr;
	enum gpunic_mtu mtu;
	enum lb_mode mode;
	uint32_t size;
	uint32_t psn;

	uint8_t *sbuf;		/* staging for sends too large to go inline */
	struct gpunic_mr *smr;
	uint32_t sslots;
	uint32_t sslot_bytes;
	uint8_t *rbuf;		/* echo receives, one slot per receive WQE */
	struct gpunic_mr *rmr;
	uint32_t rslots;
	uint32_t rslot_bytes;

	uint64_t ring_va;	/* the forwarder's receive ring (WRITE_WITH_IMM) */
	uint32_t ring_rkey;
	uint32_t ring_slots;
	bool connected;

	uint64_t nsend;		/* sends over the QP's life: the signalling cadence */
	uint64_t *send_ts;	/* per sequence number of the current run */
	size_t send_ts_cap;
	atomic_uint_least64_t prog_sent;
	atomic_uint_least64_t prog_recv;
	uint8_t msg[LB_MSG_MAX];
};

static int sensor_post_recv(struct lb_sensor *s, uint32_t slot)
{
	struct gpunic_dev_sge sge = {
		.addr = (uint64_t)(uintptr_t)(s->rbuf + (size_t)slot * s->rslot_bytes),
		.length = s->rslot_bytes,
		.lkey = s->rmr->lkey,
	};
	int64_t r = gpunic_dev_post_recv(&s->dq, &sge, 1);

	return r < 0 ? (int)-r : 0;
}

int lb_sensor_open(struct lb_sensor **out, struct gpunic_link *link, const struct lb_addr *addr,
		   enum lb_mode mode, uint32_t size)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.max_send_wr = SENSOR_SQ_WR,
		.max_recv_wr = SENSOR_RQ_WR,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = MAX_INLINE,
		.cqe_scatter = true,
		.handler_mode = GPUNIC_HANDLER_AUTO,
	};
	struct lb_sensor *s;
	int err;

	*out = NULL;
	if (size < LB_MSG_MIN || size > LB_MSG_MAX) {
		LB_ERR("message size %u outside %u..%u\n", size, LB_MSG_MIN, LB_MSG_MAX);
		gpunic_link_close(link);
		return EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		gpunic_link_close(link);
		return ENOMEM;
	}
	s->addr = *addr;
	s->mode = mode;
	s->size = size;
	s->mtu = gpunic_link_path_mtu(link);
	atomic_init(&s->prog_sent, 0);
	atomic_init(&s->prog_recv, 0);
	s->nic = nic_open(link, addr, GPUNIC_EXECUTOR_CPU, NULL);
	if (!s->nic) {
		free(s);
		return EIO;
	}
	err = ENOMEM;
	s->pd = gpunic_pd_alloc(s->nic);
	s->scq = gpunic_cq_create(s->nic, SENSOR_SQ_WR);
	s->rcq = gpunic_cq_create(s->nic, 2 * SENSOR_RQ_WR);
	if (!s->pd || !s->scq || !s->rcq) {
		LB_ERR("sensor: PD/CQ: %s\n", strerror(errno));
		goto fail;
	}
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	s->qp = gpunic_qp_create(s->pd, &ia);
	if (!s->qp) {
		err = errno;
		LB_ERR("sensor: QP: %s\n", strerror(err));
		goto fail;
	}
	err = qp_init(s->qp, 0);
	if (err)
		goto fail;
	err = gpunic_qp_export(s->qp, &s->dq);
	if (!err && gpunic_dev_qp_check(&s->dq))
		err = EINVAL;
	if (err) {
		LB_ERR("sensor: QP export: %s\n", strerror(err));
		goto fail;
	}
	s->psn = pick_psn(s->qp->qp_num);

	s->sslots = s->dq.sq_wqebb_cnt;
	s->sslot_bytes = (size + 63) & ~63u;
	s->rslots = SENSOR_RQ_WR;
	s->rslot_bytes = s->sslot_bytes;
	s->sbuf = zalloc_aligned((size_t)s->sslots * s->sslot_bytes);
	s->rbuf = zalloc_aligned((size_t)s->rslots * s->rslot_bytes);
	if (!s->sbuf || !s->rbuf) {
		err = ENOMEM;
		goto fail;
	}
	s->smr = gpunic_mr_reg(s->pd, s->sbuf, (size_t)s->sslots * s->sslot_bytes,
			       GPUNIC_ACCESS_LOCAL_WRITE);
	s->rmr = gpunic_mr_reg(s->pd, s->rbuf, (size_t)s->rslots * s->rslot_bytes,
			       GPUNIC_ACCESS_LOCAL_WRITE);
	if (!s->smr || !s->rmr) {
		err = errno;
		LB_ERR("sensor: MR: %s\n", strerror(err));
		goto fail;
	}
	for (uint32_t i = 0; i < s->rslots; i++) {
		err = sensor_post_recv(s, i);
		if (err) {
			LB_ERR("sensor: posting receive %u: %s\n", i, strerror(err));
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	lb_sensor_close(s);
	return err;
}

void lb_sensor_info(const struct lb_sensor *s, struct gpunic_qp_info *info)
{
	fill_info(info, s->qp, &s->addr, s->psn);
}

int lb_sensor_connect(struct lb_sensor *s, const struct gpunic_qp_info *remote)
{
	int err;

	if (s->mode == LB_MODE_WRITE_IMM) {
		if (!remote->rkey || remote->len < LB_SLOT_BYTES || !remote->va) {
			LB_ERR("sensor: the forwarder advertised no receive ring (va 0x%llx, "
			       "len %u, rkey 0x%x) for WRITE_WITH_IMM\n",
			       (unsigned long long)remote->va, remote->len, remote->rkey);
			return EPROTO;
		}
		s->ring_va = remote->va;
		s->ring_rkey = remote->rkey;
		s->ring_slots = remote->len / LB_SLOT_BYTES;
	}
	err = qp_connect(s->qp, &s->addr, s->psn, s->mtu, remote);
	if (!err)
		s->connected = true;
	return err;
}

void lb_sensor_close(struct lb_sensor *s)
{
	if (!s)
		return;
	if (s->nic)
		gpunic_nic_close(s->nic);
	free(s->sbuf);
	free(s->rbuf);
	free(s->send_ts);
	free(s);
}

void lb_sensor_progress(const struct lb_sensor *s, uint64_t *sent, uint64_t *received)
{
	*sent = atomic_load_explicit(&s->prog_sent, memory_order_relaxed);
	*received = atomic_load_explicit(&s->prog_recv, memory_order_relaxed);
}

int lb_sensor_counters(struct lb_sensor *s, struct gpunic_nic_counters *nic)
{
	return gpunic_nic_query_counters(s->nic, nic);
}

/* State of one run, kept together for the helpers below. */
struct run_state {
	const struct lb_run_cfg *cfg;
	struct stats_rec *rec;
	struct lb_run_result *res;
	uint64_t sent;		/* sequence numbers 0..sent-1 went out */
	uint64_t last_event;	/* last send or reply: the drain times out from here */
	bool awaiting;		/* closed loop: waiting for the reply to sent - 1 */
};

static void sensor_reap_sends(struct lb_sensor *s, struct run_state *st)
{
	struct gpunic_dev_cqe cqe;

	while (gpunic_dev_poll_scq(&s->dq, &cqe))
		if (gpunic_dev_cqe_is_error(&cqe))
			st->res->send_errors++;
}

static void sensor_reply(struct lb_sensor *s, struct run_state *st,
			 const struct gpunic_dev_cqe *cqe, uint64_t now)
{
	const struct lb_run_cfg *cfg = st->cfg;
	uint32_t slot = cqe->wqe_idx % s->rslots;
	const uint8_t *data = cqe->data_in_cqe ? cqe->data :
						 s->rbuf + (size_t)slot * s->rslot_bytes;
	uint64_t word, ts, seq, dup;
	enum lb_verdict v;
	int err;

	if (gpunic_dev_cqe_is_error(cqe)) {
		st->res->rx_errors++;
	} else if (cqe->opcode != MLX5_CQE_RESP_SEND) {
		st->res->corrupt_unmatched++;
	} else {
		v = lb_msg_check(data, cqe->byte_cnt, s->size, cfg->expect_add_one, &word, &ts);
		seq = word & LB_SEQ_MASK;
		if (cqe->byte_cnt < LB_MSG_MIN) {
			st->res->corrupt_unmatched++;
		} else if ((word >> LB_SEQ_BITS) != (cfg->epoch & 0xffff)) {
			st->res->stale++;
		} else if (seq >= st->sent) {
			st->res->corrupt_unmatched++;
		} else {
			dup = st->rec->counts.dup;
			if (v == LB_MSG_OK && ts == s->send_ts[seq]) {
				stats_rec_add(st->rec, seq, now - s->send_ts[seq],
					      STATS_SAMPLE_VERIFIED);
				if (st->rec->counts.dup == dup)
					st->res->verified++;
			} else {
				stats_rec_add(st->rec, seq, now - s->send_ts[seq],
					      STATS_SAMPLE_CORRUPT);
			}
			if (st->awaiting && seq + 1 == st->sent)
				st->awaiting = false;
		}
	}
	st->last_event = now;
	err = sensor_post_recv(s, slot);
	if (err)
		st->res->rx_errors++;
	atomic_store_explicit(&s->prog_recv, st->rec->counts.received, memory_order_relaxed);
}

/* Move the NIC, take replies and send completions. Return: work done. */
static int sensor_service(struct lb_sensor *s, struct run_state *st)
{
	struct gpunic_dev_cqe cqe;
	int work = gpunic_nic_poll(s->nic, SENSOR_NIC_BUDGET);

	while (gpunic_dev_poll_rcq(&s->dq, &cqe)) {
		sensor_reply(s, st, &cqe, timing_now_ns());
		work++;
	}
	sensor_reap_sends(s, st);
	return work;
}

/*
 * Send message @seq of this run. Return: 0 (sent, *ts_out = its timestamp), EAGAIN (the send
 * queue is full: nothing was touched) or an errno.
 */
static int sensor_send(struct lb_sensor *s, struct run_state *st, uint64_t seq, uint64_t *ts_out)
{
	struct gpunic_dev_sge sge;
	struct gpunic_dev_send_wr wr = { 0 };
	uint32_t sslot = (uint32_t)(s->nsend % s->sslots);
	bool inl = s->size <= s->dq.max_inline;
	uint8_t *buf = inl ? s->msg : s->sbuf + (size_t)sslot * s->sslot_bytes;
	uint32_t rslot;
	int64_t r;
	int bbs;

	wr.num_sge = 1;
	wr.sg_list = &sge;
	sge.addr = (uint64_t)(uintptr_t)buf;
	sge.length = s->size;
	sge.lkey = inl ? 0 : s->smr->lkey;
	if (inl)
		wr.flags |= GPUNIC_DEV_SEND_INLINE;
	if ((s->nsend & (FWD_SIGNAL_EVERY - 1)) == FWD_SIGNAL_EVERY - 1)
		wr.flags |= GPUNIC_DEV_SEND_SIGNALED;
	if (s->mode == LB_MODE_WRITE_IMM) {
		rslot = (uint32_t)(seq % s->ring_slots);
		wr.opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
		wr.remote_addr = s->ring_va + (uint64_t)rslot * LB_SLOT_BYTES;
		wr.rkey = s->ring_rkey;
		wr.imm = rslot;
	} else {
		wr.opcode = MLX5_OPCODE_SEND;
	}
	bbs = gpunic_dev_send_wqe_bbs(&s->dq, &wr);
	if (bbs < 0)
		return EINVAL;
	/* Room first: the staging slot must not change under a WQE the NIC may still read. */
	if (gpunic_dev_sq_free(&s->dq) < (uint32_t)bbs)
		return EAGAIN;

	*ts_out = timing_now_ns();
	s->send_ts[seq] = *ts_out;
	lb_msg_fill(buf, s->size, lb_word(st->cfg->epoch, seq), *ts_out);
	r = gpunic_dev_post_send(&s->dq, &wr);
	if (r < 0)
		return (int)-r;
	s->nsend++;
	gpunic_dev_submit(&s->dq);
	/* transmit now: the sensor is its own NIC engine */
	gpunic_nic_poll(s->nic, SENSOR_NIC_BUDGET);
	return 0;
}

static bool stop_requested(const struct lb_run_cfg *cfg)
{
	return cfg->stop && atomic_load_explicit(cfg->stop, memory_order_relaxed);
}

int lb_sensor_run(struct lb_sensor *s, const struct lb_run_cfg *cfg, struct stats_rec *rec,
		  struct lb_run_result *res)
{
	struct run_state st = { .cfg = cfg, .rec = rec, .res = res };
	uint64_t limit, start, now, due, ts = 0, first_ts = 0, last_ts = 0, await_since = 0;
	/* the schedule: message k is due at base_ts + (k - base_k) * interval */
	uint64_t base_ts, base_k = 0;
	int err;

	memset(res, 0, sizeof(*res));
	stats_rec_reset(rec);
	if (!s->connected)
		return ENOTCONN;
	if (cfg->count > rec->cap || (!cfg->count && !cfg->duration_ns)) {
		LB_ERR("sensor: run of %llu messages with a recorder for %zu\n",
		       (unsigned long long)cfg->count, rec->cap);
		return EINVAL;
	}
	limit = cfg->count ? cfg->count : rec->cap;
	if (s->send_ts_cap < limit) {
		uint64_t *p = realloc(s->send_ts, limit * sizeof(*p));

		if (!p)
			return ENOMEM;
		memset(p, 0, limit * sizeof(*p));
		s->send_ts = p;
		s->send_ts_cap = limit;
	}
	atomic_store_explicit(&s->prog_sent, 0, memory_order_relaxed);
	atomic_store_explicit(&s->prog_recv, 0, memory_order_relaxed);

	start = timing_now_ns();
	base_ts = start;
	st.last_event = start;
	while (st.sent < limit) {
		now = timing_now_ns();
		if (stop_requested(cfg)) {
			res->stopped = true;
			break;
		}
		if (cfg->duration_ns && now - start >= cfg->duration_ns)
			break;
		if (cfg->closed_loop) {
			/* the reply is late: UC will not resend it; count it lost and go on */
			if (st.awaiting && now - await_since >= cfg->timeout_ns)
				st.awaiting = false;
			due = st.awaiting ? UINT64_MAX : now;
		} else {
			due = base_ts + (st.sent - base_k) * cfg->interval_ns;
		}
		if (now >= due) {
			err = sensor_send(s, &st, st.sent, &ts);
			if (err == EAGAIN) {
				sensor_service(s, &st);
				continue;
			}
			if (err) {
				LB_ERR("sensor: posting message %llu: %s\n",
				       (unsigned long long)st.sent, strerror(err));
				return err;
			}
			if (!cfg->closed_loop && cfg->interval_ns && ts - due >= cfg->interval_ns) {
				res->late_sends++;
				if (ts - due > res->max_late_ns)
					res->max_late_ns = ts - due;
				if (cfg->rephase) {
					base_ts = ts;
					base_k = st.sent;
				}
			}
			if (!st.sent)
				first_ts = ts;
			last_ts = ts;
			st.sent++;
			st.awaiting = true;
			await_since = ts;
			st.last_event = ts;
			atomic_store_explicit(&s->prog_sent, st.sent, memory_order_relaxed);
		}
		if (!sensor_service(s, &st))
			timing_cpu_relax();
	}
	res->rec_full = !cfg->count && st.sent == limit;

	/* Drain: every reply is in, or none came for a whole timeout. */
	while (rec->counts.received < st.sent) {
		if (sensor_service(s, &st))
			continue;
		now = timing_now_ns();
		if (now - st.last_event >= cfg->timeout_ns)
			break;
		timing_cpu_relax();
	}
	res->wall_ns = timing_now_ns() - (first_ts ? first_ts : start);
	res->sent = st.sent;
	res->send_ns = last_ts - first_ts;

	err = stats_rec_finish(rec, st.sent);
	if (err)
		return err;
	/* garbage that no message can be blamed for is corruption too: never hidden */
	rec->counts.corrupt += res->corrupt_unmatched;
	res->counts = rec->counts;
	return 0;
}

/* ---------------------------------------------------------------- forwarder */

struct lb_fwd {
	struct lb_fwd_cfg cfg;
	struct lb_addr addr;
	enum gpunic_mtu mtu;
	uint32_t psn;
	gpunic_mem_t *mem;
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;	/* as exported: the executor's view */
	struct gpunic_mem_buf *ring_buf;	/* GPU executor: placed ring */
	uint8_t *ring_host;		/* the ring as the NIC (and the MR) address it */
	bool ring_malloced;
	size_t ring_bytes;
	struct gpunic_mr *ring_mr;
	struct gpunic_cq *idle_cq;	/* the CQ every idle QP of --qps shares */
	struct gpunic_loop_ctx ctx;
	struct gpunic_gpu_loop *gpu_loop;
	struct gpunic_gpu_naive *naive;
	pthread_t thr;
	bool thr_running;
	bool engine_running;
	bool started;
	atomic_bool stop;
	struct lb_fwd_result final;	/* filled by lb_fwd_stop */
	bool stopped;
	uint32_t send_bbs_max;		/* largest send WQE gpunic_loop_send_back() posts */
	char gpu_name[96];
	uint8_t naive_out[LB_MSG_MAX];
};

const char *lb_fwd_gpu_name(const struct lb_fwd *f)
{
	return f->gpu_name;
}

enum gpunic_handler_mode lb_fwd_handler(const struct lb_fwd *f)
{
	return (enum gpunic_handler_mode)f->dq.handler_mode;
}

static int fwd_alloc_ring(struct lb_fwd *f)
{
	enum gpunic_mem_placement where;
	const char *why = "";

	f->ring_bytes = (size_t)f->cfg.slots * LB_SLOT_BYTES;
	if (f->cfg.exec != LB_EXEC_GPU) {
		f->ring_host = zalloc_aligned(f->ring_bytes);
		if (!f->ring_host)
			return ENOMEM;
		f->ring_malloced = true;
		f->ctx.ring = f->ring_host;
		return 0;
	}
	/* the NIC writes the payload, the kernel reads it (mem.h's placement policy) */
	where = gpunic_mem_placement_for(f->mem, GPUNIC_QUEUE_PAYLOAD, true, &why);
	f->ring_buf = gpunic_mem_alloc(f->mem, f->ring_bytes, GPUNIC_GPU_PAGE_SIZE, where);
	if (!f->ring_buf) {
		LB_ERR("receive ring: %zu bytes of %s memory: %s\n", f->ring_bytes,
		       gpunic_mem_placement_str(where), strerror(errno));
		return errno ? errno : ENOMEM;
	}
	if (!f->ring_buf->cpu || !f->ring_buf->gpu) {
		LB_ERR("receive ring: %s memory is not reachable from both the NIC and the GPU\n",
		       gpunic_mem_placement_str(f->ring_buf->placement));
		return EINVAL;
	}
	f->ring_host = f->ring_buf->cpu;
	f->ctx.ring = f->ring_buf->gpu;
	return 0;
}

static int fwd_check_gpu(struct lb_fwd *f)
{
	struct gpunic_gpu_info info;
	int err = gpunic_gpu_probe(f->cfg.gpu, &info);

	if (err || !info.present) {
		LB_ERR("the %s executor needs a GPU, and there is none: %s\n",
		       lb_executor_name(f->cfg.exec), info.reason[0] ? info.reason : strerror(err));
		return ENODEV;
	}
	snprintf(f->gpu_name, sizeof(f->gpu_name), "%s", info.name);
	return 0;
}

int lb_fwd_open(struct lb_fwd **out, const struct lb_fwd_cfg *cfg, struct gpunic_link *link,
		const struct lb_addr *addr)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.max_send_wr = FWD_SQ_WR,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = MAX_INLINE,
		.cqe_scatter = true,
	};
	struct gpunic_mem_attr ma = { .cuda_device = cfg->gpu };
	struct lb_fwd *f;
	int err;

	*out = NULL;
	if (cfg->slots < 2 || cfg->slots > GPUNIC_DEV_MAX_RING) {
		LB_ERR("ring of %u slots: need 2..%u\n", cfg->slots, GPUNIC_DEV_MAX_RING);
		gpunic_link_close(link);
		return EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		gpunic_link_close(link);
		return ENOMEM;
	}
	f->cfg = *cfg;
	f->addr = *addr;
	f->mtu = gpunic_link_path_mtu(link);
	atomic_init(&f->stop, false);
	if (cfg->exec != LB_EXEC_CPU) {
		err = fwd_check_gpu(f);
		if (err) {
			gpunic_link_close(link);
			free(f);
			return err;
		}
	}
	if (cfg->exec == LB_EXEC_GPU) {
		f->mem = gpunic_mem_open(&ma);
		if (!f->mem) {
			err = errno;
			LB_ERR("memory context for GPU %d: %s\n", cfg->gpu, strerror(err));
			gpunic_link_close(link);
			free(f);
			return err;
		}
	}
	f->nic = nic_open(link, addr,
			  cfg->exec == LB_EXEC_GPU ? GPUNIC_EXECUTOR_GPU : GPUNIC_EXECUTOR_CPU,
			  f->mem);
	if (!f->nic) {
		lb_fwd_close(f);
		return EIO;
	}
	err = ENOMEM;
	f->pd = gpunic_pd_alloc(f->nic);
	f->scq = gpunic_cq_create(f->nic, FWD_SQ_WR);
	f->rcq = gpunic_cq_create(f->nic, 2 * cfg->slots);
	if (!f->pd || !f->scq || !f->rcq) {
		err = errno ? errno : ENOMEM;
		LB_ERR("forwarder: PD/CQ: %s\n", strerror(err));
		goto fail;
	}
	ia.send_cq = f->scq;
	ia.recv_cq = f->rcq;
	ia.max_recv_wr = cfg->slots;
	ia.handler_mode = cfg->handler;
	f->qp = gpunic_qp_create(f->pd, &ia);
	if (!f->qp) {
		err = errno;
		LB_ERR("forwarder: QP: %s\n", strerror(err));
		goto fail;
	}
	err = qp_init(f->qp, GPUNIC_ACCESS_REMOTE_WRITE);
	if (err)
		goto fail;
	f->psn = pick_psn(f->qp->qp_num);
	err = fwd_alloc_ring(f);
	if (err)
		goto fail;
	f->ring_mr = gpunic_mr_reg(f->pd, f->ring_host, f->ring_bytes,
				   GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE);
	if (!f->ring_mr) {
		err = errno;
		LB_ERR("forwarder: ring MR: %s\n", strerror(err));
		goto fail;
	}
	err = gpunic_qp_export(f->qp, &f->dq);
	if (!err && gpunic_dev_qp_check(&f->dq))
		err = EINVAL;
	if (err) {
		LB_ERR("forwarder: QP export: %s\n", strerror(err));
		goto fail;
	}
	/* gpunic_gpu_loop_start() copies the QP description to the GPU itself */
	f->ctx.qp = &f->dq;
	f->ctx.ring_iova = (uint64_t)(uintptr_t)f->ring_host;
	f->ctx.ring_lkey = f->ring_mr->lkey;
	f->ctx.slot_bytes = LB_SLOT_BYTES;
	f->ctx.slots = cfg->slots;
	f->ctx.work = cfg->work;
	f->ctx.signal_every = FWD_SIGNAL_EVERY;
	f->ctx.recv_with_buffers = cfg->mode == LB_MODE_SEND;
	/* an inline SEND of max_inline bytes; a SEND by SGE is smaller */
	f->send_bbs_max = gpunic_dev_ds_to_bbs(1 + gpunic_dev_inline_units(f->dq.max_inline));
	if (cfg->exec == LB_EXEC_NAIVE) {
		err = gpunic_gpu_naive_open(cfg->gpu, LB_MSG_MAX, &f->naive);
		if (err) {
			LB_ERR("naive executor: GPU buffers and stream: %s\n", strerror(err));
			f->naive = NULL;
			goto fail;
		}
	}
	*out = f;
	return 0;
fail:
	lb_fwd_close(f);
	return err;
}

void lb_fwd_info(const struct lb_fwd *f, struct gpunic_qp_info *info)
{
	fill_info(info, f->qp, &f->addr, f->psn);
	info->va = (uint64_t)(uintptr_t)f->ring_host;
	info->rkey = f->ring_mr->rkey;
	info->len = (uint32_t)f->ring_bytes;
}

/*
 * The naive path, per message: what code without a persistent kernel does. The receive is
 * polled on the host, the payload copied to the GPU, a kernel launched, the result copied back
 * and sent with the CPU data path (inline, or from the slot for larger messages).
 */
static int naive_step(struct lb_fwd *f)
{
	struct gpunic_loop_ctx *c = &f->ctx;
	struct gpunic_dev_cqe cqe;
	uint32_t slot, len;
	uint8_t *slot_ptr;
	const uint8_t *in;

	if (!gpunic_dev_poll_rcq(c->qp, &cqe))
		return 0;
	slot = cqe.wqe_idx % c->slots;
	if (gpunic_dev_cqe_is_error(&cqe) || cqe.byte_cnt > c->slot_bytes ||
	    (cqe.opcode == MLX5_CQE_RESP_WR_IMM && cqe.imm >= c->slots)) {
		c->errors++;
		c->last_syndrome = cqe.syndrome;
		gpunic_loop_post_recv(c, slot);
		return -1;
	}
	len = cqe.byte_cnt;
	if (cqe.opcode == MLX5_CQE_RESP_WR_IMM)
		slot = cqe.imm;
	slot_ptr = c->ring + (size_t)slot * c->slot_bytes;
	in = cqe.data_in_cqe ? cqe.data : slot_ptr;
	if (gpunic_gpu_naive_process(f->naive, in, f->naive_out, len, c->work)) {
		c->errors++;
		gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
		return -1;
	}
	/* larger messages go back by SGE from the slot: put the result there */
	if (len > c->qp->max_inline)
		memcpy(slot_ptr, f->naive_out, len);
	if (gpunic_loop_send_back(c, f->naive_out, len, slot) < 0) {
		c->errors++;
		gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
		return -1;
	}
	gpunic_dev_submit(c->qp);
	c->echoed++;
	gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
	return 1;
}

static void exec_backoff(uint32_t *idle)
{
	if (*idle < EXEC_SPIN_ROUNDS) {
		(*idle)++;
		timing_cpu_relax();
	} else {
		sched_yield();
	}
}

/*
 * Room for one echo in the send queue, reaping completions if needed. gpunic_loop_send_back()
 * waits for room without end, so a step only starts when its send cannot block: a NIC that
 * cannot transmit (the sensor went away and the link is full) must not hang this thread, which
 * has to see the stop flag (and, with the inline engine, is the one that drives the NIC).
 */
static bool fwd_send_room(struct lb_fwd *f)
{
	if (gpunic_dev_sq_free(&f->dq) >= f->send_bbs_max)
		return true;
	gpunic_loop_reap_sends(&f->ctx);
	return gpunic_dev_sq_free(&f->dq) >= f->send_bbs_max;
}

static void *fwd_exec_main(void *arg)
{
	struct lb_fwd *f = arg;
	uint32_t idle = 0;
	int work, r = 0;

	while (!atomic_load_explicit(&f->stop, memory_order_acquire)) {
		work = 0;
		if (f->cfg.inline_engine)
			work += gpunic_nic_poll(f->nic, FWD_NIC_BUDGET);
		if (fwd_send_room(f))
			r = f->cfg.exec == LB_EXEC_NAIVE ? naive_step(f) :
							   gpunic_loop_step(&f->ctx);
		else
			r = 0;
		if (r || work)
			idle = 0;
		else
			exec_backoff(&idle);
	}
	/* what was posted last still leaves */
	if (f->cfg.inline_engine)
		for (int i = 0; i < 64 && gpunic_nic_poll(f->nic, FWD_NIC_BUDGET); i++)
			;
	return NULL;
}

int lb_fwd_start(struct lb_fwd *f)
{
	int err;

	if (f->started)
		return EBUSY;
	if (f->cfg.exec == LB_EXEC_GPU) {
		/* the kernel posts the receives itself: its counters live in GPU memory */
		err = gpunic_gpu_loop_start(f->cfg.gpu, &f->ctx, &f->gpu_loop);
		if (err) {
			LB_ERR("starting the forwarder kernel: %s\n", strerror(err));
			f->gpu_loop = NULL;
			return err;
		}
	} else {
		err = gpunic_loop_prime(&f->ctx);
		if (err) {
			LB_ERR("posting the ring's receives: %s\n", strerror(-err));
			return -err;
		}
	}
	f->started = true;
	if (f->cfg.exec == LB_EXEC_GPU || !f->cfg.inline_engine) {
		err = gpunic_nic_start(f->nic, f->cfg.engine_cpu);
		if (err) {
			LB_ERR("starting the NIC engine thread: %s\n", strerror(err));
			return err;
		}
		f->engine_running = true;
	}
	if (f->cfg.exec != LB_EXEC_GPU) {
		atomic_store(&f->stop, false);
		err = timing_thread_start(&f->thr, "gpunic-exec", f->cfg.exec_cpu, fwd_exec_main,
					  f);
		if (err) {
			LB_ERR("starting the executor thread: %s\n", strerror(err));
			return err;
		}
		f->thr_running = true;
	}
	return 0;
}

/* The idle QPs of --qps: connected to the sensor's address with QP numbers nobody uses, so
 * the engine has them to look at on every poll, and nothing ever arrives for them. */
static int fwd_connect_idle(struct lb_fwd *f, const struct gpunic_qp_info *remote)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.max_send_wr = 4,
		.max_recv_wr = 4,
	};
	struct gpunic_qp_info peer = *remote;
	int err;

	if (!f->cfg.idle_qps)
		return 0;
	f->idle_cq = gpunic_cq_create(f->nic, 16);
	if (!f->idle_cq) {
		LB_ERR("forwarder: CQ of the idle QPs: %s\n", strerror(errno));
		return errno ? errno : ENOMEM;
	}
	ia.send_cq = ia.recv_cq = f->idle_cq;
	for (uint32_t i = 0; i < f->cfg.idle_qps; i++) {
		struct gpunic_qp *qp = gpunic_qp_create(f->pd, &ia);

		if (!qp) {
			err = errno;
			LB_ERR("forwarder: idle QP %u of %u: %s\n", i + 1, f->cfg.idle_qps,
			       strerror(err));
			return err;
		}
		err = qp_init(qp, GPUNIC_ACCESS_REMOTE_WRITE);
		peer.qpn = 0xfff000 + i;
		if (!err)
			err = qp_connect(qp, &f->addr, f->psn, f->mtu, &peer);
		if (err)
			return err;
	}
	return 0;
}

int lb_fwd_connect(struct lb_fwd *f, const struct gpunic_qp_info *remote)
{
	int err = qp_connect(f->qp, &f->addr, f->psn, f->mtu, remote);

	return err ? err : fwd_connect_idle(f, remote);
}

int lb_fwd_qp_counters(struct lb_fwd *f, struct gpunic_qp_counters *qc)
{
	return gpunic_qp_query_counters(f->qp, qc);
}

int lb_fwd_stop(struct lb_fwd *f, struct lb_fwd_result *res)
{
	struct gpunic_loop_ctx fin;
	int err = 0, e;

	if (f->stopped)
		goto out;
	/* the executor first: it may wait on the NIC for send-queue room */
	if (f->thr_running) {
		atomic_store_explicit(&f->stop, true, memory_order_release);
		pthread_join(f->thr, NULL);
		f->thr_running = false;
		f->final.echoed = f->ctx.echoed;
		f->final.errors = f->ctx.errors + f->ctx.send_errors;
		f->final.last_syndrome = f->ctx.last_syndrome;
	}
	if (f->gpu_loop) {
		memset(&fin, 0, sizeof(fin));
		e = gpunic_gpu_loop_stop(f->gpu_loop, &fin);
		f->gpu_loop = NULL;
		if (e) {
			LB_ERR("the forwarder kernel failed: %s\n", strerror(e));
			err = e;
		}
		f->final.echoed = fin.echoed;
		f->final.errors = fin.errors + fin.send_errors;
		f->final.last_syndrome = fin.last_syndrome;
	}
	if (f->engine_running) {
		gpunic_nic_stop(f->nic);
		f->engine_running = false;
	}
	gpunic_nic_query_counters(f->nic, &f->final.nic);
	gpunic_qp_query_counters(f->qp, &f->final.qp);
	f->stopped = true;
out:
	if (res)
		*res = f->final;
	return err;
}

void lb_fwd_close(struct lb_fwd *f)
{
	if (!f)
		return;
	if (f->nic && f->qp && f->started)
		lb_fwd_stop(f, NULL);
	if (f->naive)
		gpunic_gpu_naive_close(f->naive);
	if (f->nic)
		gpunic_nic_close(f->nic);
	if (f->ring_malloced)
		free(f->ring_host);
	/* a placed ring goes with the memory context */
	if (f->mem)
		gpunic_mem_close(f->mem);
	free(f);
}

/* ---------------------------------------------------------------- process helpers */

atomic_bool lb_stop_flag;

static void on_stop_signal(int sig)
{
	(void)sig;
	atomic_store(&lb_stop_flag, true);
}

int lb_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
		return errno;
	return 0;
}

#define OOB_SLICE_MS 500

int lb_oob_exchange(const char *host, uint16_t port, int timeout_ms,
		    const struct gpunic_qp_info *local, struct gpunic_qp_info *remote)
{
	uint64_t deadline = timing_now_ns() + (uint64_t)timeout_ms * 1000000ull, now;
	int err, slice;

	for (;;) {
		if (atomic_load(&lb_stop_flag))
			return EINTR;
		now = timing_now_ns();
		if (now >= deadline)
			return ETIMEDOUT;
		slice = (deadline - now) / 1000000ull < OOB_SLICE_MS ?
				(int)((deadline - now) / 1000000ull) + 1 : OOB_SLICE_MS;
		err = gpunic_oob_exchange(host, port, slice, local, remote);
		if (err != ETIMEDOUT)
			return err;
	}
}

/* ---------------------------------------------------------------- output helpers */

void lb_print_drops(FILE *out, const struct gpunic_nic_counters *c)
{
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (c->drops[i])
			fprintf(out, " %s=%llu",
				gpunic_drop_reason_name((enum gpunic_drop_reason)i),
				(unsigned long long)c->drops[i]);
}

void lb_json_drops(FILE *out, const struct gpunic_nic_counters *c)
{
	bool first = true;

	fputc('{', out);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++) {
		if (!c->drops[i])
			continue;
		fprintf(out, "%s\"%s\": %llu", first ? "" : ", ",
			gpunic_drop_reason_name((enum gpunic_drop_reason)i),
			(unsigned long long)c->drops[i]);
		first = false;
	}
	fputc('}', out);
}

void lb_json_run(FILE *out, const struct stats_summary *sum, const struct lb_run_result *res)
{
	const struct stats_counts *c = &res->counts;
	double rate = res->send_ns ? (double)(res->sent - 1) * 1e9 / (double)res->send_ns : 0;

	fprintf(out,
		"{\"sent\": %llu, \"received\": %llu, \"verified\": %llu, \"lost\": %llu, "
		"\"dup\": %llu, \"reorder\": %llu, \"corrupt\": %llu, \"corrupt_unmatched\": %llu, "
		"\"stale\": %llu, \"rx_errors\": %llu, \"send_errors\": %llu, "
		"\"late_sends\": %llu, \"max_late_ns\": %llu, \"send_ns\": %llu, "
		"\"wall_ns\": %llu, "
		"\"msg_rate_per_s\": %.1f, \"stopped\": %s, \"recorder_full\": %s, ",
		(unsigned long long)res->sent, (unsigned long long)c->received,
		(unsigned long long)res->verified, (unsigned long long)c->lost,
		(unsigned long long)c->dup, (unsigned long long)c->reorder,
		(unsigned long long)c->corrupt, (unsigned long long)res->corrupt_unmatched,
		(unsigned long long)res->stale, (unsigned long long)res->rx_errors,
		(unsigned long long)res->send_errors, (unsigned long long)res->late_sends,
		(unsigned long long)res->max_late_ns, (unsigned long long)res->send_ns,
		(unsigned long long)res->wall_ns, rate, res->stopped ? "true" : "false",
		res->rec_full ? "true" : "false");
	fprintf(out,
		"\"latency_ns\": {\"count\": %llu, \"min\": %llu, \"p50\": %llu, \"p90\": %llu, "
		"\"p99\": %llu, \"p999\": %llu, \"max\": %llu, \"mean\": %.1f, \"stdev\": %.1f}}",
		(unsigned long long)sum->count, (unsigned long long)sum->min_ns,
		(unsigned long long)sum->p50_ns, (unsigned long long)sum->p90_ns,
		(unsigned long long)sum->p99_ns, (unsigned long long)sum->p999_ns,
		(unsigned long long)sum->max_ns, sum->mean_ns, sum->stdev_ns);
}

void lb_print_run(FILE *out, uint32_t size, const struct stats_summary *sum,
		  const struct lb_run_result *res)
{
	const struct stats_counts *c = &res->counts;

	stats_lat_header_print(out);
	if (sum->count)
		stats_lat_print(out, size, sum);
	else
		fprintf(out, " %-7u %-11u (no samples: nothing came back intact)\n", size, 0);
	stats_rule_print(out);
	fprintf(out,
		" sent %llu  received %llu  verified %llu  lost %llu  dup %llu  reorder %llu  "
		"corrupt %llu",
		(unsigned long long)res->sent, (unsigned long long)c->received,
		(unsigned long long)res->verified, (unsigned long long)c->lost,
		(unsigned long long)c->dup, (unsigned long long)c->reorder,
		(unsigned long long)c->corrupt);
	if (res->corrupt_unmatched)
		fprintf(out, " (%llu matching no message)",
			(unsigned long long)res->corrupt_unmatched);
	fprintf(out, "  stale %llu\n", (unsigned long long)res->stale);
	if (res->rx_errors || res->send_errors)
		fprintf(out, " error completions: receive %llu  send %llu\n",
			(unsigned long long)res->rx_errors, (unsigned long long)res->send_errors);
	if (res->late_sends)
		fprintf(out, " late sends %llu (worst %.3f us after its slot)\n",
			(unsigned long long)res->late_sends, (double)res->max_late_ns / 1000.0);
	if (c->lost || c->corrupt || c->dup)
		fprintf(out, " WARNING: %llu lost, %llu corrupt, %llu duplicated of %llu sent "
			     "(UC does not retransmit)\n",
			(unsigned long long)c->lost, (unsigned long long)c->corrupt,
			(unsigned long long)c->dup, (unsigned long long)res->sent);
	if (res->stopped)
		fprintf(out, " (stopped early by a signal)\n");
	if (res->rec_full)
		fprintf(out, " (the duration run filled the sample recorder and ended there)\n");
}

int lb_parse_ip(const char *s, uint32_t *ip)
{
	unsigned a, b, c, d;
	char tail;

	if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 ||
	    c > 255 || d > 255 || !(a | b | c | d))
		return EINVAL;
	*ip = a << 24 | b << 16 | c << 8 | d;
	return 0;
}

int lb_bad_value(const char *cmd, const char *opt, const char *val)
{
	fprintf(stderr, "gpunic %s: invalid value '%s' for %s (try 'gpunic %s --help')\n", cmd, val,
		opt, cmd);
	return 2;
}

int lb_bad_option(const char *cmd, int c, const char *opt)
{
	if (c == ':')
		fprintf(stderr, "gpunic %s: option '%s' needs a value (try 'gpunic %s --help')\n",
			cmd, opt, cmd);
	else
		fprintf(stderr, "gpunic %s: unknown option '%s' (try 'gpunic %s --help')\n", cmd,
			opt, cmd);
	return 2;
}

int lb_extra_arg(const char *cmd, const char *arg)
{
	fprintf(stderr, "gpunic %s: unexpected argument '%s' (try 'gpunic %s --help')\n", cmd, arg,
		cmd);
	return 2;
}
