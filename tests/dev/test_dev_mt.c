/* SPDX-License-Identifier: MIT */
/*
 * The shared posting protocol (reserve -> write -> mark ready in order -> submit) with 1..16
 * host threads on one send queue, thread- and warp-scope posters mixed, against a NIC thread
 * that consumes the ring as the doorbell record announces it and writes send CQEs, while this
 * thread polls them (which hands the space back to the posters).
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "dev_fixture.h"

#define MT_RKEY 0x5eed0000u
#define MT_INLINE_BYTES 40u

struct mt_run;

struct mt_poster {
	struct mt_run *run;
	uint32_t id;
	int warp;            /* posts batches through gpunic_dev_post_send_warp */
	uint32_t *idx;       /* [seq]: what post returned for it */
};

struct mt_run {
	struct fix f;
	uint32_t nthreads, per_thread, nwarp;
	uint32_t expect_bbs, expect_signalled;
	struct mt_poster poster[16];
	/* NIC side */
	uint8_t *seen;       /* [thread * per_thread + seq] */
	uint32_t *found_at;
	uint32_t nic_seen, nic_cqes, nic_errors, nic_backwards;
	char nic_why[160];
	int stop;
};

/* Requests differ in size and kind; remote_addr names them so the NIC knows whose it reads. */
static void mt_wr(uint32_t t, uint32_t s, uint32_t last, struct gpunic_dev_send_wr *wr,
		  struct gpunic_dev_sge *sg, uint8_t *inl)
{
	uint32_t k, n;

	memset(wr, 0, sizeof(*wr));
	wr->remote_addr = (uint64_t)t << 32 | s;
	wr->rkey = MT_RKEY | t;
	wr->sg_list = sg;
	wr->flags = (s % 2 || s == last) ? GPUNIC_DEV_SEND_SIGNALED : 0;
	switch (s % 3) {
	case 0: /* ds 3: one basic block */
		wr->opcode = MLX5_OPCODE_RDMA_WRITE;
		n = 1;
		break;
	case 1: /* ds 6: two */
		wr->opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
		wr->imm = t << 16 | s;
		n = 4;
		break;
	default: /* inline, ds 2 + 3: two */
		wr->opcode = MLX5_OPCODE_RDMA_WRITE;
		wr->flags |= GPUNIC_DEV_SEND_INLINE;
		for (k = 0; k < MT_INLINE_BYTES; k++)
			inl[k] = (uint8_t)(t * 31 + s * 7 + k);
		sg[0].addr = (uintptr_t)inl;
		sg[0].length = MT_INLINE_BYTES;
		wr->num_sge = 1;
		return;
	}
	for (k = 0; k < n; k++) {
		sg[k].addr = (uint64_t)s << 20 | t << 8 | k;
		sg[k].length = 64 + k;
		sg[k].lkey = t << 8 | k;
	}
	wr->num_sge = (uint16_t)n;
}

static uint32_t mt_wr_bbs(uint32_t s)
{
	return s % 3 == 0 ? 1 : 2;
}

