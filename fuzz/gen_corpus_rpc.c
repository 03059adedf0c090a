// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_rpc (input format in rpc_env.h): a request to each function
 * of its table, in both shapes, and one of each kind of bad input.
 *
 * Usage: fuzz_gen_corpus_rpc <dir>   (the committed seeds in fuzz/corpus/rpc came from this)
 */
#include <stdio.h>
#include <string.h>

#include <gpunic/rpc.h>

#include "rpc_env.h"
#include "seed_file.h"

static uint8_t slot[512] __attribute__((aligned(8)));

/* One seed: the mode and size bytes, then @len bytes of the slot. */
static int seed(const char *dir, const char *name, uint8_t mode, uint32_t len)
{
	const uint8_t prefix[FR_PREFIX] = { mode, 120, 60 };  /* slots of 256 and 136 bytes */

	return seed_file_write(dir, name, prefix, sizeof(prefix), slot, len);
}

static uint32_t request(const char *fn, const void *args, uint32_t arg_len)
{
	memset(slot, 0, sizeof(slot));
	return gpunic_rpc_request_write(slot, sizeof(slot), gpunic_rpc_fnv1a(fn), args, arg_len,
					0x1234, 0x0102030405060708ull);
}

int main(int argc, char **argv)
{
	static const uint8_t scatter[15] = { 9, 0xff, 0xff, 0xff, 0x7f, 0x34, 0x02,
					     1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff };
	uint8_t bytes[64];
	uint32_t i, len;
	int err = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s <dir>\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 29 + 3);
	err |= seed(argv[1], "echo", 0, request("echo", bytes, 16));
	err |= seed(argv[1], "add_one_separate", FR_MODE_SEPARATE, request("add_one", bytes, 40));
	err |= seed(argv[1], "surface_d3", 0, request("surface_d3", "\x5a", 1));
	err |= seed(argv[1], "scatter", 0, request("scatter", scatter, sizeof(scatter)));
	err |= seed(argv[1], "flip", 0, request("flip", bytes, 5));
	err |= seed(argv[1], "negate_separate", FR_MODE_SEPARATE, request("negate", bytes, 7));
	err |= seed(argv[1], "liar", 0, request("liar", "\x02", 1));
	len = request("echo", bytes, 3);
	slot[0] ^= 1;
	err |= seed(argv[1], "bad_magic_dropped", GPUNIC_RPC_CUDAQ_DROPS, len);
	err |= seed(argv[1], "unknown_function", 0, request("no_such_function", bytes, 2));
	len = request("echo", bytes, 8);
	slot[8] = 0xf0;  /* arg_len 240 > 256 - 24 */
	err |= seed(argv[1], "too_long", 0, len);
	err |= seed(argv[1], "truncated", 0, request("echo", bytes, 32) - 5);
	len = request("scatter", scatter, sizeof(scatter));
	slot[24 + 6] |= 0x80;  /* bit 15 of a 12-bit field */
	err |= seed(argv[1], "schema_unused_bit", 0, len);
	err |= seed(argv[1], "half_header", 0, request("echo", bytes, 4) - 20);
	return err ? 1 : 0;
}
