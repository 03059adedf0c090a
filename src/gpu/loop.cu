// SPDX-License-Identifier: MIT
/*
 * The persistent forwarder kernel: one GPU thread runs gpunic_loop_step() (loop_dev.h, the same
 * code the CPU executor runs) on a QP whose queues were placed for a GPU executor, until the
 * host raises the stop flag.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/loop_dev.h"

/* Host-pinned control block: the host writes stop, the kernel writes ready and prime_err. */
struct loop_ctl {
	uint32_t stop;
	uint32_t ready;
	int32_t prime_err;
	uint32_t pad;
};

/* What the kernel reads: the context and the QP description, copied to device memory. */
struct loop_dev_blob {
	struct gpunic_loop_ctx ctx;
	struct gpunic_dev_qp qp;
};

struct gpunic_gpu_loop {
	int device;
	struct loop_ctl *ctl;       /* host-pinned */
	struct loop_dev_blob *blob; /* device memory */
};

/* How long the host waits for the kernel to post its receives before giving up. */
#define LOOP_READY_TIMEOUT_NS 5000000000ull
/* Idle polls between two looks at the stop flag (each look is a read across PCIe). */
#define LOOP_STOP_CHECK_MASK 1023u

static __global__ void loop_kernel(struct loop_dev_blob *b, struct loop_ctl *ctl)
{
	struct gpunic_loop_ctx *c = &b->ctx;
	uint32_t idle = 0;
	int err;

	c->qp = &b->qp;
	err = gpunic_loop_prime(c);
	gpunic_dev_store_relaxed_u32((uint32_t *)&ctl->prime_err, (uint32_t)err);
	gpunic_dev_store_release_u32(&ctl->ready, 1);
	if (err)
		return;
	for (;;) {
		if (gpunic_loop_step(c) != 0) {
			idle = 0;
			continue;
		}
		if ((++idle & LOOP_STOP_CHECK_MASK) == 0 && gpunic_dev_load_relaxed_u32(&ctl->stop))
			break;
	}
	/* Leave the send queue drained of completions the NIC already wrote. */
	gpunic_loop_reap_sends(c);
}

extern "C" int gpunic_gpu_loop_start(int device, const struct gpunic_loop_ctx *ctx,
				     struct gpunic_gpu_loop **out)
{
	struct gpunic_gpu_loop *l;
	struct loop_dev_blob blob;
	uint64_t t0;
	int rc = EIO;

	/* gpunic_loop_stage() reads slots 16 bytes at a time, rounding up inside the slot. */
	if (!ctx || !ctx->qp || !out || !ctx->slots || !ctx->signal_every ||
	    (ctx->signal_every & (ctx->signal_every - 1)) || ((uintptr_t)ctx->ring & 63) ||
	    (ctx->slot_bytes & 63))
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	l = (struct gpunic_gpu_loop *)calloc(1, sizeof(*l));
	if (!l)
		return ENOMEM;
	l->device = device;
	if (GPU_FAILED(cudaHostAlloc((void **)&l->ctl, sizeof(*l->ctl), cudaHostAllocMapped)))
		goto fail;
	memset(l->ctl, 0, sizeof(*l->ctl));
	if (GPU_FAILED(cudaMalloc((void **)&l->blob, sizeof(*l->blob))))
		goto fail;
	blob.ctx = *ctx;
	blob.qp = *ctx->qp;
	/* GPUNIC_LOOP_PROFILE=1: time the forwarder's stages (reported at stop, log level info). */
	if (getenv("GPUNIC_LOOP_PROFILE") && atoi(getenv("GPUNIC_LOOP_PROFILE")) > 0)
		blob.ctx.profile = 1;
	if (GPU_FAILED(cudaMemcpy(l->blob, &blob, sizeof(blob), cudaMemcpyHostToDevice)))
		goto fail;
	loop_kernel<<<1, 1>>>(l->blob, l->ctl);
	if (GPU_FAILED(cudaGetLastError()))
		goto fail;
	/* The sensor may start only once every receive is posted. */
	t0 = gpu_host_now_ns();
	while (!__atomic_load_n(&l->ctl->ready, __ATOMIC_ACQUIRE)) {
		if (gpu_host_now_ns() - t0 > LOOP_READY_TIMEOUT_NS) {
			__atomic_store_n(&l->ctl->stop, 1, __ATOMIC_RELEASE);
			cudaDeviceSynchronize();
			rc = ETIMEDOUT;
			goto fail;
		}
	}
	if (l->ctl->prime_err) {
		cudaDeviceSynchronize();
		rc = EINVAL;
		goto fail;
	}
	*out = l;
	return 0;
fail:
	if (l->blob)
		cudaFree(l->blob);
	if (l->ctl)
		cudaFreeHost(l->ctl);
	free(l);
	return rc;
}

extern "C" int gpunic_gpu_loop_stop(struct gpunic_gpu_loop *l, struct gpunic_loop_ctx *final)
{
	struct loop_dev_blob blob;
	int rc = 0;

	if (!l)
		return EINVAL;
	__atomic_store_n(&l->ctl->stop, 1, __ATOMIC_RELEASE);
	if (GPU_FAILED(cudaDeviceSynchronize()))
		rc = EIO;
	if (!rc && final) {
		if (GPU_FAILED(cudaMemcpy(&blob, l->blob, sizeof(blob), cudaMemcpyDeviceToHost)))
			rc = EIO;
		else
			*final = blob.ctx;
		if (!rc && blob.ctx.profile && blob.ctx.echoed) {
			uint64_t n = blob.ctx.echoed;

			gpunic_log_emit(GPUNIC_LOG_INFO, __func__,
					"forwarder stages per message (ns): cqe %llu, stage %llu, send %llu, recv %llu; idle poll %llu ns (%llu polls); slot read with its CQE for %llu of %llu",
					(unsigned long long)(blob.ctx.t_cqe_ns / n),
					(unsigned long long)(blob.ctx.t_stage_ns / n),
					(unsigned long long)(blob.ctx.t_send_ns / n),
					(unsigned long long)(blob.ctx.t_recv_ns / n),
					(unsigned long long)(blob.ctx.idle_polls ?
						blob.ctx.t_idle_ns / blob.ctx.idle_polls : 0),
					(unsigned long long)blob.ctx.idle_polls,
					(unsigned long long)blob.ctx.spec_hits,
					(unsigned long long)n);
		}
		/* The device copy's qp pointer means nothing on the host. */
		if (!rc)
			final->qp = NULL;
	}
	cudaFree(l->blob);
	cudaFreeHost(l->ctl);
	free(l);
	return rc;
}
