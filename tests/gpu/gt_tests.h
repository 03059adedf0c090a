/* SPDX-License-Identifier: MIT */
/*
 * The GPU data-path suite's cases, named once for both executors: test_gpu_dev.c runs them on a
 * GPU (CTest gpu_<case>, label gpu), test_gpu_twin.c on host threads (gpu_twin_<case>), each
 * after defining GT_BE as its struct gt_backend. tests/gpu/CMakeLists.txt reads the TEST lines
 * of this file to register one CTest per case and executor.
 *
 * Cases (the numbering): 1 one request of every opcode and size (xfer), 2 the receive
 * path (recv), 3 many threads on one send queue (mt), 4 warp scope (warp), 5 both handler modes
 * (the *_proxy cases; the others ring the doorbell, GPU_DB), 6 the persistent forwarder (loop),
 * 7 the forwarder as an RPC server (loop_rpc).
 */
#ifndef GT_TESTS_H
#define GT_TESTS_H

#ifndef GT_BE
#error "define GT_BE (the struct gt_backend to run on) before including gt_tests.h"
#endif

#define GT_DB GPUNIC_HANDLER_GPU_DB
#define GT_PROXY GPUNIC_HANDLER_CPU_PROXY
#define GT_RC GPUNIC_QPT_RC
#define GT_UC GPUNIC_QPT_UC
/* An array of sizes and its length, as gt_xfer_suite() takes them. */
#define GT_SIZES(...)                     \
	(const uint32_t[]){ __VA_ARGS__ }, \
		sizeof((const uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t)

/* ---------------------------------------------------------------- 1: one request */

/* RC, path MTU 1024: 0, 1, 31, 32, 33, 1023, 1024, 1025, 64 KiB, 1 MiB; inline where it fits. */
TEST(rc_send)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_DB, MLX5_OPCODE_SEND, NULL, 0);
}

TEST(rc_send_imm)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_DB, MLX5_OPCODE_SEND_IMM, NULL, 0);
}

TEST(rc_write)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_DB, MLX5_OPCODE_RDMA_WRITE, NULL, 0);
}

TEST(rc_write_imm)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_DB, MLX5_OPCODE_RDMA_WRITE_IMM, NULL, 0);
}

TEST(rc_read)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_DB, MLX5_OPCODE_RDMA_READ, NULL, 0);
}

TEST(uc_send)
{
	gt_xfer_suite(GT_BE, GT_UC, GT_DB, MLX5_OPCODE_SEND, GT_SIZES(0, 1, 32, 33, 1025, 65536));
}

TEST(uc_write)
{
	gt_xfer_suite(GT_BE, GT_UC, GT_DB, MLX5_OPCODE_RDMA_WRITE,
		      GT_SIZES(0, 1, 32, 33, 1025, 65536));
}

TEST(uc_write_imm)
{
	gt_xfer_suite(GT_BE, GT_UC, GT_DB, MLX5_OPCODE_RDMA_WRITE_IMM,
		      GT_SIZES(0, 1, 32, 33, 1025, 65536));
}

/* ---------------------------------------------------------------- 2: receives */

TEST(recv_rc_scatter)
{
	gt_recv_case(GT_BE, GT_RC, GT_DB, true);
}

TEST(recv_rc_noscatter)
{
	gt_recv_case(GT_BE, GT_RC, GT_DB, false);
}

TEST(recv_uc_scatter)
{
	gt_recv_case(GT_BE, GT_UC, GT_DB, true);
}

TEST(recv_uc_noscatter)
{
	gt_recv_case(GT_BE, GT_UC, GT_DB, false);
}

/* ---------------------------------------------------------------- 3: many threads, one queue */

/* blocks, threads per block, WRITEs per thread, bytes each, send queue WQEs */
TEST(mt_1)
{
	gt_mt_case(GT_BE, GT_RC, GT_DB, 1, 1, 300, 1024, 32);
}

TEST(mt_32)
{
	gt_mt_case(GT_BE, GT_RC, GT_DB, 1, 32, 32, 512, 32);
}

TEST(mt_128)
{
	gt_mt_case(GT_BE, GT_RC, GT_DB, 1, 128, 16, 256, 128);
}

TEST(mt_128_4_blocks)
{
	gt_mt_case(GT_BE, GT_RC, GT_DB, 4, 32, 16, 256, 128);
}

TEST(mt_1024)
{
	gt_mt_case(GT_BE, GT_RC, GT_DB, 1, 1024, 8, 64, 1024);
}

TEST(mt_1024_8_blocks)
{
	gt_mt_case(GT_BE, GT_RC, GT_DB, 8, 128, 8, 64, 1024);
}

TEST(mt_uc_128_4_blocks)
{
	gt_mt_case(GT_BE, GT_UC, GT_DB, 4, 32, 16, 256, 128);
}

