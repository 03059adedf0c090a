// SPDX-License-Identifier: MIT
/* The GDRCopy test double on its own: it must enforce the rules it claims to (call order,
 * alignment, rounding, unknown handles, cleanup on close), since the mem tests trust it. */
#include "harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE64K (1ul << 16)

typedef struct gdr *gdr_t;
typedef struct {
	unsigned long h;
} gdr_mh_t;

struct info_v2 {
	uint64_t va;
	uint64_t mapped_size;
	uint32_t page_size;
	uint64_t tm_cycles;
	uint32_t cycles_per_ms;
	unsigned mapped : 1;
	unsigned wc_mapping : 1;
	int mapping_type;
};

static struct {
	gdr_t (*open)(void);
	int (*close)(gdr_t);
	int (*pin)(gdr_t, unsigned long, size_t, uint64_t, uint32_t, gdr_mh_t *);
	int (*unpin)(gdr_t, gdr_mh_t);
	int (*get_info)(gdr_t, gdr_mh_t, struct info_v2 *);
	int (*get_info_v1)(gdr_t, gdr_mh_t, void *);
	int (*map)(gdr_t, gdr_mh_t, void **, size_t);
	int (*unmap)(gdr_t, gdr_mh_t, void *, size_t);
	int (*copy_to)(gdr_mh_t, void *, const void *, size_t);
	int (*copy_from)(gdr_mh_t, void *, const void *, size_t);
	void (*runtime_version)(int *, int *);
	int (*driver_version)(gdr_t, int *, int *);
	char *(*trace)(void);
	void (*trace_reset)(void);
	int (*live)(int *);
} d;

static void *sym(void *dl, const char *name)
{
	void *p = dlsym(dl, name);

	if (!p)
		harness_fail(__FILE__, __LINE__, "double lacks %s", name);
	return p;
}

static void load(void)
{
	void *dl = dlopen(GDRAPI_DOUBLE_PATH, RTLD_NOW);
	void *p;

	CHECK(dl != NULL);
#define LOAD(field, name)                              \
	do {                                           \
		p = sym(dl, name);                     \
		memcpy(&d.field, &p, sizeof(p));       \
	} while (0)
	LOAD(open, "gdr_open");
	LOAD(close, "gdr_close");
	LOAD(pin, "gdr_pin_buffer");
	LOAD(unpin, "gdr_unpin_buffer");
	LOAD(get_info, "gdr_get_info_v2");
	LOAD(get_info_v1, "gdr_get_info");
	LOAD(map, "gdr_map");
	LOAD(unmap, "gdr_unmap");
	LOAD(copy_to, "gdr_copy_to_mapping");
	LOAD(copy_from, "gdr_copy_from_mapping");
	LOAD(runtime_version, "gdr_runtime_get_version");
	LOAD(driver_version, "gdr_driver_get_version");
	LOAD(trace, "gdr_double_trace");
	LOAD(trace_reset, "gdr_double_trace_reset");
	LOAD(live, "gdr_double_live");
#undef LOAD
}

static bool trace_is(const char *want)
{
	char *t = d.trace();
	bool ok = strcmp(t, want) == 0;

	if (!ok)
		fprintf(stderr, "trace \"%s\"\nwant  \"%s\"\n", t, want);
	free(t);
	return ok;
}

