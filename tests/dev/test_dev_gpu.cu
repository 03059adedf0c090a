/* SPDX-License-Identifier: MIT */
/*
 * gpunic_dev.h driven by a GPU: kernels post (thread, shared and warp scope), ring and poll on
 * queues in mapped host memory, while a host thread plays the NIC: it follows the doorbell
 * record, checks every WQE against the request it names and writes CQEs. The receive test runs
 * the other way: the GPU posts receives and checks what the NIC delivers in the CQEs.
 * Skipped (77) without a CUDA device.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include <gpunic/gpunic_dev.h>

#include "harness_cuda.h"
/* the fixture is C too */
extern "C" {
#include "dev_fixture.h"
}

#define GPU_INLINE_BYTES 24u
#define GPU_TIMEOUT_NS 20000000000ull

/* Errors a kernel reports back; the first one's code and a detail. */
struct gpu_result {
	unsigned int errors;
	unsigned int first_code;
	unsigned long long first_detail;
	unsigned int polled;
};

/* The request (@t, @s) names: remote_addr says whose it is, sizes and kinds vary. */
__host__ __device__ static void gen_wr(uint32_t t, uint32_t s, int signalled,
				       struct gpunic_dev_send_wr *wr, struct gpunic_dev_sge *sg,
				       uint8_t *inl)
{
	uint32_t k, n;

	memset(wr, 0, sizeof(*wr));
	wr->remote_addr = (uint64_t)t << 32 | s;
	wr->rkey = 0x5eed0000u | t;
	wr->sg_list = sg;
	wr->flags = signalled ? GPUNIC_DEV_SEND_SIGNALED : 0;
	switch (s % 3) {
	case 0:
		wr->opcode = MLX5_OPCODE_SEND;
		n = 1;
		break;
	case 1:
		wr->opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
		wr->imm = t << 16 | s;
		n = 3;
		break;
	default:
		wr->opcode = MLX5_OPCODE_RDMA_WRITE;
		wr->flags |= GPUNIC_DEV_SEND_INLINE;
		for (k = 0; k < GPU_INLINE_BYTES; k++)
			inl[k] = (uint8_t)(t * 31 + s * 7 + k);
		sg[0].addr = (uintptr_t)inl;
		sg[0].length = GPU_INLINE_BYTES;
		sg[0].lkey = 0;
		wr->num_sge = 1;
		return;
	}
	for (k = 0; k < n; k++) {
		sg[k].addr = (uint64_t)s << 20 | t << 8 | k;
		sg[k].length = 100 + k;
		sg[k].lkey = t << 8 | k;
	}
	wr->num_sge = (uint16_t)n;
}

