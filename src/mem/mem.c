// SPDX-License-Identifier: MIT
/*
 * The memory context: opens the device backend and GDRCopy, hands out buffers by placement and
 * tracks every one of them, so that gpunic_mem_close() can free what a caller left behind.
 */
#include "mem_loc.h"

#include <gpunic/log.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_DEFAULT_ALIGN 64
/* cuMemAlloc returns at least this alignment (CUDA programming guide, device memory). */
#define MEM_CUDA_ALIGN 256

/* The private record behind each public buffer. */
struct mem_alloc {
	struct gpunic_mem_buf pub;	/* first: gpunic_mem_buf pointers convert */
	struct mem_alloc *prev, *next;
	void *raw_cpu;			/* what posix_memalign / host_alloc returned */
	uint64_t raw_dev;		/* what dev_alloc / host_alloc returned */
	size_t raw_size;		/* the size asked of the backend */
	bool gdr_mapped;
	struct mem_gdr_map gdr;
};

struct gpunic_mem {
	pthread_mutex_t lock;		/* the list, and every GDRCopy call (not thread-safe) */
	struct mem_alloc list;		/* sentinel of a circular list, oldest first */
	struct mem_gpu *gpu;		/* NULL: no GPU */
	struct mem_gdr *gdr;		/* NULL: no GDRCopy */
	struct gpunic_mem_caps caps;	/* fixed at open, live counts filled at query */
	size_t live_buffers, live_bytes;
};

static const char *const placement_names[GPUNIC_MEM_PLACEMENT_MAX] = {
	[GPUNIC_MEM_HOST] = "HOST",
	[GPUNIC_MEM_GPU] = "GPU",
	[GPUNIC_MEM_GPU_CPU] = "GPU_CPU",
	[GPUNIC_MEM_CPU_GPU] = "CPU_GPU",
};

static const char *const backend_names[GPUNIC_MEM_BACKEND_MAX] = {
	[GPUNIC_MEM_BACKEND_HOST] = "host",
	[GPUNIC_MEM_BACKEND_CUDA_DEVICE] = "cuda-device",
	[GPUNIC_MEM_BACKEND_CUDA_HOST] = "cuda-host",
	[GPUNIC_MEM_BACKEND_GDRCOPY] = "gdrcopy",
	[GPUNIC_MEM_BACKEND_PINNED_FALLBACK] = "pinned-fallback",
};

const char *gpunic_mem_placement_str(enum gpunic_mem_placement placement)
{
	if ((unsigned)placement >= GPUNIC_MEM_PLACEMENT_MAX)
		return "?";
	return placement_names[placement];
}

const char *gpunic_mem_backend_str(enum gpunic_mem_backend backend)
{
	if ((unsigned)backend >= GPUNIC_MEM_BACKEND_MAX)
		return "?";
	return backend_names[backend];
}

/* GPUNIC_GDRCOPY: "0" turns GDRCopy off; unset or "1" lets the probe decide. */
static bool gdrcopy_wanted(void)
{
	const char *v = getenv("GPUNIC_GDRCOPY");

	if (!v || strcmp(v, "1") == 0)
		return true;
	if (strcmp(v, "0") == 0)
		return false;
	gpunic_warn("GPUNIC_GDRCOPY=\"%.32s\" is neither 0 nor 1; trying GDRCopy", v);
	return true;
}

static void open_gdrcopy(struct gpunic_mem *mem)
{
	struct gpunic_mem_caps *caps = &mem->caps;
	const char *lib = getenv("GPUNIC_GDRAPI_LIB");
	struct mem_gdr_versions ver;

	if (!lib || !*lib)
		lib = "libgdrapi.so.2";
	snprintf(caps->gdrcopy_lib, sizeof(caps->gdrcopy_lib), "%s", lib);
	if (!gdrcopy_wanted()) {
		snprintf(caps->gdrcopy_reason, sizeof(caps->gdrcopy_reason),
			 "disabled by GPUNIC_GDRCOPY=0");
		gpunic_info("GDRCopy disabled by GPUNIC_GDRCOPY=0: GPU_CPU uses host-pinned "
			    "memory");
		return;
	}
	mem->gdr = mem_gdr_open(mem->gpu, lib, &ver, caps->gdrcopy_reason,
				sizeof(caps->gdrcopy_reason));
	caps->gdr_runtime_major = ver.runtime_major;
	caps->gdr_runtime_minor = ver.runtime_minor;
	caps->gdr_driver_major = ver.driver_major;
	caps->gdr_driver_minor = ver.driver_minor;
	if (!mem->gdr) {
		/* Absent is the ordinary case; present but unusable deserves a warning. */
		if (ver.runtime_major < 0)
			gpunic_info("GDRCopy not used: %s; GPU_CPU uses host-pinned memory",
				    caps->gdrcopy_reason);
		else
			gpunic_warn("GDRCopy not used: %s; GPU_CPU uses host-pinned memory",
				    caps->gdrcopy_reason);
		return;
	}
	caps->gdrcopy = true;
	gpunic_info("GDRCopy %d.%d (gdrdrv %d.%d) from %s: GPU_CPU uses BAR mappings",
		    ver.runtime_major, ver.runtime_minor, ver.driver_major, ver.driver_minor, lib);
}

