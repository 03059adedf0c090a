/* SPDX-License-Identifier: MIT */
/*
 * The CPU twin of the mlx5dev suite: every case of md_tests.h with md_body (mlx5_dev_lib.h
 * code) run by one host thread against a CPU-executor softnic. This is how CI, with no GPU,
 * runs the third-party-style device code: the same source the kernel runs, with the library's
 * host fences (release before the record and the doorbell, acquire after an owner bit).
 */
#include <pthread.h>

#include "md_fixture.h"
#include "rig_twin.h"

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
	int rc = rig_twin_wait(&twin.done, 1, &sh->ctl.stop, timeout_ns, MD_STOP_GRACE_NS,
			       "the host thread", why, n);

	if (rc == EDEADLK)
		return rc;
	pthread_join(twin.th, NULL);
	return rc;
}

static const struct md_backend md_backend_twin = {
	.name = "cpu",
	.gpu = 0,
	.probe = rig_twin_probe,
	.launch = twin_launch,
	.wait = twin_wait,
};

#define MD_BE (&md_backend_twin)
#include "md_tests.h"
#include "md_tests_softnic.h"
