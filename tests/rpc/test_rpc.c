/* SPDX-License-Identifier: MIT */
/*
 * The RPC protocol library (gpunic/rpc.h) and the dispatch step on the CPU (gpunic/rpc_dev.h):
 * the wire layout byte by byte, FNV-1a, schema and registration checks, the built-in handlers
 * against their references (the decoder on every syndrome and every single-qubit error), the
 * host-call form, handlers loaded from a shared library, and the sender's checks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>
#include <gpunic/rpc_handlers.h>

#include "harness.h"

#define SLOT 256u

static uint8_t slot_a[SLOT] __attribute__((aligned(64)));
static uint8_t slot_b[SLOT] __attribute__((aligned(64)));

static uint64_t le(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

static void builtins(struct gpunic_rpc_table *t, uint32_t flags)
{
	char why[256];

	gpunic_rpc_table_init(t, flags);
	if (gpunic_rpc_register_builtins(t, why, sizeof(why)))
		harness_fail(__FILE__, __LINE__, "%s", why);
}

/* ---------------------------------------------------------------- wire format */

TEST(wire_layout)
{
	static const uint8_t args[3] = { 0xa1, 0xa2, 0xa3 };
	struct gpunic_rpc_response r;

	memset(slot_a, 0xcc, SLOT);
	CHECK_EQ(gpunic_rpc_request_write(slot_a, SLOT, 0x11223344, args, 3, 0x55667788,
					  0x0102030405060708ull),
		 27);
	/* 'C' 'U' 'Q' 'R' as a little-endian number: R first */
	CHECK(slot_a[0] == 0x52 && slot_a[1] == 0x51 && slot_a[2] == 0x55 && slot_a[3] == 0x43);
	CHECK_EQ(le(slot_a + 4, 4), 0x11223344);
	CHECK_EQ(le(slot_a + 8, 4), 3);
	CHECK_EQ(le(slot_a + 12, 4), 0x55667788);
	CHECK_EQ(le(slot_a + 16, 8), 0x0102030405060708ull);
	CHECK_MEM(slot_a + 24, args, 3);
	CHECK_EQ(slot_a[27], 0xcc);

	memset(&r, 0, sizeof(r));
	r.magic = GPUNIC_RPC_MAGIC_RESPONSE;
	r.status = -5;
	r.result_len = 9;
	r.request_id = 0xdeadbeef;
	r.ptp_timestamp = 0x1112131415161718ull;
	memcpy(slot_b, &r, sizeof(r));
	CHECK(slot_b[0] == 0x53 && slot_b[3] == 0x43);
	CHECK_EQ(le(slot_b + 4, 4), 0xfffffffbu);
	CHECK_EQ(le(slot_b + 8, 4), 9);
	CHECK_EQ(le(slot_b + 12, 4), 0xdeadbeef);
	CHECK_EQ(le(slot_b + 16, 8), 0x1112131415161718ull);
	CHECK_EQ(sizeof(struct gpunic_rpc_header) + sizeof(struct gpunic_rpc_response), 48);

	/* a request that does not fit is not written */
	CHECK_EQ(gpunic_rpc_request_write(slot_a, 26, 1, args, 3, 0, 0), 0);
	CHECK_EQ(gpunic_rpc_request_write(slot_a, 20, 1, NULL, 0, 0, 0), 0);
	CHECK_EQ(gpunic_rpc_request_write(slot_a, 24, 1, NULL, 0, 0, 0), 24);
}

TEST(fnv1a)
{
	/* the FNV reference vectors */
	CHECK_EQ(gpunic_rpc_fnv1a(""), 0x811c9dc5u);
	CHECK_EQ(gpunic_rpc_fnv1a("a"), 0xe40c292cu);
	CHECK_EQ(gpunic_rpc_fnv1a("foobar"), 0xbf9cf968u);
	/* bytes above 0x7f hash as unsigned */
	CHECK_EQ(gpunic_rpc_fnv1a("\xff"), (0x811c9dc5u ^ 0xffu) * 16777619u);
	CHECK_EQ(gpunic_rpc_fnv1a("echo"), GPUNIC_RPC_ID_ECHO);
	CHECK_EQ(gpunic_rpc_fnv1a("add_one"), GPUNIC_RPC_ID_ADD_ONE);
	CHECK_EQ(gpunic_rpc_fnv1a("surface_d3"), GPUNIC_RPC_ID_SURFACE_D3);
}

