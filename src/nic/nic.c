// SPDX-License-Identifier: MIT
/*
 * The NIC object and its engine: open/close on a link, the run-to-completion progress function
 * gpunic_nic_poll (receive, then every QP's responder output, completer timers and requester),
 * an optional engine thread with adaptive back-off, and the counters.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gpunic/log.h"
#include "link/link_hold.h"
#include "nic_loc.h"
#include "recv.h"

/* Engine thread back-off: spin first (lowest latency), then yield, then sleep briefly so that
 * a 2-core CI box still runs both ends and the test. */
#define ENGINE_BUDGET 64
#define ENGINE_SPIN_ROUNDS 2000
#define ENGINE_YIELD_ROUNDS 20000
#define ENGINE_SLEEP_NS 20000

static const char *const drop_names[GPUNIC_DROP_MAX] = {
	[GPUNIC_DROP_MALFORMED] = "malformed",
	[GPUNIC_DROP_NOT_FOR_US] = "not_for_us",
	[GPUNIC_DROP_BAD_ICRC] = "bad_icrc",
	[GPUNIC_DROP_UNKNOWN_QPN] = "unknown_qpn",
	[GPUNIC_DROP_QP_STATE] = "qp_state",
	[GPUNIC_DROP_OPCODE_QP_TYPE] = "opcode_qp_type",
	[GPUNIC_DROP_PSN] = "psn",
	[GPUNIC_DROP_OPCODE_SEQUENCE] = "opcode_sequence",
	[GPUNIC_DROP_LENGTH] = "length",
	[GPUNIC_DROP_RKEY] = "rkey",
	[GPUNIC_DROP_BOUNDS] = "bounds",
	[GPUNIC_DROP_ACCESS] = "access",
	[GPUNIC_DROP_NO_RECV_WQE] = "no_recv_wqe",
	[GPUNIC_DROP_RECV_TOO_SMALL] = "recv_too_small",
	[GPUNIC_DROP_LKEY] = "lkey",
	[GPUNIC_DROP_CQ_OVERFLOW] = "cq_overflow",
	[GPUNIC_DROP_UNEXPECTED_ACK] = "unexpected_ack",
	[GPUNIC_DROP_RD_RESOURCE] = "rd_resource",
	[GPUNIC_DROP_MISALIGNED] = "misaligned",
};

const char *gpunic_drop_reason_name(enum gpunic_drop_reason reason)
{
	if ((unsigned)reason < GPUNIC_DROP_MAX && drop_names[reason])
		return drop_names[reason];
	return "unknown";
}

void nic_count_drop(struct gpunic_nic *nic, struct nic_qp *qp, enum gpunic_drop_reason reason)
{
	nic->cnt.drops[reason]++;
	if (qp)
		qp->cnt.drops[reason]++;
	gpunic_dbg_ratelimited("drop %s qpn 0x%x", drop_names[reason], qp ? qp->pub.qp_num : 0);
}

/*
 * The lock word: a test-and-test-and-set lock. Its contenders are the control path and
 * threads calling gpunic_nic_poll, rarely at once, so an uncontended take is one exchange and
 * a give one store (a pthread mutex pair cost about 60 instructions on every inline poll, see
 * tests/hotpath); a waiter yields its CPU while the holder works.
 */
static __attribute__((noinline)) void lock_wait(struct gpunic_nic *nic)
{
	do {
		while (atomic_load_explicit(&nic->lock, memory_order_relaxed))
			sched_yield();
	} while (atomic_exchange_explicit(&nic->lock, true, memory_order_acquire));
}

/* Every inline poll takes the lock, so the uncontended take is inline and the wait for a
 * holder out of line. */
static inline void lock_take(struct gpunic_nic *nic)
{
	if (__builtin_expect(atomic_exchange_explicit(&nic->lock, true, memory_order_acquire), 0))
		lock_wait(nic);
}

static void lock_give(struct gpunic_nic *nic)
{
	atomic_store_explicit(&nic->lock, false, memory_order_release);
}

/*
 * The control path, and any thread calling gpunic_nic_poll while an engine thread runs, takes
 * the lock and parks the engine thread: it asks (park_req) and waits until the thread says it
 * stopped at the top of its loop (parked). The engine thread itself then polls with no lock and
 * no atomic read-modify-write: one relaxed load per poll.
 */
