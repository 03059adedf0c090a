// SPDX-License-Identifier: MIT
/*
 * gpunic decode: print every frame of an Ethernet capture as one JSON object per line, with each
 * field the wire codec decodes, and a summary of decoded and rejected frames on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gpunic/wire.h"
#ifdef GPUNIC_HAVE_PCAP
#include "gpunic/pcap.h"
#endif
#include "outfile.h"

struct decode_opts {
	bool no_icrc;
	uint16_t port;
	const char *path;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic decode [--no-icrc] [--port N] FILE.pcap\n"
		"       tcpdump -w - ... | gpunic decode -\n"
		"\n"
		"Decode the RoCEv2 frames of an Ethernet capture (pcap or pcapng; - reads\n"
		"it from standard input): one JSON object per frame on stdout, a summary\n"
		"on stderr.\n"
		"\n"
		"  --no-icrc    do not verify the ICRC (its wire value is still printed)\n"
		"  --port N     RoCEv2 UDP destination port, 1..65535 (default %u)\n"
		"  -v, --verbose  more library messages on stderr (again: debug)\n"
		"  --quiet      library errors only\n"
		"  -h, --help   show this help\n"
		"\n"
		"Fields of up to 32 bits are JSON numbers; 64-bit values and the ICRC\n"
		"are \"0x...\" strings. \"icrc\" is the CRC value; the wire carries it\n"
		"least-significant byte first, as \"icrc_bytes\" shows (and tshark\n"
		"prints). A rejected frame has \"error\" set to the reason and carries\n"
		"the fields parsed before the failing check.\n"
		"\n"
		"The same fields in tshark (-T fields -e NAME), as tests/oracle checks them:\n"
		"  frame          frame.number          ip_id       ip.id\n"
		"  sport          udp.srcport           opcode      infiniband.bth.opcode\n"
		"  se             infiniband.bth.se     migreq      infiniband.bth.m\n"
		"  pad            infiniband.bth.padcnt tver        infiniband.bth.tver\n"
		"  pkey           infiniband.bth.p_key  qpn         infiniband.bth.destqp\n"
		"  ack_req        infiniband.bth.a      resv7       infiniband.bth.reserved7\n"
		"  psn            infiniband.bth.psn    imm         infiniband.immdt\n"
		"  reth_va        infiniband.reth.va    reth_rkey   infiniband.reth.r_key\n"
		"  reth_len       infiniband.reth.dmalen\n"
		"  aeth_syndrome  infiniband.aeth.syndrome\n"
		"  aeth_msn       infiniband.aeth.msn\n"
		"  atomic_va      infiniband.reth.va    (Wireshark files the AtomicETH's\n"
		"  atomic_rkey    infiniband.reth.r_key  VA and R_Key under the RETH names)\n"
		"  atomic_swap_add infiniband.atomiceth.swapdt\n"
		"  atomic_compare infiniband.atomiceth.cmpdt\n"
		"  atomic_orig    infiniband.atomicacketh.origremdt\n"
		"  ieth_rkey      infiniband.ieth\n"
		"  icrc           infiniband.invariant.crc (tshark reads the wire bytes\n"
		"                 as a big-endian number: icrc_bytes in that order)\n"
		"\n"
		"Exit status:\n"
		"  0  the whole file was read\n"
		"  1  it cannot be read\n"
		"  2  usage error: an unknown option, an invalid value, a missing argument\n",
		GPUNIC_ROCE_UDP_PORT);
}

/* Return: -1 to go on and decode, otherwise the exit status (0 for --help, 2 for bad usage). */
static int parse_args(int argc, char **argv, struct decode_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "no-icrc", no_argument, NULL, 'i' },
		{ "port", required_argument, NULL, 'p' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_getopt g = { .cmd = "decode", .shortopts = ":hv", .longopts = longopts,
				.usage = usage };
	uint64_t v;
	int c;

	o->no_icrc = false;
	o->port = GPUNIC_ROCE_UDP_PORT;
	o->path = NULL;
	while ((c = cli_getopt_next(&g, argc, argv))) {
		switch (c) {
		case 'i':
			o->no_icrc = true;
			break;
		case 'p':
			if (cli_num("decode", "--port", optarg, 1, 65535, &v))
				return 2;
			o->port = (uint16_t)v;
			break;
		}
	}
	if (g.exit >= 0)
		return g.exit;
	if (argc - optind != 1) {
		fprintf(stderr, "gpunic decode: %s capture file given (try --help)\n",
			argc == optind ? "no" : "more than one");
		return 2;
	}
	o->path = argv[optind];
	return -1;
}

