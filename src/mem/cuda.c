// SPDX-License-Identifier: MIT
/*
 * Device backend on the CUDA driver API, loaded with dlopen so that libgpunic carries no
 * link-time CUDA dependency and builds without CUDA headers. Only the few types, constants and
 * prototypes used here are declared, with the values cuda.h gives them; the symbol names are the
 * versioned ones libcuda.so.1 exports (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on).
 *
 * The context is the device's primary context, the one the CUDA runtime uses too, so buffers
 * allocated here work in kernels launched with <<<>>>. Every call pushes it and pops it again,
 * leaving the calling thread's current context as it was.
 */
#include "mem_loc.h"

#include <gpunic/log.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cu_result;
typedef int cu_device;
typedef struct cu_ctx_st *cu_context;
typedef unsigned long long cu_deviceptr;

enum {
	CU_OK = 0,
	CU_ERR_INVALID_VALUE = 1,
	CU_ERR_OUT_OF_MEMORY = 2,
	CU_ERR_NOT_INITIALIZED = 3,
	CU_ERR_DEINITIALIZED = 4,
	CU_ERR_STUB_LIBRARY = 34,
	CU_ERR_INSUFFICIENT_DRIVER = 35,
	CU_ERR_DEVICE_UNAVAILABLE = 46,
	CU_ERR_NO_DEVICE = 100,
	CU_ERR_INVALID_DEVICE = 101,
	CU_ERR_NOT_SUPPORTED = 801,
	CU_ERR_SYSTEM_DRIVER_MISMATCH = 803,
	CU_ERR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
};

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6

struct cuda_api {
	cu_result (*init)(unsigned int flags);
	cu_result (*driver_get_version)(int *version);
	cu_result (*device_get_count)(int *count);
	cu_result (*device_get)(cu_device *dev, int ordinal);
	cu_result (*device_get_name)(char *name, int len, cu_device dev);
	cu_result (*primary_ctx_retain)(cu_context *ctx, cu_device dev);
	cu_result (*primary_ctx_release)(cu_device dev);
	cu_result (*ctx_push)(cu_context ctx);
	cu_result (*ctx_pop)(cu_context *ctx);
	cu_result (*mem_alloc)(cu_deviceptr *dptr, size_t size);
	cu_result (*mem_free)(cu_deviceptr dptr);
	cu_result (*mem_host_alloc)(void **p, size_t size, unsigned int flags);
	cu_result (*mem_host_get_device_pointer)(cu_deviceptr *dptr, void *p, unsigned int flags);
	cu_result (*mem_free_host)(void *p);
	cu_result (*memcpy_htod)(cu_deviceptr dst, const void *src, size_t len);
	cu_result (*memcpy_dtoh)(void *dst, cu_deviceptr src, size_t len);
	cu_result (*memset_d8)(cu_deviceptr dst, unsigned char value, size_t len);
	cu_result (*pointer_set_attribute)(const void *value, int attr, cu_deviceptr dptr);
	cu_result (*get_error_name)(cu_result err, const char **name);
};

