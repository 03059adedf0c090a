/* SPDX-License-Identifier: MIT */
/*
 * What the executor suites' CPU twins share (tests/gpu, tests/tear, tests/mlx5dev): the
 * forwarder of libgpunic_gpu's kernel on a host thread, line for line, and waiting for host
 * threads that say when they leave, as rig_cuda.h waits for a kernel.
 */
#ifndef GPUNIC_TEST_RIG_TWIN_H
#define GPUNIC_TEST_RIG_TWIN_H

#include <pthread.h>
#include <sched.h>

#include <gpunic/loop_dev.h>

#include "rig.h"

/* How long the forwarder's thread may take to post the ring's receives. */
#define RIG_TWIN_READY_NS (5ull * 1000000000ull)

static __attribute__((unused)) int rig_twin_probe(char *why, size_t n)
{
	(void)why;
	(void)n;
	return 0;
}

/* The executor's state lives in host memory: a copy. */
static __attribute__((unused)) int rig_twin_read_state(const struct gpunic_dev_qp_state *xstate,
						        struct gpunic_dev_qp_state *out, char *why,
						        size_t n)
{
	(void)why;
	(void)n;
	memcpy(out, xstate, sizeof(*out));
	return 0;
}

/* The forwarder on a host thread: loop.cu's kernel, gpunic_loop_step until told to stop. */
struct rig_twin_loop {
	struct gpunic_loop_ctx ctx;
	pthread_t th;
	uint32_t stop;
	uint32_t ready;
	int prime_err;
};

static void *rig_twin_loop_main(void *arg)
{
	struct rig_twin_loop *l = arg;
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

/* The forwarder's thread, pinned to @cpu (best effort; -1: anywhere), its receives posted. */
static __attribute__((unused)) int rig_twin_loop_start_on(const struct gpunic_loop_ctx *ctx,
							   int cpu, void **handle, char *why,
							   size_t n)
{
	struct rig_twin_loop *l = calloc(1, sizeof(*l));
	uint64_t end = rig_ns() + RIG_TWIN_READY_NS;
	int err;

	if (!l)
		return ENOMEM;
	l->ctx = *ctx;
	err = pthread_create(&l->th, NULL, rig_twin_loop_main, l);
	if (err) {
		snprintf(why, n, "pthread_create: %s", strerror(err));
		free(l);
		return err;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_setaffinity_np(l->th, sizeof(set), &set);
	}
	while (!__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE)) {
		if (rig_ns() > end) {
			/* prime never waits: a thread this late is only slow, so join it */
			snprintf(why, n, "the forwarder did not post its receives in time");
			__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
			pthread_join(l->th, NULL);
			free(l);
			return ETIMEDOUT;
		}
		rig_sleep_us(100);
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

static __attribute__((unused)) int rig_twin_loop_start(const struct gpunic_loop_ctx *ctx,
							void **handle, char *why, size_t n)
{
	return rig_twin_loop_start_on(ctx, -1, handle, why, n);
}

static __attribute__((unused)) int rig_twin_loop_stop(void *handle, struct gpunic_loop_ctx *final,
						       char *why, size_t n)
{
	struct rig_twin_loop *l = handle;

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

/*
 * Wait until *@done reaches @want (threads that left, or a flag); past @timeout_ns raise *@stop
 * and give them @grace_ns more. @who names the threads in messages. The caller joins them.
 * Return: 0; ETIMEDOUT when they left only when told to stop; EDEADLK when they did not leave
 * even then (do not join). @why says which.
 */
static __attribute__((unused)) int rig_twin_wait(const uint32_t *done, uint32_t want,
						  uint32_t *stop, uint64_t timeout_ns,
						  uint64_t grace_ns, const char *who, char *why,
						  size_t n)
{
	uint64_t end = rig_ns() + timeout_ns;
	int rc = 0;

	while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < want) {
		if (rig_ns() > end) {
			if (rc) {
				snprintf(why, n, "%s still running %llu s after stop", who,
					 (unsigned long long)(grace_ns / 1000000000ull));
				return EDEADLK;
			}
			__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
			rc = ETIMEDOUT;
			end = rig_ns() + grace_ns;
		}
		rig_sleep_us(200);
	}
	if (rc)
		snprintf(why, n, "no end within %llu s; %s left only when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull), who);
	return rc;
}

#endif
