/* SPDX-License-Identifier: MIT */
/*
 * One batch of RPC requests, good and bad, with the response each must get, for the dispatch
 * step on any executor: test_rpc_gpu.cu runs it in a GPU kernel, test_rpc_twin.c on the CPU,
 * both through gpunic/rpc_dev.h and the same handlers (rpc_test_handlers.h). The expected
 * responses come from references written apart from the handlers: libgpunic's for the built-in
 * functions (gpunic_rpc_builtin_reference), the ones below for the test handlers.
 *
 * Host code, plain C that also compiles as CUDA C++. The including file has included harness.h.
 */
#ifndef RPC_CASES_H
#define RPC_CASES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_handlers.h>

#include "harness.h"
#include "rpc_test_handlers.h"

#define RC_SLOT 256u          /* every slot's size, rx and tx */
#define RC_MAX 320u           /* cases in one batch, at most */
#define RC_FILL 0xeeu         /* what a separate tx slot holds before the dispatch */
#define RC_ID_UNBOUND 0xcb623b9au /* "unbound": registered, never given a handler */
#define RC_ID_NONE 0xb18ae409u    /* "no_such_function": not in the table */

enum rc_shape { RC_UNIFIED, RC_SEPARATE };

struct rc_case {
	char what[48];
	uint32_t rx_len;          /* bytes that arrived in the slot */
	uint32_t reason;          /* enum gpunic_rpc_reason */
	int cudaq_drop;           /* no response when the table has GPUNIC_RPC_CUDAQ_DROPS */
	uint32_t want_len;        /* response bytes, when answered */
	uint8_t want[RC_SLOT];    /* the response */
};

struct rc_batch {
	uint32_t n;
	uint8_t *req;             /* n slots of RC_SLOT bytes: the requests as sent */
	struct rc_case *c;
};

/*
 * Runs gpunic_rpc_dispatch() on every slot of @rx in order, on one thread, as a forwarder
 * does: each slot holds RC_SLOT bytes, @rx_len[i] of which arrived; responses go to @tx (NULL:
 * the unified shape, in @rx). Sets @ret[i] and counts into *@c. @t is the table as built on
 * the host; the executor binds its handlers in its own copy (rt_bind_all).
 */
typedef void (*rc_exec_fn)(const struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
			   const uint32_t *rx_len, uint32_t n, uint32_t *ret,
			   struct gpunic_rpc_counters *c);

/* ---------------------------------------------------------------- the table */

static void rc_type(struct gpunic_rpc_type *ty, uint8_t id, uint32_t size, uint32_t n)
{
	memset(ty, 0, sizeof(*ty));
	ty->type_id = id;
	ty->size_bytes = size;
	ty->num_elements = n;
}

static void rc_register(struct gpunic_rpc_table *t, const char *name,
			const struct gpunic_rpc_schema *s)
{
	char why[256];

	if (gpunic_rpc_register(t, name, s, NULL, NULL, why, sizeof(why)))
		harness_fail(__FILE__, __LINE__, "register %s: %s", name, why);
}

/* The built-in functions and the test ones, handlers unbound save the built-ins' CPU copies. */
static void rc_table(struct gpunic_rpc_table *t, uint32_t flags)
{
	struct gpunic_rpc_schema s;
	char why[256];

	gpunic_rpc_table_init(t, flags);
	if (gpunic_rpc_register_builtins(t, why, sizeof(why)))
		harness_fail(__FILE__, __LINE__, "builtins: %s", why);
	memset(&s, 0, sizeof(s));
	s.num_args = 3;
	rc_type(&s.args[0], GPUNIC_RPC_TYPE_UINT8, 1, 1);
	rc_type(&s.args[1], GPUNIC_RPC_TYPE_INT32, 4, 1);
	rc_type(&s.args[2], GPUNIC_RPC_TYPE_INT64, 8, 1);
	s.num_results = 2;
	rc_type(&s.results[0], GPUNIC_RPC_TYPE_INT64, 8, 1);
	rc_type(&s.results[1], GPUNIC_RPC_TYPE_UINT8, 1, 1);
	rc_register(t, "mix3", &s);
	memset(&s, 0, sizeof(s));
	s.num_args = s.num_results = 1;
	rc_type(&s.args[0], GPUNIC_RPC_TYPE_BIT_PACKED, 2, 10);
	rc_type(&s.results[0], GPUNIC_RPC_TYPE_BIT_PACKED, 2, 10);
	rc_register(t, "bits10", &s);
	memset(&s, 0, sizeof(s));
	s.num_args = s.num_results = 1;
	rc_type(&s.args[0], GPUNIC_RPC_TYPE_UINT8, 1, 1);
	rc_type(&s.results[0], GPUNIC_RPC_TYPE_INT32, 4, 1);
	rc_register(t, "liar", &s);
	rc_register(t, "unbound", NULL);
	CHECK_EQ(gpunic_rpc_fnv1a("mix3"), RT_ID_MIX3);
	CHECK_EQ(gpunic_rpc_fnv1a("bits10"), RT_ID_BITS10);
	CHECK_EQ(gpunic_rpc_fnv1a("liar"), RT_ID_LIAR);
	CHECK_EQ(gpunic_rpc_fnv1a("unbound"), RC_ID_UNBOUND);
	CHECK_EQ(gpunic_rpc_fnv1a("no_such_function"), RC_ID_NONE);
}

