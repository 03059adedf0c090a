// SPDX-License-Identifier: MIT
/*
 * Both ends of the experiment in one process (loopback.h, lb_pair_open): `gpunic bench` runs
 * its series on such pairs, and the tests the accounting.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exp_loc.h"

/* Every pair gets a cable of its own: a bench opens one per series. */
static atomic_uint cable_seq;

/* Two ports of one wire (a veth pair, two NIC ports on a switch), each end with its address:
 * what a raw link needs to be benched in one process. */
static int open_spec_links(const struct lb_pair_cfg *pc, struct gpunic_link **lf,
			   struct gpunic_ep_addr *af, struct gpunic_link **ls,
			   struct gpunic_ep_addr *as)
{
	char spec[160], ip[16];
	int err;

	gpunic_ipv4_str(LB_LOOP_IP, ip);
	snprintf(spec, sizeof(spec), "%s,ip=%s", pc->spec_fwd, ip);
	err = gpunic_ep_link_open("forwarder", spec, LB_LOOP_IP, NULL, 0, lf, af);
	if (err)
		return err;
	gpunic_ipv4_str(LB_SENSOR_IP, ip);
	snprintf(spec, sizeof(spec), "%s,ip=%s", pc->spec_sensor, ip);
	err = gpunic_ep_link_open("sensor", spec, LB_SENSOR_IP, NULL, 0, ls, as);
	if (err) {
		gpunic_link_close(*lf);
		*lf = NULL;
	}
	return err;
}

static int open_links(const struct lb_pair_cfg *pc, struct gpunic_link **lf,
		      struct gpunic_ep_addr *af, struct gpunic_link **ls, struct gpunic_ep_addr *as)
{
	char name[64];

	*lf = *ls = NULL;
	if (pc->spec_fwd && pc->spec_sensor)
		return open_spec_links(pc, lf, af, ls, as);
	if (pc->udp) {
		struct gpunic_udp_link_attr ua = { .local_ip = 0x7F000002u,
						   .local_port = pc->udp_port };

		gpunic_mac_from_ipv4(0x7F000002u, ua.local_mac);
		gpunic_mac_from_ipv4(0x7F000001u, ua.peer_mac);
		*lf = gpunic_link_udp_open(&ua);
		if (!*lf) {
			fprintf(stderr, "gpunic: udp link on 127.0.0.2:%u: %s\n", pc->udp_port,
				strerror(errno));
			return errno;
		}
		ua.local_ip = 0x7F000001u;
		gpunic_mac_from_ipv4(0x7F000001u, ua.local_mac);
		gpunic_mac_from_ipv4(0x7F000002u, ua.peer_mac);
		*ls = gpunic_link_udp_open(&ua);
		if (!*ls) {
			int err = errno;

			fprintf(stderr, "gpunic: udp link on 127.0.0.1:%u: %s\n", pc->udp_port,
				strerror(err));
			gpunic_link_close(*lf);
			return err;
		}
		gpunic_ep_addr_of(af, *lf, 0);
		gpunic_ep_addr_of(as, *ls, 0);
		return 0;
	}
	snprintf(name, sizeof(name), "/gpunic-bench-%d-%u", (int)getpid(),
		 atomic_fetch_add(&cable_seq, 1));
	*lf = gpunic_link_shm_open(&(struct gpunic_shm_link_attr){
		.name = name, .end = GPUNIC_SHM_END_A, .create = 1 });
	if (!*lf) {
		fprintf(stderr, "gpunic: shm cable %s: %s\n", name, strerror(errno));
		return errno;
	}
	*ls = gpunic_link_shm_open(&(struct gpunic_shm_link_attr){
		.name = name, .end = GPUNIC_SHM_END_B });
	if (!*ls) {
		int err = errno;

		fprintf(stderr, "gpunic: shm cable %s, end b: %s\n", name, strerror(err));
		gpunic_link_close(*lf);
		return err;
	}
	/* Both ends are in this process: the name is no longer needed, and a crash leaves
	 * nothing behind in /dev/shm. */
	if (shm_unlink(name) && errno != ENOENT)
		fprintf(stderr, "gpunic: shm cable %s: %s\n", name, strerror(errno));
	gpunic_ep_addr_of(af, *lf, LB_LOOP_IP);
	gpunic_ep_addr_of(as, *ls, LB_SENSOR_IP);
	return 0;
}

/* The impairment wrapper around the sensor's end, when asked for (it owns the link then). */
static int wrap_impair(const struct lb_pair_cfg *pc, struct gpunic_link **ls)
{
	struct gpunic_link *w;

	if (!pc->impair)
		return 0;
	w = gpunic_link_impair_open(*ls, pc->impair);
	if (!w) {
		LB_ERR("impairment link: %s\n", strerror(errno));
		return errno;
	}
	*ls = w;
	return 0;
}

void lb_pair_close(struct lb_pair *p)
{
	lb_fwd_close(p->f);
	lb_sensor_close(p->s);
	p->f = NULL;
	p->s = NULL;
}

int lb_pair_open(struct lb_pair *p, const struct lb_fwd_cfg *fc, const struct lb_pair_cfg *pc)
{
	struct gpunic_qp_info fi, si;
	struct gpunic_link *lf, *ls;
	struct gpunic_ep_addr af, as;
	int err;

	p->s = NULL;
	p->f = NULL;
	err = open_links(pc, &lf, &af, &ls, &as);
	if (!err) {
		err = wrap_impair(pc, &ls);
		if (err)
			gpunic_link_close(lf);
	}
	if (err) {
		gpunic_link_close(ls);
		return err;
	}
	err = lb_fwd_open(&p->f, fc, lf, &af);
	if (err) {
		gpunic_link_close(ls);
		return err;
	}
	err = lb_sensor_open(&p->s, ls, &as, pc->mode, pc->size);
	if (!err && fc->nic_driven_elsewhere)
		lb_sensor_drive_also(p->s, lb_fwd_nic(p->f));
	if (!err && pc->sensor_engine)
		err = lb_sensor_start_engine(p->s, pc->sensor_engine_cpu);
	if (!err)
		err = lb_fwd_start(p->f);
	if (err)
		goto fail;
	lb_fwd_info(p->f, &fi);
	lb_sensor_info(p->s, &si);
	err = lb_fwd_connect(p->f, &si);
	if (!err)
		err = lb_sensor_connect(p->s, &fi);
	if (err)
		goto fail;
	return 0;
fail:
	lb_pair_close(p);
	return err;
}
