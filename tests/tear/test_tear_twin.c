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

#define TWIN_READY_NS (5ull * 1000000000ull)
/* After stop, how long the writer may take to notice (it looks at stop in every wait). */
#define TWIN_STOP_GRACE_NS (5ull * 1000000000ull)

static void twin_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

	nanosleep(&ts, NULL);
}

static int twin_probe(char *why, size_t n)
{
	(void)why;
	(void)n;
	return 0;
}

static int twin_read_state(const struct gpunic_dev_qp_state *xstate,
			   struct gpunic_dev_qp_state *out, char *why, size_t n)
{
	(void)why;
	(void)n;
	memcpy(out, xstate, sizeof(*out));
	return 0;
}

/* ---------------------------------------------------------------- the forwarder */

/* loop.cu's kernel on a host thread: gpunic_loop_step until told to stop. */
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
	uint64_t end = tear_ns() + TWIN_READY_NS;
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
	/* Beside g's engine, not on its CPU (tear_setup): see there. Best effort. */
	if (tear_allowed_cpu(1) >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(tear_allowed_cpu(1), &set);
		pthread_setaffinity_np(l->th, sizeof(set), &set);
	}
	while (!__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE)) {
		if (tear_ns() > end) {
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

/* ---------------------------------------------------------------- the BlueFlame writer */

static struct twin_bf {
	struct tear_bf_args a;
	pthread_t th;
	int running;
} twin_bf;

/* A random pause: a spin on the clock, now and then a yield so that on a loaded 2-core
 * machine the softnic's thread runs while a line is half written too. */
static void twin_pause(uint32_t ns)
{
	uint64_t until;

	if (!ns)
		return;
	if (ns % 16 == 0) {
		sched_yield();
		return;
	}
	until = tear_ns() + ns;
	while (tear_ns() < until)
		;
}

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
			twin_pause(p.pause[k]);
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
	uint64_t end = tear_ns() + timeout_ns;
	int rc = 0;

	if (!twin_bf.running)
		return 0;
	while (!__atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE)) {
		if (tear_ns() > end) {
			if (rc) {
				snprintf(why, n, "the writer thread still runs %llu s after stop",
					 TWIN_STOP_GRACE_NS / 1000000000ull);
				return EDEADLK;
			}
			__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
			rc = ETIMEDOUT;
			end = tear_ns() + TWIN_STOP_GRACE_NS;
		}
		twin_sleep_us(200);
	}
	pthread_join(twin_bf.th, NULL);
	twin_bf.running = 0;
	if (rc)
		snprintf(why, n, "no end within %llu s; the writer left only when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

static const struct tear_backend tear_backend_twin = {
	.name = "cpu",
	.gpu = 0,
	.probe = twin_probe,
	.read_state = twin_read_state,
	.loop_start = twin_loop_start,
	.loop_stop = twin_loop_stop,
	.bf_start = twin_bf_start,
	.bf_wait = twin_bf_wait,
};

#define TEAR_BE (&tear_backend_twin)
#include "tear_tests.h"
