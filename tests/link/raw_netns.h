/* SPDX-License-Identifier: MIT */
/*
 * A veth pair whose ends live in two network namespaces this process creates and removes, for the
 * raw Ethernet link tests: traffic never touches the host's own namespace. Names carry our pid,
 * so parallel runs do not collide, and namespaces a killed run left behind (its pid gone) are
 * removed by the next run. Skips, with the reason, when not root, without iproute2 or without
 * network namespaces.
 */
#ifndef GPUNIC_TEST_RAW_NETNS_H
#define GPUNIC_TEST_RAW_NETNS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NETNS_DIR "/var/run/netns"
#define NETNS_PREFIX "gpunic-t-"

struct netns_pair {
	char ns[2][48];         /* gpunic-t-PID-a, -b */
	char ifname[2][16];     /* the veth end in each */
	int fd[2];
	int home;               /* our own namespace, to come back to */
};

static struct netns_pair *netns_live;

/* Runs a shell command line quietly; its exit status. */
static inline int netns_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int netns_sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static inline void netns_remove(void)
{
	struct netns_pair *p = netns_live;

	if (!p)
		return;
	netns_live = NULL;
	if (p->home >= 0)
		setns(p->home, CLONE_NEWNET);
	for (int i = 0; i < 2; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		/* the veth pair goes with its namespaces */
		if (p->ns[i][0])
			netns_sh("ip netns del %s", p->ns[i]);
	}
}

static inline void netns_on_signal(int sig)
{
	netns_remove();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Namespaces of runs whose process is gone (killed by a timeout, say). */
static inline void netns_remove_stale(void)
{
	DIR *d = opendir(NETNS_DIR);
	struct dirent *e;
	long pid;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, NETNS_PREFIX, strlen(NETNS_PREFIX)))
			continue;
		pid = strtol(e->d_name + strlen(NETNS_PREFIX), NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH)
			netns_sh("ip netns del %s", e->d_name);
	}
	closedir(d);
}

/* Enters end @i's namespace (-1: our own) for the calls that open sockets there. */
static inline void netns_enter(const struct netns_pair *p, int i)
{
	CHECK_EQ(setns(i < 0 ? p->home : p->fd[i], CLONE_NEWNET), 0);
}

/*
 * Creates the pair: end i is ifname[i] in ns[i], up, with MAC @mac[i] and MTU @mtu, and no IP
 * address (the kernel there ignores RoCEv2 frames: they are not for any of its addresses).
 */
static inline void netns_setup(struct netns_pair *p, const uint8_t mac[2][6], unsigned mtu)
{
	char path[96];

	memset(p, 0, sizeof(*p));
	p->fd[0] = p->fd[1] = p->home = -1;
	if (geteuid() != 0)
		SKIP("needs root: network namespaces, veth pairs and raw sockets");
	if (netns_sh("ip -V"))
		SKIP("no iproute2 (ip): install iproute2");
	netns_remove_stale();
	for (int i = 0; i < 2; i++) {
		snprintf(p->ns[i], sizeof(p->ns[i]), NETNS_PREFIX "%d-%c", (int)getpid(), 'a' + i);
		snprintf(p->ifname[i], sizeof(p->ifname[i]), "gt%d%c", (int)getpid() % 1000000,
			 'a' + i);
	}
	netns_live = p;
	atexit(netns_remove);
	signal(SIGTERM, netns_on_signal);
	signal(SIGINT, netns_on_signal);
	signal(SIGABRT, netns_on_signal);
	for (int i = 0; i < 2; i++) {
		if (netns_sh("ip netns add %s", p->ns[i])) {
			p->ns[i][0] = '\0';
			netns_remove();
			SKIP("network namespaces unavailable (ip netns add failed)");
		}
	}
	if (netns_sh("ip link add %s netns %s type veth peer name %s netns %s", p->ifname[0],
		     p->ns[0], p->ifname[1], p->ns[1])) {
		netns_remove();
		SKIP("no veth pairs (ip link add type veth failed)");
	}
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(netns_sh("ip -n %s link set %s address %02x:%02x:%02x:%02x:%02x:%02x mtu %u up",
				  p->ns[i], p->ifname[i], mac[i][0], mac[i][1], mac[i][2],
				  mac[i][3], mac[i][4], mac[i][5], mtu), 0);
		/* no IPv6 chatter (router solicitations, MLD) on the pair */
		netns_sh("ip netns exec %s sysctl -qw net.ipv6.conf.all.disable_ipv6=1", p->ns[i]);
		snprintf(path, sizeof(path), NETNS_DIR "/%s", p->ns[i]);
		p->fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		CHECK(p->fd[i] >= 0);
	}
	p->home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK(p->home >= 0);
}

#endif /* GPUNIC_TEST_RAW_NETNS_H */
