// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the RPC request parser and dispatch step (gpunic/rpc_dev.h), on the
 * table of rpc_env.h. The slot and the response slot are allocated at exactly their sizes, so
 * any read or write past them trips AddressSanitizer.
 *
 * Every request must end in one counted reason and either a response or a drop the table's
 * flags ask for. A response must fit its slot, carry the response magic, echo the request's id
 * and timestamp, and agree with what the harness derives from the input on its own: the status
 * a protocol error deserves, and for the built-in functions the results of their references.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>

#include "rpc_env.h"

#define ASSERT(cond)                     \
	do {                             \
		if (!(cond))             \
			abort();         \
	} while (0)

static struct gpunic_rpc_table tables[4];
static bool tables_ready;

static uint32_t rd32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* What the response must say, derived from the request bytes without the parser. */
static void check_response(const struct gpunic_rpc_table *t, const uint8_t *req, uint32_t got,
			   uint32_t rx_size, const uint8_t *resp, uint32_t ret, uint32_t tx_size)
{
	int32_t status = (int32_t)rd32(resp + 4);
	uint32_t result_len = rd32(resp + 8), arg_len, want_len;
	uint8_t want[600];

	ASSERT(ret >= GPUNIC_RPC_HEADER_BYTES && ret <= tx_size);
	ASSERT(rd32(resp) == GPUNIC_RPC_MAGIC_RESPONSE);
	ASSERT(result_len == ret - GPUNIC_RPC_HEADER_BYTES);
	if (got < GPUNIC_RPC_HEADER_BYTES) {
		ASSERT(status == GPUNIC_RPC_E_TRUNCATED);
		ASSERT(rd32(resp + 12) == 0 && rd64(resp + 16) == 0);
		return;
	}
	ASSERT(rd32(resp + 12) == rd32(req + 12) && rd64(resp + 16) == rd64(req + 16));
	arg_len = rd32(req + 8);
	if (rd32(req) != GPUNIC_RPC_MAGIC_REQUEST) {
		ASSERT(status == GPUNIC_RPC_E_BAD_MAGIC);
	} else if (arg_len > rx_size - GPUNIC_RPC_HEADER_BYTES) {
		ASSERT(status == GPUNIC_RPC_E_TOO_LONG);
	} else if (arg_len > got - GPUNIC_RPC_HEADER_BYTES) {
		ASSERT(status == GPUNIC_RPC_E_TRUNCATED);
	} else if (!gpunic_rpc_lookup(t, rd32(req + 4))) {
		ASSERT(status == GPUNIC_RPC_E_UNKNOWN_FUNCTION);
	} else if (status == 0 &&
		   gpunic_rpc_builtin_reference(rd32(req + 4), req + GPUNIC_RPC_HEADER_BYTES,
						arg_len, want, tx_size - GPUNIC_RPC_HEADER_BYTES,
						&want_len) == 0) {
		/* a built-in function that answered: exactly its reference */
		ASSERT(result_len == want_len);
		ASSERT(!memcmp(resp + GPUNIC_RPC_HEADER_BYTES, want, want_len));
	} else {
		/* a known function: it ran, or its arguments or results broke the schema */
		ASSERT(status >= 0 || status == GPUNIC_RPC_E_SCHEMA ||
		       status == GPUNIC_RPC_E_BAD_RESULT);
	}
	if (status < 0)
		ASSERT(result_len == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gpunic_rpc_table *t;
	struct gpunic_rpc_counters c;
	uint32_t rx_size, tx_size, rx_len, got, ret, i, n = 0;
	uint8_t *rx, *tx, *req;
	bool separate;

	if (size < FR_PREFIX)
		return 0;
	if (!tables_ready) {
		for (i = 0; i < 4; i++)
			ASSERT(fr_table(&tables[i], i) == 0);
		tables_ready = true;
	}
	t = &tables[data[0] & 3];
	separate = data[0] & FR_MODE_SEPARATE;
	rx_size = fr_size(data[1]);
	tx_size = separate ? fr_size(data[2]) : rx_size;
	rx_len = (uint32_t)(size - FR_PREFIX);
	got = rx_len < rx_size ? rx_len : rx_size;

	/* the slot at its exact size (8-byte aligned: malloc's), what did not arrive is stale */
	rx = malloc(rx_size);
	req = malloc(rx_size);
	tx = separate ? malloc(tx_size) : rx;
	ASSERT(rx && req && tx);
	memset(rx, 0xa5, rx_size);
	memcpy(rx, data + FR_PREFIX, got);
	memcpy(req, rx, rx_size);
	if (separate)
		memset(tx, 0x5a, tx_size);
	memset(&c, 0, sizeof(c));

	ret = gpunic_rpc_dispatch(t, rx, rx_len, rx_size, tx, tx_size, &c);

	for (i = 0; i < GPUNIC_RPC_REASONS; i++)
		n += (uint32_t)c.by_reason[i];
	ASSERT(n == 1 && c.dropped == (ret == 0));
	if (ret == 0) {
		/* dropped as the flags ask, or no room for a response: nothing written */
		ASSERT(tx_size < GPUNIC_RPC_HEADER_BYTES ||
		       ((t->flags & GPUNIC_RPC_DROP_UNKNOWN) &&
			(c.by_reason[GPUNIC_RPC_R_UNKNOWN_FUNCTION] ||
			 c.by_reason[GPUNIC_RPC_R_NO_HANDLER])) ||
		       ((t->flags & GPUNIC_RPC_DROP_BAD_MAGIC) && c.by_reason[GPUNIC_RPC_R_BAD_MAGIC]));
		ASSERT(!memcmp(rx, req, rx_size));
		for (i = 0; separate && i < tx_size; i++)
			ASSERT(tx[i] == 0x5a);
	} else {
		check_response(t, req, got, rx_size, tx, ret, tx_size);
		/* the response must pass the sender's own check */
		ASSERT(gpunic_rpc_response_check(tx, ret, rd32(tx + 12), rd64(tx + 16),
						 (int32_t)rd32(tx + 4), tx + GPUNIC_RPC_HEADER_BYTES,
						 ret - GPUNIC_RPC_HEADER_BYTES) ==
		       GPUNIC_RPC_CHECK_OK);
	}
	if (separate)
		ASSERT(!memcmp(rx, req, rx_size));  /* the request is never written to */
	/* the input read as a response: any verdict, no fault */
	ASSERT((unsigned)gpunic_rpc_response_check(data + FR_PREFIX, rx_len, 0, 0, 0, NULL, 0) <
	       GPUNIC_RPC_CHECKS);

	free(req);
	if (separate)
		free(tx);
	free(rx);
	return 0;
}
