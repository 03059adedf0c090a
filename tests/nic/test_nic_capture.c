// SPDX-License-Identifier: MIT
/*
 * The capture tap (gpunic_nic_capture, GPUNIC_CAPTURE): every frame in and out lands in the
 * pcap file byte for byte, hostile received frames included, with CLOCK_REALTIME timestamps;
 * per-NIC file names when several NICs capture through the environment; stop, replace and
 * errors. Without libpcap the request fails with ENOTSUP.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include "gpunic/pcap.h"
#include "nic_fixture.h"

#define CAP_MAX_FRAMES 4096

struct cap_frame {
	uint8_t *data;
	uint32_t len;
	struct timespec ts;
};

static char tmpdir[128];

static void make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/gpunic_cap_XXXXXX", base ? base : "/tmp");
	CHECK(mkdtemp(tmpdir) != NULL);
}

static void tmp_path(char *out, size_t cap, const char *name)
{
	CHECK((size_t)snprintf(out, cap, "%s/%s", tmpdir, name) < cap);
}

/* Remove the directory and whatever the test left in it. */
static void remove_tmpdir(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char p[512];

	CHECK(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
		unlink(p);
	}
	closedir(d);
	CHECK_EQ(rmdir(tmpdir), 0);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts_ns(&ts);
}

/* The tests that read captures back skip in a build without libpcap. */
static void need_pcap(void)
{
#ifndef GPUNIC_HAVE_PCAP
	SKIP("built without libpcap: capture_needs_libpcap covers this build");
#endif
}

/* Read a whole capture; the caller frees with free_frames. */
static int read_frames(const char *path, struct cap_frame *out, int max)
{
#ifdef GPUNIC_HAVE_PCAP
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE];
	struct gpunic_pcap_reader *r = gpunic_pcap_reader_open(path, errbuf);
	struct gpunic_pcap_frame f;
	int n = 0, rc;

	if (!r)
		harness_fail(__FILE__, __LINE__, "%s: %s", path, errbuf);
	CHECK_EQ(gpunic_pcap_reader_linktype(r), GPUNIC_PCAP_LINKTYPE_ETHERNET);
	while ((rc = gpunic_pcap_reader_next(r, &f)) == 0) {
		CHECK(n < max);
		CHECK_EQ(f.caplen, f.len);
		out[n].data = malloc(f.caplen ? f.caplen : 1);
		CHECK(out[n].data);
		memcpy(out[n].data, f.data, f.caplen);
		out[n].len = f.caplen;
		out[n].ts = f.ts;
		n++;
	}
	CHECK_EQ(rc, GPUNIC_PCAP_EOF);
	gpunic_pcap_reader_close(r);
	return n;
#else
	(void)path;
	(void)out;
	(void)max;
	SKIP("built without libpcap");
#endif
}

static void free_frames(struct cap_frame *f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i].data);
}

/* Some traffic of every kind between the fixture's players, both ways. */
static void traffic(struct fixture *fx)
{
	static const uint8_t ops[] = { MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM,
				       MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
				       MLX5_OPCODE_RDMA_READ };
	unsigned nops = fx->o.type == GPUNIC_QPT_RC ? 5 : 4;
	uint32_t seed = 1;

	for (unsigned op = 0; op < nops; op++) {
		fx_xfer(fx, &fx->a, &fx->b, ops[op], 3000, seed++);
		fx_xfer(fx, &fx->b, &fx->a, ops[op], 17, seed++);
	}
	fx_settle(fx, 2000000);	/* the last ACKs */
}

/*
 * Every frame of @path, checked against what the NIC at @ip (QPN @qpn, peer QPN @peer_qpn)
 * counted: the right number each way, each a RoCE frame whose ICRC verifies, timestamps
 * in [@t0, @t1] and in order.
 */
