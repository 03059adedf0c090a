// SPDX-License-Identifier: MIT
/*
 * The GDRCopy sanity suite (src/internal/gpunic/mem_sanity.h), modelled on gdrcopy_sanity: tests are
 * named family_variant, each runs in a forked child with a timeout, and a test that cannot run
 * is waived with the reason, never passed.
 *
 * The suite drives libgdrapi's own calls (pin, get_info, map, unmap, unpin, copies), so it
 * restates the libgdrapi 2.x ABI as gdr.c does: gdr_mh_t is one unsigned long passed by value,
 * the info record is va, mapped_size, page_size, tm_cycles, cycles_per_ms, the mapped and
 * wc_mapping bit-fields (and mapping_type in _v2). Device memory comes from the mem layer's
 * device backends (cuda.c, or fake_gpu.c under GPUNIC_MEM_FAKE_GPU=1), and one test goes
 * through the public gpunic_mem API end to end.
 *
 * The real gdrdrv path has not been run by the authors of this file: no machine available to
 * them had the module. It was run against tests/mem/gdrapi_double.c.
 */
#include "gdr_abi.h"
#include "mem_loc.h"

#include <gpunic/mem_sanity.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SANITY_DEFAULT_TIMEOUT_MS 10000
#define SANITY_FORK_TIMEOUT_MS 3000
#define SANITY_BIG (256 * 1024 + 16)	/* gdrcopy_sanity's size: 256 KiB and a bit */

/* ---------------------------------------------------------------- libgdrapi ABI */

/* The libgdrapi ABI and its loader: gdr_abi.h, shared with gdr.c. */

/* ---------------------------------------------------------------- per-child context */

/* What the parent decided before forking: the same environment gpunic_mem_open() reads. */
struct sanity_env {
	const char *lib;
	const char *cuda_lib;
	bool fake_gpu;
	int device;
};

/* What a test child holds: the library, one gdr_t, and the device backend. */
struct sctx {
	const struct sanity_env *env;
	void *dl;
	struct gdr_api api;
	gdr_abi_t g;
	struct mem_gpu *gpu;
	int ver[4];	/* runtime major, minor, driver major, minor */
};

/* One device allocation, its first 64 KiB GPU page at va. */
struct sdev {
	uint64_t raw, va;
	size_t raw_size;
};

/* The message a child writes to its parent. */
struct child_msg {
	int status;
	int ver[4];
	char detail[GPUNIC_SANITY_DETAIL_BYTES];
};

static __attribute__((format(printf, 3, 4))) int say(char *d, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d, GPUNIC_SANITY_DETAIL_BYTES, fmt, ap);
	va_end(ap);
	return status;
}

int gpunic_gdrdrv_check(char *why, size_t why_len)
{
	struct stat st;
	int fd, err;

	if (stat("/dev/gdrdrv", &st) < 0) {
		err = errno;
		if (why)
			snprintf(why, why_len,
				 err == ENOENT ?
				 "module not loaded: /dev/gdrdrv missing (load gdrdrv: GDRCopy's "
				 "insmod.sh, or modprobe gdrdrv)" :
				 "/dev/gdrdrv: %s", strerror(err));
		return err;
	}
	fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (why)
			snprintf(why, why_len,
				 err == EACCES || err == EPERM ?
				 "permissions: /dev/gdrdrv exists but this user cannot open it "
				 "read-write (%s; insmod.sh makes it a+rw)" :
				 "/dev/gdrdrv exists but does not open: %s", strerror(err));
		return err;
	}
	close(fd);
	if (why)
		snprintf(why, why_len, "/dev/gdrdrv opens read-write");
	return 0;
}

static int sgdr_load(struct sctx *c, char *d)
{
	const char *missing = "";
	char dlerr[160];
	bool info_v2;
	int err = gdr_abi_load(c->env->lib, &c->dl, &c->api, &info_v2, &missing, dlerr,
			       sizeof(dlerr));

	if (err == ENOENT)
		return say(d, GPUNIC_SANITY_WAIVED, "library not installed: cannot load %s (%s)",
			   c->env->lib, dlerr);
	if (err && strcmp(missing, "gdr_get_info") == 0)
		return say(d, GPUNIC_SANITY_FAILED, "%s lacks gdr_get_info", c->env->lib);
	if (err)
		return say(d, GPUNIC_SANITY_FAILED,
			   "%s is not a GDRCopy 2.x library: it lacks %s", c->env->lib, missing);
	return GPUNIC_SANITY_PASSED;
}

/* The dma-buf backend ties nothing to a gdr_t or to fork() (gdrcopy_sanity waives these). */
static bool using_dmabuf(struct sctx *c)
{
	int v = 0;

	return c->api.get_attribute &&
	       c->api.get_attribute(c->g, GDR_ATTR_USING_DMA_BUF_MMAP, &v) == 0 && v;
}

static bool version_ok(int major, int minor)
{
	return major > GPUNIC_GDR_MIN_MAJOR ||
	       (major == GPUNIC_GDR_MIN_MAJOR && minor >= GPUNIC_GDR_MIN_MINOR);
}