/* ---------------------------------------------------------------- schemas and tables */

static void type_set(struct gpunic_rpc_type *ty, uint8_t id, uint32_t size, uint32_t n)
{
	memset(ty, 0, sizeof(*ty));
	ty->type_id = id;
	ty->size_bytes = size;
	ty->num_elements = n;
}

static void schema_refused(const struct gpunic_rpc_schema *s, const char *what)
{
	char why[256] = "";

	if (gpunic_rpc_schema_check(s, why, sizeof(why)) != EINVAL)
		harness_fail(__FILE__, __LINE__, "schema with %s accepted", what);
	CHECK(why[0] != '\0');
}

/* Every type with its sizes, the variable array last: accepted. */
static void schema_good(struct gpunic_rpc_schema *s)
{
	memset(s, 0, sizeof(*s));
	s->num_args = 8;
	type_set(&s->args[0], GPUNIC_RPC_TYPE_UINT8, 1, 1);
	type_set(&s->args[1], GPUNIC_RPC_TYPE_INT32, 4, 1);
	type_set(&s->args[2], GPUNIC_RPC_TYPE_INT64, 8, 0);  /* "unused, set to 1": 0 too */
	type_set(&s->args[3], GPUNIC_RPC_TYPE_FLOAT32, 4, 1);
	type_set(&s->args[4], GPUNIC_RPC_TYPE_FLOAT64, 8, 1);
	type_set(&s->args[5], GPUNIC_RPC_TYPE_ARRAY_INT32, 12, 3);
	type_set(&s->args[6], GPUNIC_RPC_TYPE_BIT_PACKED, 16, 128);
	type_set(&s->args[7], GPUNIC_RPC_TYPE_ARRAY_FLOAT64, 0, GPUNIC_RPC_VARIABLE);
	s->num_results = 4;
	type_set(&s->results[0], GPUNIC_RPC_TYPE_ARRAY_UINT8, 5, 5);
	type_set(&s->results[1], GPUNIC_RPC_TYPE_ARRAY_FLOAT32, 8, 2);
	type_set(&s->results[2], GPUNIC_RPC_TYPE_BIT_PACKED, 0, 0);
	type_set(&s->results[3], GPUNIC_RPC_TYPE_BIT_PACKED, 2, 9);
}

enum schema_field { F_TYPE, F_SIZE, F_COUNT, F_RESERVED };

/* One field of the good schema changed, and refused for it. */
static const struct {
	const char *what;
	int result;          /* 0: args[item], 1: results[item] */
	unsigned item;
	enum schema_field field;
	uint32_t value;
} schema_faults[] = {
	{ "type 0x15", 0, 0, F_TYPE, 0x15 },
	{ "an int32 of 8 bytes", 0, 1, F_SIZE, 8 },
	{ "an int32 of 2 elements", 0, 1, F_COUNT, 2 },
	{ "reserved bytes set", 0, 3, F_RESERVED, 1 },
	{ "3 int32 in 13 bytes", 0, 5, F_SIZE, 13 },
	{ "128 bits in 15 bytes", 0, 6, F_SIZE, 15 },
	{ "a variable bit field", 0, 6, F_COUNT, GPUNIC_RPC_VARIABLE },
	{ "a variable array with a size", 0, 7, F_SIZE, 8 },
	{ "9 bits in 1 byte", 1, 3, F_SIZE, 1 },
};

