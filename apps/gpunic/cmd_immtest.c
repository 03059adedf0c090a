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
		"guest-tools/immtest (libibverbs); server without HOST, client with it. The\n"
		"server's TCP listener is on 127.0.0.1 unless --oob-bind says otherwise.\n"
		"\n"
		PP_NET_USAGE,
		"60");
	cli_usage_exit(out, "both directions verified", "a failure: no peer within --timeout, a "
			    "bad exchange, or a\n     message that arrived wrong", NULL);
}

/* Return: -1 to run, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct immtest_opts *o)
{
	static const struct option longopts[] = {
		PP_NET_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_getopt g = { .cmd = "immtest", .shortopts = ":" PP_NET_SHORTOPTS,
				.longopts = longopts, .usage = usage };
	int c, rc;

	memset(o, 0, sizeof(*o));
	pp_net_init(&o->net, "immtest", 60000);
	while ((c = cli_getopt_next(&g, argc, argv))) {
		rc = pp_parse_net_opt(c, optarg, &o->net);
		if (rc != 1)
			return rc == -1 ? cli_bad_option("immtest", '?', argv[optind - 1]) : rc;
	}
	if (g.exit >= 0)
		return g.exit;
	rc = pp_finish_args(argc, argv, &o->net);
	return rc ? rc : -1;
}

/* One '\n'-terminated line (the '\n' dropped), read a byte at a time: lines are short. */
static int read_line(struct gpunic_ep *e, int fd, char *buf, size_t cap)
{
	struct gpunic_tcp_wait w = gpunic_ep_tcp_wait(e, 60000);
	size_t n = 0;
	int ret;

	while (n + 1 < cap) {
		ret = gpunic_tcp_read_full(fd, buf + n, 1, &w);
		if (ret)
			return ret;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

static int write_str(struct gpunic_ep *e, int fd, const char *s)
{
	struct gpunic_tcp_wait w = gpunic_ep_tcp_wait(e, 60000);

	return gpunic_tcp_write_full(fd, s, strlen(s), &w);
}

static int send_set(struct gpunic_ep *e, int dir, uint64_t rva, uint32_t rkey, char *why,
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
		ret = gpunic_ep_wait_cqe(e, true, &cqe);
		if (ret || gpunic_dev_cqe_is_error(&cqe)) {
			snprintf(why, wl, "send completion %d: %s (syndrome 0x%02x)", k,
				 ret ? strerror(ret) : gpunic_syndrome_str(cqe.syndrome),
				 ret ? 0 : cqe.syndrome);
			return ret ? ret : EIO;
		}
	}
	return 0;
}

static int check_set(struct gpunic_ep *e, int dir, char *why, size_t wl)
{
	struct gpunic_dev_cqe cqe;
	int ret;

	for (int k = 0; k < IT_NMSG; k++) {
		bool w = it_msgs[k].write;
		uint32_t len = it_msgs[k].len;
		uint8_t want = w ? MLX5_CQE_RESP_WR_IMM : MLX5_CQE_RESP_SEND_IMM;
		const uint8_t *data;

		ret = gpunic_ep_wait_cqe(e, false, &cqe);
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

static int it_exchange(struct immtest_opts *o, struct gpunic_ep *e, int fd, uint64_t *rva,
		       uint32_t *rkey)
{
	struct gpunic_ep_conn conn = pp_conn(&o->net, IT_START_PSN);
	char line[IT_LINE], wgid[GPUNIC_PP_GID_HEX + 1], text[4 * IT_LINE + 8];
	unsigned long long va;
	unsigned qpn, psn, key;
	struct gpunic_ep_peer r = { 0 };
	uint8_t gid[16];
	int ret;

	gpunic_gid_from_ipv4(e->addr.ip, gid);
	gpunic_pp_gid_to_wire(gid, wgid);
	snprintf(line, sizeof(line), "IMMT %06x %06x %s %016llx %08x\n", e->qp->qp_num,
		 IT_START_PSN, wgid, (unsigned long long)(uintptr_t)e->buf, e->mr->rkey);
	printf("immtest: %s %s, local  %s", o->net.server ? "client" : "server",
	       o->net.type == GPUNIC_QPT_UC ? "UC" : "RC", line);
	ret = write_str(e, fd, line);
	if (!ret)
		ret = read_line(e, fd, line, sizeof(line));
	if (ret || sscanf(line, "IMMT %x %x %32s %llx %x", &qpn, &psn, wgid, &va, &key) != 5 ||
	    strlen(wgid) != GPUNIC_PP_GID_HEX || gpunic_pp_gid_from_wire(wgid, gid) ||
	    gpunic_gid_to_ipv4(gid, &r.ip)) {
		cli_escape(text, sizeof(text), line, ret ? 0 : strlen(line));
		fprintf(stderr, "gpunic immtest: bad exchange '%s'\n", text);
		return ret ? ret : EPROTO;
	}
	/* what the peer wrote, whose tail no format checked: escaped */
	cli_escape(text, sizeof(text), line, strlen(line));
	printf("immtest: remote %s\n", text);
	fflush(stdout);
	r.qpn = qpn & 0xffffff;
	r.psn = psn & 0xffffff;
	*rva = va;
	*rkey = key;
	ret = gpunic_ep_connect(e, &r, &conn);
	if (!ret)
		ret = write_str(e, fd, "R\n");
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
	struct gpunic_ep e = { 0 };
	char line[IT_LINE], why[200] = "";
	uint64_t rva = 0;
	uint32_t rkey = 0;
	int ret, fd = -1, ok = 0, me;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	pp_report_compat(&o.net);
	ret = pp_open(&e, &o.net, IT_BUF_LEN, GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE,
		      16, 16);
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
	ret = pp_tcp_open(&o.net, &e, &fd);
	if (!ret)
		ret = it_exchange(&o, &e, fd, &rva, &rkey);
	if (ret)
		goto out;
	/* Direction 1: client -> server; 2: server -> client. */
	me = o.net.server ? 1 : 2;
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
				write_str(&e, fd, line);
				break;
			}
			write_str(&e, fd, "ok\n");
		}
		ok++;
	}
	printf("immtest: %s\n", ok == 2 ? "PASS" : "FAIL");
	ret = ok == 2 ? 0 : EPROTO;
out:
	if (fd >= 0)
		close(fd);
	if (ret)
		gpunic_ep_dump(&e);
	gpunic_ep_close(&e);
	return ret ? 1 : 0;
}
