/* SPDX-License-Identifier: MIT */
/*
 * The realtime RPC message protocol of CUDA-Q realtime (docs/RPC.md): a ring slot holds one
 * request, a 24-byte header and its arguments; the answer is a 24-byte response header and the
 * results, in the same slot ("unified" shape) or in a slot of its own. A function table maps the
 * request's function_id (FNV-1a of the handler's name) to a handler and the schema of its
 * arguments and results.
 *
 * This header holds the wire format, the table and the library's host functions: building and
 * filling a table, built-in handlers, handlers loaded from a shared library, the sender's helpers
 * and CPU reference results. gpunic/rpc_dev.h holds the dispatch step, header-only, for GPU
 * kernels and CPU threads alike; gpunic/rpc_handlers.h the built-in handlers' code.
 *
 * Every multi-byte field is little-endian, the byte order of every host and GPU this builds
 * for; the structures are laid out with no padding (checked at compile time), so a slot is read
 * through them directly. A slot must be 8-byte aligned.
 */
#ifndef GPUNIC_RPC_H
#define GPUNIC_RPC_H

#include <stddef.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpunic/rpc.h: the protocol's fields are little-endian and read in place"
#endif

/*
 * GPUNIC_RPC_FN marks the header-only functions of the RPC headers: host and device code under
 * nvcc, plain static inline functions for a C compiler (the CPU executor). GPUNIC_RPC_HANDLER
 * marks a handler: the same, but not forced inline, as the dispatcher calls it by address.
 */
#if defined(__CUDACC__)
#define GPUNIC_RPC_FN static __host__ __device__ __forceinline__
#define GPUNIC_RPC_HANDLER static inline __host__ __device__
#else
#define GPUNIC_RPC_FN static inline
#define GPUNIC_RPC_HANDLER static inline
#endif
#if defined(__CUDA_ARCH__)
#define GPUNIC_RPC_ON_GPU 1
#else
#define GPUNIC_RPC_ON_GPU 0
#endif

#ifdef __cplusplus
#define GPUNIC_RPC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
extern "C" {
#else
#define GPUNIC_RPC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* ---------------------------------------------------------------- wire format */

/* 'CUQR' and 'CUQS' read as 32-bit numbers; on the wire (little-endian) 52 51 55 43, 53 ... */
#define GPUNIC_RPC_MAGIC_REQUEST 0x43555152u
#define GPUNIC_RPC_MAGIC_RESPONSE 0x43555153u
#define GPUNIC_RPC_HEADER_BYTES 24u

/* What the sender writes at the start of a slot; arg_len bytes of arguments follow. */
struct gpunic_rpc_header {
	uint32_t magic;          /* GPUNIC_RPC_MAGIC_REQUEST */
	uint32_t function_id;    /* gpunic_rpc_fnv1a() of the handler's name */
	uint32_t arg_len;        /* argument bytes after the header */
	uint32_t request_id;     /* the sender's, echoed in the response */
	uint64_t ptp_timestamp;  /* the sender's clock at sending (0: none), echoed */
};

/* What the dispatcher writes at the start of the answer; result_len bytes of results follow. */
struct gpunic_rpc_response {
	uint32_t magic;          /* GPUNIC_RPC_MAGIC_RESPONSE */
	int32_t status;          /* 0 ok, > 0 the handler's error, < 0 enum gpunic_rpc_status */
	uint32_t result_len;     /* result bytes after the header */
	uint32_t request_id;     /* echoed from the request */
	uint64_t ptp_timestamp;  /* echoed from the request */
};

GPUNIC_RPC_STATIC_ASSERT(sizeof(struct gpunic_rpc_header) == GPUNIC_RPC_HEADER_BYTES,
			 "request header is 24 bytes");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_header, function_id) == 4, "function_id");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_header, arg_len) == 8, "arg_len");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_header, request_id) == 12, "request_id");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_header, ptp_timestamp) == 16,
			 "ptp_timestamp");
