// SPDX-License-Identifier: MIT
/* RC end to end: every opcode (READ included), size and path MTU in both directions, PSN wrap,
 * retransmission, RNR and the error paths. */
#include "nic_fixture.h"

TEST(rc_send_shm_basic)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .mtu = GPUNIC_MTU_1024 };
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 5, 1);
	fx_xfer(&fx, &fx.b, &fx.a, MLX5_OPCODE_SEND_IMM, 3000, 2);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_WRITE, 2101, 3);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_WRITE_IMM, 7, 4);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_READ, 3000, 5);
	fx_teardown(&fx);
}

TEST(rc_matrix_mtu256)
{
	fx_matrix(GPUNIC_QPT_RC, GPUNIC_MTU_256, false);
}

TEST(rc_matrix_mtu512)
{
	fx_matrix(GPUNIC_QPT_RC, GPUNIC_MTU_512, false);
}

TEST(rc_matrix_mtu1024)
{
	fx_matrix(GPUNIC_QPT_RC, GPUNIC_MTU_1024, false);
}

TEST(rc_matrix_mtu2048)
{
	fx_matrix(GPUNIC_QPT_RC, GPUNIC_MTU_2048, false);
}

TEST(rc_matrix_mtu4096)
{
	fx_matrix(GPUNIC_QPT_RC, GPUNIC_MTU_4096, false);
}

TEST(rc_matrix_cqe_scatter)
{
	fx_matrix(GPUNIC_QPT_RC, GPUNIC_MTU_1024, true);
}

/* 1 MiB messages from just below 2^24 cross the PSN wrap in both directions */
TEST(rc_psn_wrap)
{
	fx_matrix_psn(GPUNIC_QPT_RC, GPUNIC_MTU_256, false, FX_LINK_SHM, 0xFFFFF0);
}

TEST(rc_link_udp)
{
	fx_matrix_psn(GPUNIC_QPT_RC, GPUNIC_MTU_1024, false, FX_LINK_UDP, 0xFFFFFE);
}

TEST(rc_link_dgram)
{
	fx_matrix_psn(GPUNIC_QPT_RC, GPUNIC_MTU_1024, false, FX_LINK_DGRAM, 7);
}