static __attribute__((noinline)) void engine_park_wait(struct gpunic_nic *nic)
{
	atomic_store(&nic->park_req, true);
	while (!atomic_load(&nic->parked))
		sched_yield();
}

/* What nic_lock does. Return: whether an engine thread runs (and so was parked); that changes
 * only under the lock, and lock_release needs it. */
static inline bool lock_acquire(struct gpunic_nic *nic)
{
	bool engine;

	lock_take(nic);
	engine = nic->thread_running;
	if (__builtin_expect(engine, 0))
		engine_park_wait(nic);
	return engine;
}

/* What nic_unlock does, given @engine as lock_acquire returned it. */
static inline void lock_release(struct gpunic_nic *nic, bool engine)
{
	if (__builtin_expect(engine, 0))
		atomic_store(&nic->park_req, false);
	lock_give(nic);
}

void nic_lock(struct gpunic_nic *nic)
{
	lock_acquire(nic);
}

void nic_unlock(struct gpunic_nic *nic)
{
	lock_release(nic, nic->thread_running);
}

/* ---------------------------------------------------------------- the hot list */

/*
 * How long a hot QP may have nothing to do before it leaves the hot list: a queue pair that
 * posts every few microseconds stays on it, and its BlueFlame page and doorbell are looked at
 * on every poll. Counted in QP visits shared by all hot QPs, which keeps it near a time: a
 * poll costs about one visit per hot QP, so with one hot QP it stays 4096 polls, and with a
 * thousand just woken by their connect (bench --qps 1000) they leave after 16 polls, instead
 * of making the engine visit all of them 4096 times while the active QP waits.
 */
#define HOT_QUIET_VISITS 4096u
#define HOT_QUIET_MIN_POLLS 16u

static uint32_t hot_quiet_polls(uint32_t nhot)
{
	uint32_t polls = nhot > 1 ? HOT_QUIET_VISITS / nhot : HOT_QUIET_VISITS;

	return polls < HOT_QUIET_MIN_POLLS ? HOT_QUIET_MIN_POLLS : polls;
}

void nic_qp_join_hot(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;

	qp->hot = true;
	qp->hot_idx = nic->nhot;
	nic->hot[nic->nhot++] = qp;
	nic->hot_quiet_max = hot_quiet_polls(nic->nhot);
}

void nic_qp_sleep(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;
	struct nic_qp *last;

	if (!qp->hot)
		return;
	last = nic->hot[--nic->nhot];
	nic->hot[qp->hot_idx] = last;
	last->hot_idx = qp->hot_idx;
	qp->hot = false;
	nic->hot_quiet_max = hot_quiet_polls(nic->nhot);
	/* with nothing hot, every poll scans (wake_posters) */
	if (!nic->nhot)
		nic->scan_wait = 0;
}

/* Nothing in hand: no WQE posted and not taken, no response queued, no timer running. */
static bool qp_quiet(const struct nic_qp *qp)
{
	switch (qp->pub.state) {
	case GPUNIC_QPS_RTS:
		if (qp->req.pos.ci != qp->req.sq_pi || qp->req.wqe_valid ||
		    qp->comp.ci != qp->req.started_ci || qp->comp.timer_armed ||
		    qp->comp.rnr_wait)
			return false;
		/* fall through */
	case GPUNIC_QPS_RTR:
		return qp->resp.q_head == qp->resp.q_tail;
	case GPUNIC_QPS_ERR:
		/* every posted WQE flushed (a full CQ holds the flush back until the consumer
		 * polls, and nothing else would wake the QP then) */
		return qp->comp.ci == qp->req.sq_pi &&
		       qp->rq_ci == (uint16_t)load_be32_acquire(&qp->dbrec[MLX5_RCV_DBR]);
	default:
		return true;
	}
}

/*
 * Which QPs posted since the last look: their doorbell record (receive or send producer),
 * their doorbell word or their mailbox differs from the engine's copy. A line of eight
 * entries is compared at once
 * with vector instructions where the CPU has them (picked once, at the first NIC open), so a
 * thousand idle QPs cost about a hundred compares.
 */
typedef uint32_t (*scan_fn)(const uint64_t *area, const uint64_t *seen, uint32_t n,
			    uint32_t *hits, uint32_t max_hits);

