/* SPDX-License-Identifier: MIT */
/*
 * The RPC dispatch step (docs/RPC.md): take the request in one slot, check it, run its handler
 * and write the response. Header-only and one source for both executors, like gpunic_dev.h:
 * nvcc builds it into a person's own GPU kernel, next to the handlers (a device function's
 * address is valid only in the module that defines it, so the dispatch step, the handlers and
 * the kernel are compiled together); a C compiler builds it for CPU threads.
 *
 * Cheap enough for a loop that answers in microseconds: no allocation, no locale, no printing;
 * the function lookup scans one 64-byte line of ids. On the GPU, call it on a copy of the
 * message in the thread's own memory, not across PCIe: every header field is read once.
 */
#ifndef GPUNIC_RPC_DEV_H
#define GPUNIC_RPC_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include <gpunic/rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The entry of @function_id in @t, or NULL. */
GPUNIC_RPC_FN const struct gpunic_rpc_entry *gpunic_rpc_lookup(const struct gpunic_rpc_table *t,
							       uint32_t function_id)
{
	uint32_t n = t->count < GPUNIC_RPC_MAX_FUNCTIONS ? t->count : GPUNIC_RPC_MAX_FUNCTIONS;
	uint32_t i;

	for (i = 0; i < n; i++)
		if (t->ids[i] == function_id)
			return &t->entries[i];
	return NULL;
}

/*
 * Set the device-form handler of @function_id in @t to @fn: the GPU's address when compiled
 * for the GPU (call it in a kernel, on the table's copy in GPU memory), the CPU's otherwise.
 * Return: 0, or -1 if @t has no such function.
 */
GPUNIC_RPC_FN int gpunic_rpc_bind(struct gpunic_rpc_table *t, uint32_t function_id,
				  gpunic_rpc_dev_fn fn)
{
	struct gpunic_rpc_entry *e = (struct gpunic_rpc_entry *)gpunic_rpc_lookup(t, function_id);

	if (!e)
		return -1;
#if GPUNIC_RPC_ON_GPU
	e->gpu_fn = fn;
#else
	e->cpu_fn = fn;
#endif
	return 0;
}

/* Whether @len bytes at @p fit one side of a schema, precomputed as @l (gpunic_rpc_layout). */
GPUNIC_RPC_FN bool gpunic_rpc_layout_fits(const struct gpunic_rpc_layout *l, const uint8_t *p,
					  uint32_t len)
{
	uint32_t i;

	if (l->tail_unit == 0 ? len != l->fixed_bytes :
				(len < l->fixed_bytes || ((len - l->fixed_bytes) & (l->tail_unit - 1))))
		return false;
	for (i = 0; i < l->npad && i < GPUNIC_RPC_MAX_ARGS; i++)
		if (p[l->pad_off[i]] & l->pad_mask[i])
			return false;
	return true;
}

/*
 * The request parser: check the slot @rx, of which @rx_len bytes arrived and which holds
 * @rx_size, against @t. Checks in this order: a whole header arrived, the magic, arg_len within
 * the slot, arg_len within what arrived, a known function, arguments that fit its schema. The
 * header is read once, into *@h (left zero when it did not arrive whole), before a handler
 * may overwrite the slot.
 * Return: 0 with *@entry set, or the negative status (enum gpunic_rpc_status) of the first
 * fault; *@entry is then set only for a schema mismatch.
 */
GPUNIC_RPC_FN int32_t gpunic_rpc_parse(const struct gpunic_rpc_table *t, const void *rx,
				       uint32_t rx_len, uint32_t rx_size,
				       struct gpunic_rpc_header *h,
				       const struct gpunic_rpc_entry **entry)
{
	const struct gpunic_rpc_entry *e;
	uint32_t got = rx_len < rx_size ? rx_len : rx_size;

	*entry = NULL;
	if (got < GPUNIC_RPC_HEADER_BYTES) {
		h->magic = h->function_id = h->arg_len = h->request_id = 0;
		h->ptp_timestamp = 0;
		return GPUNIC_RPC_E_TRUNCATED;
	}
	*h = *(const struct gpunic_rpc_header *)rx;
	if (h->magic != GPUNIC_RPC_MAGIC_REQUEST)
		return GPUNIC_RPC_E_BAD_MAGIC;
	if (h->arg_len > rx_size - GPUNIC_RPC_HEADER_BYTES)
		return GPUNIC_RPC_E_TOO_LONG;
	if (h->arg_len > got - GPUNIC_RPC_HEADER_BYTES)
		return GPUNIC_RPC_E_TRUNCATED;
	e = gpunic_rpc_lookup(t, h->function_id);
	if (!e)
		return GPUNIC_RPC_E_UNKNOWN_FUNCTION;
	*entry = e;
	if (e->typed &&
	    !gpunic_rpc_layout_fits(&e->args, (const uint8_t *)rx + GPUNIC_RPC_HEADER_BYTES,
				    h->arg_len))
		return GPUNIC_RPC_E_SCHEMA;
	return 0;
}