/* ---------------------------------------------------------------- references */

static void rc_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	unsigned i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* mix3, from its arguments as numbers rather than bytes */
static void rc_mix3_ref(uint8_t a, int32_t b, int64_t c, uint8_t out[9])
{
	rc_le(out, (uint64_t)a + (uint64_t)(int64_t)b + (uint64_t)c, 8);
	out[8] = (uint8_t)(a ^ 0x5a);
}

/* bits10: shift the bits out of one end and into the other */
static uint32_t rc_bits10_ref(uint32_t v)
{
	uint32_t r = 0, i;

	for (i = 0; i < 10; i++, v >>= 1)
		r = r << 1 | (v & 1);
	return r;
}

/* ---------------------------------------------------------------- building the batch */

static uint8_t *rc_slot(const struct rc_batch *b, uint32_t i)
{
	return b->req + (size_t)i * RC_SLOT;
}

/* A new case whose slot holds a request for @fid with @arg_len bytes of @args. */
static struct rc_case *rc_add(struct rc_batch *b, const char *what, uint32_t fid,
			      const void *args, uint32_t arg_len)
{
	struct rc_case *c;
	uint32_t i = b->n;

	if (i >= RC_MAX)
		harness_fail(__FILE__, __LINE__, "more than %u cases", RC_MAX);
	c = &b->c[b->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->what, sizeof(c->what), "%u %s", i, what);
	memset(rc_slot(b, i), 0, RC_SLOT);
	c->rx_len = gpunic_rpc_request_write(rc_slot(b, i), RC_SLOT, fid, args, arg_len,
					     1000 + i, 0x0123456789abcd00ull + i);
	return c;
}

/* The response @c must get: @status, @len bytes of @res, the request's id and time echoed. */
static void rc_answer(const struct rc_batch *b, struct rc_case *c, int32_t status,
		      uint32_t reason, const void *res, uint32_t len)
{
	const uint8_t *req = rc_slot(b, (uint32_t)(c - b->c));
	uint64_t id = 0, ts = 0;
	unsigned i;

	if (c->rx_len >= GPUNIC_RPC_HEADER_BYTES)
		for (i = 0; i < 4; i++) {
			id |= (uint64_t)req[12 + i] << (8 * i);
			ts |= (uint64_t)req[16 + i] << (8 * i) | (uint64_t)req[20 + i] << (8 * i + 32);
		}
	rc_le(c->want, GPUNIC_RPC_MAGIC_RESPONSE, 4);
	rc_le(c->want + 4, (uint32_t)status, 4);
	rc_le(c->want + 8, len, 4);
	rc_le(c->want + 12, id, 4);
	rc_le(c->want + 16, ts, 8);
	if (len)
		memcpy(c->want + GPUNIC_RPC_HEADER_BYTES, res, len);
	c->want_len = GPUNIC_RPC_HEADER_BYTES + len;
	c->reason = reason;
}

/* A protocol error: no results. */
static void rc_error(const struct rc_batch *b, struct rc_case *c, int32_t status)
{
	rc_answer(b, c, status, (uint32_t)(1 - status), NULL, 0);
	c->cudaq_drop = status == GPUNIC_RPC_E_UNKNOWN_FUNCTION ||
			status == GPUNIC_RPC_E_NO_HANDLER || status == GPUNIC_RPC_E_BAD_MAGIC;
}

/* A built-in function on @arg_len bytes its sender would send: answered by its reference. */
static void rc_builtin(struct rc_batch *b, const char *what, uint32_t fid, uint32_t arg_len)
{
	uint8_t args[RC_SLOT], res[RC_SLOT];
	uint32_t res_len = 0, n = gpunic_rpc_builtin_args(fid, b->n * 7919u, args, arg_len);
	int32_t st = gpunic_rpc_builtin_reference(fid, args, n, res, RC_SLOT - 24, &res_len);
	struct rc_case *c = rc_add(b, what, fid, args, n);

	rc_answer(b, c, st, st ? GPUNIC_RPC_R_HANDLER_ERROR : GPUNIC_RPC_R_OK, res, res_len);
}

