/* SPDX-License-Identifier: MIT */
/*
 * The CPU twin of the GPU dispatch suite (test_rpc_gpu.cu): the batch of rpc_cases.h, every
 * good and bad request, dispatched on a host thread through the same header and handlers, and
 * checked against the same expected responses. This is how CI, which has no GPU, runs it.
 */
#include <pthread.h>

#include "harness.h"
#include "rpc_cases.h"

struct twin_job {
	struct gpunic_rpc_table t;
	uint8_t *rx, *tx;
	const uint32_t *rx_len;
	uint32_t n;
	uint32_t *ret;
	struct gpunic_rpc_counters *c;
};

/* The forwarder's thread: bind the handlers in its own table, then one slot after another. */
static void *twin_thread(void *arg)
{
	struct twin_job *j = arg;
	uint32_t i;

	CHECK_EQ(rt_bind_all(&j->t), 6);
	for (i = 0; i < j->n; i++) {
		uint8_t *rx = j->rx + (size_t)i * RC_SLOT;

		j->ret[i] = gpunic_rpc_dispatch(&j->t, rx, j->rx_len[i], RC_SLOT,
						j->tx ? j->tx + (size_t)i * RC_SLOT : rx, RC_SLOT,
						j->c);
	}
	return NULL;
}

static void twin_exec(const struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
		      const uint32_t *rx_len, uint32_t n, uint32_t *ret,
		      struct gpunic_rpc_counters *c)
{
	struct twin_job j = { .t = *t, .rx = rx, .tx = tx, .rx_len = rx_len, .n = n, .ret = ret,
			      .c = c };
	pthread_t th;

	CHECK(pthread_create(&th, NULL, twin_thread, &j) == 0);
	CHECK(pthread_join(th, NULL) == 0);
}

TEST(unified)
{
	rc_suite(twin_exec, RC_UNIFIED, 0);
}

TEST(separate)
{
	rc_suite(twin_exec, RC_SEPARATE, 0);
}

TEST(cudaq_drops)
{
	rc_suite(twin_exec, RC_UNIFIED, GPUNIC_RPC_CUDAQ_DROPS);
}

TEST(cudaq_drops_separate)
{
	rc_suite(twin_exec, RC_SEPARATE, GPUNIC_RPC_CUDAQ_DROPS);
}
