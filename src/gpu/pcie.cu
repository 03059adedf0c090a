// SPDX-License-Identifier: MIT
/*
 * What crossing PCIe costs this GPU, measured from the GPU (`gpunic bench pcie`):
 *  - a read of host-pinned memory by one warp in one coalesced access, by size and by how many
 *    lines it spans, with the line idle or kept written by a CPU thread (a line a CPU core
 *    holds modified must be fetched from that core first);
 *  - whether the CPU can store into GPU memory without the gdrdrv kernel module, each way the
 *    driver offers tried and its error kept: a CPU that writes completions into GPU memory
 *    would make the GPU's poll a local read.
 */
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/gpunic_dev.h"

/* Host-pinned buffer the reads go to: two 4 KiB pages, so a split read spans two lines far
 * apart, as a CQE and the ring slot it names do. */
#define RC_BUF_BYTES 8192u
#define RC_SPLIT_GAP 4096u
/* The word a read's result is compared with: never in the buffer, so the branch on it is
 * taken the same way every time, but only once the data is back. */
#define RC_NEVER 0x5eed1e55u

struct rc_args {
	const uint8_t *buf;
	uint32_t bytes, lines, iters;
	uint32_t *out_ns;	/* device memory, one per iteration */
};

/* One warp: each iteration one coalesced read of @bytes, timed from issue to the data being
 * usable (the clock is read behind a branch on every lane's data). */
static __global__ void rc_kernel(struct rc_args a)
{
	const uint32_t full = 0xffffffffu;
	uint32_t lane = threadIdx.x & 31, nlanes = a.bytes >= 16 ? a.bytes / 16 : 1;
	uint32_t per = nlanes / a.lines, part = per ? lane / per : 0;
	const uint8_t *p = a.buf + part * RC_SPLIT_GAP + (per ? lane % per : 0) * 16;
	uint64_t lo, hi, t0, t1;

	for (uint32_t i = 0; i < a.iters; i++) {
		t0 = gpunic_dev_clock_ns();
		lo = hi = 0;
		if (lane < nlanes) {
			if (a.bytes < 16)
				lo = gpunic_dev_load_relaxed_u32((const uint32_t *)(const void *)p);
			else
				gpunic_dev_load16_relaxed(p, &lo, &hi);
		}
		t1 = 0;
		if (__ballot_sync(full, (uint32_t)lo == RC_NEVER || (uint32_t)hi == RC_NEVER) != full)
			t1 = gpunic_dev_clock_ns();
		if (lane == 0)
			a.out_ns[i] = (uint32_t)(t1 - t0);
	}
}

/* The CPU thread that keeps the first lines of the buffer modified in its cache. */
struct rc_writer {
	volatile uint64_t *line;
	volatile int stop;
};