/* "-" is standard input: a capture piped from tcpdump -w - or another process. */
static inline const char *open_path(const struct decode_opts *o)
{
	return strcmp(o->path, "-") == 0 ? "/dev/stdin" : o->path;
}

#ifdef GPUNIC_HAVE_PCAP

/* ---------------------------------------------------------------- JSON output */

/* One JSON object on one line; keys are written in the order the calls come. */
struct jline {
	FILE *out;
	bool open;
};

static void j_key(struct jline *j, const char *key)
{
	fputc(j->open ? ',' : '{', j->out);
	j->open = true;
	json_fput_str(j->out, key);
	fputc(':', j->out);
}

static void j_u64(struct jline *j, const char *key, uint64_t v)
{
	j_key(j, key);
	fprintf(j->out, "%" PRIu64, v);
}

static void j_bool(struct jline *j, const char *key, bool v)
{
	j_key(j, key);
	fputs(v ? "true" : "false", j->out);
}

static void j_str(struct jline *j, const char *key, const char *s)
{
	j_key(j, key);
	json_fput_str(j->out, s);
}

/* Fixed-width "0x..." string: 64-bit values lose precision as JSON numbers in many readers. */
static void j_hex(struct jline *j, const char *key, uint64_t v, int digits)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%0*" PRIx64, digits, v);
	j_str(j, key, buf);
}

static void j_end(struct jline *j)
{
	fputs(j->open ? "}\n" : "{}\n", j->out);
	j->open = false;
}

/* ---------------------------------------------------------------- frames */

/* Which parts of a gpunic_pkt hold parsed values. */
enum {
	L_ETH = 1u << 0,
	L_IP = 1u << 1,
	L_UDP = 1u << 2,
	L_BTH = 1u << 3,
	L_EXT = 1u << 4,
	L_PAYLOAD = 1u << 5,
	L_ICRC = 1u << 6,
};

/*
 * The decoder checks in enum gpunic_wire_err order and stops at the first failure, so the
 * reason says how far it got. IP fields are read once version and IHL are known good, ports
 * once the IP length is, BTH fields once the BTH fits, extension headers once the opcode's
 * headers fit and the BTH fields pass.
 */
static unsigned int parsed_layers(enum gpunic_wire_err err)
{
	unsigned int l = 0;

	if (err == GPUNIC_WIRE_OK || err == GPUNIC_WIRE_ICRC)
		return L_ETH | L_IP | L_UDP | L_BTH | L_EXT | L_PAYLOAD | L_ICRC;
	if (err != GPUNIC_WIRE_ETH_TRUNCATED)
		l |= L_ETH;
	if (err >= GPUNIC_WIRE_IP_LENGTH)
		l |= L_IP;
	if (err >= GPUNIC_WIRE_UDP_LENGTH)
		l |= L_UDP;
	if (err >= GPUNIC_WIRE_OPCODE_UNKNOWN)
		l |= L_BTH;
	if (err >= GPUNIC_WIRE_PAD)
		l |= L_EXT;
	return l;
}

static const char *transport_name(uint8_t opcode)
{
	static const char *const names[8] = { "RC", "UC", "RD", "UD", "CNP", "XRC",
					      "VENDOR", "VENDOR" };

	return names[opcode >> 5];
}

static void put_mac(struct jline *j, const char *key, const uint8_t *m)
{
	char buf[18];

	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	j_str(j, key, buf);
}

static void put_ip(struct jline *j, const char *key, uint32_t a)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xFF, (a >> 8) & 0xFF,
		 a & 0xFF);
	j_str(j, key, buf);
}

static void put_ip_udp(struct jline *j, const struct gpunic_pkt *pkt, unsigned int layers)
{
	put_ip(j, "src_ip", pkt->src_ip);
	put_ip(j, "dst_ip", pkt->dst_ip);
	j_u64(j, "tos", pkt->tos);
	j_u64(j, "ip_id", pkt->ip_id);
	j_bool(j, "df", pkt->ip_frag & 0x4000);
	j_bool(j, "mf", pkt->ip_frag & 0x2000);
	j_u64(j, "frag_off", pkt->ip_frag & 0x1FFF);
	j_u64(j, "ttl", pkt->ttl);
	if (!(layers & L_UDP))
		return;
	j_u64(j, "sport", pkt->src_port);
	j_u64(j, "dport", pkt->dst_port);
	j_u64(j, "udp_csum", pkt->udp_csum);
	j_u64(j, "frame_bytes", pkt->frame_bytes);
}