/* Fake device memory: shared, so the double can alias it, and 64 KiB aligned at @base. */
static uint8_t *region(size_t len, void **raw, size_t *raw_len)
{
	*raw_len = len + PAGE64K;
	*raw = mmap(NULL, *raw_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(*raw != MAP_FAILED);
	return (uint8_t *)(((uintptr_t)*raw + PAGE64K - 1) & ~(PAGE64K - 1));
}

TEST(double_rounding_and_alignment)
{
	size_t raw_len;
	void *raw, *va = NULL;
	uint8_t *base;
	struct info_v2 info;
	gdr_mh_t mh;
	gdr_t g;

	load();
	base = region(3 * PAGE64K, &raw, &raw_len);
	g = d.open();
	CHECK(g != NULL);
	/* Unaligned pin: accepted, rounded out, but cannot be mapped (gdrdrv's offset rule). */
	CHECK_EQ(d.pin(g, (unsigned long)(base + 100), 1000, 0, 0, &mh), 0);
	CHECK_EQ(d.get_info(g, mh, &info), 0);
	CHECK_EQ(info.va, (uintptr_t)base);
	CHECK_EQ(info.mapped_size, PAGE64K);
	CHECK_EQ(info.page_size, PAGE64K);
	CHECK_EQ(info.mapped, 0);
	CHECK_EQ(d.map(g, mh, &va, PAGE64K), EINVAL);
	CHECK_EQ(d.unpin(g, mh), 0);
	/* Spanning a page boundary rounds up to two pages. */
	CHECK_EQ(d.pin(g, (unsigned long)(base + PAGE64K - 8), 16, 0, 0, &mh), 0);
	CHECK_EQ(d.get_info(g, mh, &info), 0);
	CHECK_EQ(info.va, (uintptr_t)base);
	CHECK_EQ(info.mapped_size, 2 * PAGE64K);
	CHECK_EQ(d.unpin(g, mh), 0);
	CHECK_EQ(d.close(g), 0);
	munmap(raw, raw_len);
}

TEST(double_call_order)
{
	size_t raw_len;
	void *raw, *va = NULL, *va2 = NULL;
	uint8_t *base;
	struct info_v2 info;
	gdr_mh_t mh, bogus = { .h = 9999 };
	gdr_t g;

	load();
	base = region(PAGE64K, &raw, &raw_len);
	g = d.open();
	CHECK_EQ(d.pin(g, (unsigned long)base, PAGE64K, 0, 0, &mh), 0);
	/* unmap before map, unknown handles */
	CHECK_EQ(d.unmap(g, mh, base, PAGE64K), EINVAL);
	CHECK_EQ(d.map(g, bogus, &va, PAGE64K), EINVAL);
	CHECK_EQ(d.unpin(g, bogus), EINVAL);
	CHECK_EQ(d.get_info(g, bogus, &info), EINVAL);
	CHECK_EQ(d.pin((gdr_t)(uintptr_t)0x1234, (unsigned long)base, 16, 0, 0, &mh) , EINVAL);
	/* map larger than pinned */
	CHECK_EQ(d.map(g, mh, &va, 2 * PAGE64K), EINVAL);
	CHECK_EQ(d.map(g, mh, &va, PAGE64K), 0);
	CHECK_EQ(d.get_info(g, mh, &info), 0);
	CHECK_EQ(info.mapped, 1);
	CHECK_EQ(info.wc_mapping, 1);
	CHECK_EQ(info.mapping_type, 1);
	CHECK_EQ(d.map(g, mh, &va2, PAGE64K), EAGAIN);
	CHECK_EQ(d.unpin(g, mh), EBUSY);
	CHECK_EQ(d.unmap(g, mh, (char *)va + 4096, PAGE64K), EINVAL);
	CHECK_EQ(d.unmap(g, mh, va, PAGE64K), 0);
	CHECK_EQ(d.unmap(g, mh, va, PAGE64K), EINVAL);
	CHECK_EQ(d.unpin(g, mh), 0);
	CHECK_EQ(d.unpin(g, mh), EINVAL);
	CHECK_EQ(d.close(g), 0);
	CHECK_EQ(d.close(g), EINVAL);
	CHECK(trace_is("open pin unmap:EINVAL map:EINVAL unpin:EINVAL get_info:EINVAL pin:EINVAL "
		       "map:EINVAL map get_info map:EAGAIN unpin:EBUSY unmap:EINVAL unmap "
		       "unmap:EINVAL unpin unpin:EINVAL close close:EINVAL"));
	munmap(raw, raw_len);
}

TEST(double_handle_belongs_to_its_gdr)
{
	size_t raw_len;
	void *raw, *va;
	uint8_t *base;
	gdr_mh_t mh;
	gdr_t g1, g2;

	load();
	base = region(PAGE64K, &raw, &raw_len);
	g1 = d.open();
	g2 = d.open();
	CHECK_EQ(d.pin(g1, (unsigned long)base, PAGE64K, 0, 0, &mh), 0);
	CHECK_EQ(d.map(g2, mh, &va, PAGE64K), EINVAL);
	CHECK_EQ(d.unpin(g2, mh), EINVAL);
	CHECK_EQ(d.unpin(g1, mh), 0);
	CHECK_EQ(d.close(g2), 0);
	CHECK_EQ(d.close(g1), 0);
	munmap(raw, raw_len);
}

TEST(double_map_aliases_and_copies)
{
	size_t raw_len;
	void *raw, *va = NULL;
	uint8_t *base, *m, buf[100];
	gdr_mh_t mh;
	gdr_t g;

	load();
	base = region(2 * PAGE64K, &raw, &raw_len);
	g = d.open();
	CHECK_EQ(d.pin(g, (unsigned long)base, 2 * PAGE64K, 0, 0, &mh), 0);
	CHECK_EQ(d.map(g, mh, &va, 2 * PAGE64K), 0);
	m = va;
	/* A second address for the same pages, like a BAR mapping. */
	CHECK(m != base);
	m[PAGE64K + 5] = 0x5a;
	CHECK_EQ(base[PAGE64K + 5], 0x5a);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	CHECK_EQ(d.copy_to(mh, m + 1000, buf, sizeof(buf)), 0);
	CHECK_MEM(base + 1000, buf, sizeof(buf));
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(d.copy_from(mh, buf, m + 1000, sizeof(buf)), 0);
	CHECK_EQ(buf[99], 99);
	/* Outside the mapping, or through the device address instead of the mapping. */
	CHECK_EQ(d.copy_to(mh, m + 2 * PAGE64K - 10, buf, 11), EINVAL);
	CHECK_EQ(d.copy_to(mh, base + 1000, buf, 10), EINVAL);
	CHECK_EQ(d.unmap(g, mh, va, 2 * PAGE64K), 0);
	CHECK_EQ(d.copy_to(mh, m, buf, 1), EINVAL);
	CHECK_EQ(d.unpin(g, mh), 0);
	CHECK_EQ(d.close(g), 0);
	munmap(raw, raw_len);
}

TEST(double_close_unpins_everything)
{
	size_t raw_len;
	void *raw, *va;
	uint8_t *base;
	gdr_mh_t a, b;
	int mapped = -1;
	gdr_t g;

	load();
	base = region(2 * PAGE64K, &raw, &raw_len);
	g = d.open();
	CHECK_EQ(d.pin(g, (unsigned long)base, PAGE64K, 0, 0, &a), 0);
	CHECK_EQ(d.pin(g, (unsigned long)base + PAGE64K, PAGE64K, 0, 0, &b), 0);
	CHECK_EQ(d.map(g, b, &va, PAGE64K), 0);
	CHECK_EQ(d.live(&mapped), 2);
	CHECK_EQ(mapped, 1);
	d.trace_reset();
	CHECK_EQ(d.close(g), 0);
	CHECK(trace_is("close_unmap close_unpin close_unpin close"));
	CHECK_EQ(d.live(&mapped), 0);
	CHECK_EQ(mapped, 0);
	munmap(raw, raw_len);
}

TEST(double_get_info_v1_layout)
{
	struct {
		uint64_t va, mapped_size;
		uint32_t page_size;
		uint64_t tm_cycles;
		uint32_t cycles_per_ms;
		unsigned mapped : 1, wc_mapping : 1;
		uint32_t guard; /* the v1 call must not write past its record */
	} v1;
	size_t raw_len;
	void *raw;
	uint8_t *base;
	gdr_mh_t mh;
	gdr_t g;

	load();
	base = region(PAGE64K, &raw, &raw_len);
	g = d.open();
	CHECK_EQ(d.pin(g, (unsigned long)base + 64, 64, 0, 0, &mh), 0);
	memset(&v1, 0xff, sizeof(v1));
	v1.guard = 0xdeadbeef;
	CHECK_EQ(d.get_info_v1(g, mh, &v1), 0);
	CHECK_EQ(v1.va, (uintptr_t)base);
	CHECK_EQ(v1.mapped_size, PAGE64K);
	CHECK_EQ(v1.page_size, PAGE64K);
	CHECK_EQ(v1.mapped, 0);
	CHECK_EQ(v1.guard, 0xdeadbeef);
	CHECK_EQ(d.close(g), 0);
	munmap(raw, raw_len);
}

TEST(double_failure_injection_and_versions)
{
	size_t raw_len;
	void *raw, *va;
	uint8_t *base;
	int ma = 0, mi = 0;
	gdr_mh_t mh;
	gdr_t g;

	load();
	base = region(PAGE64K, &raw, &raw_len);
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "open", 1);
	CHECK(d.open() == NULL);
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "pin,map@2", 1);
	g = d.open();
	CHECK(g != NULL);
	CHECK_EQ(d.pin(g, (unsigned long)base, PAGE64K, 0, 0, &mh), EIO);
	setenv("GPUNIC_GDR_DOUBLE_FAIL", "map@2", 1);
	CHECK_EQ(d.pin(g, (unsigned long)base, PAGE64K, 0, 0, &mh), 0);
	CHECK_EQ(d.map(g, mh, &va, PAGE64K), 0);
	CHECK_EQ(d.unmap(g, mh, va, PAGE64K), 0);
	CHECK_EQ(d.map(g, mh, &va, PAGE64K), EIO);
	CHECK_EQ(d.unpin(g, mh), 0);
	unsetenv("GPUNIC_GDR_DOUBLE_FAIL");
	d.runtime_version(&ma, &mi);
	CHECK_EQ(ma, 2);
	CHECK_EQ(mi, 5);
	setenv("GPUNIC_GDR_DOUBLE_RUNTIME_VERSION", "1.9", 1);
	setenv("GPUNIC_GDR_DOUBLE_DRIVER_VERSION", "3.1", 1);
	d.runtime_version(&ma, &mi);
	CHECK_EQ(ma, 1);
	CHECK_EQ(mi, 9);
	CHECK_EQ(d.driver_version(g, &ma, &mi), 0);
	CHECK_EQ(ma, 3);
	CHECK_EQ(mi, 1);
	CHECK_EQ(d.close(g), 0);
	CHECK(trace_is("open:EIO open pin:EIO pin map unmap map:EIO unpin runtime_version "
		       "runtime_version driver_version close"));
	munmap(raw, raw_len);
}

TEST(double_log_file)
{
	char path[] = "/tmp/gpunic_gdr_double_XXXXXX", line[64];
	FILE *f;
	int fd, n = 0;
	gdr_t g;

	load();
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	setenv("GPUNIC_GDR_DOUBLE_LOG", path, 1);
	g = d.open();
	CHECK_EQ(d.close(g), 0);
	unsetenv("GPUNIC_GDR_DOUBLE_LOG");
	f = fopen(path, "r");
	CHECK(f != NULL);
	CHECK(fgets(line, sizeof(line), f) && strcmp(line, "open\n") == 0);
	n++;
	CHECK(fgets(line, sizeof(line), f) && strcmp(line, "close\n") == 0);
	n++;
	CHECK(!fgets(line, sizeof(line), f));
	fclose(f);
	unlink(path);
	CHECK_EQ(n, 2);
}
