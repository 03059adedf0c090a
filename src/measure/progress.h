/* SPDX-License-Identifier: MIT */
/*
 * Live progress of long work on a stream (stderr): a line per step, and on a terminal a bar
 * of the running step redrawn in place; nothing where the stream is a file or a pipe, whose
 * reader wants the results only. GPUNIC_PROGRESS=off|lines|bar overrides the guess.
 */
#ifndef GPUNIC_MEASURE_PROGRESS_H
#define GPUNIC_MEASURE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum progress_mode {
	PROGRESS_OFF,	/* nothing (stderr is not a terminal) */
	PROGRESS_LINES,	/* a line per step */
	PROGRESS_BAR,	/* a line per step and a bar redrawn in place (a terminal) */
};

#define PROGRESS_ENV "GPUNIC_PROGRESS"	/* off | lines | bar: overrides the guess */
#define PROGRESS_BAR_WIDTH 24

/* Bar when @fd is a terminal, else off; @verbose asks for lines at least. */
enum progress_mode progress_mode_for(int fd, bool verbose);

struct progress {
	FILE *out;
	enum progress_mode mode;
	bool bar_shown;		/* a bar is on the line: a step line clears it first */
};

void progress_init(struct progress *p, FILE *out, enum progress_mode mode);
/* One step ("gpunic: cpu: ..."), on its own line. NULL @p: nothing. */
void progress_step(struct progress *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The bar of a run: @done of @total sent, @back replies (BAR mode only). */
void progress_bar(struct progress *p, const char *label, uint64_t done, uint64_t total,
		  uint64_t back);
/* Take the bar off the line. */
void progress_clear(struct progress *p);

#endif /* GPUNIC_MEASURE_PROGRESS_H */
