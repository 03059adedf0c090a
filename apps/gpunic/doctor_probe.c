// SPDX-License-Identifier: MIT
/*
 * gpunic doctor, the looking part: the GDRCopy sanity suite, the GPU, every memory placement
 * (each proven by a small buffer), the queue placement policy, the host's IOMMU and CPUs, and
 * every link kind. Nothing here judges; doctor_report.c does.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor_report.h"
#include "gpunic/link.h"
#include "gpunic/log.h"
#include "gpunic/wire.h"

#define DOC_PROBE_BYTES 4096

static unsigned count_cpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* The IOMMU: /sys/class/iommu lists its units; the kernel command line says how it runs. */
static void probe_iommu(struct doc_facts *f)
{
	char line[4096], *save = NULL, *tok;
	struct dirent *de;
	size_t used = 0;
	FILE *fp;
	DIR *d;

	d = opendir("/sys/class/iommu");
	if (d) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				f->iommu_units++;
		closedir(d);
	}
	f->iommu_on = f->iommu_units > 0;
	fp = fopen("/proc/cmdline", "r");
	if (!fp)
		return;
	if (fgets(line, sizeof(line), fp)) {
		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			if (!strstr(tok, "iommu"))
				continue;
			if (strcmp(tok, "iommu=pt") == 0 || strstr(tok, "iommu.passthrough=1"))
				f->iommu_pt = true;
			used += (size_t)snprintf(f->iommu_cmdline + used,
						 used < sizeof(f->iommu_cmdline) ?
						 sizeof(f->iommu_cmdline) - used : 0,
						 "%s%s", used ? " " : "", tok);
			if (used >= sizeof(f->iommu_cmdline))
				break;
		}
	}
	fclose(fp);
}

static void probe_nvidia(struct doc_facts *f)
{
	FILE *fp = fopen("/proc/driver/nvidia/version", "r");

	f->nvidia_dev = access("/dev/nvidia0", F_OK) == 0;
	if (!fp)
		return;
	if (fgets(f->nvidia_driver, sizeof(f->nvidia_driver), fp))
		f->nvidia_driver[strcspn(f->nvidia_driver, "\n")] = '\0';
	fclose(fp);
}

/* Allocate a small buffer of @p, write a pattern, read it back, free it. */
static void probe_placement(gpunic_mem_t *mem, enum gpunic_mem_placement p,
			    struct doc_placement *out)
{
	uint8_t pat[64], back[64];
	struct gpunic_mem_buf *b;
	int ret;

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 37 + p);
	b = gpunic_mem_alloc(mem, DOC_PROBE_BYTES, 0, p);
	if (!b) {
		out->err = errno;
		snprintf(out->detail, sizeof(out->detail), "allocation of %d bytes failed: %s",
			 DOC_PROBE_BYTES, strerror(out->err));
		return;
	}
	out->got = b->placement;
	out->backend = b->backend;
	ret = gpunic_mem_write(mem, b, 100, pat, sizeof(pat));
	if (!ret)
		ret = gpunic_mem_read(mem, b, 100, back, sizeof(back));
	if (!ret && memcmp(pat, back, sizeof(pat)))
		ret = EIO;
	if (ret) {
		out->err = ret;
		snprintf(out->detail, sizeof(out->detail),
			 "allocated (backend %s) but a write/read-back failed: %s",
			 gpunic_mem_backend_str(b->backend), strerror(ret));
	} else {
		out->ok = true;
		snprintf(out->detail, sizeof(out->detail),
			 "%d bytes allocated, written and read back (backend %s)", DOC_PROBE_BYTES,
			 gpunic_mem_backend_str(b->backend));
	}
	gpunic_mem_free(mem, b);
}