__device__ static uint64_t gpu_now(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__device__ static void gpu_error(struct gpu_result *res, unsigned int code,
				 unsigned long long detail)
{
	if (atomicAdd(&res->errors, 1) == 0) {
		res->first_code = code;
		res->first_detail = detail;
	}
}

/* Poll the send CQ until @want completions came (single consumer), checking each. */
__device__ static void gpu_poll_send(struct gpunic_dev_qp *qp, unsigned int want,
				     struct gpu_result *res)
{
	struct gpunic_dev_cqe cqe;
	uint64_t deadline = gpu_now() + GPU_TIMEOUT_NS;

	while (res->polled < want) {
		if (gpunic_dev_poll_scq(qp, &cqe)) {
			if (gpunic_dev_cqe_is_error(&cqe) ||
			    cqe.wqe_counter != (cqe.wqe_idx & 0xffff))
				gpu_error(res, 1, cqe.wqe_idx);
			res->polled++;
		} else if (gpu_now() > deadline) {
			gpu_error(res, 2, res->polled);
			return;
		}
	}
}

/* One thread owns the send queue: post, submit every few, make room by polling. */
__global__ void k_thread_scope(struct gpunic_dev_qp *qp, uint32_t n, uint32_t *idx_out,
			       struct gpu_result *res)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sg[4];
	uint8_t inl[GPU_INLINE_BYTES];
	struct gpunic_dev_cqe cqe;
	uint64_t deadline = gpu_now() + GPU_TIMEOUT_NS;
	uint32_t s;
	int64_t r;

	for (s = 0; s < n; s++) {
		gen_wr(0, s, s % 2 || s == n - 1, &wr, sg, inl);
		while ((r = gpunic_dev_post_send(qp, &wr)) == -ENOMEM) {
			gpunic_dev_submit(qp);
			if (gpunic_dev_poll_scq(qp, &cqe)) {
				if (gpunic_dev_cqe_is_error(&cqe))
					gpu_error(res, 3, cqe.wqe_idx);
				res->polled++;
			}
			if (gpu_now() > deadline) {
				gpu_error(res, 4, s);
				return;
			}
		}
		if (r < 0) {
			gpu_error(res, 5, (unsigned long long)r);
			return;
		}
		idx_out[s] = (uint32_t)r;
		if (s % 8 == 7 && gpunic_dev_submit(qp))
			gpu_error(res, 6, s);
	}
	gpunic_dev_submit(qp);
	gpu_poll_send(qp, n / 2 + n % 2, res);
	if (!gpunic_dev_sq_done(qp, idx_out[n - 1]))
		gpu_error(res, 7, idx_out[n - 1]);
}

/* Many threads share the send queue; thread 0 of block 0 is the send CQ's consumer. */
__global__ void k_shared(struct gpunic_dev_qp *qp, uint32_t per_thread, unsigned int want,
			 uint32_t *idx_out, struct gpu_result *res)
{
	uint32_t gtid = blockIdx.x * blockDim.x + threadIdx.x, t, s;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sg[4];
	uint8_t inl[GPU_INLINE_BYTES];
	uint64_t deadline = gpu_now() + GPU_TIMEOUT_NS;
	int64_t r;

	if (gtid < 32) {
		if (gtid == 0)
			gpu_poll_send(qp, want, res);
		return;
	}
	t = gtid - 32;
	for (s = 0; s < per_thread; s++) {
		/* Every request signalled: with more posters than ring slots, an unsignalled
		 * window could fill the ring. */
		gen_wr(t, s, 1, &wr, sg, inl);
		while ((r = gpunic_dev_post_send_mt(qp, &wr)) == -ENOMEM) {
			if (gpu_now() > deadline) {
				gpu_error(res, 8, gtid);
				return;
			}
		}
		if (r < 0) {
			gpu_error(res, 9, (unsigned long long)r);
			return;
		}
		idx_out[t * per_thread + s] = (uint32_t)r;
	}
}

/* Warps post batches of 1..32 requests; block 1's thread 0 consumes the send CQ. */
__global__ void k_warp(struct gpunic_dev_qp *qp, uint32_t per_warp, unsigned int want,
		       uint32_t *idx_out, struct gpu_result *res)
{
	__shared__ struct gpunic_dev_send_wr wrs[8][GPUNIC_DEV_WARP_SIZE];
	__shared__ struct gpunic_dev_sge sgs[8][GPUNIC_DEV_WARP_SIZE][4];
	__shared__ uint8_t inls[8][GPUNIC_DEV_WARP_SIZE][GPU_INLINE_BYTES];
	uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, s = 0, n;
	uint64_t deadline = gpu_now() + GPU_TIMEOUT_NS;
	int64_t r;

	if (blockIdx.x == 1) {
		if (threadIdx.x == 0)
			gpu_poll_send(qp, want, res);
		return;
	}
	while (s < per_warp) {
		n = 1 + (s * 7 + warp) % GPUNIC_DEV_WARP_SIZE;
		if (n > per_warp - s)
			n = per_warp - s;
		if (lane < n)
			gen_wr(warp, s + lane, (s + lane) % 2 || lane == n - 1, &wrs[warp][lane],
			       sgs[warp][lane], inls[warp][lane]);
		__syncwarp();
		r = gpunic_dev_post_send_warp(qp, wrs[warp], n);
		if (r == -ENOMEM) {
			if (gpu_now() > deadline) {
				if (lane == 0)
					gpu_error(res, 10, warp);
				return;
			}
			continue;
		}
		if (r < 0) {
			if (lane == 0)
				gpu_error(res, 11, (unsigned long long)r);
			return;
		}
		if (lane < n)
			idx_out[warp * per_warp + s + lane] = (uint32_t)r;
		s += n;
		__syncwarp();
	}
}

