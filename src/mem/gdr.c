// SPDX-License-Identifier: MIT
/*
 * GDRCopy through dlopen: libgpunic never links libgdrapi, and a host without it (or without the
 * gdrdrv module) simply takes the host-pinned fallback.
 *
 * The libgdrapi 2.x ABI is restated in gdr_abi.h, which sanity.c shares.
 *
 * Rules kept here: gdr_map needs a pin that starts on a 64 KiB GPU page; the CPU address of a
 * byte at device address va is map_ptr + (va - info.va); unmap before unpin; the library is not
 * thread-safe, so callers serialise (the context lock does).
 *
 * The real gdrdrv path has not been run by the authors of this file: no machine available to
 * them had the module. Tests run this code against tests/mem/gdrapi_double.c.
 */
#include "gdr_abi.h"
#include "mem_loc.h"

#include <gpunic/log.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	size_t offset;
} gdr_syms[] = {
#define GDR_SYM(field, sym) { sym, offsetof(struct gdr_api, field) }
	GDR_SYM(open, "gdr_open"),
	GDR_SYM(close, "gdr_close"),
	GDR_SYM(pin_buffer, "gdr_pin_buffer"),
	GDR_SYM(unpin_buffer, "gdr_unpin_buffer"),
	GDR_SYM(map, "gdr_map"),
	GDR_SYM(unmap, "gdr_unmap"),
	GDR_SYM(copy_to_mapping, "gdr_copy_to_mapping"),
	GDR_SYM(copy_from_mapping, "gdr_copy_from_mapping"),
	GDR_SYM(runtime_get_version, "gdr_runtime_get_version"),
	GDR_SYM(driver_get_version, "gdr_driver_get_version"),
#undef GDR_SYM
};

struct mem_gdr {
	void *dl;
	struct gdr_api api;
	bool info_v2;	/* get_info fills mapping_type too */
	gdr_abi_t g;
};

static struct gdr_handle_abi to_handle(unsigned long h)
{
	struct gdr_handle_abi mh = { .h = h };

	return mh;
}

static bool version_ok(int major, int minor)
{
	return major > GPUNIC_GDR_MIN_MAJOR ||
	       (major == GPUNIC_GDR_MIN_MAJOR && minor >= GPUNIC_GDR_MIN_MINOR);
}

int gdr_abi_load(const char *lib, void **dl, struct gdr_api *api, bool *info_v2,
		 const char **missing, char *dlerr, size_t dlerr_len)
{
	void *sym;

	memset(api, 0, sizeof(*api));
	*dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!*dl) {
		const char *err = dlerror();

		snprintf(dlerr, dlerr_len, "%s", err ? err : "unknown error");
		return ENOENT;
	}
	for (size_t i = 0; i < sizeof(gdr_syms) / sizeof(gdr_syms[0]); i++) {
		sym = dlsym(*dl, gdr_syms[i].name);
		if (!sym) {
			*missing = gdr_syms[i].name;
			goto missing;
		}
		/* POSIX guarantees data and function pointers convert for dlsym results. */
		memcpy((char *)api + gdr_syms[i].offset, &sym, sizeof(sym));
	}
	/* gdr_get_info is a macro for gdr_get_info_v2 since 2.3; older libraries export only
	 * the v1 record, a prefix of v2. */
	sym = dlsym(*dl, "gdr_get_info_v2");
	*info_v2 = sym != NULL;
	if (!sym)
		sym = dlsym(*dl, "gdr_get_info");
	if (!sym) {
		*missing = "gdr_get_info";
		goto missing;
	}
	memcpy(&api->get_info, &sym, sizeof(sym));
	sym = dlsym(*dl, "gdr_get_attribute");
	if (sym)
		memcpy(&api->get_attribute, &sym, sizeof(sym));
	return 0;
missing:
	dlclose(*dl);
	*dl = NULL;
	return ENOSYS;
}

static int gdr_load(struct mem_gdr *gdr, const char *lib, char *why, size_t why_len)
{
	const char *missing = "";
	char dlerr[160];
	int err = gdr_abi_load(lib, &gdr->dl, &gdr->api, &gdr->info_v2, &missing, dlerr,
			       sizeof(dlerr));

	if (err == ENOENT)
		snprintf(why, why_len, "cannot load %s: %s", lib, dlerr);
	else if (err)
		snprintf(why, why_len, "%s lacks %s", lib, missing);
	return err;
}

