// SPDX-License-Identifier: MIT
/*
 * The xdp link's XDP program: RoCEv2 frames (IPv4, UDP port 4791, unfragmented) and ARP for
 * gpunic's address go to the AF_XDP socket of the queue they arrived on; everything else, and
 * anything on a queue without a socket, goes on to the kernel (XDP_PASS). Built with
 * clang -target bpf and loaded by xdp.c through libbpf.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_PORT 4791
#define ARP_TPA_OFF 24

/* What xdp.c sets after loading: gpunic's IPv4 address, network order; 0: any, and no ARP. */
struct xdp_roce_cfg {
	__u32 ip;
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_roce_cfg);
} cfg SEC(".maps");

static __always_inline int to_socket(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

static __always_inline int arp(struct xdp_md *ctx, void *l3, void *end, __u32 ip)
{
	__u32 *tpa = l3 + ARP_TPA_OFF;

	if (!ip || (void *)(tpa + 1) > end || *tpa != ip)
		return XDP_PASS;
	return to_socket(ctx);
}

SEC("xdp")
int xdp_roce(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct xdp_roce_cfg *c;
	struct udphdr *udp;
	struct iphdr *ip;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&cfg, &zero);
	if (!c || (void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_ARP))
		return arp(ctx, eth + 1, end, c->ip);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(0x3fff)) || (c->ip && ip->daddr != c->ip))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ROCE_PORT))
		return XDP_PASS;
	return to_socket(ctx);
}

/* only helpers open to any licence are used */
char _license[] SEC("license") = "MIT";
