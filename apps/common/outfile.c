// SPDX-License-Identifier: MIT
/*
 * Checked output files (see outfile.h).
 */
#include "gpunic/version.h"
#include "outfile.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define OUTF_BUF_BYTES (1 << 16)	/* sample CSVs are large: fewer, bigger writes */

int outf_report(const char *path, int err)
{
	fprintf(stderr, "gpunic: %s: %s\n", path, strerror(err));
	return err;
}

int outf_open(struct outf *o, const char *path)
{
	o->path = path;
	o->err = 0;
	o->f = fopen(path, "w");
	if (!o->f) {
		o->err = errno;
		return outf_report(path, o->err);
	}
	/* Only a bigger buffer; failing to get one leaves stdio's default, which also works. */
	(void)setvbuf(o->f, NULL, _IOFBF, OUTF_BUF_BYTES);
	return 0;
}

void outf_printf(struct outf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->err || !o->f)
		return;
	va_start(ap, fmt);
	n = vfprintf(o->f, fmt, ap);
	va_end(ap);
	if (n < 0)
		o->err = errno ? errno : EIO;
}

/*
 * Length of the well-formed UTF-8 sequence at @p (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), or 0 if it is not one.
 */
static size_t utf8_len(const unsigned char *p)
{
	size_t len;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		/* The terminating NUL is not a continuation byte, so this never reads past it. */
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void json_fput_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', f);
	while (*p) {
		size_t len = utf8_len(p);

		if (len == 0) {
			/* JSON text is UTF-8: a stray byte (binary argv) becomes U+FFFD. */
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		if (len > 1) {
			fwrite(p, 1, len, f);
			p += len;
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			/* Other control characters have no short escape. */
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
		p++;
	}
	fputc('"', f);
}

void json_fput_version(FILE *f, const char *sep)
{
	fprintf(f, "\"version\":%s", sep[1] ? " " : "");
	json_fput_str(f, gpunic_version());
	fprintf(f, "%s\"commit\":%s", sep, sep[1] ? " " : "");
	json_fput_str(f, gpunic_commit());
	fputs(sep, f);
}

void outf_json_str(struct outf *o, const char *s)
{
	if (o->err || !o->f)
		return;
	json_fput_str(o->f, s);
	if (ferror(o->f))
		o->err = errno ? errno : EIO;
}

int outf_close(struct outf *o)
{
	int err = o->err;

	if (!o->f)
		return err;
	if (fflush(o->f) != 0 && !err)
		err = errno;
	if (fclose(o->f) != 0 && !err)
		err = errno;
	o->f = NULL;
	o->err = err;
	if (err)
		outf_report(o->path, err);
	return err;
}