TEST(schema_checks)
{
	struct gpunic_rpc_schema s;
	struct gpunic_rpc_type *ty;
	char why[256];
	unsigned id, k;

	schema_good(&s);
	CHECK_EQ(gpunic_rpc_schema_check(&s, why, sizeof(why)), 0);
	for (k = 0; k < sizeof(schema_faults) / sizeof(schema_faults[0]); k++) {
		schema_good(&s);
		ty = schema_faults[k].result ? &s.results[schema_faults[k].item] :
					       &s.args[schema_faults[k].item];
		switch (schema_faults[k].field) {
		case F_TYPE:
			ty->type_id = (uint8_t)schema_faults[k].value;
			break;
		case F_SIZE:
			ty->size_bytes = schema_faults[k].value;
			break;
		case F_COUNT:
			ty->num_elements = schema_faults[k].value;
			break;
		case F_RESERVED:
			ty->reserved[1] = (uint8_t)schema_faults[k].value;
			break;
		}
		schema_refused(&s, schema_faults[k].what);
	}
	schema_good(&s);
	s.num_args = 9;
	schema_refused(&s, "9 arguments");
	schema_good(&s);
	s.num_results = 5;
	schema_refused(&s, "5 results");
	schema_good(&s);
	type_set(&s.args[5], GPUNIC_RPC_TYPE_ARRAY_INT32, 0, GPUNIC_RPC_VARIABLE);
	schema_refused(&s, "a variable array not last");
	schema_good(&s);
	type_set(&s.args[6], GPUNIC_RPC_TYPE_ARRAY_UINT8, 0x40000000u, 0x40000000u);
	schema_refused(&s, "arguments over 1 GiB");
	/* one byte, one element: a uint8, an array of one, or one bit; every other id refused */
	schema_good(&s);
	for (id = 0; id < 256; id++) {
		s.args[0].type_id = (uint8_t)id;
		CHECK_EQ(gpunic_rpc_schema_check(&s, NULL, 0) == 0,
			 id == GPUNIC_RPC_TYPE_UINT8 || id == GPUNIC_RPC_TYPE_ARRAY_UINT8 ||
				 id == GPUNIC_RPC_TYPE_BIT_PACKED);
	}
}

TEST(register_and_find)
{
	struct gpunic_rpc_table t, before;
	struct gpunic_rpc_schema bad;
	char why[256], name[40];
	unsigned i;

	builtins(&t, 0);
	CHECK_EQ(t.count, 3);
	CHECK(gpunic_rpc_find(&t, "echo") == &t.entries[0]);
	CHECK_EQ(gpunic_rpc_find(&t, "surface_d3")->function_id, GPUNIC_RPC_ID_SURFACE_D3);
	CHECK(gpunic_rpc_find(&t, "surface") == NULL);
	CHECK(gpunic_rpc_find(&t, NULL) == NULL);
	CHECK(gpunic_rpc_lookup(&t, GPUNIC_RPC_ID_ADD_ONE) == &t.entries[1]);
	CHECK(gpunic_rpc_lookup(&t, 0) == NULL);
	CHECK(t.entries[2].typed && t.entries[2].args.fixed_bytes == 1 &&
	      t.entries[2].results.fixed_bytes == 3 && t.entries[2].results.npad == 1 &&
	      t.entries[2].results.pad_off[0] == 2 && t.entries[2].results.pad_mask[0] == 0xfc);
	CHECK(t.entries[0].args.tail_unit == 1 && t.entries[0].args.fixed_bytes == 0);

	before = t;
	CHECK_EQ(gpunic_rpc_register(&t, "", NULL, NULL, NULL, why, sizeof(why)), EINVAL);
	CHECK_EQ(gpunic_rpc_register(&t, NULL, NULL, NULL, NULL, why, sizeof(why)), EINVAL);
	memset(name, 'n', 32);
	name[32] = '\0';
	CHECK_EQ(gpunic_rpc_register(&t, name, NULL, NULL, NULL, why, sizeof(why)), EINVAL);
	CHECK_EQ(gpunic_rpc_register(&t, "echo", NULL, NULL, NULL, why, sizeof(why)), EEXIST);
	memset(&bad, 0, sizeof(bad));
	bad.num_args = 1;
	type_set(&bad.args[0], 0x99, 1, 1);
	CHECK_EQ(gpunic_rpc_register(&t, "bad", &bad, NULL, NULL, why, sizeof(why)), EINVAL);
	CHECK(!memcmp(&t, &before, sizeof(t)));

	/* two names, one FNV-1a id: the second is refused, with both names in the reason */
	CHECK_EQ(gpunic_rpc_fnv1a("costarring"), gpunic_rpc_fnv1a("liquid"));
	CHECK_EQ(gpunic_rpc_register(&t, "costarring", NULL, NULL, NULL, why, sizeof(why)), 0);
	CHECK_EQ(gpunic_rpc_register(&t, "liquid", NULL, NULL, NULL, why, sizeof(why)), EEXIST);
	CHECK(strstr(why, "costarring") && strstr(why, "liquid"));

	memset(name, 'n', 31);
	name[31] = '\0';
	CHECK_EQ(gpunic_rpc_register(&t, name, NULL, NULL, NULL, why, sizeof(why)), 0);
	for (i = t.count; i < GPUNIC_RPC_MAX_FUNCTIONS; i++) {
		snprintf(name, sizeof(name), "fn%u", i);
		CHECK_EQ(gpunic_rpc_register(&t, name, NULL, NULL, NULL, why, sizeof(why)), 0);
	}
	CHECK_EQ(gpunic_rpc_register(&t, "one_more", NULL, NULL, NULL, why, sizeof(why)), ENOSPC);
	CHECK_EQ(t.count, GPUNIC_RPC_MAX_FUNCTIONS);
	CHECK(gpunic_rpc_lookup(&t, gpunic_rpc_fnv1a("fn15")) == &t.entries[15]);
	/* a count past the array is refused, never trusted */
	t.count = GPUNIC_RPC_MAX_FUNCTIONS + 5;
	CHECK_EQ(gpunic_rpc_register(&t, "x", NULL, NULL, NULL, NULL, 0), EINVAL);
	CHECK(gpunic_rpc_lookup(&t, 0x12345678) == NULL);
}

