// SPDX-License-Identifier: MIT
/*
 * `gpunic perf`'s output (perf_print.h). The banner and address lines are perftest 4.5's line
 * for line (labels, widths, the LID in "%#04x", the GID in decimal bytes), with gpunic's own
 * facts on lines of their own. Every line is flushed as it is printed: a sweep shows each size
 * as it completes, also through a pipe.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "perf_print.h"

/* --report_gbits: perftest's divisor, bytes per second in one Gb/s; our MB is 2^20 bytes */
#define PERF_BYTES_PER_GBIT 125000000.0
#define PERF_MIB 1048576.0

static const char gbits_header[] =
	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";

static void print_ip(FILE *f, uint32_t ip)
{
	fprintf(f, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

/* perftest's verb names (testsStr) */
static const char *verb_name(enum gpunic_perf_test t)
{
	switch (t) {
	case GPUNIC_PERF_SEND_LAT:
	case GPUNIC_PERF_SEND_BW:
		return "Send";
	case GPUNIC_PERF_READ_LAT:
	case GPUNIC_PERF_READ_BW:
		return "RDMA_Read";
	case GPUNIC_PERF_ATOMIC_LAT:
	case GPUNIC_PERF_ATOMIC_BW:
		return "Atomic";
	default:
		return "RDMA_Write";
	}
}

static bool is_read(enum gpunic_perf_test t)
{
	return t == GPUNIC_PERF_READ_LAT || t == GPUNIC_PERF_READ_BW;
}

static bool is_send(enum gpunic_perf_test t)
{
	return t == GPUNIC_PERF_SEND_LAT || t == GPUNIC_PERF_SEND_BW;
}

/* The line gpunic has always printed first: who runs, how, against whom. */
static void print_summary(FILE *f, const struct perf_cfg *cfg, const struct perf_result *res)
{
	fprintf(f, "gpunic perf %s: %s, %s, executor %s%s%s, handler %s, MTU %d, peer %s %s, "
		"link %s\n", perf_test_name(cfg->test), cfg->host ? "client" : "server",
		cfg->qp_type == GPUNIC_QPT_RC ? "RC" : "UC", res->executor,
		res->gpu_name[0] ? " on " : "", res->gpu_name, res->handler ? res->handler : "?",
		res->mtu_bytes, res->peer_kind ? res->peer_kind : "?", res->peer_version,
		res->link[0] ? res->link : "?");
}

/* perftest's device lines; -d, -i and -x are shown as given, and said to be unused. */
static void print_test_info(FILE *f, const struct perf_view *v, const struct perf_cfg *cfg,
			    const struct perf_result *res)
{
	bool lat = perf_test_is_lat(cfg->test);

	stats_rule_print(f);
	fprintf(f, "                    %s ", verb_name(cfg->test));
	if (perf_test_is_atomic(cfg->test))
		fprintf(f, "%s ", cfg->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	fprintf(f, "%sTest\n", lat ? "Latency " : "BW ");
	fprintf(f, " Dual-port       : OFF\t\tDevice         : gpunic\n");
	fprintf(f, " Number of qps   : 1\t\tTransport type : IB\n");
	fprintf(f, " Connection type : %s\t\tUsing SRQ      : OFF\n",
		cfg->qp_type == GPUNIC_QPT_RC ? "RC" : "UC");
	if (cfg->host)
		fprintf(f, " TX depth        : %u\n", lat ? 1 : cfg->tx_depth);
	if (is_send(cfg->test) && !cfg->host && res->rx_depth)
		fprintf(f, " RX depth        : %u\n", res->rx_depth);
	fprintf(f, " Mtu             : %d[B]\n", res->mtu_bytes);
	fprintf(f, " Link type       : Ethernet\n");
	fprintf(f, " GID index       : %d\n", v->gid_index >= 0 ? v->gid_index : 0);
	if (is_read(cfg->test) || perf_test_is_atomic(cfg->test))
		fprintf(f, " Outstand reads  : %u\n", res->local.out_reads);
	else
		fprintf(f, " Max inline data : %u[B]\n", res->max_inline);
	fprintf(f, " rdma_cm QPs\t : OFF\n");
	fprintf(f, " Data ex. method : Ethernet\n");
	if (v->ib_dev || v->ib_port || v->gid_index >= 0) {
		fprintf(f, " perftest flags  :");
		if (v->ib_dev)
			fprintf(f, " -d %s", v->ib_dev);
		if (v->ib_port)
			fprintf(f, " -i %d", v->ib_port);
		if (v->gid_index >= 0)
			fprintf(f, " -x %d", v->gid_index);
		fprintf(f, " accepted, not used: the device is this softnic, one port, one GID\n");
	}
}

/* One side's " local address:" / " remote address:" line and its GID, as perftest prints. */
static void print_dest(FILE *f, const struct perf_cfg *cfg, const char *side,
		       const struct gpunic_perftest_dest *d)
{
	fprintf(f, " %s address: LID %#04x QPN %#06x PSN %#06x", side, d->lid, d->qpn, d->psn);
	if (is_read(cfg->test))
		fprintf(f, " OUT %#04x", d->out_reads);
	if (is_read(cfg->test) || cfg->test == GPUNIC_PERF_WRITE_LAT ||
	    cfg->test == GPUNIC_PERF_WRITE_BW || cfg->test == GPUNIC_PERF_PUT_BW)
		fprintf(f, " RKey %#08x VAddr %#016" PRIx64, d->rkey, d->vaddr);
	fprintf(f, "\n GID: ");
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02d%s", d->gid[i], i < 15 ? ":" : "\n");
}

static void print_table_header(FILE *f, const struct perf_view *v, const struct perf_cfg *cfg)
{
	if (perf_test_is_lat(cfg->test)) {
		stats_lat_header_print(f);
	} else if (v->gbits) {
		stats_rule_print(f);
		fputs(gbits_header, f);
	} else {
		stats_bw_header_print(f);
	}
}

static void print_banner(struct perf_view *v, const struct perf_cfg *cfg,
			 const struct perf_result *res)
{
	print_summary(stdout, cfg, res);
	print_test_info(stdout, v, cfg, res);
	stats_rule_print(stdout);
	print_dest(stdout, cfg, "local", &res->local);
	print_dest(stdout, cfg, "remote", &res->remote);
	print_table_header(stdout, v, cfg);
	fflush(stdout);
	v->headed = true;
}

/* perftest's -U / -H listing: "#, usec", then "i, value" per iteration. */
static void print_samples(const struct perf_size_result *r, bool sorted)
{
	uint64_t *d = malloc(sizeof(*d) * (r->nsamples ? r->nsamples : 1));

	if (!d)
		return;
	memcpy(d, r->samples, sizeof(*d) * r->nsamples);
	if (sorted)
		stats_sort_ns(d, r->nsamples);
	printf("#, usec\n");
	for (uint32_t i = 0; i < r->nsamples; i++)
		printf("%u, %g\n", i + 1, d[i] / 1e3);
	free(d);
}

/*
 * --profile: where the executor's time went per iteration of a latency test. The round trip
 * is the row's mean (a SEND or WRITE test's row is half of one, as perftest prints); what
 * the executor did not spend taking the answer or posting, it spent waiting for the NIC.
 */
static void print_profile(const struct perf_cfg *cfg, const struct perf_size_result *r)
{
	const struct gpunic_perf_lat_profile *p = &r->prof;
	bool half = cfg->test == GPUNIC_PERF_SEND_LAT || cfg->test == GPUNIC_PERF_WRITE_LAT;
	double rt = r->sum.mean_ns * (half ? 2 : 1), take, post, wait;

	if (!p->posts || !p->answers) {
		printf(" profile: no answer was waited for on this side\n");
		return;
	}
	take = (double)p->take_ns / (double)p->answers;
	post = (double)p->post_ns / (double)p->posts;
	wait = rt - take - post;
	printf(" profile (per round trip, mean): %.0f ns; the executor took the answer in %.0f "
	       "ns, posted in %.0f ns, waited %.0f ns over %.2f polls; %u torn completion "
	       "lines read again\n", rt, take, post, wait > 0 ? wait : 0,
	       1.0 + (double)p->empty_polls / (double)p->answers, p->torn);
}

static void print_row(struct perf_view *v, const struct perf_cfg *cfg,
		      const struct perf_size_result *r)
{
	struct stats_bw bw = r->bw;
	const double k = PERF_MIB / PERF_BYTES_PER_GBIT;

	if (v->unsorted && r->samples)
		print_samples(r, false);
	if (v->histogram && r->samples)
		print_samples(r, true);
	if (perf_test_is_lat(cfg->test)) {
		stats_lat_print(stdout, r->bytes, &r->sum);
		if (v->profile)
			print_profile(cfg, r);
	} else {
		if (v->gbits) {
			/* MB/s of 2^20 bytes to Gb/s of 10^9 bits */
			bw.peak_mb_s *= k;
			bw.avg_mb_s *= k;
		}
		stats_bw_print(stdout, &bw);
	}
	fflush(stdout);
	v->rows++;
}

static void hook_waiting(void *arg, const struct perf_cfg *cfg)
{
	(void)arg;
	/* perftest's box, while the server blocks in accept; how long, on stderr */
	printf("\n************************************\n"
	       "* Waiting for client to connect... *\n"
	       "************************************\n");
	fflush(stdout);
	fprintf(stderr, "gpunic perf: waiting for a client on %s:%u ",
		cfg->oob_bind ? cfg->oob_bind : "0.0.0.0", cfg->oob_port);
	if (cfg->accept_ms)
		fprintf(stderr, "(up to %.3f s) ...\n", cfg->accept_ms / 1000.0);
	else
		fprintf(stderr, "(until one comes) ...\n");
}

/* On stderr, in JSON mode too: what a client with no server yet waits for. */
static void hook_connecting(void *arg, const struct perf_cfg *cfg)
{
	(void)arg;
	fprintf(stderr, "gpunic perf: waiting for the server at %s:%u ...\n", cfg->host,
		cfg->oob_port);
}

static void hook_connected(void *arg, const struct perf_cfg *cfg, const struct perf_result *res)
{
	print_banner(arg, cfg, res);
}

static void hook_size_done(void *arg, const struct perf_cfg *cfg, const struct perf_result *res,
			   unsigned i)
{
	print_row(arg, cfg, &res->r[i]);
}

void perf_view_hooks(struct perf_view *v, struct perf_hooks *h)
{
	memset(h, 0, sizeof(*h));
	h->arg = v;
	if (v->json)
		return;		/* stdout is the JSON object's alone */
	h->connecting = hook_connecting;
	h->waiting = hook_waiting;
	h->connected = hook_connected;
	h->size_done = hook_size_done;
}

static void print_verify_atomic(FILE *f, const struct perf_cfg *cfg,
				const struct perf_result *res)
{
	const char *op = cfg->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD";
	bool exact = res->peer_kind && !strcmp(res->peer_kind, "gpunic");

	if (res->atomic_server) {
		if (res->bad && res->bad_msg == UINT64_MAX)
			fprintf(f, "ATOMIC MISMATCH: %" PRIu64 " where %" PRIu64 " was due (%"
				PRIu64 " atomics executed, targets sum to %" PRIu64 ")\n",
				res->atomic_got, res->atomic_want, res->atomic_executed,
				res->atomic_sum);
		else if (res->bad)
			fprintf(f, "ATOMIC MISMATCH: the target at offset %" PRIu64 " holds %#"
				PRIx64 ", expected %#" PRIx64 " (%" PRIu64 " wrong)\n",
				res->bad_off, res->atomic_got, res->atomic_want, res->bad);
		else
			fprintf(f, "atomic targets verified: %" PRIu64 " %s executed once each, "
				"targets sum to %" PRIu64 "%s\n", res->atomic_executed, op,
				res->atomic_sum, exact ? ", every target exact" : "");
		return;
	}
	if (res->bad)
		fprintf(f, "ATOMIC MISMATCH at operation %" PRIu64 " (target %" PRIu64
			"): fetched %#" PRIx64 ", expected %#" PRIx64 " (%" PRIu64 " of %" PRIu64
			" wrong)\n",
			res->bad_msg, res->bad_off, res->atomic_got, res->atomic_want, res->bad,
			res->verified);
	else if (res->verify_ran)
		fprintf(f, "atomic values verified: %" PRIu64 " fetched values of %s, 0 errors "
			"(%s)\n", res->verified, op, exact ?
			"exact: the server's targets started at 0" :
			"each target's values after its first, perftest's buffer holds anything");
}

static void print_verify(FILE *f, const struct perf_result *res)
{
	if (res->bad) {
		fprintf(f, "DATA MISMATCH at message %" PRIu64 " offset %" PRIu64
			": got 0x%02x, expected 0x%02x (%" PRIu64 " of %" PRIu64
			" messages wrong)\n", res->bad_msg, res->bad_off, res->bad_byte,
			res->want_byte, res->bad, res->verified);
		return;
	}
	if (res->verify_ran) {
		fprintf(f, "data verified: %" PRIu64 " messages, 0 errors", res->verified);
		if (res->ring_messages > res->verified)
			fprintf(f, " (the ring held the last %" PRIu64 " of %" PRIu64
				" messages at the end)", res->verified, res->ring_messages);
		fprintf(f, "\n");
	} else if (res->verify_skipped) {
		fprintf(f, "data not verified: the peer is not gpunic perf (its payload carries "
			"no pattern)\n");
	}
}

/* What a side that ran to its end (or connected at least) has not printed yet. */
static void print_text_rest(struct perf_view *v, const struct perf_cfg *cfg,
			    const struct perf_result *res)
{
	bool lat = perf_test_is_lat(cfg->test);

	if (!v->headed)
		print_banner(v, cfg, res);
	for (unsigned i = v->rows; i < res->n; i++)
		if (res->r[i].measured)
			print_row(v, cfg, &res->r[i]);
	if (!v->rows)
		printf(" (passive side: the client measures)\n");
	stats_rule_print(stdout);
	if (!lat && !cfg->host && res->n && res->r[res->n - 1].remote)
		printf(" (the client's numbers, as it reported them)\n");
}

void perf_report(struct perf_view *v, const struct perf_cfg *cfg, const struct perf_result *res,
		 int err)
{
	bool atomic = perf_test_is_atomic(cfg->test);

	if (v->json) {
		if (res->bad && atomic)
			print_verify_atomic(stderr, cfg, res);
		else if (res->bad)
			print_verify(stderr, res);
	} else if (v->headed || res->n || res->verify_ran || res->verify_skipped) {
		print_text_rest(v, cfg, res);
		if (atomic)
			print_verify_atomic(stdout, cfg, res);
		else
			print_verify(stdout, res);
	}
	fflush(stdout);
	if (err && err != EBADMSG)
		fprintf(stderr, "gpunic perf: %s %s failed: %s\n", perf_test_name(cfg->test),
			cfg->host ? "client" : "server", strerror(err));
}

static void json_lat(const struct perf_size_result *r)
{
	const struct stats_summary *s = &r->sum;

	printf("{\"bytes\":%u,\"iterations\":%" PRIu64 ",\"measured\":true,\"t_min_usec\":%.3f,"
	       "\"t_max_usec\":%.3f,\"t_typical_usec\":%.3f,\"t_avg_usec\":%.3f,"
	       "\"t_stdev_usec\":%.3f,\"p99_usec\":%.3f,\"p99_9_usec\":%.3f}",
	       r->bytes, r->iters, s->min_ns / 1e3, s->max_ns / 1e3, s->p50_ns / 1e3,
	       s->mean_ns / 1e3, s->stdev_ns / 1e3, s->p99_ns / 1e3, s->p999_ns / 1e3);
}

static void json_bw(const struct perf_size_result *r)
{
	printf("{\"bytes\":%" PRIu64 ",\"iterations\":%" PRIu64 ",\"measured\":true,"
	       "\"bw_peak_mb_s\":%.3f,\"bw_avg_mb_s\":%.3f,\"msg_rate_mpps\":%.6f,"
	       "\"remote\":%s}",
	       r->bw.msg_bytes, r->bw.iters, r->bw.peak_mb_s, r->bw.avg_mb_s, r->bw.msg_rate_mpps,
	       r->remote ? "true" : "false");
}

static void json_side(const char *name, uint32_t qpn, uint32_t ip)
{
	printf("\"%s\":{\"qpn\":%u,\"ip\":\"", name, qpn);
	print_ip(stdout, ip);
	printf("\"},");
}

void perf_print_json(const struct perf_cfg *cfg, const struct perf_result *res, int err)
{
	bool lat = perf_test_is_lat(cfg->test);

	putchar('{');
	json_fput_version(stdout, ",");
	printf("\"test\":\"%s\",\"role\":\"%s\",\"connection\":\"%s\",\"executor\":\"%s\","
	       "\"gpu\":", perf_test_name(cfg->test), cfg->host ? "client" : "server",
	       cfg->qp_type == GPUNIC_QPT_RC ? "RC" : "UC", res->executor);
	json_fput_str(stdout, res->gpu_name);
	printf(",\"handler\":");
	json_fput_str(stdout, res->handler ? res->handler : "");
	printf(",\"mtu\":%d,\"peer\":", res->mtu_bytes);
	json_fput_str(stdout, res->peer_kind ? res->peer_kind : "");
	printf(",\"peer_version\":");
	json_fput_str(stdout, res->peer_version);
	printf(",\"link\":");
	json_fput_str(stdout, res->link);
	putchar(',');
	json_side("local", res->local_qpn, res->local_ip);
	json_side("remote", res->remote_qpn, res->remote_ip);
	printf("\"results\":[");
	for (unsigned i = 0; i < res->n; i++) {
		const struct perf_size_result *r = &res->r[i];

		if (i)
			putchar(',');
		if (!r->measured)
			printf("{\"bytes\":%u,\"iterations\":%" PRIu64 ",\"measured\":false}",
			       r->bytes, r->iters);
		else if (lat)
			json_lat(r);
		else
			json_bw(r);
	}
	printf("],\"verification\":{\"ran\":%s,\"skipped\":%s,\"messages\":%" PRIu64
	       ",\"errors\":%" PRIu64 ",\"ring_messages\":%" PRIu64,
	       res->verify_ran ? "true" : "false", res->verify_skipped ? "true" : "false",
	       res->verified, res->bad, res->ring_messages);
	if (res->bad)
		printf(",\"first_bad\":{\"message\":%" PRIu64 ",\"offset\":%" PRIu64
		       ",\"got\":%u,\"expected\":%u}", res->bad_msg, res->bad_off, res->bad_byte,
		       res->want_byte);
	if (perf_test_is_atomic(cfg->test))
		printf(",\"atomic\":{\"type\":\"%s\",\"server\":%s,\"executed\":%" PRIu64
		       ",\"target_sum\":%" PRIu64 ",\"got\":%" PRIu64 ",\"expected\":%" PRIu64 "}",
		       cfg->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
		       res->atomic_server ? "true" : "false", res->atomic_executed, res->atomic_sum,
		       res->atomic_got, res->atomic_want);
	printf("},\"ok\":%s,\"error\":", err ? "false" : "true");
	json_fput_str(stdout, err ? strerror(err) : "");
	printf("}");
}