/*
 * Run the handler of @e on the checked request in @rx (@arg_len argument bytes); results go to
 * @tx (@tx_size bytes, >= 24) after the response header. The GPU calls the device form bound
 * there; the CPU the host form when there is one, else the device form compiled for it.
 * Return: the status to answer with; *@result_len the result bytes; *@reason why.
 */
GPUNIC_RPC_FN int32_t gpunic_rpc_call(const struct gpunic_rpc_entry *e, const void *rx,
				      uint32_t arg_len, void *tx, uint32_t tx_size,
				      uint32_t *result_len, uint32_t *reason)
{
	uint8_t *out = (uint8_t *)tx + GPUNIC_RPC_HEADER_BYTES;
	uint32_t max = tx_size - GPUNIC_RPC_HEADER_BYTES, rl = 0;
	int32_t status;

	*result_len = 0;
#if GPUNIC_RPC_ON_GPU
	if (!e->gpu_fn) {
		*reason = GPUNIC_RPC_R_NO_HANDLER;
		return GPUNIC_RPC_E_NO_HANDLER;
	}
	status = e->gpu_fn((const uint8_t *)rx + GPUNIC_RPC_HEADER_BYTES, out, arg_len, max, &rl);
#else
	if (e->host_fn) {
		const struct gpunic_rpc_response *r = (const struct gpunic_rpc_response *)tx;

		e->host_fn(rx, tx, tx_size);
		if (r->magic != GPUNIC_RPC_MAGIC_RESPONSE) {
			*reason = GPUNIC_RPC_R_BAD_RESULT;
			return GPUNIC_RPC_E_BAD_RESULT;
		}
		status = r->status;
		rl = r->result_len;
	} else if (e->cpu_fn) {
		status = e->cpu_fn((const uint8_t *)rx + GPUNIC_RPC_HEADER_BYTES, out, arg_len, max,
				   &rl);
	} else {
		*reason = GPUNIC_RPC_R_NO_HANDLER;
		return GPUNIC_RPC_E_NO_HANDLER;
	}
#endif
	/* Results past the slot, or a success whose results break the schema: the handler's
	 * fault, answered as a protocol error so the sender never reads them as an answer. */
	if (rl > max || (status == 0 && e->typed && !gpunic_rpc_layout_fits(&e->results, out, rl))) {
		*reason = GPUNIC_RPC_R_BAD_RESULT;
		return GPUNIC_RPC_E_BAD_RESULT;
	}
	*result_len = rl;
	*reason = status == 0 ? GPUNIC_RPC_R_OK : GPUNIC_RPC_R_HANDLER_ERROR;
	return status;
}

/*
 * The dispatch step for one slot, counting nothing: the reason the request ended as it did goes
 * to *@reason (enum gpunic_rpc_reason), for a caller that counts for itself, such as several GPU
 * threads dispatching at once (with atomics: gpunic_rpc_count_atomic). Otherwise as
 * gpunic_rpc_dispatch() below, whose documentation says what is checked and written.
 * Return: the bytes of the response at @tx, 24 + result_len; 0 if dropped.
 */
