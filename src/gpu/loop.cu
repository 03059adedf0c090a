// SPDX-License-Identifier: MIT
/*
 * The persistent forwarder kernel: one warp runs gpunic_loop_fast_step() (loop_dev.h: one
 * coalesced read finds a batch of completions and the warp answers them together; a completion
 * it cannot take that way goes to its lane 0, through the thread-scope steps the CPU executor
 * runs) on a QP whose queues were placed for a GPU executor, until the host raises the stop
 * flag.
 *
 * With an RPC table (gpunic_loop_ctx.rpc) a second copy of the kernel answers every message as
 * a request (docs/RPC.md): the table is copied to device memory and the built-in handlers are
 * bound there by the kernel itself, because a device function's address is valid only in the
 * module that defines it: this one, where the dispatch step and the handlers are compiled with
 * the kernel. The echo kernel is compiled apart, without any of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/loop_dev.h"
#include <gpunic/rpc_handlers.h>

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
	uint32_t zero;              /* always 0: what the kernel times its reads on */
	/* What the kernel had done at its last look at the stop flag, so that a kernel that does
	 * not stop can still say where it is (gpunic_gpu_loop_stop logs it). */
	uint64_t snap[LOOP_SNAP_N];
};

/* What the kernel reads: the context and the QP description (and the RPC table), copied to
 * device memory. */
struct loop_dev_blob {
	struct gpunic_loop_ctx ctx;
	struct gpunic_dev_qp qp;
	struct gpunic_rpc_table rpc;
};

/* RPC: the fast path's scratch, a slot for each of its eight groups (loop_dev.h). */
#define LOOP_RPC_GROUPS 8u

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
/* Dependent reads timed at start for the stagger of a second poll. */
#define LOOP_RTT_SAMPLES 16u
/* Polls in flight while idle when the host does not say (gpunic_loop_ctx.polls_in_flight). */
#define LOOP_POLLS_DEFAULT 1u

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

/* What the loop counts between steps (registers). */
struct loop_watch {
	uint32_t idle;		/* idle polls since the last message */
	uint32_t since_check;	/* messages since the last look at the stop flag */
	uint64_t span_t0;	/* the last look after a stretch of idle polls (lane 0) */
	bool span_clean;	/* and no message since */
};

/*
 * After a step, now and then a look at the stop flag (lane 0 of the @leader warp; the other
 * warp of a pair learns it through *@quit). A look that ends a stretch of
 * LOOP_STOP_CHECK_MASK + 1 idle polls with no message in it adds the stretch's time to the
 * idle poll's account: one clock reading per stretch. Return (all lanes): true to stop.
 */
static __device__ __forceinline__ bool loop_watch_step(struct gpunic_loop_ctx *c,
						       struct loop_ctl *ctl, int r,
						       struct loop_watch *w, bool leader,
						       volatile uint32_t *quit)
{
	uint32_t stop = 0;
	uint64_t now;

	if (r != 0) {
		w->idle = 0;
		w->span_clean = false;
		if (++w->since_check < LOOP_STOP_CHECK_MSGS)
			return quit && *quit;
	}
	if ((++w->idle & LOOP_STOP_CHECK_MASK) && w->since_check < LOOP_STOP_CHECK_MSGS)
		return quit && *quit;
	w->since_check = 0;
	if (!leader)
		return quit && *quit;
	if ((threadIdx.x & 31) == 0) {
		now = gpunic_dev_clock_ns();
		if (w->span_clean && r == 0) {
			c->idle_span_polls += LOOP_STOP_CHECK_MASK + 1;
			c->idle_span_ns += now - w->span_t0;
		}
		w->span_t0 = now;
		w->span_clean = r == 0;
		loop_snapshot(c, ctl);
		stop = gpunic_dev_load_relaxed_u32(&ctl->stop);
		if (stop && quit)
			*quit = 1;
	}
	return __shfl_sync(0xffffffffu, stop, 0) != 0;
}