static void put_bth(struct jline *j, const struct gpunic_pkt *pkt)
{
	j_u64(j, "opcode", pkt->opcode);
	j_str(j, "opcode_name", gpunic_opcode_name(pkt->opcode));
	j_str(j, "transport", transport_name(pkt->opcode));
	j_bool(j, "se", pkt->se);
	j_bool(j, "migreq", pkt->migreq);
	j_u64(j, "pad", pkt->pad);
	j_u64(j, "tver", pkt->tver);
	j_u64(j, "pkey", pkt->pkey);
	j_bool(j, "fecn", pkt->resv8a & 0x80);
	j_bool(j, "becn", pkt->resv8a & 0x40);
	j_u64(j, "qpn", pkt->qpn);
	j_bool(j, "ack_req", pkt->ack_req);
	j_u64(j, "resv7", pkt->resv7);
	j_u64(j, "psn", pkt->psn);
}

/* Only the headers the opcode's table entry says are present. */
static void put_ext(struct jline *j, const struct gpunic_pkt *pkt)
{
	if (pkt->mask & GPUNIC_MASK_RETH) {
		j_hex(j, "reth_va", pkt->reth_va, 16);
		j_u64(j, "reth_rkey", pkt->reth_rkey);
		j_u64(j, "reth_len", pkt->reth_len);
	}
	if (pkt->mask & GPUNIC_MASK_AETH) {
		j_u64(j, "aeth_syndrome", pkt->aeth_syndrome);
		j_str(j, "aeth_name", gpunic_aeth_syndrome_name(pkt->aeth_syndrome));
		j_u64(j, "aeth_msn", pkt->aeth_msn);
	}
	if (pkt->mask & GPUNIC_MASK_IMMDT)
		j_u64(j, "imm", pkt->imm);
	if (pkt->mask & GPUNIC_MASK_ATMETH) {
		j_hex(j, "atomic_va", pkt->atm_va, 16);
		j_u64(j, "atomic_rkey", pkt->atm_rkey);
		j_hex(j, "atomic_swap_add", pkt->atm_swap_add, 16);
		j_hex(j, "atomic_compare", pkt->atm_compare, 16);
	}
	if (pkt->mask & GPUNIC_MASK_ATMACK)
		j_hex(j, "atomic_orig", pkt->atmack_orig, 16);
	if (pkt->mask & GPUNIC_MASK_IETH)
		j_u64(j, "ieth_rkey", pkt->ieth_rkey);
}

static void put_icrc(struct jline *j, const struct gpunic_pkt *pkt, bool checked)
{
	char bytes[9];
	uint32_t v = pkt->icrc;

	j_hex(j, "icrc", pkt->icrc, 8);
	snprintf(bytes, sizeof(bytes), "%02x%02x%02x%02x", v & 0xFF, (v >> 8) & 0xFF,
		 (v >> 16) & 0xFF, v >> 24);
	j_str(j, "icrc_bytes", bytes);
	if (!checked)
		return;
	j_hex(j, "icrc_calc", pkt->icrc_calc, 8);
	j_bool(j, "icrc_ok", pkt->icrc_ok);
}

static void print_frame(FILE *out, uint64_t n, const struct gpunic_pcap_frame *f,
			enum gpunic_wire_err err, const struct gpunic_pkt *pkt,
			const struct decode_opts *o)
{
	unsigned int layers = parsed_layers(err);
	struct jline j = { .out = out };
	char ts[40];

	j_u64(&j, "frame", n);
	if (err != GPUNIC_WIRE_OK)
		j_str(&j, "error", gpunic_wire_err_name(err));
	j_u64(&j, "len", f->len);
	j_u64(&j, "caplen", f->caplen);
	snprintf(ts, sizeof(ts), "%lld.%09ld", (long long)f->ts.tv_sec, (long)f->ts.tv_nsec);
	j_key(&j, "ts");
	fputs(ts, out);
	if (layers & L_ETH) {
		put_mac(&j, "dst_mac", pkt->dst_mac);
		put_mac(&j, "src_mac", pkt->src_mac);
	}
	if (err == GPUNIC_WIRE_NOT_IPV4)
		j_u64(&j, "ethertype", (uint32_t)f->data[12] << 8 | f->data[13]);
	if (layers & L_IP)
		put_ip_udp(&j, pkt, layers);
	if (layers & L_BTH)
		put_bth(&j, pkt);
	if (layers & L_EXT)
		put_ext(&j, pkt);
	if (layers & L_PAYLOAD)
		j_u64(&j, "payload_len", pkt->paylen);
	if (layers & L_ICRC)
		put_icrc(&j, pkt, !o->no_icrc);
	j_end(&j);
}

