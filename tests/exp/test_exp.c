// SPDX-License-Identifier: MIT
/* The loopback experiment as a library: message checks, names, a run's accounting, its report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "exp_loc.h"
#include "loopback.h"
#include "timing.h"

TEST(msg_fill_check)
{
	uint8_t m[LB_MSG_MAX];
	uint64_t word = lb_word(7, 12345), w = 0, ts = 0;

	lb_msg_fill(m, 64, word, 999);
	CHECK_EQ(lb_msg_check(m, 64, 64, false, &w, &ts), LB_MSG_OK);
	CHECK_EQ(w, word);
	CHECK_EQ(ts, 999);
	/* the same bytes plus one each: the forwarder's add-one work */
	for (int i = 0; i < 64; i++)
		m[i]++;
	CHECK_EQ(lb_msg_check(m, 64, 64, true, &w, &ts), LB_MSG_OK);
	CHECK_EQ(w, word);
	CHECK(lb_msg_check(m, 64, 64, false, &w, &ts) != LB_MSG_OK);
	for (int i = 0; i < 64; i++)
		m[i]--;
	CHECK_EQ(lb_msg_check(m, 32, 64, false, &w, &ts), LB_MSG_BAD_LEN);
	/* a flipped payload byte is blamed on its message: the header still comes back */
	m[40] ^= 0x10;
	w = ts = 0;
	CHECK_EQ(lb_msg_check(m, 64, 64, false, &w, &ts), LB_MSG_BAD_PATTERN);
	CHECK_EQ(w, word);
	CHECK_EQ(ts, 999);
	/* shorter than a header: nothing can be attributed, and nothing is read past @len */
	CHECK(lb_msg_check(m, LB_MSG_MIN - 1, 64, false, &w, &ts) != LB_MSG_OK);
	/* the epoch tags a run: another run's word differs */
	CHECK(lb_word(1, 5) != lb_word(2, 5));
	CHECK_EQ(lb_word(1, LB_SEQ_MASK + 6), lb_word(1, 5));
}

/* The message format byte by byte, as it was first written: the word-at-a-time fill and check
 * must keep it (a GPU or a peer of another build checks the same bytes). */
static void ref_fill(uint8_t *m, uint32_t len, uint64_t word, uint64_t ts)
{
	uint64_t x = 0;

	for (int i = 0; i < 8; i++) {
		m[i] = (uint8_t)(word >> (8 * i));
		m[8 + i] = (uint8_t)(ts >> (8 * i));
	}
	for (uint32_t i = LB_MSG_MIN; i < len; i++) {
		uint32_t k = i - LB_MSG_MIN;

		if ((k & 7) == 0)
			x = lb_mix64(word * 0x9E3779B97F4A7C15ull ^ ts ^ ((uint64_t)(k >> 3) << 40));
		m[i] = (uint8_t)(x >> (8 * (k & 7)));
	}
}

TEST(msg_format_every_length_and_byte)
{
	uint8_t m[LB_MSG_MAX], ref[LB_MSG_MAX];
	uint64_t word = lb_word(3, 777), ts = 0x0123456789abcdefull, w, t;

	for (uint32_t len = LB_MSG_MIN; len <= 80; len++) {
		memset(m, 0xee, sizeof(m));
		lb_msg_fill(m, len, word, ts);
		ref_fill(ref, len, word, ts);
		CHECK_EQ(memcmp(m, ref, len), 0);
		CHECK_EQ(m[len], 0xee);	/* nothing written past the message */
		for (int add = 0; add < 2; add++) {
			for (uint32_t i = 0; i < len; i++)
				m[i] = (uint8_t)(ref[i] + add);
			CHECK_EQ(lb_msg_check(m, len, len, add, &w, &t), LB_MSG_OK);
			CHECK_EQ(w, word);
			CHECK_EQ(t, ts);
			/* any one payload byte off by one is caught, borrows included */
			for (uint32_t i = LB_MSG_MIN; i < len; i++) {
				m[i]++;
				CHECK_EQ(lb_msg_check(m, len, len, add, &w, &t), LB_MSG_BAD_PATTERN);
				m[i] -= 2;
				CHECK_EQ(lb_msg_check(m, len, len, add, &w, &t), LB_MSG_BAD_PATTERN);
				m[i]++;
			}
		}
	}
}

