// SPDX-License-Identifier: MIT
/*
 * gpunic doctor, the judging part: turns what doctor_probe.c found into rows of
 * "scenario | needs | available | verdict", names the likely cause of each failure, and prints
 * the lot as a table or as one JSON object.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "doctor_report.h"
#include "outfile.h"

static const char *const verdict_names[DOC_VERDICT_MAX] = {
	[DOC_WORKS] = "works",
	[DOC_FALLBACK] = "fallback",
	[DOC_DEGRADED] = "degraded",
	[DOC_WAIVED] = "waived",
	[DOC_NO] = "no",
};

const char *doc_verdict_str(enum doc_verdict v)
{
	return (unsigned)v < DOC_VERDICT_MAX ? verdict_names[v] : "?";
}

const char *doc_handler_str(enum doc_handler h)
{
	switch (h) {
	case DOC_HANDLER_GPU_DB:
		return "GPU_DB";
	case DOC_HANDLER_CPU_PROXY:
		return "CPU_PROXY";
	case DOC_HANDLER_GPU_BF:
		return "GPU_BF";
	case DOC_HANDLER_AUTO:
		return "AUTO";
	}
	return "?";
}

const char *doc_executor_str(enum doc_executor e)
{
	return e == DOC_EXEC_GPU ? "gpu" : "cpu";
}

static __attribute__((format(printf, 2, 3))) void put(char *dst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, DOC_TEXT, fmt, ap);
	va_end(ap);
}

static struct doc_row *add_row(struct doc_report *r, const char *section, bool requested,
			       enum doc_verdict v)
{
	struct doc_row *row;

	/* The rows are a fixed list (18 at most), well under DOC_MAX_ROWS; clamp anyway. */
	if (r->nrows < DOC_MAX_ROWS)
		r->nrows++;
	row = &r->rows[r->nrows - 1];
	memset(row, 0, sizeof(*row));
	row->section = section;
	row->requested = requested;
	row->verdict = v;
	return row;
}

/* ---------------------------------------------------------------- likely causes */

static bool gpu_exec_ok(const struct doc_facts *f)
{
	return f->gpu_ret == 0 && f->gpu.present && f->gpu.can_map_host;
}

static void gpu_cause(const struct doc_facts *f, char *out)
{
	if (f->gpu.present && !f->gpu.can_map_host)
		put(out, "this GPU cannot map host memory (canMapHostMemory 0): the softnic's "
		    "doorbell and queues must be host-pinned memory the GPU reaches");
	else if (strstr(f->gpu.reason, "built without CUDA"))
		put(out, "gpunic was built without CUDA: rebuild on a host where nvcc is found");
	else if (!f->nvidia_dev && !f->nvidia_driver[0])
		put(out, "no GPU: no /dev/nvidia0 and no NVIDIA kernel driver loaded "
		    "(/proc/driver/nvidia/version missing)");
	else if (strstr(f->gpu.reason, "insufficient"))
		put(out, "driver too old for the CUDA runtime gpunic was built with (%s)",
		    f->nvidia_driver[0] ? f->nvidia_driver : "driver version unknown");
	else if (strstr(f->caps.gpu_reason, "cannot load"))
		put(out, "the CUDA driver library (libcuda.so.1) is not installed");
	else
		put(out, "no usable CUDA device: %s", f->gpu.reason);
}

static void iommu_note(const struct doc_facts *f, char *out)
{
	if (!f->iommu_on)
		put(out, "IOMMU off");
	else
		put(out, "IOMMU on (%u unit%s in /sys/class/iommu%s%s%s)", f->iommu_units,
		    f->iommu_units == 1 ? "" : "s", f->iommu_cmdline[0] ? "; cmdline: " : "",
		    f->iommu_cmdline, f->iommu_pt ? ", passthrough" : "");
}