static void open_gpu(struct gpunic_mem *mem, const struct gpunic_mem_attr *attr)
{
	struct gpunic_mem_caps *caps = &mem->caps;
	char why[MEM_REASON_BYTES] = "";
	const char *fake = getenv("GPUNIC_MEM_FAKE_GPU");
	const char *lib;

	if (attr->flags & GPUNIC_MEM_OPEN_NO_GPU) {
		snprintf(caps->gpu_reason, sizeof(caps->gpu_reason),
			 "no GPU: host-only context (GPUNIC_MEM_OPEN_NO_GPU)");
		snprintf(caps->gdrcopy_reason, sizeof(caps->gdrcopy_reason), "no GPU");
		return;
	}
	if (fake && strcmp(fake, "1") == 0) {
		mem->gpu = mem_fake_gpu_open(why, sizeof(why));
		if (mem->gpu)
			gpunic_warn("GPUNIC_MEM_FAKE_GPU=1: \"device\" memory is host memory "
				    "(tests only)");
	} else {
		lib = getenv("GPUNIC_CUDA_LIB");
		if (!lib || !*lib)
			lib = "libcuda.so.1";
		mem->gpu = mem_cuda_open(lib, attr->cuda_device, why, sizeof(why));
	}
	if (!mem->gpu) {
		snprintf(caps->gpu_reason, sizeof(caps->gpu_reason), "no GPU: %s", why);
		snprintf(caps->gdrcopy_reason, sizeof(caps->gdrcopy_reason), "no GPU");
		gpunic_info("%s; GPU placements are unavailable", caps->gpu_reason);
		return;
	}
	caps->gpu = true;
	caps->fake_gpu = mem->gpu->fake;
	caps->cuda_driver_version = mem->gpu->driver_version;
	snprintf(caps->gpu_name, sizeof(caps->gpu_name), "%s", mem->gpu->name);
	open_gdrcopy(mem);
}

gpunic_mem_t *gpunic_mem_open(const struct gpunic_mem_attr *attr)
{
	static const struct gpunic_mem_attr defaults = { 0 };
	struct gpunic_mem *mem;

	if (!attr)
		attr = &defaults;
	if (attr->flags & ~(uint32_t)GPUNIC_MEM_OPEN_NO_GPU) {
		errno = EINVAL;
		return NULL;
	}
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return NULL;
	if (pthread_mutex_init(&mem->lock, NULL)) {
		free(mem);
		errno = ENOMEM;
		return NULL;
	}
	mem->list.next = mem->list.prev = &mem->list;
	mem->caps.cuda_device = attr->cuda_device;
	mem->caps.gdr_runtime_major = mem->caps.gdr_runtime_minor = -1;
	mem->caps.gdr_driver_major = mem->caps.gdr_driver_minor = -1;
	open_gpu(mem, attr);
	mem->caps.placements = 1u << GPUNIC_MEM_HOST;
	if (mem->gpu)
		mem->caps.placements |= 1u << GPUNIC_MEM_GPU | 1u << GPUNIC_MEM_GPU_CPU |
					1u << GPUNIC_MEM_CPU_GPU;
	return mem;
}

static void list_add_tail(struct gpunic_mem *mem, struct mem_alloc *a)
{
	a->next = &mem->list;
	a->prev = mem->list.prev;
	mem->list.prev->next = a;
	mem->list.prev = a;
	mem->live_buffers++;
	mem->live_bytes += a->pub.size;
}