static void rc_good(struct rc_batch *b)
{
	static const uint32_t echo_sizes[] = { 0, 1, 7, 8, 9, 64, 200, RC_SLOT - 24 };
	static const uint32_t add_sizes[] = { 0, 1, 13, 64, RC_SLOT - 24 };
	static const uint8_t mix_a[] = { 0, 255, 7, 0x5a };
	static const int32_t mix_b[] = { 0, -1, INT32_MIN, 123456 };
	static const int64_t mix_c[] = { 0, -1, INT64_MAX, -987654321012ll };
	static const uint32_t bits[] = { 0, 1, 0x3ff, 0x155, 0x2aa };
	uint8_t args[16], res[16];
	struct rc_case *c;
	uint32_t i;

	for (i = 0; i < sizeof(echo_sizes) / sizeof(echo_sizes[0]); i++)
		rc_builtin(b, "echo", GPUNIC_RPC_ID_ECHO, echo_sizes[i]);
	for (i = 0; i < sizeof(add_sizes) / sizeof(add_sizes[0]); i++)
		rc_builtin(b, "add_one", GPUNIC_RPC_ID_ADD_ONE, add_sizes[i]);
	/* the decoder on every syndrome */
	for (i = 0; i < 256; i++) {
		args[0] = (uint8_t)i;
		c = rc_add(b, "surface_d3", GPUNIC_RPC_ID_SURFACE_D3, args, 1);
		rc_le(res, gpunic_rpc_surface_d3_reference((uint8_t)i), 3);
		rc_answer(b, c, 0, GPUNIC_RPC_R_OK, res, 3);
	}
	for (i = 0; i < 4; i++) {
		args[0] = mix_a[i];
		rc_le(args + 1, (uint32_t)mix_b[i], 4);
		rc_le(args + 5, (uint64_t)mix_c[i], 8);
		c = rc_add(b, "mix3", RT_ID_MIX3, args, 13);
		rc_mix3_ref(mix_a[i], mix_b[i], mix_c[i], res);
		rc_answer(b, c, 0, GPUNIC_RPC_R_OK, res, 9);
	}
	for (i = 0; i < 5; i++) {
		rc_le(args, bits[i], 2);
		c = rc_add(b, "bits10", RT_ID_BITS10, args, 2);
		rc_le(res, rc_bits10_ref(bits[i]), 2);
		rc_answer(b, c, 0, GPUNIC_RPC_R_OK, res, 2);
	}
	/* a valid request in a slot the transport says it overfilled: the slot bounds it */
	rc_builtin(b, "echo, rx_len past the slot", GPUNIC_RPC_ID_ECHO, 16);
	b->c[b->n - 1].rx_len = RC_SLOT + 100;
}

/* The handler that breaks its contract, each way, and errors of its own. */
static void rc_liar(struct rc_batch *b)
{
	static const uint8_t lie[4] = { 0x44, 0x33, 0x22, 0x11 };
	uint8_t mode;
	struct rc_case *c;

	mode = RT_LIAR_HONEST;
	c = rc_add(b, "liar honest", RT_ID_LIAR, &mode, 1);
	rc_answer(b, c, 0, GPUNIC_RPC_R_OK, lie, 4);
	mode = RT_LIAR_OVERRUN;
	rc_error(b, rc_add(b, "liar overrun", RT_ID_LIAR, &mode, 1), GPUNIC_RPC_E_BAD_RESULT);
	mode = RT_LIAR_SHORT;
	rc_error(b, rc_add(b, "liar short", RT_ID_LIAR, &mode, 1), GPUNIC_RPC_E_BAD_RESULT);
	mode = RT_LIAR_ERROR;
	c = rc_add(b, "liar error", RT_ID_LIAR, &mode, 1);
	rc_answer(b, c, 7, GPUNIC_RPC_R_HANDLER_ERROR, NULL, 0);
	mode = RT_LIAR_NEGATIVE;
	c = rc_add(b, "liar negative", RT_ID_LIAR, &mode, 1);
	rc_answer(b, c, -9, GPUNIC_RPC_R_HANDLER_ERROR, lie, 4);
}

