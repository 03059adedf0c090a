/* SPDX-License-Identifier: MIT */
/* What the RPC module's files share inside libgpunic. Not exported. */
#ifndef GPUNIC_RPC_LOC_H
#define GPUNIC_RPC_LOC_H

#include <stddef.h>

#define RPC_HIDDEN __attribute__((visibility("hidden")))

/* Write the printf-formatted reason into @why (@n bytes; @why may be NULL) and return @err. */
int rpc_fail(char *why, size_t n, int err, const char *fmt, ...) RPC_HIDDEN
	__attribute__((format(printf, 4, 5)));

#endif