/* Why GDRCopy is not usable, from the mem layer's or the sanity suite's reason. */
static void gdr_cause(const struct doc_facts *f, const char *reason, char *out)
{
	char iommu[DOC_TEXT];

	if (strstr(reason, "GPUNIC_GDRCOPY=0"))
		put(out, "turned off by GPUNIC_GDRCOPY=0");
	else if (strstr(reason, "cannot load") || strstr(reason, "not installed"))
		put(out, "library not installed: %s is not on the loader path (install GDRCopy, "
		    "or point GPUNIC_GDRAPI_LIB at it)", f->sanity.lib);
	else if (strstr(reason, "gdr_open"))
		put(out, "%s", f->gdrdrv_err ? f->gdrdrv_why :
		    "gdr_open failed although /dev/gdrdrv opens: library and module mismatch?");
	else if (strstr(reason, "older than"))
		put(out, "GDRCopy too old: %s", reason);
	else if (strncmp(reason, "no GPU", 6) == 0)
		put(out, "no GPU, so nothing to map");
	else if (strstr(reason, "fork"))
		put(out, "a fork()ed child inherits the BAR mapping: gdrdrv without VM_DONTCOPY "
		    "(upgrade GDRCopy)");
	else if (strstr(reason, "after gdr_close"))
		put(out, "mappings outlive gdr_close: library or gdrdrv bug (upgrade GDRCopy)");
	else if (strstr(reason, "driver_get_version"))
		put(out, "gdrdrv does not answer its version query: module and library mismatch "
		    "(load the gdrdrv of the same GDRCopy release)");
	else if (strstr(reason, "gdr_unmap") || strstr(reason, "gdr_unpin") ||
		 strstr(reason, "unmap/unpin"))
		put(out, "unmap or unpin refused: library or gdrdrv bug (upgrade GDRCopy)");
	else if (strstr(reason, "succeeded") || strstr(reason, "accepted"))
		put(out, "the library accepts an invalid call: library or gdrdrv bug (upgrade "
		    "GDRCopy)");
	else if (strstr(reason, "differs") || strstr(reason, "wrong data") ||
		 strstr(reason, "did not reach") || strstr(reason, "wrote past"))
		put(out, "data through the mapping does not match device memory: copy routine "
		    "or mapping type broken on this CPU/platform");
	else if (strstr(reason, "pin") || strstr(reason, "map") || strstr(reason, "probe")) {
		iommu_note(f, iommu);
		put(out, "GPU without BAR mapping (GPUDirect RDMA) support, BAR1 exhausted, or the "
		    "IOMMU in the way; %s", iommu);
	} else {
		put(out, "%s", reason);
	}
}

static const struct gpunic_sanity_result *first_with(const struct gpunic_sanity_report *s,
						     enum gpunic_sanity_status st)
{
	for (unsigned i = 0; i < s->count; i++)
		if (s->tests[i].status == st)
			return &s->tests[i];
	return NULL;
}

/* ---------------------------------------------------------------- the rows */

static void rows_executor(const struct doc_request *req, const struct doc_facts *f,
			  struct doc_report *r)
{
	struct doc_row *row;

	row = add_row(r, "executor", req->executor == DOC_EXEC_CPU, DOC_WORKS);
	put(row->scenario, "CPU executor: host threads run the data path");
	put(row->needs, "host threads and plain host memory");
	put(row->available, "%u CPU%s", f->cpus, f->cpus == 1 ? "" : "s");
	put(row->detail, "every queue in HOST memory; no GPU involved");

	row = add_row(r, "executor", req->executor == DOC_EXEC_GPU,
		      gpu_exec_ok(f) ? DOC_WORKS : DOC_NO);
	put(row->scenario, "GPU executor: a persistent kernel runs the data path");
	put(row->needs, "a CUDA GPU that maps host memory; gpunic built with CUDA");
	if (f->gpu.present)
		put(row->available, "%s (sm_%d%d, %d SMs), driver %d, runtime %d, "
		    "canMapHostMemory %s, unified addressing %s", f->gpu.name, f->gpu.cc_major,
		    f->gpu.cc_minor, f->gpu.sm_count, f->gpu.driver_version,
		    f->gpu.runtime_version, f->gpu.can_map_host ? "yes" : "no",
		    f->gpu.unified_addressing ? "yes" : "no");
	else
		put(row->available, "no GPU: %s", f->gpu.reason);
	if (row->verdict == DOC_NO) {
		gpu_cause(f, row->cause);
		put(row->detail, "cannot run here; the CPU executor can");
	} else {
		put(row->detail, "the GPU polls host-pinned queues and rings the doorbell");
	}
}

static void rows_handler(const struct doc_request *req, const struct doc_facts *f,
			 struct doc_report *r)
{
	bool gpu = req->executor == DOC_EXEC_GPU;
	unsigned busy = gpu ? 1 : 2;	/* busy-polling threads before the proxy */
	enum doc_verdict db, proxy;
	struct doc_row *row;

	db = !gpu || gpu_exec_ok(f) ? DOC_WORKS : DOC_NO;
	row = add_row(r, "handler", req->handler == DOC_HANDLER_GPU_DB, db);
	put(row->scenario, "GPU_DB handler (%s executor): the executor stores the doorbell "
	    "word, the softnic polls it", doc_executor_str(req->executor));
	if (gpu) {
		put(row->needs, "the GPU stores into host-pinned memory the softnic polls "
		    "(canMapHostMemory)");
		put(row->available, f->gpu.present ? "canMapHostMemory %s" : "no GPU%s",
		    f->gpu.present ? (f->gpu.can_map_host ? "yes" : "no") : "");
	} else {
		put(row->needs, "nothing beyond host memory");
		put(row->available, "host memory");
	}
	if (db == DOC_NO)
		gpu_cause(f, row->cause);
	put(row->detail, db == DOC_NO ? "cannot work here" :
	    "no CPU between the executor and the NIC");

