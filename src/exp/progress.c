// SPDX-License-Identifier: MIT
/*
 * Live progress of long work (bench.h): a line per step, a bar redrawn in place on a terminal,
 * and nothing where stderr is a file or a pipe, whose reader wants the results only.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

enum lb_progress_mode lb_progress_mode_for(int fd, bool verbose)
{
	const char *env = getenv(LB_PROGRESS_ENV);

	if (env && strcmp(env, "off") == 0)
		return LB_PROGRESS_OFF;
	if (env && strcmp(env, "lines") == 0)
		return LB_PROGRESS_LINES;
	if (env && strcmp(env, "bar") == 0)
		return LB_PROGRESS_BAR;
	if (isatty(fd))
		return LB_PROGRESS_BAR;
	return verbose ? LB_PROGRESS_LINES : LB_PROGRESS_OFF;
}

void lb_progress_init(struct lb_progress *p, FILE *out, enum lb_progress_mode mode)
{
	*p = (struct lb_progress){ .out = out, .mode = mode };
}

void lb_progress_clear(struct lb_progress *p)
{
	if (!p || !p->bar_shown)
		return;
	fprintf(p->out, "\r%*s\r", 79, "");
	fflush(p->out);
	p->bar_shown = false;
}

void lb_progress_step(struct lb_progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!p || p->mode == LB_PROGRESS_OFF)
		return;
	lb_progress_clear(p);
	fprintf(p->out, "gpunic: ");
	va_start(ap, fmt);
	vfprintf(p->out, fmt, ap);
	va_end(ap);
	fprintf(p->out, "\n");
	fflush(p->out);
}

void lb_progress_bar(struct lb_progress *p, const char *label, uint64_t done, uint64_t total,
		     uint64_t back)
{
	char bar[LB_PROGRESS_BAR_WIDTH + 1];
	unsigned fill, pct;

	if (!p || p->mode != LB_PROGRESS_BAR || !total)
		return;
	if (done > total)
		done = total;
	fill = (unsigned)(done * LB_PROGRESS_BAR_WIDTH / total);
	pct = (unsigned)(done * 100 / total);
	memset(bar, '#', fill);
	memset(bar + fill, '.', LB_PROGRESS_BAR_WIDTH - fill);
	bar[LB_PROGRESS_BAR_WIDTH] = '\0';
	fprintf(p->out, "\r  %-10s [%s] %3u%% %llu/%llu sent, %llu back", label, bar, pct,
		(unsigned long long)done, (unsigned long long)total, (unsigned long long)back);
	fflush(p->out);
	p->bar_shown = true;
}