/* Symbol table: the versioned export each field is loaded from. */
static const struct {
	const char *name;
	size_t offset;
} cuda_syms[] = {
#define CUDA_SYM(field, sym) { sym, offsetof(struct cuda_api, field) }
	CUDA_SYM(init, "cuInit"),
	CUDA_SYM(driver_get_version, "cuDriverGetVersion"),
	CUDA_SYM(device_get_count, "cuDeviceGetCount"),
	CUDA_SYM(device_get, "cuDeviceGet"),
	CUDA_SYM(device_get_name, "cuDeviceGetName"),
	CUDA_SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
	CUDA_SYM(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"),
	CUDA_SYM(ctx_push, "cuCtxPushCurrent_v2"),
	CUDA_SYM(ctx_pop, "cuCtxPopCurrent_v2"),
	CUDA_SYM(mem_alloc, "cuMemAlloc_v2"),
	CUDA_SYM(mem_free, "cuMemFree_v2"),
	CUDA_SYM(mem_host_alloc, "cuMemHostAlloc"),
	CUDA_SYM(mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2"),
	CUDA_SYM(mem_free_host, "cuMemFreeHost"),
	CUDA_SYM(memcpy_htod, "cuMemcpyHtoD_v2"),
	CUDA_SYM(memcpy_dtoh, "cuMemcpyDtoH_v2"),
	CUDA_SYM(memset_d8, "cuMemsetD8_v2"),
	CUDA_SYM(pointer_set_attribute, "cuPointerSetAttribute"),
	CUDA_SYM(get_error_name, "cuGetErrorName"),
#undef CUDA_SYM
};

struct cuda_gpu {
	struct mem_gpu gpu;
	void *dl;
	struct cuda_api api;
	cu_device dev;
	cu_context ctx;
};

static struct cuda_gpu *to_cuda(struct mem_gpu *gpu)
{
	return (struct cuda_gpu *)gpu;
}

static const char *cu_name(struct cuda_gpu *c, cu_result err)
{
	const char *name = NULL;

	if (c->api.get_error_name && c->api.get_error_name(err, &name) == CU_OK && name)
		return name;
	return "CUDA_ERROR_?";
}

static int cu_errno(cu_result err)
{
	switch (err) {
	case CU_OK:
		return 0;
	case CU_ERR_INVALID_VALUE:
		return EINVAL;
	case CU_ERR_OUT_OF_MEMORY:
		return ENOMEM;
	case CU_ERR_NOT_SUPPORTED:
		return EOPNOTSUPP;
	case CU_ERR_NOT_INITIALIZED:
	case CU_ERR_DEINITIALIZED:
	case CU_ERR_STUB_LIBRARY:
	case CU_ERR_INSUFFICIENT_DRIVER:
	case CU_ERR_DEVICE_UNAVAILABLE:
	case CU_ERR_NO_DEVICE:
	case CU_ERR_INVALID_DEVICE:
	case CU_ERR_SYSTEM_DRIVER_MISMATCH:
	case CU_ERR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
		return ENODEV;
	default:
		return EIO;
	}
}

/*
 * Every driver call runs between cuda_enter() (make our context current) and cuda_leave()
 * (restore the caller's, log and map the result): cuda_leave(c, <call>, name) evaluates the
 * call as its argument, so it runs inside the pair.
 */
static int cuda_enter(struct cuda_gpu *c)
{
	cu_result r = c->api.ctx_push(c->ctx);

	if (r != CU_OK)
		gpunic_err("cuCtxPushCurrent: %s (%d)", cu_name(c, r), (int)r);
	return cu_errno(r);
}

static int cuda_leave(struct cuda_gpu *c, cu_result r, const char *what)
{
	cu_context popped;

	c->api.ctx_pop(&popped);
	if (r != CU_OK)
		gpunic_err("%s: %s (%d)", what, cu_name(c, r), (int)r);
	return cu_errno(r);
}

static int cuda_dev_alloc(struct mem_gpu *gpu, size_t size, uint64_t *dptr)
{
	struct cuda_gpu *c = to_cuda(gpu);
	cu_deviceptr p = 0;
	int ret;

	ret = cuda_enter(c);
	if (ret)
		return ret;
	ret = cuda_leave(c, c->api.mem_alloc(&p, size), "cuMemAlloc");
	if (!ret)
		*dptr = p;
	return ret;
}

static int cuda_dev_free(struct mem_gpu *gpu, uint64_t dptr, size_t size)
{
	struct cuda_gpu *c = to_cuda(gpu);
	int ret;

	(void)size;
	ret = cuda_enter(c);
	if (ret)
		return ret;
	return cuda_leave(c, c->api.mem_free(dptr), "cuMemFree");
}

static int cuda_host_alloc(struct mem_gpu *gpu, size_t size, void **cpu, uint64_t *dptr)
{
	struct cuda_gpu *c = to_cuda(gpu);
	cu_deviceptr d = 0;
	void *p = NULL;
	int ret;

	ret = cuda_enter(c);
	if (ret)
		return ret;
	/* PORTABLE: usable from every context; DEVICEMAP: the GPU can address it. */
	ret = cuda_leave(c,
			 c->api.mem_host_alloc(&p, size,
					       CU_MEMHOSTALLOC_PORTABLE |
						       CU_MEMHOSTALLOC_DEVICEMAP),
			 "cuMemHostAlloc");
	if (ret)
		return ret;
	ret = cuda_enter(c);
	if (!ret)
		ret = cuda_leave(c, c->api.mem_host_get_device_pointer(&d, p, 0),
				 "cuMemHostGetDevicePointer");
	if (ret) {
		if (!cuda_enter(c))
			cuda_leave(c, c->api.mem_free_host(p), "cuMemFreeHost");
		return ret;
	}
	*cpu = p;
	*dptr = d;
	return 0;
}

static int cuda_host_free(struct mem_gpu *gpu, void *cpu, size_t size)
{
	struct cuda_gpu *c = to_cuda(gpu);
	int ret;

	(void)size;
	ret = cuda_enter(c);
	if (ret)
		return ret;
	return cuda_leave(c, c->api.mem_free_host(cpu), "cuMemFreeHost");
}

static int cuda_htod(struct mem_gpu *gpu, uint64_t dst, const void *src, size_t len)
{
	struct cuda_gpu *c = to_cuda(gpu);
	int ret;

	ret = cuda_enter(c);
	if (ret)
		return ret;
	return cuda_leave(c, c->api.memcpy_htod(dst, src, len), "cuMemcpyHtoD");
}

static int cuda_dtoh(struct mem_gpu *gpu, void *dst, uint64_t src, size_t len)
{
	struct cuda_gpu *c = to_cuda(gpu);
	int ret;

	ret = cuda_enter(c);
	if (ret)
		return ret;
	return cuda_leave(c, c->api.memcpy_dtoh(dst, src, len), "cuMemcpyDtoH");
}

static int cuda_memset0(struct mem_gpu *gpu, uint64_t dst, size_t len)
{
	struct cuda_gpu *c = to_cuda(gpu);
	int ret;

	ret = cuda_enter(c);
	if (ret)
		return ret;
	return cuda_leave(c, c->api.memset_d8(dst, 0, len), "cuMemsetD8");
}

static int cuda_sync_memops(struct mem_gpu *gpu, uint64_t dptr)
{
	struct cuda_gpu *c = to_cuda(gpu);
	unsigned int one = 1;
	int ret;

	ret = cuda_enter(c);
	if (ret)
		return ret;
	return cuda_leave(c,
			  c->api.pointer_set_attribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
						       dptr),
			  "cuPointerSetAttribute(SYNC_MEMOPS)");
}

static void cuda_close(struct mem_gpu *gpu)
{
	struct cuda_gpu *c = to_cuda(gpu);

	if (c->ctx)
		c->api.primary_ctx_release(c->dev);
	/* libcuda is never unloaded: the driver keeps process-wide state and threads that
	 * outlive any one user, and unloading it under them is not supported. */
	free(c);
}

static const struct mem_gpu_ops cuda_ops = {
	.name = "cuda",
	.dev_alloc = cuda_dev_alloc,
	.dev_free = cuda_dev_free,
	.host_alloc = cuda_host_alloc,
	.host_free = cuda_host_free,
	.htod = cuda_htod,
	.dtoh = cuda_dtoh,
	.memset0 = cuda_memset0,
	.sync_memops = cuda_sync_memops,
	.close = cuda_close,
};

static int cuda_load(struct cuda_gpu *c, const char *lib, char *why, size_t why_len)
{
	c->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!c->dl) {
		const char *err = dlerror();

		snprintf(why, why_len, "cannot load %s: %s", lib, err ? err : "unknown error");
		return ENODEV;
	}
	for (size_t i = 0; i < sizeof(cuda_syms) / sizeof(cuda_syms[0]); i++) {
		void *sym = dlsym(c->dl, cuda_syms[i].name);

		if (!sym) {
			snprintf(why, why_len, "%s lacks %s (driver too old?)", lib,
				 cuda_syms[i].name);
			return ENODEV;
		}
		/* POSIX guarantees data and function pointers convert for dlsym results. */
		memcpy((char *)&c->api + cuda_syms[i].offset, &sym, sizeof(sym));
	}
	return 0;
}

