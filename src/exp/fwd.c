// SPDX-License-Identifier: MIT
/*
 * The forwarder on the host with the GPU: the receive ring, the QP (and idle ones beside it) and
 * the executor that echoes every message: a persistent GPU kernel, the same code on a host
 * thread, or copy-in / launch / copy-out per message (naive). With RPC the gpu and cpu
 * executors answer every message as a request through the function table built here.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exp_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/hoptrace.h"
#include "gpunic/mem.h"
#include "timing.h"

struct lb_fwd {
	struct lb_fwd_cfg cfg;
	struct gpunic_ep_addr addr;
	enum gpunic_mtu mtu;
	uint32_t psn;
	gpunic_mem_t *mem;
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;	/* the QP as exported, as the executor sees it */
	struct gpunic_mem_buf *ring_buf;	/* GPU executor: placed ring */
	uint8_t *ring_host;		/* the ring as the NIC (and the MR) address it */
	bool ring_malloced;
	size_t ring_bytes;
	struct gpunic_mr *ring_mr;
	struct gpunic_cq *idle_cq;	/* the CQ every idle QP of --qps shares */
	struct gpunic_loop_ctx ctx;
	struct gpunic_gpu_loop *gpu_loop;
	struct gpunic_gpu_naive *naive;
	pthread_t thr;
	bool thr_running;
	bool engine_running;
	bool started;
	atomic_bool stop;
	struct gpunic_rpc_table rpc_table;	/* RPC: what the executor serves */
	void *rpc_plugin;		/* RPC: the handler library, loaded while the table lives */
	struct lb_fwd_result final;	/* filled by lb_fwd_stop */
	bool stopped;
	uint32_t send_bbs_max;		/* largest send WQE gpunic_loop_send_back() posts */
	char gpu_name[96];
	uint8_t naive_out[LB_MSG_MAX];
};

const char *lb_fwd_gpu_name(const struct lb_fwd *f)
{
	return f->gpu_name;
}

struct gpunic_nic *lb_fwd_nic(struct lb_fwd *f)
{
	return f->nic;
}

enum gpunic_handler_mode lb_fwd_handler(const struct lb_fwd *f)
{
	return (enum gpunic_handler_mode)f->dq.handler_mode;
}

const struct gpunic_rpc_table *lb_fwd_rpc_table(const struct lb_fwd *f)
{
	return f->cfg.rpc ? &f->rpc_table : NULL;
}

/*
 * RPC: the built-in functions and those of the handler library, in f->rpc_table. Only the gpu
 * and cpu executors dispatch, and a library's handlers run on the CPU alone.
 */
static int fwd_rpc_table(struct lb_fwd *f)
{
	const struct lb_fwd_cfg *cfg = &f->cfg;
	char why[256];
	int err;

	if (cfg->exec == LB_EXEC_NAIVE) {
		LB_ERR("the naive executor answers no RPC requests: use the gpu or cpu executor\n");
		return EINVAL;
	}
	if (cfg->rpc_handler_lib && cfg->exec == LB_EXEC_GPU) {
		LB_ERR("%s: handlers from a shared library run on the CPU, and the gpu executor "
		       "cannot call them: use the cpu executor\n", cfg->rpc_handler_lib);
		return EINVAL;
	}
	gpunic_rpc_table_init(&f->rpc_table, cfg->rpc_flags);
	err = gpunic_rpc_register_builtins(&f->rpc_table, why, sizeof(why));
	if (!err && cfg->rpc_handler_lib)
		err = gpunic_rpc_load_plugin(&f->rpc_table, cfg->rpc_handler_lib, &f->rpc_plugin,
					     why, sizeof(why));
	if (err) {
		LB_ERR("RPC functions: %s\n", why);
		return err;
	}
	f->ctx.rpc = &f->rpc_table;
	return 0;
}

