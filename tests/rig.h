/* SPDX-License-Identifier: MIT */
/*
 * The rig the executor suites stand on (tests/gpu, tests/tear, tests/mlx5dev): two softnics on
 * one shm cable, connected by one QP each. Side g belongs to the executor under test (a GPU
 * kernel, or its CPU twin on host threads): its NIC is opened for that executor and its data
 * region comes from the memory layer. Side c is a CPU peer with a host region. Each region sits
 * between guard bytes that teardown checks. What differs between the suites (sizes, g's CQs,
 * rights, PSNs) is in struct rig_attr; what is a suite's own (its QPs' sizes, what it checks
 * after the export, how it starts the engines) stays in its fixture.
 */
#ifndef GPUNIC_TEST_RIG_H
#define GPUNIC_TEST_RIG_H

#include <sys/mman.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include "harness.h"

struct rig_side {
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;     /* as exported: the executor's addresses */
	struct gpunic_mem_buf *mb;   /* g: the data region from the mem layer */
	uint8_t *mem;                /* CPU view: outer guard | region | outer guard */
	uint8_t *buf;                /* CPU view of the registered region (the MR address) */
	uint8_t *xbuf;               /* executor's view of the region */
	struct gpunic_mr *mr;
	uint32_t ip;
	uint8_t mac[6];
	uint32_t psn;
};

struct rig_attr {
	const char *tag;                 /* names the cable: /gpunic-TAG-PID-N */
	uint8_t subnet;                  /* g is 10.0.SUBNET.1, c is 10.0.SUBNET.2 */
	bool gpu;                        /* the executor is a GPU: g's region is mapped host memory */
	bool gpu_nic;                    /* g's NIC is opened for a GPU executor (a GPU, or a twin
					  * on the mem layer's fake GPU) */
	uint32_t g_nic_flags;            /* more struct gpunic_nic_attr flags for g */
	struct gpunic_cq_init_attr g_cq; /* g's two CQs; c's have 256 entries, no flags */
	size_t region;                   /* bytes of each side's registered region */
	size_t outer;                    /* guard bytes before it and after it */
	uint8_t guard;                   /* the guard byte */
	bool zero_region;                /* zero the regions (else they keep the guard byte) */
	unsigned access;                 /* the MRs' rights; the QPs get the remote ones */
	enum gpunic_qp_type type;
	enum gpunic_mtu mtu;
	uint32_t g_psn, c_psn;
};

static inline uint64_t rig_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void rig_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L };

	nanosleep(&ts, NULL);
}

static inline bool rig_all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/*
 * The memory context: with a GPU when @gpu or @fake_gpu, where a twin's @fake_gpu is the mem
 * layer's test-only fake (device memory is host memory, no GDRCopy). Skips the case when the
 * GPU it needs is not there.
 */
static inline gpunic_mem_t *rig_mem_open(bool gpu, bool fake_gpu)
{
	struct gpunic_mem_attr ma = { 0 };
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	if (!gpu && fake_gpu) {
		setenv("GPUNIC_MEM_FAKE_GPU", "1", 1);
		setenv("GPUNIC_GDRCOPY", "0", 1);
	}
	ma.flags = gpu || fake_gpu ? 0 : GPUNIC_MEM_OPEN_NO_GPU;
	mem = gpunic_mem_open(&ma);
	CHECK(mem);
	if (gpu || fake_gpu) {
		CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
		if (!caps.gpu || (!gpu && !caps.fake_gpu)) {
			gpunic_mem_close(mem);
			SKIP("the mem layer finds no %sGPU: %s", gpu ? "" : "fake ", caps.gpu_reason);
		}
	}
	return mem;
}

static inline void rig_links(const char *tag, struct gpunic_link **la, struct gpunic_link **lb)
{
	static unsigned seq;
	struct gpunic_shm_link_attr sa = { .end = GPUNIC_SHM_END_A, .slots = 1024, .create = 1 };
	char name[64];

	snprintf(name, sizeof(name), "/gpunic-%s-%d-%u", tag, (int)getpid(), seq++);
	sa.name = name;
	/* ours alone: remove a stale one of a crashed run, and the name once both ends exist */
	shm_unlink(name);
	*la = gpunic_link_shm_open(&sa);
	CHECK(*la);
	sa.end = GPUNIC_SHM_END_B;
	sa.create = 0;
	*lb = gpunic_link_shm_open(&sa);
	shm_unlink(name);
	CHECK(*lb);
}

