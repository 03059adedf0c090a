// SPDX-License-Identifier: MIT
/*
 * The mem layer on a real GPU through the CUDA driver API. Every case skips (exit 77) where no
 * GPU is usable. GDRCopy is not expected on the GPU machine: GPU_CPU must then take the pinned
 * fallback and say why. To check what the GPU sees, the test opens libcuda itself and copies
 * from the device addresses the mem layer handed out.
 */
#include "harness.h"

#include <gpunic/log.h>
#include <gpunic/mem.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

static struct {
	int (*device_get)(int *dev, int ordinal);
	int (*primary_ctx_retain)(void **ctx, int dev);
	int (*ctx_set_current)(void *ctx);
	int (*memcpy_dtoh)(void *dst, unsigned long long src, size_t len);
	int (*memcpy_htod)(unsigned long long dst, const void *src, size_t len);
} cu;

static gpunic_mem_t *open_or_skip(struct gpunic_mem_caps *caps)
{
	gpunic_mem_t *mem;

	unsetenv("GPUNIC_MEM_FAKE_GPU");
	unsetenv("GPUNIC_CUDA_LIB");
	mem = gpunic_mem_open(NULL);
	CHECK(mem != NULL);
	CHECK_EQ(gpunic_mem_query(mem, caps), 0);
	if (!caps->gpu) {
		char why[sizeof(caps->gpu_reason)];

		memcpy(why, caps->gpu_reason, sizeof(why));
		gpunic_mem_close(mem);
		SKIP("%s", why);
	}
	return mem;
}

/* The test's own view of the device: libcuda with the primary context current. */
static void cuda_direct(void)
{
	void *dl = dlopen("libcuda.so.1", RTLD_NOW), *p, *ctx;
	int dev;

	CHECK(dl != NULL);
#define LOAD(field, name)                         \
	do {                                      \
		p = dlsym(dl, name);              \
		CHECK(p != NULL);                 \
		memcpy(&cu.field, &p, sizeof(p)); \
	} while (0)
	LOAD(device_get, "cuDeviceGet");
	LOAD(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
	LOAD(ctx_set_current, "cuCtxSetCurrent");
	LOAD(memcpy_dtoh, "cuMemcpyDtoH_v2");
	LOAD(memcpy_htod, "cuMemcpyHtoD_v2");
#undef LOAD
	CHECK_EQ(cu.device_get(&dev, 0), 0);
	CHECK_EQ(cu.primary_ctx_retain(&ctx, dev), 0);
	CHECK_EQ(cu.ctx_set_current(ctx), 0);
}

TEST(cuda_caps)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);

	printf("gpu: %s, driver %d, placements 0x%x\n", caps.gpu_name, caps.cuda_driver_version,
	       caps.placements);
	printf("gdrcopy: %s (%s) runtime %d.%d driver %d.%d\n", caps.gdrcopy ? "yes" : "no",
	       caps.gdrcopy ? caps.gdrcopy_lib : caps.gdrcopy_reason, caps.gdr_runtime_major,
	       caps.gdr_runtime_minor, caps.gdr_driver_major, caps.gdr_driver_minor);
	CHECK(!caps.fake_gpu);
	CHECK(caps.cuda_driver_version > 0);
	CHECK_EQ(caps.placements, 0xfu);
	CHECK(strcmp(caps.gpu_reason, "") == 0);
	CHECK(caps.gdrcopy || strlen(caps.gdrcopy_reason) > 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(cuda_device_memory_roundtrip)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);
	const size_t n = 1u << 20;
	uint8_t *in = malloc(n), *out = malloc(n);
	struct gpunic_mem_buf *buf;

	CHECK(in && out);
	buf = gpunic_mem_alloc(mem, n, 1u << 16, GPUNIC_MEM_GPU);
	CHECK(buf != NULL);
	CHECK(buf->cpu == NULL);
	CHECK(buf->gpu != NULL);
	CHECK_EQ((uintptr_t)buf->gpu % (1u << 16), 0);
	CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_CUDA_DEVICE);
	/* Zero-filled on allocation. */
	CHECK_EQ(gpunic_mem_read(mem, buf, 0, out, n), 0);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(out[i], 0);
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)(i * 31 + 7);
	CHECK_EQ(gpunic_mem_write(mem, buf, 0, in, n), 0);
	memset(out, 0, n);
	CHECK_EQ(gpunic_mem_read(mem, buf, 0, out, n), 0);
	CHECK_MEM(out, in, n);
	CHECK_EQ(gpunic_mem_read(mem, buf, n - 3, out, 3), 0);
	CHECK_MEM(out, in + n - 3, 3);
	CHECK_EQ(gpunic_mem_free(mem, buf), 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
	free(in);
	free(out);
}