/* Receives: keep @depth posted, take @n completions, check what the NIC put in each. */
__global__ void k_recv(struct gpunic_dev_qp *qp, uint32_t n, uint32_t depth,
		       struct gpu_result *res)
{
	struct gpunic_dev_sge sg;
	struct gpunic_dev_cqe cqe;
	uint64_t deadline = gpu_now() + GPU_TIMEOUT_NS;
	uint32_t posted = 0, got = 0, k, len;

	sg.lkey = 0x77;
	while (got < n) {
		while (posted < n && posted - got < depth) {
			/* Odd ones zero-length (for WRITE_WITH_IMM), even ones a buffer. */
			sg.addr = 0x100000ull * posted;
			sg.length = posted % 2 ? 0 : 4096;
			if (gpunic_dev_post_recv(qp, &sg, 1) != posted) {
				gpu_error(res, 12, posted);
				return;
			}
			posted++;
		}
		if (!gpunic_dev_poll_rcq(qp, &cqe)) {
			if (gpu_now() > deadline) {
				gpu_error(res, 13, got);
				return;
			}
			continue;
		}
		len = got % 33;
		if (cqe.wqe_idx != got || cqe.imm != (0xa5000000u | got))
			gpu_error(res, 14, (unsigned long long)cqe.wqe_idx << 32 | cqe.imm);
		if (got % 2) {
			if (cqe.opcode != MLX5_CQE_RESP_WR_IMM || cqe.data_in_cqe)
				gpu_error(res, 15, got);
		} else {
			if (cqe.opcode != MLX5_CQE_RESP_SEND_IMM || cqe.byte_cnt != len ||
			    !cqe.data_in_cqe)
				gpu_error(res, 16, got);
			for (k = 0; k < len; k++)
				if (cqe.data[k] != (uint8_t)(got + k))
					gpu_error(res, 17, got);
		}
		got++;
		res->polled++;
	}
}

/* ---------------------------------------------------------------- the host's NIC */

struct gpu_nic {
	struct fix *f;
	uint32_t threads, per_thread, want;
	uint8_t *seen;
	uint32_t *found_at;
	uint32_t wqes, cqes, errors;
	char why[160];
	int stop;
	int recv;           /* serve the receive queue instead of the send queue */
};

static void nic_err(struct gpu_nic *nic, const char *why, uint32_t a, uint32_t b)
{
	if (!nic->errors++)
		snprintf(nic->why, sizeof(nic->why), "%s (0x%x, 0x%x)", why, a, b);
}

static void nic_send_cqe(struct gpu_nic *nic, const struct nic_cqe *c,
			 const struct gpunic_dev_cq *cq)
{
	/* Never overrun the CQ: the consumer's record says what is free. */
	while (nic->cqes - nic_cq_ci(cq) >= cq->cqe_cnt &&
	       !__atomic_load_n(&nic->stop, __ATOMIC_ACQUIRE))
		sched_yield();
	nic_write_cqe(cq, nic->cqes++, c);
}