/* Load, check the library version, gdr_open, check the driver version. */
static int sctx_open_gdr(struct sctx *c, char *d)
{
	char cause[GPUNIC_SANITY_DETAIL_BYTES];
	int st, ret;

	st = sgdr_load(c, d);
	if (st != GPUNIC_SANITY_PASSED)
		return st;
	c->api.runtime_get_version(&c->ver[0], &c->ver[1]);
	if (!version_ok(c->ver[0], c->ver[1]))
		return say(d, GPUNIC_SANITY_FAILED,
			   "libgdrapi %d.%d is older than the %d.%d required: install GDRCopy "
			   ">= %d.%d", c->ver[0], c->ver[1], GPUNIC_GDR_MIN_MAJOR,
			   GPUNIC_GDR_MIN_MINOR, GPUNIC_GDR_MIN_MAJOR, GPUNIC_GDR_MIN_MINOR);
	c->g = c->api.open();
	if (!c->g) {
		gpunic_gdrdrv_check(cause, sizeof(cause));
		return say(d, GPUNIC_SANITY_FAILED, "gdr_open() failed: %s", cause);
	}
	ret = c->api.driver_get_version(c->g, &c->ver[2], &c->ver[3]);
	if (ret)
		return say(d, GPUNIC_SANITY_FAILED, "gdr_driver_get_version: %s", strerror(ret));
	if (!version_ok(c->ver[2], c->ver[3]))
		return say(d, GPUNIC_SANITY_FAILED,
			   "gdrdrv %d.%d is older than the %d.%d required: driver too old, "
			   "load a newer gdrdrv", c->ver[2], c->ver[3], GPUNIC_GDR_MIN_MAJOR,
			   GPUNIC_GDR_MIN_MINOR);
	return GPUNIC_SANITY_PASSED;
}

static int sctx_open_gpu(struct sctx *c, char *d)
{
	char why[MEM_REASON_BYTES] = "";

	if (c->env->fake_gpu)
		c->gpu = mem_fake_gpu_open(why, sizeof(why));
	else
		c->gpu = mem_cuda_open(c->env->cuda_lib, c->env->device, why, sizeof(why));
	if (!c->gpu)
		return say(d, GPUNIC_SANITY_WAIVED, "no GPU: %s", why);
	return GPUNIC_SANITY_PASSED;
}

/* Device memory of @size bytes starting on a GPU page (gdrcopy's gpu_mem_alloc habit). */
static int dev_alloc(struct sctx *c, size_t size, struct sdev *m, char *d)
{
	int ret;

	m->raw_size = size + GPUNIC_GPU_PAGE_SIZE;
	ret = c->gpu->ops->dev_alloc(c->gpu, m->raw_size, &m->raw);
	if (ret)
		return say(d, GPUNIC_SANITY_FAILED, "device allocation of %zu bytes: %s",
			   m->raw_size, strerror(ret));
	m->va = mem_round_up(m->raw, GPUNIC_GPU_PAGE_SIZE);
	ret = c->gpu->ops->sync_memops(c->gpu, m->raw);
	if (!ret)
		ret = c->gpu->ops->memset0(c->gpu, m->raw, m->raw_size);
	if (ret) {
		c->gpu->ops->dev_free(c->gpu, m->raw, m->raw_size);
		m->raw = 0;
		return say(d, GPUNIC_SANITY_FAILED, "SYNC_MEMOPS/memset on device memory: %s",
			   strerror(ret));
	}
	return GPUNIC_SANITY_PASSED;
}

static void dev_free(struct sctx *c, struct sdev *m)
{
	if (m->raw)
		c->gpu->ops->dev_free(c->gpu, m->raw, m->raw_size);
	m->raw = 0;
}

/* A pin that fails on a real GPU says something about the platform; name the usual causes. */
static const char *pin_cause(const struct sctx *c)
{
	if (c->env->fake_gpu)
		return "the test double refused it";
	return "GPU without BAR mapping support (GPUDirect RDMA), BAR1 space exhausted, or an "
	       "IOMMU in the way (check /sys/class/iommu and /proc/cmdline)";
}

static const char *map_cause(const struct sctx *c)
{
	if (c->env->fake_gpu)
		return "the test double refused it";
	return "mmap of the BAR failed: IOMMU on (check /sys/class/iommu and /proc/cmdline), "
	       "PAT disabled, or a gdrdrv/NVIDIA driver mismatch";
}

struct smap {
	struct gdr_handle_abi mh;
	bool pinned;
	void *ptr;
	size_t size;
	uint64_t info_va;
	char *cpu;	/* the byte at the pinned address */
};

static int pin(struct sctx *c, uint64_t va, size_t size, struct smap *m, char *d)
{
	int ret;

	memset(m, 0, sizeof(*m));
	ret = c->api.pin_buffer(c->g, (unsigned long)va, size, 0, 0, &m->mh);
	if (ret)
		return say(d, GPUNIC_SANITY_FAILED,
			   "gdr_pin_buffer(%zu bytes): %s; likely cause: %s", size, strerror(ret),
			   pin_cause(c));
	m->pinned = true;
	return GPUNIC_SANITY_PASSED;
}

