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
#include "rig_twin.h"

#define TWIN_WORKERS 8u
#define TWIN_STOP_GRACE_NS (10ull * 1000000000ull)

static struct twin_run {
	enum gt_kernel k;
	struct gt_args a;
	uint32_t posters;           /* worker threads running posters (mt, warp) */
	pthread_t th[TWIN_WORKERS + 1];
	uint32_t nth;
	uint32_t done;              /* threads that returned */
} twin;

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
	int rc = rig_twin_wait(&twin.done, twin.nth, &ctl->stop, timeout_ns, TWIN_STOP_GRACE_NS,
			       "the host threads", why, n);

	if (rc == EDEADLK)
		return rc;
	for (uint32_t i = 0; i < twin.nth; i++)
		pthread_join(twin.th[i], NULL);
	return rc;
}

static const struct gt_backend gt_backend_twin = {
	.name = "cpu",
	.gpu = 0,
	.probe = rig_twin_probe,
	.qp_publish = twin_qp_publish,
	.qp_unpublish = twin_qp_unpublish,
	.read_state = rig_twin_read_state,
	.launch = twin_launch,
	.wait = twin_wait,
	.loop_start = rig_twin_loop_start,
	.loop_stop = rig_twin_loop_stop,
};

#define GT_BE (&gt_backend_twin)
#include "gt_tests.h"