GPUNIC_RPC_STATIC_ASSERT(sizeof(struct gpunic_rpc_response) == GPUNIC_RPC_HEADER_BYTES,
			 "response header is 24 bytes");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_response, status) == 4, "status");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_response, result_len) == 8, "result_len");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_response, request_id) == 12,
			 "response request_id");
GPUNIC_RPC_STATIC_ASSERT(offsetof(struct gpunic_rpc_response, ptp_timestamp) == 16,
			 "response ptp_timestamp");

/*
 * Status of a response. 0 is success, a positive value the handler's own error, a negative one
 * an error of the protocol found by the dispatcher (docs/RPC.md, "Status codes"). -1 is also
 * what CUDA-Q's unified dispatch kernel answers for a function it has no handler for.
 */
enum gpunic_rpc_status {
	GPUNIC_RPC_OK = 0,
	GPUNIC_RPC_E_UNKNOWN_FUNCTION = -1, /* no function with this id in the table */
	GPUNIC_RPC_E_BAD_MAGIC = -2,        /* the slot does not start with 'CUQR' */
	GPUNIC_RPC_E_TOO_LONG = -3,         /* 24 + arg_len is more than the slot holds */
	GPUNIC_RPC_E_TRUNCATED = -4,        /* fewer bytes arrived than the header or arg_len say */
	GPUNIC_RPC_E_SCHEMA = -5,           /* the arguments do not match the function's schema */
	GPUNIC_RPC_E_BAD_RESULT = -6,       /* the handler's results overran or broke its schema */
	GPUNIC_RPC_E_NO_HANDLER = -7,       /* the function has no handler on this executor */
};

/* Positive statuses the built-in handlers return (a handler's errors are its own to number). */
#define GPUNIC_RPC_HANDLER_EARGS 1    /* arguments the handler cannot take */
#define GPUNIC_RPC_HANDLER_ENOSPC 2   /* its results do not fit in max_result_len */

/*
 * Why a request ended as it did, one counter each (struct gpunic_rpc_counters). The protocol
 * errors are counted under the reason whose status they answer with.
 */
enum gpunic_rpc_reason {
	GPUNIC_RPC_R_OK = 0,               /* the handler ran and returned 0 */
	GPUNIC_RPC_R_HANDLER_ERROR = 1,    /* the handler ran and returned another status */
	GPUNIC_RPC_R_UNKNOWN_FUNCTION = 2,
	GPUNIC_RPC_R_BAD_MAGIC = 3,
	GPUNIC_RPC_R_TOO_LONG = 4,
	GPUNIC_RPC_R_TRUNCATED = 5,
	GPUNIC_RPC_R_SCHEMA = 6,
	GPUNIC_RPC_R_BAD_RESULT = 7,
	GPUNIC_RPC_R_NO_HANDLER = 8,
	GPUNIC_RPC_REASONS = 9,
};

/* A protocol error's reason and its status map one to one: status = 1 - reason. */
GPUNIC_RPC_STATIC_ASSERT(GPUNIC_RPC_E_UNKNOWN_FUNCTION == 1 - GPUNIC_RPC_R_UNKNOWN_FUNCTION &&
			 GPUNIC_RPC_E_NO_HANDLER == 1 - GPUNIC_RPC_R_NO_HANDLER,
			 "status = 1 - reason");

/*
 * Requests by reason, and how many of them got no response (GPUNIC_RPC_DROP_*). Written by one
 * dispatching thread; others read them when it has stopped, or tolerate a torn view.
 */
struct gpunic_rpc_counters {
	uint64_t by_reason[GPUNIC_RPC_REASONS];
	uint64_t dropped;
};

/* ---------------------------------------------------------------- schemas */

