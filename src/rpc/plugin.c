// SPDX-License-Identifier: MIT
/*
 * CPU handlers from a shared library (include/gpunic/rpc.h, "handlers from a .so"): the
 * library exports gpunic_rpc_plugin(), which describes its handlers; they are registered all or
 * none, and the library stays loaded while the table points into it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <gpunic/rpc.h>

#include "rpc_loc.h"

int gpunic_rpc_load_plugin(struct gpunic_rpc_table *t, const char *path, void **handle,
			   char *why, size_t n)
{
	const struct gpunic_rpc_plugin_desc *(*get)(void);
	const struct gpunic_rpc_plugin_desc *p;
	struct gpunic_rpc_table staged = *t;
	const char *err;
	void *h;
	uint32_t i;
	int rc = 0;

	*handle = NULL;
	dlerror();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err = dlerror();
		return rpc_fail(why, n, ENOENT, "%s", err ? err : path);
	}
	/* dlsym() hands back a data pointer: a union turns it into the function it names */
	{
		union {
			void *obj;
			const struct gpunic_rpc_plugin_desc *(*fn)(void);
		} sym;

		sym.obj = dlsym(h, GPUNIC_RPC_PLUGIN_SYMBOL);
		get = sym.fn;
	}
	if (!get) {
		rc = rpc_fail(why, n, ENOEXEC, "%s exports no %s()", path, GPUNIC_RPC_PLUGIN_SYMBOL);
		goto out;
	}
	p = get();
	if (!p || p->abi != GPUNIC_RPC_PLUGIN_ABI) {
		rc = rpc_fail(why, n, ENOEXEC, "%s: plugin ABI %u, this library takes %u", path,
			      p ? p->abi : 0, GPUNIC_RPC_PLUGIN_ABI);
		goto out;
	}
	if (p->count && !p->fns) {
		rc = rpc_fail(why, n, EINVAL, "%s: %u handlers and no list of them", path, p->count);
		goto out;
	}
	for (i = 0; i < p->count && !rc; i++) {
		const struct gpunic_rpc_plugin_fn *f = &p->fns[i];
		size_t used;

		if (!f->cpu_fn && !f->host_fn) {
			rc = rpc_fail(why, n, EINVAL, "%s: handler %u (%s) has no CPU form", path, i,
				      f->name ? f->name : "unnamed");
			break;
		}
		rc = gpunic_rpc_register(&staged, f->name, f->schema, f->cpu_fn, f->host_fn, why, n);
		if (rc && why && n) {
			/* say which library the refused handler came from */
			used = strlen(why);
			if (used + 1 < n)
				rpc_fail(why + used, n - used, rc, " (in %s)", path);
		}
	}
out:
	if (rc) {
		dlclose(h);
		return rc;
	}
	*t = staged;
	*handle = h;
	return 0;
}

void gpunic_rpc_unload_plugin(void *handle)
{
	if (handle)
		dlclose(handle);
}
