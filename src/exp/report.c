// SPDX-License-Identifier: MIT
/*
 * The experiment's report: a run's latency summary and counters as text (perftest-shaped) and as
 * JSON, the NIC's drops by reason, and with RPC the checks of the responses and the forwarder's
 * requests by reason.
 */
#include <stdio.h>
#include <string.h>

#include "exp_loc.h"

void lb_print_drops(FILE *out, const struct gpunic_nic_counters *c)
{
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (c->drops[i])
			fprintf(out, " %s=%llu",
				gpunic_drop_reason_name((enum gpunic_drop_reason)i),
				(unsigned long long)c->drops[i]);
}

void lb_json_drops(FILE *out, const struct gpunic_nic_counters *c)
{
	bool first = true;

	fputc('{', out);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++) {
		if (!c->drops[i])
			continue;
		fprintf(out, "%s\"%s\": %llu", first ? "" : ", ",
			gpunic_drop_reason_name((enum gpunic_drop_reason)i),
			(unsigned long long)c->drops[i]);
		first = false;
	}
	fputc('}', out);
}

void lb_json_run(FILE *out, const struct stats_summary *sum, const struct lb_run_result *res)
{
	const struct stats_counts *c = &res->counts;
	double rate = res->send_ns ? (double)(res->sent - 1) * 1e9 / (double)res->send_ns : 0;

	fprintf(out,
		"{\"sent\": %llu, \"received\": %llu, \"verified\": %llu, \"lost\": %llu, "
		"\"dup\": %llu, \"reorder\": %llu, \"corrupt\": %llu, \"corrupt_unmatched\": %llu, "
		"\"stale\": %llu, \"rx_errors\": %llu, \"send_errors\": %llu, "
		"\"late_sends\": %llu, \"max_late_ns\": %llu, \"send_ns\": %llu, "
		"\"wall_ns\": %llu, "
		"\"msg_rate_per_s\": %.1f, \"stopped\": %s, \"recorder_full\": %s, ",
		(unsigned long long)res->sent, (unsigned long long)c->received,
		(unsigned long long)res->verified, (unsigned long long)c->lost,
		(unsigned long long)c->dup, (unsigned long long)c->reorder,
		(unsigned long long)c->corrupt, (unsigned long long)res->corrupt_unmatched,
		(unsigned long long)res->stale, (unsigned long long)res->rx_errors,
		(unsigned long long)res->send_errors, (unsigned long long)res->late_sends,
		(unsigned long long)res->max_late_ns, (unsigned long long)res->send_ns,
		(unsigned long long)res->wall_ns, rate, res->stopped ? "true" : "false",
		res->rec_full ? "true" : "false");
	fprintf(out,
		"\"latency_ns\": {\"count\": %llu, \"min\": %llu, \"p50\": %llu, \"p90\": %llu, "
		"\"p99\": %llu, \"p999\": %llu, \"max\": %llu, \"mean\": %.1f, \"stdev\": %.1f}}",
		(unsigned long long)sum->count, (unsigned long long)sum->min_ns,
		(unsigned long long)sum->p50_ns, (unsigned long long)sum->p90_ns,
		(unsigned long long)sum->p99_ns, (unsigned long long)sum->p999_ns,
		(unsigned long long)sum->max_ns, sum->mean_ns, sum->stdev_ns);
}

void lb_print_run(FILE *out, uint32_t size, const struct stats_summary *sum,
		  const struct lb_run_result *res)
{
	const struct stats_counts *c = &res->counts;

	stats_lat_header_print(out);
	if (sum->count)
		stats_lat_print(out, size, sum);
	else
		fprintf(out, " %-7u %-11u (no samples: nothing came back intact)\n", size, 0);
	stats_rule_print(out);
	fprintf(out,
		" sent %llu  received %llu  verified %llu  lost %llu  dup %llu  reorder %llu  "
		"corrupt %llu",
		(unsigned long long)res->sent, (unsigned long long)c->received,
		(unsigned long long)res->verified, (unsigned long long)c->lost,
		(unsigned long long)c->dup, (unsigned long long)c->reorder,
		(unsigned long long)c->corrupt);
	if (res->corrupt_unmatched)
		fprintf(out, " (%llu matching no message)",
			(unsigned long long)res->corrupt_unmatched);
	fprintf(out, "  stale %llu\n", (unsigned long long)res->stale);
	if (res->rx_errors || res->send_errors)
		fprintf(out, " error completions: receive %llu  send %llu\n",
			(unsigned long long)res->rx_errors, (unsigned long long)res->send_errors);
	if (res->late_sends)
		fprintf(out, " late sends %llu (worst %.3f us after its slot)\n",
			(unsigned long long)res->late_sends, (double)res->max_late_ns / 1000.0);
	if (c->lost || c->corrupt || c->dup)
		fprintf(out, " WARNING: %llu lost, %llu corrupt, %llu duplicated of %llu sent "
			     "(UC does not retransmit)\n",
			(unsigned long long)c->lost, (unsigned long long)c->corrupt,
			(unsigned long long)c->dup, (unsigned long long)res->sent);
	if (res->stopped)
		fprintf(out, " (stopped early by a signal)\n");
	if (res->rec_full)
		fprintf(out, " (the duration run filled the sample recorder and ended there)\n");
}


