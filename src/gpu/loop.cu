// SPDX-License-Identifier: MIT
/*
 * The persistent forwarder kernel: one warp runs gpunic_loop_fast_step() (loop_dev.h: one
 * coalesced read finds a batch of completions and the warp answers them together; a completion
 * it cannot take that way goes to its lane 0, through the thread-scope steps the CPU executor
 * runs) on a QP whose queues were placed for a GPU executor, until the host raises the stop
 * flag.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/loop_dev.h"

enum loop_snap {
	SNAP_ECHOED, SNAP_FAST, SNAP_SLOW, SNAP_TORN, SNAP_PAIR_MISS, SNAP_IDLE, SNAP_ERRORS,
	SNAP_RCQ_CI, SNAP_SQ_RESERVED, SNAP_SQ_COMPLETED, LOOP_SNAP_N
};

/* Host-pinned control block: the host writes stop, the kernel writes ready and prime_err. */
struct loop_ctl {
	uint32_t stop;
	uint32_t ready;
	int32_t prime_err;
	uint32_t looks;             /* stop-flag looks so far: the kernel is alive */
	/* What the kernel had done at its last look at the stop flag, so that a kernel that does
	 * not stop can still say where it is (gpunic_gpu_loop_stop logs it). */
	uint64_t snap[LOOP_SNAP_N];
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

/* How long the host waits for the kernel to leave once told to. */
#define LOOP_STOP_TIMEOUT_NS 10000000000ull
/* How long the host waits for the kernel to post its receives before giving up. */
#define LOOP_READY_TIMEOUT_NS 5000000000ull
/* Idle polls between two looks at the stop flag (each look is a read across PCIe). */
#define LOOP_STOP_CHECK_MASK 1023u
/* Messages between two looks at the stop flag under continuous traffic. */
#define LOOP_STOP_CHECK_MSGS 4096u

/*
 * One warp runs gpunic_loop_fast_step() (loop_dev.h): each step reads up to eight completions
 * in one coalesced access and answers them with one coalesced store of whole WQEs; what it
 * needs of the context and the QP stays in registers (struct gpunic_loop_fast). With nothing
 * waiting, lane 0 takes a send completion now and then (off the critical path), and every
 * LOOP_STOP_CHECK_MASK idle polls looks at the stop flag.
 */
/* Posted stores into host memory: free for the kernel, read only when it will not stop. */
static __device__ void loop_snapshot(const struct gpunic_loop_ctx *c, struct loop_ctl *ctl)
{
	const struct gpunic_dev_qp_state *st = c->qp->state;

	ctl->snap[SNAP_ECHOED] = c->echoed;
	ctl->snap[SNAP_FAST] = c->fast_msgs;
	ctl->snap[SNAP_SLOW] = c->slow_msgs;
	ctl->snap[SNAP_TORN] = c->torn_lines;
	ctl->snap[SNAP_PAIR_MISS] = c->pair_misses;
	ctl->snap[SNAP_IDLE] = c->idle_polls;
	ctl->snap[SNAP_ERRORS] = c->errors + c->send_errors;
	ctl->snap[SNAP_RCQ_CI] = st->rcq_ci;
	ctl->snap[SNAP_SQ_RESERVED] = st->sq_reserved;
	ctl->snap[SNAP_SQ_COMPLETED] = st->sq_completed;
	ctl->looks++;
}

/* After a step: idle work, and now and then a look at the stop flag. Return: true to stop. */
static __device__ __forceinline__ bool loop_after_step(struct gpunic_loop_ctx *c,
						       struct gpunic_loop_fast *f,
						       struct loop_ctl *ctl, int r, uint32_t *idle,
						       uint32_t *since_check)
{
	uint32_t stop = 0;

	if (r != 0) {
		*idle = 0;
		if (++*since_check < LOOP_STOP_CHECK_MSGS)
			return false;
	} else {
		gpunic_loop_fast_idle(c, f);
	}
	if ((++*idle & LOOP_STOP_CHECK_MASK) && *since_check < LOOP_STOP_CHECK_MSGS)
		return false;
	*since_check = 0;
	if (threadIdx.x == 0) {
		loop_snapshot(c, ctl);
		stop = gpunic_dev_load_relaxed_u32(&ctl->stop);
	}
	return __shfl_sync(0xffffffffu, stop, 0) != 0;
}

static __global__ void loop_kernel(struct loop_dev_blob *b, struct loop_ctl *ctl)
{
	__shared__ int err;
	struct gpunic_loop_ctx *c = &b->ctx;
	struct gpunic_loop_fast f;
	uint32_t idle = 0, since_check = 0;

	if (threadIdx.x == 0) {
		c->qp = &b->qp;
		err = gpunic_loop_prime(c);
		gpunic_dev_store_relaxed_u32((uint32_t *)&ctl->prime_err, (uint32_t)err);
		gpunic_dev_store_release_u32(&ctl->ready, 1);
	}
	__syncwarp();
	if (err)
		return;
	gpunic_loop_fast_load(c, &f);
	while (!loop_after_step(c, &f, ctl, gpunic_loop_fast_step(c, &f), &idle, &since_check))
		;
	/* Leave the send queue drained of completions the NIC already wrote. */
	if (threadIdx.x == 0)
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
	/* one warp: the fast path's lanes read and write whole 64-byte lines together */
	loop_kernel<<<1, 32>>>(l->blob, l->ctl);
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
	cudaError_t q;
	uint64_t t0;
	int rc = 0;

	if (!l)
		return EINVAL;
	__atomic_store_n(&l->ctl->stop, 1, __ATOMIC_RELEASE);
	t0 = gpu_host_now_ns();
	while ((q = cudaStreamQuery(0)) == cudaErrorNotReady) {
		if (gpu_host_now_ns() - t0 > LOOP_STOP_TIMEOUT_NS) {
			const volatile uint64_t *sn = l->ctl->snap;

			/* the kernel still runs and uses its memory: leave it all allocated */
			gpunic_log_emit(GPUNIC_LOG_ERR, __func__,
					"the forwarder kernel did not stop within %llu s; at its "
					"last look (%u) it had echoed %llu (fast %llu, slow %llu), "
					"torn lines %llu, pair misses %llu, idle polls %llu, errors "
					"%llu; rcq_ci %llu, sq reserved %llu, completed %llu",
					LOOP_STOP_TIMEOUT_NS / 1000000000ull, l->ctl->looks,
					(unsigned long long)sn[SNAP_ECHOED],
					(unsigned long long)sn[SNAP_FAST],
					(unsigned long long)sn[SNAP_SLOW],
					(unsigned long long)sn[SNAP_TORN],
					(unsigned long long)sn[SNAP_PAIR_MISS],
					(unsigned long long)sn[SNAP_IDLE],
					(unsigned long long)sn[SNAP_ERRORS],
					(unsigned long long)sn[SNAP_RCQ_CI],
					(unsigned long long)sn[SNAP_SQ_RESERVED],
					(unsigned long long)sn[SNAP_SQ_COMPLETED]);
			return ETIMEDOUT;
		}
	}
	if (q != cudaSuccess)
		rc = gpu_failed(q, "the forwarder kernel", __func__) ? EIO : 0;
	else if (GPU_FAILED(cudaDeviceSynchronize()))
		rc = EIO;
	if (!rc && final) {
		if (GPU_FAILED(cudaMemcpy(&blob, l->blob, sizeof(blob), cudaMemcpyDeviceToHost)))
			rc = EIO;
		else
			*final = blob.ctx;
		if (!rc)
			gpunic_log_emit(GPUNIC_LOG_INFO, __func__,
					"forwarder: echoed %llu (fast path %llu in %llu batches, "
					"thread path %llu), torn lines %llu, pair misses %llu, "
					"errors %llu",
					(unsigned long long)blob.ctx.echoed,
					(unsigned long long)blob.ctx.fast_msgs,
					(unsigned long long)blob.ctx.fast_batches,
					(unsigned long long)blob.ctx.slow_msgs,
					(unsigned long long)blob.ctx.torn_lines,
					(unsigned long long)blob.ctx.pair_misses,
					(unsigned long long)(blob.ctx.errors +
							     blob.ctx.send_errors));
		if (!rc && blob.ctx.profile && blob.ctx.echoed) {
			uint64_t n = blob.ctx.echoed;

			gpunic_log_emit(GPUNIC_LOG_INFO, __func__,
					"forwarder per message (ns): fast step %llu (per batch: read and checks %llu, answer built, batch decided and stores issued %llu (of which issuing the stores %llu), handed over %llu; %llu messages in %llu batches), slow path cqe %llu stage %llu send %llu recv %llu (%llu messages); idle poll %llu ns (%llu polls); torn lines %llu, pair misses %llu",
					(unsigned long long)(blob.ctx.fast_msgs ?
						blob.ctx.t_send_ns / blob.ctx.fast_msgs : 0),
					(unsigned long long)(blob.ctx.fast_batches ?
						blob.ctx.t_fast_read_ns / blob.ctx.fast_batches : 0),
					(unsigned long long)(blob.ctx.fast_batches ?
						blob.ctx.t_fast_build_ns / blob.ctx.fast_batches : 0),
					(unsigned long long)(blob.ctx.fast_batches ?
						blob.ctx.t_fast_store_ns / blob.ctx.fast_batches : 0),
					(unsigned long long)(blob.ctx.fast_batches ?
						blob.ctx.t_fast_hand_ns / blob.ctx.fast_batches : 0),
					(unsigned long long)blob.ctx.fast_msgs,
					(unsigned long long)blob.ctx.fast_batches,
					(unsigned long long)(blob.ctx.t_cqe_ns / n),
					(unsigned long long)(blob.ctx.t_stage_ns / n),
					(unsigned long long)(blob.ctx.t_send_ns / n),
					(unsigned long long)(blob.ctx.t_recv_ns / n),
					(unsigned long long)blob.ctx.slow_msgs,
					(unsigned long long)(blob.ctx.idle_polls ?
						blob.ctx.t_idle_ns / blob.ctx.idle_polls : 0),
					(unsigned long long)blob.ctx.idle_polls,
					(unsigned long long)blob.ctx.torn_lines,
					(unsigned long long)blob.ctx.pair_misses);
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