static void probe_mem(const struct doc_request *req, struct doc_facts *f)
{
	struct gpunic_mem_attr attr = { .cuda_device = req->cuda_device };
	gpunic_mem_t *mem;

	mem = gpunic_mem_open(&attr);
	if (!mem) {
		for (int p = 0; p < GPUNIC_MEM_PLACEMENT_MAX; p++) {
			f->placements[p].err = errno;
			snprintf(f->placements[p].detail, sizeof(f->placements[p].detail),
				 "gpunic_mem_open: %s", strerror(errno));
		}
		return;
	}
	f->mem_open = true;
	gpunic_mem_query(mem, &f->caps);
	for (int p = 0; p < GPUNIC_MEM_PLACEMENT_MAX; p++) {
		/* no GPU: its placements are an absence to report, not an allocation to fail
		 * (the library would log each failure as an error) */
		if (p != GPUNIC_MEM_HOST && !f->caps.gpu) {
			f->placements[p].err = ENODEV;
			snprintf(f->placements[p].detail, sizeof(f->placements[p].detail),
				 "not tried: %s", f->caps.gpu_reason);
			continue;
		}
		probe_placement(mem, (enum gpunic_mem_placement)p, &f->placements[p]);
	}
	for (int k = 0; k < GPUNIC_QUEUE_KIND_MAX; k++)
		f->queues[k].placement =
			gpunic_mem_placement_for(mem, (enum gpunic_queue_kind)k,
						 req->executor == DOC_EXEC_GPU, &f->queues[k].why);
	gpunic_mem_close(mem);
}

/* ---------------------------------------------------------------- links */

/* The likely cause of a failed link open, for the spec or object named @what. */
static void link_cause(struct doc_link *l, const char *what)
{
	const char *why;

	switch (l->err) {
	case EADDRINUSE:
		why = "the port is in use (EADDRINUSE): another gpunic, or the kernel's "
		      "Soft-RoCE (rdma_rxe) holds the RoCEv2 port on that address; pick another "
		      "address or stop it";
		break;
	case EADDRNOTAVAIL:
		why = "the address is not configured on this host (EADDRNOTAVAIL)";
		break;
	case EACCES:
	case EPERM:
		why = "permissions (EACCES/EPERM)";
		break;
	case EEXIST:
		why = "a shm object of that name exists: another endpoint created it, or a "
		      "crashed run left it (remove it from /dev/shm)";
		break;
	case ENOENT:
		why = "nothing to attach to: the end that creates the cable (,create) must run "
		      "first, or /dev/shm is missing";
		break;
	case EINVAL:
		why = "malformed spec, or the shm object is not a gpunic cable";
		break;
	default:
		why = strerror(l->err);
		break;
	}
	snprintf(l->cause, sizeof(l->cause), "%s: %s", what, why);
}

static void try_spec(struct doc_link *l, const char *name, const char *spec)
{
	struct gpunic_link *link;

	l->name = name;
	snprintf(l->what, sizeof(l->what), "open %s", spec);
	link = gpunic_link_open_spec(spec);
	if (!link) {
		l->err = errno;
		snprintf(l->detail, sizeof(l->detail), "cannot open: %s", strerror(l->err));
		link_cause(l, spec);
		return;
	}
	l->ok = true;
	snprintf(l->detail, sizeof(l->detail), "opens (%s link, MTU %u)", link->ops->name,
		 link->mtu);
	gpunic_link_close(link);
}

/* A UDP port on 127.0.0.1 that nobody holds right now, for the dgram check; 0 if none. */
static uint16_t free_udp_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	uint16_t port = 0;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static void probe_shm(struct doc_link *l)
{
	char spec_a[96], spec_b[96];
	struct gpunic_link *a, *b;

	l->name = "shm";
	snprintf(spec_a, sizeof(spec_a), "shm:/gpunic-doctor-%d,a,create", (int)getpid());
	snprintf(spec_b, sizeof(spec_b), "shm:/gpunic-doctor-%d,b", (int)getpid());
	snprintf(l->what, sizeof(l->what), "create %s, attach its b end", spec_a);
	a = gpunic_link_open_spec(spec_a);
	if (!a) {
		l->err = errno;
		snprintf(l->detail, sizeof(l->detail), "create: %s", strerror(l->err));
		link_cause(l, spec_a);
		return;
	}
	b = gpunic_link_open_spec(spec_b);
	if (!b) {
		l->err = errno;
		snprintf(l->detail, sizeof(l->detail), "attach: %s", strerror(l->err));
		link_cause(l, spec_b);
	} else {
		l->ok = true;
		snprintf(l->detail, sizeof(l->detail), "created and attached (MTU %u)", a->mtu);
		gpunic_link_close(b);
	}
	gpunic_link_close(a);
}

