/* SPDX-License-Identifier: MIT */
/*
 * The torn-line suite's cases, named once for both executors: test_tear_gpu.c runs them on a
 * GPU (CTest tear_gpu_<case>, labels gpu and tear), test_tear_twin.c on host threads
 * (tear_twin_<case>, label tear), each after defining TEAR_BE as its struct tear_backend.
 * tests/tear/CMakeLists.txt reads the TEST lines of this file to register one CTest per case and
 * executor. The pure data-path cases (no NIC, no forwarder) are in test_tear_ring.c.
 */
#ifndef TEAR_TESTS_H
#define TEAR_TESTS_H

#ifndef TEAR_BE
#error "define TEAR_BE (the struct tear_backend to run on) before including tear_tests.h"
#endif

#include "tear_fixture.h"

/* ---------------------------------------------------------------- 1: torn CQEs, forwarder */

/* SEND mode, receives of <= 32 bytes scattered into the torn CQEs (the fast path's input). */
TEST(loop_send_scatter)
{
	tear_loop_case(TEAR_BE, true, 4000);
}

/* WRITE_WITH_IMM into ring slots: the CQE's line check and its payload check. */
TEST(loop_write_imm)
{
	tear_loop_case(TEAR_BE, false, 4000);
}

/* ---------------------------------------------------------------- 2: torn BlueFlame lines */

/*
 * WQEs per case. The seal is 15 bits and the mlx5 signature 8: a torn line passes both with
 * probability about 2^-23 (gpunic_dev.h), and then the softnic executes it and the case fails,
 * rightly. A case shows the softnic a few distinct torn lines per WQE (re-reading the same one
 * costs nothing), so 2000 WQEs keep that below about 1 in 2000 runs.
 */
#define TEAR_BF_MSGS 2000u

/*
 * Sealed lines (a GPU executor's NIC; the twin's on the fake GPU), chunks in a random order.
 * UC: the softnic can take a WQE only from its torn, stale or half-written line until the
 * record follows (and a held WQE, once seen torn, from its whole ring copy).
 */
TEST(bf_uc_lazy_record)
{
	tear_bf_case(TEAR_BE, GPUNIC_QPT_UC, 0, false, true, TEAR_BF_MSGS);
}

/* RC; the record runs ahead of every WQE's bytes, so the ring copy is read torn and stale too;
 * the writer polls send CQEs that the NIC tears on purpose. */
TEST(bf_rc_record_first)
{
	tear_bf_case(TEAR_BE, GPUNIC_QPT_RC, TEAR_BF_RECORD_FIRST, true, true, TEAR_BF_MSGS);
}

/* The executor's own NIC (the twin's: a CPU executor's, whose lines are marked
 * GPUNIC_DEV_BF_ORDERED and trusted once their ctrl chunk, read first, names the WQE), the ctrl
 * chunk stored last: lines stale by their index, the rest half new. */
TEST(bf_uc_ctrl_last)
{
	tear_bf_case(TEAR_BE, GPUNIC_QPT_UC, TEAR_BF_CTRL_LAST, false, false, TEAR_BF_MSGS);
}

#endif /* TEAR_TESTS_H */
