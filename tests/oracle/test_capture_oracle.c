// SPDX-License-Identifier: MIT
/*
 * Third-party oracles on real softnic traffic: two NICs exchange every opcode of a transport
 * (single- and multi-packet messages, immediates, READ with its responses, compare-and-swap and
 * fetch-and-add with their ATOMIC ACKs, ACKs, RNR NAKs and a NAK on RC) while NIC a captures
 * (gpunic_nic_capture). Then:
 *  - tshark dissects the capture with no malformed frame or expert warning, and every frame's
 *    opcode, destination QP, PSN, pad, RETH, ImmDt and AETH are what the posted work requests
 *    make them: the requests of each side follow their message list PSN by PSN (a go-back to an
 *    earlier PSN must resend exactly what that PSN carried), READ responses follow the READs,
 *    AtomicETH (VA, R_Key, swap/add, compare) is what each atomic asked for and every ATOMIC
 *    ACK follows its atomic with the original value, and ACKs only acknowledge PSNs already
 *    sent;
 *  - `gpunic decode` verifies every frame's ICRC;
 *  - scapy recomputes every frame's ICRC and IPv4 checksum, and unpacks every atomic request
 *    and ATOMIC ACK against the values written to atomics.txt (capture_oracle.py --atomics).
 * A missing oracle (tshark, /usr/bin/python3 with scapy, libpcap) makes the test skip.
 */
#include <stdarg.h>
#include <sys/wait.h>

#include "nic_fixture.h"

#ifndef GPUNIC_TSHARK_PATH
#define GPUNIC_TSHARK_PATH ""
#endif
#ifndef GPUNIC_PYTHON_PATH
#define GPUNIC_PYTHON_PATH ""
#endif

#define MAX_PKTS 2048
#define ORACLE_MTU GPUNIC_MTU_1024

/* One packet a side is expected to send, in PSN order. */
struct exp_pkt {
	uint8_t opcode;
	uint32_t psn;
	uint32_t npsn;          /* PSNs it uses: a READ request one per response packet */
	uint32_t paylen;
	bool has_reth;
	uint32_t rkey;
	uint32_t dmalen;
	bool has_imm;
	uint32_t imm;
	bool has_atomic;        /* AtomicETH */
	uint64_t va;
	uint64_t swap_add;
	uint64_t compare;
	bool has_orig;          /* AtomicAckETH */
	uint64_t orig;
};

struct stream {
	struct exp_pkt p[MAX_PKTS];
	uint32_t n;
	uint32_t next;          /* index of the packet expected next */
};

/* What one side sends: its requests, and the READ responses it owes the other side. */
struct side {
	const struct player *pl;
	uint32_t psn;           /* next request PSN */
	struct stream req;
	struct stream rsp;
	uint32_t acks, rnr_naks, seq_naks, access_naks;
	bool sent_any;
	uint32_t psn_end;       /* one past the PSNs of the requests seen on the wire */
};

static struct side sides[2];
static char tmpdir[128], pcap_path[256], atomics_path[256];
static bool rc;
static FILE *atomics_file;	/* the atomic frames expected, for scapy */

static void need_oracles(void)
{
#ifndef GPUNIC_HAVE_PCAP
	SKIP("built without libpcap");
#endif
	if (!GPUNIC_TSHARK_PATH[0] || access(GPUNIC_TSHARK_PATH, X_OK) != 0)
		SKIP("tshark not found (Debian package tshark)");
	if (!GPUNIC_PYTHON_PATH[0] || access(GPUNIC_PYTHON_PATH, X_OK) != 0)
		SKIP("no /usr/bin/python3 for scapy");
}

static uint8_t op_code(uint8_t base)
{
	return (uint8_t)((rc ? GPUNIC_TRANSPORT_RC : GPUNIC_TRANSPORT_UC) | base);
}

static void push(struct stream *s, const struct exp_pkt *p)
{
	CHECK(s->n < MAX_PKTS);
	s->p[s->n++] = *p;
}

