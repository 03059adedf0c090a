// SPDX-License-Identifier: MIT
/*
 * The loopback's RPC messages (loopback.h, "RPC messages"; docs/RPC.md): the requests the
 * sensor sends to the built-in functions, good and bad, the answer each must get, and the
 * sender's clock that stamps them.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exp_loc.h"
#include "gpunic/rpc.h"

/* A function id no table holds: FNV-1a of "no_such_function". */
#define RPC_ID_NONE 0xb18ae409u
/* An arg_len past any slot. */
#define RPC_ARG_LEN_HUGE 0xfffff000u

/* The kernel's dynamic clock id of an open PTP device (its FD_TO_CLOCKID). */
#define RPC_FD_TO_CLOCKID(fd) ((~(clockid_t)(fd) << 3) | 3)

static const char *const fault_names[LB_RPC_FAULTS] = {
	[LB_RPC_FAULT_NONE] = "none",
	[LB_RPC_FAULT_UNKNOWN] = "unknown",
	[LB_RPC_FAULT_MAGIC] = "magic",
	[LB_RPC_FAULT_TOO_LONG] = "too-long",
	[LB_RPC_FAULT_TRUNCATED] = "truncated",
	[LB_RPC_FAULT_SCHEMA] = "schema",
};

const char *lb_rpc_fault_name(enum lb_rpc_fault f)
{
	return (unsigned)f < LB_RPC_FAULTS ? fault_names[f] : "?";
}

int lb_rpc_fault_parse(const char *s, enum lb_rpc_fault *f)
{
	for (unsigned i = 0; i < LB_RPC_FAULTS; i++) {
		if (strcmp(s, fault_names[i]) == 0) {
			*f = (enum lb_rpc_fault)i;
			return 0;
		}
	}
	return EINVAL;
}

static const struct {
	const char *name;
	uint32_t id;
} builtin_fns[] = {
	{ "echo", GPUNIC_RPC_ID_ECHO },
	{ "add_one", GPUNIC_RPC_ID_ADD_ONE },
	{ "surface_d3", GPUNIC_RPC_ID_SURFACE_D3 },
};

int lb_rpc_fn_parse(const char *name, uint32_t *id)
{
	for (size_t i = 0; i < sizeof(builtin_fns) / sizeof(builtin_fns[0]); i++) {
		if (strcmp(name, builtin_fns[i].name) == 0) {
			*id = builtin_fns[i].id;
			return 0;
		}
	}
	return EINVAL;
}

const char *lb_rpc_fn_name(uint32_t id)
{
	for (size_t i = 0; i < sizeof(builtin_fns) / sizeof(builtin_fns[0]); i++)
		if (builtin_fns[i].id == id)
			return builtin_fns[i].name;
	return "?";
}

uint32_t lb_rpc_request_len(uint32_t fn, uint32_t size)
{
	uint32_t len;

	switch (fn) {
	case GPUNIC_RPC_ID_ECHO:
	case GPUNIC_RPC_ID_ADD_ONE:
		len = size;	/* any number of argument bytes: the rest of the message */
		break;
	case GPUNIC_RPC_ID_SURFACE_D3:
		len = GPUNIC_RPC_HEADER_BYTES + 1;	/* one byte of syndrome */
		break;
	default:
		return 0;
	}
	return size >= GPUNIC_RPC_HEADER_BYTES && len <= size ? len : 0;
}