static void *rc_writer_main(void *arg)
{
	struct rc_writer *w = (struct rc_writer *)arg;
	uint64_t v = 0;

	while (!w->stop) {
		/* the same value: the GPU's reads see no change, the line stays the core's */
		for (int i = 0; i < 8; i++) {
			w->line[i] = v;
			w->line[RC_SPLIT_GAP / 8 + i] = v;
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int rc_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

extern "C" int gpunic_gpu_read_cost(int device, const struct gpunic_read_cost_opts *o,
				    struct gpunic_read_cost *out)
{
	struct rc_args a;
	struct rc_writer w;
	pthread_t thr;
	uint8_t *buf = NULL;
	uint32_t *dev = NULL, *ns = NULL;
	bool writer = false;
	int rc = EIO;

	if (!o || !out || !o->iters || !o->lines || o->lines > 2 || o->bytes > 512 ||
	    (o->bytes >= 16 && (o->bytes % (16 * o->lines))) || (o->bytes < 16 && o->lines != 1))
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	ns = (uint32_t *)malloc(o->iters * sizeof(*ns));
	if (!ns)
		return ENOMEM;
	if (GPU_FAILED(cudaHostAlloc((void **)&buf, RC_BUF_BYTES, cudaHostAllocMapped)) ||
	    GPU_FAILED(cudaMalloc((void **)&dev, o->iters * sizeof(*dev))))
		goto out;
	memset(buf, 0, RC_BUF_BYTES);
	if (o->cpu_writes) {
		w.line = (volatile uint64_t *)(void *)buf;
		w.stop = 0;
		if (pthread_create(&thr, NULL, rc_writer_main, &w) == 0)
			writer = true;
		else
			goto out;
	}
	a.buf = buf;
	a.bytes = o->bytes;
	a.lines = o->lines;
	a.iters = o->iters;
	a.out_ns = dev;
	rc_kernel<<<1, 32>>>(a);
	if (GPU_FAILED(cudaGetLastError()) || GPU_FAILED(cudaDeviceSynchronize()) ||
	    GPU_FAILED(cudaMemcpy(ns, dev, o->iters * sizeof(*ns), cudaMemcpyDeviceToHost)))
		goto out;
	/* the first reads find cold paths: the first eighth is not counted */
	{
		uint32_t skip = o->iters / 8, n = o->iters - skip;

		qsort(ns + skip, n, sizeof(*ns), rc_cmp);
		out->min_ns = ns[skip];
		out->p50_ns = ns[skip + n / 2];
		out->p99_ns = ns[skip + (uint32_t)((uint64_t)n * 99 / 100)];
		out->count = n;
	}
	rc = 0;
out:
	if (writer) {
		w.stop = 1;
		pthread_join(thr, NULL);
	}
	cudaFree(dev);
	cudaFreeHost(buf);
	free(ns);
	return rc;
}

/* ---------------------------------------------------------------- CPU stores into GPU memory */

/* A driver entry point by name, NULL when this driver has none. */
static void *wp_entry(const char *name)
{
	void *fn = NULL;
	cudaDriverEntryPointQueryResult q;

	/* the 12.0 signatures: the ones the typedefs below are written for */
	if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess)
		return NULL;
	return q == cudaDriverEntryPointSuccess ? fn : NULL;
}

static void wp_set(struct gpunic_write_path *p, const char *name, bool works, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));

static void wp_set(struct gpunic_write_path *p, const char *name, bool works, const char *fmt,
		   ...)
{
	va_list ap;

	p->name = name;
	p->works = works;
	va_start(ap, fmt);
	vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
	va_end(ap);
}

/* Try a CPU mapping of @fd: store a word through it and read it back on the GPU side. */
static void wp_try_mmap(struct gpunic_write_path *p, const char *name, int fd, size_t len,
			void *dptr)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint32_t back = 0;

	if (m == MAP_FAILED) {
		wp_set(p, name, false, "export works, mmap of the fd fails: errno %d (%s)", errno,
		       strerror(errno));
		return;
	}
	*(volatile uint32_t *)m = 0x600dcafeu;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (cudaMemcpy(&back, dptr, sizeof(back), cudaMemcpyDeviceToHost) == cudaSuccess &&
	    back == 0x600dcafeu)
		wp_set(p, name, true, "mmap of the fd works: a CPU store reached GPU memory");
	else
		wp_set(p, name, false, "mmap of the fd works, but a CPU store through it did not "
		       "reach GPU memory (read back 0x%08x)", back);
	munmap(m, len);
}

/* 1. dma-buf export of a cudaMalloc range, mmap of its fd. */
static void wp_dmabuf(struct gpunic_write_path *p)
{
	typedef CUresult (*get_handle_fn)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
					  unsigned long long);
	get_handle_fn get = (get_handle_fn)wp_entry("cuMemGetHandleForAddressRange");
	const size_t len = 2u << 20;
	void *d = NULL;
	int fd = -1;
	CUresult r;

	if (!get) {
		wp_set(p, "dma-buf", false, "the driver has no cuMemGetHandleForAddressRange");
		return;
	}
	if (cudaMalloc(&d, len) != cudaSuccess) {
		wp_set(p, "dma-buf", false, "cudaMalloc failed");
		return;
	}
	r = get(&fd, (CUdeviceptr)d, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CUDA_SUCCESS)
		wp_set(p, "dma-buf", false, "cuMemGetHandleForAddressRange: CUresult %d", (int)r);
	else
		wp_try_mmap(p, "dma-buf", fd, len, d);
	if (fd >= 0)
		close(fd);
	cudaFree(d);
}