TEST(names)
{
	int32_t s;
	unsigned i;

	for (s = GPUNIC_RPC_E_NO_HANDLER; s <= 0; s++)
		CHECK(strcmp(gpunic_rpc_status_name(s), "handler error") != 0);
	CHECK(!strcmp(gpunic_rpc_status_name(5), "handler error"));
	CHECK(!strcmp(gpunic_rpc_status_name(-8), "handler error"));
	for (i = 0; i < GPUNIC_RPC_REASONS; i++)
		CHECK(strcmp(gpunic_rpc_reason_name(i), "?") != 0);
	CHECK(!strcmp(gpunic_rpc_reason_name(GPUNIC_RPC_REASONS), "?"));
	for (i = 0; i < GPUNIC_RPC_CHECKS; i++)
		CHECK(strcmp(gpunic_rpc_check_name((enum gpunic_rpc_check)i), "?") != 0);
	CHECK(!strcmp(gpunic_rpc_type_name(GPUNIC_RPC_TYPE_BIT_PACKED), "bit_packed"));
	CHECK(!strcmp(gpunic_rpc_type_name(0x24), "?"));
}

/* ---------------------------------------------------------------- the decoder */

/* Errors (bit q: qubit q) that are stabilizers or the identity: no logical effect. */
static int surface_harmless(uint32_t x, uint32_t z)
{
	/* zero syndrome, and even overlap with the other type's logical operator:
	 * logical Z = Z0Z1Z2 detects a logical X, logical X = X0X3X6 a logical Z */
	return gpunic_rpc_surface_d3_syndrome(x, z) == 0 && !(__builtin_popcount(x & 0x007) & 1) &&
	       !(__builtin_popcount(z & 0x049) & 1);
}

TEST(surface_d3_every_syndrome)
{
	uint32_t s, c, rl;
	uint8_t in, out[3];

	for (s = 0; s < 256; s++) {
		c = gpunic_rpc_surface_d3_reference((uint8_t)s);
		/* the handler's table against the search */
		CHECK_EQ(gpunic_rpc_surface_d3_x(s) | gpunic_rpc_surface_d3_z(s >> 4) << 9, c);
		in = (uint8_t)s;
		CHECK_EQ(gpunic_rpc_surface_d3(&in, out, 1, 3, &rl), 0);
		CHECK_EQ(rl, 3);
		CHECK_EQ(le(out, 3), c);
		/* the correction has the syndrome it was asked for, and weighs at most 2 a type */
		CHECK_EQ(gpunic_rpc_surface_d3_syndrome(c & 0x1ff, c >> 9), s);
		CHECK(__builtin_popcount(c & 0x1ff) <= 2 && __builtin_popcount(c >> 9) <= 2);
		/* in place, as in the unified shape */
		out[0] = (uint8_t)s;
		CHECK_EQ(gpunic_rpc_surface_d3(out, out, 1, 3, &rl), 0);
		CHECK_EQ(le(out, 3), c);
	}
	CHECK_EQ(gpunic_rpc_surface_d3(&in, out, 2, 3, &rl), GPUNIC_RPC_HANDLER_EARGS);
	CHECK_EQ(gpunic_rpc_surface_d3(&in, out, 1, 2, &rl), GPUNIC_RPC_HANDLER_ENOSPC);
	CHECK_EQ(rl, 0);
}