static void nic_take_wqe(struct gpu_nic *nic, const struct dec_wqe *d, uint32_t ci)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sg[4];
	uint8_t inl[GPU_INLINE_BYTES];
	uint32_t t = (uint32_t)(d->raddr >> 32), s = (uint32_t)d->raddr, k;
	struct nic_cqe c;

	/* SEND has no raddr segment: its identity is in its SGE address. */
	if (d->opcode == MLX5_OPCODE_SEND && d->nsge == 1) {
		t = (uint32_t)(d->sge[0].addr >> 8) & 0xfff;
		s = (uint32_t)(d->sge[0].addr >> 20);
	}
	if (d->idx != (ci & 0xffff) || t >= nic->threads || s >= nic->per_thread) {
		nic_err(nic, "stale or foreign WQE", ci, d->idx);
		return;
	}
	gen_wr(t, s, 0, &wr, sg, inl);
	if (d->opcode != wr.opcode || d->qpn != nic->f->qp.qpn ||
	    (d->has_raddr && (d->rkey != wr.rkey || d->raddr != wr.remote_addr)))
		nic_err(nic, "WQE header", ci, d->opcode);
	if (wr.flags & GPUNIC_DEV_SEND_INLINE) {
		if (!d->is_inline || d->inl_len != GPU_INLINE_BYTES ||
		    memcmp(d->inl, inl, GPU_INLINE_BYTES))
			nic_err(nic, "inline payload", ci, d->inl_len);
	} else {
		if (d->nsge != wr.num_sge)
			nic_err(nic, "SGE count", ci, d->nsge);
		for (k = 0; k < d->nsge && k < wr.num_sge; k++)
			if (d->sge[k].addr != sg[k].addr || d->sge[k].len != sg[k].length ||
			    d->sge[k].lkey != sg[k].lkey)
				nic_err(nic, "SGE", ci, k);
	}
	if (wr.opcode == MLX5_OPCODE_RDMA_WRITE_IMM &&
	    rd_be32(d->imm_bytes) != (t << 16 | s))
		nic_err(nic, "immediate", ci, rd_be32(d->imm_bytes));
	if (nic->seen[t * nic->per_thread + s]++)
		nic_err(nic, "WQE twice", t, s);
	nic->found_at[t * nic->per_thread + s] = ci;
	nic->wqes++;
	if (d->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) {
		memset(&c, 0, sizeof(c));
		c.opcode = MLX5_CQE_REQ;
		c.wqe_opcode = (uint8_t)d->opcode;
		c.wqe_counter = (uint16_t)ci;
		c.qpn = nic->f->qp.qpn;
		nic_send_cqe(nic, &c, &nic->f->qp.scq);
	}
}

static void *gpu_nic_main(void *arg)
{
	struct gpu_nic *nic = (struct gpu_nic *)arg;
	struct fix *f = nic->f;
	struct dec_wqe *d = (struct dec_wqe *)malloc(sizeof(*d));
	uint32_t ci = 0, pi16, spins = 0, k;
	uint8_t data[32];

	CHECK(d);
	while (!__atomic_load_n(&nic->stop, __ATOMIC_ACQUIRE)) {
		pi16 = nic->recv ? nic_rq_pi(f) : nic_sq_pi(f);
		if ((ci & 0xffff) == pi16) {
			gpunic_dev_spin_wait(&spins);
			continue;
		}
		spins = 0;
		for (; (ci & 0xffff) != pi16; ci++) {
			if (!nic->recv) {
				dec_wqe(f, ci, d);
				nic_take_wqe(nic, d, ci);
				ci += dec_bbs(d) ? dec_bbs(d) - 1 : 0;
				continue;
			}
			/* Receive WQE ci: check it, then deliver message ci into it. */
			const uint8_t *w = f->qp.rq_buf + (ci % f->qp.rq_wqe_cnt) * f->qp.rq_stride;
			struct nic_cqe c;

			memset(&c, 0, sizeof(c));
			c.qpn = f->qp.qpn;
			c.wqe_counter = (uint16_t)ci;
			wr_be32(c.imm_bytes, 0xa5000000u | ci);
			if (ci % 2) {
				if (rd_be32(w + 4) != MLX5_INVALID_LKEY)
					nic_err(nic, "zero-length receive", ci, rd_be32(w + 4));
				c.opcode = MLX5_CQE_RESP_WR_IMM;
			} else {
				if (rd_be32(w) != 4096 || rd_be32(w + 4) != 0x77 ||
				    rd_be64(w + 8) != 0x100000ull * ci ||
				    rd_be32(w + 20) != MLX5_INVALID_LKEY)
					nic_err(nic, "receive WQE", ci, rd_be32(w));
				c.opcode = MLX5_CQE_RESP_SEND_IMM;
				c.byte_cnt = ci % 33;
				for (k = 0; k < c.byte_cnt; k++)
					data[k] = (uint8_t)(ci + k);
				c.inl = data;
				c.inl_len = c.byte_cnt;
				c.flags = MLX5_INLINE_SCATTER_32;
			}
			nic_send_cqe(nic, &c, &f->qp.rcq);
			nic->wqes++;
		}
	}
	free(d);
	return NULL;
}