static int gdr_get_info_checked(struct mem_gdr *gdr, struct gdr_handle_abi mh,
				struct gdr_info_abi *info)
{
	memset(info, 0, sizeof(*info));
	return gdr->api.get_info(gdr->g, mh, info);
}

int mem_gdr_map(struct mem_gdr *gdr, uint64_t va, size_t size, struct mem_gdr_map *map)
{
	struct gdr_handle_abi mh = { 0 };
	struct gdr_info_abi info;
	void *ptr = NULL;
	int ret;

	if (va & (GPUNIC_GPU_PAGE_SIZE - 1) || !size)
		return EINVAL;
	ret = gdr->api.pin_buffer(gdr->g, (unsigned long)va, size, 0, 0, &mh);
	if (ret) {
		gpunic_warn_ratelimited("gdr_pin_buffer(0x%llx, %zu): %s", (unsigned long long)va,
					size, strerror(ret));
		return ret;
	}
	ret = gdr_get_info_checked(gdr, mh, &info);
	if (ret) {
		gpunic_warn_ratelimited("gdr_get_info: %s", strerror(ret));
		goto unpin;
	}
	/* The driver rounds the pinned range out to GPU pages; ours must lie inside it. */
	if (info.va > va || va + size > info.va + info.mapped_size) {
		gpunic_warn_ratelimited("gdr_get_info: pinned 0x%llx+%llu misses 0x%llx+%zu",
					(unsigned long long)info.va,
					(unsigned long long)info.mapped_size,
					(unsigned long long)va, size);
		ret = EINVAL;
		goto unpin;
	}
	ret = gdr->api.map(gdr->g, mh, &ptr, info.mapped_size);
	if (ret) {
		gpunic_warn_ratelimited("gdr_map(%llu bytes): %s",
					(unsigned long long)info.mapped_size, strerror(ret));
		goto unpin;
	}
	map->mh = mh.h;
	map->map_ptr = ptr;
	map->map_size = info.mapped_size;
	map->info_va = info.va;
	map->cpu = (char *)ptr + (va - info.va);
	gpunic_dbg("mapped 0x%llx+%zu at %p (wc_mapping %u, mapping_type %d)",
		   (unsigned long long)va, size, map->cpu, info.wc_mapping,
		   gdr->info_v2 ? info.mapping_type : -1);
	return 0;

unpin:
	gdr->api.unpin_buffer(gdr->g, mh);
	return ret;
}

int mem_gdr_unmap(struct mem_gdr *gdr, struct mem_gdr_map *map)
{
	int ret, ret2;

	ret = gdr->api.unmap(gdr->g, to_handle(map->mh), map->map_ptr, map->map_size);
	if (ret)
		gpunic_err("gdr_unmap(%p): %s", map->map_ptr, strerror(ret));
	/* Unpin even if unmap failed: a stale mapping is a smaller leak than a pinned BAR. */
	ret2 = gdr->api.unpin_buffer(gdr->g, to_handle(map->mh));
	if (ret2)
		gpunic_err("gdr_unpin_buffer: %s", strerror(ret2));
	map->map_ptr = NULL;
	map->cpu = NULL;
	return ret ? ret : ret2;
}

int mem_gdr_copy_to(struct mem_gdr *gdr, const struct mem_gdr_map *map, void *dst,
		    const void *src, size_t len)
{
	return gdr->api.copy_to_mapping(to_handle(map->mh), dst, src, len);
}

int mem_gdr_copy_from(struct mem_gdr *gdr, const struct mem_gdr_map *map, void *dst,
		      const void *src, size_t len)
{
	return gdr->api.copy_from_mapping(to_handle(map->mh), dst, src, len);
}

/* Write a pattern through a fresh mapping and read it back through the GPU driver: proves the
 * BAR mapping reaches the same memory, not only that the calls returned 0. */