TEST(surface_d3_corrects_every_single_qubit_error)
{
	uint32_t q, type, x, z, c;

	/* the stabilizers and logical operators themselves, as the check below reads them */
	CHECK(surface_harmless(0x003, 0) && surface_harmless(0, 0x01b));
	CHECK(!surface_harmless(0x049, 0) && !surface_harmless(0, 0x007));
	for (q = 0; q < 9; q++)
		for (type = 1; type <= 3; type++) {  /* X, Z, Y */
			x = type & 1 ? 1u << q : 0;
			z = type & 2 ? 1u << q : 0;
			c = gpunic_rpc_surface_d3_reference(gpunic_rpc_surface_d3_syndrome(x, z));
			if (!surface_harmless(x ^ (c & 0x1ff), z ^ (c >> 9)))
				harness_fail(__FILE__, __LINE__,
					     "error %c on qubit %u: correction 0x%05x leaves a "
					     "logical error",
					     "?XZY"[type], q, c);
		}
	/* distance 3, not more: X0 X3 looks like X6 and becomes the logical X0 X3 X6 */
	c = gpunic_rpc_surface_d3_reference(gpunic_rpc_surface_d3_syndrome(0x009, 0));
	CHECK_EQ(c, 0x040);
	CHECK(!surface_harmless(0x009 ^ c, 0));
}

/* ---------------------------------------------------------------- dispatch on the CPU */

/* One request through the library's registration (its CPU handlers), unified shape. */
static uint32_t dispatch_one(const struct gpunic_rpc_table *t, uint32_t fid, const void *args,
			     uint32_t arg_len, struct gpunic_rpc_counters *c)
{
	uint32_t len = gpunic_rpc_request_write(slot_a, SLOT, fid, args, arg_len, 77, 7777);

	CHECK(len);
	return gpunic_rpc_dispatch_unified(t, slot_a, len, SLOT, c);
}

TEST(builtins_registered_by_the_library)
{
	struct gpunic_rpc_table t;
	struct gpunic_rpc_counters c;
	uint8_t args[SLOT], want[SLOT];
	uint32_t k, len, n, wl, ret, id, requests = 0;

	builtins(&t, 0);
	memset(&c, 0, sizeof(c));
	/* echo and add_one on every length a slot takes, the decoder on every syndrome */
	for (k = 0; k < 3; k++)
		for (len = 0; len < (k < 2 ? SLOT - 24 + 1 : 256); len++, requests++) {
			id = k == 0 ? GPUNIC_RPC_ID_ECHO :
			     k == 1 ? GPUNIC_RPC_ID_ADD_ONE : GPUNIC_RPC_ID_SURFACE_D3;
			n = gpunic_rpc_builtin_args(id, k < 2 ? requests : len, args,
						    k < 2 ? len : 1);
			CHECK_EQ(gpunic_rpc_builtin_reference(id, args, n, want, SLOT - 24, &wl), 0);
			ret = dispatch_one(&t, id, args, n, &c);
			CHECK_EQ(ret, 24 + wl);
			CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, 0, want, wl),
				 GPUNIC_RPC_CHECK_OK);
		}
	CHECK_EQ(c.by_reason[GPUNIC_RPC_R_OK], requests);
	CHECK_EQ(requests, 2 * (SLOT - 24 + 1) + 256);
	CHECK_EQ(c.dropped, 0);
}

/* echo and add_one on every alignment and length, in place and apart, against the reference */
TEST(copy_paths)
{
	static uint8_t in[96] __attribute__((aligned(8))), out[96] __attribute__((aligned(8)));
	static const gpunic_rpc_dev_fn fns[2] = { gpunic_rpc_echo, gpunic_rpc_add_one };
	static const uint32_t ids[2] = { GPUNIC_RPC_ID_ECHO, GPUNIC_RPC_ID_ADD_ONE };
	uint8_t want[64], src[64];
	uint32_t f, ai, bi, n, i, rl, wl;

	for (f = 0; f < 2; f++)
		for (ai = 0; ai < 8; ai++)
			for (bi = 0; bi < 8; bi++)
				for (n = 0; n <= 40; n++) {
					for (i = 0; i < n; i++)
						src[i] = (uint8_t)(i * 41 + ai + 0x7d);
					memcpy(in + ai, src, n);
					memset(out, 0xee, sizeof(out));
					CHECK_EQ(gpunic_rpc_builtin_reference(ids[f], src, n, want,
									      64, &wl), 0);
					CHECK_EQ(fns[f](in + ai, out + bi, n, 64, &rl), 0);
					CHECK_EQ(rl, wl);
					CHECK_MEM(out + bi, want, n);
					CHECK_EQ(out[bi + n], 0xee);
					CHECK_EQ(fns[f](in + ai, in + ai, n, 64, &rl), 0);
					CHECK_MEM(in + ai, want, n);
				}
	CHECK_EQ(gpunic_rpc_echo(in, out, 65, 64, &rl), GPUNIC_RPC_HANDLER_ENOSPC);
	CHECK_EQ(gpunic_rpc_add_one(in, out, 65, 64, &rl), GPUNIC_RPC_HANDLER_ENOSPC);
	CHECK_EQ(rl, 0);
}