static void probe_packet(struct doc_link *l)
{
	int fd;

	l->name = "packet";
	snprintf(l->what, sizeof(l->what), "socket(AF_PACKET, SOCK_RAW, ETH_P_ALL)");
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		l->err = errno;
		snprintf(l->detail, sizeof(l->detail), "cannot open: %s", strerror(l->err));
		snprintf(l->cause, sizeof(l->cause), "%s",
			 l->err == EPERM || l->err == EACCES ?
			 "permissions: raw sockets need CAP_NET_RAW (root, or setcap "
			 "cap_net_raw+ep on the binary)" :
			 "raw (AF_PACKET) sockets unavailable in this kernel or namespace");
		return;
	}
	close(fd);
	l->ok = true;
	snprintf(l->detail, sizeof(l->detail), "opens: this process has CAP_NET_RAW");
}

/* ---------------------------------------------------------------- raw Ethernet links */

#define DOC_VETH "gpunic-doc0"

/* room left for it after "opens (MTU n): " in a detail */
static char raw_said[DOC_TEXT - 32];

/* The links say why an open failed, and how an xdp link runs, through the log. */
static void raw_sink(int level, const char *line, void *arg)
{
	const char *p = line;

	(void)level;
	(void)arg;
	/* "gpunic: LEVEL: FUNCTION: " goes; what the link said stays */
	for (int i = 0; i < 3 && strstr(p, ": "); i++)
		p = strstr(p, ": ") + 2;
	snprintf(raw_said, sizeof(raw_said), "%s", p);
	raw_said[strcspn(raw_said, "\n")] = '\0';
}

static void raw_try(struct doc_link *l, const char *name, const char *spec)
{
	struct gpunic_link *link;

	l->name = name;
	snprintf(l->what, sizeof(l->what), "open %s on a veth pair in a private namespace", spec);
	raw_said[0] = '\0';
	link = gpunic_link_open_spec(spec);
	if (!link) {
		l->err = errno;
		snprintf(l->detail, sizeof(l->detail), "cannot open: %s", strerror(l->err));
		snprintf(l->cause, sizeof(l->cause), "%s", raw_said[0] ? raw_said :
			 strerror(l->err));
		return;
	}
	l->ok = true;
	snprintf(l->detail, sizeof(l->detail), "opens (MTU %u)%s%s", link->mtu,
		 raw_said[0] ? ": " : "", raw_said);
	gpunic_link_close(link);
}

/* In the child: a namespace of its own with a veth pair, where the links are opened for real
 * and nothing of the host's sees an XDP program or a frame. */
static int raw_child(int out)
{
	struct doc_link l[3];

	memset(l, 0, sizeof(l));
	if (unshare(CLONE_NEWNET))
		return 2;
	if (system("ip link add " DOC_VETH " type veth peer name gpunic-doc1 >/dev/null 2>&1 && "
		   "ip link set " DOC_VETH " up >/dev/null 2>&1 && "
		   "ip link set gpunic-doc1 up >/dev/null 2>&1"))
		return 3;
	gpunic_log_set_level(GPUNIC_LOG_INFO);
	gpunic_log_set_sink(raw_sink, NULL);
	raw_try(&l[0], "packet", "packet:" DOC_VETH);
	raw_try(&l[1], "xdp", "xdp:" DOC_VETH ":0");
	raw_try(&l[2], "xdp-skb", "xdp:" DOC_VETH ":0,skb");
	return write(out, l, sizeof(l)) == (ssize_t)sizeof(l) ? 0 : 4;
}