/* The packets a work request turns into (IBA 9.4: FIRST/MIDDLE/LAST/ONLY by the path MTU). */
static void expect_wr(struct side *s, struct side *peer, uint8_t op, uint32_t len, uint32_t imm)
{
	uint32_t pmtu = gpunic_mtu_bytes(ORACLE_MTU), npkt = len ? (len + pmtu - 1) / pmtu : 1;
	bool send = op == MLX5_OPCODE_SEND || op == MLX5_OPCODE_SEND_IMM;
	bool has_imm = op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM;
	uint32_t rkey = peer->pl->mr->rkey;
	struct exp_pkt p;

	if (op == MLX5_OPCODE_RDMA_READ) {
		p = (struct exp_pkt){ .opcode = GPUNIC_OP_READ_REQUEST, .psn = s->psn, .npsn = npkt,
				      .has_reth = true, .rkey = rkey, .dmalen = len };
		push(&s->req, &p);
		for (uint32_t i = 0; i < npkt; i++) {
			uint8_t o = npkt == 1 ? GPUNIC_OP_READ_RESPONSE_ONLY :
				    i == 0 ? GPUNIC_OP_READ_RESPONSE_FIRST :
				    i == npkt - 1 ? GPUNIC_OP_READ_RESPONSE_LAST :
						    GPUNIC_OP_READ_RESPONSE_MIDDLE;

			p = (struct exp_pkt){ .opcode = o, .psn = gpunic_psn_add(s->psn, i),
					      .paylen = i == npkt - 1 ? len - i * pmtu : pmtu };
			push(&peer->rsp, &p);
		}
		s->psn = gpunic_psn_add(s->psn, npkt);
		return;
	}
	for (uint32_t i = 0; i < npkt; i++) {
		bool first = i == 0, last = i == npkt - 1;
		uint8_t o;

		if (send)
			o = npkt == 1 ? (has_imm ? GPUNIC_OP_SEND_ONLY_IMM : GPUNIC_OP_SEND_ONLY) :
			    first ? GPUNIC_OP_SEND_FIRST :
			    !last ? GPUNIC_OP_SEND_MIDDLE :
			    has_imm ? GPUNIC_OP_SEND_LAST_IMM : GPUNIC_OP_SEND_LAST;
		else
			o = npkt == 1 ? (has_imm ? GPUNIC_OP_WRITE_ONLY_IMM : GPUNIC_OP_WRITE_ONLY) :
			    first ? GPUNIC_OP_WRITE_FIRST :
			    !last ? GPUNIC_OP_WRITE_MIDDLE :
			    has_imm ? GPUNIC_OP_WRITE_LAST_IMM : GPUNIC_OP_WRITE_LAST;
		p = (struct exp_pkt){ .opcode = op_code(o), .psn = s->psn, .npsn = 1,
				      .paylen = last ? len - i * pmtu : pmtu,
				      .has_reth = !send && first, .rkey = rkey, .dmalen = len,
				      .has_imm = has_imm && last, .imm = imm };
		push(&s->req, &p);
		s->psn = gpunic_psn_add(s->psn, 1);
	}
}

static void xfer(struct fixture *fx, int from, uint8_t op, uint32_t len, uint32_t seed)
{
	struct player *s = from ? &fx->b : &fx->a, *d = from ? &fx->a : &fx->b;
	bool imm = op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM;

	expect_wr(&sides[from], &sides[!from], op, len, imm ? FX_IMM(seed) : 0);
	fx_xfer(fx, s, d, op, len, seed);
}

/*
 * One atomic from side @from at target offset @toff of the other side's buffer, which holds
 * @before: the request and its ATOMIC ACK expected, for tshark and for scapy (atomics.txt).
 */