GPUNIC_RPC_FN uint32_t gpunic_rpc_dispatch_reason(const struct gpunic_rpc_table *t,
						  const void *rx, uint32_t rx_len,
						  uint32_t rx_size, void *tx, uint32_t tx_size,
						  uint32_t *reason)
{
	const struct gpunic_rpc_entry *e;
	struct gpunic_rpc_header h;
	struct gpunic_rpc_response *r = (struct gpunic_rpc_response *)tx;
	uint32_t result_len = 0;
	int32_t status;
	bool drop;

	status = gpunic_rpc_parse(t, rx, rx_len, rx_size, &h, &e);
	if (tx_size < GPUNIC_RPC_HEADER_BYTES) {
		/* no room for even a response header: the caller's error, counted, nothing run */
		*reason = GPUNIC_RPC_R_BAD_RESULT;
	} else if (status == 0) {
		status = gpunic_rpc_call(e, rx, h.arg_len, tx, tx_size, &result_len, reason);
	} else {
		*reason = (uint32_t)(1 - status);
	}
	drop = tx_size < GPUNIC_RPC_HEADER_BYTES ||
	       ((t->flags & GPUNIC_RPC_DROP_UNKNOWN) && (*reason == GPUNIC_RPC_R_UNKNOWN_FUNCTION ||
							 *reason == GPUNIC_RPC_R_NO_HANDLER)) ||
	       ((t->flags & GPUNIC_RPC_DROP_BAD_MAGIC) && *reason == GPUNIC_RPC_R_BAD_MAGIC);
	if (drop)
		return 0;
	r->magic = GPUNIC_RPC_MAGIC_RESPONSE;
	r->status = status;
	r->result_len = result_len;
	r->request_id = h.request_id;
	r->ptp_timestamp = h.ptp_timestamp;
	return GPUNIC_RPC_HEADER_BYTES + result_len;
}

/* Count one request that ended for @reason, dropped when @len (what the step returned) is 0. */
GPUNIC_RPC_FN void gpunic_rpc_count(struct gpunic_rpc_counters *c, uint32_t reason, uint32_t len)
{
	c->by_reason[reason]++;
	c->dropped += len == 0;
}

#if defined(__CUDACC__)
/* gpunic_rpc_count() for counters that several GPU threads share (device memory). */
static __device__ __forceinline__ void gpunic_rpc_count_atomic(struct gpunic_rpc_counters *c,
								uint32_t reason, uint32_t len)
{
	atomicAdd((unsigned long long *)&c->by_reason[reason], 1ull);
	if (len == 0)
		atomicAdd((unsigned long long *)&c->dropped, 1ull);
}
#endif

/*
 * The dispatch step for one slot. @rx holds the request (@rx_size bytes, of which @rx_len
 * arrived: the receive's byte count, or @rx_size where the transport does not say); the
 * response goes to @tx (@tx_size bytes). @tx == @rx is the unified shape, where the response
 * overwrites the request; otherwise the two must not overlap. Both 8-byte aligned.
 *
 * Every request is answered, a bad one with its negative status and no results, except those
 * the table's flags say to drop (GPUNIC_RPC_DROP_*: CUDA-Q's behaviour), which leave @tx as it
 * was. request_id and ptp_timestamp are echoed (0 when the header did not arrive whole). Counts
 * into @c (NULL: none) by reason, and the drops; a @tx_size under 24 leaves no room for any
 * answer: dropped, counted as a bad result.
 * Return: the bytes of the response at @tx, 24 + result_len; 0 if dropped.
 */
GPUNIC_RPC_FN uint32_t gpunic_rpc_dispatch(const struct gpunic_rpc_table *t, const void *rx,
					   uint32_t rx_len, uint32_t rx_size, void *tx,
					   uint32_t tx_size, struct gpunic_rpc_counters *c)
{
	uint32_t reason;
	uint32_t len = gpunic_rpc_dispatch_reason(t, rx, rx_len, rx_size, tx, tx_size, &reason);

	if (c)
		gpunic_rpc_count(c, reason, len);
	return len;
}

/* gpunic_rpc_dispatch() in the unified shape: the response overwrites the request in @slot. */
GPUNIC_RPC_FN uint32_t gpunic_rpc_dispatch_unified(const struct gpunic_rpc_table *t, void *slot,
						   uint32_t rx_len, uint32_t slot_size,
						   struct gpunic_rpc_counters *c)
{
	return gpunic_rpc_dispatch(t, slot, rx_len, slot_size, slot, slot_size, c);
}

#ifdef __cplusplus
}
#endif

#endif
