// SPDX-License-Identifier: MIT
/*
 * encode_random SEED COUNT OUT.pcap: write COUNT seeded random RC/UC frames made by
 * gpunic_frame_encode() to a pcap, and print on stdout one JSON line per frame with the values
 * it asked for. scapy_oracle.py reads both and checks them, and each ICRC, with scapy.
 *
 * Every field is random, including the ones the ICRC masks (TOS, TTL, UDP checksum, FECN,
 * BECN, resv6), so a masking mistake cannot hide behind a constant.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunic/pcap.h"
#include "gpunic/wire.h"

#define MAX_PAYLOAD 300

/* splitmix64: tiny, seedable, and good enough to spread test values. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(rng_next(s) % n);
}

/* Payload length the opcode may carry: FIRST/MIDDLE need no pad, so a multiple of 4. */
static uint32_t random_paylen(uint64_t *s, uint32_t mask)
{
	if (!(mask & GPUNIC_MASK_PAYLOAD))
		return 0;
	if (!(mask & GPUNIC_MASK_LAST))
		return 4 * rng_below(s, MAX_PAYLOAD / 4 + 1);
	return rng_below(s, MAX_PAYLOAD + 1);
}

static void random_pkt(uint64_t *s, const uint8_t *ops, int nops, struct gpunic_pkt *p,
		       uint8_t *payload)
{
	uint64_t r = rng_next(s);

	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 6; i++) {
		p->dst_mac[i] = (uint8_t)rng_next(s);
		p->src_mac[i] = (uint8_t)rng_next(s);
	}
	p->dst_mac[0] &= 0xFE; /* unicast */
	p->src_mac[0] &= 0xFE;
	p->tos = (uint8_t)r;
	p->ttl = (uint8_t)(r >> 8);
	p->ip_id = (uint16_t)(r >> 16);
	p->ip_frag = r >> 32 & 1 ? 0x4000 : 0;
	p->src_ip = (uint32_t)rng_next(s);
	p->dst_ip = (uint32_t)rng_next(s);
	p->src_port = (uint16_t)rng_next(s);
	p->dst_port = GPUNIC_ROCE_UDP_PORT;
	p->udp_csum = (uint16_t)rng_next(s);
	r = rng_next(s);
	p->opcode = ops[rng_below(s, (uint32_t)nops)];
	p->se = r & 1;
	p->migreq = r >> 1 & 1;
	p->ack_req = r >> 2 & 1;
	p->pkey = r >> 3 & 1 ? 0xFFFF : 0x7FFF;
	p->resv8a = (uint8_t)(r >> 8);
	p->qpn = (uint32_t)(r >> 16) & GPUNIC_PSN_MASK;
	p->psn = (uint32_t)(r >> 40) & GPUNIC_PSN_MASK;
	p->reth_va = rng_next(s);
	p->reth_rkey = (uint32_t)rng_next(s);
	p->reth_len = (uint32_t)rng_next(s);
	p->aeth_syndrome = (uint8_t)rng_next(s) & 0x7F;
	p->aeth_msn = (uint32_t)rng_next(s) & GPUNIC_PSN_MASK;
	p->imm = (uint32_t)rng_next(s);
	p->atm_va = rng_next(s) & ~7ull;
	p->atm_rkey = (uint32_t)rng_next(s);
	p->atm_swap_add = rng_next(s);
	p->atm_compare = rng_next(s);
	p->atmack_orig = rng_next(s);
	p->ieth_rkey = (uint32_t)rng_next(s);
	p->paylen = random_paylen(s, gpunic_opcode_info(p->opcode)->mask);
	for (uint32_t i = 0; i < p->paylen; i++)
		payload[i] = (uint8_t)rng_next(s);
	p->payload = payload;
}

