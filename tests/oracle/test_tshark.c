// SPDX-License-Identifier: MIT
/*
 * tshark as an oracle for the encoder: one frame for every RC and UC opcode in the table, each
 * with its own QPN, PSN, A bit, RETH, ImmDt, AETH, AtomicETH, AtomicAckETH and IETH values, is
 * written to a pcap; Wireshark's InfiniBand dissector must read back exactly those values and
 * raise no malformed-packet or expert warning.
 *
 * tshark does not check the ICRC (docs/WIRE.md 6.1); it only shows the four wire bytes read
 * big-endian, so the test compares that against the byte-swapped CRC (docs/WIRE.md 3).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpunic/pcap.h"
#include "gpunic/wire.h"
#include "harness.h"

#ifndef GPUNIC_TSHARK_PATH
#define GPUNIC_TSHARK_PATH ""
#endif

#define MAX_FRAMES 64
#define MAX_PAYLOAD 256

struct oracle_frame {
	struct gpunic_pkt pkt;
	uint8_t payload[MAX_PAYLOAD];
	uint8_t bytes[GPUNIC_MAX_FRAME_BYTES];
	size_t len;
};

static struct oracle_frame frames[MAX_FRAMES];
static int nframes;
static char tmpdir[64];
static char pcap_path[128];

static void need_tshark(void)
{
	if (!GPUNIC_TSHARK_PATH[0] || access(GPUNIC_TSHARK_PATH, X_OK) != 0)
		SKIP("tshark not found (Debian package tshark)");
}

/* Syndromes worth seeing decoded: ACK with and without credits, RNR NAK, each NAK code. */
static const uint8_t syndromes[] = { 0x1F, 0x05, 0x2E, 0x60, 0x61, 0x62, 0x63, 0x00 };

/*
 * Every field gets a value derived from the opcode and the frame's index, so a field read from
 * the wrong offset or with the wrong width cannot match by accident.
 */
static void fill_frame(struct oracle_frame *f, uint8_t op, unsigned int idx)
{
	static const uint8_t dst[6] = { 0x02, 0x00, 0x5e, 0x10, 0x20, 0x02 };
	static const uint8_t src[6] = { 0x02, 0x00, 0x5e, 0x10, 0x20, 0x01 };
	const struct gpunic_opcode_info *info = gpunic_opcode_info(op);
	struct gpunic_pkt *p = &f->pkt;

	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, dst, 6);
	memcpy(p->src_mac, src, 6);
	p->ttl = 64;
	p->ip_id = (uint16_t)(0x3000 + idx);
	p->ip_frag = 0x4000;
	p->src_ip = 0xC0A80701;
	p->dst_ip = 0xC0A80702;
	p->src_port = (uint16_t)(0xC000 | idx);
	p->dst_port = GPUNIC_ROCE_UDP_PORT;
	p->opcode = op;
	p->se = idx & 1;
	p->migreq = idx % 3 == 0;
	p->pkey = idx & 2 ? 0x7FFF : 0xFFFF;
	p->qpn = 0xA00000u | (uint32_t)op << 8 | idx;
	p->ack_req = (idx >> 1) & 1;
	p->psn = (0x123457u * (idx + 1)) & GPUNIC_PSN_MASK;
	p->reth_va = 0x8123456789AB0000ull | (uint64_t)op << 8 | idx;
	p->reth_rkey = 0xC0DE0000u | op;
	p->reth_len = 0x10000u + op * 3u;
	p->aeth_syndrome = syndromes[idx % sizeof(syndromes)];
	p->aeth_msn = 0xABCD00u + idx;
	p->imm = 0xFEED0000u | (uint32_t)op << 8 | idx;
	p->atm_va = 0x1122334455667700ull + op * 8ull;
	p->atm_rkey = 0xA7000000u | op;
	p->atm_swap_add = 0xDEADBEEFCAFE0000ull | op;
	p->atm_compare = 0x0F1E2D3C4B5A0000ull | op;
	p->atmack_orig = 0x8877665544330000ull | op;
	p->ieth_rkey = 0x1E700000u | op;
	/* FIRST/MIDDLE carry a whole PMTU (no pad); others a length that walks through the pads. */
	if (!(info->mask & GPUNIC_MASK_PAYLOAD))
		p->paylen = 0;
	else if (!(info->mask & GPUNIC_MASK_LAST))
		p->paylen = MAX_PAYLOAD;
	else if ((op & GPUNIC_OP_MASK) == GPUNIC_OP_SEND_ONLY)
		p->paylen = 0;
	else
		p->paylen = 1 + (idx * 7) % 19;
	for (uint32_t i = 0; i < p->paylen; i++)
		f->payload[i] = (uint8_t)(op + i);
	p->payload = f->payload;
}

