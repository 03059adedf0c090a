// SPDX-License-Identifier: MIT
/*
 * The mem layer's GDRCopy path, run against the GDRCopy test double (GPUNIC_GDRAPI_LIB) with
 * host memory posing as device memory (GPUNIC_MEM_FAKE_GPU=1). These tests check the order of
 * calls, the alignment and offset arithmetic and the fallbacks; they do not and cannot show
 * that the real gdrdrv path works, which has not been run here.
 */
#include "harness.h"

#include <gpunic/log.h>
#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

static char logbuf[16384];

static char *(*double_trace)(void);
static void (*double_trace_reset)(void);
static int (*double_live)(int *mapped);

static void capture(int level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	strncat(logbuf, line, sizeof(logbuf) - strlen(logbuf) - 1);
}

/* Point the mem layer at the double and a fake GPU, and keep our own reference to the double
 * so its call record outlives the context. */
static void setup(void)
{
	void *dl, *p;

	setenv("GPUNIC_MEM_FAKE_GPU", "1", 1);
	setenv("GPUNIC_GDRAPI_LIB", GDRAPI_DOUBLE_PATH, 1);
	unsetenv("GPUNIC_GDRCOPY");
	dl = dlopen(GDRAPI_DOUBLE_PATH, RTLD_NOW);
	CHECK(dl != NULL);
	p = dlsym(dl, "gdr_double_trace");
	CHECK(p);
	memcpy(&double_trace, &p, sizeof(p));
	p = dlsym(dl, "gdr_double_trace_reset");
	CHECK(p);
	memcpy(&double_trace_reset, &p, sizeof(p));
	p = dlsym(dl, "gdr_double_live");
	CHECK(p);
	memcpy(&double_live, &p, sizeof(p));
	logbuf[0] = '\0';
	gpunic_log_set_sink(capture, NULL);
	gpunic_log_set_level(GPUNIC_LOG_INFO);
}

static bool trace_is(const char *want)
{
	char *t = double_trace();
	bool ok = strcmp(t, want) == 0;

	if (!ok)
		fprintf(stderr, "trace \"%s\"\nwant  \"%s\"\n", t, want);
	free(t);
	return ok;
}

static bool trace_has(const char *part)
{
	char *t = double_trace();
	bool ok = strstr(t, part) != NULL;

	if (!ok)
		fprintf(stderr, "trace \"%s\" lacks \"%s\"\n", t, part);
	free(t);
	return ok;
}

static gpunic_mem_t *open_mem(struct gpunic_mem_caps *caps)
{
	gpunic_mem_t *mem = gpunic_mem_open(NULL);

	CHECK(mem != NULL);
	CHECK_EQ(gpunic_mem_query(mem, caps), 0);
	CHECK(caps->gpu);
	CHECK(caps->fake_gpu);
	return mem;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 8));
}

TEST(gdr_probe_at_open)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	mem = open_mem(&caps);
	CHECK(caps.gdrcopy);
	CHECK(strcmp(caps.gdrcopy_reason, "") == 0);
	CHECK(strcmp(caps.gdrcopy_lib, GDRAPI_DOUBLE_PATH) == 0);
	CHECK_EQ(caps.gdr_runtime_major, 2);
	CHECK_EQ(caps.gdr_runtime_minor, 5);
	CHECK_EQ(caps.gdr_driver_major, 2);
	CHECK_EQ(caps.gdr_driver_minor, 5);
	CHECK_EQ(caps.placements, 0xfu);
	/* Versions first, then one page pinned, mapped, written and released in order. */
	CHECK(trace_is("runtime_version open driver_version pin get_info map copy_to unmap unpin"));
	CHECK(strstr(logbuf, "GDRCopy 2.5 (gdrdrv 2.5)"));
	CHECK(strstr(logbuf, "GPUNIC_MEM_FAKE_GPU=1"));
	CHECK_EQ(gpunic_mem_close(mem), 0);
	CHECK(trace_has("unpin close"));
	CHECK_EQ(double_live(NULL), 0);
}

