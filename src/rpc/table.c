// SPDX-License-Identifier: MIT
/*
 * RPC function tables (include/gpunic/rpc.h): schemas checked and turned into the layouts the
 * dispatch step compares requests with, functions registered by name, and the names of
 * statuses, reasons and types.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <gpunic/rpc.h>

#include "rpc_loc.h"

/* Payloads beyond this are refused at registration: far more than any slot holds. */
#define RPC_SCHEMA_MAX_BYTES (1u << 30)

int rpc_fail(char *why, size_t n, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return err;
}

void gpunic_rpc_table_init(struct gpunic_rpc_table *t, uint32_t flags)
{
	memset(t, 0, sizeof(*t));
	t->flags = flags;
}

static bool type_is_array(uint8_t id)
{
	return id >= GPUNIC_RPC_TYPE_ARRAY_UINT8 && id <= GPUNIC_RPC_TYPE_ARRAY_FLOAT64;
}

/*
 * Check item @i of one side (@side: "argument" or "result") and add it to @l at *@off. @last:
 * the side's last item, the only one that may be of variable length.
 */
static int item_add(const struct gpunic_rpc_type *ty, unsigned i, bool last, const char *side,
		    struct gpunic_rpc_layout *l, uint64_t *off, char *why, size_t n)
{
	uint32_t unit = gpunic_rpc_type_unit(ty->type_id);
	uint64_t want;

	if (ty->reserved[0] || ty->reserved[1] || ty->reserved[2])
		return rpc_fail(why, n, EINVAL, "%s %u: reserved bytes are not zero", side, i);
	if (ty->type_id == GPUNIC_RPC_TYPE_BIT_PACKED) {
		want = ((uint64_t)ty->num_elements + 7) / 8;
		if (ty->size_bytes != want)
			return rpc_fail(why, n, EINVAL,
					"%s %u: %u bits take %llu bytes bit-packed, not %u", side,
					i, ty->num_elements, (unsigned long long)want,
					ty->size_bytes);
		if (ty->num_elements % 8) {
			l->pad_off[l->npad] = (uint32_t)(*off + ty->size_bytes - 1);
			l->pad_mask[l->npad] = (uint8_t)(0xffu << (ty->num_elements % 8));
			l->npad++;
		}
	} else if (!unit) {
		return rpc_fail(why, n, EINVAL, "%s %u: unknown type id 0x%02x", side, i,
				ty->type_id);
	} else if (!type_is_array(ty->type_id)) {
		if (ty->size_bytes != unit || ty->num_elements > 1)
			return rpc_fail(why, n, EINVAL,
					"%s %u: a %s is %u bytes and one element, not %u bytes and %u",
					side, i, gpunic_rpc_type_name(ty->type_id), unit,
					ty->size_bytes, ty->num_elements);
	} else if (ty->num_elements == GPUNIC_RPC_VARIABLE) {
		if (!last || ty->size_bytes)
			return rpc_fail(why, n, EINVAL,
					"%s %u: only the last item may be of variable length, with "
					"size_bytes 0",
					side, i);
		l->tail_unit = unit;
		return 0;
	} else {
		want = (uint64_t)ty->num_elements * unit;
		if (ty->size_bytes != want)
			return rpc_fail(why, n, EINVAL, "%s %u: %u elements of %s take %llu bytes, not %u",
					side, i, ty->num_elements,
					gpunic_rpc_type_name(ty->type_id), (unsigned long long)want,
					ty->size_bytes);
	}
	*off += ty->size_bytes;
	if (*off > RPC_SCHEMA_MAX_BYTES)
		return rpc_fail(why, n, EINVAL, "%ss take more than %u bytes", side,
				RPC_SCHEMA_MAX_BYTES);
	return 0;
}

static int layout_build(const struct gpunic_rpc_type *items, unsigned count, unsigned max,
			const char *side, struct gpunic_rpc_layout *l, char *why, size_t n)
{
	uint64_t off = 0;
	unsigned i;
	int err;

	memset(l, 0, sizeof(*l));
	if (count > max)
		return rpc_fail(why, n, EINVAL, "%u %ss, at most %u", count, side, max);
	for (i = 0; i < count; i++) {
		err = item_add(&items[i], i, i + 1 == count, side, l, &off, why, n);
		if (err)
			return err;
	}
	l->fixed_bytes = (uint32_t)off;
	return 0;
}

static int schema_layouts(const struct gpunic_rpc_schema *s, struct gpunic_rpc_layout *args,
			  struct gpunic_rpc_layout *results, char *why, size_t n)
{
	int err = layout_build(s->args, s->num_args, GPUNIC_RPC_MAX_ARGS, "argument", args, why, n);

	return err ? err : layout_build(s->results, s->num_results, GPUNIC_RPC_MAX_RESULTS,
					"result", results, why, n);
}

int gpunic_rpc_schema_check(const struct gpunic_rpc_schema *s, char *why, size_t n)
{
	struct gpunic_rpc_layout a, r;

	return schema_layouts(s, &a, &r, why, n);
}

