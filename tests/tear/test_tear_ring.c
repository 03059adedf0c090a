/* SPDX-License-Identifier: MIT */
/*
 * Torn CQEs against the data path alone (gpunic_dev.h on host threads, no NIC, no forwarder):
 * a writer thread plays the NIC and publishes CQEs into a GPUNIC_DEV_CQ_LINE_CHECK ring, each
 * as four 16-byte chunks (two 8-byte release stores each, as cq_store_torn does) in a random
 * order with random pauses, op_own's chunk possibly first; a reader thread polls the ring with
 * gpunic_dev_poll_rcq and checks that every CQE it is handed is exactly the one written at that
 * position: every decoded field and all 32 scattered bytes depend on the position, so any
 * chunk of another lap (or any half of one) shows, whatever the line check says.
 *
 * Forced sightings: every RING_FORCE_EVERY-th CQE is held half written (op_own's chunk in, a
 * chunk that differs from the slot's old content not) until the reader has reported a torn
 * sighting: so the count of torn lines read again is at least the count held, whatever the
 * scheduler does, and never depends on timing.
 *
 * Waits: every wait has a deadline of RING_WAIT_NS without progress (15 s; a loaded 2-core
 * machine answers in milliseconds, so reaching it means something is stuck).
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <gpunic/gpunic_dev.h>

#include "harness.h"
#include "tear_cases.h"

#define RING_FORCE_EVERY 64u
#define RING_PAUSE_MAX_NS 2000u
#define RING_WAIT_NS (15ull * 1000000000ull)

/* ---------------------------------------------------------------- the CQE of a position */

static uint32_t ring_imm(uint32_t pos)
{
	return pos * 2654435761u ^ 0x5a5a0f0fu;
}

static uint32_t ring_qpn(uint32_t pos)
{
	return (pos * 7u + 1u) & 0xffffffu;
}

static uint16_t ring_wqe_counter(uint32_t pos)
{
	return (uint16_t)(pos ^ 0x3c3cu);
}

/* The 64 bytes the NIC writes at producer position @pos of a ring of @cnt entries: a
 * RESP_SEND_IMM with 32 bytes scattered into it, its line check in word 10. */
static void ring_cqe(uint32_t pos, uint32_t cnt, uint32_t w[16])
{
	uint8_t *b = (uint8_t *)w;
	uint32_t v, k;
	uint16_t h;

	memset(w, 0, 64);
	for (k = 0; k < 32; k++)
		b[k] = tear_pat(pos, k);
	v = gpunic_dev_htobe32(ring_imm(pos));
	memcpy(b + 36, &v, 4);
	v = gpunic_dev_htobe32(32);
	memcpy(b + 44, &v, 4);
	v = gpunic_dev_htobe32(ring_qpn(pos));
	memcpy(b + 56, &v, 4);
	h = gpunic_dev_be16toh(ring_wqe_counter(pos));
	memcpy(b + 60, &h, 2);
	b[63] = (uint8_t)(MLX5_CQE_RESP_SEND_IMM << 4 | MLX5_INLINE_SCATTER_32 |
			  (pos & 1 ? 2 : 0) | ((pos / cnt) & MLX5_CQE_OWNER_MASK));
	w[GPUNIC_DEV_CQE_CHECK_WORD] = gpunic_dev_cqe_check(w, pos);
}

/*
 * Is @c exactly the CQE of position @pos? Return: NULL, or the name of the first field that
 * differs. Every 8-byte half of the line that differs between two positions is covered by a
 * field compared here, except bytes 40-47 (the check word and a constant byte count).
 */
static const char *ring_cqe_wrong(const struct gpunic_dev_cqe *c, uint32_t pos)
{
	if (c->opcode != MLX5_CQE_RESP_SEND_IMM)
		return "opcode";
	if (c->byte_cnt != 32)
		return "byte_cnt";
	if (!c->data_in_cqe)
		return "data_in_cqe";
	for (uint32_t k = 0; k < 32; k++)
		if (c->data[k] != tear_pat(pos, k))
			return k < 16 ? "data (chunk 0)" : "data (chunk 1)";
	if (c->imm != ring_imm(pos))
		return "imm (chunk 2)";
	if (c->qpn != ring_qpn(pos))
		return "qpn (chunk 3)";
	if (c->wqe_counter != ring_wqe_counter(pos))
		return "wqe_counter (chunk 3)";
	if (c->solicited != (pos & 1))
		return "solicited (op_own)";
	if (c->wqe_idx != pos)
		return "wqe_idx (receive counter)";
	return NULL;
}

/* ---------------------------------------------------------------- a ring */