/*
 * The codec knows one port or any port: for another port decode with any port and apply the
 * check here, but only where the decoder got past its own port check.
 */
static enum gpunic_wire_err decode_one(const struct gpunic_pcap_frame *f,
				       const struct decode_opts *o, struct gpunic_pkt *pkt)
{
	unsigned int flags = o->no_icrc ? GPUNIC_DECODE_SKIP_ICRC : 0;
	enum gpunic_wire_err err;

	if (o->port != GPUNIC_ROCE_UDP_PORT)
		flags |= GPUNIC_DECODE_ANY_PORT;
	err = gpunic_frame_decode(f->data, f->caplen, flags, pkt);
	if (o->port != GPUNIC_ROCE_UDP_PORT && pkt->dst_port != o->port &&
	    (err == GPUNIC_WIRE_OK || err > GPUNIC_WIRE_UDP_PORT))
		err = GPUNIC_WIRE_UDP_PORT;
	return err;
}

static void print_summary(const char *path, uint64_t frames, const uint64_t *count)
{
	const char *sep = " (";

	fprintf(stderr, "gpunic decode: %s: %" PRIu64 " frames, %" PRIu64 " decoded, %" PRIu64
		" rejected", path, frames, count[GPUNIC_WIRE_OK], frames - count[GPUNIC_WIRE_OK]);
	for (int e = 1; e < GPUNIC_WIRE_ERR_MAX; e++) {
		if (!count[e])
			continue;
		fprintf(stderr, "%s%s %" PRIu64, sep, gpunic_wire_err_name(e), count[e]);
		sep = ", ";
	}
	fputs(sep[0] == ',' ? ")\n" : "\n", stderr);
}

static int decode_file(const struct decode_opts *o)
{
	uint64_t count[GPUNIC_WIRE_ERR_MAX] = { 0 };
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE];
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame f;
	struct gpunic_pkt pkt;
	uint64_t frames = 0;
	int rc, status = 0;

	r = gpunic_pcap_reader_open(open_path(o), errbuf);
	if (!r) {
		fprintf(stderr, "gpunic decode: %s\n", errbuf);
		return 1;
	}
	if (gpunic_pcap_reader_linktype(r) != GPUNIC_PCAP_LINKTYPE_ETHERNET) {
		fprintf(stderr, "gpunic decode: %s: link type %s is not Ethernet\n", o->path,
			gpunic_pcap_linktype_name(gpunic_pcap_reader_linktype(r)));
		gpunic_pcap_reader_close(r);
		return 1;
	}
	while ((rc = gpunic_pcap_reader_next(r, &f)) == 0) {
		enum gpunic_wire_err err = decode_one(&f, o, &pkt);

		frames++;
		count[err]++;
		print_frame(stdout, frames, &f, err, &pkt, o);
	}
	if (rc != GPUNIC_PCAP_EOF) {
		fprintf(stderr, "gpunic decode: %s: after frame %" PRIu64 ": %s\n", o->path, frames,
			gpunic_pcap_reader_error(r));
		status = 1;
	}
	gpunic_pcap_reader_close(r);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpunic decode: writing the output failed: %s\n", strerror(errno));
		status = 1;
	}
	print_summary(o->path, frames, count);
	return status;
}

#else /* !GPUNIC_HAVE_PCAP */

static int decode_file(const struct decode_opts *o)
{
	fprintf(stderr, "gpunic decode: %s: gpunic was built without libpcap, so it cannot read "
		"captures (install libpcap-dev and rebuild)\n", o->path);
	return 1;
}

#endif /* GPUNIC_HAVE_PCAP */

int cmd_decode(int argc, char **argv)
{
	struct decode_opts o;
	int rc = parse_args(argc, argv, &o);

	if (rc >= 0)
		return rc;
	return decode_file(&o);
}
