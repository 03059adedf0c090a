/* SPDX-License-Identifier: MIT */
/*
 * The CPU twin of the mlx5dev suite: every case of md_tests.h with md_body (mlx5_dev_lib.h
 * code) run by one host thread against a CPU-executor softnic. This is how CI, with no GPU,
 * runs the third-party-style device code: the same source the kernel runs, with the library's
 * host fences (release before the record and the doorbell, acquire after an owner bit).
 */
#include <pthread.h>

#include "md_fixture.h"

static struct twin_run {
	struct md_args a;
	pthread_t th;
	uint32_t done;
} twin;

static void *twin_main(void *arg)
{
	(void)arg;
	md_body(&twin.a);
	__atomic_store_n(&twin.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int twin_probe(char *why, size_t n)
{
	(void)why;
	(void)n;
	return 0;
}

static int twin_launch(const struct md_args *a, char *why, size_t n)
{
	int err;

	memset(&twin, 0, sizeof(twin));
	twin.a = *a;
	err = pthread_create(&twin.th, NULL, twin_main, NULL);
	if (err)
		snprintf(why, n, "pthread_create: %s", strerror(err));
	return err;
}

static int twin_wait(struct md_shared *sh, uint64_t timeout_ns, char *why, size_t n)
{
	uint64_t end = md_host_ns() + timeout_ns;
	int rc = 0;

	while (!__atomic_load_n(&twin.done, __ATOMIC_ACQUIRE)) {
		if (md_host_ns() > end) {
			if (rc) {
				snprintf(why, n, "the host thread still runs %llu s after stop",
					 MD_STOP_GRACE_NS / 1000000000ull);
				return EDEADLK;
			}
			__atomic_store_n(&sh->ctl.stop, 1, __ATOMIC_RELEASE);
			rc = ETIMEDOUT;
			end = md_host_ns() + MD_STOP_GRACE_NS;
		}
		md_sleep_ms(1);
	}
	pthread_join(twin.th, NULL);
	if (rc)
		snprintf(why, n, "no end within %llu s; the thread left only when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

static const struct md_backend md_backend_twin = {
	.name = "cpu",
	.gpu = 0,
	.probe = twin_probe,
	.launch = twin_launch,
	.wait = twin_wait,
};

#define MD_BE (&md_backend_twin)
#include "md_tests.h"
#include "md_tests_softnic.h"
