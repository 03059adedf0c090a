/* SPDX-License-Identifier: MIT */
/*
 * A checked output file for the report and plot writers: every write is checked, the first
 * error is kept, and closing reports it once, naming the path and strerror(), on stderr.
 * Internal to gpunic_apps.
 */
#ifndef GPUNIC_APPS_OUTFILE_H
#define GPUNIC_APPS_OUTFILE_H

#include <stdio.h>

struct outf {
	FILE *f;
	const char *path;	/* borrowed: must outlive outf_close() */
	int err;		/* first errno seen, 0 while all is well */
};

/* Create or truncate @path. Return: 0, or the errno of fopen() (already reported). */
int outf_open(struct outf *o, const char *path);

/* printf into the file; after the first error it does nothing. */
void outf_printf(struct outf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write @s as a JSON string literal, quotes included, escaping what RFC 8259 requires. */
void outf_json_str(struct outf *o, const char *s);

/*
 * The one JSON string writer of the CLI (reports, --json outputs): @s (NULL: "") as a string
 * literal. Valid UTF-8 passes as it is; a stray byte becomes U+FFFD, so the output is always
 * valid JSON; quote, backslash, control bytes and DEL are escaped.
 */
void json_fput_str(FILE *f, const char *s);

/* The members "version" and "commit" (gpunic_version(), gpunic_commit()) with @sep between
 * them and after them (", " or ","), so every JSON output says what produced it. */
void json_fput_version(FILE *f, const char *sep);

/* Flush and close. Return: 0, or the first error of any write or of the close (reported). */
int outf_close(struct outf *o);

/* Report "gpunic: PATH: strerror(err)" on stderr. Return: @err, for "return report_err(...)". */
int outf_report(const char *path, int err);

#endif
