// SPDX-License-Identifier: MIT
/*
 * rdma-core pingpong's out-of-band message (ibv_rc_pingpong and its siblings): the client writes
 * "LID:QPN:PSN:GID" and the server answers with its own. The GID's text form is rdma-core's
 * "wire GID": the 16 bytes as 32 hex digits in network order (gid_to_wire_gid). What arrives
 * is parsed strictly and its GID must be ::ffff:IPv4, since the peer's address comes from it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpunic/endpoint.h"

void gpunic_pp_gid_to_wire(const uint8_t gid[16], char out[GPUNIC_PP_GID_HEX + 1])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", gid[i]);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int gpunic_pp_gid_from_wire(const char *s, uint8_t gid[16])
{
	for (int i = 0; i < 16; i++) {
		int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return EPROTO;
		gid[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void gpunic_pp_msg_format(uint32_t qpn, uint32_t psn, const uint8_t gid[16],
			  char msg[GPUNIC_PP_MSG_BYTES])
{
	char wgid[GPUNIC_PP_GID_HEX + 1];

	gpunic_pp_gid_to_wire(gid, wgid);
	snprintf(msg, GPUNIC_PP_MSG_BYTES, "%04x:%06x:%06x:%s", 0u, qpn & 0xffffff, psn & 0xffffff,
		 wgid);
}

int gpunic_pp_msg_parse(const char msg[GPUNIC_PP_MSG_BYTES], struct gpunic_ep_peer *peer,
			uint8_t gid[16])
{
	char text[GPUNIC_PP_MSG_BYTES], wgid[GPUNIC_PP_GID_HEX + 1];
	unsigned lid, qpn, psn;

	memcpy(text, msg, sizeof(text));
	text[sizeof(text) - 1] = '\0';
	if (sscanf(text, "%x:%x:%x:%32s", &lid, &qpn, &psn, wgid) != 4 ||
	    strlen(wgid) != GPUNIC_PP_GID_HEX || gpunic_pp_gid_from_wire(wgid, gid))
		return EPROTO;
	memset(peer, 0, sizeof(*peer));
	peer->qpn = qpn & 0xffffff;
	peer->psn = psn & 0xffffff;
	return gpunic_gid_to_ipv4(gid, &peer->ip) ? EAFNOSUPPORT : 0;
}