/* The records of block @i (8 entries) that differ, appended to @hits. */
static uint32_t scan_block_hits(const uint64_t *area, const uint64_t *seen, uint32_t i,
				uint32_t *hits, uint32_t nh, uint32_t max_hits)
{
	for (uint32_t k = 0; k < 8 && nh < max_hits; k++)
		if (area[i + k] != seen[i + k])
			hits[nh++] = i + k;
	return nh;
}

static uint32_t scan_records_plain(const uint64_t *area, const uint64_t *seen, uint32_t n,
				   uint32_t *hits, uint32_t max_hits)
{
	uint32_t nh = 0;

	for (uint32_t i = 0; i < n; i += 8) {
		uint64_t d = 0;

		for (uint32_t k = 0; k < 8; k++)
			d |= area[i + k] ^ seen[i + k];
		if (d)
			nh = scan_block_hits(area, seen, i, hits, nh, max_hits);
	}
	return nh;
}

#if defined(__x86_64__)
__attribute__((target("avx512f")))
static uint32_t scan_records_avx512(const uint64_t *area, const uint64_t *seen, uint32_t n,
				    uint32_t *hits, uint32_t max_hits)
{
	uint32_t nh = 0;

	for (uint32_t i = 0; i < n; i += 8)
		if (_mm512_cmpneq_epu64_mask(_mm512_load_si512(area + i),
					     _mm512_load_si512(seen + i)))
			nh = scan_block_hits(area, seen, i, hits, nh, max_hits);
	return nh;
}

__attribute__((target("avx2")))
static uint32_t scan_records_avx2(const uint64_t *area, const uint64_t *seen, uint32_t n,
				  uint32_t *hits, uint32_t max_hits)
{
	uint32_t nh = 0;

	for (uint32_t i = 0; i < n; i += 8) {
		__m256i a = _mm256_xor_si256(_mm256_load_si256((const __m256i *)(area + i)),
					     _mm256_load_si256((const __m256i *)(seen + i)));
		__m256i b = _mm256_xor_si256(_mm256_load_si256((const __m256i *)(area + i + 4)),
					     _mm256_load_si256((const __m256i *)(seen + i + 4)));

		if (!_mm256_testz_si256(_mm256_or_si256(a, b), _mm256_or_si256(a, b)))
			nh = scan_block_hits(area, seen, i, hits, nh, max_hits);
	}
	return nh;
}
#endif

static scan_fn scan_pick(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return scan_records_avx512;
	if (__builtin_cpu_supports("avx2"))
		return scan_records_avx2;
#endif
	return scan_records_plain;
}

static scan_fn scan_records;
static pthread_once_t scan_once = PTHREAD_ONCE_INIT;

static void scan_init(void)
{
	scan_records = scan_pick();
}

/* Wake each QP whose entry of @area differs from @seen (each entry read once). */
static inline void wake_changed_few(struct gpunic_nic *nic, const uint64_t *area, uint64_t *seen)
{
	for (uint32_t k = 0; k < nic->qpn_slot_top; k++) {
		uint64_t v = __atomic_load_n(&area[k], __ATOMIC_RELAXED);

		if (v == seen[k])
			continue;
		seen[k] = v;
		if (nic->qps[k])
			nic_qp_wake(nic->qps[k]);
	}
}

/* The scan for a few QPs, where dispatching to the vector code costs more than it saves, and
 * a list of hits more than waking each QP where its record differs; the doorbell words too
 * while a GPU_DB QP exists. */
static __attribute__((noinline)) void wake_posters_few(struct gpunic_nic *nic)
{
	wake_changed_few(nic, (const uint64_t *)nic->dbrec_area, nic->dbrec_seen);
	if (nic->ndb)
		wake_changed_few(nic, nic->db_area, nic->db_seen);
}

/* Wake the QPs of slots @base.. @base + @n whose entry of @area differs from @seen, and take
 * the entry as seen. @base and @n are multiples of 8 (a vector line). */
static void wake_changed(struct gpunic_nic *nic, const uint64_t *area, uint64_t *seen,
			 uint32_t base, uint32_t n)
{
	uint32_t hits[64], nh = scan_records(area + base, seen + base, n, hits, 64);

	for (uint32_t i = 0; i < nh; i++) {
		uint32_t k = base + hits[i];

		seen[k] = __atomic_load_n(&area[k], __ATOMIC_RELAXED);
		if (nic->qps[k])
			nic_qp_wake(nic->qps[k]);
	}
}