static int info(struct sctx *c, struct smap *m, struct gdr_info_abi *inf, char *d)
{
	int ret;

	memset(inf, 0, sizeof(*inf));
	ret = c->api.get_info(c->g, m->mh, inf);
	if (ret)
		return say(d, GPUNIC_SANITY_FAILED, "gdr_get_info: %s", strerror(ret));
	return GPUNIC_SANITY_PASSED;
}

/* Pin [va, va + size), read its info and map it; m->cpu is the CPU address of va. */
static int pin_map(struct sctx *c, uint64_t va, size_t size, struct smap *m, char *d)
{
	struct gdr_info_abi inf;
	int st, ret;

	st = pin(c, va, size, m, d);
	if (st)
		return st;
	st = info(c, m, &inf, d);
	if (st)
		return st;
	ret = c->api.map(c->g, m->mh, &m->ptr, inf.mapped_size);
	if (ret) {
		m->ptr = NULL;
		return say(d, GPUNIC_SANITY_FAILED, "gdr_map(%llu bytes): %s; likely cause: %s",
			   (unsigned long long)inf.mapped_size, strerror(ret), map_cause(c));
	}
	m->size = inf.mapped_size;
	m->info_va = inf.va;
	m->cpu = (char *)m->ptr + (va - inf.va);
	return GPUNIC_SANITY_PASSED;
}

/* Unmap then unpin, whatever is held; the first error becomes the verdict if none yet. */
static int unmap_unpin(struct sctx *c, struct smap *m, int st, char *d)
{
	int ret;

	if (m->ptr) {
		ret = c->api.unmap(c->g, m->mh, m->ptr, m->size);
		m->ptr = NULL;
		if (ret && !st)
			st = say(d, GPUNIC_SANITY_FAILED, "gdr_unmap: %s", strerror(ret));
	}
	if (m->pinned) {
		ret = c->api.unpin_buffer(c->g, m->mh);
		m->pinned = false;
		if (ret && !st)
			st = say(d, GPUNIC_SANITY_FAILED, "gdr_unpin_buffer: %s", strerror(ret));
	}
	return st;
}

/* A pattern that differs per byte and per @seed: a shifted byte shows up as wrong data. */
static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)(x >> 24);
	}
}

static int first_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i])
			return (int)i;
	return -1;
}

/* ---------------------------------------------------------------- the tests */

static int t_basic_open(struct sctx *c, char *d)
{
	return say(d, GPUNIC_SANITY_PASSED, "libgdrapi %d.%d, gdrdrv %d.%d", c->ver[0],
		   c->ver[1], c->ver[2], c->ver[3]);
}

static int t_basic_pin_unpin(struct sctx *c, char *d)
{
	const uint64_t page = GPUNIC_GPU_PAGE_SIZE;
	struct gdr_info_abi inf;
	struct smap m, m2;
	struct sdev dev;
	int st;

	st = dev_alloc(c, SANITY_BIG + page, &dev, d);
	if (st)
		return st;
	st = pin(c, dev.va, SANITY_BIG, &m, d);
	if (!st)
		st = info(c, &m, &inf, d);
	if (!st && (inf.va != dev.va || inf.mapped_size < SANITY_BIG ||
		    inf.mapped_size % page || inf.mapped))
		st = say(d, GPUNIC_SANITY_FAILED,
			 "get_info of a fresh %d-byte pin: va +%lld, mapped_size %llu, mapped %u "
			 "(want va +0, a multiple of 64 KiB >= the size, not mapped)",
			 SANITY_BIG, (long long)(inf.va - dev.va),
			 (unsigned long long)inf.mapped_size, inf.mapped);
	/* A pin may start anywhere: the driver rounds it out to whole GPU pages. */
	if (!st)
		st = pin(c, dev.va + page + 16, 100, &m2, d);
	if (!st) {
		st = info(c, &m2, &inf, d);
		if (!st && (inf.va != dev.va + page || inf.mapped_size != page))
			st = say(d, GPUNIC_SANITY_FAILED,
				 "a 100-byte pin 16 bytes into a GPU page: info.va +%lld, "
				 "mapped_size %llu (want the page: +65536, 65536)",
				 (long long)(inf.va - dev.va),
				 (unsigned long long)inf.mapped_size);
		st = unmap_unpin(c, &m2, st, d);
	}
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "pins rounded to 64 KiB GPU pages");
}

static int t_basic_map_unmap(struct sctx *c, char *d)
{
	struct gdr_info_abi inf;
	struct sdev dev;
	struct smap m;
	int st;

	st = dev_alloc(c, SANITY_BIG, &dev, d);
	if (st)
		return st;
	st = pin_map(c, dev.va, SANITY_BIG, &m, d);
	if (!st)
		st = info(c, &m, &inf, d);
	if (!st && !inf.mapped)
		st = say(d, GPUNIC_SANITY_FAILED, "get_info after gdr_map: mapped is 0");
	if (!st && (m.cpu < (char *)m.ptr || m.cpu + SANITY_BIG > (char *)m.ptr + m.size))
		st = say(d, GPUNIC_SANITY_FAILED, "the mapping does not cover the pinned range");
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "wc_mapping %u", inf.wc_mapping);
}