static int gdr_probe(struct mem_gdr *gdr, struct mem_gpu *gpu, char *why, size_t why_len)
{
	const size_t raw_size = 2 * GPUNIC_GPU_PAGE_SIZE;
	uint8_t pattern[64], back[64];
	struct mem_gdr_map map;
	uint64_t raw, va;
	int ret;

	ret = gpu->ops->dev_alloc(gpu, raw_size, &raw);
	if (ret) {
		snprintf(why, why_len, "probe: device allocation failed: %s", strerror(ret));
		return ret;
	}
	va = mem_round_up(raw, GPUNIC_GPU_PAGE_SIZE);
	ret = gpu->ops->sync_memops(gpu, raw);
	if (ret) {
		snprintf(why, why_len, "probe: SYNC_MEMOPS: %s", strerror(ret));
		goto free;
	}
	ret = mem_gdr_map(gdr, va, GPUNIC_GPU_PAGE_SIZE, &map);
	if (ret) {
		snprintf(why, why_len, "probe: pin/map of one 64 KiB GPU page failed: %s",
			 strerror(ret));
		goto free;
	}
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(0xa5 ^ (i * 7));
	ret = mem_gdr_copy_to(gdr, &map, map.cpu, pattern, sizeof(pattern));
	if (!ret)
		ret = gpu->ops->dtoh(gpu, back, va, sizeof(back));
	if (ret)
		snprintf(why, why_len, "probe: copy through the mapping failed: %s", strerror(ret));
	else if (memcmp(pattern, back, sizeof(back)) != 0) {
		snprintf(why, why_len,
			 "probe: data written through the mapping did not reach device memory");
		ret = EIO;
	}
	if (mem_gdr_unmap(gdr, &map) && !ret) {
		snprintf(why, why_len, "probe: unmap/unpin failed");
		ret = EIO;
	}
free:
	gpu->ops->dev_free(gpu, raw, raw_size);
	return ret;
}

static void gdr_unload(struct mem_gdr *gdr)
{
	if (gdr->g)
		gdr->api.close(gdr->g);
	if (gdr->dl)
		dlclose(gdr->dl);
	free(gdr);
}

struct mem_gdr *mem_gdr_open(struct mem_gpu *gpu, const char *lib, struct mem_gdr_versions *ver,
			     char *why, size_t why_len)
{
	struct mem_gdr *gdr;
	int ret;

	ver->runtime_major = ver->runtime_minor = -1;
	ver->driver_major = ver->driver_minor = -1;
	gdr = calloc(1, sizeof(*gdr));
	if (!gdr) {
		snprintf(why, why_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	ret = gdr_load(gdr, lib, why, why_len);
	if (ret)
		goto fail;

	gdr->api.runtime_get_version(&ver->runtime_major, &ver->runtime_minor);
	if (!version_ok(ver->runtime_major, ver->runtime_minor)) {
		snprintf(why, why_len, "libgdrapi %d.%d is older than the %d.%d required",
			 ver->runtime_major, ver->runtime_minor, GPUNIC_GDR_MIN_MAJOR,
			 GPUNIC_GDR_MIN_MINOR);
		ret = ENOTSUP;
		goto fail;
	}

	gdr->g = gdr->api.open();
	if (!gdr->g) {
		int dev_err = access("/dev/gdrdrv", R_OK | W_OK) ? errno : 0;

		snprintf(why, why_len, "gdr_open() failed (/dev/gdrdrv: %s)",
			 dev_err ? strerror(dev_err) : "present");
		ret = ENODEV;
		goto fail;
	}

	ret = gdr->api.driver_get_version(gdr->g, &ver->driver_major, &ver->driver_minor);
	if (ret) {
		snprintf(why, why_len, "gdr_driver_get_version: %s", strerror(ret));
		goto fail;
	}
	if (!version_ok(ver->driver_major, ver->driver_minor)) {
		snprintf(why, why_len, "gdrdrv %d.%d is older than the %d.%d required",
			 ver->driver_major, ver->driver_minor, GPUNIC_GDR_MIN_MAJOR,
			 GPUNIC_GDR_MIN_MINOR);
		ret = ENOTSUP;
		goto fail;
	}

	ret = gdr_probe(gdr, gpu, why, why_len);
	if (ret)
		goto fail;
	return gdr;

fail:
	gdr_unload(gdr);
	errno = ret;
	return NULL;
}

void mem_gdr_close(struct mem_gdr *gdr)
{
	if (gdr)
		gdr_unload(gdr);
}
