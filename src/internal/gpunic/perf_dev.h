/* SPDX-License-Identifier: MIT */
/*
 * The posting loops of `gpunic perf`, one source for the CUDA kernel (src/gpu/perf.cu) and the
 * CPU executor's host threads (src/perf/perf_run.c), built like gpunic_dev.h whose
 * functions they call.
 *
 * Each test is a loop body that follows what perftest's run_iter_* functions do, so that a
 * perftest peer sees the traffic it expects:
 *   write_lat  ping-pong of RDMA WRITEs: each side polls the last byte of its receive buffer
 *              for the iteration number (as a char), then writes the same to the peer; the
 *              server sends first (perftest run_iter_lat_write)
 *   send_lat   ping-pong of SENDs into posted receives (run_iter_lat_send)
 *   read_lat   the client READs, one at a time; the server is passive (run_iter_lat)
 *   *_bw       the client keeps up to tx_depth operations in flight (run_iter_bw); a send_bw
 *              server takes the SENDs into posted receives and verifies each (run_iter_bw_server)
 *   put_bw     many threads post WRITEs to one send queue with the shared (_mt) protocol, as
 *              DOCA GPUNetIO's put example does; thread 0 also polls the send CQ
 *   atomic_lat the client's atomics, one at a time, all on the peer's vaddr; the server is
 *              passive (perftest's ib_atomic_lat: run_iter_lat)
 *   atomic_bw  up to tx_depth atomics in flight, on targets a cache line apart cycling
 *              through the cycle buffer as perftest's increase_rem_addr (ib_atomic_bw)
 *   Atomics are FETCH_AND_ADD of 1 (perftest's default) or CMP_AND_SWAP. Every fetched value is
 *   checked: against a gpunic server, whose targets start at 0, operation i fetches exactly
 *   i / slots (its visit to target i % slots; CMP_AND_SWAP then compares with that and swaps
 *   in one more); against perftest, whose buffer holds anything, each target's later values
 *   against its first (+1 per visit for FETCH_AND_ADD, unchanged for perftest's CMP_AND_SWAP
 *   of 0 with 0).
 *
 * Control: the executor primes (posts receives), raises ctl->ready, waits for ctl->go (the host
 * does its out-of-band handshake in between), runs, raises ctl->done. The host may raise
 * ctl->stop at any time (timeout, peer gone); the loop then leaves with ctx->err = -ETIMEDOUT.
 *
 * Payload pattern (bandwidth tests between two gpunic peers): message i travels from and to
 * slot i % slots of the sender's and the receiver's buffer, and its bytes are
 * gpunic_perf_pattern(i % slots, offset). A READ source holds one pattern over the whole buffer
 * (seed GPUNIC_PERF_READ_SEED, offset from the buffer's start), checked by the reader.
 * Every buffer pointer in the context is an address the executor can reach; *_iova are the
 * same buffers as WQEs name them (the MR's addresses).
 */
#ifndef GPUNIC_PERF_DEV_H
#define GPUNIC_PERF_DEV_H

#include <gpunic/gpunic_dev.h>

#if !GPUNIC_DEV_ON_GPU
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum gpunic_perf_test {
	GPUNIC_PERF_SEND_LAT = 0,
	GPUNIC_PERF_WRITE_LAT,
	GPUNIC_PERF_READ_LAT,
	GPUNIC_PERF_SEND_BW,
	GPUNIC_PERF_WRITE_BW,
	GPUNIC_PERF_READ_BW,
	GPUNIC_PERF_PUT_BW,
	GPUNIC_PERF_ATOMIC_LAT,
	GPUNIC_PERF_ATOMIC_BW,
	GPUNIC_PERF_TEST_MAX,
};

/* Atomic targets an atomic_bw run cycles through at most (perftest: cycle buffer / step). */
#define GPUNIC_PERF_ATOMIC_MAX_SLOTS 1024u
/* perftest's ATOMIC_ADD_VALUE */
#define GPUNIC_PERF_ATOMIC_ADD 1u

/* Host-visible control block (mapped host memory for a kernel). */
struct gpunic_perf_ctl {
	uint32_t ready;     /* executor: receives posted, waiting for go */
	uint32_t go;        /* host: start the measured loop */
	uint32_t stop;      /* host: leave now */
	uint32_t done;      /* executor threads that finished */
	uint32_t progress;  /* executor: bumped as work completes (the host's watchdog reads it) */
	uint32_t pad[11];
};

/*
 * One message's payload check, handed by thread 0 to the checker threads (1 .. checkers) of a
 * send_bw server or read_bw client: each takes a share, thread 0 too. On a GPU the payload is
 * host memory across PCIe and one thread's loads alone cannot keep up with the link.
 */
struct gpunic_perf_check_job {
	const uint8_t *p;
	uint32_t len;
	uint32_t seed;
	uint32_t base;
	uint32_t seq;           /* thread 0 raises it once the fields above are written */
	uint32_t finished;      /* checkers done with seq */
	uint32_t first_bad;     /* lowest wrong offset a checker found; UINT32_MAX: none */
	uint32_t quit;          /* thread 0: no more jobs */
};

/*
 * Where a latency test's executor spent each iteration (`gpunic perf --profile`): its own work
 * between seeing the answer and handing the next message to the NIC, and its polls while it
 * waited. Sums over the run, on the executor's clock.
 */
struct gpunic_perf_lat_profile {
	uint64_t answers;       /* answers waited for */
	uint64_t empty_polls;   /* polls that found no answer yet */
	uint64_t take_ns;       /* answer seen -> its completion taken, checked, receive reposted */
	uint64_t post_ns;       /* -> the next message written and handed to the NIC */
	uint64_t posts;         /* messages posted (post_ns covers them) */
	uint32_t torn;          /* completion lines seen torn and read again */
	uint32_t pad;
};