/* Write through the mapping, read through the GPU driver, and the reverse. */
static int copy_check(struct sctx *c, struct smap *m, uint64_t dev_va, size_t moff, size_t hoff,
		      size_t len, uint32_t seed, char *d)
{
	uint8_t *src = malloc(len + hoff), *dst = malloc(len + hoff + 2);
	int ret, at, st = GPUNIC_SANITY_PASSED;

	if (!src || !dst) {
		free(src);
		free(dst);
		return say(d, GPUNIC_SANITY_FAILED, "out of host memory");
	}
	fill(src + hoff, len, seed);
	ret = c->api.copy_to_mapping(m->mh, m->cpu + moff, src + hoff, len);
	if (!ret)
		ret = c->gpu->ops->dtoh(c->gpu, dst, dev_va + moff, len);
	if (ret) {
		st = say(d, GPUNIC_SANITY_FAILED, "copy_to_mapping %zu B at +%zu: %s", len, moff,
			 strerror(ret));
		goto out;
	}
	at = first_diff(src + hoff, dst, len);
	if (at >= 0) {
		st = say(d, GPUNIC_SANITY_FAILED,
			 "copy_to_mapping of %zu B at mapping offset %zu, host offset %zu: byte "
			 "%d differs in device memory", len, moff, hoff, at);
		goto out;
	}
	fill(src + hoff, len, seed ^ 0x5a5a5a5au);
	ret = c->gpu->ops->htod(c->gpu, dev_va + moff, src + hoff, len);
	/* Guard bytes around the destination: the copy must not run over. */
	dst[hoff] = 0xee;
	dst[hoff + len + 1] = 0xee;
	if (!ret)
		ret = c->api.copy_from_mapping(m->mh, dst + hoff + 1, m->cpu + moff, len);
	if (ret) {
		st = say(d, GPUNIC_SANITY_FAILED, "copy_from_mapping %zu B at +%zu: %s", len,
			 moff, strerror(ret));
		goto out;
	}
	at = first_diff(src + hoff, dst + hoff + 1, len);
	if (at >= 0 || dst[hoff] != 0xee || dst[hoff + len + 1] != 0xee)
		st = say(d, GPUNIC_SANITY_FAILED,
			 "copy_from_mapping of %zu B at mapping offset %zu, host offset %zu: %s",
			 len, moff, hoff + 1, at >= 0 ? "wrong data" : "wrote past the buffer");
out:
	free(src);
	free(dst);
	return st;
}

static int t_data_validation_aligned(struct sctx *c, char *d)
{
	struct sdev dev;
	struct smap m;
	int st;

	st = dev_alloc(c, SANITY_BIG, &dev, d);
	if (st)
		return st;
	st = pin_map(c, dev.va, SANITY_BIG, &m, d);
	if (!st)
		st = copy_check(c, &m, dev.va, 0, 0, SANITY_BIG, 1, d);
	if (!st)
		st = copy_check(c, &m, dev.va, 64, 64, 4096, 2, d);
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "%d bytes both ways", SANITY_BIG);
}

static int t_data_validation_unaligned(struct sctx *c, char *d)
{
	static const size_t offs[] = { 1, 2, 3, 4, 5, 6, 7, 11, 129, 1023 };
	struct sdev dev;
	struct smap m;
	unsigned n = 0;
	int st;

	st = dev_alloc(c, SANITY_BIG, &dev, d);
	if (st)
		return st;
	st = pin_map(c, dev.va, SANITY_BIG, &m, d);
	for (size_t i = 0; !st && i < sizeof(offs) / sizeof(offs[0]); i++) {
		size_t len = 4096 + 3 * offs[i];

		/* offset on the mapping, on the host buffer, and on both */
		st = copy_check(c, &m, dev.va, offs[i], 0, len, (uint32_t)(10 + i), d);
		if (!st)
			st = copy_check(c, &m, dev.va, 0, offs[i], len, (uint32_t)(20 + i), d);
		if (!st)
			st = copy_check(c, &m, dev.va, offs[i], offs[i], offs[i],
					(uint32_t)(30 + i), d);
		n += 3;
	}
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "%u offset/size combinations", n);
}