/* Polls between two scans of the records while QPs are hot: a hot QP is looked at directly on
 * every poll, so the scan only has to notice an idle QP's first post, a few polls late (with
 * few QPs too: the scan of a handful of records costs a hot ping-pong about 150 instructions
 * per round trip, tests/hotpath). */
#define SCAN_EVERY_BUSY 8u

/* While QPs are hot, one scan covers at most this many records and the next scan the next
 * ones: a thousand idle QPs cost the hot one a bounded slice of a poll (a whole scan of them,
 * every eighth poll, was a third of its round trip on the H200 host), and an idle QP's first
 * post is still noticed within hwm / SCAN_CHUNK scans. A multiple of 16, as qpn_slot_hwm. */
#define SCAN_CHUNK 256u

/*
 * Out of line: the poll that skips the scan does not pay for its frame. The doorbell words are
 * a second array beside the records, compared the same way over the same slots, and only while
 * a GPU_DB QP exists: the other modes keep their record current (GPU_BF) or are woken by their
 * mailbox (CPU_PROXY), while device code ringing a GPU_DB QP may leave the record alone. Then
 * each idle QP costs one more 8-byte compare (an eighth of a vector compare) per scan: what
 * noticing a doorbell rung without the record costs at the least.
 */
static __attribute__((noinline)) void scan_posters(struct gpunic_nic *nic)
{
	uint32_t n = nic->qpn_slot_hwm, base = 0;

	if (nic->nhot && n > SCAN_CHUNK) {
		base = nic->scan_cursor < n ? nic->scan_cursor : 0;
		n = n - base < SCAN_CHUNK ? n - base : SCAN_CHUNK;
		nic->scan_cursor = base + n;
	}
	if (n <= 32) {
		wake_posters_few(nic);
	} else {
		wake_changed(nic, (const uint64_t *)nic->dbrec_area, nic->dbrec_seen, base, n);
		if (nic->ndb)
			wake_changed(nic, nic->db_area, nic->db_seen, base, n);
	}
	if (nic->nproxy)
		wake_changed(nic, nic->mailbox_area, nic->mailbox_seen, base, n);
}

/* A countdown rather than a poll count taken modulo: the polls between two scans cost one
 * decrement each. */
static inline void wake_posters(struct gpunic_nic *nic)
{
	if (nic->scan_wait) {
		nic->scan_wait--;
		return;
	}
	nic->scan_wait = nic->nhot ? SCAN_EVERY_BUSY - 1 : 0;
	/* With a few QPs and no mailboxes the scan is one short loop, which needs no call to
	 * scan_posters. */
	if (nic->qpn_slot_hwm <= 32 && !nic->nproxy)
		wake_posters_few(nic);
	else
		scan_posters(nic);
}

