// SPDX-License-Identifier: MIT
/*
 * pcap writer and reader: round trips, the file format on disk, and clean errors for missing,
 * truncated and garbage files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpunic/pcap.h"
#include "harness.h"

static char tmpdir[64];

/* A fresh directory per test process; the file name inside it is @name. */
static const char *tmp_path(const char *name)
{
	static char path[128];
	const char *base = getenv("TMPDIR");

	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "%s/gpunic_pcap_XXXXXX", base ? base : "/tmp");
		CHECK(mkdtemp(tmpdir) != NULL);
	}
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

static void remove_tmp(const char *path)
{
	unlink(path);
	rmdir(tmpdir);
	tmpdir[0] = '\0';
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, len), len);
	CHECK_EQ(close(fd), 0);
}

static void fill_frame(uint8_t *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7);
}

/* Frame sizes worth a round trip: empty, tiny, minimum Ethernet, MTU, jumbo, the snaplen. */
static const size_t rt_sizes[] = { 0, 1, 60, 1514, 9000, GPUNIC_PCAP_SNAPLEN };
#define RT_FRAMES (sizeof(rt_sizes) / sizeof(rt_sizes[0]))

static void write_roundtrip_file(const char *path)
{
	static uint8_t buf[GPUNIC_PCAP_SNAPLEN];
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE];
	struct gpunic_pcap_writer *w = gpunic_pcap_writer_open(path, errbuf);

	CHECK(w != NULL);
	for (size_t i = 0; i < RT_FRAMES; i++) {
		struct timespec ts = { .tv_sec = 1700000000 + (time_t)i,
				       .tv_nsec = (long)(i * 123456789 % 1000000000) };

		fill_frame(buf, rt_sizes[i], (unsigned int)i);
		CHECK_EQ(gpunic_pcap_writer_append(w, buf, rt_sizes[i], &ts), 0);
	}
	CHECK_EQ(gpunic_pcap_writer_close(w), 0);
}

TEST(roundtrip)
{
	static uint8_t want[GPUNIC_PCAP_SNAPLEN];
	const char *path = tmp_path("rt.pcap");
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame f;

	write_roundtrip_file(path);
	r = gpunic_pcap_reader_open(path, NULL);
	CHECK(r != NULL);
	CHECK_EQ(gpunic_pcap_reader_linktype(r), GPUNIC_PCAP_LINKTYPE_ETHERNET);
	for (size_t i = 0; i < RT_FRAMES; i++) {
		CHECK_EQ(gpunic_pcap_reader_next(r, &f), 0);
		CHECK_EQ(f.caplen, rt_sizes[i]);
		CHECK_EQ(f.len, rt_sizes[i]);
		fill_frame(want, rt_sizes[i], (unsigned int)i);
		CHECK_MEM(f.data, want, rt_sizes[i]);
		CHECK_EQ(f.ts.tv_sec, 1700000000 + (time_t)i);
		/* Written with microsecond precision, read back in nanoseconds. */
		CHECK_EQ(f.ts.tv_nsec, (long)(i * 123456789 % 1000000000) / 1000 * 1000);
	}
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), GPUNIC_PCAP_EOF);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), GPUNIC_PCAP_EOF);
	gpunic_pcap_reader_close(r);
	remove_tmp(path);
}

