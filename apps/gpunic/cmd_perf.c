// SPDX-License-Identifier: MIT
/*
 * gpunic perf TEST [HOST]: perftest-style latency and bandwidth tests, GPU- or CPU-initiated.
 * Without HOST this side is the server; with it, the client (as ib_write_lat and friends).
 * Either side may be a real perftest tool: the out-of-band exchange is perftest's, and so are
 * the flags (perf_opts.c) and the banner (perf_print.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "gpunic/gpu.h"
#include "perf_opts.h"
#include "perf_pair.h"
#include "perf_print.h"
#include "perf_run.h"

/* A GPU side without a GPU fails before it connects: say so before starting either side. */
static int gpu_present(int gpu, const char *who)
{
	struct gpunic_gpu_info info;

	if (gpunic_gpu_probe(gpu, &info) == 0 && info.present)
		return 0;
	fprintf(stderr, "gpunic perf: --pair: the %s's executor is gpu, and there is no GPU %d: "
		"%s\n", who, gpu, info.reason[0] ? info.reason : "not found");
	return ENODEV;
}

/*
 * --pair: the server's configuration is the client's with its own executor and GPU. The
 * client's lines stream as it runs; the server, on its thread, prints its table once done.
 */
static int cmd_perf_pair(struct perf_cfg *cfg, struct perf_opts *o)
{
	struct perf_cfg srv = *cfg;
	struct perf_view sview = o->view;
	struct perf_pair_names names;
	struct perf_result *res = calloc(2, sizeof(*res));
	int err, serr = 0;

	if (!res)
		return 1;
	if (!o->port)
		cfg->oob_port = 0;
	srv.hooks = NULL;
	srv.gpu_exec = o->peer_executor ? o->peer_gpu_exec : cfg->gpu_exec;
	srv.gpu = o->peer_gpu_set ? o->peer_gpu : cfg->gpu;
	if (!o->check_threads)
		srv.check_threads = srv.gpu_exec ? PERF_GPU_CHECK_THREADS : 0;
	/* pins name the client's CPUs; two sides on one CPU would take turns */
	srv.engine_cpu = -1;
	srv.exec_cpu = -1;
	if ((cfg->gpu_exec && gpu_present(cfg->gpu, "client")) ||
	    (srv.gpu_exec && gpu_present(srv.gpu, "server"))) {
		free(res);
		return 1;
	}
	err = perf_pair_run(cfg, &srv, &names, &res[0], &res[1], &serr);
	if (o->view.json) {
		printf("{\"pair\":true,\"client\":");
		perf_print_json(cfg, &res[0], err);
		printf(",\"server\":");
		perf_print_json(&srv, &res[1], serr);
		printf("}\n");
	}
	perf_report(&o->view, cfg, &res[0], err);
	perf_report(&sview, &srv, &res[1], serr);
	perf_result_release(&res[0]);
	perf_result_release(&res[1]);
	free(res);
	return err || serr ? 1 : 0;
}

int cmd_perf(int argc, char **argv)
{
	struct perf_cfg cfg = {
		.qp_type = GPUNIC_QPT_RC,
		.max_size = PERF_MAX_SIZE,
		.oob_port = GPUNIC_PERFTEST_PORT,
		/* loopback unless told: the exchange hands out an rkey (docs/SECURITY.md) */
		.oob_bind = "127.0.0.1",
		.inline_size = PERF_MAX_INLINE,
		.timeout_ms = 60000,
		.tx_depth = PERF_DEFAULT_TX_DEPTH,
		.engine_cpu = -1,
		.exec_cpu = -1,
		.handler = GPUNIC_HANDLER_AUTO,
	};
	struct perf_opts o = { 0 };
	struct perf_hooks hooks;
	struct gpunic_gpu_info info;
	struct perf_result *res;
	int rc, err;

	rc = perf_opts_parse(argc, argv, &cfg, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!o.executor)
		cfg.gpu_exec = gpunic_gpu_probe(cfg.gpu, &info) == 0 && info.present;
	rc = perf_opts_check(&cfg, &o);
	if (rc)
		return rc;
	perf_view_hooks(&o.view, &hooks);
	cfg.hooks = &hooks;
	if (o.pair) {
		hooks.connecting = NULL;	/* its server is started beside it */
		return cmd_perf_pair(&cfg, &o);
	}
	res = calloc(1, sizeof(*res));
	if (!res)
		return 1;
	err = perf_run(&cfg, res);
	if (o.view.json) {
		perf_print_json(&cfg, res, err);
		printf("\n");
	}
	perf_report(&o.view, &cfg, res, err);
	perf_result_release(res);
	free(res);
	return err ? 1 : 0;
}