/* What scapy_oracle.py compares: the values given to the encoder, all as JSON numbers. */
static void print_pkt(uint64_t n, const struct gpunic_pkt *p)
{
	uint32_t m = gpunic_opcode_info(p->opcode)->mask;

	printf("{\"frame\":%" PRIu64 ",\"opcode\":%u,\"se\":%d,\"migreq\":%d,\"pkey\":%u,"
	       "\"resv8a\":%u,\"qpn\":%u,\"ack_req\":%d,\"psn\":%u,\"paylen\":%u,"
	       "\"tos\":%u,\"ttl\":%u,\"ip_id\":%u,\"df\":%d,\"sport\":%u,\"udp_csum\":%u",
	       n, p->opcode, p->se, p->migreq, p->pkey, p->resv8a, p->qpn, p->ack_req, p->psn,
	       p->paylen, p->tos, p->ttl, p->ip_id, p->ip_frag == 0x4000, p->src_port,
	       p->udp_csum);
	if (m & GPUNIC_MASK_RETH)
		printf(",\"reth_va\":%" PRIu64 ",\"reth_rkey\":%u,\"reth_len\":%u", p->reth_va,
		       p->reth_rkey, p->reth_len);
	if (m & GPUNIC_MASK_AETH)
		printf(",\"aeth_syndrome\":%u,\"aeth_msn\":%u", p->aeth_syndrome, p->aeth_msn);
	if (m & GPUNIC_MASK_IMMDT)
		printf(",\"imm\":%u", p->imm);
	if (m & GPUNIC_MASK_ATMETH)
		printf(",\"atomic_va\":%" PRIu64 ",\"atomic_rkey\":%u,\"atomic_swap_add\":%" PRIu64
		       ",\"atomic_compare\":%" PRIu64, p->atm_va, p->atm_rkey, p->atm_swap_add,
		       p->atm_compare);
	if (m & GPUNIC_MASK_ATMACK)
		printf(",\"atomic_orig\":%" PRIu64, p->atmack_orig);
	if (m & GPUNIC_MASK_IETH)
		printf(",\"ieth_rkey\":%u", p->ieth_rkey);
	printf("}\n");
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && end != s && !*end;
}

int main(int argc, char **argv)
{
	static uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	static uint8_t payload[MAX_PAYLOAD];
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE];
	struct gpunic_pcap_writer *w;
	uint64_t seed, count;
	uint8_t ops[256];
	int nops = 0, rc;

	if (argc != 4 || !parse_u64(argv[1], &seed) || !parse_u64(argv[2], &count)) {
		fprintf(stderr, "usage: encode_random SEED COUNT OUT.pcap\n");
		return 2;
	}
	for (int op = 0; op < 256; op++) {
		uint8_t t = op & GPUNIC_TRANSPORT_MASK;

		if (gpunic_opcode_info((uint8_t)op) &&
		    (t == GPUNIC_TRANSPORT_RC || t == GPUNIC_TRANSPORT_UC))
			ops[nops++] = (uint8_t)op;
	}
	w = gpunic_pcap_writer_open(argv[3], errbuf);
	if (!w) {
		fprintf(stderr, "encode_random: %s\n", errbuf);
		return 1;
	}
	for (uint64_t n = 1; n <= count; n++) {
		struct timespec ts = { .tv_sec = 1700000000 + (time_t)(n / 1000000),
				       .tv_nsec = (long)(n % 1000000) * 1000 };
		struct gpunic_pkt pkt;
		size_t len;

		random_pkt(&seed, ops, nops, &pkt, payload);
		len = gpunic_frame_encode(&pkt, frame, sizeof(frame));
		if (!len) {
			fprintf(stderr, "encode_random: frame %" PRIu64 " refused: %s, %u bytes\n",
				n, gpunic_opcode_name(pkt.opcode), pkt.paylen);
			gpunic_pcap_writer_close(w);
			return 1;
		}
		rc = gpunic_pcap_writer_append(w, frame, len, &ts);
		if (rc) {
			fprintf(stderr, "encode_random: %s\n", gpunic_pcap_writer_error(w));
			gpunic_pcap_writer_close(w);
			return 1;
		}
		print_pkt(n, &pkt);
	}
	rc = gpunic_pcap_writer_close(w);
	if (rc) {
		fprintf(stderr, "encode_random: %s: %s\n", argv[3], strerror(rc));
		return 1;
	}
	return 0;
}
