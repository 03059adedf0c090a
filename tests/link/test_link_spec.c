// SPDX-License-Identifier: MIT
/* gpunic_link_open_spec(): each documented form opens the right link, anything else is EINVAL
 * (and, under ASan, leaks nothing). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpunic/verbs.h"
#include "link_test.h"

static struct gpunic_link *open_spec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static struct gpunic_link *open_spec(const char *fmt, ...)
{
	char spec[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(spec, sizeof(spec), fmt, ap);
	va_end(ap);
	return gpunic_link_open_spec(spec);
}

TEST(spec_udp)
{
	uint16_t port = test_port(0);
	struct gpunic_link *l = open_spec("udp:127.0.0.81:%u", port), *m;

	CHECK(l);
	CHECK(strcmp(l->ops->name, "udp") == 0);
	CHECK_EQ(l->caps, GPUNIC_LINK_CAP_RX_NO_ICRC);
	/* The port is really bound: a second open of the same address fails. */
	m = open_spec("udp:127.0.0.81:%u", port);
	CHECK(!m && errno == EADDRINUSE);
	/* numbers follow gpunic's one rule (gpunic/parse.h): the same port in hex */
	m = open_spec("udp:127.0.0.81:0x%x", port);
	CHECK(!m && errno == EADDRINUSE);
	gpunic_link_close(l);

	/* No port: 4791. */
	l = gpunic_link_open_spec("udp:127.0.0.82");
	if (!l && errno == EADDRINUSE)
		SKIP("127.0.0.82:4791 is taken by someone else");
	CHECK(l);
	m = gpunic_link_open_spec("udp:127.0.0.82:4791");
	CHECK(!m && errno == EADDRINUSE);
	gpunic_link_close(l);
}