TEST(names_round_trip)
{
	enum lb_mode m;
	enum lb_executor e;
	enum gpunic_handler_mode h;
	uint32_t w;

	for (int i = LB_MODE_WRITE_IMM; i <= LB_MODE_SEND; i++) {
		CHECK_EQ(lb_mode_parse(lb_mode_name((enum lb_mode)i), &m), 0);
		CHECK_EQ(m, i);
	}
	for (int i = LB_EXEC_GPU; i <= LB_EXEC_NAIVE; i++) {
		CHECK_EQ(lb_executor_parse(lb_executor_name((enum lb_executor)i), &e), 0);
		CHECK_EQ(e, i);
	}
	/* the reports name handlers as the NIC's enum does */
	CHECK_EQ(lb_handler_parse("gpu-bf", &h), 0);
	CHECK_EQ(h, GPUNIC_HANDLER_GPU_BF);
	CHECK(strcmp(lb_handler_name(h), "GPU_BF") == 0);
	CHECK_EQ(lb_work_parse("add-one", &w), 0);
	CHECK(strcmp(lb_work_name(w), "add-one") == 0);
	CHECK_EQ(lb_mode_parse("fast", &m), EINVAL);
	CHECK_EQ(lb_executor_parse("", &e), EINVAL);
	CHECK_EQ(lb_handler_parse("gpu", &h), EINVAL);
	CHECK_EQ(lb_work_parse("add-two", &w), EINVAL);
}

/* A sensor and a CPU forwarder on the two ends of a shm cable in this process; @imp wraps the
 * sensor's end in the impairment link when not NULL. */
static void rig_open(struct lb_pair *r, enum lb_mode mode, uint32_t work,
		     const struct gpunic_impair_attr *imp)
{
	struct lb_fwd_cfg fc = {
		.exec = LB_EXEC_CPU,
		.handler = GPUNIC_HANDLER_AUTO,
		.mode = mode,
		.work = work,
		.slots = LB_DEFAULT_SLOTS,
		.engine_cpu = -1,
		.exec_cpu = -1,
		.inline_engine = true,
	};
	struct lb_pair_cfg pc = { .mode = mode, .size = 64, .impair = imp };

	CHECK_EQ(lb_pair_open(r, &fc, &pc), 0);
}

static void rig_run(struct lb_pair *r, uint64_t count, bool add_one, uint32_t epoch,
		    uint64_t timeout_ms, struct stats_rec *rec, struct lb_run_result *res)
{
	/* closed loop: the next message goes when the last is back, so that a slow CI box
	 * never turns into loss */
	struct lb_run_cfg cfg = {
		.count = count,
		.closed_loop = true,
		.expect_add_one = add_one,
		.timeout_ns = timeout_ms * 1000000ull,
		.epoch = epoch,
	};

	CHECK_EQ(lb_sensor_run(r->s, &cfg, rec, res), 0);
	CHECK_EQ(res->sent, count);
}

static void rig_close(struct lb_pair *r)
{
	struct lb_fwd_result fr;

	CHECK_EQ(lb_fwd_stop(r->f, &fr), 0);
	lb_pair_close(r);
}

TEST(run_clean_both_modes)
{
	struct stats_rec rec = { 0 };
	struct lb_run_result res;
	struct lb_pair r;

	timing_init();
	CHECK_EQ(stats_rec_init(&rec, 2000), 0);
	for (int mode = LB_MODE_WRITE_IMM; mode <= LB_MODE_SEND; mode++) {
		rig_open(&r, (enum lb_mode)mode, GPUNIC_LOOP_WORK_ADD_ONE, NULL);
		rig_run(&r, 1000, true, 1, 200, &rec, &res);
		CHECK_EQ(res.verified, 1000);
		CHECK_EQ(res.counts.lost, 0);
		CHECK_EQ(res.counts.dup, 0);
		CHECK_EQ(res.counts.corrupt, 0);
		CHECK_EQ(res.stale, 0);
		rig_close(&r);
	}
	stats_rec_free(&rec);
}