	/* GPU_BF needs what GPU_DB needs: stores into memory the softnic polls */
	row = add_row(r, "handler", req->handler == DOC_HANDLER_GPU_BF, db);
	put(row->scenario, "GPU_BF handler (%s executor): the executor writes each one-block WQE "
	    "whole into the BlueFlame page the softnic polls", doc_executor_str(req->executor));
	put(row->needs, gpu ? "the GPU stores into host-pinned memory the softnic polls "
	    "(canMapHostMemory)" : "nothing beyond host memory");
	put(row->available, gpu ? (f->gpu.present ? "canMapHostMemory %s" : "no GPU%s") : "%s",
	    gpu ? (f->gpu.present ? (f->gpu.can_map_host ? "yes" : "no") : "") : "host memory");
	if (db == DOC_NO)
		gpu_cause(f, row->cause);
	put(row->detail, db == DOC_NO ? "cannot work here" :
	    gpu ? "no doorbell and no fence per WQE: sealed lines, one PCIe crossing each" :
		  "no doorbell per WQE: one cache line per WQE");

	if (gpu && !gpu_exec_ok(f))
		proxy = DOC_NO;
	else
		proxy = f->cpus >= busy + 1 ? DOC_WORKS : DOC_DEGRADED;
	row = add_row(r, "handler", req->handler == DOC_HANDLER_CPU_PROXY, proxy);
	put(row->scenario, "CPU_PROXY handler (%s executor): a proxy thread forwards the "
	    "producer index", doc_executor_str(req->executor));
	put(row->needs, "a spare CPU core for the proxy thread%s",
	    gpu ? ", and a GPU that maps host memory" : "");
	put(row->available, "%u CPU%s for %u busy-polling thread%s (%s)", f->cpus,
	    f->cpus == 1 ? "" : "s", busy + 1, busy + 1 == 1 ? "" : "s",
	    gpu ? "softnic, proxy" : "executor, softnic, proxy");
	if (proxy == DOC_NO) {
		gpu_cause(f, row->cause);
		put(row->detail, "cannot work here");
	} else if (proxy == DOC_DEGRADED) {
		put(row->detail, "works, but the pollers share cores (adaptive back-off): "
		    "latency suffers");
		put(row->cause, "only %u CPU%s in this process's affinity mask", f->cpus,
		    f->cpus == 1 ? "" : "s");
	} else {
		put(row->detail, "one more CPU thread on the path");
	}

	/* AUTO: gpunic_qp_create resolves it to GPU_BF (src/nic/qp.c). */
	row = add_row(r, "handler", req->handler == DOC_HANDLER_AUTO, db);
	put(row->scenario, "AUTO handler (%s executor)", doc_executor_str(req->executor));
	put(row->needs, "what the mode it picks needs");
	put(row->available, "picks GPU_BF");
	put(row->detail, "GPU_BF because the softnic polls the BlueFlame page itself: one line "
	    "per WQE, no doorbell, the lowest-latency mode on one host%s",
	    db == DOC_NO ? "; and GPU_BF cannot work" : "");
	if (db == DOC_NO)
		gpu_cause(f, row->cause);
}

static const char *const placement_desc[GPUNIC_MEM_PLACEMENT_MAX] = {
	[GPUNIC_MEM_HOST] = "plain host memory",
	[GPUNIC_MEM_GPU] = "device memory",
	[GPUNIC_MEM_GPU_CPU] = "device memory the CPU writes (GDRCopy BAR mapping)",
	[GPUNIC_MEM_CPU_GPU] = "host-pinned memory mapped into the GPU",
};

static const char *const placement_needs[GPUNIC_MEM_PLACEMENT_MAX] = {
	[GPUNIC_MEM_HOST] = "nothing",
	[GPUNIC_MEM_GPU] = "a GPU",
	[GPUNIC_MEM_GPU_CPU] = "a GPU; GDRCopy (libgdrapi + gdrdrv) for the BAR path",
	[GPUNIC_MEM_CPU_GPU] = "a GPU",
};

static void rows_memory(const struct doc_request *req, const struct doc_facts *f,
			struct doc_report *r)
{
	for (int p = 0; p < GPUNIC_MEM_PLACEMENT_MAX; p++) {
		const struct doc_placement *pl = &f->placements[p];
		enum doc_verdict v = DOC_NO;
		struct doc_row *row;

		if (pl->ok)
			v = pl->backend == GPUNIC_MEM_BACKEND_PINNED_FALLBACK ? DOC_FALLBACK :
										 DOC_WORKS;
		row = add_row(r, "memory", req->placement == p, v);
		put(row->scenario, "%s placement: %s", gpunic_mem_placement_str(p),
		    placement_desc[p]);
		put(row->needs, "%s", placement_needs[p]);
		put(row->available, "%s%s", pl->detail,
		    f->caps.fake_gpu && p != GPUNIC_MEM_HOST ?
		    " [GPUNIC_MEM_FAKE_GPU=1: host memory posing as device memory]" : "");
		if (v == DOC_FALLBACK) {
			put(row->detail, "falls back to host-pinned memory (CPU_GPU)");
			gdr_cause(f, f->caps.gdrcopy_reason, row->cause);
		} else if (v == DOC_NO) {
			put(row->detail, "unavailable");
			if (!f->caps.gpu)
				gpu_cause(f, row->cause);
		} else {
			put(row->detail, "backend %s", gpunic_mem_backend_str(pl->backend));
		}
	}
}

