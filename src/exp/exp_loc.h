/* SPDX-License-Identifier: MIT */
/*
 * Private to src/exp: the queue sizes of the sensor and the forwarder, and what both use
 * (qp.c, msg.c).
 */
#ifndef GPUNIC_EXP_LOC_H
#define GPUNIC_EXP_LOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/mem.h"
#include "loopback.h"

#define LB_ERR(...) fprintf(stderr, "gpunic: " __VA_ARGS__)

/* Sensor queues: the SQ holds what is in flight at high rates; every receive has a slot. */
#define SENSOR_SQ_WR 256u
#define SENSOR_RQ_WR 1024u
#define SENSOR_NIC_BUDGET 32
/* Messages a sensor that fell behind its schedule sends behind one doorbell and NIC poll. */
#define SENSOR_SEND_BATCH 8u
/* Rounds of the sensor's loop that may go without a clock reading while the next message is
 * SENSOR_QUIET_MARGIN_NS or more away (sensor.c, sensor_quiet_rounds): a round is a NIC poll
 * and a pause, 50-150 ns, so 8 of them stay well inside the margin, and a send is never late
 * for want of a reading unless the thread is descheduled, which makes it late anyway. */
#define SENSOR_QUIET_ROUNDS 8u
#define SENSOR_QUIET_MARGIN_NS 3000u
/* Forwarder send queue; signal every 16th send (what keeps the SQ from filling). */
#define FWD_SQ_WR 256u
#define FWD_SIGNAL_EVERY 16u
#define FWD_NIC_BUDGET 64
#define MAX_INLINE 64u
/* Executor thread back-off: spin this many idle rounds, then yield the core. */
#define EXEC_SPIN_ROUNDS 4096u

/* splitmix64's finaliser: every input bit reaches every output bit. */
uint64_t lb_mix64(uint64_t x);

/* The NIC on @link at @a with @flags (enum gpunic_nic_flags); closes @link on failure
 * (reported). */
struct gpunic_nic *lb_nic_open(struct gpunic_link *link, const struct gpunic_ep_addr *a,
			       enum gpunic_executor exec, gpunic_mem_t *mem, unsigned flags);
/* RTR and RTS of a UC QP towards the peer @peer describes. */
int lb_qp_connect(struct gpunic_qp *qp, const struct gpunic_ep_addr *me, uint32_t psn,
		  enum gpunic_mtu mtu, const struct gpunic_qp_info *peer);
/* What this side tells the other: its QP, first PSN and address. */
void lb_fill_info(struct gpunic_qp_info *info, const struct gpunic_qp *qp,
		  const struct gpunic_ep_addr *a, uint32_t psn);
/* Zeroed page-aligned memory, rounded up to pages (free()). */
void *lb_zalloc(size_t bytes);

#endif
