/* SPDX-License-Identifier: MIT */
/*
 * gpunic pcap: write and read Ethernet captures through libpcap.
 *
 * Files are classic pcap, LINKTYPE_ETHERNET, snaplen 65535, microsecond timestamps, so tshark,
 * scapy and tcpdump read them. The reader takes anything libpcap opens (pcap or pcapng, any
 * timestamp precision) and reports timestamps in nanoseconds.
 *
 * Only built when libpcap is found: then GPUNIC_HAVE_PCAP is defined to 1 for every target that
 * links gpunic. Handles are not thread-safe; use one per thread.
 *
 * Errors (the control path's rule: docs/DESIGN.md, "Errors"): calls returning int give 0 or a
 * positive errno; constructors return NULL and set errno, and copy libpcap's message into
 * @errbuf when it is not NULL. The message of the last failed call
 * on a handle is gpunic_pcap_*_error(). EBADMSG means the file's content is not a valid capture
 * (bad magic, a truncated record); EIO means reading or writing the file failed.
 */
#ifndef GPUNIC_PCAP_H
#define GPUNIC_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUNIC_PCAP_SNAPLEN 65535u
#define GPUNIC_PCAP_LINKTYPE_ETHERNET 1
/* Size of the error buffers constructors fill (libpcap's PCAP_ERRBUF_SIZE). */
#define GPUNIC_PCAP_ERRBUF_SIZE 256
/* gpunic_pcap_reader_next(): no more frames. Distinct from every errno value. */
#define GPUNIC_PCAP_EOF (-1)

struct gpunic_pcap_writer;
struct gpunic_pcap_reader;

/* One captured frame, as the reader returns it. */
struct gpunic_pcap_frame {
	const uint8_t *data; /* valid until the next gpunic_pcap_reader_next() or close */
	uint32_t caplen;     /* bytes in @data */
	uint32_t len;        /* length on the wire; larger than @caplen when the capture cut it */
	struct timespec ts;  /* capture time (CLOCK_REALTIME) */
};

/**
 * gpunic_pcap_writer_open - create (or truncate) @path and write the pcap file header
 * @path: the file to write
 * @errbuf: GPUNIC_PCAP_ERRBUF_SIZE bytes for the error message, or NULL
 * Return: the writer, or NULL with errno set.
 */
struct gpunic_pcap_writer *gpunic_pcap_writer_open(const char *path, char *errbuf);

/**
 * gpunic_pcap_writer_append - append one Ethernet frame (no FCS)
 * @w: the writer
 * @frame: the frame's bytes
 * @len: its length
 * @ts: capture time, stored with microsecond precision; NULL = now
 * Return: 0, EINVAL (NULL frame), EMSGSIZE (longer than the snaplen) or EIO.
 */
int gpunic_pcap_writer_append(struct gpunic_pcap_writer *w, const void *frame, size_t len,
			      const struct timespec *ts);

/** gpunic_pcap_writer_flush - push buffered frames to the file. Return: 0 or EIO. */
int gpunic_pcap_writer_flush(struct gpunic_pcap_writer *w);

/**
 * gpunic_pcap_writer_close - flush, close and free the writer (NULL is a no-op)
 * Return: 0, or EIO when buffered frames could not be written; the writer is freed either way.
 */
int gpunic_pcap_writer_close(struct gpunic_pcap_writer *w);

/** gpunic_pcap_writer_error - message of the writer's last failed call ("" if none) */
const char *gpunic_pcap_writer_error(const struct gpunic_pcap_writer *w);

/**
 * gpunic_pcap_reader_open - open a capture file for reading
 * @path: the capture file
 * @errbuf: GPUNIC_PCAP_ERRBUF_SIZE bytes for the error message, or NULL
 * Return: the reader, or NULL with errno set (ENOENT, EACCES, EISDIR, EBADMSG, EIO...).
 */
struct gpunic_pcap_reader *gpunic_pcap_reader_open(const char *path, char *errbuf);

/**
 * gpunic_pcap_reader_linktype - the file's link type, as libpcap's DLT_* value
 * (GPUNIC_PCAP_LINKTYPE_ETHERNET for Ethernet; other values may differ from the file's LINKTYPE_*)
 */
int gpunic_pcap_reader_linktype(const struct gpunic_pcap_reader *r);

/** gpunic_pcap_linktype_name - libpcap's name for a DLT_* value ("EN10MB", "RAW"...), or "?" */
const char *gpunic_pcap_linktype_name(int linktype);

/**
 * gpunic_pcap_reader_next - read the next frame into @f
 * Return: 0 with @f filled, GPUNIC_PCAP_EOF after the last frame, EBADMSG for a truncated or
 * corrupt record, or EIO.
 */
int gpunic_pcap_reader_next(struct gpunic_pcap_reader *r, struct gpunic_pcap_frame *f);

/** gpunic_pcap_reader_error - message of the reader's last failed call ("" if none) */
const char *gpunic_pcap_reader_error(const struct gpunic_pcap_reader *r);

/** gpunic_pcap_reader_close - close and free the reader (NULL is a no-op) */
void gpunic_pcap_reader_close(struct gpunic_pcap_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_PCAP_H */