struct gpunic_perf_ctx {
	struct gpunic_dev_qp *qp;
	struct gpunic_perf_ctl *ctl;
	uint32_t test;          /* enum gpunic_perf_test */
	uint32_t client;        /* 1: the side that sends first / initiates */
	uint32_t size;          /* message bytes */
	uint32_t iters;
	uint32_t slots;         /* payload slots in lbuf / rbuf (bandwidth) */
	uint32_t tx_depth;      /* bandwidth: operations in flight */
	uint32_t rx_depth;      /* receives kept posted */
	uint32_t verify;        /* 1: the peer sends the pattern (a gpunic peer) */
	uint32_t nthreads;      /* put_bw: posting threads; else 1 + checkers */
	uint32_t checkers;      /* threads beside thread 0 that check received payload */
	uint32_t lkey;
	uint32_t rkey;          /* the peer's */
	uint32_t sq_base;       /* put_bw: send counter before the run (thread 0, before ready) */
	uint8_t *lbuf;          /* send source / READ destination, executor address */
	uint64_t lbuf_iova;
	uint8_t *rbuf;          /* receive area (SEND target; WRITE target the peer knows) */
	uint64_t rbuf_iova;
	uint64_t remote_va;     /* the peer's buffer (WRITE / READ target) */
	uint64_t *t_post;       /* [iters + 1] post times, ns (latency tests; [0] for bw) */
	uint64_t *t_done;       /* [iters] completion times, ns (bandwidth tests) */
	/* results, written by the executor */
	uint64_t completed;     /* operations completed (sent, received or read) */
	uint64_t verified;      /* messages whose payload was checked */
	uint64_t bad;           /* messages whose payload was wrong */
	uint64_t bad_msg;       /* first bad message and offset */
	uint64_t bad_off;
	uint32_t bad_byte;      /* what it held, and what it should have */
	uint32_t want_byte;
	int32_t err;            /* 0, or a negative errno: -EIO (error CQE), -ETIMEDOUT (stopped) */
	uint32_t syndrome;      /* of the error CQE */
	struct gpunic_perf_check_job job;
	uint32_t exited;        /* threads past the end; the last one raises ctl->done */
	/* atomic_lat, atomic_bw: slots is the number of targets, step bytes apart from
	 * remote_va; fetched values land in lbuf, operation i at 8 * (i % atomic_res_slots) */
	uint32_t atomic_op;     /* MLX5_OPCODE_ATOMIC_FA or MLX5_OPCODE_ATOMIC_CS */
	uint32_t atomic_step;
	uint32_t atomic_res_slots;
	uint32_t rq_base;       /* receive counter when this run primed (thread 0); a sweep
				 * primes each size's receives anew, for that size */
	uint32_t profile;       /* 1: time the stages in prof (else only count them: a clock
				 * read per stage costs a GPU thread tens of nanoseconds) */
	uint64_t atomic_got;    /* the first wrong fetched value (bad_msg: its operation, bad_off:
				 * its target), and what it should have been */
	uint64_t atomic_want;
	uint64_t atomic_last[GPUNIC_PERF_ATOMIC_MAX_SLOTS]; /* each target's last fetched value */
	struct gpunic_perf_lat_profile prof;    /* latency tests: where the executor's time went */
};

/* ---------------------------------------------------------------- helpers */

/* One 32-bit word of the pattern of message seed @seed: a multiply-xorshift of seed and word. */
GPUNIC_DEV_FN uint32_t gpunic_perf_pattern_word(uint32_t seed, uint32_t word)
{
	uint32_t x = seed * 0x9E3779B1u ^ (word + 1u) * 0x85EBCA6Bu;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	x *= 0x297A2D39u;
	x ^= x >> 15;
	return x;
}

/* The byte at @off of message seed @seed (little-endian bytes of the words). */
GPUNIC_DEV_FN uint8_t gpunic_perf_pattern(uint32_t seed, uint32_t off)
{
	return (uint8_t)(gpunic_perf_pattern_word(seed, off >> 2) >> ((off & 3u) * 8u));
}

/* What a READ source holds: one pattern over the whole buffer, so any slot layout reads it. */
#define GPUNIC_PERF_READ_SEED 0x52454144u	/* "READ" */

GPUNIC_DEV_FN void gpunic_perf_fill(uint8_t *p, uint32_t len, uint32_t seed, uint32_t base)
{
	for (uint32_t off = 0; off < len; off++)
		p[off] = gpunic_perf_pattern(seed, base + off);
}

/* Bytes gpunic_perf_check() loads at once (a multiple of 16). */
#define GPUNIC_PERF_CHECK_CHUNK 256u
/* The pattern's words are little-endian in memory: loaded whole, they compare as they are. */
#if GPUNIC_DEV_ON_GPU || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GPUNIC_PERF_WORDS_LE 1
#else
#define GPUNIC_PERF_WORDS_LE 0
#endif

/*
 * Copy one chunk to @dst: on a GPU as 16-byte loads that are all in flight together. The
 * payload a GPU executor checks is host memory across PCIe, where loads issued one after the
 * other cost a round trip each (byte loads held a one-thread receiver to ~14 MB/s).
 */
GPUNIC_DEV_FN void gpunic_perf_load_chunk(uint32_t *dst, const uint8_t *src)
{
#if GPUNIC_DEV_ON_GPU
	const ulonglong2 *s = (const ulonglong2 *)src;
	ulonglong2 v[GPUNIC_PERF_CHECK_CHUNK / 16];
	uint32_t i;

#pragma unroll
	for (i = 0; i < GPUNIC_PERF_CHECK_CHUNK / 16; i++)
		v[i] = s[i];
#pragma unroll
	for (i = 0; i < GPUNIC_PERF_CHECK_CHUNK / 16; i++)
		((ulonglong2 *)dst)[i] = v[i];
#else
	memcpy(dst, src, GPUNIC_PERF_CHECK_CHUNK);
#endif
}

/**
 * gpunic_perf_check - compare @len bytes at @p with the pattern of @seed from offset @base on
 * (byte j should be gpunic_perf_pattern(@seed, @base + j))
 * Whole chunks are compared a word at a time where @p is 16-byte aligned and @base a multiple
 * of 4 (little-endian words, as gpunic_perf_fill() writes them); the rest, and a chunk with a
 * mismatch, byte by byte.
 * Return: -1 when every byte matches, else the offset (from @p) of the first wrong byte.
 */