static void check_nic_capture(const char *path, struct gpunic_nic *nic, uint32_t ip, uint32_t qpn,
			      uint32_t peer_qpn, uint64_t t0, uint64_t t1)
{
	static struct cap_frame f[CAP_MAX_FRAMES];
	struct gpunic_nic_counters c;
	uint64_t tx = 0, rx = 0, prev = 0;
	struct gpunic_pkt pkt;
	int n;

	CHECK_EQ(gpunic_nic_query_counters(nic, &c), 0);
	n = read_frames(path, f, CAP_MAX_FRAMES);
	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(gpunic_frame_decode(f[i].data, f[i].len, 0, &pkt), GPUNIC_WIRE_OK);
		CHECK(pkt.icrc_ok);
		if (pkt.src_ip == ip) {
			tx++;
			CHECK_EQ(pkt.qpn, peer_qpn);
		} else {
			rx++;
			CHECK_EQ(pkt.dst_ip, ip);
			CHECK_EQ(pkt.qpn, qpn);
		}
		/* microsecond precision in the file */
		CHECK(ts_ns(&f[i].ts) + 1000 >= t0 && ts_ns(&f[i].ts) <= t1);
		CHECK(ts_ns(&f[i].ts) >= prev);
		prev = ts_ns(&f[i].ts);
	}
	CHECK_EQ(tx, c.tx_frames);
	CHECK_EQ(rx, c.rx_frames);
	free_frames(f, n);
}

TEST(capture_api_records_every_frame)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .psn_a = 0xFFFFF0 };
	char path[256];
	struct fixture fx;
	uint64_t t0, t1;

	need_pcap();
	make_tmpdir();
	tmp_path(path, sizeof(path), "a.pcap");
	fx_setup(&fx, FX_LINK_SHM, &o);
	t0 = realtime_ns();
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, path), 0);
	traffic(&fx);
	/* flushed after each busy poll: complete while the capture still runs */
	t1 = realtime_ns();
	check_nic_capture(path, fx.a.nic, fx.a.ip, fx.a.qp->qp_num, fx.b.qp->qp_num, t0, t1);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, NULL), 0);
	check_nic_capture(path, fx.a.nic, fx.a.ip, fx.a.qp->qp_num, fx.b.qp->qp_num, t0, t1);
	fx_teardown(&fx);
	remove_tmpdir();
}

/* A raw frame from the wire's far end, and what the NIC dropped it for. */
struct hostile {
	uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	size_t len;
};

static size_t roce_frame(uint8_t *buf, uint32_t dst_ip, uint32_t qpn)
{
	uint8_t payload[8] = "hostile";
	struct gpunic_pkt p = { .dst_mac = { 2, 0, 0, 0, 0, 1 }, .src_mac = { 2, 0, 0, 0, 0, 9 },
				.ttl = 64, .src_ip = IP4(10, 0, 0, 9), .dst_ip = dst_ip,
				.src_port = 49152, .dst_port = GPUNIC_ROCE_UDP_PORT,
				.opcode = GPUNIC_TRANSPORT_UC | GPUNIC_OP_SEND_ONLY,
				.pkey = 0xFFFF, .qpn = qpn, .psn = 1, .payload = payload,
				.paylen = sizeof(payload) };
	size_t len = gpunic_frame_encode(&p, buf, GPUNIC_MAX_FRAME_BYTES);

	CHECK(len > 0);
	return len;
}

/*
 * On a dgram wire the test plays the far end: an ARP request (answered), then hostile frames
 * the front door drops. The capture holds each of them, in order and byte for byte.
 */