struct ring {
	struct gpunic_dev_qp q;
	uint8_t *cqbuf;
	uint32_t *dbrec;
	struct gpunic_dev_qp_state *st;
};

static void ring_open(struct ring *r, uint32_t cnt)
{
	memset(r, 0, sizeof(*r));
	r->cqbuf = aligned_alloc(64, (size_t)cnt * 64);
	r->dbrec = aligned_alloc(64, 64);
	r->st = aligned_alloc(64, sizeof(*r->st));
	CHECK(r->cqbuf && r->dbrec && r->st);
	memset(r->cqbuf, 0, (size_t)cnt * 64);
	for (uint32_t i = 0; i < cnt; i++)
		r->cqbuf[64 * i + 63] = MLX5_CQE_INVALID << 4 | MLX5_CQE_OWNER_MASK;
	memset(r->dbrec, 0, 64);
	memset(r->st, 0, sizeof(*r->st));
	r->q.rcq.buf = r->cqbuf;
	r->q.rcq.cqe_cnt = cnt;
	r->q.rcq.dbrec = r->dbrec;
	r->q.rcq.flags = GPUNIC_DEV_CQ_LINE_CHECK;
	r->q.state = r->st;
}

static void ring_close(struct ring *r)
{
	free(r->cqbuf);
	free(r->dbrec);
	free(r->st);
}

