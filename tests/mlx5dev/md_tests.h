/* SPDX-License-Identifier: MIT */
/*
 * The mlx5dev cases, named once for both executors: test_mlx5dev_gpu.c runs them on a GPU
 * (CTest mlx5dev_gpu_<case>, labels gpu and mlx5dev), test_mlx5dev_twin.c on a host thread
 * (mlx5dev_twin_<case>, label mlx5dev), each after defining MD_BE as its struct md_backend.
 * tests/mlx5dev/CMakeLists.txt reads the TEST lines of this file.
 *
 * What each case proves is the list ("ConnectX semantics that third-party mlx5 device
 * code relies on"): device code that builds its own WQEs, rings its own doorbells and polls its
 * own CQEs (mlx5_dev_lib.h, never gpunic_dev.h) runs on the softnic unmodified, under
 *  1 the producer-index doorbell value (opcode 0, DS 0, QPN in qpn_ds): db_pi_*, with no
 *    phantom WQE (a valid WQE at the producer, never announced, never runs; a doorbell naming
 *    another QPN is ignored) and exactly the posted count of completions and bytes;
 *  2 the ring orders DB-DBR-DB (db_pi_db_dbr_db_mixed) and libmlx5's record-then-ctrl
 *    (db_ctrl_sig_mixed, with libmlx5's WQE signatures);
 *  3 GPU-scope fences only (every case; mlx5dev_ptx_gpu_scope_fences checks the PTX);
 *  4-5 owner-bit-only polling of CQEs the softnic initialised to 0xF1, on overrun-ignore CQs
 *    whose doorbell record nobody writes (every case: md_check_cq_conventions);
 *  6 144 operations on 64-entry queues: WRITE, inline WRITE, READ at 64 B, 4 KiB and 64 KiB
 *    (inline at 28, 12 and 1 B, what one WQEBB holds), every byte checked;
 *  7 GPU_DB (db_*), CPU_PROXY (proxy_mixed) and BlueFlame copies (bf_mixed, put_signal_bf);
 *  8 put with signal: WRITE then RC fetch-and-add on the peer's signal word (put_signal_*);
 *  9 DOCA's GPU_SM_NO_DBR, the doorbell word without the record (no_dbr_*), and a doorbell or
 *    mailbox written after the QP was quiet a while (*_quiet_*): a ConnectX acts on every
 *    doorbell write; DOCA's CPU_PROXY word, a 64-bit atomic max on an 8-byte mailbox, in the
 *    slot beside another proxy QP's (proxy_quiet_odd_slot).
 * What the softnic refuses or ignores (SEND_INV, UMR, masked atomics, FENCE, interrupted
 * BlueFlame copies) needs no GPU to show: md_tests_softnic.h, run by the twin alone.
 */
#ifndef MD_TESTS_H
#define MD_TESTS_H

#ifndef MD_BE
#error "define MD_BE (the struct md_backend to run on) before including md_tests.h"
#endif

/* WQEs per doorbell, in turn: single posts, small and large batches, a whole ring. */
#define MD_BATCHES 8, { 1, 7, 16, 3, 40, 2, 64, 5 }

/* NVSHMEM IBGDA / DOCA style: producer-index doorbell after the record. */
static const struct md_conv md_conv_pi = {
	"GPU_DB pi-doorbell DBR-DB", GPUNIC_HANDLER_GPU_DB, M5D_DB_VALUE_PI, M5D_RING_DBR_DB, 0,
	MD_BATCHES, 0, 0, 0,
};
/* Doorbell, record, doorbell again. */
static const struct md_conv md_conv_pi_dbdb = {
	"GPU_DB pi-doorbell DB-DBR-DB", GPUNIC_HANDLER_GPU_DB, M5D_DB_VALUE_PI,
	M5D_RING_DB_DBR_DB, 0, MD_BATCHES, 0, 0, 0,
};
/* libmlx5: record, then the last WQE's ctrl bytes; WQE signatures on. */
static const struct md_conv md_conv_ctrl = {
	"GPU_DB ctrl-doorbell DBR-DB signed", GPUNIC_HANDLER_GPU_DB, M5D_DB_VALUE_CTRL,
	M5D_RING_DBR_DB, M5D_QP_WQE_SIGNATURE, MD_BATCHES, 0, 0, 0,
};
/* CPU proxy: record and mailbox. */
static const struct md_conv md_conv_proxy = {
	"CPU_PROXY", GPUNIC_HANDLER_CPU_PROXY, M5D_DB_VALUE_PI, M5D_RING_DBR_DB, 0, MD_BATCHES, 0,
	0, 0,
};
/* BlueFlame: one WQE per ring, copied whole to its line, record and doorbell too. */
static const struct md_conv md_conv_bf = {
	"GPU_BF BlueFlame copy", GPUNIC_HANDLER_GPU_BF, M5D_DB_VALUE_CTRL, M5D_RING_DBR_DB, 0,
	1, { 1 }, 0, 0, 0,
};

