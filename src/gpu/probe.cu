// SPDX-License-Identifier: MIT
/* Find the CUDA device and say what it can do for gpunic. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"

/*
 * Why the runtime found no device, in the user's terms: with no NVIDIA driver at all the
 * runtime only says "CUDA driver version is insufficient for CUDA runtime version".
 */
static const char *probe_root_cause(const struct gpunic_gpu_info *info)
{
	if (access("/proc/driver/nvidia/version", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0)
		return "no NVIDIA kernel driver loaded (no /proc/driver/nvidia, no /dev/nvidia0)";
	if (access("/dev/nvidia0", F_OK) != 0)
		return "the NVIDIA driver is loaded but /dev/nvidia0 is missing (a container without "
		       "the GPU passed in?)";
	if (!info->driver_version)
		return "no CUDA driver library (libcuda.so.1) found";
	if (info->driver_version < info->runtime_version)
		return "the CUDA driver is older than the runtime gpunic was built with";
	return NULL;
}

extern "C" int gpunic_gpu_probe(int device, struct gpunic_gpu_info *info)
{
	struct cudaDeviceProp prop;
	cudaError_t err;
	int count = 0;

	memset(info, 0, sizeof(*info));
	info->device = device;
	cudaDriverGetVersion(&info->driver_version);
	cudaRuntimeGetVersion(&info->runtime_version);
	err = cudaGetDeviceCount(&count);
	if (err != cudaSuccess || count == 0) {
		const char *cause = probe_root_cause(info);

		snprintf(info->reason, sizeof(info->reason), "no CUDA device: %s (CUDA: %s)",
			 cause ? cause : "none found",
			 err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
		return ENODEV;
	}
	if (device < 0 || device >= count) {
		snprintf(info->reason, sizeof(info->reason), "CUDA device %d does not exist (%d found)",
			 device, count);
		return ENODEV;
	}
	err = cudaGetDeviceProperties(&prop, device);
	if (err != cudaSuccess) {
		snprintf(info->reason, sizeof(info->reason), "cudaGetDeviceProperties: %s",
			 cudaGetErrorString(err));
		return ENODEV;
	}
	memcpy(info->name, prop.name, sizeof(info->name) - 1);
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->sm_count = prop.multiProcessorCount;
	info->can_map_host = prop.canMapHostMemory != 0;
	info->unified_addressing = prop.unifiedAddressing != 0;
	info->present = true;
	return 0;
}