static void *mt_poster_main(void *arg)
{
	struct mt_poster *p = arg;
	struct mt_run *run = p->run;
	struct gpunic_dev_send_wr wr[GPUNIC_DEV_WARP_SIZE];
	struct gpunic_dev_sge sg[GPUNIC_DEV_WARP_SIZE][4];
	uint8_t inl[GPUNIC_DEV_WARP_SIZE][MT_INLINE_BYTES];
	uint32_t s = 0, n, k, spins = 0, last = run->per_thread - 1, off;
	int64_t r;

	while (s < run->per_thread) {
		n = p->warp ? 1 + (s * 7 + p->id) % GPUNIC_DEV_WARP_SIZE : 1;
		if (n > run->per_thread - s)
			n = run->per_thread - s;
		for (k = 0; k < n; k++)
			mt_wr(p->id, s + k, last, &wr[k], sg[k], inl[k]);
		if (p->warp) {
			/* The batch's last request asks for a completion, so no batch is left
			 * all unsignalled in a full ring. */
			wr[n - 1].flags |= GPUNIC_DEV_SEND_SIGNALED;
			r = gpunic_dev_post_send_warp(&run->f.qp, wr, n);
		} else if (s % 5 == 4) {
			/* The protocol step by step, yielding inside it, so that later
			 * reservations are written before earlier ones. */
			r = gpunic_dev_sq_reserve_mt(&run->f.qp, mt_wr_bbs(s));
			if (r >= 0) {
				uint64_t ctrl8;
				int ds = gpunic_dev_send_wqe_ds(&run->f.qp, &wr[0]);

				CHECK(ds > 0);
				sched_yield();
				ctrl8 = gpunic_dev_wqe_write_send(&run->f.qp, (uint32_t)r, &wr[0],
								  (uint32_t)ds);
				sched_yield();
				CHECK_EQ(gpunic_dev_priv_ready_ring_mt(&run->f.qp, (uint32_t)r,
								       mt_wr_bbs(s), ctrl8), 0);
			}
		} else {
			r = gpunic_dev_post_send_mt(&run->f.qp, &wr[0]);
		}
		if (r == -ENOMEM) {
			gpunic_dev_spin_wait(&spins);
			continue;
		}
		CHECK(r >= 0);
		spins = 0;
		for (k = 0, off = 0; k < n; k++) {
			p->idx[s + k] = (uint32_t)r + off;
			off += mt_wr_bbs(s + k);
		}
		s += n;
	}
	return NULL;
}

static void nic_fail(struct mt_run *run, const char *why, uint32_t a, uint32_t b)
{
	if (!run->nic_errors++)
		snprintf(run->nic_why, sizeof(run->nic_why), "%s (0x%x, 0x%x)", why, a, b);
}

/* Check a WQE against the request its remote_addr names, as the NIC finds it at @ci. */
static void nic_check_wqe(struct mt_run *run, const struct dec_wqe *d, uint32_t ci)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sg[4];
	uint8_t inl[MT_INLINE_BYTES];
	uint32_t t = (uint32_t)(d->raddr >> 32), s = (uint32_t)d->raddr, k;

	if (d->idx != (ci & 0xffff) || !d->has_raddr || t >= run->nthreads ||
	    s >= run->per_thread) {
		nic_fail(run, "stale or foreign WQE at", ci, d->idx);
		return;
	}
	mt_wr(t, s, run->per_thread - 1, &wr, sg, inl);
	if (d->opcode != wr.opcode || d->rkey != wr.rkey || d->qpn != run->f.qp.qpn)
		nic_fail(run, "WQE header", ci, d->opcode);
	if (wr.flags & GPUNIC_DEV_SEND_INLINE) {
		if (!d->is_inline || d->inl_len != MT_INLINE_BYTES ||
		    memcmp(d->inl, inl, MT_INLINE_BYTES))
			nic_fail(run, "inline payload", ci, d->inl_len);
	} else {
		if (d->nsge != wr.num_sge)
			nic_fail(run, "SGE count", ci, d->nsge);
		for (k = 0; k < d->nsge && k < wr.num_sge; k++)
			if (d->sge[k].addr != sg[k].addr || d->sge[k].len != sg[k].length ||
			    d->sge[k].lkey != sg[k].lkey)
				nic_fail(run, "SGE", ci, k);
	}
	if (run->seen[t * run->per_thread + s]++)
		nic_fail(run, "WQE seen twice", t, s);
	run->found_at[t * run->per_thread + s] = ci;
	run->nic_seen++;
}

