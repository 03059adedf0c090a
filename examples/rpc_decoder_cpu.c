/* SPDX-License-Identifier: MIT */
/*
 * A decoder served over the realtime RPC protocol by a CPU thread: the server polls a ring of
 * slots and runs gpunic_rpc_dispatch() on each request, the handler (rpc_decoder.h) and the
 * dispatch step compiled into this program; the main thread sends decoding rounds as an FPGA
 * would and checks every response. rpc_decoder_gpu.cu serves the same from a GPU kernel.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "rpc_decoder.h"

static struct ring ring;
static struct gpunic_rpc_table table;
static struct gpunic_rpc_counters counters;

/* The server: slot after slot, answer each request in place, raise its tx flag. */
static void *serve(void *arg)
{
	uint32_t i = 0, seq;

	(void)arg;
	while (!__atomic_load_n(&ring.stop, __ATOMIC_ACQUIRE)) {
		seq = __atomic_load_n(&ring.rx_flag[i], __ATOMIC_ACQUIRE);
		if (!seq)
			continue;
		gpunic_rpc_dispatch_unified(&table, ring.slot[i], ring.rx_len[i], SLOT_BYTES,
					    &counters);
		__atomic_store_n(&ring.rx_flag[i], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&ring.tx_flag[i], seq, __ATOMIC_RELEASE);
		i = (i + 1) % RING_SLOTS;
	}
	return NULL;
}

static int always(void)
{
	return 1;
}

int main(void)
{
	pthread_t th;
	int rc;

	if (example_table(&table))
		return 1;
	/* the CPU's addresses of the handlers compiled here */
	if (example_bind(&table) != 4) {
		fprintf(stderr, "rpc_decoder: a handler was not bound\n");
		return 1;
	}
	if (pthread_create(&th, NULL, serve, NULL))
		return 1;
	rc = example_send(&ring, always);
	__atomic_store_n(&ring.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("rpc_decoder (CPU): %u requests: %llu decoded, %llu unknown function, %llu other\n",
	       REQUESTS, (unsigned long long)counters.by_reason[GPUNIC_RPC_R_OK],
	       (unsigned long long)counters.by_reason[GPUNIC_RPC_R_UNKNOWN_FUNCTION],
	       (unsigned long long)(REQUESTS - counters.by_reason[GPUNIC_RPC_R_OK] -
				    counters.by_reason[GPUNIC_RPC_R_UNKNOWN_FUNCTION]));
	return rc || counters.by_reason[GPUNIC_RPC_R_OK] != REQUESTS - REQUESTS / 8 ? 1 : 0;
}