GPUNIC_DEV_FN int64_t gpunic_perf_check(const uint8_t *p, uint32_t len, uint32_t seed,
					uint32_t base)
{
	uint32_t words[GPUNIC_PERF_CHECK_CHUNK / 4];
	uint32_t off = 0, i, w, diff;

	if (GPUNIC_PERF_WORDS_LE && (base & 3u) == 0 && ((uintptr_t)p & 15u) == 0) {
		for (; off + GPUNIC_PERF_CHECK_CHUNK <= len; off += GPUNIC_PERF_CHECK_CHUNK) {
			gpunic_perf_load_chunk(words, p + off);
			diff = 0;
			for (i = 0; i < GPUNIC_PERF_CHECK_CHUNK / 4; i++) {
				w = gpunic_perf_pattern_word(seed, ((base + off) >> 2) + i);
				diff |= words[i] ^ w;
			}
			if (diff)
				break;
		}
	}
	for (i = off; i < len; i++)
		if (p[i] != gpunic_perf_pattern(seed, base + i))
			return i;
	return -1;
}

GPUNIC_DEV_FN uint32_t gpunic_perf_atomic_add(uint32_t *p, uint32_t v)
{
	uint32_t old = gpunic_dev_load_relaxed_u32(p), seen;

	for (;;) {
		seen = gpunic_dev_atomic_cas_u32(p, old, old + v);
		if (seen == old)
			return old;
		old = seen;
	}
}

GPUNIC_DEV_FN int gpunic_perf_stopped(const struct gpunic_perf_ctx *c)
{
	return gpunic_dev_load_relaxed_u32(&c->ctl->stop) != 0;
}

/*
 * One empty turn of a wait loop: every 1024th turn looks at the host's stop flag (a read across
 * PCIe on the GPU, too slow for every turn). Return: 0, or -1 when the host stopped the run
 * (ctx->err = -ETIMEDOUT).
 */
GPUNIC_DEV_FN int gpunic_perf_wait_turn(struct gpunic_perf_ctx *c, uint32_t *spins)
{
	if ((*spins & 1023u) == 1023u && gpunic_perf_stopped(c)) {
		c->err = -ETIMEDOUT;
		return -1;
	}
	gpunic_dev_spin_wait(spins);
	return 0;
}

/* Share @k of @n of a @len-byte check: whole chunks, so that each share keeps the word path. */
GPUNIC_DEV_FN void gpunic_perf_share(uint32_t len, uint32_t k, uint32_t n, uint32_t *start,
				     uint32_t *end)
{
	uint32_t per = (len + n - 1) / n;

	per = (per + GPUNIC_PERF_CHECK_CHUNK - 1) / GPUNIC_PERF_CHECK_CHUNK * GPUNIC_PERF_CHECK_CHUNK;
	*start = (uint64_t)k * per < len ? k * per : len;
	*end = len - *start > per ? *start + per : len;
}

/* Check share @k of the current job. Return: -1, or the job's offset of the first wrong byte. */
GPUNIC_DEV_FN int64_t gpunic_perf_check_share(const struct gpunic_perf_ctx *c, uint32_t k)
{
	const struct gpunic_perf_check_job *j = &c->job;
	uint32_t start, end;
	int64_t off;

	gpunic_perf_share(j->len, k, c->checkers + 1, &start, &end);
	if (start == end)
		return -1;
	off = gpunic_perf_check(j->p + start, end - start, j->seed, j->base + start);
	return off < 0 ? -1 : off + start;
}

GPUNIC_DEV_FN void gpunic_perf_atomic_min(uint32_t *p, uint32_t v)
{
	uint32_t old = gpunic_dev_load_relaxed_u32(p), seen;

	while (v < old) {
		seen = gpunic_dev_atomic_cas_u32(p, old, v);
		if (seen == old)
			return;
		old = seen;
	}
}

/*
 * A checker thread's life: take each job thread 0 raises, check its share, report, until thread
 * 0 quits or the host stops the run.
 */
GPUNIC_DEV_FN void gpunic_perf_checker(struct gpunic_perf_ctx *c, uint32_t tid)
{
	struct gpunic_perf_check_job *j = &c->job;
	uint32_t seen = 0, seq, spins = 0;
	int64_t off;

	for (;;) {
		seq = gpunic_dev_load_acquire_u32(&j->seq);
		if (seq == seen) {
			if (gpunic_dev_load_acquire_u32(&j->quit) || gpunic_perf_stopped(c))
				return;
			gpunic_dev_spin_wait(&spins);
			continue;
		}
		spins = 0;
		seen = seq;
		off = gpunic_perf_check_share(c, tid);
		if (off >= 0)
			gpunic_perf_atomic_min(&j->first_bad, (uint32_t)off);
		/* the finding before the count thread 0 waits for */
		gpunic_dev_full_barrier();
		gpunic_perf_atomic_add(&j->finished, 1);
	}
}

/*
 * Thread 0: check @len bytes at @p with the checkers. Return: as gpunic_perf_check(), or -2 when
 * the host stopped the run before every checker reported.
 */
GPUNIC_DEV_FN int64_t gpunic_perf_check_shared(struct gpunic_perf_ctx *c, const uint8_t *p,
					       uint32_t len, uint32_t seed, uint32_t base)
{
	struct gpunic_perf_check_job *j = &c->job;
	uint32_t spins = 0, bad;
	int64_t off;

	j->p = p;
	j->len = len;
	j->seed = seed;
	j->base = base;
	gpunic_dev_store_relaxed_u32(&j->first_bad, UINT32_MAX);
	gpunic_dev_store_relaxed_u32(&j->finished, 0);
	gpunic_dev_store_release_u32(&j->seq, gpunic_dev_load_relaxed_u32(&j->seq) + 1);
	off = gpunic_perf_check_share(c, 0);
	while (gpunic_dev_load_acquire_u32(&j->finished) < c->checkers) {
		if (gpunic_perf_wait_turn(c, &spins))
			return -2;
	}
	bad = gpunic_dev_load_relaxed_u32(&j->first_bad);
	if (bad != UINT32_MAX && (off < 0 || bad < off))
		off = bad;
	return off;
}

/*
 * Record the first wrong byte of message @msg (payload at @p, pattern @seed from @base).
 * Return: 0, or -ETIMEDOUT when the host stopped the run during the check.
 */