/* The NIC: follow the doorbell record, consume every announced WQE, complete signalled ones. */
static void *mt_nic_main(void *arg)
{
	struct mt_run *run = arg;
	struct fix *f = &run->f;
	uint32_t ci = 0, pi16, prev16 = 0, spins = 0, total = run->nthreads * run->per_thread;
	struct dec_wqe *d = malloc(sizeof(*d));

	CHECK(d);
	while (run->nic_seen < total && !__atomic_load_n(&run->stop, __ATOMIC_ACQUIRE)) {
		pi16 = nic_sq_pi(f) & 0xffff;
		if (((pi16 - prev16) & 0xffff) > 0x8000)
			run->nic_backwards++;
		prev16 = pi16;
		if ((ci & 0xffff) == pi16) {
			gpunic_dev_spin_wait(&spins);
			continue;
		}
		spins = 0;
		while ((ci & 0xffff) != pi16) {
			dec_wqe(f, ci, d);
			nic_check_wqe(run, d, ci);
			if (d->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) {
				struct nic_cqe c;

				/* Never overrun the CQ: the consumer's record says what is free. */
				while (run->nic_cqes - nic_cq_ci(&f->qp.scq) >= f->qp.scq.cqe_cnt)
					sched_yield();
				memset(&c, 0, sizeof(c));
				c.opcode = MLX5_CQE_REQ;
				c.wqe_opcode = (uint8_t)d->opcode;
				c.wqe_counter = (uint16_t)ci;
				c.qpn = f->qp.qpn;
				nic_write_cqe(&f->qp.scq, run->nic_cqes++, &c);
			}
			ci += dec_bbs(d) ? dec_bbs(d) : 1;
		}
	}
	free(d);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void mt_run(uint32_t nthreads, uint32_t nwarp, uint32_t per_thread, uint32_t ring,
		   uint32_t mode)
{
	struct mt_run *run = calloc(1, sizeof(*run));
	uint32_t total, t, s, signalled = 0, bbs = 0, polled = 0, spins = 0;
	pthread_t th[16], nic;
	struct gpunic_dev_cqe out;
	struct dec_wqe d;
	double deadline;

	CHECK(run && nthreads <= 16 && nwarp <= nthreads);
	run->nthreads = nthreads;
	run->nwarp = nwarp;
	run->per_thread = per_thread;
	fix_init(&run->f, ring, 4, 32, 64, mode);
	total = nthreads * per_thread;
	run->seen = calloc(total, 1);
	run->found_at = calloc(total, sizeof(uint32_t));
	CHECK(run->seen && run->found_at);

	/* What the posters will produce: every thread's share, signalled ones counted as the NIC
	 * will see them (warp batches also signal their last request). */
	for (t = 0; t < nthreads; t++) {
		struct mt_poster *p = &run->poster[t];

		p->run = run;
		p->id = t;
		p->warp = t < nwarp;
		p->idx = calloc(per_thread, sizeof(uint32_t));
		CHECK(p->idx);
		for (s = 0; s < per_thread;) {
			uint32_t n = p->warp ? 1 + (s * 7 + t) % GPUNIC_DEV_WARP_SIZE : 1, k;

			if (n > per_thread - s)
				n = per_thread - s;
			for (k = 0; k < n; k++) {
				bbs += mt_wr_bbs(s + k);
				signalled += (s + k) % 2 || s + k == per_thread - 1 ||
					     (p->warp && k == n - 1);
			}
			s += n;
		}
	}

	CHECK_EQ(pthread_create(&nic, NULL, mt_nic_main, run), 0);
	for (t = 0; t < nthreads; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, mt_poster_main, &run->poster[t]), 0);

	/* Poll send completions: the single consumer of the send CQ. */
	deadline = now_s() + 90;
	while (polled < signalled) {
		if (gpunic_dev_poll_scq(&run->f.qp, &out)) {
			CHECK(!gpunic_dev_cqe_is_error(&out));
			CHECK_EQ(out.wqe_counter, out.wqe_idx & 0xffff);
			polled++;
			spins = 0;
			continue;
		}
		if (now_s() > deadline) {
			__atomic_store_n(&run->stop, 1, __ATOMIC_RELEASE);
			harness_fail(__FILE__, __LINE__, "stuck: %u/%u CQEs, NIC saw %u/%u (%s)",
				     polled, signalled, run->nic_seen, total, run->nic_why);
		}
		gpunic_dev_spin_wait(&spins);
	}
	for (t = 0; t < nthreads; t++)
		CHECK_EQ(pthread_join(th[t], NULL), 0);
	CHECK_EQ(pthread_join(nic, NULL), 0);

	if (run->nic_errors)
		harness_fail(__FILE__, __LINE__, "NIC: %u errors, first: %s", run->nic_errors,
			     run->nic_why);
	CHECK_EQ(run->nic_backwards, 0);
	CHECK_EQ(run->nic_seen, total);
	CHECK_EQ(run->nic_cqes, signalled);
	/* Each request posted exactly once, where its poster was told it is. */
	for (t = 0; t < nthreads; t++)
		for (s = 0; s < per_thread; s++) {
			CHECK_EQ(run->seen[t * per_thread + s], 1);
			CHECK_EQ(run->found_at[t * per_thread + s], run->poster[t].idx[s]);
		}
	/* Counters all meet at the end of the last WQE. */
	CHECK_EQ(run->f.qp.state->sq_reserved, bbs);
	CHECK_EQ(run->f.qp.state->sq_ready, bbs);
	CHECK_EQ(run->f.qp.state->sq_submitted, bbs);
	CHECK_EQ(run->f.qp.state->sq_completed, bbs);
	CHECK_EQ(run->f.qp.state->sq_db_lock, 0);
	CHECK_EQ(nic_sq_pi(&run->f), bbs & 0xffff);
	if (mode == GPUNIC_HANDLER_GPU_DB) {
		/* The doorbell names the last WQE in the ring, which ends at the record. */
		const uint8_t *db = (const uint8_t *)run->f.db;
		uint32_t idx = (rd_be32(db) >> 8) & 0xffff;

		dec_wqe(&run->f, idx, &d);
		CHECK_MEM(db, dec_unit(&run->f, idx, 0), 8);
		CHECK_EQ((idx + dec_bbs(&d)) & 0xffff, bbs & 0xffff);
		CHECK_EQ(*run->f.mailbox, 0);
	} else {
		CHECK_EQ(*run->f.mailbox, bbs);
		CHECK_EQ(*run->f.db, 0);
	}

	for (t = 0; t < nthreads; t++)
		free(run->poster[t].idx);
	free(run->seen);
	free(run->found_at);
	fix_fini(&run->f);
	free(run);
}

