// SPDX-License-Identifier: MIT
/*
 * Who holds a UDP port, for the message of a link that could not bind it: the socket bound to
 * the address (or to every address) in /proc/net/udp, then the process with that socket among
 * its open files. As far as this process may look: another user's processes are not readable
 * without privileges, and then the holder is simply not named.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpunic/endpoint.h"

/* The inode of the socket bound to UDP @ip:@port or 0.0.0.0:@port; 0 when none is listed. */
static unsigned long udp_inode(uint32_t ip, uint16_t port)
{
	char line[512];
	unsigned long inode = 0;
	FILE *f = fopen("/proc/net/udp", "r");

	if (!f)
		return 0;
	while (!inode && fgets(line, sizeof(line), f)) {
		unsigned int raw, p;
		unsigned long ino;

		/* sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid
		 * timeout inode: the address as the kernel stores it (network order), the port in
		 * host order */
		if (sscanf(line, " %*d: %8X:%4X %*8X:%*4X %*2X %*8X:%*8X %*2X:%*8X %*8X %*u %*d %lu",
			   &raw, &p, &ino) != 3)
			continue;
		if (p == port && (ntohl(raw) == ip || raw == 0))
			inode = ino;
	}
	fclose(f);
	return inode;
}

/* The first process with socket @inode open: "pid N (name)" into @out. Return: 0 or ENOENT. */
static int socket_owner(unsigned long inode, char *out, size_t len)
{
	char want[64], path[PATH_MAX], link[64], name[64] = "?";
	struct dirent *p, *fd;
	DIR *procs = opendir("/proc"), *fds;
	int err = ENOENT;
	FILE *f;

	if (!procs)
		return ENOENT;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (err && (p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		while (err && (fd = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, fd->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strcmp(link, want) == 0)
				err = 0;
		}
		closedir(fds);
		if (err)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fgets(name, sizeof(name), f))
				name[strcspn(name, "\n")] = '\0';
			fclose(f);
		}
		snprintf(out, len, "pid %s (%s)", p->d_name, name);
	}
	closedir(procs);
	return err;
}

int gpunic_ep_udp_holder(uint32_t ip, uint16_t port, char *out, size_t len)
{
	unsigned long inode = udp_inode(ip, port);

	if (!len)
		return EINVAL;
	out[0] = '\0';
	return inode ? socket_owner(inode, out, len) : ENOENT;
}