int gpunic_rpc_register(struct gpunic_rpc_table *t, const char *name,
			const struct gpunic_rpc_schema *schema, gpunic_rpc_dev_fn cpu_fn,
			gpunic_rpc_host_fn host_fn, char *why, size_t n)
{
	struct gpunic_rpc_entry *e;
	size_t len = name ? strlen(name) : 0;
	uint32_t id, i;
	int err;

	if (!len || len >= GPUNIC_RPC_NAME_MAX)
		return rpc_fail(why, n, EINVAL, "a function name is 1 to %u bytes",
				GPUNIC_RPC_NAME_MAX - 1);
	if (t->count > GPUNIC_RPC_MAX_FUNCTIONS)
		return rpc_fail(why, n, EINVAL, "table says it holds %u functions, at most %u",
				t->count, GPUNIC_RPC_MAX_FUNCTIONS);
	id = gpunic_rpc_fnv1a(name);
	for (i = 0; i < t->count; i++) {
		if (!strcmp(t->entries[i].name, name))
			return rpc_fail(why, n, EEXIST, "function '%s' is already registered", name);
		if (t->ids[i] == id)
			return rpc_fail(why, n, EEXIST,
					"'%s' has the id of '%s' (FNV-1a 0x%08x): one must be renamed",
					name, t->entries[i].name, id);
	}
	if (t->count == GPUNIC_RPC_MAX_FUNCTIONS)
		return rpc_fail(why, n, ENOSPC, "the table is full (%u functions)",
				GPUNIC_RPC_MAX_FUNCTIONS);
	e = &t->entries[t->count];
	memset(e, 0, sizeof(*e));
	if (schema) {
		err = schema_layouts(schema, &e->args, &e->results, why, n);
		if (err)
			return err;
		e->schema = *schema;
		e->typed = 1;
	}
	e->cpu_fn = cpu_fn;
	e->host_fn = host_fn;
	e->function_id = id;
	memcpy(e->name, name, len + 1);
	t->ids[t->count++] = id;
	return 0;
}

const struct gpunic_rpc_entry *gpunic_rpc_find(const struct gpunic_rpc_table *t,
					       const char *name)
{
	uint32_t i, count = t->count < GPUNIC_RPC_MAX_FUNCTIONS ? t->count : GPUNIC_RPC_MAX_FUNCTIONS;

	for (i = 0; name && i < count; i++)
		if (!strcmp(t->entries[i].name, name))
			return &t->entries[i];
	return NULL;
}

const char *gpunic_rpc_status_name(int32_t status)
{
	switch (status) {
	case GPUNIC_RPC_OK:
		return "ok";
	case GPUNIC_RPC_E_UNKNOWN_FUNCTION:
		return "unknown function";
	case GPUNIC_RPC_E_BAD_MAGIC:
		return "bad magic";
	case GPUNIC_RPC_E_TOO_LONG:
		return "arguments past the slot";
	case GPUNIC_RPC_E_TRUNCATED:
		return "truncated";
	case GPUNIC_RPC_E_SCHEMA:
		return "schema mismatch";
	case GPUNIC_RPC_E_BAD_RESULT:
		return "bad result";
	case GPUNIC_RPC_E_NO_HANDLER:
		return "no handler here";
	default:
		return "handler error";
	}
}

static const char *const reason_names[GPUNIC_RPC_REASONS] = {
	[GPUNIC_RPC_R_OK] = "ok",
	[GPUNIC_RPC_R_HANDLER_ERROR] = "handler_error",
	[GPUNIC_RPC_R_UNKNOWN_FUNCTION] = "unknown_function",
	[GPUNIC_RPC_R_BAD_MAGIC] = "bad_magic",
	[GPUNIC_RPC_R_TOO_LONG] = "too_long",
	[GPUNIC_RPC_R_TRUNCATED] = "truncated",
	[GPUNIC_RPC_R_SCHEMA] = "schema",
	[GPUNIC_RPC_R_BAD_RESULT] = "bad_result",
	[GPUNIC_RPC_R_NO_HANDLER] = "no_handler",
};

const char *gpunic_rpc_reason_name(uint32_t reason)
{
	return reason < GPUNIC_RPC_REASONS ? reason_names[reason] : "?";
}

const char *gpunic_rpc_type_name(uint8_t type_id)
{
	switch (type_id) {
	case GPUNIC_RPC_TYPE_UINT8:
		return "uint8";
	case GPUNIC_RPC_TYPE_INT32:
		return "int32";
	case GPUNIC_RPC_TYPE_INT64:
		return "int64";
	case GPUNIC_RPC_TYPE_FLOAT32:
		return "float32";
	case GPUNIC_RPC_TYPE_FLOAT64:
		return "float64";
	case GPUNIC_RPC_TYPE_ARRAY_UINT8:
		return "array_uint8";
	case GPUNIC_RPC_TYPE_ARRAY_INT32:
		return "array_int32";
	case GPUNIC_RPC_TYPE_ARRAY_FLOAT32:
		return "array_float32";
	case GPUNIC_RPC_TYPE_ARRAY_FLOAT64:
		return "array_float64";
	case GPUNIC_RPC_TYPE_BIT_PACKED:
		return "bit_packed";
	default:
		return "?";
	}
}
