// SPDX-License-Identifier: MIT
/* mem without a GPU: HOST placement, tracking and close, copies, argument checks, the no-GPU
 * answers (ENODEV and a reason), names, and the placement policy for the CPU executor. */
#include "harness.h"

#include <gpunic/log.h>
#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static char logbuf[16384];

static void capture(int level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	strncat(logbuf, line, sizeof(logbuf) - strlen(logbuf) - 1);
}

static void capture_start(int level)
{
	logbuf[0] = '\0';
	gpunic_log_set_sink(capture, NULL);
	gpunic_log_set_level(level);
}

static gpunic_mem_t *open_host_only(void)
{
	struct gpunic_mem_attr attr = { .flags = GPUNIC_MEM_OPEN_NO_GPU };
	gpunic_mem_t *mem = gpunic_mem_open(&attr);

	CHECK(mem != NULL);
	return mem;
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

TEST(host_alloc_fields)
{
	gpunic_mem_t *mem = open_host_only();
	struct gpunic_mem_buf *buf;

	buf = gpunic_mem_alloc(mem, 1000, 0, GPUNIC_MEM_HOST);
	CHECK(buf != NULL);
	CHECK(buf->cpu != NULL);
	CHECK(buf->gpu == NULL);
	CHECK_EQ(buf->size, 1000);
	CHECK_EQ(buf->placement, GPUNIC_MEM_HOST);
	CHECK_EQ(buf->requested, GPUNIC_MEM_HOST);
	CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_HOST);
	CHECK(strcmp(gpunic_mem_backend_str(buf->backend), "host") == 0);
	CHECK_EQ((uintptr_t)buf->cpu % 64, 0);
	CHECK(all_zero(buf->cpu, buf->size));
	memset(buf->cpu, 0xab, buf->size);
	CHECK_EQ(gpunic_mem_free(mem, buf), 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(host_alignment)
{
	gpunic_mem_t *mem = open_host_only();
	struct gpunic_mem_buf *buf;

	for (size_t align = 1; align <= (1u << 20); align <<= 1) {
		buf = gpunic_mem_alloc(mem, 100, align, GPUNIC_MEM_HOST);
		CHECK(buf != NULL);
		CHECK_EQ((uintptr_t)buf->cpu % align, 0);
		CHECK_EQ(gpunic_mem_free(mem, buf), 0);
	}
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(host_bad_arguments)
{
	gpunic_mem_t *mem = open_host_only();
	struct gpunic_mem_attr bad = { .flags = 1u << 7 };

	errno = 0;
	CHECK(gpunic_mem_alloc(mem, 0, 0, GPUNIC_MEM_HOST) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(gpunic_mem_alloc(mem, 64, 3, GPUNIC_MEM_HOST) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(gpunic_mem_alloc(mem, 64, 0, (enum gpunic_mem_placement)17) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(gpunic_mem_alloc(NULL, 64, 0, GPUNIC_MEM_HOST) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(gpunic_mem_alloc(mem, SIZE_MAX - 10, 0, GPUNIC_MEM_HOST) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(gpunic_mem_open(&bad) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(gpunic_mem_free(mem, NULL), EINVAL);
	CHECK_EQ(gpunic_mem_query(mem, NULL), EINVAL);
	CHECK_EQ(gpunic_mem_close(NULL), 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(host_tracking_and_close_frees_the_rest)
{
	gpunic_mem_t *mem = open_host_only();
	struct gpunic_mem_buf *bufs[6];
	struct gpunic_mem_caps caps;

	for (int i = 0; i < 6; i++) {
		bufs[i] = gpunic_mem_alloc(mem, 100 * (size_t)(i + 1), 0, GPUNIC_MEM_HOST);
		CHECK(bufs[i] != NULL);
	}
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK_EQ(caps.live_buffers, 6);
	CHECK_EQ(caps.live_bytes, 2100);
	CHECK_EQ(gpunic_mem_free(mem, bufs[1]), 0);
	CHECK_EQ(gpunic_mem_free(mem, bufs[4]), 0);
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK_EQ(caps.live_buffers, 4);
	CHECK_EQ(caps.live_bytes, 2100 - 200 - 500);
	/* The other four are the context's to free; ASan/LSan builds check that it does. */
	capture_start(GPUNIC_LOG_INFO);
	CHECK_EQ(gpunic_mem_close(mem), 0);
	CHECK(strstr(logbuf, "freeing 4 buffer(s), 1400 bytes, left allocated"));
}

TEST(host_free_rejects_foreign_and_double_free)
{
	gpunic_mem_t *a = open_host_only(), *b = open_host_only();
	struct gpunic_mem_buf *buf = gpunic_mem_alloc(a, 64, 0, GPUNIC_MEM_HOST);
	struct gpunic_mem_buf fake = { 0 };

	CHECK(buf != NULL);
	capture_start(GPUNIC_LOG_ERR);
	CHECK_EQ(gpunic_mem_free(b, buf), EINVAL);
	CHECK(strstr(logbuf, "was not allocated by this context"));
	CHECK_EQ(gpunic_mem_free(a, &fake), EINVAL);
	CHECK_EQ(gpunic_mem_free(a, buf), 0);
	/* Only compared, never dereferenced, so a stale pointer is safe to pass. */
	CHECK_EQ(gpunic_mem_free(a, buf), EINVAL);
	CHECK_EQ(gpunic_mem_close(a), 0);
	CHECK_EQ(gpunic_mem_close(b), 0);
}

TEST(host_read_write)
{
	gpunic_mem_t *mem = open_host_only();
	struct gpunic_mem_buf *buf = gpunic_mem_alloc(mem, 256, 0, GPUNIC_MEM_HOST);
	uint8_t in[32], out[32];

	CHECK(buf != NULL);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 3 + 1);
	CHECK_EQ(gpunic_mem_write(mem, buf, 224, in, sizeof(in)), 0);
	CHECK_MEM((uint8_t *)buf->cpu + 224, in, sizeof(in));
	CHECK_EQ(gpunic_mem_read(mem, buf, 224, out, sizeof(out)), 0);
	CHECK_MEM(out, in, sizeof(in));
	CHECK_EQ(gpunic_mem_write(mem, buf, 225, in, sizeof(in)), EINVAL);
	CHECK_EQ(gpunic_mem_read(mem, buf, 257, out, 0), EINVAL);
	CHECK_EQ(gpunic_mem_read(mem, buf, SIZE_MAX, out, 2), EINVAL);
	CHECK_EQ(gpunic_mem_write(mem, buf, 256, in, 0), 0);
	CHECK_EQ(gpunic_mem_write(mem, buf, 0, NULL, 4), EINVAL);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

static void check_no_gpu(gpunic_mem_t *mem, const char *reason_part)
{
	static const enum gpunic_mem_placement gpu_placements[] = {
		GPUNIC_MEM_GPU, GPUNIC_MEM_GPU_CPU, GPUNIC_MEM_CPU_GPU
	};
	struct gpunic_mem_caps caps;

	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK(!caps.gpu);
	CHECK(!caps.gdrcopy);
	CHECK_EQ(caps.placements, 1u << GPUNIC_MEM_HOST);
	CHECK(strncmp(caps.gpu_reason, "no GPU: ", 8) == 0);
	CHECK(strstr(caps.gpu_reason, reason_part));
	CHECK(strcmp(caps.gdrcopy_reason, "no GPU") == 0);
	for (size_t i = 0; i < 3; i++) {
		capture_start(GPUNIC_LOG_ERR);
		errno = 0;
		CHECK(gpunic_mem_alloc(mem, 4096, 0, gpu_placements[i]) == NULL);
		CHECK_EQ(errno, ENODEV);
		CHECK(strstr(logbuf, "placement needs a GPU: no GPU: "));
		CHECK(strstr(logbuf, gpunic_mem_placement_str(gpu_placements[i])));
	}
	/* HOST still works. */
	CHECK(gpunic_mem_alloc(mem, 4096, 0, GPUNIC_MEM_HOST) != NULL);
}

TEST(no_gpu_host_only_context)
{
	gpunic_mem_t *mem = open_host_only();

	check_no_gpu(mem, "GPUNIC_MEM_OPEN_NO_GPU");
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(no_gpu_driver_missing)
{
	gpunic_mem_t *mem;

	setenv("GPUNIC_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	unsetenv("GPUNIC_MEM_FAKE_GPU");
	capture_start(GPUNIC_LOG_INFO);
	mem = gpunic_mem_open(NULL);
	CHECK(mem != NULL);
	CHECK(strstr(logbuf, "no GPU: cannot load /nonexistent/libcuda.so.1"));
	check_no_gpu(mem, "cannot load /nonexistent/libcuda.so.1");
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(no_gpu_driver_not_a_driver)
{
	gpunic_mem_t *mem;

	/* A library that loads but lacks the driver API: libc. */
	setenv("GPUNIC_CUDA_LIB", "libc.so.6", 1);
	unsetenv("GPUNIC_MEM_FAKE_GPU");
	mem = gpunic_mem_open(NULL);
	CHECK(mem != NULL);
	check_no_gpu(mem, "libc.so.6 lacks cuInit");
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(no_gpu_on_this_machine)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	unsetenv("GPUNIC_CUDA_LIB");
	unsetenv("GPUNIC_MEM_FAKE_GPU");
	mem = gpunic_mem_open(NULL);
	CHECK(mem != NULL);
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	if (caps.gpu) {
		gpunic_mem_close(mem);
		SKIP("a GPU is present (%s); test_mem_cuda covers it", caps.gpu_name);
	}
	check_no_gpu(mem, "");
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(names)
{
	CHECK(strcmp(gpunic_mem_placement_str(GPUNIC_MEM_HOST), "HOST") == 0);
	CHECK(strcmp(gpunic_mem_placement_str(GPUNIC_MEM_GPU), "GPU") == 0);
	CHECK(strcmp(gpunic_mem_placement_str(GPUNIC_MEM_GPU_CPU), "GPU_CPU") == 0);
	CHECK(strcmp(gpunic_mem_placement_str(GPUNIC_MEM_CPU_GPU), "CPU_GPU") == 0);
	CHECK(strcmp(gpunic_mem_placement_str(GPUNIC_MEM_PLACEMENT_MAX), "?") == 0);
	CHECK(strcmp(gpunic_mem_backend_str(GPUNIC_MEM_BACKEND_CUDA_DEVICE), "cuda-device") == 0);
	CHECK(strcmp(gpunic_mem_backend_str(GPUNIC_MEM_BACKEND_CUDA_HOST), "cuda-host") == 0);
	CHECK(strcmp(gpunic_mem_backend_str(GPUNIC_MEM_BACKEND_GDRCOPY), "gdrcopy") == 0);
	CHECK(strcmp(gpunic_mem_backend_str(GPUNIC_MEM_BACKEND_PINNED_FALLBACK),
		     "pinned-fallback") == 0);
	CHECK(strcmp(gpunic_mem_backend_str((enum gpunic_mem_backend)-1), "?") == 0);
	CHECK(strcmp(gpunic_queue_kind_str(GPUNIC_QUEUE_DBREC), "DBREC") == 0);
	CHECK(strcmp(gpunic_queue_kind_str(GPUNIC_QUEUE_EXEC_STATE), "EXEC_STATE") == 0);
	CHECK(strcmp(gpunic_queue_kind_str(GPUNIC_QUEUE_KIND_MAX), "?") == 0);
}

TEST(policy_cpu_executor_is_all_host)
{
	gpunic_mem_t *mem = open_host_only();
	const char *why = NULL;

	for (int k = 0; k < GPUNIC_QUEUE_KIND_MAX; k++) {
		CHECK_EQ(gpunic_mem_placement_for(mem, (enum gpunic_queue_kind)k, false, &why),
			 GPUNIC_MEM_HOST);
		CHECK(why && strstr(why, "CPU executor"));
	}
	CHECK_EQ(gpunic_mem_placement_for(mem, GPUNIC_QUEUE_KIND_MAX, true, &why),
		 GPUNIC_MEM_HOST);
	CHECK(strcmp(why, "unknown queue kind") == 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(policy_gpu_executor_without_gdrcopy)
{
	gpunic_mem_t *mem = open_host_only();
	const char *why;

	/* Softnic-read queues are host-pinned; softnic-written ones too, lacking GDRCopy;
	 * executor-only state is device memory. */
	for (int k = 0; k < GPUNIC_QUEUE_KIND_MAX; k++)
		CHECK_EQ(gpunic_mem_placement_for(mem, (enum gpunic_queue_kind)k, true, NULL),
			 k == GPUNIC_QUEUE_EXEC_STATE ? GPUNIC_MEM_GPU : GPUNIC_MEM_CPU_GPU);
	gpunic_mem_placement_for(mem, GPUNIC_QUEUE_EXEC_STATE, true, &why);
	CHECK(strstr(why, "only the GPU touches it"));
	gpunic_mem_placement_for(mem, GPUNIC_QUEUE_CQ, true, &why);
	CHECK(strstr(why, "GDRCopy is not in use"));
	gpunic_mem_placement_for(mem, GPUNIC_QUEUE_SQ, true, &why);
	CHECK(strstr(why, "the softnic reads it"));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

#define WORKERS 4
#define ROUNDS 500

static void *alloc_worker(void *arg)
{
	gpunic_mem_t *mem = arg;
	struct gpunic_mem_buf *keep[8] = { 0 };

	for (int i = 0; i < ROUNDS; i++) {
		struct gpunic_mem_buf **slot = &keep[i % 8];

		if (*slot && gpunic_mem_free(mem, *slot))
			return (void *)1;
		*slot = gpunic_mem_alloc(mem, 64 + (size_t)i, 0, GPUNIC_MEM_HOST);
		if (!*slot)
			return (void *)1;
		memset((*slot)->cpu, i & 0xff, (*slot)->size);
	}
	return NULL; /* the last eight are left for close */
}

TEST(host_threads)
{
	gpunic_mem_t *mem = open_host_only();
	struct gpunic_mem_caps caps;
	pthread_t t[WORKERS];
	void *rc;

	for (int i = 0; i < WORKERS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, alloc_worker, mem), 0);
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(t[i], &rc);
		CHECK(rc == NULL);
	}
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK_EQ(caps.live_buffers, WORKERS * 8);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}