TEST(capture_records_dropped_frames)
{
	struct gpunic_dgram_link_attr da = { .local_ip = IP4(127, 0, 0, 1),
					     .local_port = fx_port(6),
					     .remote_ip = IP4(127, 0, 0, 1),
					     .remote_port = fx_port(7) };
	struct gpunic_nic_attr na = { .ip = IP4(10, 0, 0, 1), .mac = { 2, 0, 0, 0, 0, 1 } };
	static struct cap_frame got[16];
	static struct hostile h[5];
	struct gpunic_nic_counters c;
	struct gpunic_link *wire;
	struct gpunic_nic *nic;
	uint8_t reply[GPUNIC_MAX_FRAME_BYTES];
	size_t rlen = 0;
	char path[256];
	int n;

	need_pcap();
	make_tmpdir();
	tmp_path(path, sizeof(path), "drops.pcap");
	na.link = gpunic_link_dgram_open(&da);
	CHECK(na.link);
	da.local_port = fx_port(7);
	da.remote_port = fx_port(6);
	wire = gpunic_link_dgram_open(&da);
	CHECK(wire);
	nic = gpunic_nic_open(&na);
	CHECK(nic);
	CHECK_EQ(gpunic_nic_capture(nic, path), 0);

	/* 0: ARP request for the NIC */
	memset(h[0].frame, 0xFF, 6);
	memcpy(h[0].frame + 6, (uint8_t[6]){ 2, 0, 0, 0, 0, 9 }, 6);
	memcpy(h[0].frame + 12, (uint8_t[]){ 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 9,
					     10, 0, 0, 9, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1 }, 30);
	h[0].len = 60;
	/* 1: IPv4 ethertype, then garbage */
	memcpy(h[1].frame, h[0].frame, 12);
	h[1].frame[12] = 0x08;
	for (int i = 13; i < 77; i++)
		h[1].frame[i] = (uint8_t)(i * 37);
	h[1].len = 77;
	/* 2: a RoCE frame whose ICRC is wrong */
	h[2].len = roce_frame(h[2].frame, na.ip, 0x11);
	h[2].frame[h[2].len - 1] ^= 0x5A;
	/* 3: to a QPN nobody has */
	h[3].len = roce_frame(h[3].frame, na.ip, 0xABCDE);
	/* 4: to another IP */
	h[4].len = roce_frame(h[4].frame, IP4(10, 0, 0, 77), 0x11);

	for (int i = 0; i < 5; i++) {
		uint64_t end = fx_now_ns() + 20000000;

		CHECK_EQ(gpunic_link_send(wire, h[i].frame, h[i].len), 0);
		/* one frame at a time, so the file's order is the sending order */
		do {
			gpunic_nic_poll(nic, 16);
			CHECK_EQ(gpunic_nic_query_counters(nic, &c), 0);
		} while (c.rx_frames < (uint64_t)i + 1 && fx_now_ns() < end);
		CHECK_EQ(c.rx_frames, i + 1);
		if (i == 0) {
			while (gpunic_link_recv(wire, reply, sizeof(reply), &rlen) == EAGAIN &&
			       fx_now_ns() < end)
				gpunic_nic_poll(nic, 16);
			CHECK_EQ(rlen, 60);
		}
	}
	CHECK_EQ(c.drops[GPUNIC_DROP_MALFORMED], 1);
	CHECK_EQ(c.drops[GPUNIC_DROP_BAD_ICRC], 1);
	CHECK_EQ(c.drops[GPUNIC_DROP_UNKNOWN_QPN], 1);
	CHECK_EQ(c.drops[GPUNIC_DROP_NOT_FOR_US], 1);
	CHECK_EQ(gpunic_nic_close(nic), 0);	/* closing ends the capture */
	gpunic_link_close(wire);

	n = read_frames(path, got, 16);
	CHECK_EQ(n, 6);
	/* request in, reply out, then the four hostile frames as they came */
	CHECK_EQ(got[0].len, h[0].len);
	CHECK_MEM(got[0].data, h[0].frame, h[0].len);
	CHECK_EQ(got[1].len, rlen);
	CHECK_MEM(got[1].data, reply, rlen);
	for (int i = 1; i < 5; i++) {
		CHECK_EQ(got[i + 1].len, h[i].len);
		CHECK_MEM(got[i + 1].data, h[i].frame, h[i].len);
	}
	free_frames(got, n);
	remove_tmpdir();
}