/* Payload type ids of a schema (the values CUDA-Q realtime's schemas use). */
enum gpunic_rpc_type_id {
	GPUNIC_RPC_TYPE_UINT8 = 0x10,
	GPUNIC_RPC_TYPE_INT32 = 0x11,
	GPUNIC_RPC_TYPE_INT64 = 0x12,
	GPUNIC_RPC_TYPE_FLOAT32 = 0x13,
	GPUNIC_RPC_TYPE_FLOAT64 = 0x14,
	GPUNIC_RPC_TYPE_ARRAY_UINT8 = 0x20,
	GPUNIC_RPC_TYPE_ARRAY_INT32 = 0x21,
	GPUNIC_RPC_TYPE_ARRAY_FLOAT32 = 0x22,
	GPUNIC_RPC_TYPE_ARRAY_FLOAT64 = 0x23,
	GPUNIC_RPC_TYPE_BIT_PACKED = 0x30, /* num_elements bits, LSB first, unused bits zero */
};

#define GPUNIC_RPC_MAX_ARGS 8u
#define GPUNIC_RPC_MAX_RESULTS 4u
/*
 * gpunic's extension: an array as the last argument (or result) with size_bytes 0 and
 * num_elements GPUNIC_RPC_VARIABLE takes the rest of the payload, a whole number of elements.
 * CUDA-Q's schemas give every array a fixed size.
 */
#define GPUNIC_RPC_VARIABLE 0xffffffffu

/* One argument or result: 12 bytes, laid out as CUDA-Q's cudaq_type_desc_t. */
struct gpunic_rpc_type {
	uint8_t type_id;        /* enum gpunic_rpc_type_id */
	uint8_t reserved[3];
	uint32_t size_bytes;    /* bytes on the wire */
	uint32_t num_elements;  /* scalars 1, arrays their elements, BIT_PACKED its bits */
};

/* A handler's interface, laid out as CUDA-Q's cudaq_handler_schema_t (148 bytes). */
struct gpunic_rpc_schema {
	uint8_t num_args;
	uint8_t num_results;
	uint16_t reserved;
	struct gpunic_rpc_type args[GPUNIC_RPC_MAX_ARGS];
	struct gpunic_rpc_type results[GPUNIC_RPC_MAX_RESULTS];
};

GPUNIC_RPC_STATIC_ASSERT(sizeof(struct gpunic_rpc_type) == 12, "type descriptor is 12 bytes");
GPUNIC_RPC_STATIC_ASSERT(sizeof(struct gpunic_rpc_schema) == 148, "schema is 148 bytes");

/*
 * What the dispatcher checks of one side (arguments or results) of a schema, precomputed when
 * the function is registered so that a request costs a few compares.
 */
struct gpunic_rpc_layout {
	uint32_t fixed_bytes;  /* bytes of the fixed-size items */
	uint32_t tail_unit;    /* 0: no variable tail; else the element size of the variable last item */
	uint32_t npad;         /* bit-packed items whose last byte has unused bits */
	uint32_t pad_off[GPUNIC_RPC_MAX_ARGS];  /* offset of each such last byte */
	uint8_t pad_mask[GPUNIC_RPC_MAX_ARGS];  /* its unused bits, which must be zero */
};

/* ---------------------------------------------------------------- handlers and the table */

/*
 * The device-call form (CUDA-Q realtime's DeviceRPCFunction): read @arg_len argument bytes at
 * @input, write at most @max_result_len result bytes at @output, set *@result_len, return the
 * status (0 ok, > 0 the handler's error). In the unified shape @output == @input: read what
 * you need before you write. Compiled for the GPU (a device function) or for the CPU.
 */
typedef int (*gpunic_rpc_dev_fn)(const void *input, void *output, uint32_t arg_len,
				 uint32_t max_result_len, uint32_t *result_len);

/*
 * The host-call form (CUDA-Q realtime's cudaq_host_rpc_fn_t), CPU only: read the request from
 * @rx_slot, write the whole response (header, status, results) into @tx_slot, which holds
 * @slot_size bytes. The dispatcher checks the request before and the response after, and
 * writes the echoed request_id and ptp_timestamp itself.
 */
typedef void (*gpunic_rpc_host_fn)(const void *rx_slot, void *tx_slot, size_t slot_size);

#define GPUNIC_RPC_MAX_FUNCTIONS 16u
#define GPUNIC_RPC_NAME_MAX 32u  /* bytes of a name, its terminating NUL included */