static int fwd_alloc_ring(struct lb_fwd *f)
{
	enum gpunic_mem_placement where;
	const char *why = "";

	f->ring_bytes = (size_t)f->cfg.slots * LB_SLOT_BYTES;
	if (f->cfg.exec != LB_EXEC_GPU) {
		f->ring_host = lb_zalloc(f->ring_bytes);
		if (!f->ring_host)
			return ENOMEM;
		f->ring_malloced = true;
		f->ctx.ring = f->ring_host;
		return 0;
	}
	/* the NIC writes the payload, the kernel reads it (mem.h's placement policy) */
	where = gpunic_mem_placement_for(f->mem, GPUNIC_QUEUE_PAYLOAD, true, &why);
	f->ring_buf = gpunic_mem_alloc(f->mem, f->ring_bytes, GPUNIC_GPU_PAGE_SIZE, where);
	if (!f->ring_buf) {
		LB_ERR("receive ring: %zu bytes of %s memory: %s\n", f->ring_bytes,
		       gpunic_mem_placement_str(where), strerror(errno));
		return errno ? errno : ENOMEM;
	}
	if (!f->ring_buf->cpu || !f->ring_buf->gpu) {
		LB_ERR("receive ring: %s memory is not reachable from both the NIC and the GPU\n",
		       gpunic_mem_placement_str(f->ring_buf->placement));
		return EINVAL;
	}
	f->ring_host = f->ring_buf->cpu;
	f->ctx.ring = f->ring_buf->gpu;
	return 0;
}

static int fwd_check_gpu(struct lb_fwd *f)
{
	struct gpunic_gpu_info info;
	int err = gpunic_gpu_probe(f->cfg.gpu, &info);

	if (err || !info.present) {
		LB_ERR("the %s executor needs a GPU, and there is none: %s\n",
		       lb_executor_name(f->cfg.exec), info.reason[0] ? info.reason : strerror(err));
		return ENODEV;
	}
	snprintf(f->gpu_name, sizeof(f->gpu_name), "%s", info.name);
	return 0;
}

int lb_fwd_open(struct lb_fwd **out, const struct lb_fwd_cfg *cfg, struct gpunic_link *link,
		const struct gpunic_ep_addr *addr)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.max_send_wr = FWD_SQ_WR,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = MAX_INLINE,
		.cqe_scatter = true,
	};
	struct gpunic_mem_attr ma = { .cuda_device = cfg->gpu };
	struct lb_fwd *f;
	int err;

	*out = NULL;
	if (cfg->slots < 2 || cfg->slots > GPUNIC_DEV_MAX_RING) {
		LB_ERR("ring of %u slots: need 2..%u\n", cfg->slots, GPUNIC_DEV_MAX_RING);
		gpunic_link_close(link);
		return EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		gpunic_link_close(link);
		return ENOMEM;
	}
	f->cfg = *cfg;
	if (f->cfg.nic_driven_elsewhere)
		f->cfg.inline_engine = false;
	f->addr = *addr;
	f->mtu = gpunic_link_path_mtu(link);
	atomic_init(&f->stop, false);
	if (cfg->rpc) {
		err = fwd_rpc_table(f);
		if (err) {
			gpunic_link_close(link);
			free(f);
			return err;
		}
	}
	if (cfg->exec != LB_EXEC_CPU) {
		err = fwd_check_gpu(f);
		if (err) {
			gpunic_link_close(link);
			free(f);
			return err;
		}
	}
	if (cfg->exec == LB_EXEC_GPU) {
		f->mem = gpunic_mem_open(&ma);
		if (!f->mem) {
			err = errno;
			LB_ERR("memory context for GPU %d: %s\n", cfg->gpu, strerror(err));
			gpunic_link_close(link);
			free(f);
			return err;
		}
	}
	f->nic = lb_nic_open(link, addr,
			  cfg->exec == LB_EXEC_GPU ? GPUNIC_EXECUTOR_GPU : GPUNIC_EXECUTOR_CPU,
			  f->mem, cfg->time_engine ? GPUNIC_NIC_TIME_ENGINE : 0);
	if (!f->nic) {
		lb_fwd_close(f);
		return EIO;
	}
	err = ENOMEM;
	f->pd = gpunic_pd_alloc(f->nic);
	f->scq = gpunic_cq_create(f->nic, FWD_SQ_WR);
	f->rcq = gpunic_cq_create(f->nic, 2 * cfg->slots);
	if (!f->pd || !f->scq || !f->rcq) {
		err = errno ? errno : ENOMEM;
		LB_ERR("forwarder: PD/CQ: %s\n", strerror(err));
		goto fail;
	}
	ia.send_cq = f->scq;
	ia.recv_cq = f->rcq;
	ia.max_recv_wr = cfg->slots;
	ia.handler_mode = cfg->handler;
	f->qp = gpunic_qp_create(f->pd, &ia);
	if (!f->qp) {
		err = errno;
		LB_ERR("forwarder: QP: %s\n", strerror(err));
		goto fail;
	}
	err = gpunic_ep_qp_init("gpunic", f->qp, GPUNIC_ACCESS_REMOTE_WRITE);
	if (err)
		goto fail;
	f->psn = gpunic_ep_pick_psn(f->qp->qp_num);
	err = fwd_alloc_ring(f);
	if (err)
		goto fail;
	f->ring_mr = gpunic_mr_reg(f->pd, f->ring_host, f->ring_bytes,
				   GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE);
	if (!f->ring_mr) {
		err = errno;
		LB_ERR("forwarder: ring MR: %s\n", strerror(err));
		goto fail;
	}
	err = gpunic_qp_export(f->qp, &f->dq);
	if (!err && gpunic_dev_qp_check(&f->dq))
		err = EINVAL;
	if (err) {
		LB_ERR("forwarder: QP export: %s\n", strerror(err));
		goto fail;
	}
	/* gpunic_gpu_loop_start() copies the QP description to the GPU itself */
	f->ctx.qp = &f->dq;
	f->ctx.ring_iova = (uint64_t)(uintptr_t)f->ring_host;
	f->ctx.ring_lkey = f->ring_mr->lkey;
	f->ctx.slot_bytes = LB_SLOT_BYTES;
	f->ctx.slots = cfg->slots;
	f->ctx.work = cfg->work;
	f->ctx.polls_in_flight = cfg->gpu_polls;
	f->ctx.signal_every = FWD_SIGNAL_EVERY;
	f->ctx.recv_with_buffers = cfg->mode == LB_MODE_SEND;
	/* an inline SEND of max_inline bytes; a SEND by SGE is smaller */
	f->send_bbs_max = gpunic_dev_ds_to_bbs(1 + gpunic_dev_inline_units(f->dq.max_inline));
	if (cfg->exec == LB_EXEC_NAIVE) {
		err = gpunic_gpu_naive_open(cfg->gpu, LB_MSG_MAX, &f->naive);
		if (err) {
			LB_ERR("naive executor: GPU buffers and stream: %s\n", strerror(err));
			f->naive = NULL;
			goto fail;
		}
	}
	*out = f;
	return 0;