/* Frames for the whole table, written to a pcap in a fresh directory. */
static void build_pcap(void)
{
	const char *base = getenv("TMPDIR");
	struct gpunic_pcap_writer *w;
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE];

	for (int op = 0; op < 256; op++) {
		uint8_t t = op & GPUNIC_TRANSPORT_MASK;
		struct oracle_frame *f;

		if (!gpunic_opcode_info((uint8_t)op) ||
		    (t != GPUNIC_TRANSPORT_RC && t != GPUNIC_TRANSPORT_UC))
			continue;
		CHECK(nframes < MAX_FRAMES);
		f = &frames[nframes];
		fill_frame(f, (uint8_t)op, (unsigned int)nframes);
		f->len = gpunic_frame_encode(&f->pkt, f->bytes, sizeof(f->bytes));
		CHECK(f->len > 0);
		nframes++;
	}
	/* rxe sends 12 UC and 23 RC opcodes; the table must have all of them. */
	CHECK_EQ(nframes, 12 + 23);

	snprintf(tmpdir, sizeof(tmpdir), "%s/gpunic_tshark_XXXXXX", base ? base : "/tmp");
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(pcap_path, sizeof(pcap_path), "%s/opcodes.pcap", tmpdir);
	w = gpunic_pcap_writer_open(pcap_path, errbuf);
	if (!w)
		harness_fail(__FILE__, __LINE__, "%s", errbuf);
	for (int i = 0; i < nframes; i++) {
		struct timespec ts = { .tv_sec = 1700000000, .tv_nsec = i * 1000 };

		CHECK_EQ(gpunic_pcap_writer_append(w, frames[i].bytes, frames[i].len, &ts), 0);
	}
	CHECK_EQ(gpunic_pcap_writer_close(w), 0);
}

static void cleanup(void)
{
	unlink(pcap_path);
	rmdir(tmpdir);
}

/* Run tshark on the pcap with @args; its stdout lands in @out (NUL-terminated). */
static void run_tshark(const char *args, char *out, size_t cap)
{
	char cmd[2048];
	size_t n = 0, got;
	FILE *p;
	int status;

	/*
	 * Wireshark 4.0's RPC-over-RDMA heuristic claims RC SEND payloads and reports any shorter
	 * than its own 16-byte header as malformed, the empty ones included; ours are not RPC.
	 */
	snprintf(cmd, sizeof(cmd),
		 "'%s' -n --disable-heuristic rpcrdma_infiniband -r '%s' %s 2>/dev/null",
		 GPUNIC_TSHARK_PATH, pcap_path, args);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	while ((got = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	status = pclose(p);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		harness_fail(__FILE__, __LINE__, "tshark failed (status %d): %s", status, cmd);
	CHECK(n < cap - 1);
}

/* The fields compared, in -e order. Empty means "absent", which is expected where no header. */
enum {
	F_NUMBER,
	F_OPCODE,
	F_SE,
	F_M,
	F_PADCNT,
	F_TVER,
	F_PKEY,
	F_DESTQP,
	F_A,
	F_RESV7,
	F_PSN,
	F_RETH_VA,
	F_RETH_RKEY,
	F_RETH_LEN,
	F_IMMDT,
	F_AETH_SYN,
	F_AETH_MSN,
	F_ATM_SWAP,
	F_ATM_CMP,
	F_ATMACK,
	F_IETH,
	F_ICRC,
	F_IP_ID,
	F_SPORT,
	F_UDP_LEN,
	F_EXPERT,
	F_MALFORMED,
	F_COUNT,
};

static const char *const field_names[F_COUNT] = {
	"frame.number",
	"infiniband.bth.opcode",
	"infiniband.bth.se",
	"infiniband.bth.m",
	"infiniband.bth.padcnt",
	"infiniband.bth.tver",
	"infiniband.bth.p_key",
	"infiniband.bth.destqp",
	"infiniband.bth.a",
	"infiniband.bth.reserved7",
	"infiniband.bth.psn",
	"infiniband.reth.va",
	"infiniband.reth.r_key",
	"infiniband.reth.dmalen",
	"infiniband.immdt",
	"infiniband.aeth.syndrome",
	"infiniband.aeth.msn",
	"infiniband.atomiceth.swapdt",
	"infiniband.atomiceth.cmpdt",
	"infiniband.atomicacketh.origremdt",
	"infiniband.ieth",
	"infiniband.invariant.crc",
	"ip.id",
	"udp.srcport",
	"udp.length",
	"_ws.expert",
	"_ws.malformed",
};

/* Split one CSV line in place; tshark's values here never contain the separator. */
static void split_line(char *line, char **cols)
{
	for (int i = 0; i < F_COUNT; i++) {
		cols[i] = line;
		line = strchr(line, ',');
		if (!line) {
			CHECK_EQ(i, F_COUNT - 1);
			return;
		}
		*line++ = '\0';
	}
	harness_fail(__FILE__, __LINE__, "too many columns in tshark output");
}

static int bad;

static void mismatch(int frame, int field, const char *got, const char *want)
{
	fprintf(stderr, "frame %d (%s) %s: tshark '%s', gpunic sent '%s'\n", frame,
		gpunic_opcode_name(frames[frame - 1].pkt.opcode), field_names[field], got, want);
	bad++;
}

/* tshark prints numbers in decimal or 0x-hex depending on the field's display base. */
static void expect_num(int frame, char **cols, int field, uint64_t want)
{
	char *end;
	uint64_t got;
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, want);
	errno = 0;
	got = strtoull(cols[field], &end, 0);
	if (!cols[field][0] || *end || errno || got != want)
		mismatch(frame, field, cols[field], buf);
}

/* Byte fields (ImmDt, IETH) come as plain hex digits of the wire bytes. */
static void expect_hex32(int frame, char **cols, int field, uint32_t want)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%08x", want);
	if (strcmp(cols[field], buf) != 0)
		mismatch(frame, field, cols[field], buf);
}

