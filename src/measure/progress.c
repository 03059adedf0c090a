// SPDX-License-Identifier: MIT
/*
 * Live progress of long work (progress.h).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"

enum progress_mode progress_mode_for(int fd, bool verbose)
{
	const char *env = getenv(PROGRESS_ENV);

	if (env && strcmp(env, "off") == 0)
		return PROGRESS_OFF;
	if (env && strcmp(env, "lines") == 0)
		return PROGRESS_LINES;
	if (env && strcmp(env, "bar") == 0)
		return PROGRESS_BAR;
	if (isatty(fd))
		return PROGRESS_BAR;
	return verbose ? PROGRESS_LINES : PROGRESS_OFF;
}

void progress_init(struct progress *p, FILE *out, enum progress_mode mode)
{
	*p = (struct progress){ .out = out, .mode = mode };
}

void progress_clear(struct progress *p)
{
	if (!p || !p->bar_shown)
		return;
	fprintf(p->out, "\r%*s\r", 79, "");
	fflush(p->out);
	p->bar_shown = false;
}

void progress_step(struct progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!p || p->mode == PROGRESS_OFF)
		return;
	progress_clear(p);
	fprintf(p->out, "gpunic: ");
	va_start(ap, fmt);
	vfprintf(p->out, fmt, ap);
	va_end(ap);
	fprintf(p->out, "\n");
	fflush(p->out);
}

void progress_bar(struct progress *p, const char *label, uint64_t done, uint64_t total,
		     uint64_t back)
{
	char bar[PROGRESS_BAR_WIDTH + 1];
	unsigned fill, pct;

	if (!p || p->mode != PROGRESS_BAR || !total)
		return;
	if (done > total)
		done = total;
	fill = (unsigned)(done * PROGRESS_BAR_WIDTH / total);
	pct = (unsigned)(done * 100 / total);
	memset(bar, '#', fill);
	memset(bar + fill, '.', PROGRESS_BAR_WIDTH - fill);
	bar[PROGRESS_BAR_WIDTH] = '\0';
	fprintf(p->out, "\r  %-10s [%s] %3u%% %llu/%llu sent, %llu back", label, bar, pct,
		(unsigned long long)done, (unsigned long long)total, (unsigned long long)back);
	fflush(p->out);
	p->bar_shown = true;
}