/* The classic pcap header: little-endian magic, v2.4, snaplen 65535, LINKTYPE_ETHERNET. */
TEST(file_header_format)
{
	static const uint8_t want[24] = {
		0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0,
		0,    0,    0,    0,    0xff, 0xff, 0x00, 0x00, 1, 0, 0, 0,
	};
	const uint8_t frame[3] = { 0xaa, 0xbb, 0xcc };
	const struct timespec ts = { .tv_sec = 0x01020304, .tv_nsec = 5000 };
	const char *path = tmp_path("hdr.pcap");
	struct gpunic_pcap_writer *w = gpunic_pcap_writer_open(path, NULL);
	uint8_t got[64];
	ssize_t n;
	int fd;

	CHECK(w != NULL);
	CHECK_EQ(gpunic_pcap_writer_append(w, frame, sizeof(frame), &ts), 0);
	CHECK_EQ(gpunic_pcap_writer_close(w), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	n = read(fd, got, sizeof(got));
	close(fd);
	CHECK_EQ(n, 24 + 16 + 3);
	CHECK_MEM(got, want, sizeof(want));
	/* Record header: seconds, microseconds, caplen, len. */
	CHECK_MEM(got + 24, "\x04\x03\x02\x01\x05\0\0\0\x03\0\0\0\x03\0\0\0", 16);
	CHECK_MEM(got + 40, frame, 3);
	remove_tmp(path);
}

TEST(timestamp_now)
{
	const char *path = tmp_path("now.pcap");
	struct gpunic_pcap_writer *w = gpunic_pcap_writer_open(path, NULL);
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame f;
	struct timespec before, after;

	CHECK(w != NULL);
	clock_gettime(CLOCK_REALTIME, &before);
	CHECK_EQ(gpunic_pcap_writer_append(w, "x", 1, NULL), 0);
	clock_gettime(CLOCK_REALTIME, &after);
	CHECK_EQ(gpunic_pcap_writer_close(w), 0);
	r = gpunic_pcap_reader_open(path, NULL);
	CHECK(r != NULL);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), 0);
	CHECK(f.ts.tv_sec >= before.tv_sec && f.ts.tv_sec <= after.tv_sec);
	gpunic_pcap_reader_close(r);
	remove_tmp(path);
}

TEST(append_bad_args)
{
	static uint8_t big[GPUNIC_PCAP_SNAPLEN + 1];
	const char *path = tmp_path("bad.pcap");
	struct gpunic_pcap_writer *w = gpunic_pcap_writer_open(path, NULL);

	CHECK(w != NULL);
	CHECK_EQ(gpunic_pcap_writer_append(w, big, sizeof(big), NULL), EMSGSIZE);
	CHECK(strstr(gpunic_pcap_writer_error(w), "snaplen") != NULL);
	CHECK_EQ(gpunic_pcap_writer_append(w, NULL, 10, NULL), EINVAL);
	CHECK_EQ(gpunic_pcap_writer_flush(w), 0);
	CHECK_EQ(gpunic_pcap_writer_close(w), 0);
	remove_tmp(path);
}

TEST(writer_bad_path)
{
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE] = "";

	errno = 0;
	CHECK(gpunic_pcap_writer_open("/nonexistent-gpunic-dir/x.pcap", errbuf) == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK(strstr(errbuf, "/nonexistent-gpunic-dir/x.pcap") != NULL);
	CHECK(strstr(errbuf, "No such file") != NULL);
}

TEST(writer_full_disk)
{
	struct gpunic_pcap_writer *w;
	uint8_t frame[1500] = { 0 };
	int rc = 0;

	if (access("/dev/full", W_OK) != 0)
		SKIP("no /dev/full");
	w = gpunic_pcap_writer_open("/dev/full", NULL);
	/* The header may already fail; otherwise appends or the final flush must. */
	if (!w) {
		CHECK_EQ(errno, EIO);
		return;
	}
	for (int i = 0; i < 100 && !rc; i++)
		rc = gpunic_pcap_writer_append(w, frame, sizeof(frame), NULL);
	if (!rc)
		rc = gpunic_pcap_writer_close(w);
	else
		gpunic_pcap_writer_close(w);
	CHECK_EQ(rc, EIO);
}

TEST(reader_missing_file)
{
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE] = "";

	errno = 0;
	CHECK(gpunic_pcap_reader_open("/nonexistent-gpunic.pcap", errbuf) == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK(strstr(errbuf, "/nonexistent-gpunic.pcap: No such file") != NULL);
}

TEST(reader_directory)
{
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE] = "";

	errno = 0;
	CHECK(gpunic_pcap_reader_open("/", errbuf) == NULL);
	CHECK_EQ(errno, EISDIR);
	CHECK(errbuf[0] != '\0');
}

static void check_open_fails(const void *data, size_t len)
{
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE] = "";
	const char *path = tmp_path("junk.pcap");

	write_bytes(path, data, len);
	errno = 0;
	CHECK(gpunic_pcap_reader_open(path, errbuf) == NULL);
	CHECK_EQ(errno, EBADMSG);
	CHECK(strncmp(errbuf, path, strlen(path)) == 0);
	CHECK(strlen(errbuf) > strlen(path) + 2);
	remove_tmp(path);
}

