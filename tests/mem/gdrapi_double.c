// SPDX-License-Identifier: MIT
/*
 * A test double for libgdrapi.so.2 (GDRCopy 2.x user library), built as a shared library with
 * that SONAME and loaded by the mem layer through GPUNIC_GDRAPI_LIB. It has no GPU and no
 * gdrdrv: a "device address" is a host address (the mem layer's GPUNIC_MEM_FAKE_GPU=1 mode
 * allocates such memory). Passing tests against it say that the mem layer keeps GDRCopy's
 * rules, not that the real gdrdrv path works: that path has not been run here.
 *
 * Rules enforced, as libgdrapi + gdrdrv enforce them:
 *   - unknown gdr_t or handle: EINVAL; a handle belongs to the gdr_t that pinned it
 *   - pin records va rounded down and mapped_size rounded up to 64 KiB GPU pages
 *   - gdr_map: only after pin; fails (EINVAL) unless the pinned address is 64 KiB aligned;
 *     EAGAIN when already mapped; size must not exceed mapped_size
 *   - gdr_unmap of an unmapped handle or of the wrong address: EINVAL
 *   - gdr_unpin_buffer while still mapped: EBUSY (the header's "unmap first")
 *   - copies must stay inside a live mapping
 *   - gdr_close unmaps and unpins whatever is left
 *   - a mapping is not inherited across fork() (gdrdrv's VM_DONTCOPY; MADV_DONTFORK here)
 * gdr_map returns a second virtual address for the pinned pages (mremap with old_size 0, which
 * works for shared mappings), as a BAR mapping is a second address for device memory; memory
 * that is not a shared mapping gets its own address back instead.
 *
 * Test controls (environment, read on every call):
 *   GPUNIC_GDR_DOUBLE_FAIL=name[@n][,name[@n]...]   make call "name" (open, pin, map,
 *        get_info, unmap, unpin, driver_version) fail with EIO (open: NULL), from its n-th
 *        call on (default 1st)
 *   GPUNIC_GDR_DOUBLE_RUNTIME_VERSION=maj.min   what gdr_runtime_get_version reports (2.5)
 *   GPUNIC_GDR_DOUBLE_DRIVER_VERSION=maj.min    what gdr_driver_get_version reports (2.5)
 *   GPUNIC_GDR_DOUBLE_LOG=path                  append one line per call to this file
 * Every call is also recorded in memory, in order: gdr_double_trace() returns the record as
 * space-separated words ("open pin get_info map ... unmap unpin close"), a failed call as
 * "name:ERRNO" (e.g. "map:EAGAIN").
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define DOUBLE_API __attribute__((visibility("default")))

#define GPU_PAGE_SIZE (1ul << 16)
#define GPU_PAGE_MASK (~(GPU_PAGE_SIZE - 1))
#define TRACE_BYTES 16384
#define DOUBLE_MAGIC 0x67647264u /* "gdrd" */

/* The libgdrapi 2.x ABI, restated (gdrapi.h). */
typedef struct gdr *gdr_t;
typedef struct gdr_mh_s {
	unsigned long h;
} gdr_mh_t;

typedef enum gdr_mapping_type {
	GDR_MAPPING_TYPE_NONE = 0,
	GDR_MAPPING_TYPE_WC = 1,
	GDR_MAPPING_TYPE_CACHING = 2,
	GDR_MAPPING_TYPE_DEVICE = 3,
} gdr_mapping_type_t;

typedef struct gdr_info_v2 {
	uint64_t va;
	uint64_t mapped_size;
	uint32_t page_size;
	uint64_t tm_cycles;
	uint32_t cycles_per_ms;
	unsigned mapped : 1;
	unsigned wc_mapping : 1;
	gdr_mapping_type_t mapping_type;
} gdr_info_v2_t;

/* The record the legacy gdr_get_info symbol fills: v2 without mapping_type. */
typedef struct gdr_info_v1 {
	uint64_t va;
	uint64_t mapped_size;
	uint32_t page_size;
	uint64_t tm_cycles;
	uint32_t cycles_per_ms;
	unsigned mapped : 1;
	unsigned wc_mapping : 1;
} gdr_info_v1_t;

struct pin {
	struct pin *next;
	unsigned long handle;
	uint64_t addr, size;		/* as passed to gdr_pin_buffer */
	uint64_t va, mapped_size;	/* rounded out to GPU pages */
	void *map;			/* NULL: not mapped */
	size_t map_len;
	bool aliased;			/* map is a second mapping that must be unmapped */
};