/* One warp: each step one poll, idle work while nothing waits. */
template <bool RPC>
static __device__ void loop_run_one_warp(struct gpunic_loop_ctx *c, struct gpunic_loop_fast *f,
					 struct loop_ctl *ctl)
{
	struct loop_watch w = { 0, 0, 0, false };
	int r;

	do {
		r = gpunic_loop_fast_step_as(c, f, RPC);
		if (r == 0)
			gpunic_loop_fast_idle(c, f);
	} while (!loop_watch_step(c, ctl, r, &w, true, NULL));
}

/*
 * Two warps polling the same CQ, half a read's round trip apart, so that a completion waits
 * for the next read to reach it half as long as with one. Reads of one line from one warp do
 * not overlap (each waits for the one before), reads from two warps do (the floors' pollers
 * show it), so the second poller is a warp. Both run the fast path; the moving counters live
 * here, and a warp whose poll saw a completion takes them over under the lock, checks that
 * its poll was issued with them (else it is stale: the other warp moved on), steps, and hands
 * them back with the version bumped. The other warp sees the new version at its next poll,
 * takes the counters, and waits until half a round trip after the mover's next read before
 * issuing its own: the stagger survives every message.
 */
struct loop_pair {
	uint32_t lock;		/* 0 free; lane 0 of the warp that moves the counters holds it */
	uint32_t ver;		/* bumped by every hand-back that moved them */
	uint32_t quit;		/* the leader saw the stop flag */
	uint32_t ci, pi, done, expect, rq_head, rq_tail, rq_published;
	uint64_t echoed, fast_msgs, fast_batches;
	uint64_t next_read_ns;	/* when the mover issued its next read */
};

static __device__ __forceinline__ void loop_pair_lock(struct loop_pair *s)
{
	if ((threadIdx.x & 31) == 0)
		while (atomicCAS(&s->lock, 0u, 1u) != 0u)
			;
	__syncwarp();
	__threadfence_block();
}

static __device__ __forceinline__ void loop_pair_unlock(struct loop_pair *s)
{
	__threadfence_block();
	__syncwarp();
	if ((threadIdx.x & 31) == 0)
		atomicExch(&s->lock, 0u);
}

/* The moving counters from the pair into @f (all lanes, under the lock). */
static __device__ __forceinline__ void loop_pair_get(const struct loop_pair *s,
						     struct gpunic_loop_fast *f)
{
	const volatile struct loop_pair *v = s;

	f->ci = v->ci;
	f->pi = v->pi;
	f->done = v->done;
	f->expect = v->expect;
	f->rq_head = v->rq_head;
	f->rq_tail = v->rq_tail;
	f->rq_published = v->rq_published;
	f->echoed = v->echoed;
	f->fast_msgs = v->fast_msgs;
	f->fast_batches = v->fast_batches;
}

/* @f's moving counters into the pair, the version bumped (lane 0, under the lock). */
static __device__ __forceinline__ void loop_pair_put(struct loop_pair *s,
						     const struct gpunic_loop_fast *f)
{
	volatile struct loop_pair *v = s;

	if ((threadIdx.x & 31) != 0)
		return;
	v->ci = f->ci;
	v->pi = f->pi;
	v->done = f->done;
	v->expect = f->expect;
	v->rq_head = f->rq_head;
	v->rq_tail = f->rq_tail;
	v->rq_published = f->rq_published;
	v->echoed = f->echoed;
	v->fast_msgs = f->fast_msgs;
	v->fast_batches = f->fast_batches;
	v->ver = v->ver + 1;
	v->next_read_ns = gpunic_dev_clock_ns();
}

/* Idle work (send completions when half the queue is in use) under the lock. */
static __device__ __forceinline__ void loop_pair_idle(struct gpunic_loop_ctx *c,
						      struct gpunic_loop_fast *f,
						      struct loop_pair *s, uint32_t *ver)
{
	uint32_t cnt = f->qp.sq_wqebb_cnt;