/* The public path: GPU_CPU buffers of the mem layer, as the softnic's CQs get them. */
static int t_data_validation_mem_layer(struct sctx *c, char *d)
{
	static const size_t sizes[] = { 1, 4097, GPUNIC_GPU_PAGE_SIZE + 3, 1 << 20 };
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem;
	int st = GPUNIC_SANITY_PASSED, ret;
	struct gpunic_mem_attr attr = { .cuda_device = c->env->device };

	mem = gpunic_mem_open(&attr);
	if (!mem)
		return say(d, GPUNIC_SANITY_FAILED, "gpunic_mem_open: %s", strerror(errno));
	gpunic_mem_query(mem, &caps);
	if (!caps.gdrcopy) {
		st = say(d, GPUNIC_SANITY_FAILED,
			 "the mem layer does not use GDRCopy although the library works here: %s",
			 caps.gdrcopy_reason);
		goto out;
	}
	for (size_t i = 0; !st && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i], off = len > 7 ? 7 : 0, n = len - off;
		struct gpunic_mem_buf *b = gpunic_mem_alloc(mem, len, 0, GPUNIC_MEM_GPU_CPU);
		uint8_t *src = malloc(len), *dst = malloc(len);

		if (!b || !src || !dst) {
			st = say(d, GPUNIC_SANITY_FAILED, "GPU_CPU allocation of %zu bytes: %s",
				 len, strerror(errno));
		} else if (b->backend != GPUNIC_MEM_BACKEND_GDRCOPY) {
			st = say(d, GPUNIC_SANITY_FAILED,
				 "GPU_CPU buffer of %zu bytes got backend %s, not gdrcopy", len,
				 gpunic_mem_backend_str(b->backend));
		} else {
			fill(src, n, (uint32_t)(40 + i));
			ret = gpunic_mem_write(mem, b, off, src, n);
			if (!ret)
				ret = gpunic_mem_read(mem, b, off, dst, n);
			if (ret)
				st = say(d, GPUNIC_SANITY_FAILED, "mem write/read of %zu B: %s", n,
					 strerror(ret));
			else if (first_diff(src, dst, n) >= 0 ||
				 ((volatile uint8_t *)b->cpu)[off] != src[0])
				st = say(d, GPUNIC_SANITY_FAILED,
					 "GPU_CPU buffer of %zu bytes: data read back differs",
					 len);
		}
		free(src);
		free(dst);
		if (b && gpunic_mem_free(mem, b) && !st)
			st = say(d, GPUNIC_SANITY_FAILED, "gpunic_mem_free of %zu bytes failed",
				 len);
	}
out:
	ret = gpunic_mem_close(mem);
	if (ret && !st)
		st = say(d, GPUNIC_SANITY_FAILED, "gpunic_mem_close: %s", strerror(ret));
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "4 sizes, backend gdrcopy");
}

static int t_invalid_unaligned_map(struct sctx *c, char *d)
{
	const uint64_t page = GPUNIC_GPU_PAGE_SIZE;
	struct gdr_info_abi inf;
	struct smap m, m2;
	struct sdev dev;
	void *p = NULL;
	int st, ret;

	st = dev_alloc(c, 2 * page, &dev, d);
	if (st)
		return st;
	/* gdrdrv's mmap refuses a pin that does not start on a GPU page (offset != 0). */
	st = pin(c, dev.va + 256, page, &m, d);
	if (!st)
		st = info(c, &m, &inf, d);
	if (!st) {
		ret = c->api.map(c->g, m.mh, &p, inf.mapped_size);
		if (!ret) {
			m.ptr = p;
			m.size = inf.mapped_size;
			st = say(d, GPUNIC_SANITY_FAILED,
				 "gdr_map of a pin starting 256 bytes into a GPU page succeeded");
		}
	}
	st = unmap_unpin(c, &m, st, d);
	/* ...while the next page boundary pins and maps. */
	if (!st)
		st = pin_map(c, dev.va + page, page, &m2, d);
	if (!st)
		st = unmap_unpin(c, &m2, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "refused; the aligned pin maps");
}

static int t_invalid_double_map(struct sctx *c, char *d)
{
	struct sdev dev;
	struct smap m;
	void *p = NULL;
	int st, ret = 0;

	st = dev_alloc(c, GPUNIC_GPU_PAGE_SIZE, &dev, d);
	if (st)
		return st;
	st = pin_map(c, dev.va, GPUNIC_GPU_PAGE_SIZE, &m, d);
	if (!st) {
		ret = c->api.map(c->g, m.mh, &p, m.size);
		if (!ret) {
			c->api.unmap(c->g, m.mh, p, m.size);
			st = say(d, GPUNIC_SANITY_FAILED, "a second gdr_map of a mapped handle "
				 "succeeded");
		}
	}
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "refused: %s", strerror(ret));
}

static int t_invalid_unmap_unmapped(struct sctx *c, char *d)
{
	struct sdev dev;
	struct smap m;
	int st, ret = 0;

	st = dev_alloc(c, GPUNIC_GPU_PAGE_SIZE, &dev, d);
	if (st)
		return st;
	st = pin(c, dev.va, GPUNIC_GPU_PAGE_SIZE, &m, d);
	if (!st) {
		/* NULL: were the call to reach munmap, nothing of ours would go. */
		ret = c->api.unmap(c->g, m.mh, NULL, GPUNIC_GPU_PAGE_SIZE);
		if (!ret)
			st = say(d, GPUNIC_SANITY_FAILED, "gdr_unmap of a never-mapped handle "
				 "succeeded");
	}
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "refused: %s", strerror(ret));
}

static int t_invalid_foreign_handle(struct sctx *c, char *d)
{
	struct sdev dev;
	struct smap m;
	gdr_abi_t g2;
	void *p = NULL;
	int st, ret = 0;

	if (using_dmabuf(c))
		return say(d, GPUNIC_SANITY_WAIVED, "the dma-buf backend does not tie a handle to "
			   "its gdr_open (no gdrdrv file)");
	g2 = c->api.open();
	if (!g2)
		return say(d, GPUNIC_SANITY_FAILED, "a second gdr_open() failed");
	st = dev_alloc(c, GPUNIC_GPU_PAGE_SIZE, &dev, d);
	if (!st)
		st = pin(c, dev.va, GPUNIC_GPU_PAGE_SIZE, &m, d);
	if (!st) {
		/* A handle belongs to the gdr_t (the gdrdrv file) that pinned it. Not tried:
		 * gdr_unpin_buffer through g2, since libgdrapi frees the handle even when
		 * gdrdrv refuses. */
		ret = c->api.map(g2, m.mh, &p, GPUNIC_GPU_PAGE_SIZE);
		if (!ret) {
			c->api.unmap(g2, m.mh, p, GPUNIC_GPU_PAGE_SIZE);
			st = say(d, GPUNIC_SANITY_FAILED,
				 "gdr_map through another gdr_open() accepted a foreign handle");
		}
	}
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	c->api.close(g2);
	return st ? st : say(d, GPUNIC_SANITY_PASSED, "refused: %s", strerror(ret));
}