struct gdr {
	uint32_t magic;
	struct gdr *next;
	struct pin *pins;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gdr *opened;
static unsigned long next_handle = 1;
static char trace[TRACE_BYTES];
static size_t trace_len;
static bool trace_overflow;

enum call_id { C_OPEN, C_PIN, C_MAP, C_GET_INFO, C_UNMAP, C_UNPIN, C_DRIVER_VERSION, C_MAX };

static unsigned call_counts[C_MAX];

static const char *const call_names[C_MAX] = {
	[C_OPEN] = "open",     [C_PIN] = "pin",	    [C_MAP] = "map",
	[C_GET_INFO] = "get_info", [C_UNMAP] = "unmap", [C_UNPIN] = "unpin",
	[C_DRIVER_VERSION] = "driver_version",
};

static const char *errno_name(int err)
{
	switch (err) {
	case EINVAL:
		return "EINVAL";
	case EAGAIN:
		return "EAGAIN";
	case EBUSY:
		return "EBUSY";
	case ENOMEM:
		return "ENOMEM";
	case EIO:
		return "EIO";
	default:
		return "E?";
	}
}

/* Record one call; lock held. */
static void record(const char *name, int err)
{
	const char *path = getenv("GPUNIC_GDR_DOUBLE_LOG");
	char word[64];
	int n;

	n = err ? snprintf(word, sizeof(word), "%s:%s", name, errno_name(err))
		: snprintf(word, sizeof(word), "%s", name);
	if (n < 0)
		return;
	if (trace_len + (size_t)n + 2 > sizeof(trace)) {
		trace_overflow = true;
	} else {
		if (trace_len)
			trace[trace_len++] = ' ';
		memcpy(trace + trace_len, word, (size_t)n + 1);
		trace_len += (size_t)n;
	}
	if (path && *path) {
		FILE *f = fopen(path, "a");

		if (f) {
			fprintf(f, "%s\n", word);
			fclose(f);
		}
	}
}

/* Whether GPUNIC_GDR_DOUBLE_FAIL asks this call to fail now; counts the call. Lock held. */
static bool injected(enum call_id id)
{
	const char *spec = getenv("GPUNIC_GDR_DOUBLE_FAIL");
	const char *name = call_names[id];
	size_t len = strlen(name);
	unsigned nth = ++call_counts[id];

	for (const char *p = spec; p && *p;) {
		const char *end = strchr(p, ',');
		size_t tok = end ? (size_t)(end - p) : strlen(p);

		if (tok >= len && strncmp(p, name, len) == 0 && (tok == len || p[len] == '@')) {
			unsigned from = tok == len ? 1 : (unsigned)strtoul(p + len + 1, NULL, 10);

			if (nth >= from)
				return true;
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

static void env_version(const char *var, int *major, int *minor)
{
	const char *v = getenv(var);
	int ma, mi;

	*major = 2;
	*minor = 5;
	if (v && sscanf(v, "%d.%d", &ma, &mi) == 2) {
		*major = ma;
		*minor = mi;
	}
}

static struct gdr *find_gdr(gdr_t g)
{
	for (struct gdr *it = opened; it; it = it->next)
		if (it == g && it->magic == DOUBLE_MAGIC)
			return it;
	return NULL;
}

static struct pin *find_pin(struct gdr *g, unsigned long handle)
{
	for (struct pin *p = g->pins; p; p = p->next)
		if (p->handle == handle)
			return p;
	return NULL;
}

/* For the copies, which get no gdr_t: search every open library state. */
static struct pin *find_pin_any(unsigned long handle)
{
	for (struct gdr *g = opened; g; g = g->next) {
		struct pin *p = find_pin(g, handle);

		if (p)
			return p;
	}
	return NULL;
}

static void drop_mapping(struct pin *p)
{
	if (p->aliased)
		munmap(p->map, p->map_len);
	p->map = NULL;
	p->map_len = 0;
	p->aliased = false;
}

DOUBLE_API gdr_t gdr_open(void)
{
	struct gdr *g = NULL;

	pthread_mutex_lock(&lock);
	if (injected(C_OPEN)) {
		record("open", EIO);
		errno = EIO;
		goto out;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		record("open", ENOMEM);
		goto out;
	}
	g->magic = DOUBLE_MAGIC;
	g->next = opened;
	opened = g;
	record("open", 0);
out:
	pthread_mutex_unlock(&lock);
	return g;
}

DOUBLE_API int gdr_close(gdr_t handle)
{
	struct gdr *g, **link;

	pthread_mutex_lock(&lock);
	g = find_gdr(handle);
	if (!g) {
		record("close", EINVAL);
		pthread_mutex_unlock(&lock);
		return EINVAL;
	}
	/* What the caller left behind is cleaned up, and recorded so tests can tell. */
	while (g->pins) {
		struct pin *p = g->pins;

		if (p->map) {
			drop_mapping(p);
			record("close_unmap", 0);
		}
		g->pins = p->next;
		free(p);
		record("close_unpin", 0);
	}
	for (link = &opened; *link != g; link = &(*link)->next)
		;
	*link = g->next;
	g->magic = 0;
	free(g);
	record("close", 0);
	pthread_mutex_unlock(&lock);
	return 0;
}

DOUBLE_API int gdr_pin_buffer(gdr_t handle, unsigned long addr, size_t size, uint64_t p2p_token,
			      uint32_t va_space, gdr_mh_t *mh)
{
	struct gdr *g;
	struct pin *p;
	int ret = 0;

	(void)p2p_token;
	(void)va_space;
	pthread_mutex_lock(&lock);
	g = find_gdr(handle);
	if (!g || !mh || !size || addr + size < addr) {
		ret = EINVAL;
		goto out;
	}
	if (injected(C_PIN)) {
		ret = EIO;
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		ret = ENOMEM;
		goto out;
	}
	p->handle = next_handle++;
	p->addr = addr;
	p->size = size;
	p->va = addr & GPU_PAGE_MASK;
	p->mapped_size = ((addr + size + GPU_PAGE_SIZE - 1) & GPU_PAGE_MASK) - p->va;
	p->next = g->pins;
	g->pins = p;
	mh->h = p->handle;
out:
	record("pin", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

DOUBLE_API int gdr_unpin_buffer(gdr_t handle, gdr_mh_t mh)
{
	struct gdr *g;
	struct pin *p = NULL, **link;
	int ret = 0;

	pthread_mutex_lock(&lock);
	g = find_gdr(handle);
	if (g)
		p = find_pin(g, mh.h);
	if (!p) {
		ret = EINVAL;
		goto out;
	}
	if (p->map) {
		ret = EBUSY; /* gdrapi.h: gdr_unmap before gdr_unpin_buffer */
		goto out;
	}
	if (injected(C_UNPIN)) {
		ret = EIO;
		goto out;
	}
	for (link = &g->pins; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	free(p);
out:
	record("unpin", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

static int get_info_locked(gdr_t handle, gdr_mh_t mh, gdr_info_v2_t *info)
{
	struct gdr *g = find_gdr(handle);
	struct pin *p = g ? find_pin(g, mh.h) : NULL;

	if (!p || !info)
		return EINVAL;
	if (injected(C_GET_INFO))
		return EIO;
	memset(info, 0, sizeof(*info));
	info->va = p->va;
	info->mapped_size = p->mapped_size;
	info->page_size = (uint32_t)GPU_PAGE_SIZE;
	info->mapped = p->map != NULL;
	info->wc_mapping = p->map != NULL;
	info->mapping_type = p->map ? GDR_MAPPING_TYPE_WC : GDR_MAPPING_TYPE_NONE;
	return 0;
}

DOUBLE_API int gdr_get_info_v2(gdr_t handle, gdr_mh_t mh, gdr_info_v2_t *info)
{
	int ret;

	pthread_mutex_lock(&lock);
	ret = get_info_locked(handle, mh, info);
	record("get_info", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

DOUBLE_API int gdr_get_info(gdr_t handle, gdr_mh_t mh, gdr_info_v1_t *info)
{
	gdr_info_v2_t v2;
	int ret;

	pthread_mutex_lock(&lock);
	ret = info ? get_info_locked(handle, mh, &v2) : EINVAL;
	if (!ret) {
		memset(info, 0, sizeof(*info));
		info->va = v2.va;
		info->mapped_size = v2.mapped_size;
		info->page_size = v2.page_size;
		info->mapped = v2.mapped;
		info->wc_mapping = v2.wc_mapping;
	}
	record("get_info_v1", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

DOUBLE_API int gdr_map(gdr_t handle, gdr_mh_t mh, void **va, size_t size)
{
	struct gdr *g;
	struct pin *p = NULL;
	void *alias;
	int ret = 0;

	pthread_mutex_lock(&lock);
	g = find_gdr(handle);
	if (g)
		p = find_pin(g, mh.h);
	if (!p || !va || !size) {
		ret = EINVAL;
		goto out;
	}
	if (p->map) {
		ret = EAGAIN;
		goto out;
	}
	/* gdrdrv's mmap refuses a pin that does not start on a GPU page (offset != 0). */
	if (p->addr & ~GPU_PAGE_MASK || size > p->mapped_size) {
		ret = EINVAL;
		goto out;
	}
	if (injected(C_MAP)) {
		ret = EIO;
		goto out;
	}
	alias = mremap((void *)(uintptr_t)p->va, 0, p->mapped_size, MREMAP_MAYMOVE);
	if (alias != MAP_FAILED) {
		/* gdrdrv sets VM_DONTCOPY: a fork()ed child never inherits the mapping. */
		madvise(alias, p->mapped_size, MADV_DONTFORK);
		p->map = alias;
		p->aliased = true;
	} else {
		p->map = (void *)(uintptr_t)p->va;
	}
	p->map_len = p->mapped_size;
	*va = p->map;
out:
	record("map", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

DOUBLE_API int gdr_unmap(gdr_t handle, gdr_mh_t mh, void *va, size_t size)
{
	struct gdr *g;
	struct pin *p = NULL;
	int ret = 0;

	(void)size;
	pthread_mutex_lock(&lock);
	g = find_gdr(handle);
	if (g)
		p = find_pin(g, mh.h);
	if (!p || !p->map || va != p->map) {
		ret = EINVAL;
		goto out;
	}
	if (injected(C_UNMAP)) {
		ret = EIO;
		goto out;
	}
	drop_mapping(p);
out:
	record("unmap", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

static int copy_check(unsigned long handle, const void *map_ptr, size_t size)
{
	struct pin *p = find_pin_any(handle);
	uintptr_t lo, hi, at = (uintptr_t)map_ptr;

	if (!p || !p->map)
		return EINVAL;
	lo = (uintptr_t)p->map;
	hi = lo + p->map_len;
	if (at < lo || at > hi || size > hi - at)
		return EINVAL;
	return 0;
}

DOUBLE_API int gdr_copy_to_mapping(gdr_mh_t mh, void *map_d_ptr, const void *h_ptr, size_t size)
{
	int ret;

	pthread_mutex_lock(&lock);
	ret = copy_check(mh.h, map_d_ptr, size);
	if (!ret)
		memcpy(map_d_ptr, h_ptr, size);
	record("copy_to", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

DOUBLE_API int gdr_copy_from_mapping(gdr_mh_t mh, void *h_ptr, const void *map_d_ptr, size_t size)
{
	int ret;

	pthread_mutex_lock(&lock);
	ret = copy_check(mh.h, map_d_ptr, size);
	if (!ret)
		memcpy(h_ptr, map_d_ptr, size);
	record("copy_from", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

DOUBLE_API void gdr_runtime_get_version(int *major, int *minor)
{
	pthread_mutex_lock(&lock);
	env_version("GPUNIC_GDR_DOUBLE_RUNTIME_VERSION", major, minor);
	record("runtime_version", 0);
	pthread_mutex_unlock(&lock);
}

DOUBLE_API int gdr_driver_get_version(gdr_t handle, int *major, int *minor)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!find_gdr(handle) || !major || !minor)
		ret = EINVAL;
	else if (injected(C_DRIVER_VERSION))
		ret = EIO;
	else
		env_version("GPUNIC_GDR_DOUBLE_DRIVER_VERSION", major, minor);
	record("driver_version", ret);
	pthread_mutex_unlock(&lock);
	return ret;
}

/* ---- test-side queries (not part of libgdrapi) ---- */

/* The call record so far; a copy the caller must free(). "overflow" if it filled up. */
DOUBLE_API char *gdr_double_trace(void)
{
	char *copy;

	pthread_mutex_lock(&lock);
	copy = strdup(trace_overflow ? "overflow" : trace);
	pthread_mutex_unlock(&lock);
	return copy;
}

DOUBLE_API void gdr_double_trace_reset(void)
{
	pthread_mutex_lock(&lock);
	trace_len = 0;
	trace[0] = '\0';
	trace_overflow = false;
	pthread_mutex_unlock(&lock);
}

/* Pins (and, in *mapped, mappings) alive in every open library state. */
DOUBLE_API int gdr_double_live(int *mapped)
{
	int pins = 0, maps = 0;

	pthread_mutex_lock(&lock);
	for (struct gdr *g = opened; g; g = g->next) {
		for (struct pin *p = g->pins; p; p = p->next) {
			pins++;
			maps += p->map != NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	if (mapped)
		*mapped = maps;
	return pins;
}