GPUNIC_DEV_FN int gpunic_perf_verify_msg(struct gpunic_perf_ctx *c, const uint8_t *p,
					 uint32_t len, uint32_t seed, uint32_t base, uint64_t msg)
{
	int64_t off;

	if (c->checkers)
		off = gpunic_perf_check_shared(c, p, len, seed, base);
	else
		off = gpunic_perf_check(p, len, seed, base);
	if (off == -2)
		return -ETIMEDOUT;
	c->verified++;
	if (off < 0)
		return 0;
	if (!c->bad) {
		c->bad_msg = msg;
		c->bad_off = (uint64_t)off;
		c->bad_byte = p[off];
		c->want_byte = gpunic_perf_pattern(seed, base + (uint32_t)off);
	}
	c->bad++;
	return 0;
}

GPUNIC_DEV_FN int gpunic_perf_cqe_failed(struct gpunic_perf_ctx *c,
					 const struct gpunic_dev_cqe *cqe)
{
	if (!gpunic_dev_cqe_is_error(cqe))
		return 0;
	c->err = -EIO;
	c->syndrome = cqe->syndrome;
	return 1;
}

/* Wait for one send completion, the answer of a READ or an atomic (counted in the stage
 * profile). Return: 0, or -1 (error CQE or stopped; ctx->err says). */
GPUNIC_DEV_FN int gpunic_perf_wait_scq(struct gpunic_perf_ctx *c)
{
	struct gpunic_dev_cqe cqe;
	uint32_t spins = 0;

	while (!gpunic_dev_poll_scq(c->qp, &cqe)) {
		if (gpunic_perf_wait_turn(c, &spins))
			return -1;
	}
	c->prof.answers++;
	c->prof.empty_polls += spins;
	return gpunic_perf_cqe_failed(c, &cqe) ? -1 : 0;
}

/* Wait for one receive completion into @cqe. Return: 0 or -1 as above. */
GPUNIC_DEV_FN int gpunic_perf_wait_rcq(struct gpunic_perf_ctx *c, struct gpunic_dev_cqe *cqe)
{
	uint32_t spins = 0;

	while (!gpunic_dev_poll_rcq(c->qp, cqe)) {
		if (gpunic_perf_wait_turn(c, &spins))
			return -1;
	}
	return gpunic_perf_cqe_failed(c, cqe) ? -1 : 0;
}

/*
 * Has this run (this size of a sweep) written every WQE of a ring of exactly rx_depth receives?
 * Then WQE k describes slot k % rx_depth at this run's size. rq_written never passes rq_head,
 * so until the run's prime wrote its own it lies at or behind rq_base, on WQEs an earlier size
 * wrote with that size's length: the difference is negative then, and compared signed (as
 * unsigned it wrapped, and a sweep's second size reused its first size's WQEs).
 */
GPUNIC_DEV_FN bool gpunic_perf_rq_rewritten(const struct gpunic_perf_ctx *c)
{
	return c->qp->rq_wqe_cnt == c->rx_depth &&
	       (int32_t)(c->qp->state->rq_written - c->rq_base) >= (int32_t)c->rx_depth;
}

/*
 * Post the next receive: receive counter k always takes slot k % rx_depth of rbuf. On a ring of
 * exactly rx_depth WQEs, once this run wrote each of them, WQE k still describes slot
 * k % rx_depth: it is handed back by moving the producer, with nothing written and no fence
 * (gpunic_dev_recv_repost), the record following as a plain store.
 */
GPUNIC_DEV_FN int64_t gpunic_perf_post_recv(struct gpunic_perf_ctx *c)
{
	struct gpunic_dev_qp_state *st = c->qp->state;
	struct gpunic_dev_sge sge;
	uint32_t slot = st->rq_head % c->rx_depth, head = st->rq_head;

	if (gpunic_perf_rq_rewritten(c)) {
		if (gpunic_dev_recv_repost(c->qp, 1))
			return -ENOMEM;
		gpunic_dev_recv_publish(c->qp, 1);
		return head;
	}
	sge.addr = c->rbuf_iova + (uint64_t)slot * c->size;
	sge.length = c->size;
	sge.lkey = c->lkey;
	return gpunic_dev_post_recv(c->qp, &sge, 1);
}

/* The request for message @i: WRITE, SEND or READ from/to slot i % slots; inline when small. */
GPUNIC_DEV_FN void gpunic_perf_op_wr(const struct gpunic_perf_ctx *c, uint8_t opcode, uint64_t i,
				     struct gpunic_dev_send_wr *wr, struct gpunic_dev_sge *sge)
{
	uint64_t off = (i % c->slots) * (uint64_t)c->size;

	sge->addr = c->lbuf_iova + off;
	sge->length = c->size;
	sge->lkey = c->lkey;
	wr->opcode = opcode;
	wr->flags = GPUNIC_DEV_SEND_SIGNALED;
	if (opcode != MLX5_OPCODE_RDMA_READ && c->size <= c->qp->max_inline) {
		wr->flags |= GPUNIC_DEV_SEND_INLINE;
		sge->addr = (uint64_t)(uintptr_t)(c->lbuf + off);
	}
	wr->num_sge = 1;
	wr->imm = 0;
	wr->remote_addr = opcode == MLX5_OPCODE_SEND ? 0 : c->remote_va + off;
	wr->rkey = c->rkey;
	wr->reserved = 0;
	wr->sg_list = sge;
	wr->compare_add = 0;
	wr->swap = 0;
}

/*
 * The atomic of operation @i: on target i % slots, its fetched value into result slot
 * i % atomic_res_slots of lbuf. FETCH_AND_ADD adds 1; CMP_AND_SWAP against a gpunic peer
 * compares with the visit number i / slots and swaps in one more (so each one succeeds and
 * the target counts visits as for FETCH_AND_ADD), against perftest it uses perftest's 0 and 0.
 */
GPUNIC_DEV_FN void gpunic_perf_atomic_wr(const struct gpunic_perf_ctx *c, uint64_t i,
					 struct gpunic_dev_send_wr *wr, struct gpunic_dev_sge *sge)
{
	uint64_t visit = i / c->slots, compare_add = GPUNIC_PERF_ATOMIC_ADD, swap = 0;

	if (c->atomic_op == MLX5_OPCODE_ATOMIC_CS) {
		compare_add = c->verify ? visit : 0;
		swap = c->verify ? visit + 1 : 0;
	}
	gpunic_dev_atomic_wr(wr, sge, (uint8_t)c->atomic_op, GPUNIC_DEV_SEND_SIGNALED,
			     c->lbuf_iova + (i % c->atomic_res_slots) * 8, c->lkey,
			     c->remote_va + (i % c->slots) * (uint64_t)c->atomic_step, c->rkey,
			     compare_add, swap);
}

