/* SPDX-License-Identifier: MIT */
/*
 * The CPU twin of the torn-line suite: every case of tear_tests.h with the forwarder's
 * gpunic_loop_step() on a host thread (CQs with GPUNIC_CQ_LINE_CHECK, so it checks every line
 * as the GPU does) and the BlueFlame writer of tear_cases.h on a host thread storing its chunks
 * one after another with spin pauses. This is how CI (no GPU) runs the suite's code.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "tear_fixture.h"
#include "rig_twin.h"

/* After stop, how long the writer may take to notice (it looks at stop in every wait). */
#define TWIN_STOP_GRACE_NS (5ull * 1000000000ull)

/* The forwarder beside g's engine, not on its CPU (tear_setup): see there. Best effort. */
static int twin_loop_start(const struct gpunic_loop_ctx *ctx, void **handle, char *why, size_t n)
{
	return rig_twin_loop_start_on(ctx, tear_allowed_cpu(1), handle, why, n);
}

/* ---------------------------------------------------------------- the BlueFlame writer */

static struct twin_bf {
	struct tear_bf_args a;
	pthread_t th;
	int running;
} twin_bf;

static void *twin_bf_main(void *arg)
{
	const struct tear_bf_args *a = arg;
	struct gpunic_dev_qp qp = a->qp;
	struct tear_bf_writer w;
	struct tear_bf_plan p;
	uint64_t scratch_ring[8], scratch_bf[8];
	uint32_t k;

	tear_bf_writer_init(a, &w);
	while (!tear_bf_begin(a, &qp, &w, &p, (uint8_t *)scratch_ring, (uint8_t *)scratch_bf)) {
		for (k = 0; k < p.nstores; k++) {
			if (tear_bf_hold_step(a, &qp, &w, &p, k))
				break;
			tear_bf_store(&p, k);
			tear_host_pause(p.pause[k]);
		}
		if (w.errors) {
			/* leave the line whole: the softnic may still be reading it */
			for (; k < p.nstores; k++)
				tear_bf_store(&p, k);
			break;
		}
		tear_bf_end(a, &qp, &w);
	}
	tear_bf_finish(a, &qp, &w);
	return NULL;
}

static int twin_bf_start(const struct tear_bf_args *a, char *why, size_t n)
{
	int err;

	memset(&twin_bf, 0, sizeof(twin_bf));
	twin_bf.a = *a;
	err = pthread_create(&twin_bf.th, NULL, twin_bf_main, &twin_bf.a);
	if (err) {
		snprintf(why, n, "pthread_create: %s", strerror(err));
		return err;
	}
	twin_bf.running = 1;
	return 0;
}

static int twin_bf_wait(struct tear_ctl *ctl, uint64_t timeout_ns, char *why, size_t n)
{
	int rc;

	if (!twin_bf.running)
		return 0;
	rc = rig_twin_wait(&ctl->done, 1, &ctl->stop, timeout_ns, TWIN_STOP_GRACE_NS,
			   "the writer thread", why, n);
	if (rc == EDEADLK)
		return rc;
	pthread_join(twin_bf.th, NULL);
	twin_bf.running = 0;
	return rc;
}

static const struct tear_backend tear_backend_twin = {
	.name = "cpu",
	.gpu = 0,
	.probe = rig_twin_probe,
	.read_state = rig_twin_read_state,
	.loop_start = twin_loop_start,
	.loop_stop = rig_twin_loop_stop,
	.bf_start = twin_bf_start,
	.bf_wait = twin_bf_wait,
};

#define TEAR_BE (&tear_backend_twin)
#include "tear_tests.h"