static void check_gdr_buffer(gpunic_mem_t *mem, size_t size, size_t align)
{
	struct gpunic_mem_buf *buf;
	uint8_t *pattern = malloc(size), *back = malloc(size);
	int mapped;

	CHECK(pattern && back);
	double_trace_reset();
	buf = gpunic_mem_alloc(mem, size, align, GPUNIC_MEM_GPU_CPU);
	CHECK(buf != NULL);
	CHECK(trace_is("pin get_info map"));
	CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_GDRCOPY);
	CHECK(strcmp(gpunic_mem_backend_str(buf->backend), "gdrcopy") == 0);
	CHECK_EQ(buf->placement, GPUNIC_MEM_GPU_CPU);
	CHECK_EQ(buf->requested, GPUNIC_MEM_GPU_CPU);
	CHECK_EQ(buf->size, size);
	CHECK(buf->cpu && buf->gpu);
	/* Pinned from a GPU page boundary, whatever the allocator returned. */
	CHECK_EQ((uintptr_t)buf->gpu % GPUNIC_GPU_PAGE_SIZE, 0);
	CHECK_EQ((uintptr_t)buf->gpu % (align ? align : 1), 0);
	/* The CPU address is the BAR-like alias, not the device address itself. */
	CHECK(buf->cpu != buf->gpu);
	CHECK_EQ(double_live(&mapped), 1);
	CHECK_EQ(mapped, 1);

	/* Writes through the CPU pointer land in "device memory" (fake: readable host memory),
	 * at the same offsets: a wrong map_ptr + (va - info.va) would show up here. */
	fill(pattern, size, 7);
	memcpy(buf->cpu, pattern, size);
	CHECK_MEM(buf->gpu, pattern, size);
	/* The copy helpers go through gdr_copy_to/from_mapping. */
	fill(pattern, size, 99);
	double_trace_reset();
	CHECK_EQ(gpunic_mem_write(mem, buf, 0, pattern, size), 0);
	CHECK_MEM(buf->gpu, pattern, size);
	CHECK_EQ(gpunic_mem_read(mem, buf, 1, back, size - 1), 0);
	CHECK_MEM(back, pattern + 1, size - 1);
	CHECK(trace_is("copy_to copy_from"));
	CHECK_EQ(gpunic_mem_write(mem, buf, size, pattern, 1), EINVAL);

	/* Free: unmap, then unpin (then the device memory goes). */
	double_trace_reset();
	CHECK_EQ(gpunic_mem_free(mem, buf), 0);
	CHECK(trace_is("unmap unpin"));
	CHECK_EQ(double_live(NULL), 0);
	free(pattern);
	free(back);
}

TEST(gdr_alloc_pin_map_unmap_unpin)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	mem = open_mem(&caps);
	CHECK(caps.gdrcopy);
	check_gdr_buffer(mem, 1000, 0);
	check_gdr_buffer(mem, GPUNIC_GPU_PAGE_SIZE, 0);
	check_gdr_buffer(mem, 3 * GPUNIC_GPU_PAGE_SIZE + 17, 0);
	check_gdr_buffer(mem, 4096, 1u << 20);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_buffers_do_not_overlap)
{
	struct gpunic_mem_buf *a, *b;
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	mem = open_mem(&caps);
	a = gpunic_mem_alloc(mem, 100, 0, GPUNIC_MEM_GPU_CPU);
	b = gpunic_mem_alloc(mem, 100, 0, GPUNIC_MEM_GPU_CPU);
	CHECK(a && b);
	memset(a->cpu, 0x11, a->size);
	memset(b->cpu, 0x22, b->size);
	CHECK_EQ(((uint8_t *)a->gpu)[99], 0x11);
	CHECK_EQ(((uint8_t *)b->gpu)[0], 0x22);
	CHECK_EQ(((uint8_t *)a->cpu)[0], 0x11);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_close_unmaps_and_unpins_the_rest)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;
	char *t, *p;
	int unmaps = 0;

	setup();
	mem = open_mem(&caps);
	for (int i = 0; i < 3; i++)
		CHECK(gpunic_mem_alloc(mem, 5000, 0, GPUNIC_MEM_GPU_CPU) != NULL);
	CHECK(gpunic_mem_alloc(mem, 5000, 0, GPUNIC_MEM_GPU) != NULL);
	CHECK(gpunic_mem_alloc(mem, 5000, 0, GPUNIC_MEM_CPU_GPU) != NULL);
	CHECK(gpunic_mem_alloc(mem, 5000, 0, GPUNIC_MEM_HOST) != NULL);
	CHECK_EQ(double_live(NULL), 3);
	double_trace_reset();
	CHECK_EQ(gpunic_mem_close(mem), 0);
	/* The context releases its own mappings, each unmap right before its unpin; gdr_close
	 * finds nothing left to clean up. */
	CHECK(trace_is("unmap unpin unmap unpin unmap unpin close"));
	t = double_trace();
	for (p = t; (p = strstr(p, "unmap")); p++)
		unmaps++;
	free(t);
	CHECK_EQ(unmaps, 3);
	CHECK_EQ(double_live(NULL), 0);
	CHECK(strstr(logbuf, "freeing 6 buffer(s)"));
}