struct gpunic_rpc_entry {
	gpunic_rpc_dev_fn gpu_fn;     /* device form as a GPU calls it (gpunic_rpc_bind on the GPU) */
	gpunic_rpc_dev_fn cpu_fn;     /* device form compiled for the CPU */
	gpunic_rpc_host_fn host_fn;   /* host form (CPU only; preferred there when set) */
	uint32_t function_id;
	uint32_t typed;               /* 0: registered without a schema, payloads unchecked */
	struct gpunic_rpc_layout args;
	struct gpunic_rpc_layout results;
	struct gpunic_rpc_schema schema;
	char name[GPUNIC_RPC_NAME_MAX];
};

/* Table flags: answer nothing, as CUDA-Q's dispatch kernels do, instead of a negative status. */
#define GPUNIC_RPC_DROP_UNKNOWN 0x1u   /* unknown function, or no handler on this executor */
#define GPUNIC_RPC_DROP_BAD_MAGIC 0x2u /* a slot that does not start with 'CUQR' */
#define GPUNIC_RPC_CUDAQ_DROPS (GPUNIC_RPC_DROP_UNKNOWN | GPUNIC_RPC_DROP_BAD_MAGIC)

/*
 * A function table: plain data with no pointers of its own, so it is copied to GPU memory as
 * it is (then gpunic_rpc_bind() sets the GPU's handler addresses there). ids[] is scanned by
 * the dispatcher: one 64-byte line.
 */
struct gpunic_rpc_table {
	uint32_t count;
	uint32_t flags;  /* GPUNIC_RPC_DROP_* */
	uint32_t ids[GPUNIC_RPC_MAX_FUNCTIONS];
	struct gpunic_rpc_entry entries[GPUNIC_RPC_MAX_FUNCTIONS];
};

/* ---------------------------------------------------------------- header-only helpers */

/* The function id of @name: FNV-1a, 32 bits, over its bytes up to the NUL. */
GPUNIC_RPC_FN uint32_t gpunic_rpc_fnv1a(const char *name)
{
	uint32_t h = 2166136261u;

	while (*name) {
		h ^= (uint8_t)*name++;
		h *= 16777619u;
	}
	return h;
}

/* Ids of the built-in handlers (tests/rpc checks them against gpunic_rpc_fnv1a). */
#define GPUNIC_RPC_ID_ECHO 0xd49dd484u       /* "echo" */
#define GPUNIC_RPC_ID_ADD_ONE 0x1036ec5bu    /* "add_one" */
#define GPUNIC_RPC_ID_SURFACE_D3 0x5f359a9cu /* "surface_d3" */

/*
 * Bytes of one element of an array or scalar type, 0 for BIT_PACKED and unknown types.
 * Return: 1, 4 or 8, or 0.
 */
GPUNIC_RPC_FN uint32_t gpunic_rpc_type_unit(uint8_t type_id)
{
	switch (type_id) {
	case GPUNIC_RPC_TYPE_UINT8:
	case GPUNIC_RPC_TYPE_ARRAY_UINT8:
		return 1;
	case GPUNIC_RPC_TYPE_INT32:
	case GPUNIC_RPC_TYPE_FLOAT32:
	case GPUNIC_RPC_TYPE_ARRAY_INT32:
	case GPUNIC_RPC_TYPE_ARRAY_FLOAT32:
		return 4;
	case GPUNIC_RPC_TYPE_INT64:
	case GPUNIC_RPC_TYPE_FLOAT64:
	case GPUNIC_RPC_TYPE_ARRAY_FLOAT64:
		return 8;
	default:
		return 0;
	}
}

/* ---------------------------------------------------------------- tables (library) */

/* An empty table with @flags (GPUNIC_RPC_DROP_*). */
void gpunic_rpc_table_init(struct gpunic_rpc_table *t, uint32_t flags);

/*
 * Check @s: at most 8 arguments and 4 results, known type ids, each size agreeing with its
 * type and element count (bit-packed: ceil(bits / 8) bytes), a variable array only last.
 * Return: 0, or EINVAL with the reason in @why (@n bytes; @why may be NULL).
 */