TEST(mt_1_thread)
{
	mt_run(1, 0, 6000, 64, GPUNIC_HANDLER_GPU_DB);
}

TEST(mt_2_threads)
{
	mt_run(2, 0, 3000, 64, GPUNIC_HANDLER_GPU_DB);
}

TEST(mt_4_threads)
{
	mt_run(4, 0, 1500, 64, GPUNIC_HANDLER_GPU_DB);
}

TEST(mt_8_threads)
{
	mt_run(8, 0, 1000, 64, GPUNIC_HANDLER_GPU_DB);
}

TEST(mt_16_threads)
{
	mt_run(16, 0, 500, 64, GPUNIC_HANDLER_GPU_DB);
}

TEST(mt_16_threads_cpu_proxy)
{
	mt_run(16, 0, 500, 64, GPUNIC_HANDLER_CPU_PROXY);
}

TEST(mt_warps_and_threads)
{
	mt_run(8, 4, 1500, 256, GPUNIC_HANDLER_GPU_DB);
}

TEST(mt_warps_only)
{
	mt_run(3, 3, 3000, 128, GPUNIC_HANDLER_CPU_PROXY);
}

/* ---------------------------------------------------------------- deterministic pieces */

TEST(warp_batch_layout)
{
	struct gpunic_dev_send_wr wr[GPUNIC_DEV_WARP_SIZE];
	struct gpunic_dev_sge sg[GPUNIC_DEV_WARP_SIZE][4];
	uint8_t inl[GPUNIC_DEV_WARP_SIZE][MT_INLINE_BYTES];
	struct fix f;
	struct dec_wqe d;
	uint32_t k, at = 100;
	int64_t r;

	fix_init(&f, 128, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	/* Start off zero, so the batch wraps. */
	f.qp.state->sq_reserved = f.qp.state->sq_ready = f.qp.state->sq_submitted = 100;
	f.qp.state->sq_completed = 100;
	for (k = 0; k < GPUNIC_DEV_WARP_SIZE; k++)
		mt_wr(0, k, 99, &wr[k], sg[k], inl[k]);
	r = gpunic_dev_post_send_warp(&f.qp, wr, GPUNIC_DEV_WARP_SIZE);
	CHECK_EQ(r, 100);
	for (k = 0; k < GPUNIC_DEV_WARP_SIZE; k++) {
		dec_wqe(&f, at, &d);
		CHECK_EQ(d.idx, at);
		CHECK_EQ(d.raddr, k);
		CHECK_EQ(dec_bbs(&d), mt_wr_bbs(k));
		at += dec_bbs(&d);
	}
	/* One batch, one doorbell, naming the last WQE. */
	CHECK_EQ(f.qp.state->sq_reserved, at);
	CHECK_EQ(f.qp.state->sq_ready, at);
	CHECK_EQ(f.qp.state->sq_submitted, at);
	CHECK_EQ(nic_sq_pi(&f), at);
	CHECK_MEM(f.db, dec_unit(&f, at - mt_wr_bbs(31), 0), 8);
	/* Bad requests and sizes: nothing posted. */
	CHECK_EQ(gpunic_dev_post_send_warp(&f.qp, wr, 0), -EINVAL);
	CHECK_EQ(gpunic_dev_post_send_warp(&f.qp, wr, 33), -EINVAL);
	wr[3].opcode = MLX5_OPCODE_NOP;
	CHECK_EQ(gpunic_dev_post_send_warp(&f.qp, wr, 4), -EINVAL);
	wr[3].opcode = MLX5_OPCODE_SEND;
	/* A batch is 53 basic blocks: a second fits in the 75 left, a third not in 22. */
	CHECK_EQ(at, 153);
	CHECK_EQ(gpunic_dev_post_send_warp(&f.qp, wr, 32), 153);
	CHECK_EQ(gpunic_dev_post_send_warp(&f.qp, wr, 32), -ENOMEM);
	CHECK_EQ(f.qp.state->sq_reserved, 206);
	CHECK_EQ(nic_sq_pi(&f), 206);
	fix_fini(&f);
}

TEST(reserve_mt_full)
{
	struct fix f;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 10), 0);
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 7), -ENOMEM);
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 6), 10);
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 1), -ENOMEM);
	CHECK_EQ(f.qp.state->sq_reserved, 16);
	f.qp.state->sq_completed = 3;
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 3), 16);
	CHECK_EQ(gpunic_dev_sq_free(&f.qp), 0);
	fix_fini(&f);
}