/* Every kind of bad input, each answered with its negative status. */
static void rc_bad(struct rc_batch *b)
{
	uint8_t args[64];
	struct rc_case *c;

	memset(args, 0x5c, sizeof(args));
	rc_error(b, rc_add(b, "unbound", RC_ID_UNBOUND, args, 3), GPUNIC_RPC_E_NO_HANDLER);
	rc_error(b, rc_add(b, "unknown function", RC_ID_NONE, args, 3),
		 GPUNIC_RPC_E_UNKNOWN_FUNCTION);
	c = rc_add(b, "response magic", GPUNIC_RPC_ID_ECHO, args, 3);
	rc_le(rc_slot(b, b->n - 1), GPUNIC_RPC_MAGIC_RESPONSE, 4);
	rc_error(b, c, GPUNIC_RPC_E_BAD_MAGIC);
	c = rc_add(b, "zero magic", GPUNIC_RPC_ID_ECHO, args, 3);
	rc_le(rc_slot(b, b->n - 1), 0, 4);
	rc_error(b, c, GPUNIC_RPC_E_BAD_MAGIC);
	/* arg_len past the slot: one byte, and as far as it goes */
	c = rc_add(b, "arg_len one past", GPUNIC_RPC_ID_ECHO, args, 0);
	rc_le(rc_slot(b, b->n - 1) + 8, RC_SLOT - 24 + 1, 4);
	c->rx_len = RC_SLOT;
	rc_error(b, c, GPUNIC_RPC_E_TOO_LONG);
	c = rc_add(b, "arg_len 2^32-1", GPUNIC_RPC_ID_SURFACE_D3, args, 0);
	rc_le(rc_slot(b, b->n - 1) + 8, 0xffffffffu, 4);
	c->rx_len = RC_SLOT;
	rc_error(b, c, GPUNIC_RPC_E_TOO_LONG);
	/* fewer bytes arrived than the header says */
	c = rc_add(b, "decoder payload missing", GPUNIC_RPC_ID_SURFACE_D3, args, 1);
	c->rx_len = 24;
	rc_error(b, c, GPUNIC_RPC_E_TRUNCATED);
	c = rc_add(b, "echo one byte short", GPUNIC_RPC_ID_ECHO, args, 40);
	c->rx_len = 24 + 39;
	rc_error(b, c, GPUNIC_RPC_E_TRUNCATED);
	c = rc_add(b, "half a header", GPUNIC_RPC_ID_ECHO, args, 3);
	c->rx_len = 10;
	rc_error(b, c, GPUNIC_RPC_E_TRUNCATED);
	c = rc_add(b, "nothing arrived", GPUNIC_RPC_ID_ECHO, args, 3);
	c->rx_len = 0;
	rc_error(b, c, GPUNIC_RPC_E_TRUNCATED);
	/* arguments that break the schema */
	rc_error(b, rc_add(b, "decoder 2 bytes", GPUNIC_RPC_ID_SURFACE_D3, args, 2),
		 GPUNIC_RPC_E_SCHEMA);
	rc_error(b, rc_add(b, "decoder no bytes", GPUNIC_RPC_ID_SURFACE_D3, args, 0),
		 GPUNIC_RPC_E_SCHEMA);
	rc_error(b, rc_add(b, "mix3 12 bytes", RT_ID_MIX3, args, 12), GPUNIC_RPC_E_SCHEMA);
	rc_error(b, rc_add(b, "mix3 14 bytes", RT_ID_MIX3, args, 14), GPUNIC_RPC_E_SCHEMA);
	rc_error(b, rc_add(b, "liar no bytes", RT_ID_LIAR, args, 0), GPUNIC_RPC_E_SCHEMA);
	args[0] = 0xff;
	args[1] = 0x04;  /* bit 10 of 10 bits: an unused bit set */
	rc_error(b, rc_add(b, "bits10 unused bit", RT_ID_BITS10, args, 2), GPUNIC_RPC_E_SCHEMA);
}

static void rc_build(struct rc_batch *b)
{
	b->n = 0;
	b->req = (uint8_t *)aligned_alloc(64, (size_t)RC_MAX * RC_SLOT);
	b->c = (struct rc_case *)calloc(RC_MAX, sizeof(*b->c));
	CHECK(b->req && b->c);
	rc_good(b);
	rc_liar(b);
	rc_bad(b);
}

static void rc_free(struct rc_batch *b)
{
	free(b->req);
	free(b->c);
}

/* ---------------------------------------------------------------- running and checking */

/*
 * The batch on @exec in @shape, with the table's @flags (0, or GPUNIC_RPC_CUDAQ_DROPS): every
 * response byte for byte, every drop leaving its slot as it was, every counter.
 */