/* Check operation @i's fetched value, once its completion is in (see the top of the file). */
GPUNIC_DEV_FN void gpunic_perf_atomic_check(struct gpunic_perf_ctx *c, uint64_t i)
{
	const uint64_t *res = (const uint64_t *)(const void *)(c->lbuf +
							 (i % c->atomic_res_slots) * 8);
	uint64_t got = gpunic_dev_load_acquire_u64(res), slot = i % c->slots, want;

	if (c->verify)
		want = i / c->slots;
	else if (i >= c->slots)
		want = c->atomic_last[slot] + (c->atomic_op == MLX5_OPCODE_ATOMIC_FA ?
					       GPUNIC_PERF_ATOMIC_ADD : 0);
	else
		want = got;	/* perftest's buffer: the first value of a target is anything */
	c->atomic_last[slot] = got;
	if (!c->verify && i < c->slots)
		return;
	c->verified++;
	if (got == want)
		return;
	if (!c->bad) {
		c->bad_msg = i;
		c->bad_off = slot;
		c->atomic_got = got;
		c->atomic_want = want;
	}
	c->bad++;
}

/* Basic blocks one such request takes (they are all the same size within a run). */
GPUNIC_DEV_FN uint32_t gpunic_perf_op_bbs(const struct gpunic_perf_ctx *c, uint8_t opcode)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	int bbs;

	gpunic_perf_op_wr(c, opcode, 0, &wr, &sge);
	bbs = gpunic_dev_send_wqe_bbs(c->qp, &wr);
	return bbs > 0 ? (uint32_t)bbs : 1;
}

/* Post message @i; @mt: through the shared protocol (put_bw). Return: as post_send. */
GPUNIC_DEV_FN int64_t gpunic_perf_post_op(struct gpunic_perf_ctx *c, uint8_t opcode, uint64_t i,
					  int mt)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;

	if (opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA)
		gpunic_perf_atomic_wr(c, i, &wr, &sge);
	else
		gpunic_perf_op_wr(c, opcode, i, &wr, &sge);
	return mt ? gpunic_dev_post_send_mt(c->qp, &wr) : gpunic_dev_post_send(c->qp, &wr);
}

/* ---------------------------------------------------------------- latency */

/*
 * The latency tests' fast path (what the loopback forwarder does too, docs/ARCHITECTURE.md):
 * a message costs the executor one read of host memory, the poll that sees the peer's answer.
 * Send completions are not waited for on the way: they are taken during that poll, in the
 * same round trip (gpunic_dev_poll_both, or the flag byte's load issued before the CQE's), and
 * all of them before the test ends. Inline messages are built from a copy in the executor's
 * own memory (on a GPU lbuf is host memory: reading it would be one more round trip), and in
 * GPU_BF mode a one-block WQE goes to the BlueFlame page with no fence or doorbell.
 */
struct gpunic_perf_lat {
	uint64_t posted;        /* sends posted */
	uint64_t reaped;        /* send completions taken */
	uint32_t nbb;           /* basic blocks of every WQE this test posts */
	uint32_t inl;           /* 1: messages go inline, from msg */
	uint8_t msg[GPUNIC_DEV_CQE_INLINE_MAX * 2];
};

GPUNIC_DEV_FN void gpunic_perf_lat_init(struct gpunic_perf_ctx *c, struct gpunic_perf_lat *l,
					uint8_t opcode)
{
	uint32_t i;

	l->posted = 0;
	l->reaped = 0;
	l->nbb = gpunic_perf_op_bbs(c, opcode);
	l->inl = c->size <= c->qp->max_inline && c->size <= sizeof(l->msg);
	if (l->inl)
		for (i = 0; i < c->size; i++)
			l->msg[i] = c->lbuf[i];
}

/* Count a taken send completion. Return: 0, or -1 for an error CQE (ctx->err says). */
GPUNIC_DEV_FN int gpunic_perf_lat_reaped(struct gpunic_perf_ctx *c, struct gpunic_perf_lat *l,
					 const struct gpunic_dev_cqe *cqe)
{
	if (gpunic_perf_cqe_failed(c, cqe))
		return -1;
	l->reaped++;
	return 0;
}

/* Wait until at most @outstanding sends are not completed. Return: 0, or -1 (ctx->err). */
GPUNIC_DEV_FN int gpunic_perf_lat_reap(struct gpunic_perf_ctx *c, struct gpunic_perf_lat *l,
				       uint64_t outstanding)
{
	struct gpunic_dev_cqe cqe;
	uint32_t spins = 0;

	while (l->posted - l->reaped > outstanding) {
		if (gpunic_dev_poll_scq_sized(c->qp, &cqe, l->nbb)) {
			if (gpunic_perf_lat_reaped(c, l, &cqe))
				return -1;
			spins = 0;
			continue;
		}
		if (gpunic_perf_wait_turn(c, &spins))
			return -1;
	}
	return 0;
}

/* Post the next message (slot 0, as perftest) and hand it to the NIC. Return: 0 or -1. */
GPUNIC_DEV_FN int gpunic_perf_lat_post(struct gpunic_perf_ctx *c, struct gpunic_perf_lat *l,
				       uint8_t opcode)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	int64_t r;

	gpunic_perf_op_wr(c, opcode, 0, &wr, &sge);
	if (l->inl)
		sge.addr = (uint64_t)(uintptr_t)l->msg;
	for (;;) {
		r = gpunic_dev_post_send(c->qp, &wr);
		if (r != -ENOMEM)
			break;
		/* the send queue is full of uncompleted sends: wait for the oldest */
		if (gpunic_perf_lat_reap(c, l, l->posted - l->reaped - 1))
			return -1;
	}
	if (r < 0) {
		c->err = (int32_t)r;
		return -1;
	}
	l->posted++;
	gpunic_dev_submit(c->qp);
	return 0;
}

/* The message's last byte (perftest's iteration byte): in the inline copy and in lbuf. */
GPUNIC_DEV_FN void gpunic_perf_lat_mark(struct gpunic_perf_ctx *c, struct gpunic_perf_lat *l,
					uint8_t v)
{
	if (l->inl)
		l->msg[c->size - 1] = v;
	else
		c->lbuf[c->size - 1] = v;
}