/* DOCA's GPU_SM_NO_DBR on a GPU_DB export: the producer-index doorbell alone, never a record. */
static const struct md_conv md_conv_no_dbr = {
	"GPU_SM_NO_DBR pi-doorbell, no record", GPUNIC_HANDLER_GPU_DB, M5D_DB_VALUE_PI,
	M5D_RING_DBR_DB, 0, MD_BATCHES, 0, M5D_HANDLER_GPU_SM_NO_DBR, 0,
};
/* CPU proxy, in the odd slot beside another proxy QP. */
static const struct md_conv md_conv_proxy_odd = {
	"CPU_PROXY, odd slot", GPUNIC_HANDLER_CPU_PROXY, M5D_DB_VALUE_PI, M5D_RING_DBR_DB, 0,
	MD_BATCHES, 0, 0, 1,
};

#define MD_F_PHANTOM (MD_F_BAIT | MD_F_BAIT_WRONG_QPN)

/* ---------------------------------------------------------------- 1, 6: pi doorbell, each op */

TEST(db_pi_write)
{
	md_plan_case(MD_BE, &md_conv_pi, MD_PLAN_WRITE, MD_F_PHANTOM);
}

TEST(db_pi_inline)
{
	md_plan_case(MD_BE, &md_conv_pi, MD_PLAN_INLINE, MD_F_PHANTOM);
}

TEST(db_pi_read)
{
	md_plan_case(MD_BE, &md_conv_pi, MD_PLAN_READ, MD_F_PHANTOM);
}

/* ---------------------------------------------------------------- 2: ring orders */

TEST(db_pi_db_dbr_db_mixed)
{
	md_plan_case(MD_BE, &md_conv_pi_dbdb, MD_PLAN_MIXED, MD_F_PHANTOM);
}

TEST(db_ctrl_sig_mixed)
{
	md_plan_case(MD_BE, &md_conv_ctrl, MD_PLAN_MIXED, MD_F_BAIT);
}

/* ---------------------------------------------------------------- 7: handler modes */

TEST(proxy_mixed)
{
	md_plan_case(MD_BE, &md_conv_proxy, MD_PLAN_MIXED, MD_F_BAIT);
}

TEST(bf_mixed)
{
	md_plan_case(MD_BE, &md_conv_bf, MD_PLAN_MIXED, MD_F_BAIT);
}

/* ---------------------------------------------------------------- 9: doorbells after quiet */

/* Record and doorbell, each after the QP sat with nothing in hand for 150 ms. */
TEST(db_quiet_then_doorbell)
{
	md_plan_case(MD_BE, &md_conv_pi, MD_PLAN_QUIET, MD_F_QUIET | MD_F_BAIT);
}

/* The doorbell word alone, back to back: the QP is busy, its doorbell watched. */
TEST(no_dbr_mixed)
{
	md_plan_case(MD_BE, &md_conv_no_dbr, MD_PLAN_MIXED, MD_F_BAIT);
}

/* The doorbell word alone after 150 ms of quiet: nothing but the doorbell can wake the QP. */
TEST(no_dbr_quiet_then_doorbell)
{
	md_plan_case(MD_BE, &md_conv_no_dbr, MD_PLAN_QUIET, MD_F_QUIET | MD_F_BAIT);
}

/* DOCA's proxy word (a 64-bit atomic max) in the slot after another proxy QP's, after quiet. */
TEST(proxy_quiet_odd_slot)
{
	md_plan_case(MD_BE, &md_conv_proxy_odd, MD_PLAN_QUIET, MD_F_QUIET | MD_F_BAIT);
}

/* ---------------------------------------------------------------- 8: put with signal */

TEST(put_signal_db)
{
	md_put_case(MD_BE, &md_conv_pi, MD_F_NOP);
}

TEST(put_signal_bf)
{
	md_put_case(MD_BE, &md_conv_bf, MD_F_NOP);
}

#endif /* MD_TESTS_H */