TEST(gdr_disabled_by_env)
{
	struct gpunic_mem_caps caps;
	struct gpunic_mem_buf *buf;
	gpunic_mem_t *mem;
	const char *why;

	setup();
	setenv("GPUNIC_GDRCOPY", "0", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strcmp(caps.gdrcopy_reason, "disabled by GPUNIC_GDRCOPY=0") == 0);
	CHECK(strstr(logbuf, "GDRCopy disabled by GPUNIC_GDRCOPY=0"));
	buf = gpunic_mem_alloc(mem, 1000, 0, GPUNIC_MEM_GPU_CPU);
	CHECK(buf != NULL);
	CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_PINNED_FALLBACK);
	CHECK(strcmp(gpunic_mem_backend_str(buf->backend), "pinned-fallback") == 0);
	CHECK_EQ(buf->placement, GPUNIC_MEM_CPU_GPU);
	CHECK_EQ(buf->requested, GPUNIC_MEM_GPU_CPU);
	CHECK(buf->cpu && buf->gpu);
	CHECK_EQ((uintptr_t)buf->cpu % GPUNIC_GPU_PAGE_SIZE, 0);
	CHECK_EQ(gpunic_mem_placement_for(mem, GPUNIC_QUEUE_CQ, true, &why), GPUNIC_MEM_CPU_GPU);
	/* The library was never touched. */
	CHECK(trace_is(""));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_env_value_invalid)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDRCOPY", "maybe", 1);
	gpunic_log_set_level(GPUNIC_LOG_WARNING);
	mem = open_mem(&caps);
	CHECK(caps.gdrcopy);
	CHECK(strstr(logbuf, "GPUNIC_GDRCOPY=\"maybe\" is neither 0 nor 1"));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

static void check_fallback_alloc(gpunic_mem_t *mem)
{
	struct gpunic_mem_buf *buf = gpunic_mem_alloc(mem, 1000, 0, GPUNIC_MEM_GPU_CPU);

	CHECK(buf != NULL);
	CHECK_EQ(buf->backend, GPUNIC_MEM_BACKEND_PINNED_FALLBACK);
	CHECK_EQ(buf->placement, GPUNIC_MEM_CPU_GPU);
	memset(buf->cpu, 0x3c, buf->size);
	CHECK_EQ(((uint8_t *)buf->gpu)[999], 0x3c);
}