/* Read one byte of a mapping in a fresh child: 0 it did not see @want, 1 it saw it, a signal
 * number if it faulted, -1 on a timeout or fork failure (@d says which). */
static int child_reads(volatile const uint8_t *p, uint8_t want, char *d)
{
	int status, waited = 0;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		say(d, GPUNIC_SANITY_FAILED, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		_exit(p[0] == want && p[1] == (uint8_t)(want + 1) ? 1 : 0);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (waited >= SANITY_FORK_TIMEOUT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			say(d, GPUNIC_SANITY_FAILED, "the forked child hung reading the mapping");
			return -1;
		}
		usleep(1000);
		waited++;
	}
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return WEXITSTATUS(status) == 1;
}

static int t_invalidation_fork_after_map(struct sctx *c, char *d)
{
	static const uint8_t magic[2] = { 0xc3, 0xc4 };
	uint8_t back[2];
	struct sdev dev;
	struct smap m;
	int st, r;

	if (using_dmabuf(c))
		return say(d, GPUNIC_SANITY_WAIVED, "the dma-buf backend's mapping is not "
			   "gdrdrv's VM_DONTCOPY one");
	st = dev_alloc(c, GPUNIC_GPU_PAGE_SIZE, &dev, d);
	if (st)
		return st;
	st = pin_map(c, dev.va, GPUNIC_GPU_PAGE_SIZE, &m, d);
	if (!st && c->api.copy_to_mapping(m.mh, m.cpu, magic, sizeof(magic)))
		st = say(d, GPUNIC_SANITY_FAILED, "copy_to_mapping failed");
	if (!st) {
		/* gdrdrv sets VM_DONTCOPY: the child has no such mapping, so it faults. */
		r = child_reads((volatile const uint8_t *)m.cpu, magic[0], d);
		if (r < 0)
			st = GPUNIC_SANITY_FAILED;
		else if (r == 1)
			st = say(d, GPUNIC_SANITY_FAILED,
				 "a fork()ed child read the parent's data through the inherited "
				 "mapping (want VM_DONTCOPY: a fault)");
		else if (r > 1 && r != SIGSEGV && r != SIGBUS)
			st = say(d, GPUNIC_SANITY_FAILED, "the child died of signal %d (%s)", r,
				 strsignal(r));
		else
			say(d, GPUNIC_SANITY_PASSED, "the child %s%s%s",
			    r > 1 ? "faulted (" : "did not see the data", r > 1 ? strsignal(r) : "",
			    r > 1 ? ")" : "");
	}
	if (!st) {
		/* ...and the parent's mapping is unharmed. */
		if (c->api.copy_from_mapping(m.mh, back, m.cpu, sizeof(back)) ||
		    memcmp(back, magic, sizeof(back)))
			st = say(d, GPUNIC_SANITY_FAILED,
				 "after the child exited the parent no longer reads its data");
	}
	st = unmap_unpin(c, &m, st, d);
	dev_free(c, &dev);
	return st;
}

static sigjmp_buf fault_jmp;
static volatile sig_atomic_t fault_sig;

static void on_fault(int sig)
{
	fault_sig = sig;
	siglongjmp(fault_jmp, 1);
}

static int t_invalidation_access_after_close(struct sctx *c, char *d)
{
	static const uint8_t magic[2] = { 0x3c, 0x3d };
	struct sigaction sa = { .sa_handler = on_fault }, old_segv, old_bus;
	volatile const uint8_t *p;
	volatile int saw = 0;
	struct sdev dev;
	struct smap m;
	int st;

	st = dev_alloc(c, GPUNIC_GPU_PAGE_SIZE, &dev, d);
	if (st)
		return st;
	st = pin_map(c, dev.va, GPUNIC_GPU_PAGE_SIZE, &m, d);
	if (!st && c->api.copy_to_mapping(m.mh, m.cpu, magic, sizeof(magic)))
		st = say(d, GPUNIC_SANITY_FAILED, "copy_to_mapping failed");
	if (st) {
		st = unmap_unpin(c, &m, st, d);
		dev_free(c, &dev);
		return st;
	}
	/* gdr_close releases what the caller left: the mapping is gone or no longer reaches
	 * the memory. */
	p = (volatile const uint8_t *)m.cpu;
	c->api.close(c->g);
	c->g = NULL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	if (sigsetjmp(fault_jmp, 1) == 0)
		saw = p[0] == magic[0] && p[1] == magic[1];
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	dev_free(c, &dev);
	if (saw)
		return say(d, GPUNIC_SANITY_FAILED,
			   "after gdr_close the old mapping still returns the data");
	return say(d, GPUNIC_SANITY_PASSED, "%s%s%s", fault_sig ? "faulted (" : "",
		   fault_sig ? strsignal(fault_sig) : "the old address no longer shows the data",
		   fault_sig ? ")" : "");
}