fail:
	lb_fwd_close(f);
	return err;
}

void lb_fwd_info(const struct lb_fwd *f, struct gpunic_qp_info *info)
{
	lb_fill_info(info, f->qp, &f->addr, f->psn);
	info->va = (uint64_t)(uintptr_t)f->ring_host;
	info->rkey = f->ring_mr->rkey;
	info->len = (uint32_t)f->ring_bytes;
}

/*
 * The naive path, per message: what code without a persistent kernel does. The receive is
 * polled on the host, the payload copied to the GPU, a kernel launched, the result copied back
 * and sent with the CPU data path (inline, or from the slot for larger messages).
 */
static int naive_step(struct lb_fwd *f)
{
	struct gpunic_loop_ctx *c = &f->ctx;
	struct gpunic_dev_cqe cqe;
	uint32_t slot, len;
	uint8_t *slot_ptr;
	const uint8_t *in;

	if (!gpunic_dev_poll_rcq(c->qp, &cqe))
		return 0;
	slot = cqe.wqe_idx % c->slots;
	if (gpunic_dev_cqe_is_error(&cqe) || cqe.byte_cnt > c->slot_bytes ||
	    (cqe.opcode == MLX5_CQE_RESP_WR_IMM && cqe.imm >= c->slots)) {
		c->errors++;
		c->last_syndrome = cqe.syndrome;
		gpunic_loop_post_recv(c, slot);
		return -1;
	}
	len = cqe.byte_cnt;
	if (cqe.opcode == MLX5_CQE_RESP_WR_IMM)
		slot = cqe.imm;
	slot_ptr = gpunic_loop_slot(c, slot);
	in = cqe.data_in_cqe ? cqe.data : slot_ptr;
	if (gpunic_gpu_naive_process(f->naive, in, f->naive_out, len, c->work)) {
		c->errors++;
		gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
		return -1;
	}
	/* larger messages go back by SGE from the slot: put the result there */
	if (len > c->qp->max_inline)
		memcpy(slot_ptr, f->naive_out, len);
	if (gpunic_loop_send_back(c, f->naive_out, len, slot) < 0) {
		c->errors++;
		gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
		return -1;
	}
	gpunic_dev_submit(c->qp);
	c->echoed++;
	gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
	return 1;
}