TEST(gdr_open_fails_falls_back)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "open", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strstr(caps.gdrcopy_reason, "gdr_open() failed (/dev/gdrdrv: "));
	CHECK(strstr(logbuf, "gpunic: warning: open_gdrcopy: GDRCopy not used: gdr_open() failed"));
	CHECK(strstr(logbuf, "GPU_CPU uses host-pinned memory"));
	CHECK(trace_is("runtime_version open:EIO"));
	check_fallback_alloc(mem);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_probe_map_fails_falls_back)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "map", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strstr(caps.gdrcopy_reason, "probe: pin/map of one 64 KiB GPU page failed"));
	CHECK(strstr(logbuf, "GDRCopy not used: probe:"));
	/* Nothing stays pinned after the failed map; the library is closed again. */
	CHECK(trace_is("runtime_version open driver_version pin get_info map:EIO unpin close"));
	CHECK_EQ(double_live(NULL), 0);
	check_fallback_alloc(mem);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_alloc_map_fails_falls_back)
{
	struct gpunic_mem_caps caps;
	struct gpunic_mem_buf *ok;
	gpunic_mem_t *mem;

	setup();
	/* The probe's map succeeds, the next one (the allocation's) fails. */
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "map@2", 1);
	mem = open_mem(&caps);
	CHECK(caps.gdrcopy);
	double_trace_reset();
	check_fallback_alloc(mem);
	CHECK(trace_is("pin get_info map:EIO unpin"));
	CHECK(strstr(logbuf, "GDRCopy mapping of 1000 bytes failed (Input/output error); using "
			     "host-pinned memory"));
	CHECK_EQ(double_live(NULL), 0);
	/* A GPU placement is still device memory. */
	ok = gpunic_mem_alloc(mem, 100, 0, GPUNIC_MEM_GPU);
	CHECK(ok && ok->backend == GPUNIC_MEM_BACKEND_CUDA_DEVICE);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_pin_fails_falls_back)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "pin@2", 1);
	mem = open_mem(&caps);
	CHECK(caps.gdrcopy);
	double_trace_reset();
	check_fallback_alloc(mem);
	CHECK(trace_is("pin:EIO"));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_runtime_too_old_refused)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDR_DOUBLE_RUNTIME_VERSION", "1.9", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strcmp(caps.gdrcopy_reason, "libgdrapi 1.9 is older than the 2.0 required") == 0);
	CHECK_EQ(caps.gdr_runtime_major, 1);
	CHECK_EQ(caps.gdr_runtime_minor, 9);
	CHECK_EQ(caps.gdr_driver_major, -1);
	/* Refused before gdr_open. */
	CHECK(trace_is("runtime_version"));
	CHECK(strstr(logbuf, "GDRCopy not used: libgdrapi 1.9 is older"));
	check_fallback_alloc(mem);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_driver_too_old_refused)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDR_DOUBLE_DRIVER_VERSION", "1.4", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strcmp(caps.gdrcopy_reason, "gdrdrv 1.4 is older than the 2.0 required") == 0);
	CHECK_EQ(caps.gdr_driver_major, 1);
	CHECK_EQ(caps.gdr_driver_minor, 4);
	CHECK(trace_is("runtime_version open driver_version close"));
	check_fallback_alloc(mem);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_driver_version_error_refused)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "driver_version", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strstr(caps.gdrcopy_reason, "gdr_driver_get_version: Input/output error"));
	CHECK(trace_is("runtime_version open driver_version:EIO close"));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_library_missing)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDRAPI_LIB", "/nonexistent/libgdrapi.so.2", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strstr(caps.gdrcopy_reason, "cannot load /nonexistent/libgdrapi.so.2"));
	/* Absent is ordinary: info, not warning. */
	CHECK(strstr(logbuf, "gpunic: info: open_gdrcopy: GDRCopy not used: cannot load"));
	CHECK_EQ(caps.gdr_runtime_major, -1);
	check_fallback_alloc(mem);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(gdr_library_lacks_symbols)
{
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;

	setup();
	setenv("GPUNIC_GDRAPI_LIB", "libc.so.6", 1);
	mem = open_mem(&caps);
	CHECK(!caps.gdrcopy);
	CHECK(strstr(caps.gdrcopy_reason, "libc.so.6 lacks gdr_open"));
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(fake_gpu_device_and_pinned_placements)
{
	struct gpunic_mem_caps caps;
	struct gpunic_mem_buf *dev, *pin;
	uint8_t in[300], out[300];
	gpunic_mem_t *mem;

	setup();
	mem = open_mem(&caps);
	CHECK(strstr(caps.gpu_name, "fake GPU"));
	dev = gpunic_mem_alloc(mem, sizeof(in), 4096, GPUNIC_MEM_GPU);
	CHECK(dev != NULL);
	CHECK(dev->cpu == NULL);
	CHECK(dev->gpu != NULL);
	CHECK_EQ((uintptr_t)dev->gpu % 4096, 0);
	CHECK_EQ(dev->backend, GPUNIC_MEM_BACKEND_CUDA_DEVICE);
	CHECK_EQ(gpunic_mem_read(mem, dev, 0, out, sizeof(out)), 0);
	for (size_t i = 0; i < sizeof(out); i++)
		CHECK_EQ(out[i], 0);
	fill(in, sizeof(in), 3);
	CHECK_EQ(gpunic_mem_write(mem, dev, 0, in, sizeof(in)), 0);
	CHECK_EQ(gpunic_mem_read(mem, dev, 0, out, sizeof(out)), 0);
	CHECK_MEM(out, in, sizeof(in));

	pin = gpunic_mem_alloc(mem, 5000, 0, GPUNIC_MEM_CPU_GPU);
	CHECK(pin != NULL);
	CHECK(pin->cpu && pin->gpu);
	CHECK_EQ(pin->backend, GPUNIC_MEM_BACKEND_CUDA_HOST);
	CHECK_EQ(pin->placement, GPUNIC_MEM_CPU_GPU);
	CHECK(strcmp(gpunic_mem_backend_str(pin->backend), "cuda-host") == 0);
	/* The fake, like cuMemHostAlloc, returns no particular alignment. */
	CHECK_EQ((uintptr_t)pin->cpu % 64, 0);
	CHECK_EQ(gpunic_mem_free(mem, pin), 0);
	pin = gpunic_mem_alloc(mem, 5000, 8192, GPUNIC_MEM_CPU_GPU);
	CHECK(pin != NULL);
	CHECK_EQ((uintptr_t)pin->cpu % 8192, 0);
	CHECK(pin->gpu == pin->cpu);
	memset(pin->cpu, 0x77, pin->size);
	CHECK_EQ(gpunic_mem_free(mem, dev), 0);
	CHECK_EQ(gpunic_mem_free(mem, pin), 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(policy_gpu_executor_with_gdrcopy)
{
	static const struct {
		enum gpunic_queue_kind kind;
		enum gpunic_mem_placement want;
	} table[] = {
		{ GPUNIC_QUEUE_SQ, GPUNIC_MEM_CPU_GPU },
		{ GPUNIC_QUEUE_RQ, GPUNIC_MEM_CPU_GPU },
		{ GPUNIC_QUEUE_CQ, GPUNIC_MEM_GPU_CPU },
		{ GPUNIC_QUEUE_DBREC, GPUNIC_MEM_CPU_GPU },
		{ GPUNIC_QUEUE_DOORBELL, GPUNIC_MEM_CPU_GPU },
		{ GPUNIC_QUEUE_PAYLOAD, GPUNIC_MEM_GPU_CPU },
		{ GPUNIC_QUEUE_SEND_PAYLOAD, GPUNIC_MEM_CPU_GPU },
		{ GPUNIC_QUEUE_EXEC_STATE, GPUNIC_MEM_GPU },
	};
	static const char *const reason[GPUNIC_MEM_PLACEMENT_MAX] = {
		[GPUNIC_MEM_GPU] = "only the GPU touches it",
		[GPUNIC_MEM_GPU_CPU] = "GDRCopy write-combined",
		[GPUNIC_MEM_CPU_GPU] = "the softnic reads it",
	};
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;
	const char *why;

	setup();
	mem = open_mem(&caps);
	CHECK(caps.gdrcopy);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		why = NULL;
		CHECK_EQ(gpunic_mem_placement_for(mem, table[i].kind, true, &why), table[i].want);
		CHECK(why != NULL);
		CHECK(strstr(why, reason[table[i].want]));
		CHECK_EQ(gpunic_mem_placement_for(mem, table[i].kind, false, NULL),
			 GPUNIC_MEM_HOST);
	}
	CHECK_EQ(gpunic_mem_close(mem), 0);
}