/* The forwarder adds one, the sensor expects a plain echo: the header comes back changed, so no
 * reply is this run's; each is accounted once (stale or unmatched), none verified, all lost.
 * No reply ever counts as received, so the drain always runs its whole timeout after the last
 * one: 2 s, because a loaded 2-core box can keep the forwarder's threads off the CPU for more
 * than the 100 ms this once had, and a reply after the drain is counted nowhere. */
TEST(run_wrong_work_never_verified)
{
	struct stats_rec rec = { 0 };
	struct lb_run_result res;
	struct lb_run_cfg cfg = {
		.count = 300,
		.interval_ns = 50000,
		.rephase = true,
		.timeout_ns = 2000000000ull,
		.epoch = 1,
	};
	struct lb_pair r;

	timing_init();
	CHECK_EQ(stats_rec_init(&rec, 500), 0);
	rig_open(&r, LB_MODE_SEND, GPUNIC_LOOP_WORK_ADD_ONE, NULL);
	CHECK_EQ(lb_sensor_run(r.s, &cfg, &rec, &res), 0);
	CHECK_EQ(res.sent, 300);
	CHECK_EQ(res.verified, 0);
	CHECK_EQ(res.counts.lost, 300);
	CHECK_EQ(res.stale + res.corrupt_unmatched, 300);
	rig_close(&r);
	stats_rec_free(&rec);
}

/* Frames dropped and duplicated on the wire: what is counted adds up to what was sent. */
TEST(run_impaired_accounting)
{
	struct gpunic_impair_attr imp = { .seed = 42, .drop_ppm = 50000, .duplicate_ppm = 50000 };
	struct stats_rec rec = { 0 };
	struct lb_run_result res;
	struct lb_pair r;
	char *json = NULL;
	size_t jlen = 0;
	FILE *f;
	struct stats_summary sum;

	timing_init();
	CHECK_EQ(stats_rec_init(&rec, 3000), 0);
	rig_open(&r, LB_MODE_SEND, GPUNIC_LOOP_WORK_NONE, &imp);
	/* a lost reply costs the closed loop its timeout: keep it short */
	rig_run(&r, 2000, false, 3, 10, &rec, &res);
	CHECK(res.counts.lost > 0);
	CHECK(res.counts.dup > 0);
	CHECK_EQ(res.counts.corrupt, 0);
	/* every message is verified once or lost: duplicates are extra, never instead */
	CHECK_EQ(res.verified + res.counts.lost, 2000);
	/* the report says the same numbers */
	CHECK_EQ(stats_summarize(&rec, &sum), 0);
	f = open_memstream(&json, &jlen);
	CHECK(f != NULL);
	lb_json_run(f, &sum, &res);
	fclose(f);
	{
		char want[64];

		snprintf(want, sizeof(want), "\"lost\": %llu", (unsigned long long)res.counts.lost);
		CHECK(strstr(json, want) != NULL);
		snprintf(want, sizeof(want), "\"verified\": %llu", (unsigned long long)res.verified);
		CHECK(strstr(json, want) != NULL);
	}
	free(json);
	rig_close(&r);
	stats_rec_free(&rec);
}

/* A second run with a new epoch: the first run's late replies would be stale, never counted
 * as this run's. Run back to back, nothing is lost or stale on a clean cable. */
TEST(run_epochs)
{
	struct stats_rec rec = { 0 };
	struct lb_run_result res;
	struct lb_pair r;

	timing_init();
	CHECK_EQ(stats_rec_init(&rec, 500), 0);
	rig_open(&r, LB_MODE_WRITE_IMM, GPUNIC_LOOP_WORK_NONE, NULL);
	rig_run(&r, 200, false, 1, 200, &rec, &res);
	CHECK_EQ(res.verified, 200);
	rig_run(&r, 200, false, 2, 200, &rec, &res);
	CHECK_EQ(res.verified, 200);
	CHECK_EQ(res.stale, 0);
	CHECK_EQ(res.counts.lost, 0);
	rig_close(&r);
	stats_rec_free(&rec);
}
