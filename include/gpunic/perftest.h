/* SPDX-License-Identifier: MIT */
/*
 * perftest's out-of-band exchange, as `gpunic perf` speaks it: the format of perftest 4.5
 * (Debian 4.5+0.17, internal version "6.06"), so that ib_write_lat, ib_send_bw, ... and gpunic
 * perf can be each other's peer. Our own code, written from perftest's own exchange code; the
 * fields and their order are restated below.
 *
 * One TCP connection; the server listens (perftest's default port 18515), the client connects.
 * Every exchange is symmetric: the client writes its part first and then reads the server's,
 * the server reads first and then writes. In order:
 *   versions     16 bytes each: a NUL-terminated version string ("6.06"); perftest stops unless
 *                the peer's is at least 5.70. gpunic puts an extension after the NUL (perftest
 *                reads only the string): "gn" 0x01, its MAC, its RoCE UDP port (big-endian).
 *   sys data     4 bytes cycle buffer (page size), then 4 bytes cache line size, big-endian int
 *   MTU          2 bytes: the path MTU as "%d" of enum ibv_mtu, NUL; both use the smaller
 *   keys         108 bytes (KEY_MSG_SIZE_GID), "%04x:%04x:%06x:%06x:%08x:%016llx:" (LID,
 *                outstanding reads, QPN, PSN, rkey, VA) then the 16 GID bytes "%02x:" each,
 *                then "%08x:" (SRQ number) and a NUL. A handshake is one such exchange; the
 *                tests do several with the same content (perf_oob_steps in perf_run.c).
 *   bw reports   bandwidth tests: 8 bytes size, 8 bytes iterations (unsigned, big-endian), then
 *                BW peak, BW average and message rate as big-endian IEEE doubles
 *   close        one more handshake, then each side writes "done" and a NUL and closes.
 *
 * What is not matched (perftest features gpunic perf does not speak):
 *  - rdma_cm (-R, -z): only the TCP socket exchange; UD, XRC, DC, raw Ethernet; several QPs
 *    (-q); bidirectional runs (-b); --dont_xchg_versions; --report_per_port's extra report
 *    fields; duration mode (-D) and infinite runs.
 *  - The number of handshakes per test was read from the 4.5+0.17 binaries (the sources of
 *    other perftest versions differ: newer ones add a negotiate_params step and move
 *    handshakes). A different perftest release may not line up.
 *  - perftest sends no MAC: on shm and dgram links a perftest peer's MAC must be given
 *    (--peer-mac), else 02:00:<its IPv4> is assumed; on udp links the kernel resolves it.
 *    Its GID must be IPv4-mapped (RoCEv2 with an IPv4 address: perftest -x <that index>).
 *  - perftest's payload carries no pattern: with a perftest peer nothing is verified, and
 *    the receiving side says so.
 *
 * Calls return 0 or a positive errno value (the control path's rule: docs/DESIGN.md, "Errors")
 * and report what failed on stderr, prefixed with the @who given to connect or accept
 * ("gpunic perf").
 */
#ifndef GPUNIC_PERFTEST_H
#define GPUNIC_PERFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUNIC_PERFTEST_PORT 18515
#define GPUNIC_PERFTEST_VERSION "6.06"	/* perftest 4.5+0.17 speaks as VERSION "6.06" */
#define GPUNIC_PERFTEST_VERSION_BYTES 16
#define GPUNIC_PERFTEST_MIN_PEER_VERSION 5.70	/* perftest's check_version_compatibility */
#define GPUNIC_PERFTEST_KEY_BYTES 108	/* KEY_MSG_SIZE_GID */
#define GPUNIC_PERFTEST_DONE "done"
#define GPUNIC_PERFTEST_MAX_CYCLE (64u << 10)	/* largest peer cycle buffer we follow */

/* What a side tells the other about its QP and buffer (perftest's struct pingpong_dest). */
struct gpunic_perftest_dest {
	uint32_t lid;		/* 0 on RoCE */
	uint32_t out_reads;	/* READs the sender accepts in flight (its max_dest_rd_atomic) */
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;
	uint8_t gid[16];	/* RoCEv2: ::ffff:a.b.c.d */
	uint32_t srqn;
};

/* The gpunic extension a peer may carry after its version string. */
struct gpunic_perftest_ext {
	bool gpunic;		/* the peer is gpunic perf: payload patterns are checked */
	uint8_t mac[6];
	uint16_t udp_port;	/* host order; 0 = 4791 */
};

struct gpunic_perftest_bw {
	uint64_t size;
	uint64_t iters;
	double bw_peak;		/* MB/s, MB = 2^20 bytes */
	double bw_avg;
	double msg_rate;	/* Mpps */
};

struct gpunic_perftest {
	const char *who;	/* prefix of error messages */
	int fd;
	bool client;
	int timeout_ms;		/* each read or write; 0 = wait forever */
	uint32_t local_ip;	/* the TCP connection's addresses (host order) */
	uint32_t peer_ip;
	char peer_version[GPUNIC_PERFTEST_VERSION_BYTES + 1];
	struct gpunic_perftest_ext peer;
	/* sys data, as perftest's check_sys_data leaves them: the larger of the two sides' */
	uint32_t cycle_buffer;	/* bytes a bandwidth test cycles its addresses through */
	uint32_t cache_line;	/* an address step is the size rounded up to this */
};

/* Client: connect to @host:@port, retrying until @timeout_ms (the server may start later). */
int gpunic_perftest_connect(struct gpunic_perftest *o, const char *who, const char *host,
			    uint16_t port, int timeout_ms);
/* Server: listen on @port (every address, as perftest) and take one client. */
int gpunic_perftest_accept(struct gpunic_perftest *o, const char *who, uint16_t port,
			   int timeout_ms);
/* Server on a socket already listening (gpunic_tcp_listen(), which binds any one address):
 * take one client. The caller keeps and closes @lfd. */
int gpunic_perftest_serve(struct gpunic_perftest *o, const char *who, int lfd, int timeout_ms);
void gpunic_perftest_close_fd(struct gpunic_perftest *o);

/* One symmetric exchange of @len bytes. */
int gpunic_perftest_xchg(struct gpunic_perftest *o, const void *mine, void *theirs, size_t len);

/* versions (with our extension), sys data and MTU, in perftest's order. @mtu: enum ibv_mtu
 * value this side wants; *agreed gets the smaller of the two (an invalid peer value is ignored). */
int gpunic_perftest_prologue(struct gpunic_perftest *o, const struct gpunic_perftest_ext *mine,
			     int mtu, int *agreed);

void gpunic_perftest_key_format(const struct gpunic_perftest_dest *d,
				char msg[GPUNIC_PERFTEST_KEY_BYTES]);
/* Return: 0 or EPROTO (the message does not parse). */
int gpunic_perftest_key_parse(const char msg[GPUNIC_PERFTEST_KEY_BYTES],
			      struct gpunic_perftest_dest *d);

/* One handshake: swap key messages. */
int gpunic_perftest_hand_shake(struct gpunic_perftest *o, const struct gpunic_perftest_dest *mine,
			       struct gpunic_perftest_dest *theirs);
int gpunic_perftest_bw_reports(struct gpunic_perftest *o, const struct gpunic_perftest_bw *mine,
			       struct gpunic_perftest_bw *theirs);
/* perftest's ctx_close_connection: a handshake, "done", close. */
int gpunic_perftest_finish(struct gpunic_perftest *o, const struct gpunic_perftest_dest *mine);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_PERFTEST_H */
