/* SPDX-License-Identifier: MIT */
/* What the seed generators share: one seed file written whole. */
#ifndef GPUNIC_FUZZ_SEED_FILE_H
#define GPUNIC_FUZZ_SEED_FILE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * Write @dir/@name: @head_len bytes of @head (the harness's prefix), then @len bytes of @body.
 * Return: 0, or -1 with the reason on stderr.
 */
static inline int seed_file_write(const char *dir, const char *name, const void *head,
				  size_t head_len, const void *body, size_t len)
{
	char path[512];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	ok = fwrite(head, 1, head_len, f) == head_len && fwrite(body, 1, len, f) == len;
	ok = fclose(f) == 0 && ok;
	return ok ? 0 : -1;
}

#endif