static void list_del(struct gpunic_mem *mem, struct mem_alloc *a)
{
	a->prev->next = a->next;
	a->next->prev = a->prev;
	mem->live_buffers--;
	mem->live_bytes -= a->pub.size;
}

/* Walk the list rather than trust the pointer: a foreign or freed buffer is EINVAL, not a
 * corrupted list. Called with the lock held. */
static struct mem_alloc *find_alloc(struct gpunic_mem *mem, const struct gpunic_mem_buf *buf)
{
	for (struct mem_alloc *a = mem->list.next; a != &mem->list; a = a->next)
		if (&a->pub == buf)
			return a;
	return NULL;
}

static int alloc_host(struct mem_alloc *a, size_t size, size_t align)
{
	void *p = NULL;
	int ret;

	ret = posix_memalign(&p, align, size);
	if (ret)
		return ret;
	memset(p, 0, size);
	a->raw_cpu = p;
	a->pub.cpu = p;
	a->pub.backend = GPUNIC_MEM_BACKEND_HOST;
	return 0;
}

static int alloc_device(struct gpunic_mem *mem, struct mem_alloc *a, size_t size, size_t align)
{
	struct mem_gpu *gpu = mem->gpu;
	uint64_t dev;
	int ret;

	/* cuMemAlloc promises 256 bytes; more than that costs an over-allocation. */
	a->raw_size = align > MEM_CUDA_ALIGN ? size + align : size;
	ret = gpu->ops->dev_alloc(gpu, a->raw_size, &a->raw_dev);
	if (ret)
		return ret;
	dev = mem_round_up(a->raw_dev, align);
	ret = gpu->ops->sync_memops(gpu, a->raw_dev);
	if (!ret)
		ret = gpu->ops->memset0(gpu, dev, size);
	if (ret) {
		gpu->ops->dev_free(gpu, a->raw_dev, a->raw_size);
		return ret;
	}
	a->pub.gpu = (void *)(uintptr_t)dev;
	a->pub.backend = GPUNIC_MEM_BACKEND_CUDA_DEVICE;
	return 0;
}

static int alloc_pinned(struct gpunic_mem *mem, struct mem_alloc *a, size_t size, size_t align)
{
	struct mem_gpu *gpu = mem->gpu;
	uintptr_t cpu;
	int ret;

	/* cuMemHostAlloc promises no alignment (it sub-allocates small requests 512 bytes apart
	 * on CUDA 13), so always leave room to align. */
	a->raw_size = size + align;
	ret = gpu->ops->host_alloc(gpu, a->raw_size, &a->raw_cpu, &a->raw_dev);
	if (ret)
		return ret;
	cpu = mem_round_up((uintptr_t)a->raw_cpu, align);
	memset((void *)cpu, 0, size);
	a->pub.cpu = (void *)cpu;
	a->pub.gpu = (void *)(uintptr_t)(a->raw_dev + (cpu - (uintptr_t)a->raw_cpu));
	a->pub.placement = GPUNIC_MEM_CPU_GPU;
	a->pub.backend = GPUNIC_MEM_BACKEND_CUDA_HOST;
	return 0;
}

/*
 * GPU_CPU through GDRCopy: over-allocate by one alignment unit, start the buffer on a 64 KiB
 * GPU page (gdr_map refuses anything else) and pin whole GPU pages, so the mapping covers the
 * buffer and nothing of a neighbouring allocation.
 */
static int alloc_gdrcopy(struct gpunic_mem *mem, struct mem_alloc *a, size_t size, size_t align,
			 bool *map_failed)
{
	struct mem_gpu *gpu = mem->gpu;
	size_t pinned = mem_round_up(size, GPUNIC_GPU_PAGE_SIZE);
	uint64_t dev;
	int ret;

	a->raw_size = pinned + align;
	ret = gpu->ops->dev_alloc(gpu, a->raw_size, &a->raw_dev);
	if (ret)
		return ret;
	dev = mem_round_up(a->raw_dev, align);
	ret = gpu->ops->sync_memops(gpu, a->raw_dev);
	if (!ret)
		ret = gpu->ops->memset0(gpu, dev, pinned);
	if (!ret) {
		ret = mem_gdr_map(mem->gdr, dev, pinned, &a->gdr);
		*map_failed = ret != 0;
	}
	if (ret) {
		gpu->ops->dev_free(gpu, a->raw_dev, a->raw_size);
		return ret;
	}
	a->gdr_mapped = true;
	a->pub.cpu = a->gdr.cpu;
	a->pub.gpu = (void *)(uintptr_t)dev;
	a->pub.backend = GPUNIC_MEM_BACKEND_GDRCOPY;
	return 0;
}