static void exec_backoff(uint32_t *idle)
{
	if (*idle < EXEC_SPIN_ROUNDS) {
		(*idle)++;
		timing_cpu_relax();
	} else {
		sched_yield();
	}
}

/*
 * Room for one echo in the send queue, reaping completions if needed. gpunic_loop_send_back()
 * waits for room without end, so a step only starts when its send cannot block: a NIC that
 * cannot transmit (the sensor went away and the link is full) must not hang this thread, which
 * has to see the stop flag (and, with the inline engine, is the one that drives the NIC).
 */
static bool fwd_send_room(struct lb_fwd *f)
{
	if (gpunic_dev_sq_free(&f->dq) >= f->send_bbs_max)
		return true;
	gpunic_loop_reap_sends(&f->ctx);
	return gpunic_dev_sq_free(&f->dq) >= f->send_bbs_max;
}

static void *fwd_exec_main(void *arg)
{
	struct lb_fwd *f = arg;
	uint32_t idle = 0;
	int work, r = 0;

	hop_trace_role(HOP_ROLE_EXECUTOR);
	while (!atomic_load_explicit(&f->stop, memory_order_acquire)) {
		work = 0;
		if (f->cfg.inline_engine)
			work += gpunic_nic_poll(f->nic, FWD_NIC_BUDGET);
		if (fwd_send_room(f))
			r = f->cfg.exec == LB_EXEC_NAIVE ? naive_step(f) :
							   gpunic_loop_step(&f->ctx);
		else
			r = 0;
		if (r || work)
			idle = 0;
		else
			exec_backoff(&idle);
	}
	/* what was posted last still leaves */
	if (f->cfg.inline_engine)
		for (int i = 0; i < 64 && gpunic_nic_poll(f->nic, FWD_NIC_BUDGET); i++)
			;
	return NULL;
}

int lb_fwd_start(struct lb_fwd *f)
{
	int err;

	if (f->started)
		return EBUSY;
	if (f->cfg.exec == LB_EXEC_GPU) {
		/* the kernel posts the receives itself: its counters live in GPU memory */
		err = gpunic_gpu_loop_start(f->cfg.gpu, &f->ctx, &f->gpu_loop);
		if (err) {
			LB_ERR("starting the forwarder kernel: %s\n", strerror(err));
			f->gpu_loop = NULL;
			return err;
		}
	} else {
		err = gpunic_loop_prime(&f->ctx);
		if (err) {
			LB_ERR("posting the ring's receives: %s\n", strerror(-err));
			return -err;
		}
	}
	f->started = true;
	if (f->cfg.nic_driven_elsewhere) {
		/* nothing here polls the NIC: lb_sensor_drive_also() gave it to another thread */
	} else if (f->cfg.exec == LB_EXEC_GPU || !f->cfg.inline_engine) {
		err = gpunic_nic_start(f->nic, f->cfg.engine_cpu);
		if (err) {
			LB_ERR("starting the NIC engine thread: %s\n", strerror(err));
			return err;
		}
		f->engine_running = true;
	}
	if (f->cfg.exec != LB_EXEC_GPU) {
		atomic_store(&f->stop, false);
		err = timing_thread_start(&f->thr, "gpunic-exec", f->cfg.exec_cpu, fwd_exec_main,
					  f);
		if (err) {
			LB_ERR("starting the executor thread: %s\n", strerror(err));
			return err;
		}
		f->thr_running = true;
	}
	return 0;
}

/* The idle QPs of --qps: connected to the sensor's address with QP numbers nobody uses, so
 * the engine has them to look at on every poll, and nothing ever arrives for them. */