TEST(spec_dgram)
{
	uint16_t pa = test_port(1), pb = test_port(2);
	struct gpunic_link *a = open_spec("dgram:127.0.0.83:%u,127.0.0.84:%u", pa, pb);
	struct gpunic_link *b = open_spec("dgram:127.0.0.84:%u,127.0.0.83:%u", pb, pa);
	uint8_t out[60], in[64];
	size_t len;

	CHECK(a && b);
	CHECK(strcmp(a->ops->name, "dgram") == 0);
	CHECK_EQ(a->caps, GPUNIC_LINK_CAP_SHARED_WIRE);
	test_eth_frame(out, sizeof(out), 3);
	CHECK_EQ(gpunic_link_send(a, out, sizeof(out)), 0);
	CHECK_EQ(test_recv_wait(b, in, sizeof(in), &len, 2000), 0);
	CHECK_EQ(len, sizeof(out));
	CHECK_MEM(in, out, len);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

TEST(spec_shm)
{
	char name[64];
	struct gpunic_link *a, *b;
	uint8_t out[60], in[64];
	size_t len;

	snprintf(name, sizeof(name), "/gpunic-test-spec-%d", (int)getpid());
	a = open_spec("shm:%s,a,create", name);
	CHECK(a);
	b = open_spec("shm:%s,b", name);
	CHECK(b);
	CHECK(strcmp(a->ops->name, "shm") == 0);
	test_eth_frame(out, sizeof(out), 4);
	CHECK_EQ(gpunic_link_send(b, out, sizeof(out)), 0);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
	CHECK_EQ(len, sizeof(out));
	CHECK_MEM(in, out, len);
	gpunic_link_close(b);
	gpunic_link_close(a);
	/* The creator took the name with it. */
	CHECK(!open_spec("shm:%s,b", name) && errno == ENOENT);
}

static void *create_later(void *arg)
{
	const struct timespec pause = { .tv_nsec = 100 * 1000000L };

	nanosleep(&pause, NULL);
	return gpunic_link_open_spec((const char *)arg);
}

/* The joining end waits for a creator that comes late, and gives up on one that never comes. */
TEST(spec_shm_wait)
{
	char name[64], create[80], join[80];
	struct gpunic_link *a, *b;
	struct timespec t0, t1;
	pthread_t thr;
	void *made;

	snprintf(name, sizeof(name), "/gpunic-test-wait-%d", (int)getpid());
	snprintf(create, sizeof(create), "shm:%s,a,create", name);
	snprintf(join, sizeof(join), "shm:%s,b", name);
	CHECK_EQ(pthread_create(&thr, NULL, create_later, create), 0);
	b = gpunic_link_open_spec_wait(join, 10000);
	CHECK_EQ(pthread_join(thr, &made), 0);
	a = made;
	CHECK(a && b);
	gpunic_link_close(b);
	gpunic_link_close(a);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(!gpunic_link_open_spec_wait(join, 150) && errno == ENOENT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 150);
	/* a creating end and a malformed spec fail at once, with their own errors */
	CHECK(!gpunic_link_open_spec_wait("udp:bogus", 10000) && errno == EINVAL);
	a = gpunic_link_open_spec_wait(create, 10000);
	CHECK(a);
	CHECK(!gpunic_link_open_spec_wait(create, 10000) && errno == EEXIST);
	gpunic_link_close(a);
}

/* The path MTU a link carries follows the QP check's frame size exactly, at every edge. */
TEST(path_mtu_fits_frames)
{
	struct gpunic_link l;

	memset(&l, 0, sizeof(l));
	CHECK_EQ(gpunic_link_path_mtu(&l), GPUNIC_MTU_4096); /* no limit */
	for (int m = GPUNIC_MTU_512; m <= GPUNIC_MTU_4096; m++) {
		l.mtu = gpunic_mtu_frame_bytes((enum gpunic_mtu)m);
		CHECK_EQ(gpunic_link_path_mtu(&l), m);
		l.mtu--;
		CHECK_EQ(gpunic_link_path_mtu(&l), m - 1);
	}
	l.mtu = 100;
	CHECK_EQ(gpunic_link_path_mtu(&l), GPUNIC_MTU_256);
	CHECK_EQ(gpunic_mtu_frame_bytes(GPUNIC_MTU_1024),
		 GPUNIC_L2L4_BYTES + GPUNIC_MAX_IB_HDR_BYTES + 1024 + GPUNIC_ICRC_BYTES);
}

TEST(spec_malformed)
{
	static const char *const bad[] = {
		"",
		"udp",
		"udp:",
		"udp:127.0.0",
		"udp:127.0.0.1.5",
		"udp:256.0.0.1",
		"udp:localhost",
		"udp: 127.0.0.1",
		"udp:127.0.0.1:",
		"udp:127.0.0.1:0",
		"udp:127.0.0.1:65536",
		"udp:127.0.0.1:99999999999",
		"udp:127.0.0.1:-1",
		"udp:127.0.0.1:+80",
		"udp:127.0.0.1:80x",
		"udp:127.0.0.1:080",	/* octal to strtol(s, NULL, 0): refused, not read otherwise */
		"udp:127.0.0.1:0x",
		"udp:127.0.0.1:80:81",
		"udp:127.0.0.1 ",
		"UDP:127.0.0.1",
		"dgram:",
		"dgram:127.0.0.1:10001",
		"dgram:127.0.0.1:10001,",
		"dgram:,127.0.0.1:10001",
		"dgram:127.0.0.1,127.0.0.1:10001",
		"dgram:127.0.0.1:10001,127.0.0.1",
		"dgram:127.0.0.1:10001,127.0.0.1:10002,",
		"dgram:127.0.0.1:10001,127.0.0.1:10002,127.0.0.1:10003",
		"dgram:127.0.0.1:10001;127.0.0.1:10002",
		"shm:",
		"shm:/x",
		"shm:/x,",
		"shm:/x,c",
		"shm:/x,ab",
		"shm:/x,a,",
		"shm:/x,a,creat",
		"shm:/x,a,create,",
		"shm:/x,a,create,b",
		"shm:x/y,a",
		"shm:/,a",
		"shm:/a/b,a",
		"shm:,a",
		"tcp:127.0.0.1:1",
		"udp127.0.0.1",
		":udp",
	};
	char longname[400];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gpunic_link *l;

		errno = 0;
		l = gpunic_link_open_spec(bad[i]);
		if (l || errno != EINVAL)
			harness_fail(__FILE__, __LINE__, "spec \"%s\": link %p errno %d", bad[i],
				     (void *)l, errno);
	}
	CHECK(!gpunic_link_open_spec(NULL) && errno == EINVAL);
	memset(longname, 'n', sizeof(longname));
	memcpy(longname, "shm:/", 5);
	strcpy(longname + 300, ",a,create");
	CHECK(!gpunic_link_open_spec(longname) && errno == EINVAL);
}

/* A shm name without its leading '/' takes one: shm:NAME is shm:/NAME (it was refused as a
 * malformed spec, and the commands failed with no reason). */
TEST(spec_shm_name_without_slash)
{
	char spec[64], path[64];
	struct gpunic_link *l;

	snprintf(spec, sizeof(spec), "shm:gpunic-spec-%d,a,create", (int)getpid());
	snprintf(path, sizeof(path), "/dev/shm/gpunic-spec-%d", (int)getpid());
	l = gpunic_link_open_spec(spec);
	CHECK(l);
	CHECK_EQ(access(path, F_OK), 0);
	gpunic_link_close(l);
}