uint32_t lb_rpc_fill(uint8_t *m, uint32_t max, uint32_t fn, enum lb_rpc_fault fault,
		     uint32_t size, uint64_t seq, uint64_t ts)
{
	uint32_t len = lb_rpc_request_len(fn, size), arg_len, id = fn;
	struct gpunic_rpc_header h;

	if (fault == LB_RPC_FAULT_SCHEMA) {
		/* surface_d3's one bit-packed byte missing */
		id = GPUNIC_RPC_ID_SURFACE_D3;
		len = GPUNIC_RPC_HEADER_BYTES;
	} else if (fault == LB_RPC_FAULT_UNKNOWN) {
		id = RPC_ID_NONE;
	}
	if (len > max || len < GPUNIC_RPC_HEADER_BYTES)
		return 0;
	arg_len = len - GPUNIC_RPC_HEADER_BYTES;
	gpunic_rpc_builtin_args(fn, seq, m + GPUNIC_RPC_HEADER_BYTES, arg_len);
	h = (struct gpunic_rpc_header){
		.magic = fault == LB_RPC_FAULT_MAGIC ? GPUNIC_RPC_MAGIC_RESPONSE :
						       GPUNIC_RPC_MAGIC_REQUEST,
		.function_id = id,
		.arg_len = fault == LB_RPC_FAULT_TOO_LONG ? RPC_ARG_LEN_HUGE :
			   fault == LB_RPC_FAULT_TRUNCATED ? arg_len + 1 : arg_len,
		.request_id = (uint32_t)seq,
		.ptp_timestamp = ts,
	};
	memcpy(m, &h, sizeof(h));
	return len;
}

int32_t lb_rpc_expect(uint32_t fn, enum lb_rpc_fault fault, uint32_t size, uint64_t seq,
		      uint32_t slot_bytes, uint8_t *want, uint32_t max, uint32_t *want_len)
{
	uint32_t len = lb_rpc_request_len(fn, size);

	*want_len = 0;
	switch (fault) {
	case LB_RPC_FAULT_UNKNOWN:
		return GPUNIC_RPC_E_UNKNOWN_FUNCTION;
	case LB_RPC_FAULT_MAGIC:
		return GPUNIC_RPC_E_BAD_MAGIC;
	case LB_RPC_FAULT_TOO_LONG:
		return GPUNIC_RPC_E_TOO_LONG;
	case LB_RPC_FAULT_TRUNCATED:
		/* arg_len + 1 past the slot is too long before it is truncated */
		return len + 1 > slot_bytes ? GPUNIC_RPC_E_TOO_LONG : GPUNIC_RPC_E_TRUNCATED;
	case LB_RPC_FAULT_SCHEMA:
		return GPUNIC_RPC_E_SCHEMA;
	default:
		break;
	}
	{
		uint8_t args[LB_MSG_MAX];
		uint32_t arg_len = len - GPUNIC_RPC_HEADER_BYTES;

		gpunic_rpc_builtin_args(fn, seq, args, arg_len);
		return gpunic_rpc_builtin_reference(fn, args, arg_len, want, max, want_len);
	}
}

/* ---------------------------------------------------------------- the sender's clock */

/* @path as a PTP clock that reads. Return: 0, or an errno. */
static int clock_open_ptp(struct lb_rpc_clock *c, const char *path)
{
	struct timespec ts;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return errno;
	if (clock_gettime(RPC_FD_TO_CLOCKID(fd), &ts)) {
		err = errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	c->id = RPC_FD_TO_CLOCKID(fd);
	snprintf(c->name, sizeof(c->name), "%s (PTP hardware clock)", path);
	return 0;
}

int lb_rpc_clock_open(struct lb_rpc_clock *c, const char *which)
{
	glob_t g;
	int err;

	c->fd = -1;
	c->id = CLOCK_REALTIME;
	snprintf(c->name, sizeof(c->name), "CLOCK_REALTIME");
	if (strcmp(which, "realtime") == 0)
		return 0;
	if (strcmp(which, "auto") != 0) {
		err = clock_open_ptp(c, which);
		if (err)
			LB_ERR("PTP clock %s: %s\n", which, strerror(err));
		return err;
	}
	/* the first PTP device that reads; none (or none readable): CLOCK_REALTIME */
	if (glob("/dev/ptp[0-9]*", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			if (clock_open_ptp(c, g.gl_pathv[i]) == 0)
				break;
		globfree(&g);
	}
	return 0;
}

void lb_rpc_clock_close(struct lb_rpc_clock *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

uint64_t lb_rpc_clock_ns(const struct lb_rpc_clock *c)
{
	struct timespec ts;

	if (clock_gettime(c->id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