TEST(reader_garbage)
{
	uint8_t junk[512];

	fill_frame(junk, sizeof(junk), 42);
	check_open_fails(junk, sizeof(junk));
	check_open_fails("GET / HTTP/1.1\r\n\r\n", 18);
}

TEST(reader_empty_file)
{
	check_open_fails("", 0);
}

TEST(reader_truncated_file_header)
{
	check_open_fails("\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00", 10);
}

/* A record cut short: the frames before it read fine, then a clean EBADMSG with a message. */
TEST(reader_truncated_record)
{
	const char *path = tmp_path("cut.pcap");
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame f;
	struct stat st;
	int rc;

	write_roundtrip_file(path);
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(truncate(path, st.st_size - 100), 0);
	r = gpunic_pcap_reader_open(path, NULL);
	CHECK(r != NULL);
	for (size_t i = 0; i + 1 < RT_FRAMES; i++)
		CHECK_EQ(gpunic_pcap_reader_next(r, &f), 0);
	rc = gpunic_pcap_reader_next(r, &f);
	CHECK_EQ(rc, EBADMSG);
	CHECK(strstr(gpunic_pcap_reader_error(r), "truncated") != NULL);
	gpunic_pcap_reader_close(r);

	/* Cut inside a record header instead of its data. */
	CHECK_EQ(truncate(path, 24 + 16 + 0 + 7), 0);
	r = gpunic_pcap_reader_open(path, NULL);
	CHECK(r != NULL);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), 0);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), EBADMSG);
	CHECK(gpunic_pcap_reader_error(r)[0] != '\0');
	gpunic_pcap_reader_close(r);
	remove_tmp(path);
}

/* A record claiming more bytes than any snaplen allows is corrupt, not a huge allocation. */
TEST(reader_corrupt_record_length)
{
	const char *path = tmp_path("huge.pcap");
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame f;
	uint8_t file[24 + 16 + 4] = {
		0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0,
		0,    0,    0,    0,    0xff, 0xff, 0x00, 0x00, 1, 0, 0, 0,
		/* ts, ts, caplen = 0x7fffffff, len */
		0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f,
	};

	write_bytes(path, file, sizeof(file));
	r = gpunic_pcap_reader_open(path, NULL);
	CHECK(r != NULL);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), EBADMSG);
	CHECK(gpunic_pcap_reader_error(r)[0] != '\0');
	gpunic_pcap_reader_close(r);
	remove_tmp(path);
}

/* pcapng (what tshark and Wireshark write by default) reads through the same reader. */
TEST(reader_pcapng)
{
	static const uint8_t file[] = {
		/* Section Header Block: type, length 28, byte-order magic, v1.0, length -1 */
		0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
		/* Interface Description Block: Ethernet, snaplen 65535, microsecond default */
		1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0, 0, 20, 0, 0, 0,
		/* Enhanced Packet Block: interface 0, ts 3000001 us, 5 of 6 bytes, padded */
		6, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc1, 0xc6, 0x2d, 0,
		5, 0, 0, 0, 6, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 40, 0, 0, 0,
	};
	const char *path = tmp_path("ng.pcapng");
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame f;

	write_bytes(path, file, sizeof(file));
	r = gpunic_pcap_reader_open(path, NULL);
	CHECK(r != NULL);
	CHECK_EQ(gpunic_pcap_reader_linktype(r), GPUNIC_PCAP_LINKTYPE_ETHERNET);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), 0);
	CHECK_EQ(f.caplen, 5);
	CHECK_EQ(f.len, 6);
	CHECK_MEM(f.data, "hello", 5);
	CHECK_EQ(f.ts.tv_sec, 3);
	CHECK_EQ(f.ts.tv_nsec, 1000);
	CHECK_EQ(gpunic_pcap_reader_next(r, &f), GPUNIC_PCAP_EOF);
	gpunic_pcap_reader_close(r);
	remove_tmp(path);
}

TEST(close_null)
{
	CHECK_EQ(gpunic_pcap_writer_close(NULL), 0);
	gpunic_pcap_reader_close(NULL);
	CHECK_EQ(strcmp(gpunic_pcap_writer_error(NULL), ""), 0);
	CHECK_EQ(strcmp(gpunic_pcap_reader_error(NULL), ""), 0);
}