int gpunic_rpc_schema_check(const struct gpunic_rpc_schema *s, char *why, size_t n);

/*
 * Add function @name to @t with schema @schema (NULL: none, payloads unchecked) and its
 * handlers: @cpu_fn, the device form compiled for the CPU, and @host_fn, the host form; either,
 * both or neither may be given (neither: a GPU-only function, its handler bound later on the
 * GPU with gpunic_rpc_bind).
 * Return: 0; EINVAL (empty or too long name, bad schema), EEXIST (the name, or another name
 * with the same FNV-1a id, is there already), ENOSPC (table full); the reason in @why.
 */
int gpunic_rpc_register(struct gpunic_rpc_table *t, const char *name,
			const struct gpunic_rpc_schema *schema, gpunic_rpc_dev_fn cpu_fn,
			gpunic_rpc_host_fn host_fn, char *why, size_t n);

/* The entry of function @name in @t, or NULL. */
const struct gpunic_rpc_entry *gpunic_rpc_find(const struct gpunic_rpc_table *t,
					       const char *name);

/*
 * Register the built-in functions, each with its CPU handler: "echo" (results = arguments),
 * "add_one" (every argument byte plus one) and "surface_d3" (the lookup-table decoder of the
 * [[9,1,3]] rotated surface code; docs/RPC.md). Their GPU handlers are bound on the GPU with
 * gpunic_rpc_bind_builtins() (gpunic/rpc_handlers.h).
 * Return: 0, or what gpunic_rpc_register() returned, with @why.
 */
int gpunic_rpc_register_builtins(struct gpunic_rpc_table *t, char *why, size_t n);

/* ---------------------------------------------------------------- handlers from a .so */

/*
 * A shared library of CPU handlers exports one function, gpunic_rpc_plugin(), that returns a
 * description of its handlers; it needs this header only, nothing of libgpunic.
 */
#define GPUNIC_RPC_PLUGIN_ABI 1u
#define GPUNIC_RPC_PLUGIN_SYMBOL "gpunic_rpc_plugin"

struct gpunic_rpc_plugin_fn {
	const char *name;
	const struct gpunic_rpc_schema *schema;  /* NULL: none */
	gpunic_rpc_dev_fn cpu_fn;                /* device form compiled for the CPU, or NULL */
	gpunic_rpc_host_fn host_fn;              /* host form, or NULL (one of the two is needed) */
};

struct gpunic_rpc_plugin_desc {
	uint32_t abi;    /* GPUNIC_RPC_PLUGIN_ABI */
	uint32_t count;
	const struct gpunic_rpc_plugin_fn *fns;
};

/* What a plugin defines (and libgpunic does not): its handlers, alive while it is loaded. */
const struct gpunic_rpc_plugin_desc *gpunic_rpc_plugin(void);

/*
 * Load the shared library @path and register its handlers in @t, all or none. The library
 * stays loaded until gpunic_rpc_unload_plugin(*@handle): the table points into it.
 * Return: 0; ENOENT (dlopen failed), ENOEXEC (no gpunic_rpc_plugin, or another ABI), EINVAL,
 * EEXIST or ENOSPC (a handler gpunic_rpc_register refused; @t is unchanged); the reason in @why.
 */
int gpunic_rpc_load_plugin(struct gpunic_rpc_table *t, const char *path, void **handle,
			   char *why, size_t n);

/* Unload a library gpunic_rpc_load_plugin() loaded (NULL: nothing), after its table is gone. */
void gpunic_rpc_unload_plugin(void *handle);

/* ---------------------------------------------------------------- names */

/* "ok", "unknown function", ... for a status; "handler error" for one > 0 or unknown. */
const char *gpunic_rpc_status_name(int32_t status);

/* "ok", "handler_error", "unknown_function", ... (counter names); "?" out of range. */
const char *gpunic_rpc_reason_name(uint32_t reason);