/* Store chunk @j of @w into the CQE slot @slot, as cq_store_torn does. */
static void ring_store_chunk(uint8_t *slot, const uint32_t *w, uint32_t j)
{
	const uint64_t *s = (const uint64_t *)(const void *)w + 2 * j;
	uint64_t *d = (uint64_t *)(void *)slot + 2 * j;

	__atomic_store_n(&d[0], s[0], __ATOMIC_RELEASE);
	__atomic_store_n(&d[1], s[1], __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- writer and reader */

struct ring_run {
	struct ring r;
	uint32_t n;
	uint32_t cnt;
	uint64_t seed;
	uint32_t stop;          /* reader -> writer: give up */
	uint32_t torn_seen;     /* reader -> writer: its rcq_torn, after each empty poll */
	uint32_t written;       /* writer progress */
	uint32_t holds;         /* CQEs held half written until a sighting */
	uint32_t skipped;       /* forced CQEs with no differing chunk (not held) */
	const char *err;        /* writer: why it gave up */
	uint32_t err_pos;
};

static void *ring_writer(void *arg)
{
	struct ring_run *run = arg;
	uint64_t rng = run->seed | 1;
	uint32_t pos, k, ci, spins, w[16], base;
	uint8_t order[4], slot_old[64];
	uint64_t end;

	for (pos = 0; pos < run->n; pos++) {
		uint8_t *slot = run->r.cqbuf + (size_t)(pos & (run->cnt - 1)) * 64;
		uint32_t hold_at = 4, keep = 4, npre = 0;

		/* Room: the consumer record (24 bits) says which slots the reader passed. */
		end = gpunic_dev_clock_ns() + RING_WAIT_NS;
		spins = 0;
		for (;;) {
			ci = gpunic_dev_be32toh(gpunic_dev_load_acquire_u32(run->r.dbrec));
			if (((pos - ci) & 0xffffffu) < run->cnt)
				break;
			if (__atomic_load_n(&run->stop, __ATOMIC_ACQUIRE))
				return NULL;
			if (gpunic_dev_clock_ns() > end) {
				run->err = "no room: the reader stopped consuming";
				run->err_pos = pos;
				return NULL;
			}
			gpunic_dev_spin_wait(&spins);
		}
		ring_cqe(pos, run->cnt, w);
		for (k = 0; k < 4; k++)
			order[k] = (uint8_t)k;
		if (pos % RING_FORCE_EVERY == RING_FORCE_EVERY / 2) {
			/* Held: op_own's chunk in, and out a chunk that differs from the slot's
			 * old content (it is only ours to read: the reader passed it). */
			memcpy(slot_old, slot, 64);
			base = (uint32_t)(tear_rand(&rng) % 3);
			for (k = 0; k < 3 && keep == 4; k++)
				if (memcmp(slot_old + 16 * ((base + k) % 3),
					   (uint8_t *)w + 16 * ((base + k) % 3), 16))
					keep = (base + k) % 3;
			if (keep == 4) {
				run->skipped++;
			} else {
				uint8_t post[4];
				uint32_t npost = 0;

				order[npre++] = 3;
				post[npost++] = (uint8_t)keep;
				for (k = 0; k < 3; k++) {
					if (k == keep)
						continue;
					if (tear_rand(&rng) & 1)
						order[npre++] = (uint8_t)k;
					else
						post[npost++] = (uint8_t)k;
				}
				tear_shuffle(order, npre, &rng);
				tear_shuffle(post, npost, &rng);
				memcpy(order + npre, post, npost);
				hold_at = npre;
			}
		}
		if (hold_at == 4)
			tear_shuffle(order, 4, &rng);
		for (k = 0; k < 4; k++) {
			if (k == hold_at) {
				/* The reader is at this position (it consumed every one before,
				 * each written whole), so it meets the line owned and torn. */
				base = __atomic_load_n(&run->torn_seen, __ATOMIC_ACQUIRE);
				end = gpunic_dev_clock_ns() + RING_WAIT_NS;
				while (__atomic_load_n(&run->torn_seen, __ATOMIC_ACQUIRE) == base) {
					if (__atomic_load_n(&run->stop, __ATOMIC_ACQUIRE))
						return NULL;
					if (gpunic_dev_clock_ns() > end) {
						run->err = "the reader never reported the held line torn";
						run->err_pos = pos;
						return NULL;
					}
					sched_yield();
				}
				run->holds++;
			}
			ring_store_chunk(slot, w, order[k]);
			tear_host_pause((uint32_t)(tear_rand(&rng) % (RING_PAUSE_MAX_NS + 1)));
		}
		__atomic_store_n(&run->written, pos + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * Run @n CQEs through a ring of @cnt entries, the reader polling with gpunic_dev_poll_rcq
 * (@batched: gpunic_dev_poll_rcq_batched, the consumer record published every eighth of the
 * ring). Every CQE handed to the reader must be the one of its position; the torn sightings
 * must be at least the lines held half written.
 */
static void ring_case(uint32_t cnt, uint32_t n, bool batched, uint64_t seed)
{
	struct ring_run run;
	struct gpunic_dev_cqe c;
	uint64_t t0, last, empty = 0;
	uint32_t got = 0, seen = 0;
	const char *wrong;
	pthread_t th;
	int got1;

	memset(&run, 0, sizeof(run));
	ring_open(&run.r, cnt);
	run.n = n;
	run.cnt = cnt;
	run.seed = seed;
	CHECK_EQ(pthread_create(&th, NULL, ring_writer, &run), 0);
	t0 = gpunic_dev_clock_ns();
	last = t0;
	while (got < n) {
		got1 = batched ? gpunic_dev_poll_rcq_batched(&run.r.q, &c, NULL) :
				 gpunic_dev_poll_rcq(&run.r.q, &c);
		if (got1) {
			wrong = ring_cqe_wrong(&c, got);
			if (wrong) {
				__atomic_store_n(&run.stop, 1, __ATOMIC_RELEASE);
				pthread_join(th, NULL);
				harness_fail(__FILE__, __LINE__,
					     "CQE %u (slot %u, lap %u) handed to the reader is not "
					     "the one written there: %s differs (imm 0x%x qpn 0x%x "
					     "counter 0x%x); torn sightings so far %u",
					     got, got & (cnt - 1), got / cnt, wrong, c.imm, c.qpn,
					     c.wqe_counter, run.r.st->rcq_torn);
			}
			got++;
			last = gpunic_dev_clock_ns();
			continue;
		}
		empty++;
		if (run.r.st->rcq_torn != seen) {
			seen = run.r.st->rcq_torn;
			__atomic_store_n(&run.torn_seen, seen, __ATOMIC_RELEASE);
			last = gpunic_dev_clock_ns();
		}
		if (run.err || gpunic_dev_clock_ns() - last > RING_WAIT_NS) {
			__atomic_store_n(&run.stop, 1, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
			harness_fail(__FILE__, __LINE__,
				     "stuck at CQE %u of %u (writer wrote %u): %s at %u", got, n,
				     __atomic_load_n(&run.written, __ATOMIC_ACQUIRE),
				     run.err ? run.err : "no progress for 15 s", run.err_pos);
		}
		if ((empty & 63) == 0)
			sched_yield();
	}
	pthread_join(th, NULL);
	CHECK(!run.err);
	CHECK_EQ(run.r.st->rcq_ci, n);
	CHECK_EQ(run.r.st->rq_tail, n);
	/* Deterministic: each held line was released only after a sighting of it. */
	CHECK(run.holds > 0);
	CHECK(run.r.st->rcq_torn >= run.holds);
	printf("ring of %u%s: %u CQEs written in 4 chunks in random orders, each handed over "
	       "whole and checked, in %.3f ms; torn sightings read again: %u (%u held until seen, "
	       "%u not held), empty polls %llu\n",
	       cnt, batched ? " (batched consumer record)" : "", n,
	       (double)(gpunic_dev_clock_ns() - t0) / 1e6,
	       run.r.st->rcq_torn, run.holds, run.skipped, (unsigned long long)empty);
	ring_close(&run.r);
}

/* ---------------------------------------------------------------- cases */

/* A ring of 8: 100k CQEs are 12500 laps, so every slot's old content is the previous lap's. */
TEST(ring_8)
{
	ring_case(8, 100000, false, 0x7ea51u);
}

/* A ring of 256 whose consumer record moves every 32 CQEs (the forwarder's way). */
TEST(ring_256_batched)
{
	ring_case(256, 100000, true, 0x7ea52u);
}

/*
 * The check and the checker, deterministically: torn and stale lines built by hand. A reader
 * with the line check rejects each one (and counts the torn ones); the same line read without
 * the check is taken, and ring_cqe_wrong names what is wrong with it, which is what the stress
 * cases rely on to see any torn line the check let through.
 */
TEST(ring_checker_catches_torn_lines)
{
	struct ring r, nocheck;
	struct gpunic_dev_qp_state st2;
	struct gpunic_dev_cqe c;
	uint32_t w[16], old[16], pos;

	ring_open(&r, 4);
	/* lap 0, whole */
	for (pos = 0; pos < 4; pos++) {
		ring_cqe(pos, 4, w);
		memcpy(r.cqbuf + 64 * pos, w, 64);
		CHECK_EQ(gpunic_dev_poll_rcq(&r.q, &c), 1);
		CHECK(ring_cqe_wrong(&c, pos) == NULL);
		CHECK(ring_cqe_wrong(&c, pos + 4) != NULL);
	}
	CHECK_EQ(r.st->rcq_torn, 0);
	/* position 4 (slot 0, lap 1): chunks 0-2 new, op_own old: stale, not ours, not torn */
	ring_cqe(0, 4, old);
	ring_cqe(4, 4, w);
	memcpy(r.cqbuf, w, 48);
	CHECK_EQ(gpunic_dev_poll_rcq(&r.q, &c), 0);
	CHECK_EQ(r.st->rcq_torn, 0);
	/* op_own new, chunk 1 old: owned and torn */
	memcpy(r.cqbuf + 48, (uint8_t *)w + 48, 16);
	memcpy(r.cqbuf + 16, (uint8_t *)old + 16, 16);
	CHECK_EQ(gpunic_dev_poll_rcq(&r.q, &c), 0);
	CHECK_EQ(r.st->rcq_torn, 1);
	CHECK_EQ(r.st->rcq_ci, 4);
	/* ... which a reader without the check takes, and the checker rejects */
	nocheck = r;
	st2 = *r.st;
	nocheck.q.state = &st2;
	nocheck.q.rcq.flags = 0;
	CHECK_EQ(gpunic_dev_poll_rcq(&nocheck.q, &c), 1);
	CHECK(ring_cqe_wrong(&c, 4) != NULL);
	/* half a chunk (8 bytes) of the old lap: still torn */
	memcpy(r.cqbuf + 16, (uint8_t *)w + 16, 8);
	CHECK_EQ(gpunic_dev_poll_rcq(&r.q, &c), 0);
	CHECK_EQ(r.st->rcq_torn, 2);
	st2 = *r.st;
	CHECK_EQ(gpunic_dev_poll_rcq(&nocheck.q, &c), 1);
	CHECK(ring_cqe_wrong(&c, 4) != NULL);
	/* whole: taken, and right */
	memcpy(r.cqbuf, w, 64);
	CHECK_EQ(gpunic_dev_poll_rcq(&r.q, &c), 1);
	CHECK(ring_cqe_wrong(&c, 4) == NULL);
	CHECK_EQ(r.st->rcq_torn, 2);
	/* two laps old with the right owner bit: slot 1 still holds position 1 whole when the
	 * reader expects position 9 (lap 2, owner 0 again). The check binds the position. */
	r.st->rcq_ci = 9;
	r.st->rq_tail = 9;
	CHECK_EQ(gpunic_dev_poll_rcq(&r.q, &c), 0);
	CHECK_EQ(r.st->rcq_torn, 3);
	st2 = *r.st;
	nocheck.q.state = &st2;
	CHECK_EQ(gpunic_dev_poll_rcq(&nocheck.q, &c), 1);
	CHECK(ring_cqe_wrong(&c, 9) != NULL);
	CHECK(ring_cqe_wrong(&c, 1) != NULL);	/* wqe_idx says 9 */
	ring_close(&r);
	printf("torn, half-chunk torn and stale lines rejected; taken without the check, each is "
	       "caught by the checker\n");
}