static int fwd_connect_idle(struct lb_fwd *f, const struct gpunic_qp_info *remote)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.max_send_wr = 4,
		.max_recv_wr = 4,
	};
	struct gpunic_qp_info peer = *remote;
	int err;

	if (!f->cfg.idle_qps)
		return 0;
	f->idle_cq = gpunic_cq_create(f->nic, 16);
	if (!f->idle_cq) {
		LB_ERR("forwarder: CQ of the idle QPs: %s\n", strerror(errno));
		return errno ? errno : ENOMEM;
	}
	ia.send_cq = ia.recv_cq = f->idle_cq;
	for (uint32_t i = 0; i < f->cfg.idle_qps; i++) {
		struct gpunic_qp *qp = gpunic_qp_create(f->pd, &ia);

		if (!qp) {
			err = errno;
			LB_ERR("forwarder: idle QP %u of %u: %s\n", i + 1, f->cfg.idle_qps,
			       strerror(err));
			return err;
		}
		err = gpunic_ep_qp_init("gpunic", qp, GPUNIC_ACCESS_REMOTE_WRITE);
		peer.qpn = 0xfff000 + i;
		if (!err)
			err = lb_qp_connect(qp, &f->addr, f->psn, f->mtu, &peer);
		if (err)
			return err;
	}
	return 0;
}

void lb_fwd_set_psn(struct lb_fwd *f, uint32_t psn)
{
	f->psn = psn & GPUNIC_PSN_MASK;
}

int lb_fwd_connect(struct lb_fwd *f, const struct gpunic_qp_info *remote)
{
	int err = lb_qp_connect(f->qp, &f->addr, f->psn, f->mtu, remote);

	return err ? err : fwd_connect_idle(f, remote);
}

int lb_fwd_qp_counters(struct lb_fwd *f, struct gpunic_qp_counters *qc)
{
	return gpunic_qp_query_counters(f->qp, qc);
}

int lb_fwd_nic_counters(struct lb_fwd *f, struct gpunic_nic_counters *nc)
{
	return gpunic_nic_query_counters(f->nic, nc);
}

int lb_fwd_stop(struct lb_fwd *f, struct lb_fwd_result *res)
{
	struct gpunic_loop_ctx fin;
	int err = 0, e;

	if (f->stopped)
		goto out;
	/* the executor first: it may wait on the NIC for send-queue room */
	if (f->thr_running) {
		atomic_store_explicit(&f->stop, true, memory_order_release);
		pthread_join(f->thr, NULL);
		f->thr_running = false;
		f->final.echoed = f->ctx.echoed;
		f->final.errors = f->ctx.errors + f->ctx.send_errors;
		f->final.last_syndrome = f->ctx.last_syndrome;
		f->final.rpc = f->ctx.rpc_counts;
	}
	if (f->gpu_loop) {
		memset(&fin, 0, sizeof(fin));
		e = gpunic_gpu_loop_stop(f->gpu_loop, &fin);
		f->gpu_loop = NULL;
		if (e) {
			LB_ERR("the forwarder kernel failed: %s\n", strerror(e));
			err = e;
		}
		f->final.echoed = fin.echoed;
		f->final.errors = fin.errors + fin.send_errors;
		f->final.last_syndrome = fin.last_syndrome;
		f->final.rpc = fin.rpc_counts;
	}
	if (f->engine_running) {
		gpunic_nic_stop(f->nic);
		f->engine_running = false;
	}
	gpunic_nic_query_counters(f->nic, &f->final.nic);
	gpunic_qp_query_counters(f->qp, &f->final.qp);
	f->stopped = true;
out:
	if (res)
		*res = f->final;
	return err;
}

void lb_fwd_close(struct lb_fwd *f)
{
	if (!f)
		return;
	if (f->nic && f->qp && f->started)
		lb_fwd_stop(f, NULL);
	if (f->naive)
		gpunic_gpu_naive_close(f->naive);
	if (f->nic)
		gpunic_nic_close(f->nic);
	if (f->ring_malloced)
		free(f->ring_host);
	/* a placed ring goes with the memory context */
	if (f->mem)
		gpunic_mem_close(f->mem);
	/* after the executor: the table pointed into the library */
	gpunic_rpc_unload_plugin(f->rpc_plugin);
	free(f);
}