	if (cnt - (f->pi - f->done) >= cnt / 2)
		return;
	loop_pair_lock(s);
	loop_pair_get(s, f);
	gpunic_loop_fast_idle(c, f);
	loop_pair_put(s, f);
	*ver = *(volatile uint32_t *)&s->ver;
	loop_pair_unlock(s);
}

template <bool RPC>
static __device__ void loop_run_two_warps(struct gpunic_loop_ctx *c, struct gpunic_loop_fast *f,
					  struct loop_ctl *ctl, struct loop_pair *s,
					  uint32_t stagger)
{
	struct loop_watch w = { 0, 0, 0, false };
	struct gpunic_loop_poll p;
	uint32_t ver = 0, warp = threadIdx.x >> 5;
	uint64_t wait_until = 0;
	int r;

	if (warp == 1)
		gpunic_warp_spin_ns(stagger);
	for (;;) {
		if (wait_until)
			while (gpunic_dev_clock_ns() < wait_until)
				;
		wait_until = 0;
		gpunic_loop_fast_issue(f, &p);
		r = 0;
		if (gpunic_loop_fast_seen(f, &p) || *(volatile uint32_t *)&s->ver != ver) {
			loop_pair_lock(s);
			if (*(volatile uint32_t *)&s->ver != ver) {
				/* the other warp moved the counters: this poll is stale */
				loop_pair_get(s, f);
				f->width = 1;
				wait_until = *(volatile uint64_t *)&s->next_read_ns + stagger;
			} else {
				r = gpunic_loop_fast_take_as(c, f, &p, RPC);
				if (r != 0)
					loop_pair_put(s, f);
			}
			ver = *(volatile uint32_t *)&s->ver;
			loop_pair_unlock(s);
		} else {
			f->width = 1;
			loop_pair_idle(c, f, s, &ver);
		}
		if (loop_watch_step(c, ctl, r, &w, warp == 0, &s->quit))
			return;
	}
}

/* RPC: the scratch (dynamic shared memory, LOOP_RPC_GROUPS slots). */
extern __shared__ __align__(16) uint8_t loop_rpc_scratch[];

template <bool RPC> static __global__ void loop_kernel(struct loop_dev_blob *b, struct loop_ctl *ctl)
{
	__shared__ int err;
	__shared__ uint32_t stagger;
	__shared__ struct loop_pair pair;
	struct gpunic_loop_ctx *c = &b->ctx;
	struct gpunic_loop_fast f;
	uint32_t warps = blockDim.x >> 5;

	if (threadIdx.x == 0) {
		c->qp = &b->qp;
		if (RPC) {
			/* the handlers' addresses as this module has them, in the table's copy */
			c->rpc = &b->rpc;
			c->rpc_scratch = loop_rpc_scratch;
			gpunic_rpc_bind_builtins(&b->rpc);
		}
		err = gpunic_loop_prime(c);
		stagger = c->poll_stagger_ns;
		if (!err && warps > 1 && !stagger)
			stagger = gpunic_warp_read_rtt_ns(&ctl->zero, LOOP_RTT_SAMPLES) / 2;
		c->poll_stagger_ns = warps > 1 ? stagger : 0;
		c->polls_in_flight = warps;
		gpunic_dev_store_relaxed_u32((uint32_t *)&ctl->prime_err, (uint32_t)err);
		gpunic_dev_store_release_u32(&ctl->ready, 1);
	}
	__syncthreads();
	if (err)
		return;
	gpunic_loop_fast_load(c, &f);
	if (warps > 1) {
		if (threadIdx.x == 0) {
			pair.lock = pair.ver = pair.quit = 0;
			pair.next_read_ns = 0;
			loop_pair_put(&pair, &f);
			pair.ver = 0;
		}
		__syncthreads();
		loop_run_two_warps<RPC>(c, &f, ctl, &pair, stagger);
	} else {
		loop_run_one_warp<RPC>(c, &f, ctl);
	}
	__syncthreads();
	/* Leave the send queue drained of completions the NIC already wrote. */
	if (threadIdx.x == 0)
		gpunic_loop_reap_sends(c);
}

