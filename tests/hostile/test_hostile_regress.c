// SPDX-License-Identifier: MIT
/*
 * Replays fuzz_recv inputs through its harness without libFuzzer: every file of the seed corpus
 * (fuzz/corpus/recv) and every saved crash or hand-made hostile input (tests/hostile/regress).
 * The harness aborts on any broken guard, stray write or bad transmitted frame, and the ASan
 * build reports any out-of-bounds access, so a passing run means each input is still handled.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned replay_dir(const char *dir)
{
	struct dirent **names;
	unsigned done = 0;
	int n = scandir(dir, &names, NULL, alphasort);

	CHECK(n >= 0);
	for (int i = 0; i < n; i++) {
		char path[4096];
		uint8_t *buf;
		long len;
		FILE *f;

		if (names[i]->d_name[0] == '.') {
			free(names[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		free(names[i]);
		f = fopen(path, "rb");
		CHECK(f);
		CHECK(!fseek(f, 0, SEEK_END));
		len = ftell(f);
		CHECK(len >= 0 && !fseek(f, 0, SEEK_SET));
		buf = malloc((size_t)len + 1);
		CHECK(buf);
		CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
		fclose(f);
		fprintf(stderr, "replay %s (%ld bytes)\n", path, len);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		done++;
	}
	free(names);
	return done;
}

TEST(fuzz_regressions)
{
	CHECK(replay_dir(HOSTILE_REGRESS_DIR) > 0);
}

TEST(fuzz_seed_corpus)
{
	CHECK(replay_dir(HOSTILE_SEED_DIR) > 0);
}
