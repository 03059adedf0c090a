// SPDX-License-Identifier: MIT
/*
 * The sender's side of the RPC protocol (include/gpunic/rpc.h): a request written into a slot,
 * and a response checked against what was sent and what was expected.
 */
#include <string.h>

#include <gpunic/rpc.h>

uint32_t gpunic_rpc_request_write(void *slot, uint32_t slot_size, uint32_t function_id,
				  const void *args, uint32_t arg_len, uint32_t request_id,
				  uint64_t ptp_timestamp)
{
	struct gpunic_rpc_header h = {
		.magic = GPUNIC_RPC_MAGIC_REQUEST,
		.function_id = function_id,
		.arg_len = arg_len,
		.request_id = request_id,
		.ptp_timestamp = ptp_timestamp,
	};

	if (slot_size < GPUNIC_RPC_HEADER_BYTES || arg_len > slot_size - GPUNIC_RPC_HEADER_BYTES)
		return 0;
	memcpy(slot, &h, sizeof(h));
	if (arg_len)
		memcpy((uint8_t *)slot + GPUNIC_RPC_HEADER_BYTES, args, arg_len);
	return GPUNIC_RPC_HEADER_BYTES + arg_len;
}

enum gpunic_rpc_check gpunic_rpc_response_check(const void *msg, uint32_t len,
						 uint32_t request_id, uint64_t ptp_timestamp,
						 int32_t want_status, const void *want,
						 uint32_t want_len)
{
	struct gpunic_rpc_response r;

	if (len < GPUNIC_RPC_HEADER_BYTES)
		return GPUNIC_RPC_CHECK_SHORT;
	memcpy(&r, msg, sizeof(r));
	if (r.result_len > len - GPUNIC_RPC_HEADER_BYTES)
		return GPUNIC_RPC_CHECK_SHORT;
	if (r.magic != GPUNIC_RPC_MAGIC_RESPONSE)
		return GPUNIC_RPC_CHECK_MAGIC;
	if (r.request_id != request_id)
		return GPUNIC_RPC_CHECK_REQUEST_ID;
	if (r.ptp_timestamp != ptp_timestamp)
		return GPUNIC_RPC_CHECK_TIMESTAMP;
	if (r.status != want_status)
		return GPUNIC_RPC_CHECK_STATUS;
	if (r.result_len != want_len)
		return GPUNIC_RPC_CHECK_LENGTH;
	if (want && want_len &&
	    memcmp((const uint8_t *)msg + GPUNIC_RPC_HEADER_BYTES, want, want_len))
		return GPUNIC_RPC_CHECK_RESULT;
	return GPUNIC_RPC_CHECK_OK;
}

static const char *const check_names[GPUNIC_RPC_CHECKS] = {
	[GPUNIC_RPC_CHECK_OK] = "ok",
	[GPUNIC_RPC_CHECK_SHORT] = "short",
	[GPUNIC_RPC_CHECK_MAGIC] = "magic",
	[GPUNIC_RPC_CHECK_REQUEST_ID] = "request_id",
	[GPUNIC_RPC_CHECK_TIMESTAMP] = "timestamp",
	[GPUNIC_RPC_CHECK_STATUS] = "status",
	[GPUNIC_RPC_CHECK_LENGTH] = "length",
	[GPUNIC_RPC_CHECK_RESULT] = "result",
};

const char *gpunic_rpc_check_name(enum gpunic_rpc_check c)
{
	return (unsigned)c < GPUNIC_RPC_CHECKS ? check_names[c] : "?";
}