static int alloc_gpu_cpu(struct gpunic_mem *mem, struct mem_alloc *a, size_t size, size_t align)
{
	bool map_failed = false;
	int ret;

	if (align < GPUNIC_GPU_PAGE_SIZE)
		align = GPUNIC_GPU_PAGE_SIZE;
	if (mem->gdr) {
		ret = alloc_gdrcopy(mem, a, size, align, &map_failed);
		if (!ret)
			return 0;
		/* Out of device memory is the caller's to know; only a failed mapping (BAR space,
		 * driver) is worth hiding behind host-pinned memory. */
		if (!map_failed)
			return ret;
		gpunic_warn_ratelimited("GDRCopy mapping of %zu bytes failed (%s); using "
					"host-pinned memory",
					size, strerror(ret));
	}
	ret = alloc_pinned(mem, a, size, align);
	if (!ret)
		a->pub.backend = GPUNIC_MEM_BACKEND_PINNED_FALLBACK;
	return ret;
}

struct gpunic_mem_buf *gpunic_mem_alloc(gpunic_mem_t *mem, size_t size, size_t align,
					enum gpunic_mem_placement placement)
{
	struct mem_alloc *a;
	int ret;

	if (!mem || !size || (align && !mem_is_pow2(align)) ||
	    (unsigned)placement >= GPUNIC_MEM_PLACEMENT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if (align < MEM_DEFAULT_ALIGN)
		align = MEM_DEFAULT_ALIGN;
	/* Leave room for every over-allocation below (alignment and whole GPU pages). */
	if (size > SIZE_MAX / 4 || align > SIZE_MAX / 4) {
		errno = ENOMEM;
		return NULL;
	}
	if (placement != GPUNIC_MEM_HOST && !mem->gpu) {
		gpunic_err("%s placement needs a GPU: %s", gpunic_mem_placement_str(placement),
			   mem->caps.gpu_reason);
		errno = ENODEV;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->pub.size = size;
	a->pub.requested = placement;
	a->pub.placement = placement;

	pthread_mutex_lock(&mem->lock);
	switch (placement) {
	case GPUNIC_MEM_HOST:
		ret = alloc_host(a, size, align);
		break;
	case GPUNIC_MEM_GPU:
		ret = alloc_device(mem, a, size, align);
		break;
	case GPUNIC_MEM_GPU_CPU:
		ret = alloc_gpu_cpu(mem, a, size, align);
		break;
	case GPUNIC_MEM_CPU_GPU:
	default:
		ret = alloc_pinned(mem, a, size, align);
		break;
	}
	if (!ret)
		list_add_tail(mem, a);
	pthread_mutex_unlock(&mem->lock);

	if (ret) {
		gpunic_err("%s allocation of %zu bytes failed: %s",
			   gpunic_mem_placement_str(placement), size, strerror(ret));
		free(a);
		errno = ret;
		return NULL;
	}
	gpunic_dbg("%s %zu bytes: cpu %p gpu %p (%s)", gpunic_mem_placement_str(placement), size,
		   a->pub.cpu, a->pub.gpu, gpunic_mem_backend_str(a->pub.backend));
	return &a->pub;
}

/* Release one record's memory: GDRCopy mappings are unmapped, then unpinned, then the device
 * memory is freed (the GDRCopy order). Called with the lock held. */
static int release(struct gpunic_mem *mem, struct mem_alloc *a)
{
	struct mem_gpu *gpu = mem->gpu;
	int ret = 0, ret2 = 0;

	switch (a->pub.backend) {
	case GPUNIC_MEM_BACKEND_HOST:
		free(a->raw_cpu);
		break;
	case GPUNIC_MEM_BACKEND_GDRCOPY:
		if (a->gdr_mapped)
			ret = mem_gdr_unmap(mem->gdr, &a->gdr);
		ret2 = gpu->ops->dev_free(gpu, a->raw_dev, a->raw_size);
		break;
	case GPUNIC_MEM_BACKEND_CUDA_DEVICE:
		ret2 = gpu->ops->dev_free(gpu, a->raw_dev, a->raw_size);
		break;
	case GPUNIC_MEM_BACKEND_CUDA_HOST:
	case GPUNIC_MEM_BACKEND_PINNED_FALLBACK:
	default:
		ret2 = gpu->ops->host_free(gpu, a->raw_cpu, a->raw_size);
		break;
	}
	free(a);
	return ret ? ret : ret2;
}

int gpunic_mem_free(gpunic_mem_t *mem, struct gpunic_mem_buf *buf)
{
	struct mem_alloc *a;
	int ret;

	if (!mem || !buf)
		return EINVAL;
	pthread_mutex_lock(&mem->lock);
	a = find_alloc(mem, buf);
	if (a) {
		list_del(mem, a);
		ret = release(mem, a);
	} else {
		ret = EINVAL;
	}
	pthread_mutex_unlock(&mem->lock);
	if (!a)
		gpunic_err("buffer %p was not allocated by this context", (void *)buf);
	return ret;
}

int gpunic_mem_close(gpunic_mem_t *mem)
{
	size_t left;
	int ret = 0, r;

	if (!mem)
		return 0;
	pthread_mutex_lock(&mem->lock);
	left = mem->live_buffers;
	if (left)
		gpunic_info("freeing %zu buffer(s), %zu bytes, left allocated", left,
			    mem->live_bytes);
	/* Newest first: the reverse of allocation, as an error path would unwind. */
	while (mem->list.prev != &mem->list) {
		struct mem_alloc *a = mem->list.prev;

		list_del(mem, a);
		r = release(mem, a);
		if (r && !ret)
			ret = r;
	}
	pthread_mutex_unlock(&mem->lock);
	mem_gdr_close(mem->gdr);
	if (mem->gpu)
		mem->gpu->ops->close(mem->gpu);
	pthread_mutex_destroy(&mem->lock);
	free(mem);
	return ret;
}

static int check_range(const struct gpunic_mem_buf *buf, size_t off, size_t len)
{
	if (off > buf->size || len > buf->size - off)
		return EINVAL;
	return 0;
}

int gpunic_mem_write(gpunic_mem_t *mem, struct gpunic_mem_buf *buf, size_t off, const void *src,
		     size_t len)
{
	struct mem_alloc *a;
	int ret;

	if (!mem || !buf || (!src && len))
		return EINVAL;
	pthread_mutex_lock(&mem->lock);
	a = find_alloc(mem, buf);
	ret = a ? check_range(buf, off, len) : EINVAL;
	if (ret || !len)
		goto out;
	if (a->pub.backend == GPUNIC_MEM_BACKEND_GDRCOPY)
		ret = mem_gdr_copy_to(mem->gdr, &a->gdr, (char *)buf->cpu + off, src, len);
	else if (buf->cpu)
		memcpy((char *)buf->cpu + off, src, len);
	else
		ret = mem->gpu->ops->htod(mem->gpu, (uintptr_t)buf->gpu + off, src, len);
out:
	pthread_mutex_unlock(&mem->lock);
	return ret;
}

int gpunic_mem_read(gpunic_mem_t *mem, const struct gpunic_mem_buf *buf, size_t off, void *dst,
		    size_t len)
{
	struct mem_alloc *a;
	int ret;

	if (!mem || !buf || (!dst && len))
		return EINVAL;
	pthread_mutex_lock(&mem->lock);
	a = find_alloc(mem, buf);
	ret = a ? check_range(buf, off, len) : EINVAL;
	if (ret || !len)
		goto out;
	if (a->pub.backend == GPUNIC_MEM_BACKEND_GDRCOPY)
		ret = mem_gdr_copy_from(mem->gdr, &a->gdr, dst, (const char *)buf->cpu + off, len);
	else if (buf->cpu)
		memcpy(dst, (const char *)buf->cpu + off, len);
	else
		ret = mem->gpu->ops->dtoh(mem->gpu, dst, (uintptr_t)buf->gpu + off, len);
out:
	pthread_mutex_unlock(&mem->lock);
	return ret;
}

int gpunic_mem_query(gpunic_mem_t *mem, struct gpunic_mem_caps *caps)
{
	if (!mem || !caps)
		return EINVAL;
	pthread_mutex_lock(&mem->lock);
	*caps = mem->caps;
	caps->live_buffers = mem->live_buffers;
	caps->live_bytes = mem->live_bytes;
	pthread_mutex_unlock(&mem->lock);
	return 0;
}

