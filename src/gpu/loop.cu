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
/* Messages between two looks at the stop flag under continuous traffic. */
#define LOOP_STOP_CHECK_MSGS 4096u
/* Messages in flight between the receive warp and the send warp. */
#define LOOP_PIPE 8u

/*
 * The forwarder runs its two halves on two warps, so that one message's send (whose system
 * fence waits about a PCIe round trip) overlaps the next one's completion and payload reads:
 * per-message cost becomes the larger half instead of their sum. Thread 0 takes, thread 32
 * gives; they meet in a shared-memory ring of LOOP_PIPE messages, handed over in order.
 */
struct loop_pipe {
	struct gpunic_loop_msg msg[LOOP_PIPE];
	volatile uint32_t head;  /* messages taken (written by the receive warp) */
	volatile uint32_t tail;  /* messages given (written by the send warp) */
	volatile uint32_t done;  /* the receive warp has left */
};

static __device__ void loop_taker(struct gpunic_loop_ctx *c, struct loop_ctl *ctl,
				  struct loop_pipe *p)
{
	uint32_t idle = 0, since_check = 0, head = 0;

	for (;;) {
		if (head - p->tail < LOOP_PIPE) {
			int r = gpunic_loop_take(c, &p->msg[head % LOOP_PIPE]);

			if (r != 0) {	/* echoes and skipped completions alike: the send
					 * warp reposts every receive */
				/* The message before its index: the send warp reads it after. */
				__threadfence_block();
				p->head = ++head;
			}
			if (r != 0) {
				idle = 0;
				if (++since_check < LOOP_STOP_CHECK_MSGS)
					continue;
			}
		}
		if ((++idle & LOOP_STOP_CHECK_MASK) && since_check < LOOP_STOP_CHECK_MSGS)
			continue;
		since_check = 0;
		if (gpunic_dev_load_relaxed_u32(&ctl->stop))
			break;
	}
	p->done = 1;
}

static __device__ void loop_giver(struct gpunic_loop_ctx *c, struct loop_pipe *p)
{
	uint32_t tail = 0;

	for (;;) {
		if (tail == p->head) {
			if (p->done && tail == p->head)
				break;
			gpunic_loop_reap_idle(c);
			continue;
		}
		__threadfence_block();
		gpunic_loop_give(c, &p->msg[tail % LOOP_PIPE]);
		p->tail = ++tail;
	}
	/* Leave the send queue drained of completions the NIC already wrote. */
	gpunic_loop_reap_sends(c);
}

static __global__ void loop_kernel(struct loop_dev_blob *b, struct loop_ctl *ctl)
{
	__shared__ struct loop_pipe pipe;
	__shared__ int err;
	struct gpunic_loop_ctx *c = &b->ctx;

	if (threadIdx.x == 0) {
		c->qp = &b->qp;
		pipe.head = 0;
		pipe.tail = 0;
		pipe.done = 0;
		err = gpunic_loop_prime(c);
		gpunic_dev_store_relaxed_u32((uint32_t *)&ctl->prime_err, (uint32_t)err);
		gpunic_dev_store_release_u32(&ctl->ready, 1);
	}
	__syncthreads();
	if (err)
		return;
	if (threadIdx.x == 0)
		loop_taker(c, ctl, &pipe);
	else if (threadIdx.x == 32)
		loop_giver(c, &pipe);
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
	/* two warps: thread 0 takes messages, thread 32 sends them back */
	loop_kernel<<<1, 64>>>(l->blob, l->ctl);
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