/* Stage profile: the next message handed to the NIC, @t0 being when its post began. */
GPUNIC_DEV_FN void gpunic_perf_prof_posted(struct gpunic_perf_ctx *c, uint64_t t0)
{
	if (c->profile)
		c->prof.post_ns += gpunic_dev_clock_ns() - t0;
	c->prof.posts++;
}

/* Stage profile: now, when the stages are timed (else 0, with no clock read). */
GPUNIC_DEV_FN uint64_t gpunic_perf_prof_now(const struct gpunic_perf_ctx *c)
{
	return c->profile ? gpunic_dev_clock_ns() : 0;
}

/* Stage profile: an answer came after @empty polls that found nothing. */
GPUNIC_DEV_FN void gpunic_perf_prof_answer(struct gpunic_perf_ctx *c, uint32_t empty)
{
	c->prof.answers++;
	c->prof.empty_polls += empty;
}

/* Torn completion lines read so far on both CQs (the stage profile counts the run's share). */
GPUNIC_DEV_FN uint32_t gpunic_perf_torn_now(const struct gpunic_perf_ctx *c)
{
	return c->qp->state->rcq_torn + c->qp->state->scq_torn;
}

/* The iteration done: tell the host's watchdog. */
GPUNIC_DEV_FN void gpunic_perf_lat_progress(struct gpunic_perf_ctx *c, uint64_t done)
{
	c->completed = done;
	gpunic_dev_store_relaxed_u32(&c->ctl->progress, (uint32_t)done);
}

/* perftest run_iter_lat_write: the iteration number in the last byte is the message. */
GPUNIC_DEV_FN void gpunic_perf_lat_write(struct gpunic_perf_ctx *c)
{
	struct gpunic_perf_lat l;
	struct gpunic_dev_cqe cqe;
	const uint8_t *poll = c->rbuf + c->size - 1;
	uint64_t scnt = 0, rcnt = 0, n = c->iters;
	uint32_t spins;
	uint8_t seen;

	uint32_t torn0 = gpunic_perf_torn_now(c);
	uint64_t t0;

	gpunic_perf_lat_init(c, &l, MLX5_OPCODE_RDMA_WRITE);
	while (scnt < n || rcnt < n) {
		if (rcnt < n && !(scnt < 1 && c->client)) {
			rcnt++;
			spins = 0;
			for (;;) {
				/* the byte's load goes first: the CQE's joins it in flight */
				seen = gpunic_dev_load_relaxed_u8(poll);
				if (l.posted != l.reaped &&
				    gpunic_dev_poll_scq_sized(c->qp, &cqe, l.nbb) &&
				    gpunic_perf_lat_reaped(c, &l, &cqe))
					return;
				if (seen == (uint8_t)rcnt)
					break;
				if (gpunic_perf_wait_turn(c, &spins))
					return;
			}
			gpunic_perf_prof_answer(c, spins);
		}
		if (scnt < n) {
			t0 = gpunic_dev_clock_ns();
			c->t_post[scnt] = t0;
			gpunic_perf_lat_mark(c, &l, (uint8_t)++scnt);
			if (gpunic_perf_lat_post(c, &l, MLX5_OPCODE_RDMA_WRITE))
				return;
			gpunic_perf_prof_posted(c, t0);
			gpunic_perf_lat_progress(c, scnt);
		}
	}
	c->t_post[n] = gpunic_dev_clock_ns();
	gpunic_perf_lat_reap(c, &l, 0);
	c->prof.torn = gpunic_perf_torn_now(c) - torn0;
}

/* perftest run_iter_lat_send: receive (server first), then send; receives reposted. */
GPUNIC_DEV_FN void gpunic_perf_lat_send(struct gpunic_perf_ctx *c)
{
	struct gpunic_perf_lat l;
	struct gpunic_dev_cqe cqe, scqe;
	uint64_t scnt = 0, rcnt = 0, n = c->iters;
	uint32_t spins;
	int got;

	uint32_t torn0 = gpunic_perf_torn_now(c);
	uint64_t t0;

	gpunic_perf_lat_init(c, &l, MLX5_OPCODE_SEND);
	memset(&cqe, 0, sizeof(cqe));	/* filled before use; the compiler cannot tell */
	while (scnt < n || rcnt < n) {
		if (rcnt < n && !(scnt < 1 && c->client)) {
			spins = 0;
			for (;;) {
				got = gpunic_dev_poll_both(c->qp, &cqe, &scqe, l.nbb);
				if ((got & 2) && gpunic_perf_lat_reaped(c, &l, &scqe))
					return;
				if (got & 1)
					break;
				if (gpunic_perf_wait_turn(c, &spins))
					return;
			}
			t0 = gpunic_perf_prof_now(c);
			gpunic_perf_prof_answer(c, spins);
			if (gpunic_perf_cqe_failed(c, &cqe))
				return;
			if (cqe.byte_cnt != c->size) {
				c->err = -EIO;
				return;
			}
			/* as perftest: exactly iters receives per run, none left over for the
			 * next message size */
			if (rcnt + c->rx_depth < n)
				gpunic_perf_post_recv(c);
			rcnt++;
			c->prof.take_ns += gpunic_perf_prof_now(c) - t0;
		}
		if (scnt < n) {
			t0 = gpunic_dev_clock_ns();
			c->t_post[scnt] = t0;
			scnt++;
			if (gpunic_perf_lat_post(c, &l, MLX5_OPCODE_SEND))
				return;
			gpunic_perf_prof_posted(c, t0);
			gpunic_perf_lat_progress(c, scnt);
		}
	}
	c->t_post[n] = gpunic_dev_clock_ns();
	gpunic_perf_lat_reap(c, &l, 0);
	c->prof.torn = gpunic_perf_torn_now(c) - torn0;
}