static void expect_absent(int frame, char **cols, int field)
{
	if (cols[field][0])
		mismatch(frame, field, cols[field], "(absent)");
}

static uint32_t bswap32(uint32_t v)
{
	return v >> 24 | (v >> 8 & 0xFF00) | (v << 8 & 0xFF0000) | v << 24;
}

static void check_frame(int n, char **cols)
{
	const struct gpunic_pkt *p = &frames[n - 1].pkt;
	const struct gpunic_opcode_info *info = gpunic_opcode_info(p->opcode);
	uint32_t m = info->mask;
	uint32_t udp_len = (uint32_t)frames[n - 1].len - GPUNIC_ETH_BYTES - GPUNIC_IP4_BYTES;
	const uint8_t *icrc = frames[n - 1].bytes + frames[n - 1].len - GPUNIC_ICRC_BYTES;
	uint32_t crc = (uint32_t)icrc[0] | (uint32_t)icrc[1] << 8 | (uint32_t)icrc[2] << 16 |
		       (uint32_t)icrc[3] << 24;

	expect_num(n, cols, F_NUMBER, (uint64_t)n);
	expect_num(n, cols, F_OPCODE, p->opcode);
	expect_num(n, cols, F_SE, p->se);
	expect_num(n, cols, F_M, p->migreq);
	expect_num(n, cols, F_PADCNT, gpunic_pad_bytes(p->paylen));
	expect_num(n, cols, F_TVER, 0);
	expect_num(n, cols, F_PKEY, p->pkey);
	expect_num(n, cols, F_DESTQP, p->qpn);
	expect_num(n, cols, F_A, p->ack_req);
	expect_num(n, cols, F_RESV7, 0);
	expect_num(n, cols, F_PSN, p->psn);
	if (m & GPUNIC_MASK_RETH) {
		expect_num(n, cols, F_RETH_VA, p->reth_va);
		expect_num(n, cols, F_RETH_RKEY, p->reth_rkey);
		expect_num(n, cols, F_RETH_LEN, p->reth_len);
	} else if (m & GPUNIC_MASK_ATMETH) {
		/* Wireshark files the AtomicETH's VA and R_Key under the RETH field names. */
		expect_num(n, cols, F_RETH_VA, p->atm_va);
		expect_num(n, cols, F_RETH_RKEY, p->atm_rkey);
		expect_absent(n, cols, F_RETH_LEN);
	} else {
		expect_absent(n, cols, F_RETH_VA);
		expect_absent(n, cols, F_RETH_RKEY);
		expect_absent(n, cols, F_RETH_LEN);
	}
	if (m & GPUNIC_MASK_IMMDT)
		expect_hex32(n, cols, F_IMMDT, p->imm);
	else
		expect_absent(n, cols, F_IMMDT);
	if (m & GPUNIC_MASK_AETH) {
		expect_num(n, cols, F_AETH_SYN, p->aeth_syndrome);
		expect_num(n, cols, F_AETH_MSN, p->aeth_msn);
	} else {
		expect_absent(n, cols, F_AETH_SYN);
	}
	if (m & GPUNIC_MASK_ATMETH) {
		expect_num(n, cols, F_ATM_SWAP, p->atm_swap_add);
		expect_num(n, cols, F_ATM_CMP, p->atm_compare);
	} else {
		expect_absent(n, cols, F_ATM_SWAP);
	}
	if (m & GPUNIC_MASK_ATMACK)
		expect_num(n, cols, F_ATMACK, p->atmack_orig);
	else
		expect_absent(n, cols, F_ATMACK);
	if (m & GPUNIC_MASK_IETH)
		expect_hex32(n, cols, F_IETH, p->ieth_rkey);
	else
		expect_absent(n, cols, F_IETH);
	/* tshark reads the LSB-first ICRC as a big-endian number (docs/WIRE.md 3). */
	expect_num(n, cols, F_ICRC, bswap32(crc));
	CHECK_EQ(crc, gpunic_icrc_compute(frames[n - 1].bytes, frames[n - 1].len - 4));
	expect_num(n, cols, F_IP_ID, p->ip_id);
	expect_num(n, cols, F_SPORT, p->src_port);
	expect_num(n, cols, F_UDP_LEN, udp_len);
	CHECK_EQ(udp_len, GPUNIC_UDP_BYTES + info->hdr_bytes + p->paylen +
			  gpunic_pad_bytes(p->paylen) + GPUNIC_ICRC_BYTES);
	expect_absent(n, cols, F_EXPERT);
	expect_absent(n, cols, F_MALFORMED);
}