/* What the device form was handed, for the tests below. */
static struct {
	const void *in;
	void *out;
	uint32_t arg_len, max;
} seen;

static int spy(const void *input, void *output, uint32_t arg_len, uint32_t max_result_len,
	       uint32_t *result_len)
{
	seen.in = input;
	seen.out = output;
	seen.arg_len = arg_len;
	seen.max = max_result_len;
	*result_len = 0;
	return 0;
}

TEST(device_form_gets_the_slot)
{
	struct gpunic_rpc_table t;
	uint32_t len;

	gpunic_rpc_table_init(&t, 0);
	CHECK_EQ(gpunic_rpc_register(&t, "spy", NULL, spy, NULL, NULL, 0), 0);
	len = gpunic_rpc_request_write(slot_a, SLOT, gpunic_rpc_fnv1a("spy"), "abcdef", 6, 1, 2);
	/* unified: input and output are the payload in the slot, as CUDA-Q's unified kernel */
	CHECK_EQ(gpunic_rpc_dispatch_unified(&t, slot_a, len, SLOT, NULL), 24);
	CHECK(seen.in == slot_a + 24 && seen.out == slot_a + 24);
	CHECK_EQ(seen.arg_len, 6);
	CHECK_EQ(seen.max, SLOT - 24);
	/* separate slots: output in tx, bounded by tx's size */
	gpunic_rpc_request_write(slot_a, SLOT, gpunic_rpc_fnv1a("spy"), "abcdef", 6, 1, 2);
	CHECK_EQ(gpunic_rpc_dispatch(&t, slot_a, len, SLOT, slot_b, 100, NULL), 24);
	CHECK(seen.in == slot_a + 24 && seen.out == slot_b + 24);
	CHECK_EQ(seen.max, 100 - 24);
	/* a tx slot too small for a header: nothing runs, nothing is written, it is counted */
	{
		struct gpunic_rpc_counters c;

		memset(&c, 0, sizeof(c));
		memset(slot_b, 0xee, SLOT);
		seen.in = NULL;
		CHECK_EQ(gpunic_rpc_dispatch(&t, slot_a, len, SLOT, slot_b, 23, &c), 0);
		CHECK(seen.in == NULL && slot_b[0] == 0xee);
		CHECK_EQ(c.by_reason[GPUNIC_RPC_R_BAD_RESULT], 1);
		CHECK_EQ(c.dropped, 1);
	}
}

/* A host-call handler as CUDA-Q documents them: reads rx, writes the whole response to tx. */
static int host_calls;

static void host_upper(const void *rx_slot, void *tx_slot, size_t slot_size)
{
	const struct gpunic_rpc_header *h = rx_slot;
	struct gpunic_rpc_response *r = tx_slot;
	uint32_t n = h->arg_len, i;
	const uint8_t *in = (const uint8_t *)rx_slot + 24;
	uint8_t *out = (uint8_t *)tx_slot + 24;

	host_calls++;
	for (i = 0; i < n && 24 + i < slot_size; i++)
		out[i] = (uint8_t)(in[i] >= 'a' && in[i] <= 'z' ? in[i] - 32 : in[i]);
	r->magic = in[0] == '!' ? 0 : GPUNIC_RPC_MAGIC_RESPONSE;  /* '!': forget the magic */
	r->status = in[0] == '?' ? 3 : 0;
	r->result_len = in[0] == '+' ? (uint32_t)slot_size : n;  /* '+': claim too much */
	r->request_id = 0xbad;                                  /* the dispatcher echoes, */
	r->ptp_timestamp = 0xbad;                               /* not the handler */
}

