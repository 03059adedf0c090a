// SPDX-License-Identifier: MIT
/*
 * The hop trace's analysis (src/internal/gpunic/hoptrace.h): the stretches between the points
 * a path stamped, in the path's order, per message, with counts that disagree flagged. The
 * stamps here are synthetic; the marks themselves exist only in a GPUNIC_HOP_TRACE build.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpunic/hoptrace.h"
#include "harness.h"

#define MSGS 100

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-6;
}

static const struct hop_segment *find(const struct hop_segment *s, size_t n, enum hop_role fr,
				      enum hop_kind fk, enum hop_role tr, enum hop_kind tk)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i].whole && s[i].from_role == fr && s[i].from_kind == fk &&
		    s[i].to_role == tr && s[i].to_kind == tk)
			return &s[i];
	return NULL;
}

/* A GPU forwarder's path: the sensor, the engine on both sides of the GPU, the sensor again;
 * message i takes (i % 10) ns longer between the engine's CQE and its WQE. */
static void stamp_gpu_path(void)
{
	for (uint64_t i = 0; i < MSGS; i++) {
		uint64_t t = i * 10000, g = i % 10;

		hop_trace_record_as(HOP_ROLE_SENSOR, HOP_SEND, t);
		hop_trace_record_as(HOP_ROLE_SENSOR, HOP_TX, t + 100);
		hop_trace_record_as(HOP_ROLE_ENGINE, HOP_RX, t + 300);
		hop_trace_record_as(HOP_ROLE_ENGINE, HOP_CQE, t + 350);
		hop_trace_record_as(HOP_ROLE_ENGINE, HOP_WQE, t + 2350 + g);
		hop_trace_record_as(HOP_ROLE_ENGINE, HOP_TX, t + 2400 + g);
		hop_trace_record_as(HOP_ROLE_SENSOR, HOP_RX, t + 2600 + g);
		hop_trace_record_as(HOP_ROLE_SENSOR, HOP_TAKE, t + 2700 + g);
	}
}

TEST(hoptrace_stretches_in_path_order)
{
	struct hop_segment s[32];
	const struct hop_segment *g;
	size_t n;

	CHECK_EQ(hop_trace_begin(MSGS), 0);
	stamp_gpu_path();
	hop_trace_end();
	n = hop_trace_segments(s, 32, 1.0);
	/* seven stretches between the eight points, then the whole path */
	CHECK_EQ(n, (size_t)8);
	CHECK(s[0].from_role == HOP_ROLE_SENSOR && s[0].from_kind == HOP_SEND);
	CHECK(s[0].to_role == HOP_ROLE_SENSOR && s[0].to_kind == HOP_TX);
	CHECK(near(s[0].p50_ns, 100));
	CHECK(near(s[1].p50_ns, 200));	/* sensor.tx -> engine.rx: the link */
	CHECK(near(s[2].p50_ns, 50));
	g = find(s, n, HOP_ROLE_ENGINE, HOP_CQE, HOP_ROLE_ENGINE, HOP_WQE);
	CHECK(g != NULL);
	/* 2000..2009 ns, ten messages each: nearest rank */
	CHECK(near(g->p50_ns, 2004));
	CHECK(near(g->p90_ns, 2008));
	CHECK_EQ(g->n, (size_t)MSGS);
	CHECK(!g->counts_differ);
	CHECK(s[7].whole);
	CHECK(s[7].from_kind == HOP_SEND && s[7].to_kind == HOP_TAKE);
	CHECK(near(s[7].p50_ns, 2704));
	for (size_t i = 0; i < n; i++)
		CHECK(!s[i].counts_differ);
}

TEST(hoptrace_ticks_converted)
{
	struct hop_segment s[32];

	CHECK_EQ(hop_trace_begin(MSGS), 0);
	stamp_gpu_path();
	hop_trace_end();
	CHECK_EQ(hop_trace_segments(s, 32, 2.0), (size_t)8);
	CHECK(near(s[0].p50_ns, 50));
	/* no room: as many as fit, the path's first first */
	CHECK_EQ(hop_trace_segments(s, 3, 1.0), (size_t)3);
	CHECK(!s[2].whole && near(s[2].p50_ns, 50));
}