/* perftest run_iter_lat for READ: one READ at a time, the client alone. */
GPUNIC_DEV_FN void gpunic_perf_lat_read(struct gpunic_perf_ctx *c)
{
	uint32_t torn0 = gpunic_perf_torn_now(c);
	uint64_t i;

	for (i = 0; i < c->iters; i++) {
		c->t_post[i] = gpunic_dev_clock_ns();
		if (gpunic_perf_post_op(c, MLX5_OPCODE_RDMA_READ, 0, 0) < 0) {
			c->err = -ENOMEM;
			return;
		}
		gpunic_dev_submit(c->qp);
		gpunic_perf_prof_posted(c, c->t_post[i]);
		if (gpunic_perf_wait_scq(c))
			return;
		c->completed = i + 1;
		gpunic_dev_store_relaxed_u32(&c->ctl->progress, (uint32_t)(i + 1));
	}
	c->t_post[c->iters] = gpunic_dev_clock_ns();
	c->prof.torn = gpunic_perf_torn_now(c) - torn0;
}

/* perftest run_iter_lat for atomics: one at a time, the client alone, each value checked. */
GPUNIC_DEV_FN void gpunic_perf_lat_atomic(struct gpunic_perf_ctx *c)
{
	uint32_t torn0 = gpunic_perf_torn_now(c);
	uint64_t i;

	for (i = 0; i < c->iters; i++) {
		c->t_post[i] = gpunic_dev_clock_ns();
		if (gpunic_perf_post_op(c, (uint8_t)c->atomic_op, i, 0) < 0) {
			c->err = -ENOMEM;
			return;
		}
		gpunic_dev_submit(c->qp);
		gpunic_perf_prof_posted(c, c->t_post[i]);
		if (gpunic_perf_wait_scq(c))
			return;
		gpunic_perf_atomic_check(c, i);
		c->completed = i + 1;
		gpunic_dev_store_relaxed_u32(&c->ctl->progress, (uint32_t)(i + 1));
	}
	c->t_post[c->iters] = gpunic_dev_clock_ns();
	c->prof.torn = gpunic_perf_torn_now(c) - torn0;
}

/* ---------------------------------------------------------------- bandwidth */

/* perftest run_iter_bw: up to tx_depth operations in flight, every one signalled. READ data is
 * checked as each READ completes (the client is the side that receives it). */
GPUNIC_DEV_FN void gpunic_perf_bw_client(struct gpunic_perf_ctx *c, uint8_t opcode)
{
	struct gpunic_dev_cqe cqe;
	uint64_t posted = 0, done = 0, n = c->iters;
	uint32_t spins = 0, batch;
	int64_t r;

	c->t_post[0] = gpunic_dev_clock_ns();
	while (done < n) {
		batch = 0;
		while (posted < n && posted - done < c->tx_depth) {
			r = gpunic_perf_post_op(c, opcode, posted, 0);
			if (r == -ENOMEM)
				break;
			if (r < 0) {
				c->err = (int32_t)r;
				return;
			}
			posted++;
			batch++;
		}
		if (batch)
			gpunic_dev_submit(c->qp);
		if (!gpunic_dev_poll_scq(c->qp, &cqe)) {
			if (gpunic_perf_wait_turn(c, &spins))
				return;
			continue;
		}
		spins = 0;
		if (gpunic_perf_cqe_failed(c, &cqe))
			return;
		c->t_done[done] = gpunic_dev_clock_ns();
		/* every WQE is signalled and the send queue completes in order: this is @done */
		if (opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA)
			gpunic_perf_atomic_check(c, done);
		else if (opcode == MLX5_OPCODE_RDMA_READ && c->verify &&
		    gpunic_perf_verify_msg(c, c->lbuf + (done % c->slots) * (uint64_t)c->size,
					   c->size, GPUNIC_PERF_READ_SEED,
					   (uint32_t)((done % c->slots) * c->size), done)) {
			c->err = -ETIMEDOUT;
			return;
		}
		done++;
		c->completed = done;
		gpunic_dev_store_relaxed_u32(&c->ctl->progress, (uint32_t)done);
	}
}

/* perftest run_iter_bw_server: take iters SENDs, check each, repost its receive. */
GPUNIC_DEV_FN void gpunic_perf_bw_recv(struct gpunic_perf_ctx *c)
{
	struct gpunic_dev_cqe cqe;
	uint64_t i;
	uint32_t slot;

	for (i = 0; i < c->iters; i++) {
		if (gpunic_perf_wait_rcq(c, &cqe))
			return;
		if (i == 0)
			c->t_post[0] = gpunic_dev_clock_ns();
		c->t_done[i] = gpunic_dev_clock_ns();
		slot = cqe.wqe_idx % c->rx_depth;
		if (c->verify) {
			if (cqe.byte_cnt != c->size) {
				if (!c->bad) {
					c->bad_msg = i;
					c->bad_off = cqe.byte_cnt;
					c->bad_byte = 0;
					c->want_byte = 0;
				}
				c->bad++;
				c->verified++;
			} else if (gpunic_perf_verify_msg(c, c->rbuf + (uint64_t)slot * c->size,
							  c->size, (uint32_t)(i % c->slots), 0,
							  i)) {
				c->err = -ETIMEDOUT;
				return;
			}
		}
		if (i + c->rx_depth < c->iters)
			gpunic_perf_post_recv(c);
		c->completed = i + 1;
		gpunic_dev_store_relaxed_u32(&c->ctl->progress, (uint32_t)(i + 1));
	}
}

/*
 * put_bw, one of nthreads posting threads (@tid): messages tid, tid + nthreads, ... as WRITEs
 * through the shared protocol. Thread 0 is also the send CQ's one consumer: it polls until
 * every thread has posted and the NIC has completed everything reserved.
 */
