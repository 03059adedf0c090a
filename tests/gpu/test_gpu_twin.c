/* SPDX-License-Identifier: MIT */
/*
 * The CPU twin of the GPU data-path suite: every case of gt_tests.h with the kernel bodies of
 * gt_cases.h run by host threads against a CPU-executor softnic, and the forwarder's
 * gpunic_loop_step() on a host thread. This is how CI (no GPU) runs the suite's code.
 *
 * A GPU grid maps onto a few host threads: the one-thread cases get one; the many-poster cases
 * spread their posters (or warps, each played whole by one thread) over at most
 * TWIN_WORKERS threads, each running its posters' bodies one after another, plus one thread
 * for the send CQ's consumer. That is sound because a body only ever waits for the consumer or
 * for a post another thread has begun, never for a poster that has not started.
 */
#include <pthread.h>
#include <time.h>

#include "gt_fixture.h"

#define TWIN_WORKERS 8u
#define TWIN_STOP_GRACE_NS (10ull * 1000000000ull)
#define TWIN_READY_NS (5ull * 1000000000ull)

static struct twin_run {
	enum gt_kernel k;
	struct gt_args a;
	uint32_t posters;           /* worker threads running posters (mt, warp) */
	pthread_t th[TWIN_WORKERS + 1];
	uint32_t nth;
	uint32_t done;              /* threads that returned */
} twin;

static void twin_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

	nanosleep(&ts, NULL);
}