static void atomic_xfer(struct fixture *fx, int from, uint8_t op, size_t toff, uint64_t before,
			uint64_t compare_add, uint64_t swap)
{
	struct player *s = from ? &fx->b : &fx->a, *d = from ? &fx->a : &fx->b;
	bool cas = op == MLX5_OPCODE_ATOMIC_CS;
	struct side *me = &sides[from];
	struct gpunic_dev_cqe cqe;
	struct exp_pkt p;
	uint64_t va = fx_va(d, toff), got;

	memcpy(d->buf + toff, &before, 8);
	p = (struct exp_pkt){ .opcode = cas ? GPUNIC_OP_COMPARE_SWAP : GPUNIC_OP_FETCH_ADD,
			      .psn = me->psn, .npsn = 1, .rkey = d->mr->rkey, .has_atomic = true,
			      .va = va, .swap_add = cas ? swap : compare_add,
			      .compare = cas ? compare_add : 0 };
	push(&me->req, &p);
	fprintf(atomics_file, "%x %x %" PRIx64 " %x %" PRIx64 " %" PRIx64 "\n", p.opcode, p.psn,
		p.va, p.rkey, p.swap_add, p.compare);
	p = (struct exp_pkt){ .opcode = GPUNIC_OP_ATOMIC_ACKNOWLEDGE, .psn = me->psn,
			      .has_orig = true, .orig = before };
	push(&sides[!from].rsp, &p);
	fprintf(atomics_file, "%x %x %" PRIx64 "\n", p.opcode, p.psn, p.orig);
	me->psn = gpunic_psn_add(me->psn, 1);

	if (cas)
		CHECK(gpunic_dev_post_atomic_cas(&s->dq, GPUNIC_DEV_SEND_SIGNALED,
						 fx_va(s, FX_DST_OFF), s->mr->lkey, va, d->mr->rkey,
						 compare_add, swap) >= 0);
	else
		CHECK(gpunic_dev_post_atomic_fa(&s->dq, GPUNIC_DEV_SEND_SIGNALED,
						fx_va(s, FX_DST_OFF), s->mr->lkey, va, d->mr->rkey,
						compare_add) >= 0);
	CHECK_EQ(gpunic_dev_submit(&s->dq), 0);
	CHECK(fx_wait_cqe(fx, s, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	memcpy(&got, s->buf + FX_DST_OFF, 8);
	CHECK_EQ(got, before);
}

/* RC: compare-and-swap that succeeds and one that fails, fetch-and-add through the 64-bit
 * wrap, both ways, with operands whose bytes all differ (byte order shows on the wire). */
static void run_atomics(struct fixture *fx)
{
	for (int dir = 0; dir < 2; dir++) {
		atomic_xfer(fx, dir, MLX5_OPCODE_ATOMIC_CS, 4096, 0x0102030405060708ull,
			    0x0102030405060708ull, 0x1112131415161718ull);
		atomic_xfer(fx, dir, MLX5_OPCODE_ATOMIC_CS, 4104, 0x2122232425262728ull,
			    0x3132333435363738ull, 0x4142434445464748ull);
		atomic_xfer(fx, dir, MLX5_OPCODE_ATOMIC_FA, 4112, 0xFFFFFFFFFFFFFFF0ull,
			    0x0000000000000020ull, 0);
		atomic_xfer(fx, dir, MLX5_OPCODE_ATOMIC_FA, 4120, 0x8090A0B0C0D0E0F0ull,
			    0x0A0B0C0D0E0F1011ull, 0);
	}
}

/* Every opcode both ways, sizes around the MTU and a multi-packet one, PSNs through the wrap. */
static void run_traffic(struct fixture *fx)
{
	static const uint8_t ops[] = { MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM,
				       MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
				       MLX5_OPCODE_RDMA_READ };
	uint32_t pmtu = gpunic_mtu_bytes(ORACLE_MTU);
	const uint32_t sizes[] = { 0, 1, 33, pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5 };
	unsigned nops = rc ? 5 : 4;
	uint32_t seed = 1;

	for (int dir = 0; dir < 2; dir++)
		for (unsigned op = 0; op < nops; op++)
			for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
				xfer(fx, dir, ops[op], sizes[i], seed++);
}

/* RC only: RNR NAKs for a SEND with no receive, then a NAK that ends the QP (bad rkey). */
static void run_rc_errors(struct fixture *fx)
{
	struct gpunic_dev_cqe cqe;
	/* single-packet: see rc_rnr_multi_packet_send_outlasts_retry_cnt (test_nic_overflow.c) */
	uint32_t len = 100;

	expect_wr(&sides[0], &sides[1], MLX5_OPCODE_SEND_IMM, len, 0x5151);
	CHECK(fx_post(&fx->a, MLX5_OPCODE_SEND_IMM, GPUNIC_DEV_SEND_SIGNALED, 0, len, &fx->b, 0,
		      0x5151) >= 0);
	fx_settle(fx, 10000000);
	fx_post_recv(&fx->b, FX_DST_OFF, len);
	CHECK(fx_wait_cqe(fx, &fx->b, false, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK(fx_wait_cqe(fx, &fx->a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);

	/* the expected RETH carries the rkey the fixture would use; this one is wrong on purpose */
	expect_wr(&sides[0], &sides[1], MLX5_OPCODE_RDMA_WRITE, 64, 0);
	sides[0].req.p[sides[0].req.n - 1].rkey ^= 0x100;
	CHECK(gpunic_dev_post_send_sge(&fx->a.dq, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED,
				       fx_va(&fx->a, 0), 64, fx->a.mr->lkey,
				       fx_va(&fx->b, FX_DST_OFF), fx->b.mr->rkey ^ 0x100, 0) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx->a.dq), 0);
	CHECK(fx_wait_cqe(fx, &fx->a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	fx_settle(fx, 2000000);
}

/* ---------------------------------------------------------------- running the oracles */

static void run_cmd(const char *cmd, char *out, size_t cap, int *status)
{
	size_t n = 0, got;
	FILE *p = popen(cmd, "r");

	CHECK(p != NULL);
	while ((got = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	*status = pclose(p);
	CHECK(n < cap - 1);
}

static void run_tshark(const char *args, char *out, size_t cap)
{
	char cmd[2048];
	int status;

	/* Wireshark's RPC-over-RDMA heuristic misreads short RC SEND payloads (test_tshark.c) */
	snprintf(cmd, sizeof(cmd),
		 "'%s' -n --disable-heuristic rpcrdma_infiniband -r '%s' %s 2>/dev/null",
		 GPUNIC_TSHARK_PATH, pcap_path, args);
	run_cmd(cmd, out, cap, &status);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		harness_fail(__FILE__, __LINE__, "tshark failed (status %d): %s", status, cmd);
}

enum {
	F_NUMBER,
	F_SRC,
	F_OPCODE,
	F_DESTQP,
	F_PSN,
	F_PADCNT,
	F_RKEY,
	F_DMALEN,
	F_IMMDT,
	F_SYNDROME,
	F_MSN,
	F_VA,
	F_SWAP,
	F_CMP,
	F_ORIG,
	F_UDP_LEN,
	F_EXPERT,
	F_MALFORMED,
	F_COUNT,
};

static const char *const field_names[F_COUNT] = {
	"frame.number", "ip.src", "infiniband.bth.opcode", "infiniband.bth.destqp",
	"infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.reth.r_key",
	"infiniband.reth.dmalen", "infiniband.immdt", "infiniband.aeth.syndrome",
	"infiniband.aeth.msn", "infiniband.reth.va", "infiniband.atomiceth.swapdt",
	"infiniband.atomiceth.cmpdt", "infiniband.atomicacketh.origremdt", "udp.length",
	"_ws.expert", "_ws.malformed",
};

static int bad;

__attribute__((format(printf, 2, 3))) static void complain(unsigned frame, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "frame %u: ", frame);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	bad++;
}

static bool num(const char *s, uint64_t *v, int base)
{
	char *end;

	if (!s[0])
		return false;
	errno = 0;
	*v = strtoull(s, &end, base);
	return !*end && !errno;
}

static uint64_t field(char **cols, int f, unsigned frame)
{
	uint64_t v = 0;

	if (!num(cols[f], &v, f == F_IMMDT ? 16 : 0))
		complain(frame, "%s is '%s', not a number", field_names[f], cols[f]);
	return v;
}

/* The packet of stream @s with PSN @psn, searching back from the newest (PSNs are unique). */
static const struct exp_pkt *find_psn(const struct stream *s, uint8_t opcode, uint32_t psn)
{
	for (uint32_t i = s->n; i-- > 0;)
		if (s->p[i].psn == psn && s->p[i].opcode == opcode)
			return &s->p[i];
	return NULL;
}

/* The next packet of a stream, or an earlier one sent again (go back N after RNR or loss). */
static const struct exp_pkt *match(struct stream *s, uint8_t opcode, uint32_t psn)
{
	const struct exp_pkt *e = s->next < s->n ? &s->p[s->next] : NULL;

	if (e && e->psn == psn && e->opcode == opcode) {
		s->next++;
		return e;
	}
	e = find_psn(s, opcode, psn);
	if (e && e < s->p + s->next) {
		s->next = (uint32_t)(e - s->p) + 1;
		return e;
	}
	return NULL;
}

static void check_pkt(unsigned frame, char **cols, const struct exp_pkt *e, uint32_t hdr_bytes)
{
	uint32_t pad = gpunic_pad_bytes(e->paylen);

	if (field(cols, F_PADCNT, frame) != pad)
		complain(frame, "pad %s, want %u", cols[F_PADCNT], pad);
	if (field(cols, F_UDP_LEN, frame) !=
	    GPUNIC_UDP_BYTES + hdr_bytes + e->paylen + pad + GPUNIC_ICRC_BYTES)
		complain(frame, "UDP length %s for %u payload bytes", cols[F_UDP_LEN], e->paylen);
	if (e->has_reth) {
		if (field(cols, F_RKEY, frame) != e->rkey ||
		    field(cols, F_DMALEN, frame) != e->dmalen)
			complain(frame, "RETH rkey %s len %s, want 0x%x %u", cols[F_RKEY],
				 cols[F_DMALEN], e->rkey, e->dmalen);
	} else if (cols[F_DMALEN][0]) {
		complain(frame, "unexpected RETH");
	}
	if (e->has_imm) {
		if (field(cols, F_IMMDT, frame) != e->imm)
			complain(frame, "ImmDt %s, want %08x", cols[F_IMMDT], e->imm);
	} else if (cols[F_IMMDT][0]) {
		complain(frame, "unexpected ImmDt");
	}
	/* Wireshark files the AtomicETH's VA and R_Key under the RETH field names */
	if (e->has_atomic) {
		if (field(cols, F_VA, frame) != e->va || field(cols, F_RKEY, frame) != e->rkey ||
		    field(cols, F_SWAP, frame) != e->swap_add ||
		    field(cols, F_CMP, frame) != e->compare)
			complain(frame, "AtomicETH va %s rkey %s swap %s compare %s, want %#" PRIx64
				 " %#x %#" PRIx64 " %#" PRIx64, cols[F_VA], cols[F_RKEY],
				 cols[F_SWAP], cols[F_CMP], e->va, e->rkey, e->swap_add,
				 e->compare);
	} else if (cols[F_SWAP][0] || cols[F_CMP][0]) {
		complain(frame, "unexpected AtomicETH");
	}
	if (e->has_orig) {
		if (field(cols, F_ORIG, frame) != e->orig)
			complain(frame, "AtomicAckETH %s, want %#" PRIx64, cols[F_ORIG], e->orig);
	} else if (cols[F_ORIG][0]) {
		complain(frame, "unexpected AtomicAckETH");
	}
}

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

/* One dissected frame against the two sides' expectations. */
static void check_frame(char **cols, const struct fixture *fx)
{
	unsigned frame = (unsigned)field(cols, F_NUMBER, 0);
	int from = !strcmp(cols[F_SRC], "10.0.0.1") ? 0 : !strcmp(cols[F_SRC], "10.0.0.2") ? 1 : -1;
	uint8_t opcode = (uint8_t)field(cols, F_OPCODE, frame);
	uint32_t psn = (uint32_t)field(cols, F_PSN, frame);
	const struct gpunic_opcode_info *info = gpunic_opcode_info(opcode);
	const struct player *to;
	struct side *s, *peer;
	const struct exp_pkt *e;

	if (cols[F_EXPERT][0] || cols[F_MALFORMED][0])
		complain(frame, "tshark expert '%s' malformed '%s'", cols[F_EXPERT],
			 cols[F_MALFORMED]);
	if (from < 0 || !info) {
		complain(frame, "from %s, opcode %u", cols[F_SRC], opcode);
		return;
	}
	s = &sides[from];
	peer = &sides[!from];
	to = from ? &fx->a : &fx->b;
	if (field(cols, F_DESTQP, frame) != to->qp->qp_num)
		complain(frame, "destqp %s, want 0x%x", cols[F_DESTQP], to->qp->qp_num);
	if (info->mask & GPUNIC_MASK_REQ) {
		e = match(&s->req, opcode, psn);
		if (!e) {
			complain(frame, "%s psn 0x%x from %s is no request it posted (next: %s 0x%x)",
				 gpunic_opcode_name(opcode), psn, cols[F_SRC],
				 s->req.next < s->req.n ?
				 gpunic_opcode_name(s->req.p[s->req.next].opcode) : "none",
				 s->req.next < s->req.n ? s->req.p[s->req.next].psn : 0);
			return;
		}
		if (!s->sent_any || gpunic_psn_cmp(gpunic_psn_add(psn, e->npsn), s->psn_end) > 0)
			s->psn_end = gpunic_psn_add(psn, e->npsn);
		s->sent_any = true;
		check_pkt(frame, cols, e, info->hdr_bytes);
		return;
	}
	if (!rc) {
		complain(frame, "%s on a UC QP", gpunic_opcode_name(opcode));
		return;
	}
	/* a response: it answers a request the peer has already sent */
	if (!peer->sent_any || gpunic_psn_cmp(psn, peer->psn_end) >= 0)
		complain(frame, "%s psn 0x%x answers nothing sent yet", gpunic_opcode_name(opcode),
			 psn);
	if (opcode == GPUNIC_OP_ACKNOWLEDGE) {
		uint8_t syn = (uint8_t)field(cols, F_SYNDROME, frame);

		if ((syn & GPUNIC_AETH_TYPE_MASK) == GPUNIC_AETH_ACK)
			s->acks++;
		else if ((syn & GPUNIC_AETH_TYPE_MASK) == GPUNIC_AETH_RNR_NAK)
			s->rnr_naks++;
		else if (syn == (GPUNIC_AETH_NAK | GPUNIC_NAK_PSN_SEQ_ERROR))
			s->seq_naks++;
		else if (syn == (GPUNIC_AETH_NAK | GPUNIC_NAK_REMOTE_ACCESS))
			s->access_naks++;
		else
			complain(frame, "unexpected AETH syndrome 0x%x", syn);
		return;
	}
	e = match(&s->rsp, opcode, psn);
	if (!e) {
		complain(frame, "%s psn 0x%x is no READ or atomic response owed",
			 gpunic_opcode_name(opcode), psn);
		return;
	}
	if ((info->mask & GPUNIC_MASK_AETH) &&
	    (field(cols, F_SYNDROME, frame) & GPUNIC_AETH_TYPE_MASK) != GPUNIC_AETH_ACK)
		complain(frame, "READ or atomic response syndrome %s", cols[F_SYNDROME]);
	check_pkt(frame, cols, e, info->hdr_bytes);
}

static void check_tshark(const struct fixture *fx, const struct gpunic_nic_counters *nc)
{
	static char out[1 << 20];
	char args[1024], *line, *save = NULL;
	unsigned n = 0;
	size_t off;

	run_tshark("-Y '_ws.malformed || _ws.expert.severity >= warning' -T fields -e frame.number",
		   out, sizeof(out));
	if (out[0])
		harness_fail(__FILE__, __LINE__, "tshark flags frames: %.200s (pcap kept at %s)",
			     out, pcap_path);

	off = (size_t)snprintf(args, sizeof(args), "-T fields -E separator=, -E occurrence=f");
	for (int i = 0; i < F_COUNT; i++)
		off += (size_t)snprintf(args + off, sizeof(args) - off, " -e %s", field_names[i]);
	CHECK(off < sizeof(args));
	run_tshark(args, out, sizeof(out));
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *cols[F_COUNT];

		split_line(line, cols);
		check_frame(cols, fx);
		n++;
	}
	CHECK_EQ(n, nc->tx_frames + nc->rx_frames);
	for (int i = 0; i < 2; i++) {
		struct side *s = &sides[i];

		if (s->req.next != s->req.n || s->rsp.next != s->rsp.n)
			complain(0, "side %d: %u of %u requests, %u of %u READ/atomic responses "
				 "seen", i, s->req.next, s->req.n, s->rsp.next, s->rsp.n);
	}
	if (bad)
		harness_fail(__FILE__, __LINE__, "%d disagreement(s) with tshark; pcap kept at %s",
			     bad, pcap_path);
}

/* gpunic decode: every frame decodes, and its ICRC verifies. */
static void check_decode(unsigned frames)
{
	static char out[1 << 22];
	char cmd[1024], *line, *save = NULL;
	unsigned n = 0;
	int status;

	snprintf(cmd, sizeof(cmd), "'%s' decode '%s' 2>/dev/null", GPUNIC_CLI_PATH, pcap_path);
	run_cmd(cmd, out, sizeof(out), &status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		n++;
		if (strstr(line, "\"error\"") || !strstr(line, "\"icrc_ok\":true"))
			harness_fail(__FILE__, __LINE__, "gpunic decode: %.300s (pcap kept at %s)",
				     line, pcap_path);
	}
	CHECK_EQ(n, frames);
}

static void check_scapy(void)
{
	static char out[1 << 16];
	char cmd[1024];
	int status;

	if (rc)
		snprintf(cmd, sizeof(cmd), "'%s' '%s' --atomics '%s' '%s' 2>&1", GPUNIC_PYTHON_PATH,
			 CAPTURE_ORACLE_PY, atomics_path, pcap_path);
	else
		snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' 2>&1", GPUNIC_PYTHON_PATH,
			 CAPTURE_ORACLE_PY, pcap_path);
	run_cmd(cmd, out, sizeof(out), &status);
	CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == HARNESS_SKIP_CODE)
		SKIP("%s", out);
	if (WEXITSTATUS(status) != 0)
		harness_fail(__FILE__, __LINE__, "scapy: %s (pcap kept at %s)", out, pcap_path);
	fputs(out, stderr);
}

static void oracle_run(enum gpunic_qp_type type)
{
	struct fx_opts o = { .type = type, .mtu = ORACLE_MTU, .psn_a = 0xFFFFF3,
			     .psn_b = 0x7FFFFE, .rnr_retry = 7, .min_rnr_timer = 1,
			     .access = GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ |
				       GPUNIC_ACCESS_REMOTE_ATOMIC };
	struct gpunic_qp_counters qa, qb;
	struct gpunic_nic_counters nc;
	const char *base = getenv("TMPDIR");
	struct fixture fx;

	need_oracles();
	rc = type == GPUNIC_QPT_RC;
	snprintf(tmpdir, sizeof(tmpdir), "%s/gpunic_capora_XXXXXX", base ? base : "/tmp");
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(pcap_path, sizeof(pcap_path), "%s/a.pcap", tmpdir);
	snprintf(atomics_path, sizeof(atomics_path), "%s/atomics.txt", tmpdir);
	atomics_file = fopen(atomics_path, "w");
	CHECK(atomics_file != NULL);
	fx_setup(&fx, FX_LINK_SHM, &o);
	memset(sides, 0, sizeof(sides));
	sides[0].pl = &fx.a;
	sides[0].psn = o.psn_a;
	sides[1].pl = &fx.b;
	sides[1].psn = o.psn_b;
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, pcap_path), 0);
	run_traffic(&fx);
	if (rc) {
		run_atomics(&fx);
		run_rc_errors(&fx);
	}
	CHECK_EQ(fclose(atomics_file), 0);
	fx_settle(&fx, 2000000);
	CHECK_EQ(gpunic_nic_capture(fx.a.nic, NULL), 0);
	CHECK_EQ(gpunic_nic_query_counters(fx.a.nic, &nc), 0);

	check_tshark(&fx, &nc);
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &qa), 0);
	CHECK_EQ(gpunic_qp_query_counters(fx.b.qp, &qb), 0);
	/* the AETHs on the wire are the ones the NICs counted */
	CHECK_EQ(sides[1].rnr_naks, qb.rnr_naks_sent);
	for (int i = 0; i < 2; i++) {
		const struct gpunic_qp_counters *q = i ? &qb : &qa;

		CHECK_EQ(sides[i].acks, q->acks_sent);
		CHECK_EQ(sides[i].rnr_naks, q->rnr_naks_sent);
		CHECK_EQ(sides[i].seq_naks + sides[i].access_naks, q->naks_sent);
	}
	if (rc) {
		CHECK(sides[1].acks > 0 && sides[0].acks > 0);
		CHECK(sides[1].rnr_naks > 0);
		CHECK_EQ(sides[1].access_naks, 1);
		CHECK_EQ(sides[0].rnr_naks + sides[0].seq_naks + sides[0].access_naks, 0);
	}
	check_decode((unsigned)(nc.tx_frames + nc.rx_frames));
	check_scapy();

	fx_teardown(&fx);
	unlink(pcap_path);
	unlink(atomics_path);
	rmdir(tmpdir);
}

TEST(capture_uc_all_opcodes)
{
	oracle_run(GPUNIC_QPT_UC);
}

TEST(capture_rc_all_opcodes)
{
	oracle_run(GPUNIC_QPT_RC);
}