static inline void rig_side_open(gpunic_mem_t *mem, const struct rig_attr *a, struct rig_side *p,
				 struct gpunic_link *link, bool exec)
{
	uint8_t host = exec ? 1 : 2;
	struct gpunic_nic_attr na = {
		.link = link,
		.ip = (uint32_t)10 << 24 | (uint32_t)a->subnet << 8 | host,
		.mac = { 2, 0, 0, 0, 0, host },
	};
	size_t total = a->region + 2 * a->outer;

	if (exec) {
		na.flags |= a->g_nic_flags;
		if (a->gpu_nic) {
			na.executor = GPUNIC_EXECUTOR_GPU;
			na.mem = mem;
		}
	}
	p->ip = na.ip;
	memcpy(p->mac, na.mac, 6);
	p->psn = exec ? a->g_psn : a->c_psn;
	p->nic = gpunic_nic_open(&na);
	CHECK(p->nic);
	p->pd = gpunic_pd_alloc(p->nic);
	CHECK(p->pd);
	if (exec) {
		p->scq = gpunic_cq_create_ex(p->nic, &a->g_cq);
		p->rcq = gpunic_cq_create_ex(p->nic, &a->g_cq);
		/* The executor's region: mapped host memory for a GPU, host memory otherwise. */
		p->mb = gpunic_mem_alloc(mem, total, 4096,
					 a->gpu ? GPUNIC_MEM_CPU_GPU : GPUNIC_MEM_HOST);
		if (!p->mb)
			harness_fail(__FILE__, __LINE__, "data region: %s", strerror(errno));
		CHECK(p->mb->cpu);
		if (a->gpu) {
			CHECK_EQ(p->mb->placement, GPUNIC_MEM_CPU_GPU);
			CHECK(p->mb->gpu);
			/* Either way the cases hold: SGEs carry the MR's (host) address, which the
			 * engine uses, and kernels touch the bytes through the GPU's. */
			if (p->mb->gpu != p->mb->cpu)
				printf("note: mapped memory has GPU address %p for host address %p\n",
				       p->mb->gpu, p->mb->cpu);
		}
		p->mem = p->mb->cpu;
		p->xbuf = (uint8_t *)(p->mb->gpu ? p->mb->gpu : p->mb->cpu) + a->outer;
	} else {
		p->scq = gpunic_cq_create(p->nic, 256);
		p->rcq = gpunic_cq_create(p->nic, 256);
		p->mem = aligned_alloc(4096, total);
		CHECK(p->mem);
	}
	CHECK(p->scq && p->rcq);
	memset(p->mem, a->guard, total);
	p->buf = p->mem + a->outer;
	if (a->zero_region)
		memset(p->buf, 0, a->region);
	if (!exec)
		p->xbuf = p->buf;
	/* Registered with the CPU address, which the engine dereferences; WQEs name it too. */
	p->mr = gpunic_mr_reg(p->pd, p->buf, a->region, a->access);
	CHECK(p->mr);
}

/* The cable and both sides' NICs, CQs and regions; no QP yet. */
static inline void rig_open(gpunic_mem_t *mem, const struct rig_attr *a, struct rig_side *g,
			    struct rig_side *c)
{
	struct gpunic_link *la, *lb;

	rig_links(a->tag, &la, &lb);
	rig_side_open(mem, a, g, la, true);
	rig_side_open(mem, a, c, lb, false);
}

/* @p's QP from @ia, on @p's CQs. */
static inline void rig_qp_create(struct rig_side *p, struct gpunic_qp_init_attr *ia)
{
	ia->send_cq = p->scq;
	ia->recv_cq = p->rcq;
	p->qp = gpunic_qp_create(p->pd, ia);
	if (!p->qp)
		harness_fail(__FILE__, __LINE__, "QP create: %s", strerror(errno));
}

