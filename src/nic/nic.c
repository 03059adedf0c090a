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
#include <unistd.h>

#include "gpunic/log.h"
#include "nic_loc.h"

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

/* Control-path callers announce themselves so a busy engine thread lets them in quickly. */
void nic_lock(struct gpunic_nic *nic)
{
	atomic_fetch_add_explicit(&nic->ctrl_waiting, 1, memory_order_relaxed);
	pthread_mutex_lock(&nic->lock);
	atomic_fetch_sub_explicit(&nic->ctrl_waiting, 1, memory_order_relaxed);
}

void nic_unlock(struct gpunic_nic *nic)
{
	pthread_mutex_unlock(&nic->lock);
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

struct gpunic_nic *gpunic_nic_open(const struct gpunic_nic_attr *attr)
{
	struct gpunic_nic *nic;

	if (!attr || !attr->link || attr->comp_mask || !attr->ip ||
	    (attr->flags & ~(unsigned)(GPUNIC_NIC_NO_ICRC_CHECK | GPUNIC_NIC_TEST_TEAR_CQES)) ||
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
	if ((attr->flags & GPUNIC_NIC_NO_ICRC_CHECK) ||
	    (nic->link->caps & GPUNIC_LINK_CAP_RX_NO_ICRC))
		nic->decode_flags |= GPUNIC_DECODE_SKIP_ICRC;
	if (nic->attr.udp_port != GPUNIC_ROCE_UDP_PORT)
		nic->decode_flags |= GPUNIC_DECODE_ANY_PORT;	/* recv.c checks the port itself */
	if (getrandom(&nic->rng, sizeof(nic->rng), GRND_NONBLOCK) != sizeof(nic->rng))
		nic->rng = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid() ^ (uintptr_t)nic;
	nic->rng |= 1;	/* xorshift must not start at 0 */
	nic->test_rng = nic->rng * 0x9E3779B97F4A7C15ull | 1;
	gpunic_line_init();
	pthread_mutex_init(&nic->lock, NULL);
	pthread_mutex_init(&nic->qmem_lock, NULL);
	atomic_init(&nic->ctrl_waiting, 0);
	atomic_init(&nic->stop, false);
	nic_capture_open_env(nic);
	return nic;
}

int gpunic_nic_close(struct gpunic_nic *nic)
{
	if (!nic)
		return EINVAL;
	gpunic_nic_stop(nic);
	pthread_mutex_lock(&nic->lock);
	while (nic->nactive)
		qp_destroy_locked(nic->active[nic->nactive - 1]);
	cq_destroy_all(nic);
	mr_destroy_all(nic);
	pd_destroy_all(nic);
	nic_qmem_release_all(nic);
	pthread_mutex_unlock(&nic->lock);
	nic_capture_close(nic);
	gpunic_link_close(nic->link);
	pthread_mutex_destroy(&nic->lock);
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
		return resp_xmit(qp, budget);
	case GPUNIC_QPS_RTS:
		break;
	default:
		return 0;
	}
	if (qp->mode == GPUNIC_HANDLER_CPU_PROXY)
		req_proxy_forward(qp);
	req_doorbell(qp);
	work += resp_xmit(qp, budget);
	if (qp_is_rc(qp))
		work += comp_timers(qp);
	if (qp->pub.state == GPUNIC_QPS_RTS)
		work += req_send(qp, budget);
	return work;
}

int gpunic_nic_poll(struct gpunic_nic *nic, int budget)
{
	int work = 0, i, err;
	size_t len;

	if (!nic || budget <= 0)
		return 0;
	pthread_mutex_lock(&nic->lock);
	nic->now_ns = 0;
	for (i = 0; i < budget; i++) {
		err = gpunic_link_recv(nic->link, nic->rxbuf, sizeof(nic->rxbuf), &len);
		if (err == EAGAIN)
			break;
		if (err) {
			/* oversized or unreadable: the link counted it, the wire lost it */
			nic_count_drop(nic, NULL, GPUNIC_DROP_MALFORMED);
			continue;
		}
		nic->cnt.rx_frames++;
		nic->cnt.rx_bytes += len;
		nic_recv_frame(nic, nic->rxbuf, len);
		work++;
	}
	for (uint32_t q = 0; q < nic->nactive; q++)
		work += qp_progress(nic->active[q], budget);
	if (__builtin_expect(nic->cap_dirty, 0))
		nic_capture_flush(nic);
	pthread_mutex_unlock(&nic->lock);
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

static void *engine_main(void *arg)
{
	struct gpunic_nic *nic = arg;
	unsigned idle = 0;

	while (!atomic_load_explicit(&nic->stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&nic->ctrl_waiting, memory_order_relaxed))
			sched_yield();
		if (gpunic_nic_poll(nic, ENGINE_BUDGET))
			idle = 0;
		else if (idle < ENGINE_YIELD_ROUNDS)
			idle++;
		if (idle)
			engine_backoff(idle);
	}
	return NULL;
}

int gpunic_nic_start(struct gpunic_nic *nic, int cpu)
{
	cpu_set_t set;
	int err;

	if (!nic)
		return EINVAL;
	if (nic->thread_running)
		return EBUSY;
	atomic_store(&nic->stop, false);
	err = pthread_create(&nic->thread, NULL, engine_main, nic);
	if (err)
		return err;
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		err = pthread_setaffinity_np(nic->thread, sizeof(set), &set);
		if (err)
			gpunic_warn("cannot pin the engine to cpu %d: %s", cpu, strerror(err));
	}
	nic->thread_running = true;
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
	nic->thread_running = false;
	return 0;
}

int gpunic_nic_query_counters(struct gpunic_nic *nic, struct gpunic_nic_counters *out)
{
	if (!nic || !out)
		return EINVAL;
	pthread_mutex_lock(&nic->lock);
	*out = nic->cnt;
	pthread_mutex_unlock(&nic->lock);
	return 0;
}