static void *twin_worker(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg, t;
	const struct gt_args *a = &twin.a;
	struct gpunic_dev_send_wr wrs[GPUNIC_DEV_WARP_SIZE];
	struct gpunic_dev_sge sgs[GPUNIC_DEV_WARP_SIZE];

	switch (twin.k) {
	case GT_K_XFER:
		gt_body_xfer(a);
		break;
	case GT_K_RECV:
		gt_body_recv(a);
		break;
	case GT_K_MT:
	case GT_K_WARP:
		if (w == twin.posters) {
			gt_body_consume(a);
			break;
		}
		for (t = w; t < a->nposters; t += twin.posters) {
			if (twin.k == GT_K_MT)
				gt_body_mt(a, t);
			else
				gt_body_warp(a, t, wrs, sgs);
		}
		break;
	}
	__atomic_fetch_add(&twin.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int twin_probe(char *why, size_t n)
{
	(void)why;
	(void)n;
	return 0;
}

static struct gpunic_dev_qp *twin_qp_publish(const struct gpunic_dev_qp *qp, char *why,
					     size_t n)
{
	struct gpunic_dev_qp *x = malloc(sizeof(*x));

	if (!x) {
		snprintf(why, n, "out of memory");
		return NULL;
	}
	*x = *qp;
	return x;
}

static void twin_qp_unpublish(struct gpunic_dev_qp *xqp)
{
	free(xqp);
}

static int twin_read_state(const struct gpunic_dev_qp_state *xstate,
			   struct gpunic_dev_qp_state *out, char *why, size_t n)
{
	(void)why;
	(void)n;
	memcpy(out, xstate, sizeof(*out));
	return 0;
}

static int twin_launch(enum gt_kernel k, const struct gt_args *a, uint32_t blocks,
		       uint32_t threads, char *why, size_t n)
{
	uint32_t logical, i;
	int err;

	memset(&twin, 0, sizeof(twin));
	twin.k = k;
	twin.a = *a;
	switch (k) {
	case GT_K_XFER:
	case GT_K_RECV:
		twin.nth = 1;
		break;
	case GT_K_MT:
	case GT_K_WARP:
		logical = k == GT_K_MT ? blocks * threads : blocks * (threads / 32);
		if (!logical || logical != a->nposters || (k == GT_K_WARP && threads % 32)) {
			snprintf(why, n, "grid %ux%u does not match %u posters", blocks, threads,
				 a->nposters);
			return EINVAL;
		}
		twin.posters = logical < TWIN_WORKERS ? logical : TWIN_WORKERS;
		twin.nth = twin.posters + 1;
		break;
	default:
		snprintf(why, n, "unknown kernel %d", (int)k);
		return EINVAL;
	}
	for (i = 0; i < twin.nth; i++) {
		err = pthread_create(&twin.th[i], NULL, twin_worker, (void *)(uintptr_t)i);
		if (err) {
			snprintf(why, n, "pthread_create: %s", strerror(err));
			__atomic_store_n(&twin.a.ctl->stop, 1, __ATOMIC_RELEASE);
			while (i--)
				pthread_join(twin.th[i], NULL);
			return err;
		}
	}
	return 0;
}

static int twin_wait(struct gt_ctl *ctl, uint64_t timeout_ns, char *why, size_t n)
{
	uint64_t end = gt_host_ns() + timeout_ns;
	int rc = 0;

	while (__atomic_load_n(&twin.done, __ATOMIC_ACQUIRE) < twin.nth) {
		if (gt_host_ns() > end) {
			if (rc) {
				snprintf(why, n, "host threads still running %llu s after stop",
					 TWIN_STOP_GRACE_NS / 1000000000ull);
				return EDEADLK;
			}
			__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
			rc = ETIMEDOUT;
			end = gt_host_ns() + TWIN_STOP_GRACE_NS;
		}
		twin_sleep_us(200);
	}
	for (uint32_t i = 0; i < twin.nth; i++)
		pthread_join(twin.th[i], NULL);
	if (rc)
		snprintf(why, n, "no end within %llu s; the threads left only when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

/* The forwarder on a host thread: loop.cu's kernel, line for line. */
struct twin_loop {
	struct gpunic_loop_ctx ctx;
	pthread_t th;
	uint32_t stop;
	uint32_t ready;
	int prime_err;
};

static void *twin_loop_main(void *arg)
{
	struct twin_loop *l = arg;
	uint32_t idle = 0;
	int err;

	err = gpunic_loop_prime(&l->ctx);
	l->prime_err = err;
	__atomic_store_n(&l->ready, 1, __ATOMIC_RELEASE);
	if (err)
		return NULL;
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		if (gpunic_loop_step(&l->ctx) != 0) {
			idle = 0;
			continue;
		}
		gpunic_dev_spin_wait(&idle);
	}
	gpunic_loop_reap_sends(&l->ctx);
	return NULL;
}

static int twin_loop_start(const struct gpunic_loop_ctx *ctx, void **handle, char *why, size_t n)
{
	struct twin_loop *l = calloc(1, sizeof(*l));
	uint64_t end = gt_host_ns() + TWIN_READY_NS;
	int err;

	if (!l)
		return ENOMEM;
	l->ctx = *ctx;
	err = pthread_create(&l->th, NULL, twin_loop_main, l);
	if (err) {
		snprintf(why, n, "pthread_create: %s", strerror(err));
		free(l);
		return err;
	}
	while (!__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE)) {
		if (gt_host_ns() > end) {
			/* prime never waits: a thread this late is only slow, so join it */
			snprintf(why, n, "the forwarder did not post its receives in time");
			__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
			pthread_join(l->th, NULL);
			free(l);
			return ETIMEDOUT;
		}
		twin_sleep_us(100);
	}
	if (l->prime_err) {
		snprintf(why, n, "posting the ring's receives: %s", strerror(-l->prime_err));
		pthread_join(l->th, NULL);
		free(l);
		return EINVAL;
	}
	*handle = l;
	return 0;
}

static int twin_loop_stop(void *handle, struct gpunic_loop_ctx *final, char *why, size_t n)
{
	struct twin_loop *l = handle;

	(void)why;
	(void)n;
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	pthread_join(l->th, NULL);
	if (final) {
		*final = l->ctx;
		final->qp = NULL;
	}
	free(l);
	return 0;
}

static const struct gt_backend gt_backend_twin = {
	.name = "cpu",
	.gpu = 0,
	.probe = twin_probe,
	.qp_publish = twin_qp_publish,
	.qp_unpublish = twin_qp_unpublish,
	.read_state = twin_read_state,
	.launch = twin_launch,
	.wait = twin_wait,
	.loop_start = twin_loop_start,
	.loop_stop = twin_loop_stop,
};

#define GT_BE (&gt_backend_twin)
#include "gt_tests.h"