static inline void rig_to_rts(const struct rig_attr *a, struct rig_side *me,
			      const struct rig_side *peer)
{
	bool rc = a->type == GPUNIC_QPT_RC;
	struct gpunic_qp_attr at = { 0 };
	unsigned mask;

	at.qp_state = GPUNIC_QPS_INIT;
	at.qp_access_flags = a->access & ~(unsigned)GPUNIC_ACCESS_LOCAL_WRITE;
	CHECK_EQ(gpunic_qp_modify(me->qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS), 0);

	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = a->mtu;
	at.dest_qp_num = peer->qp->qp_num;
	at.rq_psn = peer->psn;
	at.remote_ip = peer->ip;
	memcpy(at.remote_mac, peer->mac, 6);
	at.max_dest_rd_atomic = 16;
	at.min_rnr_timer = 1;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	if (gpunic_qp_modify(me->qp, &at, mask))
		harness_fail(__FILE__, __LINE__, "RTR: %s", gpunic_qp_last_error(me->qp));

	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = me->psn;
	/* 4.096 us << 16 = 268 ms, 8 tries: about 2 s before a retry error, so a starved peer
	 * engine on a loaded 2-core machine delays a case instead of failing it (no loss here). */
	at.timeout = 16;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 16;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	if (gpunic_qp_modify(me->qp, &at, mask))
		harness_fail(__FILE__, __LINE__, "RTS: %s", gpunic_qp_last_error(me->qp));
}

/* Both QPs to RTS, each addressed to the other. */
static inline void rig_connect(const struct rig_attr *a, struct rig_side *g, struct rig_side *c)
{
	rig_to_rts(a, g, c);
	rig_to_rts(a, c, g);
}

/* Nothing was written outside either region. */
static inline void rig_check_guards(const struct rig_attr *a, const struct rig_side *g,
				    const struct rig_side *c)
{
	const struct rig_side *s[2] = { g, c };

	for (int i = 0; i < 2; i++) {
		CHECK(rig_all(s[i]->mem, a->outer, a->guard));
		CHECK(rig_all(s[i]->mem + a->outer + a->region, a->outer, a->guard));
	}
}

/* The NICs first: the executor NIC's queues come from the mem context. */
static inline void rig_close_nics(struct rig_side *g, struct rig_side *c)
{
	CHECK_EQ(gpunic_nic_close(g->nic), 0);
	CHECK_EQ(gpunic_nic_close(c->nic), 0);
}

/* The mem context (with what is still allocated from it) and c's region. */
static inline void rig_close_mem(gpunic_mem_t *mem, struct rig_side *c)
{
	CHECK_EQ(gpunic_mem_close(mem), 0);
	free(c->mem);
}

/* Out of line: inlined into the many failure paths, gcc 12 -O3 warns of a dangling pointer to
 * the counters (-Wdangling-pointer false positive). */
static __attribute__((noinline, cold, unused)) void rig_dump_side(const char *who,
								   const struct rig_side *p)
{
	struct gpunic_nic_counters nc;
	struct gpunic_qp_counters qc;

	if (!p->nic || gpunic_nic_query_counters(p->nic, &nc))
		return;
	fprintf(stderr, "%s: rx %" PRIu64 " tx %" PRIu64 " busy %" PRIu64 " torn-on-purpose %" PRIu64,
		who, nc.rx_frames, nc.tx_frames, nc.tx_busy, nc.cqes_torn_on_purpose);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (nc.drops[i])
			fprintf(stderr, " %s=%" PRIu64, gpunic_drop_reason_name(i), nc.drops[i]);
	if (p->qp && !gpunic_qp_query_counters(p->qp, &qc)) {
		fprintf(stderr, " | qp %s tx %" PRIu64 " rx %" PRIu64 " msgs %" PRIu64 "/%" PRIu64,
			gpunic_qp_state_name(p->qp->state), qc.tx_packets, qc.rx_packets,
			qc.tx_messages, qc.rx_messages);
		fprintf(stderr, " bytes %" PRIu64 "/%" PRIu64 " retx %" PRIu64 " rnr %" PRIu64
			"/%" PRIu64, qc.tx_bytes, qc.rx_bytes, qc.retransmits, qc.rnr_naks_sent,
			qc.rnr_naks_received);
		fprintf(stderr, " nak %" PRIu64 "/%" PRIu64 " timeouts %" PRIu64, qc.naks_sent,
			qc.naks_received, qc.timeouts);
		fprintf(stderr, " bf %" PRIu64 "/%" PRIu64 " wqes_torn %" PRIu64 " atomics %" PRIu64,
			qc.bf_wqes, qc.bf_torn, qc.wqes_torn, qc.atomics_executed);
	}
	fputc('\n', stderr);
}

#endif
