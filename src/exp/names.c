// SPDX-License-Identifier: MIT
/*
 * The names of the experiment's choices (mode, work, handler, executor), as the command line
 * takes them and the reports print them: each choice's name and its parse, side by side.
 */
#include <errno.h>
#include <string.h>

#include "exp_loc.h"

const char *lb_mode_name(enum lb_mode m)
{
	return m == LB_MODE_SEND ? "send" : "write-imm";
}

int lb_mode_parse(const char *s, enum lb_mode *m)
{
	if (strcmp(s, "write-imm") == 0)
		*m = LB_MODE_WRITE_IMM;
	else if (strcmp(s, "send") == 0)
		*m = LB_MODE_SEND;
	else
		return EINVAL;
	return 0;
}

const char *lb_work_name(uint32_t work)
{
	return work == GPUNIC_LOOP_WORK_ADD_ONE ? "add-one" : "none";
}

int lb_work_parse(const char *s, uint32_t *work)
{
	if (strcmp(s, "none") == 0)
		*work = GPUNIC_LOOP_WORK_NONE;
	else if (strcmp(s, "add-one") == 0)
		*work = GPUNIC_LOOP_WORK_ADD_ONE;
	else
		return EINVAL;
	return 0;
}

const char *lb_handler_name(enum gpunic_handler_mode h)
{
	switch (h) {
	case GPUNIC_HANDLER_GPU_DB:
		return "GPU_DB";
	case GPUNIC_HANDLER_CPU_PROXY:
		return "CPU_PROXY";
	case GPUNIC_HANDLER_GPU_BF:
		return "GPU_BF";
	default:
		return "AUTO";
	}
}

int lb_handler_parse(const char *s, enum gpunic_handler_mode *h)
{
	if (strcmp(s, "gpu-db") == 0)
		*h = GPUNIC_HANDLER_GPU_DB;
	else if (strcmp(s, "cpu-proxy") == 0)
		*h = GPUNIC_HANDLER_CPU_PROXY;
	else if (strcmp(s, "gpu-bf") == 0)
		*h = GPUNIC_HANDLER_GPU_BF;
	else if (strcmp(s, "auto") == 0)
		*h = GPUNIC_HANDLER_AUTO;
	else
		return EINVAL;
	return 0;
}

const char *lb_executor_name(enum lb_executor e)
{
	switch (e) {
	case LB_EXEC_GPU:
		return "gpu";
	case LB_EXEC_CPU:
		return "cpu";
	default:
		return "naive";
	}
}

int lb_executor_parse(const char *s, enum lb_executor *e)
{
	if (strcmp(s, "gpu") == 0)
		*e = LB_EXEC_GPU;
	else if (strcmp(s, "cpu") == 0)
		*e = LB_EXEC_CPU;
	else if (strcmp(s, "naive") == 0)
		*e = LB_EXEC_NAIVE;
	else
		return EINVAL;
	return 0;
}