enum { NEEDS_GDR = 1u << 0, NEEDS_GPU = 1u << 1 };

static const struct sanity_test {
	const char *name;
	const char *checks;
	unsigned needs;
	int (*run)(struct sctx *c, char *d);
} tests[] = {
	{ "basic_open", "library loads, versions >= 2.0, gdr_open and gdr_driver_get_version",
	  NEEDS_GDR, t_basic_open },
	{ "basic_pin_unpin",
	  "pin 256 KiB + 16 B and 100 B inside a page; get_info rounds to 64 KiB pages; unpin",
	  NEEDS_GDR | NEEDS_GPU, t_basic_pin_unpin },
	{ "basic_map_unmap", "pin, get_info, map (info.mapped set, covers the pin), unmap, unpin",
	  NEEDS_GDR | NEEDS_GPU, t_basic_map_unmap },
	{ "data_validation_aligned",
	  "256 KiB + 16 B pattern through the mapping, checked by the GPU driver, both ways",
	  NEEDS_GDR | NEEDS_GPU, t_data_validation_aligned },
	{ "data_validation_unaligned",
	  "offsets 1..1023 B on the mapping, the host buffer and both, odd sizes, both ways, "
	  "no overrun", NEEDS_GDR | NEEDS_GPU, t_data_validation_unaligned },
	{ "data_validation_mem_layer",
	  "gpunic_mem GPU_CPU buffers of 1 B..1 MiB get backend gdrcopy and keep their data",
	  NEEDS_GDR | NEEDS_GPU, t_data_validation_mem_layer },
	{ "invalidation_fork_after_map",
	  "a fork()ed child touching the mapping faults or does not see the data",
	  NEEDS_GDR | NEEDS_GPU, t_invalidation_fork_after_map },
	{ "invalidation_access_after_close",
	  "after gdr_close the old mapping faults or no longer shows the data",
	  NEEDS_GDR | NEEDS_GPU, t_invalidation_access_after_close },
	{ "invalid_unaligned_map", "gdr_map of a pin not starting on a 64 KiB page is refused",
	  NEEDS_GDR | NEEDS_GPU, t_invalid_unaligned_map },
	{ "invalid_double_map", "a second gdr_map of a mapped handle is refused",
	  NEEDS_GDR | NEEDS_GPU, t_invalid_double_map },
	{ "invalid_unmap_unmapped", "gdr_unmap of a handle that was never mapped is refused",
	  NEEDS_GDR | NEEDS_GPU, t_invalid_unmap_unmapped },
	{ "invalid_foreign_handle", "gdr_map of a handle through another gdr_open is refused",
	  NEEDS_GDR | NEEDS_GPU, t_invalid_foreign_handle },
};

_Static_assert(sizeof(tests) / sizeof(tests[0]) <= GPUNIC_SANITY_MAX_TESTS,
	       "GPUNIC_SANITY_MAX_TESTS is too small");

/* ---------------------------------------------------------------- the runner */