/* ---------------------------------------------------------------- 4: warp scope */

/* blocks, warps per block, WRITEs per warp, bytes each, largest batch, full, inline */
TEST(warp_full_1)
{
	gt_warp_case(GT_BE, GT_DB, 1, 1, 320, 256, 32, true, false);
}

TEST(warp_full_4)
{
	gt_warp_case(GT_BE, GT_DB, 1, 4, 128, 256, 32, true, false);
}

TEST(warp_partial_4)
{
	gt_warp_case(GT_BE, GT_DB, 1, 4, 200, 128, 32, false, false);
}

TEST(warp_partial_inline_2_blocks)
{
	gt_warp_case(GT_BE, GT_DB, 2, 4, 150, 48, 32, false, true);
}

TEST(warp_small_batches)
{
	gt_warp_case(GT_BE, GT_DB, 1, 3, 100, 64, 5, false, false);
}

/* ---------------------------------------------------------------- 5: CPU_PROXY handler mode */

TEST(rc_proxy_send_imm)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_PROXY, MLX5_OPCODE_SEND_IMM, GT_SIZES(0, 33, 1025, 65536));
}

TEST(rc_proxy_write)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_PROXY, MLX5_OPCODE_RDMA_WRITE,
		      GT_SIZES(0, 1, 33, 1025, 65536));
}

TEST(rc_proxy_read)
{
	gt_xfer_suite(GT_BE, GT_RC, GT_PROXY, MLX5_OPCODE_RDMA_READ, GT_SIZES(0, 33, 1025, 65536));
}

TEST(uc_proxy_write_imm)
{
	gt_xfer_suite(GT_BE, GT_UC, GT_PROXY, MLX5_OPCODE_RDMA_WRITE_IMM,
		      GT_SIZES(0, 32, 1025, 65536));
}

TEST(recv_rc_proxy)
{
	gt_recv_case(GT_BE, GT_RC, GT_PROXY, true);
}

TEST(mt_proxy_128)
{
	gt_mt_case(GT_BE, GT_RC, GT_PROXY, 1, 128, 16, 256, 128);
}

TEST(mt_proxy_1024_8_blocks)
{
	gt_mt_case(GT_BE, GT_RC, GT_PROXY, 8, 128, 8, 64, 1024);
}

TEST(warp_proxy_partial_inline)
{
	gt_warp_case(GT_BE, GT_PROXY, 2, 2, 160, 40, 32, false, true);
}

/* ---------------------------------------------------------------- 6: the forwarder */

/* WRITE_WITH_IMM into ring slots (zero-length receives) or SEND, 1000 messages of 32 bytes. */
TEST(loop_write_imm)
{
	gt_loop_case(GT_BE, GT_DB, false, GPUNIC_LOOP_WORK_NONE, false, 1000);
}

TEST(loop_write_imm_add_one)
{
	gt_loop_case(GT_BE, GT_DB, false, GPUNIC_LOOP_WORK_ADD_ONE, false, 1000);
}

TEST(loop_send)
{
	gt_loop_case(GT_BE, GT_DB, true, GPUNIC_LOOP_WORK_NONE, false, 1000);
}

TEST(loop_send_add_one)
{
	gt_loop_case(GT_BE, GT_DB, true, GPUNIC_LOOP_WORK_ADD_ONE, false, 1000);
}

TEST(loop_send_scatter_add_one)
{
	gt_loop_case(GT_BE, GT_DB, true, GPUNIC_LOOP_WORK_ADD_ONE, true, 1000);
}

TEST(loop_proxy_write_imm)
{
	gt_loop_case(GT_BE, GT_PROXY, false, GPUNIC_LOOP_WORK_NONE, false, 1000);
}

/* ---------------------------------------------------------------- 7: RPC in the forwarder */

/* 1200 requests, every kind of gt_rpc_request() a hundred times: answered, or dropped. */
TEST(loop_rpc_write_imm)
{
	gt_loop_rpc_case(GT_BE, GT_DB, false, false, false, 1, 1200);
}

TEST(loop_rpc_write_imm_drops)
{
	gt_loop_rpc_case(GT_BE, GT_DB, false, false, true, 1, 1200);
}

TEST(loop_rpc_write_imm_two_warps)
{
	gt_loop_rpc_case(GT_BE, GT_DB, false, false, false, 2, 1200);
}

TEST(loop_rpc_send)
{
	gt_loop_rpc_case(GT_BE, GT_DB, true, false, false, 1, 1200);
}

TEST(loop_rpc_send_scatter_drops)
{
	gt_loop_rpc_case(GT_BE, GT_DB, true, true, true, 1, 1200);
}

TEST(loop_rpc_proxy_write_imm)
{
	gt_loop_rpc_case(GT_BE, GT_PROXY, false, false, false, 1, 1200);
}

#endif /* GT_TESTS_H */