extern "C" int gpunic_gpu_loop_start(int device, const struct gpunic_loop_ctx *ctx,
				     struct gpunic_gpu_loop **out)
{
	struct gpunic_gpu_loop *l;
	struct loop_dev_blob blob;
	size_t smem = 0;
	uint32_t threads;
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
	memset(&blob, 0, sizeof(blob));
	blob.ctx = *ctx;
	blob.qp = *ctx->qp;
	if (ctx->rpc) {
		/* the kernel points ctx.rpc at this copy and binds the handlers there */
		blob.rpc = *ctx->rpc;
		blob.ctx.rpc = NULL;
		smem = (size_t)LOOP_RPC_GROUPS * ctx->slot_bytes;
	}
	/* GPUNIC_LOOP_PROFILE=1: time the forwarder's stages (reported at stop, log level info). */
	if (getenv("GPUNIC_LOOP_PROFILE") && atoi(getenv("GPUNIC_LOOP_PROFILE")) > 0)
		blob.ctx.profile = 1;
	/* GPUNIC_LOOP_POLLS=1|2: polls in flight while idle, where the caller did not say. */
	if (!blob.ctx.polls_in_flight && getenv("GPUNIC_LOOP_POLLS"))
		blob.ctx.polls_in_flight = (uint32_t)atoi(getenv("GPUNIC_LOOP_POLLS"));
	if (blob.ctx.polls_in_flight > 2)
		blob.ctx.polls_in_flight = 2;
	if (GPU_FAILED(cudaMemcpy(l->blob, &blob, sizeof(blob), cudaMemcpyHostToDevice)))
		goto fail;
	/* one warp per poller: the fast path's lanes read and write whole 64-byte lines
	 * together */
	threads = 32 * (blob.ctx.polls_in_flight > 1 ? 2 : 1);
	if (ctx->rpc) {
		/* beyond 48 KiB of shared memory a kernel must ask; slots too large for what
		 * the GPU has fail here, said as the launch's error */
		if (smem > 48 * 1024 &&
		    GPU_FAILED(cudaFuncSetAttribute(loop_kernel<true>,
						    cudaFuncAttributeMaxDynamicSharedMemorySize,
						    (int)smem))) {
			rc = EINVAL;
			goto fail;
		}
		loop_kernel<true><<<1, threads, smem>>>(l->blob, l->ctl);
	} else {
		loop_kernel<false><<<1, threads>>>(l->blob, l->ctl);
	}
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
					"errors %llu; idle poll every %llu ns (%llu polls timed, %u in "
					"flight, stagger %u ns)",
					(unsigned long long)blob.ctx.echoed,
					(unsigned long long)blob.ctx.fast_msgs,
					(unsigned long long)blob.ctx.fast_batches,
					(unsigned long long)blob.ctx.slow_msgs,
					(unsigned long long)blob.ctx.torn_lines,
					(unsigned long long)blob.ctx.pair_misses,
					(unsigned long long)(blob.ctx.errors +
							     blob.ctx.send_errors),
					(unsigned long long)(blob.ctx.idle_span_polls ?
						blob.ctx.idle_span_ns / blob.ctx.idle_span_polls : 0),
					(unsigned long long)blob.ctx.idle_span_polls,
					blob.ctx.polls_in_flight, blob.ctx.poll_stagger_ns);
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
		/* The device copy's pointers mean nothing on the host. */
		if (!rc) {
			final->qp = NULL;
			final->rpc = NULL;
			final->rpc_scratch = NULL;
		}
	}
	cudaFree(l->blob);
	cudaFreeHost(l->ctl);
	free(l);
	return rc;
}