/* ---------------------------------------------------------------- setup and checks */

struct gpu_env {
	struct fix f;
	struct gpunic_dev_qp_state *host_state;
	struct gpunic_dev_qp *d_qp;
	struct gpu_result *d_res;
	uint32_t *d_idx;
	uint32_t nidx;
};

/* The device's address of registered host memory (the same one where UVA allows). */
static void *gpu_dptr(void *host)
{
	void *dev = NULL;

	CUDA_OK(cudaHostGetDevicePointer(&dev, host, 0));
	return dev;
}

static void gpu_env_init(struct gpu_env *env, uint32_t ring, uint32_t rq_cnt, uint32_t cqe_cnt,
			 uint32_t mode, uint32_t nidx)
{
	struct gpunic_dev_qp dq;
	int k;

	harness_need_cuda_device();
	memset(env, 0, sizeof(*env));
	fix_init(&env->f, ring, rq_cnt, 32, cqe_cnt, mode);
	/* Queues stay in host memory the GPU reaches through mapping (CPU_GPU placement). */
	for (k = 0; k < env->f.nmem; k++)
		CUDA_OK(cudaHostRegister(env->f.mem[k], env->f.mem_len[k], cudaHostRegisterMapped));
	/* The data path's own counters live in device memory: GPU atomics need no PCIe. */
	env->host_state = env->f.qp.state;
	CUDA_OK(cudaMalloc((void **)&env->f.qp.state, sizeof(*env->f.qp.state)));
	CUDA_OK(cudaMemset(env->f.qp.state, 0, sizeof(*env->f.qp.state)));
	dq = env->f.qp;
	dq.sq_buf = (uint8_t *)gpu_dptr(dq.sq_buf);
	dq.rq_buf = (uint8_t *)gpu_dptr(dq.rq_buf);
	dq.dbrec = (uint32_t *)gpu_dptr(dq.dbrec);
	dq.db = (uint64_t *)gpu_dptr(dq.db);
	dq.mailbox = (uint32_t *)gpu_dptr(dq.mailbox);
	dq.scq.buf = (uint8_t *)gpu_dptr(dq.scq.buf);
	dq.scq.dbrec = (uint32_t *)gpu_dptr(dq.scq.dbrec);
	dq.rcq.buf = (uint8_t *)gpu_dptr(dq.rcq.buf);
	dq.rcq.dbrec = (uint32_t *)gpu_dptr(dq.rcq.dbrec);
	CUDA_OK(cudaMalloc((void **)&env->d_qp, sizeof(dq)));
	CUDA_OK(cudaMemcpy(env->d_qp, &dq, sizeof(dq), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMalloc((void **)&env->d_res, sizeof(struct gpu_result)));
	CUDA_OK(cudaMemset(env->d_res, 0, sizeof(struct gpu_result)));
	env->nidx = nidx;
	CUDA_OK(cudaMalloc((void **)&env->d_idx, (nidx ? nidx : 1) * sizeof(uint32_t)));
}

static void gpu_env_fini(struct gpu_env *env)
{
	int k;

	CUDA_OK(cudaFree(env->f.qp.state));
	CUDA_OK(cudaFree(env->d_qp));
	CUDA_OK(cudaFree(env->d_res));
	CUDA_OK(cudaFree(env->d_idx));
	for (k = 0; k < env->f.nmem; k++)
		CUDA_OK(cudaHostUnregister(env->f.mem[k]));
	env->f.qp.state = env->host_state;
	fix_fini(&env->f);
}

/* Run the kernel already launched against the host NIC until it ends, then check both. */
static void gpu_finish(struct gpu_env *env, struct gpu_nic *nic, pthread_t th, uint32_t expect_wqes,
		       uint32_t expect_cqes)
{
	struct gpu_result res;
	struct gpunic_dev_qp_state st;

	CUDA_OK(cudaDeviceSynchronize());
	__atomic_store_n(&nic->stop, 1, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CUDA_OK(cudaMemcpy(&res, env->d_res, sizeof(res), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(&st, env->f.qp.state, sizeof(st), cudaMemcpyDeviceToHost));
	if (res.errors)
		harness_fail(__FILE__, __LINE__, "kernel: %u errors, first code %u detail 0x%llx",
			     res.errors, res.first_code, res.first_detail);
	if (nic->errors)
		harness_fail(__FILE__, __LINE__, "NIC: %u errors, first: %s", nic->errors,
			     nic->why);
	CHECK_EQ(nic->wqes, expect_wqes);
	CHECK_EQ(nic->cqes, expect_cqes);
	CHECK_EQ(res.polled, expect_cqes);
	if (!nic->recv) {
		CHECK_EQ(st.sq_reserved, st.sq_ready);
		CHECK_EQ(st.sq_ready, st.sq_submitted);
		CHECK_EQ(st.sq_submitted, st.sq_completed);
		CHECK_EQ(nic_sq_pi(&env->f), st.sq_submitted & 0xffff);
		CHECK_EQ(st.sq_db_lock, 0);
	}
	if (nic->seen) {
		uint32_t *idx = (uint32_t *)malloc(env->nidx * sizeof(uint32_t)), k;

		CHECK(idx);
		CUDA_OK(cudaMemcpy(idx, env->d_idx, env->nidx * sizeof(uint32_t),
				   cudaMemcpyDeviceToHost));
		for (k = 0; k < env->nidx; k++) {
			CHECK_EQ(nic->seen[k], 1);
			CHECK_EQ(nic->found_at[k], idx[k]);
		}
		free(idx);
	}
}

static void gpu_nic_start(struct gpu_nic *nic, struct gpu_env *env, uint32_t threads,
			  uint32_t per_thread, int recv, pthread_t *th)
{
	memset(nic, 0, sizeof(*nic));
	nic->f = &env->f;
	nic->recv = recv;
	nic->threads = threads;
	nic->per_thread = per_thread;
	if (threads) {
		nic->seen = (uint8_t *)calloc(threads * per_thread, 1);
		nic->found_at = (uint32_t *)calloc(threads * per_thread, sizeof(uint32_t));
		CHECK(nic->seen && nic->found_at);
	}
	CHECK_EQ(pthread_create(th, NULL, gpu_nic_main, nic), 0);
}

static void gpu_nic_free(struct gpu_nic *nic)
{
	free(nic->seen);
	free(nic->found_at);
}

TEST(gpu_thread_scope_send)
{
	const uint32_t n = 4000;
	struct gpu_env env;
	struct gpu_nic nic;
	pthread_t th;

	gpu_env_init(&env, 64, 4, 64, GPUNIC_HANDLER_GPU_DB, n);
	gpu_nic_start(&nic, &env, 1, n, 0, &th);
	k_thread_scope<<<1, 1>>>(env.d_qp, n, env.d_idx, env.d_res);
	gpu_finish(&env, &nic, th, n, n / 2 + n % 2);
	/* The doorbell names the last WQE, as a UAR write would. */
	{
		const uint8_t *db = (const uint8_t *)env.f.db;
		uint32_t idx = (rd_be32(db) >> 8) & 0xffff;

		CHECK_MEM(db, dec_unit(&env.f, idx, 0), 8);
	}
	gpu_nic_free(&nic);
	gpu_env_fini(&env);
}

TEST(gpu_shared_512_threads)
{
	const uint32_t blocks = 4, per_block = 128, per_thread = 12;
	const uint32_t posters = blocks * per_block - 32;
	struct gpu_env env;
	struct gpu_nic nic;
	pthread_t th;

	gpu_env_init(&env, 256, 4, 256, GPUNIC_HANDLER_GPU_DB, posters * per_thread);
	gpu_nic_start(&nic, &env, posters, per_thread, 0, &th);
	k_shared<<<blocks, per_block>>>(env.d_qp, per_thread, posters * per_thread, env.d_idx,
					env.d_res);
	gpu_finish(&env, &nic, th, posters * per_thread, posters * per_thread);
	gpu_nic_free(&nic);
	gpu_env_fini(&env);
}

TEST(gpu_shared_cpu_proxy)
{
	const uint32_t blocks = 2, per_block = 96, per_thread = 20;
	const uint32_t posters = blocks * per_block - 32;
	struct gpu_env env;
	struct gpu_nic nic;
	pthread_t th;

	gpu_env_init(&env, 128, 4, 128, GPUNIC_HANDLER_CPU_PROXY, posters * per_thread);
	gpu_nic_start(&nic, &env, posters, per_thread, 0, &th);
	k_shared<<<blocks, per_block>>>(env.d_qp, per_thread, posters * per_thread, env.d_idx,
					env.d_res);
	gpu_finish(&env, &nic, th, posters * per_thread, posters * per_thread);
	{
		struct gpunic_dev_qp_state st;

		CUDA_OK(cudaMemcpy(&st, env.f.qp.state, sizeof(st), cudaMemcpyDeviceToHost));
		CHECK_EQ(*env.f.mailbox, st.sq_submitted);
		CHECK_EQ(*env.f.db, 0);
	}
	gpu_nic_free(&nic);
	gpu_env_fini(&env);
}

TEST(gpu_warp_scope)
{
	const uint32_t warps = 8, per_warp = 600;
	uint32_t want = 0, s, n, k, w;
	struct gpu_env env;
	struct gpu_nic nic;
	pthread_t th;

	for (w = 0; w < warps; w++)
		for (s = 0; s < per_warp; s += n) {
			n = 1 + (s * 7 + w) % GPUNIC_DEV_WARP_SIZE;
			if (n > per_warp - s)
				n = per_warp - s;
			for (k = 0; k < n; k++)
				want += (s + k) % 2 || k == n - 1;
		}
	gpu_env_init(&env, 512, 4, 256, GPUNIC_HANDLER_GPU_DB, warps * per_warp);
	gpu_nic_start(&nic, &env, warps, per_warp, 0, &th);
	k_warp<<<2, warps * 32>>>(env.d_qp, per_warp, want, env.d_idx, env.d_res);
	gpu_finish(&env, &nic, th, warps * per_warp, want);
	gpu_nic_free(&nic);
	gpu_env_fini(&env);
}

TEST(gpu_recv_inline_scatter)
{
	const uint32_t n = 3000;
	struct gpu_env env;
	struct gpu_nic nic;
	pthread_t th;

	gpu_env_init(&env, 16, 16, 32, GPUNIC_HANDLER_GPU_DB, 0);
	gpu_nic_start(&nic, &env, 0, 0, 1, &th);
	k_recv<<<1, 1>>>(env.d_qp, n, 16, env.d_res);
	gpu_finish(&env, &nic, th, n, n);
	gpu_nic_free(&nic);
	gpu_env_fini(&env);
}
