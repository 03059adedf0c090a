// SPDX-License-Identifier: MIT
/*
 * A consumer of the installed library's version call: the loaded library must be the release
 * its headers describe, and name a commit.
 */
#include <stdio.h>
#include <string.h>

#include <gpunic/version.h>

int main(void)
{
	const char *v = gpunic_version(), *c = gpunic_commit();

	printf("gpunic %s (commit %s), headers %s\n", v, c, GPUNIC_VERSION_STRING);
	if (strcmp(v, GPUNIC_VERSION_STRING) || !*c) {
		fprintf(stderr, "version_check: the library is not the headers' release\n");
		return 1;
	}
	return 0;
}