/* In the child: set up what the test needs, run it, report. Never returns. */
static void child_main(const struct sanity_test *t, const struct sanity_env *env, int fd)
{
	struct child_msg msg;
	struct sctx c;
	size_t done = 0;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	memset(&c, 0, sizeof(c));
	c.env = env;
	c.ver[0] = c.ver[1] = c.ver[2] = c.ver[3] = -1;
	msg.status = GPUNIC_SANITY_PASSED;
	if (t->needs & NEEDS_GPU)
		msg.status = sctx_open_gpu(&c, msg.detail);
	if (!msg.status && (t->needs & NEEDS_GDR))
		msg.status = sctx_open_gdr(&c, msg.detail);
	if (!msg.status)
		msg.status = t->run(&c, msg.detail);
	memcpy(msg.ver, c.ver, sizeof(msg.ver));
	while (done < sizeof(msg)) {
		n = write(fd, (char *)&msg + done, sizeof(msg) - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (c.g)
		c.api.close(c.g);
	if (c.gpu)
		c.gpu->ops->close(c.gpu);
	_exit(0);
}

static uint32_t ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint32_t)((t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Fork, run @t in the child's own process group, wait up to @timeout_ms, collect. */
static int run_isolated(const struct sanity_test *t, const struct sanity_env *env,
			uint32_t timeout_ms, struct gpunic_sanity_result *res, int ver[4])
{
	struct child_msg msg;
	struct timespec t0;
	size_t got = 0;
	int fds[2], status = 0, err;
	struct pollfd pfd;
	pid_t pid;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return errno;
	fflush(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid == 0) {
		setpgid(0, 0);
		close(fds[0]);
		child_main(t, env, fds[1]);
	}
	setpgid(pid, pid);
	close(fds[1]);
	memset(&msg, 0, sizeof(msg));
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	while (got < sizeof(msg)) {
		uint32_t spent = ms_since(&t0);

		if (spent >= timeout_ms)
			break;
		if (poll(&pfd, 1, (int)(timeout_ms - spent)) <= 0)
			continue;
		n = read(fds[0], (char *)&msg + got, sizeof(msg) - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (got < sizeof(msg) && ms_since(&t0) >= timeout_ms) {
		kill(-pid, SIGKILL);
		waitpid(pid, &status, 0);
		res->status = GPUNIC_SANITY_FAILED;
		snprintf(res->detail, sizeof(res->detail), "timed out after %u ms", timeout_ms);
	} else {
		waitpid(pid, &status, 0);
		if (got == sizeof(msg) && (unsigned)msg.status < GPUNIC_SANITY_STATUS_MAX) {
			res->status = (enum gpunic_sanity_status)msg.status;
			memcpy(res->detail, msg.detail, sizeof(res->detail));
			res->detail[sizeof(res->detail) - 1] = '\0';
			for (int i = 0; i < 4; i++)
				if (msg.ver[i] >= 0)
					ver[i] = msg.ver[i];
		} else {
			res->status = GPUNIC_SANITY_FAILED;
			if (WIFSIGNALED(status))
				snprintf(res->detail, sizeof(res->detail), "crashed: %s",
					 strsignal(WTERMSIG(status)));
			else
				snprintf(res->detail, sizeof(res->detail),
					 "the test process exited (status %d) without a result",
					 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		}
	}
	/* Whatever the test forked and left behind goes with its group. */
	kill(-pid, SIGKILL);
	res->elapsed_ms = ms_since(&t0);
	return 0;
}

static void count(struct gpunic_sanity_report *rep, const struct gpunic_sanity_result *r)
{
	if (r->status == GPUNIC_SANITY_PASSED)
		rep->passed++;
	else if (r->status == GPUNIC_SANITY_FAILED)
		rep->failed++;
	else
		rep->waived++;
}

int gpunic_mem_sanity(const struct gpunic_sanity_attr *attr, struct gpunic_sanity_report *rep)
{
	const char *gdrcopy = getenv("GPUNIC_GDRCOPY");
	const char *fake = getenv("GPUNIC_MEM_FAKE_GPU");
	char waive[GPUNIC_SANITY_DETAIL_BYTES] = "";
	uint32_t timeout_ms = SANITY_DEFAULT_TIMEOUT_MS;
	struct sanity_env env = { 0 };
	int ver[4] = { -1, -1, -1, -1 };
	int ret;

	if (!rep)
		return EINVAL;
	memset(rep, 0, sizeof(*rep));
	if (attr) {
		env.device = attr->cuda_device;
		if (attr->timeout_ms)
			timeout_ms = attr->timeout_ms;
	}
	env.lib = getenv("GPUNIC_GDRAPI_LIB");
	if (!env.lib || !*env.lib)
		env.lib = "libgdrapi.so.2";
	env.cuda_lib = getenv("GPUNIC_CUDA_LIB");
	if (!env.cuda_lib || !*env.cuda_lib)
		env.cuda_lib = "libcuda.so.1";
	env.fake_gpu = fake && strcmp(fake, "1") == 0;
	snprintf(rep->lib, sizeof(rep->lib), "%s", env.lib);
	rep->fake_gpu = env.fake_gpu;
	if (gdrcopy && strcmp(gdrcopy, "0") == 0)
		snprintf(waive, sizeof(waive), "GDRCopy disabled by GPUNIC_GDRCOPY=0");

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		struct gpunic_sanity_result *r = &rep->tests[rep->count++];

		r->name = tests[i].name;
		r->checks = tests[i].checks;
		if (waive[0]) {
			r->status = GPUNIC_SANITY_WAIVED;
			snprintf(r->detail, sizeof(r->detail), "%s", waive);
		} else {
			ret = run_isolated(&tests[i], &env, timeout_ms, r, ver);
			if (ret)
				return ret;
		}
		count(rep, r);
		/* Nothing else can run when the library or gdrdrv cannot be opened. */
		if (i == 0 && r->status != GPUNIC_SANITY_PASSED) {
			/* The reason may fill a detail buffer: cut it, the prefix says enough. */
			int n = snprintf(waive, sizeof(waive), "basic_open %s: ",
					 gpunic_sanity_status_str(r->status));

			if (n > 0 && (size_t)n < sizeof(waive))
				memcpy(waive + n, r->detail,
				       strnlen(r->detail, sizeof(waive) - (size_t)n - 1) + 1);
			waive[sizeof(waive) - 1] = '\0';
		}
	}
	rep->runtime_major = ver[0];
	rep->runtime_minor = ver[1];
	rep->driver_major = ver[2];
	rep->driver_minor = ver[3];
	return 0;
}

const char *gpunic_sanity_status_str(enum gpunic_sanity_status status)
{
	static const char *const names[GPUNIC_SANITY_STATUS_MAX] = {
		[GPUNIC_SANITY_PASSED] = "passed",
		[GPUNIC_SANITY_FAILED] = "failed",
		[GPUNIC_SANITY_WAIVED] = "waived",
	};

	if ((unsigned)status >= GPUNIC_SANITY_STATUS_MAX)
		return "?";
	return names[status];
}