GPUNIC_DEV_FN void gpunic_perf_put_thread(struct gpunic_perf_ctx *c, uint32_t tid)
{
	struct gpunic_dev_qp_state *st = c->qp->state;
	struct gpunic_dev_cqe cqe;
	uint64_t i = tid, done = 0;
	uint32_t spins = 0, base = 0, nbb = 1, comp;
	int64_t r;

	if (tid == 0) {
		base = c->sq_base;
		nbb = gpunic_perf_op_bbs(c, MLX5_OPCODE_RDMA_WRITE);
		c->t_post[0] = gpunic_dev_clock_ns();
	}
	for (;;) {
		if (i < c->iters) {
			r = gpunic_perf_post_op(c, MLX5_OPCODE_RDMA_WRITE, i, 1);
			if (r >= 0) {
				i += c->nthreads;
				spins = 0;
			} else if (r != -ENOMEM) {
				c->err = (int32_t)r;
				gpunic_dev_store_release_u32(&c->ctl->stop, 1);
				return;
			}
		}
		if (tid != 0) {
			if (i >= c->iters)
				return;
			if (gpunic_perf_stopped(c))
				return;
			gpunic_dev_spin_wait(&spins);
			continue;
		}
		while (gpunic_dev_poll_scq(c->qp, &cqe)) {
			if (gpunic_perf_cqe_failed(c, &cqe)) {
				gpunic_dev_store_release_u32(&c->ctl->stop, 1);
				return;
			}
			comp = (gpunic_dev_load_acquire_u32(&st->sq_completed) - base) / nbb;
			while (done < comp && done < c->iters)
				c->t_done[done++] = gpunic_dev_clock_ns();
			c->completed = done;
			gpunic_dev_store_relaxed_u32(&c->ctl->progress, (uint32_t)done);
		}
		if (done >= c->iters)
			return;
		if (gpunic_perf_stopped(c)) {
			c->err = -ETIMEDOUT;
			return;
		}
		gpunic_dev_spin_wait(&spins);
	}
}

/* ---------------------------------------------------------------- driver */

/* Receives that must be posted before the peer may send (send tests). Return: 0 or -errno. */
GPUNIC_DEV_FN int gpunic_perf_prime(struct gpunic_perf_ctx *c)
{
	uint32_t i;
	int64_t r;

	c->rq_base = c->qp->state->rq_head;
	if (c->test != GPUNIC_PERF_SEND_LAT && !(c->test == GPUNIC_PERF_SEND_BW && !c->client))
		return 0;
	for (i = 0; i < c->rx_depth && i < c->iters; i++) {
		r = gpunic_perf_post_recv(c);
		if (r < 0)
			return (int)r;
	}
	return 0;
}

/* The side of a test that checks each message as it arrives (the one checkers help). */
GPUNIC_DEV_FN int gpunic_perf_checks_each(const struct gpunic_perf_ctx *c)
{
	return (c->test == GPUNIC_PERF_SEND_BW && !c->client) ||
	       (c->test == GPUNIC_PERF_READ_BW && c->client);
}

/*
 * The start of an executor thread's life: thread 0 alone primes and signals ready, then every
 * thread waits for go. Return: 1 when the thread is to run the test, 0 when it has nothing to
 * do or the run failed or was stopped before go.
 */
GPUNIC_DEV_FN int gpunic_perf_exec_begin(struct gpunic_perf_ctx *c, uint32_t tid)
{
	uint32_t spins = 0;
	int err;

	if (tid == 0) {
		err = gpunic_perf_prime(c);
		if (err)
			c->err = err;
		/* before any thread may post */
		c->sq_base = gpunic_dev_load_relaxed_u32(&c->qp->state->sq_reserved);
		gpunic_dev_store_release_u32(&c->ctl->ready, 1);
	}
	while (!gpunic_dev_load_acquire_u32(&c->ctl->go)) {
		if (gpunic_perf_stopped(c)) {
			if (tid == 0 && !c->err)
				c->err = -ETIMEDOUT;
			return 0;
		}
		gpunic_dev_spin_wait(&spins);
	}
	return !c->err;
}

/* The end of an executor thread's life: the last one out raises ctl->done. */
GPUNIC_DEV_FN void gpunic_perf_exec_end(struct gpunic_perf_ctx *c, uint32_t tid)
{
	if (tid == 0)
		gpunic_dev_store_release_u32(&c->job.quit, 1);
	/* counted in the context, not in ctl: ctl is host memory for a kernel, and system-scope
	 * atomics on host memory are not atomic across PCIe without host-native atomics
	 * (compute-sanitizer flags them) */
	gpunic_dev_full_barrier();
	if (gpunic_perf_atomic_add(&c->exited, 1) + 1 == c->nthreads)
		gpunic_dev_store_release_u32(&c->ctl->done, c->nthreads);
}

/* Thread @tid's part of the test, between go and the end. */
GPUNIC_DEV_FN void gpunic_perf_exec_run(struct gpunic_perf_ctx *c, uint32_t tid)
{
	if (tid != 0 && c->test != GPUNIC_PERF_PUT_BW) {
		if (tid <= c->checkers && gpunic_perf_checks_each(c))
			gpunic_perf_checker(c, tid);
		return;
	}
	switch (c->test) {
	case GPUNIC_PERF_WRITE_LAT:
		gpunic_perf_lat_write(c);
		break;
	case GPUNIC_PERF_SEND_LAT:
		gpunic_perf_lat_send(c);
		break;
	case GPUNIC_PERF_READ_LAT:
		if (c->client)
			gpunic_perf_lat_read(c);
		break;
	case GPUNIC_PERF_SEND_BW:
		if (c->client)
			gpunic_perf_bw_client(c, MLX5_OPCODE_SEND);
		else
			gpunic_perf_bw_recv(c);
		break;
	case GPUNIC_PERF_WRITE_BW:
		if (c->client)
			gpunic_perf_bw_client(c, MLX5_OPCODE_RDMA_WRITE);
		break;
	case GPUNIC_PERF_READ_BW:
		if (c->client)
			gpunic_perf_bw_client(c, MLX5_OPCODE_RDMA_READ);
		break;
	case GPUNIC_PERF_PUT_BW:
		if (c->client)
			gpunic_perf_put_thread(c, tid);
		break;
	case GPUNIC_PERF_ATOMIC_LAT:
		if (c->client)
			gpunic_perf_lat_atomic(c);
		break;
	case GPUNIC_PERF_ATOMIC_BW:
		if (c->client)
			gpunic_perf_bw_client(c, (uint8_t)c->atomic_op);
		break;
	default:
		c->err = -EINVAL;
		break;
	}
}

/*
 * gpunic_perf_exec - the whole life of one executor thread @tid (0 .. nthreads - 1): prime,
 * ready, wait for go, run, done. Thread 0 alone primes and signals ready. put_bw's threads all
 * post; elsewhere thread 0 runs the test and threads 1 .. checkers help it check payload.
 */
GPUNIC_DEV_FN void gpunic_perf_exec(struct gpunic_perf_ctx *c, uint32_t tid)
{
	if (gpunic_perf_exec_begin(c, tid))
		gpunic_perf_exec_run(c, tid);
	gpunic_perf_exec_end(c, tid);
}

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_PERF_DEV_H */