TEST(host_form)
{
	struct gpunic_rpc_table t;
	struct gpunic_rpc_counters c;
	uint32_t id = gpunic_rpc_fnv1a("upper"), ret;

	gpunic_rpc_table_init(&t, 0);
	/* both forms given: the CPU runs the host form */
	CHECK_EQ(gpunic_rpc_register(&t, "upper", NULL, spy, host_upper, NULL, 0), 0);
	memset(&c, 0, sizeof(c));
	seen.in = NULL;
	ret = dispatch_one(&t, id, "gpu-nic", 7, &c);
	CHECK_EQ(ret, 31);
	CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, 0, "GPU-NIC", 7),
		 GPUNIC_RPC_CHECK_OK);
	CHECK(seen.in == NULL && host_calls == 1);
	/* separate slots */
	gpunic_rpc_request_write(slot_a, SLOT, id, "rx", 2, 5, 6);
	CHECK_EQ(gpunic_rpc_dispatch(&t, slot_a, 26, SLOT, slot_b, SLOT, &c), 26);
	CHECK_EQ(gpunic_rpc_response_check(slot_b, 26, 5, 6, 0, "RX", 2), GPUNIC_RPC_CHECK_OK);
	CHECK_EQ(le(slot_a + 24, 2), 'r' | 'x' << 8);
	/* its own error, and the contract broken twice */
	ret = dispatch_one(&t, id, "?x", 2, &c);
	CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, 3, "?X", 2),
		 GPUNIC_RPC_CHECK_OK);
	ret = dispatch_one(&t, id, "!x", 2, &c);
	CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, GPUNIC_RPC_E_BAD_RESULT, NULL,
					   0),
		 GPUNIC_RPC_CHECK_OK);
	ret = dispatch_one(&t, id, "+x", 2, &c);
	CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, GPUNIC_RPC_E_BAD_RESULT, NULL,
					   0),
		 GPUNIC_RPC_CHECK_OK);
	CHECK_EQ(c.by_reason[GPUNIC_RPC_R_OK], 2);
	CHECK_EQ(c.by_reason[GPUNIC_RPC_R_HANDLER_ERROR], 1);
	CHECK_EQ(c.by_reason[GPUNIC_RPC_R_BAD_RESULT], 2);
}

/* Each drop flag alone: CUDA-Q's silence for its case, an answer for the other. */
TEST(drop_flags_one_at_a_time)
{
	struct gpunic_rpc_table t;
	struct gpunic_rpc_counters c;
	uint32_t flags, ret;

	for (flags = 0; flags < 4; flags++) {
		builtins(&t, flags);
		memset(&c, 0, sizeof(c));
		ret = dispatch_one(&t, 0x1234, "x", 1, &c);
		CHECK_EQ(ret, flags & GPUNIC_RPC_DROP_UNKNOWN ? 0 : 24);
		gpunic_rpc_request_write(slot_a, SLOT, GPUNIC_RPC_ID_ECHO, "x", 1, 1, 1);
		slot_a[3] = 0x44;
		ret = gpunic_rpc_dispatch_unified(&t, slot_a, 25, SLOT, &c);
		CHECK_EQ(ret, flags & GPUNIC_RPC_DROP_BAD_MAGIC ? 0 : 24);
		CHECK_EQ(c.by_reason[GPUNIC_RPC_R_UNKNOWN_FUNCTION], 1);
		CHECK_EQ(c.by_reason[GPUNIC_RPC_R_BAD_MAGIC], 1);
		CHECK_EQ(c.dropped, (uint64_t)__builtin_popcount(flags));
		/* a good request is answered whatever the flags */
		CHECK_EQ(dispatch_one(&t, GPUNIC_RPC_ID_ECHO, "x", 1, NULL), 25);
	}
}

/* ---------------------------------------------------------------- the sender's checks */

TEST(response_check_faults)
{
	struct gpunic_rpc_response r = { GPUNIC_RPC_MAGIC_RESPONSE, 0, 3, 9, 99 };
	uint8_t m[32];

	memcpy(m, &r, 24);
	memcpy(m + 24, "abc", 3);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 99, 0, "abc", 3), GPUNIC_RPC_CHECK_OK);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 99, 0, NULL, 3), GPUNIC_RPC_CHECK_OK);
	CHECK_EQ(gpunic_rpc_response_check(m, 23, 9, 99, 0, "abc", 3), GPUNIC_RPC_CHECK_SHORT);
	CHECK_EQ(gpunic_rpc_response_check(m, 26, 9, 99, 0, "abc", 3), GPUNIC_RPC_CHECK_SHORT);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 8, 99, 0, "abc", 3),
		 GPUNIC_RPC_CHECK_REQUEST_ID);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 98, 0, "abc", 3), GPUNIC_RPC_CHECK_TIMESTAMP);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 99, 1, "abc", 3), GPUNIC_RPC_CHECK_STATUS);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 99, 0, "abc", 2), GPUNIC_RPC_CHECK_LENGTH);
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 99, 0, "abd", 3), GPUNIC_RPC_CHECK_RESULT);
	m[0] = 0x52;  /* a request's magic */
	CHECK_EQ(gpunic_rpc_response_check(m, 27, 9, 99, 0, "abc", 3), GPUNIC_RPC_CHECK_MAGIC);
}