/* A poster that finds the doorbell lock taken leaves the ringing to the holder; the holder's
 * look after unlocking picks the new WQE up. */
TEST(submit_mt_lock_handoff)
{
	struct fix f;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sg[4];
	uint8_t inl[MT_INLINE_BYTES];
	uint64_t ctrl_a, ctrl_b;

	fix_init(&f, 16, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	mt_wr(0, 0, 9, &wr, sg, inl);
	f.qp.state->sq_db_lock = 1;
	CHECK_EQ(gpunic_dev_post_send_mt(&f.qp, &wr), 0);
	CHECK_EQ(f.dbrec[1], 0);
	CHECK_EQ(f.qp.state->sq_ready, 1);
	f.qp.state->sq_db_lock = 0;
	CHECK_EQ(gpunic_dev_submit_mt(&f.qp), 0);
	CHECK_EQ(nic_sq_pi(&f), 1);
	CHECK_MEM(f.db, f.qp.sq_buf, 8);
	/* A later reservation defers the ring to its owner, who marks ready after us. */
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 1), 1);
	CHECK_EQ(gpunic_dev_sq_reserve_mt(&f.qp, 1), 2);
	mt_wr(0, 3, 9, &wr, sg, inl);
	ctrl_a = gpunic_dev_wqe_write_send(&f.qp, 1, &wr, 3);
	CHECK_EQ(gpunic_dev_priv_ready_ring_mt(&f.qp, 1, 1, ctrl_a), 0);
	CHECK_EQ(nic_sq_pi(&f), 1);
	CHECK_EQ(f.qp.state->sq_ready, 2);
	mt_wr(0, 6, 9, &wr, sg, inl);
	ctrl_b = gpunic_dev_wqe_write_send(&f.qp, 2, &wr, 3);
	CHECK_EQ(gpunic_dev_priv_ready_ring_mt(&f.qp, 2, 1, ctrl_b), 0);
	CHECK_EQ(nic_sq_pi(&f), 3);
	CHECK_EQ(*f.db, ctrl_b);
	fix_fini(&f);
}