TEST(hoptrace_misaligned_counts_flagged)
{
	struct hop_segment s[32];
	const struct hop_segment *x;
	size_t n;

	CHECK_EQ(hop_trace_begin(MSGS + 1), 0);
	stamp_gpu_path();
	/* a WQE looked at twice: one stamp more there than anywhere else */
	hop_trace_record_as(HOP_ROLE_ENGINE, HOP_WQE, 1);
	hop_trace_end();
	n = hop_trace_segments(s, 32, 1.0);
	x = find(s, n, HOP_ROLE_ENGINE, HOP_CQE, HOP_ROLE_ENGINE, HOP_WQE);
	CHECK(x != NULL && x->counts_differ && x->n == MSGS);
	x = find(s, n, HOP_ROLE_SENSOR, HOP_SEND, HOP_ROLE_SENSOR, HOP_TX);
	CHECK(x != NULL && !x->counts_differ);
}

TEST(hoptrace_records_only_while_on_and_within_cap)
{
	struct hop_segment s[4];

	CHECK_EQ(hop_trace_begin(2), 0);
	for (uint64_t i = 0; i < 5; i++) {
		hop_trace_record_as(HOP_ROLE_SENSOR, HOP_SEND, i * 100);
		hop_trace_record_as(HOP_ROLE_SENSOR, HOP_TAKE, i * 100 + 7);
	}
	hop_trace_end();
	/* after the end: not stamped */
	hop_trace_record_as(HOP_ROLE_SENSOR, HOP_SEND, 0);
	hop_trace_record_as(HOP_ROLE_NONE, HOP_SEND, 0);
	CHECK_EQ(hop_trace_segments(s, 4, 1.0), (size_t)1);
	CHECK_EQ(s[0].n, (size_t)2);
	CHECK(!s[0].whole && !s[0].counts_differ && near(s[0].p50_ns, 7));
}

TEST(hoptrace_thread_role_decides)
{
	struct hop_segment s[4];
	char name[24];

	CHECK_EQ(hop_trace_begin(4), 0);
	hop_trace_role(HOP_ROLE_NONE);
	hop_trace_record(HOP_SEND, 5);	/* no role: nothing */
	hop_trace_role(HOP_ROLE_EXECUTOR);
	hop_trace_record(HOP_TAKE, 10);
	hop_trace_record(HOP_POST, 35);
	hop_trace_role(HOP_ROLE_NONE);
	hop_trace_end();
	CHECK_EQ(hop_trace_segments(s, 4, 1.0), (size_t)1);
	CHECK(s[0].from_role == HOP_ROLE_EXECUTOR && s[0].from_kind == HOP_TAKE);
	CHECK(near(s[0].p50_ns, 25));
	CHECK(!strcmp(hop_point_name(HOP_ROLE_EXECUTOR, HOP_POST, name, sizeof(name)),
		      "executor.post"));
	CHECK(!strcmp(hop_point_name(HOP_ROLE_NONE, HOP_POST, name, sizeof(name)), "?"));
}

TEST(hoptrace_nothing_stamped_reports_nothing)
{
	struct hop_segment s[4];
	char buf[256] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	CHECK(f != NULL);
	CHECK_EQ(hop_trace_begin(4), 0);
	hop_trace_end();
	CHECK_EQ(hop_trace_segments(s, 4, 1.0), (size_t)0);
	hop_trace_report(f, "cpu");
	fclose(f);
	/* a build without the marks prints nothing at all; one with them says so */
	if (hop_trace_built())
		CHECK(strstr(buf, "nothing stamped") != NULL);
	else
		CHECK_EQ(buf[0], '\0');
}