/* ---------------------------------------------------------------- RPC */

void lb_print_rpc(FILE *out, const struct lb_run_result *res, const struct stats_summary *ts,
		  const char *clock)
{
	bool bad = false;

	fprintf(out, " rpc: responses checked ok %llu",
		(unsigned long long)res->rpc_checks[GPUNIC_RPC_CHECK_OK]);
	for (int i = GPUNIC_RPC_CHECK_OK + 1; i < GPUNIC_RPC_CHECKS; i++) {
		if (!res->rpc_checks[i])
			continue;
		fprintf(out, "%s %s %llu", bad ? "," : "; failed:",
			gpunic_rpc_check_name((enum gpunic_rpc_check)i),
			(unsigned long long)res->rpc_checks[i]);
		bad = true;
	}
	if (res->rpc_faults_sent)
		fprintf(out, "; bad requests sent on purpose %llu",
			(unsigned long long)res->rpc_faults_sent);
	fprintf(out, "\n");
	if (ts && ts->count)
		fprintf(out, " rpc: round trip by the echoed timestamp (%s): min %.3f, p50 %.3f, "
			     "p99 %.3f, max %.3f us over %llu responses\n",
			clock, (double)ts->min_ns / 1000.0, (double)ts->p50_ns / 1000.0,
			(double)ts->p99_ns / 1000.0, (double)ts->max_ns / 1000.0,
			(unsigned long long)ts->count);
	else
		fprintf(out, " rpc: requests stamped by %s; no verified response to time by it\n",
			clock);
}

void lb_json_rpc(FILE *out, const struct lb_run_result *res, const struct stats_summary *ts,
		 const char *clock)
{
	fputs("\"rpc_checks\": {", out);
	for (int i = 0; i < GPUNIC_RPC_CHECKS; i++)
		fprintf(out, "%s\"%s\": %llu", i ? ", " : "",
			gpunic_rpc_check_name((enum gpunic_rpc_check)i),
			(unsigned long long)res->rpc_checks[i]);
	fprintf(out, "}, \"rpc_faults_sent\": %llu, \"rpc_clock\": \"%s\", \"rpc_ts_latency_ns\": ",
		(unsigned long long)res->rpc_faults_sent, clock);
	if (ts && ts->count)
		fprintf(out, "{\"count\": %llu, \"min\": %llu, \"p50\": %llu, \"p99\": %llu, "
			     "\"max\": %llu}",
			(unsigned long long)ts->count, (unsigned long long)ts->min_ns,
			(unsigned long long)ts->p50_ns, (unsigned long long)ts->p99_ns,
			(unsigned long long)ts->max_ns);
	else
		fputs("null", out);
}

/* The forwarder's requests by reason and its drops, as JSON members or as one line. */
static void rpc_counters(FILE *out, const struct gpunic_rpc_counters *c, bool json)
{
	fputs(json ? "\"rpc\": {" : " rpc:", out);
	for (uint32_t i = 0; i < GPUNIC_RPC_REASONS; i++)
		fprintf(out, json ? "\"%s\": %llu, " : " %s %llu", gpunic_rpc_reason_name(i),
			(unsigned long long)c->by_reason[i]);
	fprintf(out, json ? "\"dropped\": %llu}" : " dropped %llu\n",
		(unsigned long long)c->dropped);
}

void lb_json_rpc_counters(FILE *out, const struct gpunic_rpc_counters *c)
{
	rpc_counters(out, c, true);
}

void lb_print_rpc_counters(FILE *out, const struct gpunic_rpc_counters *c)
{
	rpc_counters(out, c, false);
}