static void rc_suite(rc_exec_fn exec, enum rc_shape shape, uint32_t flags)
{
	struct gpunic_rpc_table t;
	struct gpunic_rpc_counters cnt, want;
	struct rc_batch b;
	uint8_t *rx, *tx = NULL, *out;
	uint32_t *rx_len, *ret, i, k;
	int drop, scribbled;

	rc_table(&t, flags);
	rc_build(&b);
	rx = (uint8_t *)aligned_alloc(64, (size_t)RC_MAX * RC_SLOT);
	rx_len = (uint32_t *)calloc(RC_MAX, sizeof(*rx_len));
	ret = (uint32_t *)calloc(RC_MAX, sizeof(*ret));
	CHECK(rx && rx_len && ret);
	memcpy(rx, b.req, (size_t)b.n * RC_SLOT);
	if (shape == RC_SEPARATE) {
		tx = (uint8_t *)aligned_alloc(64, (size_t)RC_MAX * RC_SLOT);
		CHECK(tx);
		memset(tx, RC_FILL, (size_t)RC_MAX * RC_SLOT);
	}
	memset(&cnt, 0, sizeof(cnt));
	memset(&want, 0, sizeof(want));
	for (i = 0; i < b.n; i++)
		rx_len[i] = b.c[i].rx_len;
	exec(&t, rx, tx, rx_len, b.n, ret, &cnt);

	for (i = 0; i < b.n; i++) {
		const struct rc_case *c = &b.c[i];

		drop = (flags & GPUNIC_RPC_CUDAQ_DROPS) && c->cudaq_drop;
		want.by_reason[c->reason]++;
		want.dropped += (uint64_t)drop;
		out = (tx ? tx : rx) + (size_t)i * RC_SLOT;
		if (ret[i] != (drop ? 0 : c->want_len))
			harness_fail(__FILE__, __LINE__, "case %s: %u response bytes, not %u",
				     c->what, ret[i], drop ? 0 : c->want_len);
		if (drop) {
			for (k = 0; k < RC_SLOT; k++)
				if (out[k] != (tx ? RC_FILL : b.req[(size_t)i * RC_SLOT + k]))
					harness_fail(__FILE__, __LINE__,
						     "case %s: dropped, yet byte %u changed",
						     c->what, k);
			continue;
		}
		for (k = 0; k < c->want_len; k++)
			if (out[k] != c->want[k])
				harness_fail(__FILE__, __LINE__,
					     "case %s: response byte %u is 0x%02x, not 0x%02x",
					     c->what, k, out[k], c->want[k]);
		/* a separate tx slot: the dispatcher wrote nothing past the response (a handler
		 * that failed may have: liar writes before it lies), the request is untouched */
		scribbled = c->reason == GPUNIC_RPC_R_HANDLER_ERROR ||
			    c->reason == GPUNIC_RPC_R_BAD_RESULT;
		for (k = c->want_len; tx && !scribbled && k < RC_SLOT; k++)
			if (out[k] != RC_FILL)
				harness_fail(__FILE__, __LINE__, "case %s: tx byte %u written",
					     c->what, k);
		if (tx && memcmp(rx + (size_t)i * RC_SLOT, b.req + (size_t)i * RC_SLOT, RC_SLOT))
			harness_fail(__FILE__, __LINE__, "case %s: the request was written to",
				     c->what);
	}
	for (i = 0; i < GPUNIC_RPC_REASONS; i++)
		if (cnt.by_reason[i] != want.by_reason[i])
			harness_fail(__FILE__, __LINE__, "counter %s: %llu, not %llu",
				     gpunic_rpc_reason_name(i),
				     (unsigned long long)cnt.by_reason[i],
				     (unsigned long long)want.by_reason[i]);
	CHECK_EQ(cnt.dropped, want.dropped);
	/* every reason is in the batch, so every counter was proven */
	for (i = 0; i < GPUNIC_RPC_REASONS; i++)
		CHECK(want.by_reason[i] > 0);
	if (flags & GPUNIC_RPC_CUDAQ_DROPS)
		CHECK(want.dropped > 0);
	printf("%u requests, %llu dropped:", b.n, (unsigned long long)cnt.dropped);
	for (i = 0; i < GPUNIC_RPC_REASONS; i++)
		printf(" %s %llu", gpunic_rpc_reason_name(i), (unsigned long long)cnt.by_reason[i]);
	printf("\n");
	free(rx);
	free(tx);
	free(rx_len);
	free(ret);
	rc_free(&b);
}

#endif