static void rows_gdrcopy(const struct doc_request *req, const struct doc_facts *f,
			 struct doc_report *r)
{
	const struct gpunic_sanity_report *s = &f->sanity;
	const struct gpunic_sanity_result *bad = first_with(s, GPUNIC_SANITY_FAILED);
	const struct gpunic_sanity_result *waived = first_with(s, GPUNIC_SANITY_WAIVED);
	const struct gpunic_sanity_result *open = s->count ? &s->tests[0] : NULL;
	int rt_major = f->caps.gdr_runtime_major, rt_minor = f->caps.gdr_runtime_minor;
	int drv_major = f->caps.gdr_driver_major, drv_minor = f->caps.gdr_driver_minor;
	enum doc_handler h = req->handler == DOC_HANDLER_CPU_PROXY ? DOC_HANDLER_CPU_PROXY :
								      DOC_HANDLER_GPU_DB;
	char lib[DOC_TEXT], drv[DOC_TEXT];
	struct doc_row *row;
	enum doc_verdict v;

	if (rt_major < 0) {
		rt_major = s->runtime_major;
		rt_minor = s->runtime_minor;
	}
	if (drv_major < 0) {
		drv_major = s->driver_major;
		drv_minor = s->driver_minor;
	}

	/* The library */
	if (rt_major >= 0)
		v = DOC_WORKS;
	else if (open && open->status == GPUNIC_SANITY_WAIVED &&
		 strstr(open->detail, "GPUNIC_GDRCOPY=0"))
		v = DOC_WAIVED;
	else
		v = DOC_NO;
	row = add_row(r, "gdrcopy", false, v);
	put(row->scenario, "GDRCopy library");
	put(row->needs, "libgdrapi.so.2 >= %d.%d, opened with dlopen", GPUNIC_GDR_MIN_MAJOR,
	    GPUNIC_GDR_MIN_MINOR);
	if (rt_major >= 0)
		put(row->available, "%s: %d.%d", s->lib, rt_major, rt_minor);
	else
		put(row->available, "%s: %s", s->lib, open ? open->detail : "not tried");
	put(row->detail, v == DOC_WORKS ? "loads" : v == DOC_WAIVED ? "not tried" :
	    "not loadable");
	if (v != DOC_WORKS)
		gdr_cause(f, open ? open->detail : "", row->cause);

	/* The module */
	row = add_row(r, "gdrcopy", false, f->gdrdrv_err ? DOC_NO : DOC_WORKS);
	put(row->scenario, "gdrdrv kernel module");
	put(row->needs, "/dev/gdrdrv present and read-write for this user");
	put(row->available, "%s", f->gdrdrv_why);
	if (drv_major >= 0)
		put(row->detail, "gdr_open works: gdrdrv %d.%d%s", drv_major, drv_minor,
		    f->gdrdrv_err ? " (reported by the library under test, not /dev/gdrdrv)" :
		    "");
	else
		put(row->detail, f->gdrdrv_err ? "GDRCopy cannot map GPU memory" : "opens");
	if (f->gdrdrv_err)
		put(row->cause, "%s", f->gdrdrv_why);

	/* The sanity suite */
	if (bad)
		v = DOC_NO;
	else if (!s->passed)
		v = DOC_WAIVED;
	else
		v = DOC_WORKS;
	row = add_row(r, "gdrcopy", false, v);
	put(row->scenario, "GDRCopy sanity suite (%u tests%s)", s->count,
	    s->fake_gpu ? ", fake GPU" : "");
	put(row->needs, "pin/map/unmap/unpin, copies both ways, fork, invalid calls refused");
	put(row->available, "%u passed, %u failed, %u waived", s->passed, s->failed, s->waived);
	if (bad) {
		put(row->detail, "%s failed: %s", bad->name, bad->detail);
		gdr_cause(f, bad->detail, row->cause);
	} else if (v == DOC_WAIVED) {
		put(row->detail, "nothing ran: %s", waived ? waived->detail : "no tests");
		gdr_cause(f, waived ? waived->detail : "", row->cause);
	} else {
		put(row->detail, s->waived ? "what ran passed; some tests waived" :
		    "every test passed");
	}

	/* What it means for the loopback: where the CQs live. */
	if (!f->caps.gpu)
		v = DOC_NO;
	else if (f->caps.gdrcopy)
		v = bad ? DOC_NO : DOC_WORKS;
	else
		v = DOC_FALLBACK;
	row = add_row(r, "gdrcopy", req->executor == DOC_EXEC_GPU, v);
	put(row->scenario, "%s loopback with CQs in GPU memory", doc_handler_str(h));
	put(row->needs, "GDRCopy: libgdrapi.so.2 + gdrdrv module");
	if (rt_major >= 0)
		put(lib, "libgdrapi %d.%d", rt_major, rt_minor);
	else
		put(lib, "libgdrapi: no");
	if (drv_major >= 0)
		put(drv, "gdrdrv %d.%d", drv_major, drv_minor);
	else
		put(drv, "gdrdrv: %s", f->gdrdrv_err ? "no" : "yes");
	put(row->available, "%s; %s%s", lib, drv, f->caps.fake_gpu ? " [fake GPU]" : "");
	if (v == DOC_WORKS) {
		put(row->detail, "CQs and receive payload in GPU memory through GDRCopy mappings");
	} else if (v == DOC_FALLBACK) {
		put(row->detail, "falls back to host-pinned CQs (the GPU polls them over PCIe)");
		gdr_cause(f, f->caps.gdrcopy_reason, row->cause);
	} else if (!f->caps.gpu) {
		put(row->detail, "no GPU");
		gpu_cause(f, row->cause);
	} else {
		put(row->detail, "GDRCopy is in use but its sanity suite failed (%s); "
		    "GPUNIC_GDRCOPY=0 keeps CQs host-pinned", bad->name);
		gdr_cause(f, bad->detail, row->cause);
	}
}

