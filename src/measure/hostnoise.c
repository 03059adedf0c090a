// SPDX-License-Identifier: MIT
/* The host's interruptions of the path's CPUs (hostnoise.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostnoise.h"
#include "stats.h"
#include "timing.h"

/* The median of @v[0..@n), n >= 1, as the bench's percentiles take it; sorts @v. */
static uint64_t median(uint64_t *v, size_t n)
{
	stats_sort_ns(v, n);
	return stats_percentile(v, n, 50.0);
}

int hostnoise_summarise(const uint64_t *start, const uint64_t *len, size_t n, uint64_t total,
			uint64_t stolen_ns, uint64_t span_ns, struct hostnoise_cpu *out)
{
	uint64_t *tmp, slack;
	size_t i;

	if (n > total)
		return EINVAL;
	for (i = 1; i < n; i++)
		if (start[i] < start[i - 1])
			return EINVAL;
	out->span_ns = span_ns;
	out->gaps = total;
	out->stolen_ns = stolen_ns;
	out->len_p50_ns = out->len_max_ns = out->period_ns = out->at_period = 0;
	if (!n)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return ENOMEM;
	memcpy(tmp, len, n * sizeof(*tmp));
	out->len_p50_ns = median(tmp, n);
	out->len_max_ns = tmp[n - 1];
	/* a period needs two spacings at least to be one */
	if (n >= 3) {
		for (i = 1; i < n; i++)
			tmp[i - 1] = start[i] - start[i - 1];
		out->period_ns = median(tmp, n - 1);
		slack = out->period_ns / HOSTNOISE_PERIOD_SLACK_DIV;
		for (i = 1; i < n; i++) {
			uint64_t d = start[i] - start[i - 1];

			out->at_period += d + slack >= out->period_ns && d <= out->period_ns + slack;
		}
	}
	free(tmp);
	return 0;
}

/* One watcher: its CPU's gaps, kept up to HOSTNOISE_MAX_GAPS. */
struct hn_watch {
	int cpu;
	uint64_t span_ns;
	_Atomic int *ready;	/* watchers pinned and waiting */
	_Atomic bool *go;
	uint64_t *start, *len;	/* HOSTNOISE_MAX_GAPS each */
	size_t kept;
	uint64_t total, stolen_ns, watched_ns;
};

static void *hn_watch_main(void *arg)
{
	struct hn_watch *w = arg;
	uint64_t t0, prev, now;

	atomic_fetch_add(w->ready, 1);
	while (!atomic_load_explicit(w->go, memory_order_acquire))
		timing_cpu_relax();
	t0 = prev = timing_now_ns();
	for (;;) {
		now = timing_now_ns();
		if (now - prev >= HOSTNOISE_GAP_NS) {
			if (w->kept < HOSTNOISE_MAX_GAPS) {
				w->start[w->kept] = prev;
				w->len[w->kept++] = now - prev;
			}
			w->total++;
			w->stolen_ns += now - prev;
		}
		prev = now;
		if (now - t0 >= w->span_ns)
			break;
	}
	w->watched_ns = prev - t0;
	return NULL;
}

int hostnoise_measure(const int *cpus, int n, uint64_t span_ns, struct hostnoise_cpu *out)
{
	_Atomic int ready = 0;
	_Atomic bool go = false;
	struct hn_watch *w;
	pthread_t *thr;
	char nohz[256], isolated[256];
	bool *started;
	int err = 0, i, running = 0;

	if (n < 1 || !span_ns || span_ns > HOSTNOISE_MAX_SPAN_NS)
		return EINVAL;
	w = calloc((size_t)n, sizeof(*w));
	thr = calloc((size_t)n, sizeof(*thr));
	started = calloc((size_t)n, sizeof(*started));
	if (!w || !thr || !started) {
		err = ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		w[i] = (struct hn_watch){ .cpu = cpus[i], .span_ns = span_ns, .ready = &ready,
					  .go = &go };
		/* written once now: a page first touched while watching would be a gap of our
		 * own */
		w[i].start = malloc(2 * HOSTNOISE_MAX_GAPS * sizeof(uint64_t));
		if (!w[i].start) {
			err = ENOMEM;
			goto out;
		}
		memset(w[i].start, 0, 2 * HOSTNOISE_MAX_GAPS * sizeof(uint64_t));
		w[i].len = w[i].start + HOSTNOISE_MAX_GAPS;
	}
	timing_init();
	/* missing files (no such kernel feature) read as empty lists */
	(void)hostnoise_kernel_list(HOSTNOISE_NOHZ_PATH, nohz, sizeof(nohz));
	(void)hostnoise_kernel_list(HOSTNOISE_ISOLATED_PATH, isolated, sizeof(isolated));
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].cpu = cpus[i];
		out[i].nohz_full = hostnoise_list_has(nohz, cpus[i]);
		out[i].isolated = hostnoise_list_has(isolated, cpus[i]);
		out[i].err = timing_thread_start(&thr[i], "gpunic-noise", cpus[i], hn_watch_main,
						 &w[i]);
		started[i] = out[i].err == 0;
		running += started[i];
	}
	while (atomic_load(&ready) < running)
		timing_cpu_relax();
	atomic_store_explicit(&go, true, memory_order_release);
	for (i = 0; i < n; i++) {
		if (!started[i])
			continue;
		pthread_join(thr[i], NULL);
		if (!err)
			err = hostnoise_summarise(w[i].start, w[i].len, w[i].kept, w[i].total,
						  w[i].stolen_ns, w[i].watched_ns, &out[i]);
	}
out:
	if (w)
		for (i = 0; i < n; i++)
			free(w[i].start);
	free(w);
	free(thr);
	free(started);
	return err;
}

bool hostnoise_list_has(const char *list, int cpu)
{
	const char *p = list;

	if (!list || cpu < 0)
		return false;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p)
			return false;	/* "(null)", or anything not a list */
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return false;
			p = end;
		}
		if (cpu >= lo && cpu <= hi)
			return true;
		if (*p != ',')
			return false;
		p++;
	}
	return false;
}

int hostnoise_kernel_list(const char *path, char *buf, size_t len)
{
	FILE *f;

	if (!len)
		return EINVAL;
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return errno;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	if (strcmp(buf, "(null)") == 0)
		buf[0] = '\0';
	return 0;
}