TEST(tshark_all_opcodes)
{
	static char out[1 << 16];
	char args[1536];
	char *line, *save = NULL;
	int n = 0;
	size_t off;

	need_tshark();
	build_pcap();
	off = (size_t)snprintf(args, sizeof(args), "-T fields -E separator=, -E occurrence=f");
	for (int i = 0; i < F_COUNT; i++)
		off += (size_t)snprintf(args + off, sizeof(args) - off, " -e %s", field_names[i]);
	CHECK(off < sizeof(args));
	run_tshark(args, out, sizeof(out));
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *cols[F_COUNT];

		n++;
		CHECK(n <= nframes);
		split_line(line, cols);
		check_frame(n, cols);
	}
	CHECK_EQ(n, nframes);
	if (bad)
		harness_fail(__FILE__, __LINE__, "%d field(s) differ; pcap kept at %s", bad,
			     pcap_path);
	cleanup();
}

/* Every frame dissects as InfiniBand with the opcode name Wireshark has for it. */
TEST(tshark_protocol_and_names)
{
	static char out[1 << 16];
	char *line, *save = NULL;
	int n = 0;

	need_tshark();
	build_pcap();
	run_tshark("-T fields -E separator=/ -e frame.protocols -e _ws.col.Info", out,
		   sizeof(out));
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const struct gpunic_pkt *p = &frames[n].pkt;
		const char *want = (p->opcode & GPUNIC_TRANSPORT_MASK) ? "UC " : "RC ";

		n++;
		if (!strstr(line, "eth:ethertype:ip:udp:infiniband") || !strstr(line, want) ||
		    strstr(line, "Unknown"))
			harness_fail(__FILE__, __LINE__, "frame %d (%s): tshark says '%s'", n,
				     gpunic_opcode_name(p->opcode), line);
	}
	CHECK_EQ(n, nframes);
	cleanup();
}

/* A display filter for malformed frames or expert warnings selects none of ours. */
TEST(tshark_no_warnings)
{
	static char out[1 << 16];

	need_tshark();
	build_pcap();
	run_tshark("-Y '_ws.malformed || _ws.expert.severity >= warning' -T fields -e frame.number",
		   out, sizeof(out));
	if (out[0])
		harness_fail(__FILE__, __LINE__, "tshark flags frames: %s (pcap kept at %s)", out,
			     pcap_path);
	cleanup();
}

/*
 * The filter above must be able to fire, or its silence proves nothing: a frame whose IP and
 * UDP lengths promise more bytes than the capture holds is malformed to tshark.
 */
TEST(tshark_filter_catches_malformed)
{
	static char out[1 << 16];
	struct gpunic_pcap_writer *w;

	need_tshark();
	build_pcap();
	w = gpunic_pcap_writer_open(pcap_path, NULL);
	CHECK(w != NULL);
	for (int i = 0; i < nframes; i++) {
		const struct gpunic_opcode_info *info = gpunic_opcode_info(frames[i].pkt.opcode);
		/* Cut inside the extension headers of frames that have any. */
		size_t cut = info->hdr_bytes > GPUNIC_BTH_BYTES ? GPUNIC_L2L4_BYTES +
								   GPUNIC_BTH_BYTES + 2 :
								   frames[i].len;

		CHECK_EQ(gpunic_pcap_writer_append(w, frames[i].bytes, cut, NULL), 0);
	}
	CHECK_EQ(gpunic_pcap_writer_close(w), 0);
	run_tshark("-Y '_ws.malformed || _ws.expert.severity >= warning' -T fields -e frame.number",
		   out, sizeof(out));
	CHECK(out[0] != '\0');
	cleanup();
}