/* 2. a VMM allocation exported as a POSIX fd, mmap of the fd. */
static void wp_vmm_fd(struct gpunic_write_path *p, int device)
{
	typedef CUresult (*gran_fn)(size_t *, const CUmemAllocationProp *,
				    CUmemAllocationGranularity_flags);
	typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t,
				      const CUmemAllocationProp *, unsigned long long);
	typedef CUresult (*export_fn)(void *, CUmemGenericAllocationHandle,
				      CUmemAllocationHandleType, unsigned long long);
	typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
	gran_fn gran = (gran_fn)wp_entry("cuMemGetAllocationGranularity");
	create_fn create = (create_fn)wp_entry("cuMemCreate");
	export_fn exp = (export_fn)wp_entry("cuMemExportToShareableHandle");
	release_fn release = (release_fn)wp_entry("cuMemRelease");
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h;
	size_t len = 0;
	int fd = -1;
	CUresult r;

	if (!gran || !create || !exp || !release) {
		wp_set(p, "vmm-fd", false, "the driver lacks the VMM calls");
		return;
	}
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = device;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	r = gran(&len, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r == CUDA_SUCCESS)
		r = create(&h, len, &prop, 0);
	if (r != CUDA_SUCCESS) {
		wp_set(p, "vmm-fd", false, "cuMemCreate: CUresult %d", (int)r);
		return;
	}
	r = exp(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	if (r != CUDA_SUCCESS) {
		wp_set(p, "vmm-fd", false, "cuMemExportToShareableHandle: CUresult %d", (int)r);
	} else {
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		/* no device address is mapped here: a working mmap is reported, not proven */
		if (m == MAP_FAILED) {
			wp_set(p, "vmm-fd", false, "export works, mmap of the fd fails: errno %d "
			       "(%s)", errno, strerror(errno));
		} else {
			wp_set(p, "vmm-fd", false, "mmap of the fd works (not tried further)");
			munmap(m, len);
		}
		close(fd);
	}
	release(h);
}

/* 3. managed memory the host may access in place (a coherent link, not PCIe). */
static void wp_managed(struct gpunic_write_path *p, int device)
{
	int direct = 0, pageable = 0;

	cudaDeviceGetAttribute(&direct, cudaDevAttrDirectManagedMemAccessFromHost, device);
	cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccessUsesHostPageTables,
			       device);
	if (direct)
		wp_set(p, "managed", true, "the host accesses managed memory on the device in "
		       "place (direct managed access)");
	else
		wp_set(p, "managed", false, "no direct managed access from the host (a CPU store "
		       "migrates the page to host memory; host page tables used by the GPU: %s)",
		       pageable ? "yes" : "no");
}

/* 4. the GPU's BAR1 through sysfs: the aperture gdrdrv maps from. Only mapped, never read:
 *    which of its pages hold an allocation is known to the driver alone. */
static void wp_bar1(struct gpunic_write_path *p, int device)
{
	char bus[32], path[96];
	int fd;
	void *m;

	if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) != cudaSuccess) {
		wp_set(p, "bar1-sysfs", false, "no PCI bus id");
		return;
	}
	for (char *c = bus; *c; c++)
		*c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource1", bus);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		wp_set(p, "bar1-sysfs", false, "%s: errno %d (%s)", path, errno, strerror(errno));
		return;
	}
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		wp_set(p, "bar1-sysfs", false, "mmap of %s: errno %d (%s)", path, errno,
		       strerror(errno));
	} else {
		wp_set(p, "bar1-sysfs", false, "%s maps, but where an allocation lies in it is "
		       "the driver's to say (gdrdrv asks it; no user-space call does)", path);
		munmap(m, 4096);
	}
	close(fd);
}

extern "C" int gpunic_gpu_write_paths(int device, struct gpunic_write_path out[],
				      size_t max, size_t *n)
{
	struct gpunic_write_path p[GPUNIC_WRITE_PATHS_MAX];

	*n = 0;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	memset(p, 0, sizeof(p));
	wp_dmabuf(&p[0]);
	wp_vmm_fd(&p[1], device);
	wp_managed(&p[2], device);
	wp_bar1(&p[3], device);
	for (size_t i = 0; i < GPUNIC_WRITE_PATHS_MAX && i < max; i++)
		out[(*n)++] = p[i];
	return 0;
}