static void raw_unprobed(struct doc_facts *f, int err, const char *cause)
{
	static const char *const names[2] = { "xdp", "xdp-skb" };

	/* a build without libxdp says so before it looks for the interface */
	raw_said[0] = '\0';
	gpunic_log_set_sink(raw_sink, NULL);
	if (!gpunic_link_open_spec("xdp:gpunic-doc-none") && errno == EOPNOTSUPP) {
		err = EOPNOTSUPP;
		cause = raw_said;
	}
	gpunic_log_set_sink(NULL, NULL);
	for (int i = 0; i < 2; i++) {
		struct doc_link *l = &f->links[DOC_LINK_XDP + i];

		l->name = names[i];
		l->err = err;
		snprintf(l->what, sizeof(l->what), "open an xdp link on a private veth pair");
		snprintf(l->detail, sizeof(l->detail), "not probed");
		snprintf(l->cause, sizeof(l->cause), "%s", cause);
	}
}

static void probe_raw(struct doc_facts *f)
{
	struct doc_link l[3];
	int fds[2], st = 0;
	ssize_t n = 0;
	pid_t pid;

	if (geteuid() != 0) {
		probe_packet(&f->links[DOC_LINK_PACKET]);
		raw_unprobed(f, EPERM, "not root: the xdp link needs CAP_NET_ADMIN and CAP_BPF, "
			     "and this probe a private namespace");
		return;
	}
	if (pipe(fds))
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(raw_child(fds[1]));
	}
	close(fds[1]);
	if (pid > 0) {
		n = read(fds[0], l, sizeof(l));
		waitpid(pid, &st, 0);
	}
	close(fds[0]);
	if (n == (ssize_t)sizeof(l)) {
		f->links[DOC_LINK_PACKET] = l[0];
		f->links[DOC_LINK_XDP] = l[1];
		f->links[DOC_LINK_XDP_SKB] = l[2];
		return;
	}
	/* no private namespace or no veth pair: say what can be known without one */
	probe_packet(&f->links[DOC_LINK_PACKET]);
	raw_unprobed(f, EOPNOTSUPP, WIFEXITED(st) && WEXITSTATUS(st) == 3 ?
		     "no veth pair to probe on (iproute2 missing, or no CONFIG_VETH)" :
		     "no private network namespace to probe in (unshare failed)");
}

static void probe_links(const struct doc_request *req, struct doc_facts *f)
{
	char spec[96];
	uint16_t port;

	snprintf(spec, sizeof(spec), "udp:127.0.0.1:%u", GPUNIC_ROCE_UDP_PORT);
	try_spec(&f->links[DOC_LINK_UDP], "udp", spec);
	port = free_udp_port();
	if (port) {
		snprintf(spec, sizeof(spec), "dgram:127.0.0.1:%u,127.0.0.1:%u", port, port);
		try_spec(&f->links[DOC_LINK_DGRAM], "dgram", spec);
	} else {
		f->links[DOC_LINK_DGRAM].name = "dgram";
		f->links[DOC_LINK_DGRAM].err = EADDRINUSE;
		snprintf(f->links[DOC_LINK_DGRAM].detail, sizeof(f->links[DOC_LINK_DGRAM].detail),
			 "no free UDP port on 127.0.0.1");
		snprintf(f->links[DOC_LINK_DGRAM].cause, sizeof(f->links[DOC_LINK_DGRAM].cause),
			 "every UDP port of 127.0.0.1 is taken, or UDP sockets are unavailable");
	}
	probe_shm(&f->links[DOC_LINK_SHM]);
	probe_raw(f);
	if (req->link)
		try_spec(&f->links[DOC_LINK_REQUESTED], "requested", req->link);
}

void doc_probe(const struct doc_request *req, struct doc_facts *f)
{
	struct gpunic_sanity_attr sattr = { .cuda_device = req->cuda_device };

	memset(f, 0, sizeof(*f));
	/* First: the suite forks, and CUDA does not survive fork() (mem_sanity.h). */
	f->sanity_ret = gpunic_mem_sanity(&sattr, &f->sanity);
	f->cpus = count_cpus();
	probe_iommu(f);
	probe_nvidia(f);
	f->gpu_ret = gpunic_gpu_probe(req->cuda_device, &f->gpu);
	probe_mem(req, f);
	f->gdrdrv_err = gpunic_gdrdrv_check(f->gdrdrv_why, sizeof(f->gdrdrv_why));
	probe_links(req, f);
}