TEST(builtin_helpers_unknown_function)
{
	uint8_t buf[8];
	uint32_t len = 5;

	CHECK_EQ(gpunic_rpc_builtin_args(0x1234, 1, buf, 8), 0);
	CHECK_EQ(gpunic_rpc_builtin_args(GPUNIC_RPC_ID_SURFACE_D3, 0x1ff, buf, 0), 0);
	CHECK_EQ(gpunic_rpc_builtin_args(GPUNIC_RPC_ID_SURFACE_D3, 0x1ff, buf, 8), 1);
	CHECK_EQ(buf[0], 0xff);
	CHECK_EQ(gpunic_rpc_builtin_reference(0x1234, buf, 1, buf, 8, &len),
		 GPUNIC_RPC_E_UNKNOWN_FUNCTION);
	CHECK_EQ(len, 0);
	/* echo's arguments change with the message: two messages never share them */
	{
		uint8_t a[16], b[16];

		gpunic_rpc_builtin_args(GPUNIC_RPC_ID_ECHO, 1, a, 16);
		gpunic_rpc_builtin_args(GPUNIC_RPC_ID_ECHO, 2, b, 16);
		CHECK(memcmp(a, b, 16) != 0);
	}
}

/* ---------------------------------------------------------------- handlers from a .so */

TEST(plugin_loads_and_serves)
{
	struct gpunic_rpc_table t;
	char why[512];
	void *h = NULL;
	uint32_t ret;
	uint8_t want[3];

	builtins(&t, 0);
	CHECK_EQ(gpunic_rpc_load_plugin(&t, RPC_PLUGIN_GOOD, &h, why, sizeof(why)), 0);
	CHECK(h != NULL);
	CHECK_EQ(t.count, 5);
	CHECK(gpunic_rpc_find(&t, "negate")->host_fn != NULL);
	CHECK(gpunic_rpc_find(&t, "triple")->cpu_fn != NULL);
	ret = dispatch_one(&t, gpunic_rpc_fnv1a("triple"), "\x01\x02\x55", 3, NULL);
	want[0] = 3;
	want[1] = 6;
	want[2] = 0xff;
	CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, 0, want, 3), GPUNIC_RPC_CHECK_OK);
	ret = dispatch_one(&t, gpunic_rpc_fnv1a("negate"), "\x01\xf0", 2, NULL);
	CHECK_EQ(gpunic_rpc_response_check(slot_a, ret, 77, 7777, 0, "\xfe\x0f", 2),
		 GPUNIC_RPC_CHECK_OK);
	/* the built-in ones still answer */
	CHECK_EQ(dispatch_one(&t, GPUNIC_RPC_ID_ECHO, "x", 1, NULL), 25);
	gpunic_rpc_unload_plugin(h);
	gpunic_rpc_unload_plugin(NULL);
}

static void plugin_refused(const char *path, int err, const char *says)
{
	struct gpunic_rpc_table t, before;
	char why[512] = "";
	void *h = (void *)1;

	builtins(&t, 0);
	before = t;
	if (gpunic_rpc_load_plugin(&t, path, &h, why, sizeof(why)) != err)
		harness_fail(__FILE__, __LINE__, "%s: not refused with %d (%s)", path, err, why);
	if (!strstr(why, says))
		harness_fail(__FILE__, __LINE__, "%s: reason '%s' does not say '%s'", path, why,
			     says);
	CHECK(h == NULL);
	CHECK(!memcmp(&t, &before, sizeof(t)));
}

TEST(plugin_refusals)
{
	plugin_refused("/nonexistent/librpc.so", ENOENT, "nonexistent");
	plugin_refused(RPC_PLUGIN_NOSYM, ENOEXEC, "gpunic_rpc_plugin");
	plugin_refused(RPC_PLUGIN_BADABI, ENOEXEC, "ABI 99");
	/* "negate" would register, "echo" clashes: neither stays */
	plugin_refused(RPC_PLUGIN_CLASH, EEXIST, "echo");
}