/* GPUNIC_CAPTURE: one NIC writes the path itself, two write one file each, named by IP. */
TEST(capture_env_names_per_nic)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC };
	char base[256], pa[256], pb[256];
	struct gpunic_link *la, *lb;
	struct gpunic_nic_attr na = { .ip = IP4(10, 0, 0, 5), .mac = { 2, 0, 0, 0, 0, 5 } };
	struct gpunic_nic *solo;
	struct fixture fx;
	uint16_t p0, p1;
	uint64_t t0;

	need_pcap();
	make_tmpdir();
	tmp_path(base, sizeof(base), "cap.pcap");
	tmp_path(pa, sizeof(pa), "cap.10.0.0.1.pcap");
	tmp_path(pb, sizeof(pb), "cap.10.0.0.2.pcap");
	CHECK_EQ(setenv("GPUNIC_CAPTURE", base, 1), 0);

	t0 = realtime_ns();
	fx_setup(&fx, FX_LINK_SHM, &o);
	/* the first NIC's file was renamed when the second one opened */
	CHECK(!exists(base));
	CHECK(exists(pa));
	CHECK(exists(pb));
	traffic(&fx);
	check_nic_capture(pa, fx.a.nic, fx.a.ip, fx.a.qp->qp_num, fx.b.qp->qp_num, t0,
			  realtime_ns());
	check_nic_capture(pb, fx.b.nic, fx.b.ip, fx.b.qp->qp_num, fx.a.qp->qp_num, t0,
			  realtime_ns());
	fx_teardown(&fx);

	/* alone again: the bare path */
	fx_links(FX_LINK_SHM, &la, &lb, &p0, &p1);
	na.link = la;
	solo = gpunic_nic_open(&na);
	CHECK(solo);
	CHECK(exists(base));
	/* a call names the file itself and leaves the environment's naming */
	tmp_path(pa, sizeof(pa), "mine.pcap");
	CHECK_EQ(gpunic_nic_capture(solo, pa), 0);
	CHECK(exists(pa));
	CHECK_EQ(gpunic_nic_close(solo), 0);
	gpunic_link_close(lb);
	CHECK_EQ(unsetenv("GPUNIC_CAPTURE"), 0);
	remove_tmpdir();
}

/* Stop, restart elsewhere, refuse bad requests without disturbing the running capture. */
TEST(capture_stop_replace_and_errors)
{
	static struct cap_frame f[CAP_MAX_FRAMES];
	struct fx_opts o = { .type = GPUNIC_QPT_UC };
	char p1[256], p2[256], bad[256];
	struct gpunic_nic_counters c;
	struct fixture fx;
	uint64_t before;
	int n1, n2;

	need_pcap();
	make_tmpdir();
	tmp_path(p1, sizeof(p1), "one.pcap");
	tmp_path(p2, sizeof(p2), "two.pcap");
	tmp_path(bad, sizeof(bad), "no/such/dir.pcap");
	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK_EQ(gpunic_nic_capture(NULL, p1), EINVAL);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, ""), EINVAL);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, NULL), 0);	/* nothing to stop */

	CHECK_EQ(gpunic_nic_capture(fx.a.nic, p1), 0);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 100, 1);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, bad), ENOENT);
	/* still capturing to p1 */
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 100, 2);
	CHECK_EQ(gpunic_nic_query_counters(fx.a.nic, &c), 0);
	before = c.tx_frames + c.rx_frames;
	CHECK_EQ(before, 2);
	/* replace: p1 is closed complete, p2 starts empty */
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, p2), 0);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 100, 3);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, NULL), 0);
	/* stopped: nothing more is written anywhere */
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 100, 4);
	n1 = read_frames(p1, f, CAP_MAX_FRAMES);
	CHECK_EQ(n1, 2);
	free_frames(f, n1);
	n2 = read_frames(p2, f, CAP_MAX_FRAMES);
	CHECK_EQ(n2, 1);
	free_frames(f, n2);
	CHECK(!exists(bad));
	fx_teardown(&fx);
	remove_tmpdir();
}

/* Without libpcap: ENOTSUP for a request, GPUNIC_CAPTURE ignored, stopping is still fine. */
TEST(capture_needs_libpcap)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC };
	char path[256];
	struct fixture fx;

#ifdef GPUNIC_HAVE_PCAP
	SKIP("built with libpcap: the other capture_* tests cover this build");
#endif
	make_tmpdir();
	tmp_path(path, sizeof(path), "cap.pcap");
	CHECK_EQ(setenv("GPUNIC_CAPTURE", path, 1), 0);
	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK_EQ(unsetenv("GPUNIC_CAPTURE"), 0);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, path), ENOTSUP);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, NULL), 0);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 100, 1);
	CHECK(!exists(path));
	fx_teardown(&fx);
	remove_tmpdir();
}