/* Rounds of posters that start together and stop: the last WQE of every round must be rung
 * although its poster may find the doorbell lock taken by a holder that is about to leave. */
struct round_arg {
	struct fix *f;
	pthread_barrier_t *start, *end;
	uint32_t rounds, id;
};

static void *round_main(void *arg)
{
	struct round_arg *a = arg;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sg[4];
	uint8_t inl[MT_INLINE_BYTES];
	uint32_t r;

	for (r = 0; r < a->rounds; r++) {
		mt_wr(a->id, 3 * r, ~0u, &wr, sg, inl);
		pthread_barrier_wait(a->start);
		if (a->id % 2) {
			CHECK(gpunic_dev_post_send_mt(&a->f->qp, &wr) >= 0);
		} else {
			/* Every poster submits, so holders and late posters meet at the lock. */
			int64_t at = gpunic_dev_sq_reserve_mt(&a->f->qp, 1);
			uint64_t ctrl8;

			CHECK(at >= 0);
			ctrl8 = gpunic_dev_wqe_write_send(&a->f->qp, (uint32_t)at, &wr, 3);
			gpunic_dev_sq_mark_ready_mt(&a->f->qp, (uint32_t)at, 1, ctrl8);
			CHECK_EQ(gpunic_dev_submit_mt(&a->f->qp), 0);
		}
		pthread_barrier_wait(a->end);
	}
	return NULL;
}

TEST(mt_last_doorbell_not_lost)
{
	enum { THREADS = 4, ROUNDS = 2000 };
	struct round_arg arg[THREADS];
	pthread_barrier_t start, end;
	pthread_t th[THREADS];
	struct fix f;
	uint32_t r, t;

	fix_init(&f, 16384, 4, 32, 16, GPUNIC_HANDLER_GPU_DB);
	CHECK_EQ(pthread_barrier_init(&start, NULL, THREADS + 1), 0);
	CHECK_EQ(pthread_barrier_init(&end, NULL, THREADS + 1), 0);
	for (t = 0; t < THREADS; t++) {
		arg[t].f = &f;
		arg[t].start = &start;
		arg[t].end = &end;
		arg[t].rounds = ROUNDS;
		arg[t].id = t;
		CHECK_EQ(pthread_create(&th[t], NULL, round_main, &arg[t]), 0);
	}
	for (r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&end);
		/* Every poster has returned: all of the round is announced. */
		CHECK_EQ(f.qp.state->sq_ready, (r + 1) * THREADS);
		CHECK_EQ(nic_sq_pi(&f), (r + 1) * THREADS);
		CHECK_EQ(f.qp.state->sq_db_lock, 0);
	}
	for (t = 0; t < THREADS; t++)
		CHECK_EQ(pthread_join(th[t], NULL), 0);
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&end);
	fix_fini(&f);
}
