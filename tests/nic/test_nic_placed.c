// SPDX-License-Identifier: MIT
/*
 * Queue placement for a GPU executor, in CI: the memory layer's test-only fake GPU
 * (GPUNIC_MEM_FAKE_GPU=1: "device" memory is host memory at other addresses) lets the NIC place
 * every queue as it would for a kernel, and the host then drives the exported (device)
 * addresses with the same data-path code. What it proves: the engine only uses its CPU views,
 * the export hands out the executor's views, data-path state lives where only the executor (and
 * the memory layer's copy) reaches it, and everything is released.
 */
#include <sys/mman.h>
#include <stdlib.h>

#include "gpunic/mem.h"
#include "nic_fixture.h"

static gpunic_mem_t *fake_gpu_mem(void)
{
	gpunic_mem_t *mem;
	struct gpunic_mem_caps caps;

	setenv("GPUNIC_MEM_FAKE_GPU", "1", 1);
	setenv("GPUNIC_GDRCOPY", "0", 1);
	mem = gpunic_mem_open(NULL);
	CHECK(mem);
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	if (!caps.fake_gpu)
		SKIP("the fake GPU backend is not available: %s", caps.gpu_reason);
	return mem;
}

static void placed_exchange(enum gpunic_qp_type type, enum gpunic_handler_mode mode)
{
	struct fx_opts o = { .type = type, .mtu = GPUNIC_MTU_1024, .mode = mode };
	struct gpunic_mem_caps caps;
	struct fixture fx;
	gpunic_mem_t *mem = fake_gpu_mem();

	o.mem_a = mem;
	fx_setup(&fx, FX_LINK_SHM, &o);
	/* The data-path counters have no CPU view: the export must not give the engine's. */
	CHECK(fx.a.dq.state != NULL);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 32, 1);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_WRITE_IMM, 3000, 2);
	fx_xfer(&fx, &fx.b, &fx.a, MLX5_OPCODE_RDMA_WRITE_IMM, 32, 3);
	fx_xfer(&fx, &fx.b, &fx.a, MLX5_OPCODE_SEND_IMM, 2101, 4);
	if (type == GPUNIC_QPT_RC)
		fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_READ, 5000, 5);
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK(caps.live_buffers > 0);
	fx_teardown(&fx);
	/* Closing the NIC returned every queue buffer to the memory layer. */
	CHECK_EQ(gpunic_mem_query(mem, &caps), 0);
	CHECK_EQ(caps.live_buffers, 0);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}

TEST(placed_uc_gpu_db)
{
	placed_exchange(GPUNIC_QPT_UC, GPUNIC_HANDLER_GPU_DB);
}

TEST(placed_rc_gpu_db)
{
	placed_exchange(GPUNIC_QPT_RC, GPUNIC_HANDLER_GPU_DB);
}

TEST(placed_uc_cpu_proxy)
{
	placed_exchange(GPUNIC_QPT_UC, GPUNIC_HANDLER_CPU_PROXY);
}

/* A GPU executor needs a placement context. */
TEST(placed_gpu_executor_needs_mem)
{
	char name[64];
	struct gpunic_shm_link_attr la = { .name = name, .create = 1 };
	struct gpunic_nic_attr na = { .ip = IP4(10, 0, 0, 1), .executor = GPUNIC_EXECUTOR_GPU };

	snprintf(name, sizeof(name), "/gpunic-placed-test-%d", (int)getpid());
	shm_unlink(name);
	na.link = gpunic_link_shm_open(&la);
	CHECK(na.link);
	CHECK(gpunic_nic_open(&na) == NULL);
	CHECK_EQ(errno, EINVAL);
	gpunic_link_close(na.link);
}