static void rows_links(const struct doc_request *req, const struct doc_facts *f,
		       struct doc_report *r)
{
	static const char *const desc[DOC_LINK_MAX] = {
		[DOC_LINK_UDP] = "udp link: kernel UDP socket on the RoCEv2 port",
		[DOC_LINK_DGRAM] = "dgram link: one frame per datagram (QEMU -netdev socket)",
		[DOC_LINK_SHM] = "shm link: shared-memory cable between processes",
		[DOC_LINK_PACKET] = "packet link: raw Ethernet, AF_PACKET rings, BPF filter",
		[DOC_LINK_XDP] = "xdp link: AF_XDP, native (driver) XDP",
		[DOC_LINK_XDP_SKB] = "xdp link: AF_XDP, generic (SKB) XDP",
		[DOC_LINK_REQUESTED] = "requested link",
	};
	static const char *const needs[DOC_LINK_MAX] = {
		[DOC_LINK_UDP] = "UDP port 4791 free on the address (127.0.0.1 here)",
		[DOC_LINK_DGRAM] = "a free UDP port",
		[DOC_LINK_SHM] = "POSIX shared memory (/dev/shm): create and attach",
		[DOC_LINK_PACKET] = "CAP_NET_RAW; an Ethernet port (probed on a private veth pair)",
		[DOC_LINK_XDP] = "libxdp build, CAP_NET_ADMIN + CAP_BPF, a driver with XDP (veth here; zero-copy needs e.g. mlx5, ice, i40e)",
		[DOC_LINK_XDP_SKB] = "libxdp build, CAP_NET_ADMIN + CAP_BPF (any driver)",
		[DOC_LINK_REQUESTED] = "the spec opens",
	};

	for (int i = 0; i < DOC_LINK_MAX; i++) {
		const struct doc_link *l = &f->links[i];
		struct doc_row *row;

		if (i == DOC_LINK_REQUESTED && !req->link)
			continue;
		row = add_row(r, "link", i == DOC_LINK_REQUESTED, l->ok ? DOC_WORKS : DOC_NO);
		if (i == DOC_LINK_REQUESTED)
			put(row->scenario, "%s %s", desc[i], req->link);
		else
			put(row->scenario, "%s", desc[i]);
		put(row->needs, "%s", needs[i]);
		put(row->available, "%s: %s", l->what, l->ok ? "ok" : strerror(l->err));
		put(row->detail, "%s", l->detail);
		if (!l->ok)
			put(row->cause, "%s", l->cause);
	}
}

void doc_build(const struct doc_request *req, const struct doc_facts *f, struct doc_report *r)
{
	memset(r, 0, sizeof(*r));
	rows_executor(req, f, r);
	rows_handler(req, f, r);
	rows_memory(req, f, r);
	rows_gdrcopy(req, f, r);
	rows_links(req, f, r);
	r->ok = true;
	for (unsigned i = 0; i < r->nrows; i++)
		if (r->rows[i].requested && r->rows[i].verdict == DOC_NO)
			r->ok = false;
}

/* ---------------------------------------------------------------- text */

/* Take the next piece of @s that fits in @width columns, breaking at a space when it can. */
static size_t cell_piece(const char *s, size_t width, size_t *skip)
{
	size_t n = strlen(s), cut;

	*skip = 0;
	if (n <= width)
		return n;
	for (cut = width; cut > width / 2; cut--)
		if (s[cut] == ' ') {
			*skip = 1;
			return cut;
		}
	return width;
}

/* One table row, each cell wrapped inside its column. */
static void print_cells(FILE *out, const char *mark, const char *const cells[],
			const size_t widths[], int ncells)
{
	const char *pos[8];
	bool more = true;
	bool first = true;

	for (int i = 0; i < ncells; i++)
		pos[i] = cells[i];
	while (more) {
		more = false;
		fprintf(out, "%s ", first ? mark : " ");
		for (int i = 0; i < ncells; i++) {
			size_t skip, n = cell_piece(pos[i], widths[i], &skip);

			if (i + 1 < ncells)
				fprintf(out, "%-*.*s | ", (int)widths[i], (int)n, pos[i]);
			else
				fprintf(out, "%.*s\n", (int)n, pos[i]);
			pos[i] += n + skip;
			if (*pos[i])
				more = true;
		}
		first = false;
	}
}

