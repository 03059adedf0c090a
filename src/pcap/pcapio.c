// SPDX-License-Identifier: MIT
/*
 * Capture files through libpcap: a writer (pcap_open_dead + pcap_dump_fopen) and a reader
 * (pcap_fopen_offline + pcap_next_ex).
 *
 * We open the FILE ourselves so that errno from fopen() reaches the caller unchanged; libpcap's
 * own path-based calls only put it into a message.
 */
#include "gpunic/pcap.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pcap/pcap.h>

_Static_assert(GPUNIC_PCAP_ERRBUF_SIZE >= PCAP_ERRBUF_SIZE, "errbuf smaller than libpcap's");
_Static_assert(GPUNIC_PCAP_LINKTYPE_ETHERNET == DLT_EN10MB, "Ethernet's DLT is its LINKTYPE");

struct gpunic_pcap_writer {
	pcap_t *dead;           /* only carries link type and snaplen for the dumper */
	pcap_dumper_t *dumper;  /* owns the FILE */
	char err[GPUNIC_PCAP_ERRBUF_SIZE];
};

struct gpunic_pcap_reader {
	pcap_t *p;              /* owns the FILE */
	char err[GPUNIC_PCAP_ERRBUF_SIZE];
};

static void __attribute__((format(printf, 2, 3))) set_err(char *buf, const char *fmt, ...)
{
	va_list ap;

	if (!buf)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, GPUNIC_PCAP_ERRBUF_SIZE, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- writer */

struct gpunic_pcap_writer *gpunic_pcap_writer_open(const char *path, char *errbuf)
{
	struct gpunic_pcap_writer *w;
	FILE *fp;
	int err;

	if (!path) {
		set_err(errbuf, "no file name");
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		set_err(errbuf, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	w->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, GPUNIC_PCAP_SNAPLEN,
						       PCAP_TSTAMP_PRECISION_MICRO);
	if (!w->dead) {
		set_err(errbuf, "%s: out of memory", path);
		err = ENOMEM;
		goto err_free;
	}
	fp = fopen(path, "wb");
	if (!fp) {
		err = errno;
		set_err(errbuf, "%s: %s", path, strerror(err));
		goto err_dead;
	}
	/* On failure pcap_dump_fopen() has already closed fp (it fails only writing the header). */
	w->dumper = pcap_dump_fopen(w->dead, fp);
	if (!w->dumper) {
		set_err(errbuf, "%s: %s", path, pcap_geterr(w->dead));
		err = EIO;
		goto err_dead;
	}
	return w;

err_dead:
	pcap_close(w->dead);
err_free:
	free(w);
	errno = err;
	return NULL;
}

int gpunic_pcap_writer_append(struct gpunic_pcap_writer *w, const void *frame, size_t len,
			      const struct timespec *ts)
{
	struct pcap_pkthdr hdr;
	struct timespec now;

	if (!frame && len) {
		set_err(w->err, "no frame data");
		return EINVAL;
	}
	if (len > GPUNIC_PCAP_SNAPLEN) {
		set_err(w->err, "frame of %zu bytes exceeds the snaplen (%u)", len,
			GPUNIC_PCAP_SNAPLEN);
		return EMSGSIZE;
	}
	if (!ts) {
		clock_gettime(CLOCK_REALTIME, &now);
		ts = &now;
	}
	memset(&hdr, 0, sizeof(hdr));
	hdr.ts.tv_sec = ts->tv_sec;
	hdr.ts.tv_usec = ts->tv_nsec / 1000;
	hdr.caplen = (bpf_u_int32)len;
	hdr.len = (bpf_u_int32)len;
	pcap_dump((u_char *)w->dumper, &hdr, frame);
	/* pcap_dump() returns nothing: the stream's error flag is the only report. */
	if (ferror(pcap_dump_file(w->dumper))) {
		set_err(w->err, "write failed: %s", strerror(errno));
		return EIO;
	}
	return 0;
}

int gpunic_pcap_writer_flush(struct gpunic_pcap_writer *w)
{
	if (pcap_dump_flush(w->dumper) != 0) {
		set_err(w->err, "flush failed: %s", strerror(errno));
		return EIO;
	}
	return 0;
}

int gpunic_pcap_writer_close(struct gpunic_pcap_writer *w)
{
	int ret;

	if (!w)
		return 0;
	ret = gpunic_pcap_writer_flush(w);
	pcap_dump_close(w->dumper);
	pcap_close(w->dead);
	free(w);
	return ret;
}

const char *gpunic_pcap_writer_error(const struct gpunic_pcap_writer *w)
{
	return w ? w->err : "";
}

/* ---------------------------------------------------------------- reader */

struct gpunic_pcap_reader *gpunic_pcap_reader_open(const char *path, char *errbuf)
{
	char pcap_err[PCAP_ERRBUF_SIZE] = "";
	struct gpunic_pcap_reader *r;
	struct stat st;
	FILE *fp;
	int err;

	if (!path) {
		set_err(errbuf, "no file name");
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		set_err(errbuf, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	fp = fopen(path, "rb");
	if (!fp) {
		err = errno;
		set_err(errbuf, "%s: %s", path, strerror(err));
		goto err_free;
	}
	/* fopen() accepts a directory for reading; say so instead of "read error". */
	if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
		err = EISDIR;
		set_err(errbuf, "%s: %s", path, strerror(err));
		goto err_close;
	}
	r->p = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, pcap_err);
	if (!r->p) {
		err = ferror(fp) ? EIO : EBADMSG;
		set_err(errbuf, "%s: %s", path, pcap_err);
		goto err_close;
	}
	return r;

err_close:
	fclose(fp);
err_free:
	free(r);
	errno = err;
	return NULL;
}

int gpunic_pcap_reader_linktype(const struct gpunic_pcap_reader *r)
{
	return pcap_datalink(r->p);
}

const char *gpunic_pcap_linktype_name(int linktype)
{
	const char *name = pcap_datalink_val_to_name(linktype);

	return name ? name : "?";
}

int gpunic_pcap_reader_next(struct gpunic_pcap_reader *r, struct gpunic_pcap_frame *f)
{
	struct pcap_pkthdr *hdr;
	const u_char *data;
	int rc;

	rc = pcap_next_ex(r->p, &hdr, &data);
	if (rc == 1) {
		f->data = data;
		f->caplen = hdr->caplen;
		f->len = hdr->len;
		/* Opened with nanosecond precision: tv_usec holds nanoseconds. */
		f->ts.tv_sec = hdr->ts.tv_sec;
		f->ts.tv_nsec = hdr->ts.tv_usec;
		return 0;
	}
	if (rc == PCAP_ERROR_BREAK)
		return GPUNIC_PCAP_EOF;
	set_err(r->err, "%s", pcap_geterr(r->p));
	return ferror(pcap_file(r->p)) ? EIO : EBADMSG;
}

const char *gpunic_pcap_reader_error(const struct gpunic_pcap_reader *r)
{
	return r ? r->err : "";
}

void gpunic_pcap_reader_close(struct gpunic_pcap_reader *r)
{
	if (!r)
		return;
	pcap_close(r->p);
	free(r);
}