uint64_t nic_rand(struct gpunic_nic *nic)
{
	uint64_t x = nic->test_rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	nic->test_rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t nic_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t nic_now(struct gpunic_nic *nic)
{
	struct timespec ts;

	if (!nic->now_ns) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		nic->now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	return nic->now_ns;
}

static void nic_records_free(struct gpunic_nic *nic);

/* Each dense array is 8 bytes per QP: a record pair, a doorbell word, a mailbox. */
#define SLOTS_BYTES ((size_t)NIC_MAX_QP * sizeof(uint64_t))

/* The dense doorbell records, doorbell words and mailboxes, placed for the executor, and the
 * engine's copies. */
static int nic_records_alloc(struct gpunic_nic *nic)
{
	nic->dbrec_area = nic_qmem_alloc(nic, SLOTS_BYTES, GPUNIC_QUEUE_DBREC, &nic->dbrec_area_dev);
	nic->db_area = nic_qmem_alloc(nic, SLOTS_BYTES, GPUNIC_QUEUE_DOORBELL, &nic->db_area_dev);
	nic->mailbox_area = nic_qmem_alloc(nic, SLOTS_BYTES, GPUNIC_QUEUE_DOORBELL,
					   &nic->mailbox_area_dev);
	nic->dbrec_seen = aligned_alloc(64, SLOTS_BYTES);
	nic->db_seen = aligned_alloc(64, SLOTS_BYTES);
	nic->mailbox_seen = aligned_alloc(64, SLOTS_BYTES);
	if (!nic->dbrec_area || !nic->db_area || !nic->mailbox_area || !nic->dbrec_seen ||
	    !nic->db_seen || !nic->mailbox_seen) {
		nic_records_free(nic);
		return ENOMEM;
	}
	memset(nic->dbrec_seen, 0, SLOTS_BYTES);
	memset(nic->db_seen, 0, SLOTS_BYTES);
	memset(nic->mailbox_seen, 0, SLOTS_BYTES);
	return 0;
}

static void nic_records_free(struct gpunic_nic *nic)
{
	nic_qmem_free(nic, nic->dbrec_area_dev, SLOTS_BYTES);
	nic_qmem_free(nic, nic->db_area_dev, SLOTS_BYTES);
	nic_qmem_free(nic, nic->mailbox_area_dev, SLOTS_BYTES);
	free(nic->dbrec_seen);
	free(nic->db_seen);
	free(nic->mailbox_seen);
	nic->dbrec_area = NULL;
	nic->db_area = NULL;
	nic->mailbox_area = NULL;
}

struct gpunic_nic *gpunic_nic_open(const struct gpunic_nic_attr *attr)
{
	struct gpunic_nic *nic;

	if (!attr || !attr->link || attr->comp_mask || !attr->ip ||
	    (attr->flags & ~(unsigned)(GPUNIC_NIC_NO_ICRC_CHECK | GPUNIC_NIC_TEST_TEAR_CQES |
				       GPUNIC_NIC_TIME_ENGINE)) ||
	    (attr->executor != GPUNIC_EXECUTOR_CPU && attr->executor != GPUNIC_EXECUTOR_GPU) ||
	    (attr->executor == GPUNIC_EXECUTOR_GPU && !attr->mem)) {
		errno = EINVAL;
		return NULL;
	}
	nic = calloc(1, sizeof(*nic));
	if (!nic) {
		errno = ENOMEM;
		return NULL;
	}
	nic->mrs = calloc(NIC_MAX_MR, sizeof(*nic->mrs));
	if (!nic->mrs) {
		free(nic);
		errno = ENOMEM;
		return NULL;
	}
	nic->attr = *attr;
	if (!nic->attr.udp_port)
		nic->attr.udp_port = GPUNIC_ROCE_UDP_PORT;
	nic->link = attr->link;
	/* a link that cannot show the ICRC, or a memory cable that cannot corrupt a bit (the
	 * ICRC guards against corruption, not against a peer, who can compute it) */
	if ((attr->flags & GPUNIC_NIC_NO_ICRC_CHECK) ||
	    (nic->link->caps & (GPUNIC_LINK_CAP_RX_NO_ICRC | GPUNIC_LINK_CAP_RX_INTACT)))
		nic->decode_flags |= GPUNIC_DECODE_SKIP_ICRC;
	/* the IP header checksum guards the same thing: the memory cable cannot flip a bit, and
	 * the kernel checked it already behind a udp link's synthesised headers */
	if (nic->link->caps & (GPUNIC_LINK_CAP_RX_NO_ICRC | GPUNIC_LINK_CAP_RX_INTACT))
		nic->decode_flags |= GPUNIC_DECODE_SKIP_IP_CSUM;
	if (nic->attr.udp_port != GPUNIC_ROCE_UDP_PORT)
		nic->decode_flags |= GPUNIC_DECODE_ANY_PORT;	/* recv.c checks the port itself */
	nic->time_engine = attr->flags & GPUNIC_NIC_TIME_ENGINE;
	if (getrandom(&nic->rng, sizeof(nic->rng), GRND_NONBLOCK) != sizeof(nic->rng))
		nic->rng = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid() ^ (uintptr_t)nic;
	nic->rng |= 1;	/* xorshift must not start at 0 */
	nic->test_rng = nic->rng * 0x9E3779B97F4A7C15ull | 1;
	gpunic_line_init();
	pthread_once(&scan_once, scan_init);
	atomic_init(&nic->lock, false);
	pthread_mutex_init(&nic->qmem_lock, NULL);
	atomic_init(&nic->stop, false);
	atomic_init(&nic->park_req, false);
	atomic_init(&nic->parked, false);
	if (nic_records_alloc(nic)) {
		pthread_mutex_destroy(&nic->qmem_lock);
		free(nic->mrs);
		free(nic);
		errno = ENOMEM;
		return NULL;
	}
	nic_capture_open_env(nic);
	return nic;
}

int gpunic_nic_close(struct gpunic_nic *nic)
{
	if (!nic)
		return EINVAL;
	gpunic_nic_stop(nic);
	lock_take(nic);
	while (nic->nactive)
		qp_destroy_locked(nic->active[nic->nactive - 1]);
	cq_destroy_all(nic);
	mr_destroy_all(nic);
	pd_destroy_all(nic);
	nic_records_free(nic);
	nic_qmem_release_all(nic);
	lock_give(nic);
	nic_capture_close(nic);
	gpunic_link_close(nic->link);
	pthread_mutex_destroy(&nic->qmem_lock);
	free(nic->mrs);
	free(nic);
	return 0;
}

/* One QP's share of a poll: what each state lets it do. */
static int qp_progress(struct nic_qp *qp, int budget)
{
	int work = 0;

	switch (qp->pub.state) {
	case GPUNIC_QPS_ERR:
		return qp_flush(qp);
	case GPUNIC_QPS_RTR:
		return qp->resp.q_head != qp->resp.q_tail ? resp_xmit(qp, budget) : 0;
	case GPUNIC_QPS_RTS:
		break;
	default:
		return 0;
	}
	if (qp->mode == GPUNIC_HANDLER_CPU_PROXY)
		req_proxy_forward(qp);
	req_doorbell(qp);
	if (qp->resp.q_head != qp->resp.q_tail)
		work += resp_xmit(qp, budget);
	if (qp_is_rc(qp)) {
		work += comp_timers(qp);
		/* a retry count that ran out moved it to ERR: nothing more to send */
		if (qp->pub.state != GPUNIC_QPS_RTS)
			return work;
	}
	return work + req_send(qp, budget);
}

/* One engine poll: frames in, QPs that posted woken, every hot QP moved on. The caller holds
 * the lock or is the engine thread. */
static int nic_poll_unlocked(struct gpunic_nic *nic, int budget)
{
	const uint8_t *frame;
	int work = 0, i, err, w;
	uint32_t quiet_max;
	size_t len;

	nic->now_ns = 0;
	for (i = 0; i < budget; i++) {
		/* The frame is parsed where it lies (in the shm slot, or where the link rebuilt a
		 * packed one). The front door reads each field once, so a peer that changes the
		 * bytes meanwhile cannot move a bound that was already checked. */
		err = link_rx_hold(nic->link);
		if (err == EAGAIN)
			break;
		if (err) {
			/* An oversized or unreadable frame: the link counted it, and it is lost as on
			 * a wire. */
			nic_count_drop(nic, NULL, GPUNIC_DROP_MALFORMED);
			continue;
		}
		hop_mark(HOP_RX);
		frame = nic->link->zc.rx_frame;
		len = nic->link->zc.rx_len;
		/* The two counters are updated apart: side by side, gcc pairs them into a vector
		 * add of six instructions (tests/hotpath). */
		nic->cnt.rx_frames++;
		nic_recv_frame(nic, frame, len);
		nic->cnt.rx_bytes += len;
		link_rx_release_held(nic->link);
		work++;
	}
	wake_posters(nic);
	quiet_max = nic->hot_quiet_max;
	for (uint32_t q = 0; q < nic->nhot;) {
		struct nic_qp *qp = nic->hot[q];

		nic->cnt.qp_visits++;
		w = qp_progress(qp, budget);
		work += w;
		/* The QP's state is looked at only once it has had its quota of polls without
		 * work: most polls find a hot QP waiting for its next post, and the state is the
		 * dearer of the two tests. */
		if (w) {
			qp->quiet_polls = 0;
		} else if (++qp->quiet_polls >= quiet_max && qp_quiet(qp)) {
			nic_qp_sleep(qp);	/* the last one moved into slot q */
			continue;
		}
		q++;
	}
	if (__builtin_expect(nic->cap_dirty, 0))
		nic_capture_flush(nic);
	return work;
}

int gpunic_nic_poll(struct gpunic_nic *nic, int budget)
{
	bool engine;
	int work;

	if (!nic || budget <= 0)
		return 0;
	/* nic_lock and nic_unlock, written out so that thread_running is read once */
	engine = lock_acquire(nic);
	work = nic_poll_unlocked(nic, budget);
	lock_release(nic, engine);
	return work;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static void engine_backoff(unsigned idle)
{
	struct timespec ts = { .tv_nsec = ENGINE_SLEEP_NS };

	if (idle < ENGINE_SPIN_ROUNDS)
		cpu_relax();
	else if (idle < ENGINE_YIELD_ROUNDS)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

/* Stop at the top of the loop while someone holds the lock (nic_lock). */
static void engine_park(struct gpunic_nic *nic)
{
	atomic_store(&nic->parked, true);
	while (atomic_load(&nic->park_req) &&
	       !atomic_load_explicit(&nic->stop, memory_order_relaxed))
		sched_yield();
	atomic_store(&nic->parked, false);
}

/* The engine's clock for GPUNIC_NIC_TIME_ENGINE: the TSC where there is one (a read costs
 * about 20 cycles, where clock_gettime costs about 20 ns), else CLOCK_MONOTONIC. */
static inline uint64_t engine_ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return nic_clock_ns();
#endif
}

/* GPUNIC_NIC_TIME_ENGINE: the time since @*mark goes to busy or idle as the poll it covers
 * did work or not (its back-off included); @*mark moves on. */
static void engine_account(struct gpunic_nic *nic, uint64_t *mark, bool busy)
{
	uint64_t now = engine_ticks();

	*(busy ? &nic->busy_ticks : &nic->idle_ticks) += now - *mark;
	*mark = now;
}

static void *engine_main(void *arg)
{
	struct gpunic_nic *nic = arg;
	unsigned idle = 0;
	uint64_t mark = engine_ticks();
	int work;

	hop_trace_role(HOP_ROLE_ENGINE);
	while (!atomic_load_explicit(&nic->stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&nic->park_req, memory_order_relaxed)) {
			engine_park(nic);
			mark = engine_ticks();	/* parked time is neither */
			continue;
		}
		work = nic_poll_unlocked(nic, ENGINE_BUDGET);
		if (work)
			idle = 0;
		else if (idle < ENGINE_YIELD_ROUNDS)
			idle++;
		if (idle)
			engine_backoff(idle);
		if (nic->time_engine)
			engine_account(nic, &mark, work != 0);
	}
	/* A nic_lock() that is waiting now must not wait for a thread that has left. */
	atomic_store(&nic->parked, true);
	return NULL;
}

int gpunic_nic_start(struct gpunic_nic *nic, int cpu)
{
	cpu_set_t set;
	int err;

	if (!nic)
		return EINVAL;
	lock_take(nic);
	if (nic->thread_running) {
		lock_give(nic);
		return EBUSY;
	}
	atomic_store(&nic->stop, false);
	atomic_store(&nic->park_req, false);
	atomic_store(&nic->parked, false);
	nic->busy_ticks = nic->idle_ticks = 0;
	nic->ticks0 = engine_ticks();
	nic->ticks0_ns = nic_clock_ns();
	/* Marked running before the thread exists, so that every control call from now on
	 * parks it. */
	nic->thread_running = true;
	err = pthread_create(&nic->thread, NULL, engine_main, nic);
	if (err)
		nic->thread_running = false;
	lock_give(nic);
	if (err)
		return err;
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		err = pthread_setaffinity_np(nic->thread, sizeof(set), &set);
		if (err)
			gpunic_warn("cannot pin the engine to cpu %d: %s", cpu, strerror(err));
	}
	return 0;
}

int gpunic_nic_stop(struct gpunic_nic *nic)
{
	if (!nic)
		return EINVAL;
	if (!nic->thread_running)
		return 0;
	atomic_store(&nic->stop, true);
	pthread_join(nic->thread, NULL);
	lock_take(nic);
	nic->thread_running = false;
	lock_give(nic);
	return 0;
}

int gpunic_nic_query_counters(struct gpunic_nic *nic, struct gpunic_nic_counters *out)
{
	if (!nic || !out)
		return EINVAL;
	nic_lock(nic);
	*out = nic->cnt;
	if (nic->time_engine && nic->thread_running) {
		/* Ticks to ns at the rate the two clocks have kept since the thread started. */
		double ns_per_tick = (double)(nic_clock_ns() - nic->ticks0_ns) /
				     (double)(engine_ticks() - nic->ticks0 + 1);

		out->engine_busy_ns = (uint64_t)((double)nic->busy_ticks * ns_per_tick);
		out->engine_idle_ns = (uint64_t)((double)nic->idle_ticks * ns_per_tick);
	}
	nic_unlock(nic);
	return 0;
}