static void print_gpu(FILE *out, const struct doc_facts *f)
{
	const struct gpunic_mem_caps *c = &f->caps;
	char iommu[DOC_TEXT];

	fprintf(out, "GPU, driver and CUDA runtime\n");
	if (f->gpu.present)
		fprintf(out, "  GPU %d: %s, compute capability %d.%d, %d SMs\n"
			"  CUDA driver %d, runtime %d; canMapHostMemory %s, unified addressing "
			"%s\n", f->gpu.device, f->gpu.name, f->gpu.cc_major, f->gpu.cc_minor,
			f->gpu.sm_count, f->gpu.driver_version, f->gpu.runtime_version,
			f->gpu.can_map_host ? "yes" : "no",
			f->gpu.unified_addressing ? "yes" : "no");
	else
		fprintf(out, "  no GPU (gpunic_gpu_probe): %s\n", f->gpu.reason);
	fprintf(out, "  NVIDIA kernel driver: %s; /dev/nvidia0: %s\n",
		f->nvidia_driver[0] ? f->nvidia_driver : "not loaded",
		f->nvidia_dev ? "yes" : "no");
	if (c->gpu && c->fake_gpu)
		fprintf(out, "  mem layer: %s: tests only, says nothing about a real GPU\n",
			c->gpu_name);
	else if (c->gpu)
		fprintf(out, "  mem layer: %s, CUDA driver API %d\n", c->gpu_name,
			c->cuda_driver_version);
	else
		fprintf(out, "  mem layer: %s\n", c->gpu_reason);
	iommu_note(f, iommu);
	fprintf(out, "  host: %u CPU%s; %s\n\n", f->cpus, f->cpus == 1 ? "" : "s", iommu);
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void print_gdrcopy(FILE *out, const struct doc_facts *f)
{
	const struct gpunic_sanity_report *s = &f->sanity;

	fprintf(out, "GDRCopy\n");
	fprintf(out, "  library tried: %s; mem layer: %s%s%s\n", s->lib,
		f->caps.gdrcopy ? "uses GDRCopy" : "does not use GDRCopy",
		f->caps.gdrcopy ? "" : ": ", f->caps.gdrcopy ? "" : f->caps.gdrcopy_reason);
	fprintf(out, "  /dev/gdrdrv: %s\n", f->gdrdrv_why);
	fprintf(out, "  sanity suite: %u passed, %u failed, %u waived%s\n", s->passed, s->failed,
		s->waived, s->fake_gpu ? " (fake GPU: says nothing about real BAR mappings)" : "");
	const struct gpunic_sanity_result *prev = NULL;
	size_t n = s->count < ARRAY_LEN(s->tests) ? s->count : ARRAY_LEN(s->tests);

	for (size_t i = 0; i < n; prev = &s->tests[i], i++) {
		const char *d = s->tests[i].detail;

		/* A run of tests waived for one reason prints it once. */
		if (prev && s->tests[i].status == GPUNIC_SANITY_WAIVED &&
		    prev->status == GPUNIC_SANITY_WAIVED && strcmp(d, prev->detail) == 0)
			d = "(the same reason)";
		fprintf(out, "    %-6s %-33s %s\n", gpunic_sanity_status_str(s->tests[i].status),
			s->tests[i].name, d);
	}
	fprintf(out, "\n");
}

static void print_queues(FILE *out, const struct doc_request *req, const struct doc_facts *f)
{
	fprintf(out, "Queue placement for the %s executor (gpunic_mem_placement_for)\n",
		doc_executor_str(req->executor));
	for (int k = 0; k < GPUNIC_QUEUE_KIND_MAX; k++)
		fprintf(out, "  %-12s %-8s %s\n", gpunic_queue_kind_str(k),
			gpunic_mem_placement_str(f->queues[k].placement),
			f->queues[k].why ? f->queues[k].why : "");
	fprintf(out, "\n");
}

void doc_print_text(FILE *out, const struct doc_request *req, const struct doc_facts *f,
		    const struct doc_report *r)
{
	static const size_t widths[4] = { 34, 30, 40, 34 };
	static const char *const head[4] = { "scenario", "needs", "available", "verdict" };
	char verdict[DOC_TEXT * 2];

	fprintf(out, "gpunic doctor: executor %s, handler %s, placement %s, link %s\n\n",
		doc_executor_str(req->executor), doc_handler_str(req->handler),
		req->placement >= 0 ? gpunic_mem_placement_str(req->placement) : "-",
		req->link ? req->link : "-");
	print_gpu(out, f);
	print_gdrcopy(out, f);
	print_queues(out, req, f);

	fprintf(out, "What works here (* = part of the requested setup)\n");
	print_cells(out, " ", head, widths, 4);
	for (unsigned i = 0; i < r->nrows; i++) {
		const struct doc_row *row = &r->rows[i];
		const char *cells[4] = { row->scenario, row->needs, row->available, verdict };

		snprintf(verdict, sizeof(verdict), "%s: %s", doc_verdict_str(row->verdict),
			 row->detail);
		print_cells(out, row->requested ? "*" : " ", cells, widths, 4);
		if (row->cause[0])
			fprintf(out, "    likely cause: %s\n", row->cause);
	}
	fprintf(out, "\n");
	if (r->ok) {
		fprintf(out, "Verdict: the requested setup works (%s executor, %s handler).\n",
			doc_executor_str(req->executor), doc_handler_str(req->handler));
		return;
	}
	fprintf(out, "Verdict: the requested setup cannot work:\n");
	for (unsigned i = 0; i < r->nrows; i++)
		if (r->rows[i].requested && r->rows[i].verdict == DOC_NO)
			fprintf(out, "  - %s: %s\n", r->rows[i].scenario,
				r->rows[i].cause[0] ? r->rows[i].cause : r->rows[i].detail);
}

/* ---------------------------------------------------------------- JSON */

static void jkey(FILE *out, bool *first, const char *key)
{
	fprintf(out, "%s", *first ? "" : ",");
	*first = false;
	json_fput_str(out, key);
	fputc(':', out);
}

static void jstr(FILE *out, bool *first, const char *key, const char *v)
{
	jkey(out, first, key);
	json_fput_str(out, v);
}

static void jint(FILE *out, bool *first, const char *key, long long v)
{
	jkey(out, first, key);
	fprintf(out, "%lld", v);
}

static void jbool(FILE *out, bool *first, const char *key, bool v)
{
	jkey(out, first, key);
	fputs(v ? "true" : "false", out);
}

/* "2.5", or null when not learned. */
static void jver(FILE *out, bool *first, const char *key, int major, int minor)
{
	jkey(out, first, key);
	if (major < 0)
		fputs("null", out);
	else
		fprintf(out, "\"%d.%d\"", major, minor);
}

static void json_gpu(FILE *out, const struct doc_facts *f)
{
	const struct gpunic_mem_caps *c = &f->caps;
	bool first = true;

	fputs("{", out);
	jbool(out, &first, "present", f->gpu.present);
	jint(out, &first, "device", f->gpu.device);
	jstr(out, &first, "name", f->gpu.name);
	jkey(out, &first, "compute_capability");
	if (f->gpu.present)
		fprintf(out, "\"%d.%d\"", f->gpu.cc_major, f->gpu.cc_minor);
	else
		fputs("null", out);
	jint(out, &first, "sm_count", f->gpu.sm_count);
	jint(out, &first, "driver_version", f->gpu.driver_version);
	jint(out, &first, "runtime_version", f->gpu.runtime_version);
	jbool(out, &first, "can_map_host_memory", f->gpu.can_map_host);
	jbool(out, &first, "unified_addressing", f->gpu.unified_addressing);
	jstr(out, &first, "reason", f->gpu.reason);
	jstr(out, &first, "nvidia_kernel_driver", f->nvidia_driver);
	jbool(out, &first, "dev_nvidia0", f->nvidia_dev);
	jkey(out, &first, "mem");
	{
		bool f2 = true;

		fputs("{", out);
		jbool(out, &f2, "gpu", c->gpu);
		jbool(out, &f2, "fake_gpu", c->fake_gpu);
		jstr(out, &f2, "gpu_name", c->gpu_name);
		jstr(out, &f2, "gpu_reason", c->gpu_reason);
		jint(out, &f2, "cuda_driver_version", c->cuda_driver_version);
		fputs("}", out);
	}
	fputs("}", out);
}

static void json_gdrcopy(FILE *out, const struct doc_facts *f)
{
	const struct gpunic_sanity_report *s = &f->sanity;
	const struct gpunic_mem_caps *c = &f->caps;
	bool first = true;

	fputs("{", out);
	jstr(out, &first, "lib", s->lib);
	jbool(out, &first, "in_use", c->gdrcopy);
	jstr(out, &first, "reason", c->gdrcopy_reason);
	jver(out, &first, "runtime_version",
	     c->gdr_runtime_major >= 0 ? c->gdr_runtime_major : s->runtime_major,
	     c->gdr_runtime_major >= 0 ? c->gdr_runtime_minor : s->runtime_minor);
	jver(out, &first, "driver_version",
	     c->gdr_driver_major >= 0 ? c->gdr_driver_major : s->driver_major,
	     c->gdr_driver_major >= 0 ? c->gdr_driver_minor : s->driver_minor);
	jkey(out, &first, "gdrdrv");
	{
		bool f2 = true;

		fputs("{", out);
		jbool(out, &f2, "openable", f->gdrdrv_err == 0);
		jint(out, &f2, "errno", f->gdrdrv_err);
		jstr(out, &f2, "detail", f->gdrdrv_why);
		fputs("}", out);
	}
	jkey(out, &first, "sanity");
	{
		bool f2 = true;

		fputs("{", out);
		jint(out, &f2, "ret", f->sanity_ret);
		jbool(out, &f2, "fake_gpu", s->fake_gpu);
		jint(out, &f2, "passed", s->passed);
		jint(out, &f2, "failed", s->failed);
		jint(out, &f2, "waived", s->waived);
		jkey(out, &f2, "tests");
		fputs("[", out);
		for (unsigned i = 0; i < s->count; i++) {
			bool f3 = true;

			fputs(i ? ",{" : "{", out);
			jstr(out, &f3, "name", s->tests[i].name);
			jstr(out, &f3, "checks", s->tests[i].checks);
			jstr(out, &f3, "status", gpunic_sanity_status_str(s->tests[i].status));
			jstr(out, &f3, "detail", s->tests[i].detail);
			jint(out, &f3, "elapsed_ms", s->tests[i].elapsed_ms);
			fputs("}", out);
		}
		fputs("]}", out);
	}
	fputs("}", out);
}

static void json_row(FILE *out, const struct doc_row *row)
{
	bool first = true;

	fputs("{", out);
	jstr(out, &first, "section", row->section);
	jstr(out, &first, "scenario", row->scenario);
	jstr(out, &first, "needs", row->needs);
	jstr(out, &first, "available", row->available);
	jstr(out, &first, "verdict", doc_verdict_str(row->verdict));
	jstr(out, &first, "detail", row->detail);
	jstr(out, &first, "cause", row->cause);
	jbool(out, &first, "requested", row->requested);
	fputs("}", out);
}

/* The rows of one section as an object keyed by @keys[i] (rows come in @keys order). */
static void json_section(FILE *out, const struct doc_report *r, const char *section,
			 const char *const keys[], unsigned nkeys)
{
	unsigned k = 0;

	fputs("{", out);
	for (unsigned i = 0; i < r->nrows && k < nkeys; i++) {
		if (strcmp(r->rows[i].section, section))
			continue;
		if (k)
			fputs(",", out);
		json_fput_str(out, keys[k++]);
		fputs(":", out);
		json_row(out, &r->rows[i]);
	}
	fputs("}", out);
}

void doc_print_json(FILE *out, const struct doc_request *req, const struct doc_facts *f,
		    const struct doc_report *r)
{
	static const char *const executors[] = { "cpu", "gpu" };
	static const char *const handlers[] = { "GPU_DB", "GPU_BF", "CPU_PROXY", "AUTO" };
	static const char *const placements[] = { "HOST", "GPU", "GPU_CPU", "CPU_GPU" };
	bool first = true, f2;

	fputs("{", out);
	json_fput_version(out, ",");
	jint(out, &first, "exit_status", r->ok ? 0 : 1);
	jbool(out, &first, "ok", r->ok);
	jkey(out, &first, "request");
	f2 = true;
	fputs("{", out);
	jstr(out, &f2, "executor", doc_executor_str(req->executor));
	jstr(out, &f2, "handler", doc_handler_str(req->handler));
	jkey(out, &f2, "placement");
	if (req->placement >= 0)
		json_fput_str(out, gpunic_mem_placement_str(req->placement));
	else
		fputs("null", out);
	jkey(out, &f2, "link");
	if (req->link)
		json_fput_str(out, req->link);
	else
		fputs("null", out);
	fputs("}", out);

	jkey(out, &first, "host");
	f2 = true;
	fputs("{", out);
	jint(out, &f2, "cpus", f->cpus);
	jbool(out, &f2, "iommu_on", f->iommu_on);
	jint(out, &f2, "iommu_units", f->iommu_units);
	jbool(out, &f2, "iommu_passthrough", f->iommu_pt);
	jstr(out, &f2, "iommu_cmdline", f->iommu_cmdline);
	fputs("}", out);

	jkey(out, &first, "gpu");
	json_gpu(out, f);
	jkey(out, &first, "gdrcopy");
	json_gdrcopy(out, f);
	jkey(out, &first, "executors");
	json_section(out, r, "executor", executors, 2);
	jkey(out, &first, "handlers");
	json_section(out, r, "handler", handlers, 4);
	jkey(out, &first, "placements");
	json_section(out, r, "memory", placements, 4);

	jkey(out, &first, "queues");
	fputs("[", out);
	for (int k = 0; k < GPUNIC_QUEUE_KIND_MAX; k++) {
		f2 = true;
		fputs(k ? ",{" : "{", out);
		jstr(out, &f2, "kind", gpunic_queue_kind_str(k));
		jstr(out, &f2, "placement", gpunic_mem_placement_str(f->queues[k].placement));
		jstr(out, &f2, "why", f->queues[k].why);
		fputs("}", out);
	}
	fputs("]", out);

	jkey(out, &first, "links");
	fputs("{", out);
	for (int i = 0, n = 0; i < DOC_LINK_MAX; i++) {
		const struct doc_link *l = &f->links[i];

		if (!l->name)
			continue;
		f2 = true;
		fputs(n++ ? "," : "", out);
		json_fput_str(out, l->name);
		fputs(":{", out);
		jstr(out, &f2, "tried", l->what);
		jbool(out, &f2, "ok", l->ok);
		jint(out, &f2, "errno", l->err);
		jstr(out, &f2, "detail", l->detail);
		jstr(out, &f2, "cause", l->cause);
		fputs("}", out);
	}
	fputs("}", out);

	jkey(out, &first, "table");
	fputs("[", out);
	for (unsigned i = 0; i < r->nrows; i++) {
		if (i)
			fputs(",", out);
		json_row(out, &r->rows[i]);
	}
	fputs("]}\n", out);
}
