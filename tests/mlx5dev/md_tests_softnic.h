/* SPDX-License-Identifier: MIT */
/*
 * mlx5dev cases about what the softnic refuses or ignores, which no GPU is needed to show: run
 * by the CPU twin only (CTest mlx5dev_twin_<case>, label mlx5dev). Each posts, through
 * mlx5_dev_lib.h, a WQE that third-party device code may post to a ConnectX.
 */
#ifndef MD_TESTS_SOFTNIC_H
#define MD_TESTS_SOFTNIC_H

#ifndef MD_BE
#error "define MD_BE (the struct md_backend to run on) before including md_tests_softnic.h"
#endif

/* Opcodes outside what the softnic implements: refused with an error CQE, QP to ERR. */
TEST(refuse_send_inval)
{
	md_refuse_case(MD_BE, MLX5_OPCODE_SEND_INVAL, "SEND_INV");
}

TEST(refuse_local_inval)
{
	md_refuse_case(MD_BE, MLX5_OPCODE_LOCAL_INVAL, "LOCAL_INV");
}

TEST(refuse_umr)
{
	md_refuse_case(MD_BE, MLX5_OPCODE_UMR, "UMR");
}

TEST(refuse_masked_cs)
{
	md_refuse_case(MD_BE, MLX5_OPCODE_ATOMIC_MASKED_CS, "masked compare-and-swap");
}

TEST(refuse_masked_fa)
{
	md_refuse_case(MD_BE, MLX5_OPCODE_ATOMIC_MASKED_FA, "masked fetch-and-add");
}

/*
 * A BlueFlame copy written in address order, ctrl segment first (libmlx5's mlx5_bf_copy), and
 * interrupted for 200 us after those 16 bytes: the NIC must not run the WQE from a line whose
 * other 48 bytes are still the previous lap's (or zero). The record and doorbell come first.
 */
TEST(bf_copy_interrupted)
{
	md_plan_case(MD_BE, &md_conv_bf_pause, MD_PLAN_MIXED, MD_F_BAIT);
}

/* The FENCE bit after a READ. */
TEST(fence_read_then_write)
{
	md_fence_case(MD_BE);
}

#endif /* MD_TESTS_SOFTNIC_H */
