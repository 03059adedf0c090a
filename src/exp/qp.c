// SPDX-License-Identifier: MIT
/*
 * What the sensor and the forwarder share: the NIC on a link, connecting a UC QP to the peer an
 * exchange described, and the description this side gives.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_loc.h"

struct gpunic_nic *lb_nic_open(struct gpunic_link *link, const struct gpunic_ep_addr *a,
				   enum gpunic_executor exec, gpunic_mem_t *mem, unsigned flags)
{
	struct gpunic_nic_attr na = { .link = link, .executor = exec, .mem = mem,
				      .flags = flags };
	struct gpunic_nic *nic;

	gpunic_ep_nic_attr(&na, a);
	nic = gpunic_nic_open(&na);
	if (!nic) {
		LB_ERR("cannot open the NIC: %s\n", strerror(errno));
		gpunic_link_close(link);
	}
	return nic;
}

int lb_qp_connect(struct gpunic_qp *qp, const struct gpunic_ep_addr *me, uint32_t psn,
		  enum gpunic_mtu mtu, const struct gpunic_qp_info *peer)
{
	struct gpunic_ep_peer p = { .qpn = peer->qpn, .psn = peer->psn, .ip = peer->ip,
				    .udp_port = peer->udp_port };
	struct gpunic_ep_conn c = { .mtu = mtu, .sq_psn = psn };

	memcpy(p.mac, peer->mac, 6);
	return gpunic_ep_qp_connect("gpunic", qp, me, &p, &c);
}

void lb_fill_info(struct gpunic_qp_info *info, const struct gpunic_qp *qp,
		  const struct gpunic_ep_addr *a, uint32_t psn)
{
	memset(info, 0, sizeof(*info));
	info->qpn = qp->qp_num;
	info->psn = psn;
	info->ip = a->ip;
	memcpy(info->mac, a->mac, 6);
	info->udp_port = a->udp_port;
}

void *lb_zalloc(size_t bytes)
{
	size_t n = (bytes + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, n ? n : 4096);

	if (p)
		memset(p, 0, n ? n : 4096);
	return p;
}