static int cuda_start(struct cuda_gpu *c, const char *lib, int device, char *why,
		      size_t why_len)
{
	int count = 0;
	cu_result r;

	r = c->api.init(0);
	if (r != CU_OK) {
		/* Whatever cuInit says (no device, stub library, driver mismatch), there is no
		 * usable GPU here. */
		snprintf(why, why_len, "cuInit: %s (%d)", cu_name(c, r), r);
		return ENODEV;
	}
	c->api.driver_get_version(&c->gpu.driver_version);
	r = c->api.device_get_count(&count);
	if (r != CU_OK || count == 0) {
		snprintf(why, why_len, "%s reports no CUDA device", lib);
		return ENODEV;
	}
	if (device < 0 || device >= count) {
		snprintf(why, why_len, "CUDA device %d asked for, %d present", device, count);
		return ENODEV;
	}
	r = c->api.device_get(&c->dev, device);
	if (r == CU_OK)
		r = c->api.device_get_name(c->gpu.name, (int)sizeof(c->gpu.name), c->dev);
	if (r == CU_OK)
		r = c->api.primary_ctx_retain(&c->ctx, c->dev);
	if (r != CU_OK) {
		c->ctx = NULL;
		snprintf(why, why_len, "CUDA device %d: %s (%d)", device, cu_name(c, r), r);
		return cu_errno(r);
	}
	return 0;
}

struct mem_gpu *mem_cuda_open(const char *lib, int device, char *why, size_t why_len)
{
	struct cuda_gpu *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, why_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	c->gpu.ops = &cuda_ops;
	c->gpu.device = device;
	ret = cuda_load(c, lib, why, why_len);
	if (ret) {
		if (c->dl)
			dlclose(c->dl); /* cuInit has not run: unloading is still safe */
		free(c);
		errno = ret;
		return NULL;
	}
	ret = cuda_start(c, lib, device, why, why_len);
	if (ret) {
		free(c);
		errno = ret;
		return NULL;
	}
	gpunic_info("CUDA device %d: %s, driver %d", device, c->gpu.name, c->gpu.driver_version);
	return &c->gpu;
}
