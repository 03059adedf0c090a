// SPDX-License-Identifier: MIT
/*
 * gpunic immtest: immediate data both ways against tests/interop/guest-tools/immtest.c, a small
 * libibverbs program (rxe in the interop guest, or any RoCE stack). See that file for the
 * protocol: an "IMMT" line each way over TCP, both QPs at RTS with sq_psn 0xfffffe, then the
 * client sends 2 SEND_WITH_IMM (5 and 2101 bytes) and 3 WRITE_WITH_IMM (7, 2101 and 0 bytes),
 * the server checks opcode, length, immediate and data of every receive completion and answers
 * "ok", and then the same the other way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "pingpong.h"

#define IT_SLOT 4096u
#define IT_NSLOTS 8u
#define IT_WRITE_OFF (16u * IT_SLOT)
#define IT_SEND_OFF (8u * IT_SLOT)
#define IT_BUF_LEN (24u * IT_SLOT)
#define IT_NMSG 5
#define IT_START_PSN 0xfffffeu
#define IT_GUARD 0xeeu
#define IT_LINE 160

struct it_msg {
	bool write;
	uint32_t len;
};

static const struct it_msg it_msgs[IT_NMSG] = {
	{ false, 5 }, { false, 2101 }, { true, 7 }, { true, 2101 }, { true, 0 },
};

struct immtest_opts {
	struct pp_net_opts net;
	const char *server;
	const char *bind_addr;
	uint16_t port;
	enum gpunic_mtu mtu;
	enum gpunic_qp_type type;
};

static uint8_t it_pat(int k, int dir, uint32_t i)
{
	return (uint8_t)(k * 37 + dir * 101 + i + (i >> 8) * 3);
}

static uint32_t it_imm(int k, int dir)
{
	return 0xc0de0000u | (uint32_t)dir << 8 | (uint32_t)k;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic immtest --link SPEC --ip A.B.C.D [options] [HOST]\n"
		"\n"
		"SEND_WITH_IMM and WRITE_WITH_IMM both ways against the interop suite's\n"
		"guest-tools/immtest (libibverbs); server without HOST, client with it.\n"
		"\n"
		"  -p, --port=PORT        TCP port of the exchange (default 18515)\n"
		"  -m, --mtu=SIZE         path MTU (default 1024)\n"
		"  -g, --gid-idx=IDX      accepted: gpunic has the one GID ::ffff:<--ip>\n"
		"      --rc | --uc        transport (default RC)\n"
		"      --link, --ip, --mac, --peer-mac, --bind, --capture, -t/--timeout:\n"
		"                         as for gpunic pingpong\n"
		"\n"
		"Exit status: 0 both directions verified, 1 a failure, 2 bad usage.\n");
}

static int parse_args(int argc, char **argv, struct immtest_opts *o)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		PP_NET_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->net.cmd = "immtest";
	o->net.timeout_s = 60;
	o->port = 18515;
	o->mtu = GPUNIC_MTU_1024;
	o->type = GPUNIC_QPT_RC;
	while ((c = getopt_long(argc, argv, ":p:m:g:t:h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'p':
			ok = pp_parse_uint(optarg, 65535, &v) && v;
			o->port = (uint16_t)v;
			break;
		case 'm':
			ok = false;
			if (pp_parse_uint(optarg, 4096, &v))
				for (int m = GPUNIC_MTU_256; m <= GPUNIC_MTU_4096; m++)
					if (gpunic_mtu_bytes((enum gpunic_mtu)m) == v) {
						o->mtu = (enum gpunic_mtu)m;
						ok = true;
					}
			break;
		case 'g':
			ok = pp_parse_uint(optarg, 255, &v);
			break;
		case 't':
			ok = pp_parse_uint(optarg, 86400, &v);
			o->net.timeout_s = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			switch (pp_parse_net_opt(c, optarg, &o->net, &o->type, &o->bind_addr)) {
			case 1:
				break;
			case 0:
				ok = false;
				break;
			default:
				return pp_usage_error("immtest", c, false, argv);
			}
		}
		if (!ok)
			return pp_usage_error("immtest", c, true, argv);
	}
	return pp_finish_args("immtest", argc, argv, &o->server, &o->net);
}

/* One '\n'-terminated line (the '\n' dropped), read a byte at a time: lines are short. */
static int read_line(struct pp_end *e, int fd, char *buf, size_t cap)
{
	size_t n = 0;
	int ret;

	while (n + 1 < cap) {
		ret = pp_read_full(e, fd, buf + n, 1, pp_end_ms_left(e, 60000));
		if (ret)
			return ret;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

static int send_set(struct pp_end *e, int dir, uint64_t rva, uint32_t rkey, char *why,
		    size_t wl)
{
	struct gpunic_dev_cqe cqe;
	int ret;

	for (int k = 0; k < IT_NMSG; k++) {
		uint8_t *src = e->buf + IT_SEND_OFF + (uint32_t)k * IT_SLOT;
		bool w = it_msgs[k].write;
		uint64_t dst = w ? rva + IT_WRITE_OFF + (uint64_t)(k - 2) * IT_SLOT : 0;
		int64_t r;

		for (uint32_t i = 0; i < it_msgs[k].len; i++)
			src[i] = it_pat(k, dir, i);
		r = gpunic_dev_post_send_sge(&e->dq,
					     w ? MLX5_OPCODE_RDMA_WRITE_IMM : MLX5_OPCODE_SEND_IMM,
					     GPUNIC_DEV_SEND_SIGNALED, (uint64_t)(uintptr_t)src,
					     it_msgs[k].len, e->mr->lkey, dst, w ? rkey : 0,
					     it_imm(k, dir));
		if (r < 0 || gpunic_dev_submit(&e->dq)) {
			snprintf(why, wl, "post send %d failed (%lld)", k, (long long)r);
			return EIO;
		}
	}
	for (int k = 0; k < IT_NMSG; k++) {
		ret = pp_end_wait_cqe(e, true, &cqe);
		if (ret || gpunic_dev_cqe_is_error(&cqe)) {
			snprintf(why, wl, "send completion %d: %s (syndrome 0x%02x)", k,
				 ret ? strerror(ret) : "error CQE", ret ? 0 : cqe.syndrome);
			return ret ? ret : EIO;
		}
	}
	return 0;
}

static int check_set(struct pp_end *e, int dir, char *why, size_t wl)
{
	struct gpunic_dev_cqe cqe;
	int ret;

	for (int k = 0; k < IT_NMSG; k++) {
		bool w = it_msgs[k].write;
		uint32_t len = it_msgs[k].len;
		uint8_t want = w ? MLX5_CQE_RESP_WR_IMM : MLX5_CQE_RESP_SEND_IMM;
		const uint8_t *data;

		ret = pp_end_wait_cqe(e, false, &cqe);
		if (ret) {
			snprintf(why, wl, "msg %d: no receive completion (%s)", k, strerror(ret));
			return ret;
		}
		if (cqe.opcode != want || cqe.byte_cnt != len || cqe.imm != it_imm(k, dir) ||
		    cqe.wqe_idx != (uint32_t)k) {
			snprintf(why, wl,
				 "msg %d: CQE opcode %u syndrome 0x%02x len %u imm 0x%08x wqe %u "
				 "(want opcode %u len %u imm 0x%08x wqe %d)",
				 k, cqe.opcode, cqe.syndrome, cqe.byte_cnt, cqe.imm, cqe.wqe_idx,
				 want, len, it_imm(k, dir), k);
			return EPROTO;
		}
		data = w ? e->buf + IT_WRITE_OFF + (uint32_t)(k - 2) * IT_SLOT :
			   e->buf + (uint32_t)k * IT_SLOT;
		for (uint32_t i = 0; i < len; i++)
			if (data[i] != it_pat(k, dir, i)) {
				snprintf(why, wl, "msg %d: byte %u is 0x%02x, want 0x%02x", k, i,
					 data[i], it_pat(k, dir, i));
				return EPROTO;
			}
		if (w && data[len] != IT_GUARD) {
			snprintf(why, wl, "msg %d: byte %u past the WRITE changed", k, len);
			return EPROTO;
		}
		printf("immtest: dir %d msg %d %s len %u imm 0x%08x ok\n", dir, k,
		       w ? "WRITE_WITH_IMM" : "SEND_WITH_IMM", len, it_imm(k, dir));
	}
	return 0;
}

static int it_connect_tcp(struct immtest_opts *o, struct pp_end *e, int *fd)
{
	int lfd, ret;

	if (o->server) {
		ret = pp_tcp_connect(e, o->server, o->port, pp_end_ms_left(e, 30000), fd);
		if (ret)
			fprintf(stderr, "gpunic immtest: cannot connect to %s:%u: %s\n",
				o->server, o->port, strerror(ret));
		return ret;
	}
	ret = pp_tcp_listen(o->bind_addr, o->port, &lfd);
	if (ret) {
		fprintf(stderr, "gpunic immtest: cannot listen on %u: %s\n", o->port,
			strerror(ret));
		return ret;
	}
	ret = pp_tcp_accept(e, lfd, pp_end_ms_left(e, -1), fd);
	close(lfd);
	if (ret)
		fprintf(stderr, "gpunic immtest: accept: %s\n", strerror(ret));
	return ret;
}

static int it_exchange(struct immtest_opts *o, struct pp_end *e, int fd, uint64_t *rva,
		       uint32_t *rkey)
{
	char line[IT_LINE], wgid[PP_GID_HEX + 1];
	unsigned long long va;
	unsigned qpn, psn, key;
	struct pp_remote r;
	uint8_t gid[16];
	int ret;

	pp_gid_from_ip(o->net.ip, gid);
	pp_gid_to_wire(gid, wgid);
	snprintf(line, sizeof(line), "IMMT %06x %06x %s %016llx %08x\n", e->qp->qp_num,
		 IT_START_PSN, wgid, (unsigned long long)(uintptr_t)e->buf, e->mr->rkey);
	printf("immtest: %s %s, local  %s", o->server ? "client" : "server",
	       o->type == GPUNIC_QPT_UC ? "UC" : "RC", line);
	ret = pp_write_full(fd, line, strlen(line));
	if (!ret)
		ret = read_line(e, fd, line, sizeof(line));
	if (ret || sscanf(line, "IMMT %x %x %32s %llx %x", &qpn, &psn, wgid, &va, &key) != 5 ||
	    strlen(wgid) != PP_GID_HEX || !pp_gid_from_wire(wgid, r.gid) ||
	    !pp_gid_ipv4(r.gid, &r.ip)) {
		fprintf(stderr, "gpunic immtest: bad exchange '%s'\n", ret ? "" : line);
		return ret ? ret : EPROTO;
	}
	printf("immtest: remote %s\n", line);
	fflush(stdout);
	r.qpn = qpn & 0xffffff;
	r.psn = psn & 0xffffff;
	*rva = va;
	*rkey = key;
	ret = pp_end_connect(e, &r, o->mtu, IT_START_PSN);
	if (!ret)
		ret = pp_write_full(fd, "R\n", 2);
	if (!ret)
		ret = read_line(e, fd, line, sizeof(line));
	if (!ret && strcmp(line, "R"))
		ret = EPROTO;
	if (ret)
		fprintf(stderr, "gpunic immtest: cannot connect the QP: %s\n", strerror(ret));
	return ret;
}

int cmd_immtest(int argc, char **argv)
{
	struct immtest_opts o;
	struct pp_qp_caps caps = {
		.buf_len = IT_BUF_LEN,
		.access = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE,
		.max_send_wr = 16,
		.max_recv_wr = 16,
	};
	struct pp_end e = { 0 };
	char line[IT_LINE], why[200] = "";
	uint64_t rva = 0;
	uint32_t rkey = 0;
	int ret, fd = -1, ok = 0, me;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret;
	caps.type = o.type;
	ret = pp_end_open(&e, &o.net, &caps);
	if (ret)
		goto out;
	memset(e.buf + IT_WRITE_OFF, IT_GUARD, IT_BUF_LEN - IT_WRITE_OFF);
	for (uint32_t j = 0; j < IT_NSLOTS; j++) {
		struct gpunic_dev_sge sge = {
			.addr = (uint64_t)(uintptr_t)(e.buf + j * IT_SLOT),
			.length = IT_SLOT,
			.lkey = e.mr->lkey,
		};

		if (gpunic_dev_post_recv(&e.dq, &sge, 1) < 0) {
			fprintf(stderr, "gpunic immtest: cannot post receives\n");
			ret = ENOMEM;
			goto out;
		}
	}
	ret = it_connect_tcp(&o, &e, &fd);
	if (!ret)
		ret = it_exchange(&o, &e, fd, &rva, &rkey);
	if (ret)
		goto out;
	/* Direction 1: client -> server; 2: server -> client. */
	me = o.server ? 1 : 2;
	for (int dir = 1; dir <= 2; dir++) {
		if (dir == me) {
			if (send_set(&e, dir, rva, rkey, why, sizeof(why))) {
				printf("immtest: dir %d send: %s\n", dir, why);
				break;
			}
			if (read_line(&e, fd, line, sizeof(line))) {
				printf("immtest: dir %d: no verdict from the peer\n", dir);
				break;
			}
			printf("immtest: dir %d peer verdict: %s\n", dir, line);
			if (strcmp(line, "ok"))
				break;
		} else {
			if (check_set(&e, dir, why, sizeof(why))) {
				printf("immtest: dir %d receive: %s\n", dir, why);
				/* the verdict is one line: a long reason is cut to fit */
				snprintf(line, sizeof(line), "bad %.*s\n", (int)(sizeof(line) - 6), why);
				pp_write_full(fd, line, strlen(line));
				break;
			}
			pp_write_full(fd, "ok\n", 3);
		}
		ok++;
	}
	printf("immtest: %s\n", ok == 2 ? "PASS" : "FAIL");
	ret = ok == 2 ? 0 : EPROTO;
out:
	if (fd >= 0)
		close(fd);
	if (ret)
		pp_end_dump(&e);
	pp_end_close(&e);
	return ret ? 1 : 0;
}