TEST(cuda_host_pinned_is_visible_to_the_gpu)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);
	struct gpunic_mem_buf *buf;
	uint8_t back[4096];

	cuda_direct();
	buf = gpunic_mem_alloc(mem, sizeof(back), 0, GPUNIC_MEM_CPU_GPU);
	CHECK(buf != NULL);
	CHECK(buf->cpu && buf->gpu);
	CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_CUDA_HOST);
	for (size_t i = 0; i < sizeof(back); i++)
		((uint8_t *)buf->cpu)[i] = (uint8_t)(i ^ 0x5a);
	/* The GPU reads the CPU's stores through the device alias... */
	CHECK_EQ(cu.memcpy_dtoh(back, (uintptr_t)buf->gpu, sizeof(back)), 0);
	CHECK_MEM(back, buf->cpu, sizeof(back));
	/* ...and its writes reach the CPU address. */
	memset(back, 0xee, sizeof(back));
	CHECK_EQ(cu.memcpy_htod((uintptr_t)buf->gpu + 100, back, 10), 0);
	CHECK_EQ(((uint8_t *)buf->cpu)[105], 0xee);
	CHECK_EQ(((uint8_t *)buf->cpu)[110], (uint8_t)(110 ^ 0x5a));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(cuda_gpu_cpu_placement)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);
	struct gpunic_mem_buf *buf;
	uint8_t back[256];

	cuda_direct();
	buf = gpunic_mem_alloc(mem, sizeof(back), 0, GPUNIC_MEM_GPU_CPU);
	CHECK(buf != NULL);
	CHECK(buf->cpu && buf->gpu);
	CHECK_EQ(buf->requested, GPUNIC_MEM_GPU_CPU);
	if (caps.gdrcopy) {
		CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_GDRCOPY);
		CHECK_EQ(buf->placement, GPUNIC_MEM_GPU_CPU);
	} else {
		printf("no GDRCopy here: %s\n", caps.gdrcopy_reason);
		CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_PINNED_FALLBACK);
		CHECK_EQ(buf->placement, GPUNIC_MEM_CPU_GPU);
	}
	CHECK_EQ((uintptr_t)buf->cpu % GPUNIC_GPU_PAGE_SIZE, 0);
	for (size_t i = 0; i < sizeof(back); i++)
		back[i] = (uint8_t)(i + 1);
	CHECK_EQ(gpunic_mem_write(mem, buf, 0, back, sizeof(back)), 0);
	memset(back, 0, sizeof(back));
	CHECK_EQ(cu.memcpy_dtoh(back, (uintptr_t)buf->gpu, sizeof(back)), 0);
	CHECK_EQ(back[0], 1);
	CHECK_EQ(back[255], 0);
	CHECK_EQ(back[254], 255);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(cuda_pinned_alignment_and_bounds)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);
	struct gpunic_mem_buf *bufs[32];

	/* cuMemHostAlloc sub-allocates small requests: the asked alignment must still hold, and
	 * each buffer must own all of its bytes. */
	for (int i = 0; i < 32; i++) {
		size_t align = (size_t)1 << (6 + i % 10);

		bufs[i] = gpunic_mem_alloc(mem, 100 + (size_t)i, align,
					   i & 1 ? GPUNIC_MEM_CPU_GPU : GPUNIC_MEM_GPU_CPU);
		CHECK(bufs[i] != NULL);
		CHECK_EQ((uintptr_t)bufs[i]->cpu % align, 0);
		CHECK_EQ((uintptr_t)bufs[i]->gpu % align, 0);
		memset(bufs[i]->cpu, i, bufs[i]->size);
	}
	for (int i = 0; i < 32; i++)
		for (size_t j = 0; j < bufs[i]->size; j++)
			CHECK_EQ(((uint8_t *)bufs[i]->cpu)[j], i);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(cuda_close_frees_the_rest)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);

	for (int i = 0; i < 4; i++) {
		for (int p = GPUNIC_MEM_HOST; p < GPUNIC_MEM_PLACEMENT_MAX; p++)
			CHECK(gpunic_mem_alloc(mem, 100000, 0, (enum gpunic_mem_placement)p));
	}
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK_EQ(caps.live_buffers, 16);
	CHECK_EQ(gpunic_mem_close(mem), 0);
	/* A second context on the same device after the first released its primary context. */
	mem = open_or_skip(&caps);
	CHECK(gpunic_mem_alloc(mem, 100, 0, GPUNIC_MEM_GPU));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(cuda_bad_device_ordinal)
{
	struct gpunic_mem_attr attr = { .cuda_device = 4096 };
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);

	CHECK_EQ(gpunic_mem_close(mem), 0);
	mem = gpunic_mem_open(&attr);
	CHECK(mem != NULL);
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK(!caps.gpu);
	CHECK(strstr(caps.gpu_reason, "CUDA device 4096 asked for"));
	errno = 0;
	CHECK(gpunic_mem_alloc(mem, 100, 0, GPUNIC_MEM_GPU) == NULL);
	CHECK_EQ(errno, ENODEV);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}
