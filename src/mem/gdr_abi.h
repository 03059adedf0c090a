/* SPDX-License-Identifier: MIT */
/*
 * Private to src/mem: the libgdrapi 2.x ABI (gdrapi.h), restated once for gdr.c and sanity.c,
 * and the loader both use. gdr_mh_t is a struct holding one unsigned long, passed by value;
 * gdr_info_v2_t is laid out as va, mapped_size, page_size, tm_cycles, cycles_per_ms, the mapped
 * and wc_mapping bit-fields, and mapping_type. Libraries older than the _v2 call export only
 * gdr_get_info, which fills the same record without mapping_type.
 */
#ifndef GPUNIC_MEM_GDR_ABI_H
#define GPUNIC_MEM_GDR_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gdr_handle_abi {
	unsigned long h;
};

struct gdr_info_abi {
	uint64_t va;
	uint64_t mapped_size;
	uint32_t page_size;
	uint64_t tm_cycles;
	uint32_t cycles_per_ms;
	unsigned mapped : 1;
	unsigned wc_mapping : 1;
	int mapping_type; /* _v2 only */
};

typedef struct gdr_lib_state *gdr_abi_t;

struct gdr_api {
	gdr_abi_t (*open)(void);
	int (*close)(gdr_abi_t g);
	int (*pin_buffer)(gdr_abi_t g, unsigned long addr, size_t size, uint64_t p2p_token,
			  uint32_t va_space, struct gdr_handle_abi *mh);
	int (*unpin_buffer)(gdr_abi_t g, struct gdr_handle_abi mh);
	int (*get_info)(gdr_abi_t g, struct gdr_handle_abi mh, struct gdr_info_abi *info);
	int (*map)(gdr_abi_t g, struct gdr_handle_abi mh, void **va, size_t size);
	int (*unmap)(gdr_abi_t g, struct gdr_handle_abi mh, void *va, size_t size);
	int (*copy_to_mapping)(struct gdr_handle_abi mh, void *map_d_ptr, const void *h_ptr,
			       size_t size);
	int (*copy_from_mapping)(struct gdr_handle_abi mh, void *h_ptr, const void *map_d_ptr,
				 size_t size);
	void (*runtime_get_version)(int *major, int *minor);
	int (*driver_get_version)(gdr_abi_t g, int *major, int *minor);
	/* optional (the 2.x releases that have it): gdr_get_attribute */
	int (*get_attribute)(gdr_abi_t g, int attr, int *v);
};

/* gdr_attr_t GDR_ATTR_USING_DMA_BUF_MMAP (2.6): the library maps through dma-buf, not gdrdrv. */
#define GDR_ATTR_USING_DMA_BUF_MMAP 3

/*
 * gdr_abi_load - dlopen @lib and take every call of struct gdr_api from it
 * @info_v2: set when get_info is gdr_get_info_v2 (fills mapping_type), else gdr_get_info
 * @missing: on ENOSYS, the symbol the library lacks
 * @dlerr: on ENOENT, dlerror()'s text (@dlerr_len bytes)
 * Return: 0 (*dl holds the library), ENOENT (it does not load) or ENOSYS (closed again).
 */
int gdr_abi_load(const char *lib, void **dl, struct gdr_api *api, bool *info_v2,
		 const char **missing, char *dlerr, size_t dlerr_len);

#endif