/* "uint8", "array_int32", "bit_packed", ...; "?" for an unknown id. */
const char *gpunic_rpc_type_name(uint8_t type_id);

/* ---------------------------------------------------------------- the sender's side */

/*
 * Write a request into @slot (@slot_size bytes, 8-byte aligned): the header and @arg_len bytes
 * of @args (NULL when @arg_len is 0).
 * Return: bytes to send (24 + @arg_len), or 0 if they do not fit in @slot_size.
 */
uint32_t gpunic_rpc_request_write(void *slot, uint32_t slot_size, uint32_t function_id,
				  const void *args, uint32_t arg_len, uint32_t request_id,
				  uint64_t ptp_timestamp);

/* What gpunic_rpc_response_check() found, the first fault in this order. */
enum gpunic_rpc_check {
	GPUNIC_RPC_CHECK_OK = 0,
	GPUNIC_RPC_CHECK_SHORT,       /* fewer bytes than a header, or than header + result_len */
	GPUNIC_RPC_CHECK_MAGIC,       /* not 'CUQS' */
	GPUNIC_RPC_CHECK_REQUEST_ID,  /* request_id not the one sent */
	GPUNIC_RPC_CHECK_TIMESTAMP,   /* ptp_timestamp not the one sent */
	GPUNIC_RPC_CHECK_STATUS,      /* status not the one expected */
	GPUNIC_RPC_CHECK_LENGTH,      /* result_len not the one expected */
	GPUNIC_RPC_CHECK_RESULT,      /* result bytes differ */
	GPUNIC_RPC_CHECKS,
};

/*
 * Check the response @msg of @len bytes to a request sent with @request_id and
 * @ptp_timestamp: its status must be @want_status and its results the @want_len bytes at @want
 * (NULL: results not compared, length included).
 * Return: the first fault found, or GPUNIC_RPC_CHECK_OK.
 */
enum gpunic_rpc_check gpunic_rpc_response_check(const void *msg, uint32_t len,
						 uint32_t request_id, uint64_t ptp_timestamp,
						 int32_t want_status, const void *want,
						 uint32_t want_len);

/* "ok", "short", "magic", "request_id", "timestamp", "status", "length", "result"; "?". */
const char *gpunic_rpc_check_name(enum gpunic_rpc_check c);

/*
 * Arguments for built-in function @function_id for message number @seq, at most @max bytes at
 * @out (echo and add_one: @max bytes of a pattern of @seq; surface_d3: the syndrome @seq mod 256).
 * Return: the argument bytes written, or 0 for a function that is not built in.
 */
uint32_t gpunic_rpc_builtin_args(uint32_t function_id, uint64_t seq, void *out, uint32_t max);

/*
 * The CPU reference of built-in function @function_id, written apart from its handler: the
 * results of @arg_len bytes of @args into @out (@max bytes), their length in *@out_len.
 * Return: the status the handler answers with (0, or GPUNIC_RPC_HANDLER_*), or
 * GPUNIC_RPC_E_UNKNOWN_FUNCTION for a function that is not built in.
 */
int32_t gpunic_rpc_builtin_reference(uint32_t function_id, const void *args, uint32_t arg_len,
				     void *out, uint32_t max, uint32_t *out_len);

/*
 * The [[9,1,3]] rotated surface code (docs/RPC.md, "surface_d3"): qubits 0..8 row by row on a
 * 3 x 3 grid. The syndrome of X errors @x_err and Z errors @z_err (bit q: qubit q): bits 0-3 the
 * Z-type stabilizers' outcomes, bits 4-7 the X-type stabilizers'.
 */
uint8_t gpunic_rpc_surface_d3_syndrome(uint32_t x_err, uint32_t z_err);

/*
 * The reference correction of @syndrome, found by search: for each error type, the lightest
 * error with that syndrome, the lowest-numbered of equals. Bits 0-8: X on qubits 0-8; bits
 * 9-17: Z on qubits 0-8.
 */
uint32_t gpunic_rpc_surface_d3_reference(uint8_t syndrome);

#ifdef __cplusplus
}
#endif

#endif
