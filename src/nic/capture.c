// SPDX-License-Identifier: MIT
/*
 * The capture tap: every frame a NIC transmits or receives, written to a pcap file (pcap.h), as
 * a port mirror would see it. Received frames are recorded before any check, so the hostile ones
 * the front door drops are in the file too; transmitted ones once the link has taken them.
 *
 * Off costs one predictable branch per frame (nic_capture_tap); the engine lock that serialises
 * transmit and receive also serialises the writer, which is not thread-safe.
 *
 * GPUNIC_CAPTURE=<path> starts a capture at gpunic_nic_open. One NIC writes <path> itself; while
 * several capture through the variable in one process, each writes <path>.<its IP>.pcap (a
 * trailing ".pcap" of <path> is dropped first), and the first one's file is renamed to that form
 * when the second NIC opens, so that every file of a multi-NIC run is named alike.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpunic/log.h"
#include "gpunic/pcap.h"
#include "nic_loc.h"

#define CAPTURE_ENV "GPUNIC_CAPTURE"
#define PCAP_SUFFIX ".pcap"

/* NICs capturing through GPUNIC_CAPTURE. Lock order: env_lock, then a NIC's lock. */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned env_live;
static struct gpunic_nic *env_sole;	/* the one writing the bare path, while it is alone */

/* <base without ".pcap">.<a.b.c.d>.pcap; NULL when out of memory. */
static char *per_nic_path(const char *base, uint32_t ip)
{
	size_t n = strlen(base), sl = strlen(PCAP_SUFFIX);
	char *path;

	if (n > sl && !strcmp(base + n - sl, PCAP_SUFFIX))
		n -= sl;
	if (asprintf(&path, "%.*s.%u.%u.%u.%u%s", (int)n, base, ip >> 24, (ip >> 16) & 0xFF,
		     (ip >> 8) & 0xFF, ip & 0xFF, PCAP_SUFFIX) < 0)
		return NULL;
	return path;
}

#ifdef GPUNIC_HAVE_PCAP

/* Swap in a new writer (NULL stops) and its path; the old one is closed outside the lock. */
static int capture_swap(struct gpunic_nic *nic, struct gpunic_pcap_writer *w, char *path)
{
	struct gpunic_pcap_writer *old;
	char *old_path;
	int err;

	nic_lock(nic);
	old = nic->cap;
	old_path = nic->cap_path;
	nic->cap = w;
	nic->cap_path = path;
	nic_unlock(nic);
	err = gpunic_pcap_writer_close(old);
	if (err)
		gpunic_err("capture %s: %s", old_path, strerror(err));
	free(old_path);
	return err;
}

/* Open @path (taking it over) and make it the NIC's capture. */
static int capture_start(struct gpunic_nic *nic, char *path)
{
	char errbuf[GPUNIC_PCAP_ERRBUF_SIZE];
	struct gpunic_pcap_writer *w;
	int err;

	w = gpunic_pcap_writer_open(path, errbuf);
	if (!w) {
		err = errno ? errno : EIO;
		gpunic_err("cannot capture to %s: %s", path, errbuf);
		free(path);
		return err;
	}
	capture_swap(nic, w, path);
	gpunic_info("nic %u.%u.%u.%u: capturing to %s", nic->attr.ip >> 24,
		    (nic->attr.ip >> 16) & 0xFF, (nic->attr.ip >> 8) & 0xFF, nic->attr.ip & 0xFF,
		    path);
	return 0;
}

void nic_capture_frame(struct gpunic_nic *nic, const uint8_t *frame, size_t len)
{
	struct timespec ts;
	int err;

	clock_gettime(CLOCK_REALTIME, &ts);
	err = gpunic_pcap_writer_append(nic->cap, frame, len, &ts);
	if (!err) {
		nic->cap_dirty = true;
		return;
	}
	/* a file that lost a frame no longer tells the truth: end it here, loudly */
	gpunic_err("capture %s: %s; capture stopped", nic->cap_path,
		   gpunic_pcap_writer_error(nic->cap));
	gpunic_pcap_writer_close(nic->cap);
	nic->cap = NULL;
	nic->cap_dirty = false;
}

void nic_capture_flush(struct gpunic_nic *nic)
{
	int err;

	nic->cap_dirty = false;
	err = gpunic_pcap_writer_flush(nic->cap);
	if (!err)
		return;
	gpunic_err("capture %s: %s; capture stopped", nic->cap_path,
		   gpunic_pcap_writer_error(nic->cap));
	gpunic_pcap_writer_close(nic->cap);
	nic->cap = NULL;
}

#else /* !GPUNIC_HAVE_PCAP */

static int capture_swap(struct gpunic_nic *nic, struct gpunic_pcap_writer *w, char *path)
{
	(void)w;
	nic_lock(nic);
	free(nic->cap_path);
	nic->cap_path = path;
	nic_unlock(nic);
	return 0;
}

static int capture_start(struct gpunic_nic *nic, char *path)
{
	(void)nic;
	gpunic_err("cannot capture to %s: gpunic was built without libpcap (install libpcap-dev "
		   "and rebuild)", path);
	free(path);
	return ENOTSUP;
}

/* Never called: nic->cap stays NULL without libpcap. */
void nic_capture_frame(struct gpunic_nic *nic, const uint8_t *frame, size_t len)
{
	(void)nic;
	(void)frame;
	(void)len;
}

void nic_capture_flush(struct gpunic_nic *nic)
{
	nic->cap_dirty = false;
}

#endif /* GPUNIC_HAVE_PCAP */

/* The NIC's file gets its per-NIC name (env_lock held). */
static void rename_to_per_nic(struct gpunic_nic *nic, const char *base)
{
	char *path = per_nic_path(base, nic->attr.ip), *old;

	if (!path)
		return;
	if (rename(nic->cap_path, path)) {
		gpunic_err("capture: cannot rename %s to %s: %s", nic->cap_path, path,
			   strerror(errno));
		free(path);
		return;
	}
	nic_lock(nic);
	old = nic->cap_path;
	nic->cap_path = path;
	nic_unlock(nic);
	free(old);
}

/* Leave the GPUNIC_CAPTURE set (env_lock held). */
static void env_forget(struct gpunic_nic *nic)
{
	if (!nic->cap_env)
		return;
	nic->cap_env = false;
	env_live--;
	if (env_sole == nic)
		env_sole = NULL;
}

void nic_capture_open_env(struct gpunic_nic *nic)
{
	const char *base = getenv(CAPTURE_ENV);
	char *path;

	if (!base || !base[0])
		return;
	pthread_mutex_lock(&env_lock);
	path = env_live ? per_nic_path(base, nic->attr.ip) : strdup(base);
	if (!path) {
		gpunic_err("%s=%s: out of memory", CAPTURE_ENV, base);
	} else if (!capture_start(nic, path)) {
		nic->cap_env = true;
		if (!env_live++) {
			env_sole = nic;
		} else if (env_sole) {
			rename_to_per_nic(env_sole, base);
			env_sole = NULL;
		}
	}
	pthread_mutex_unlock(&env_lock);
}

void nic_capture_close(struct gpunic_nic *nic)
{
	pthread_mutex_lock(&env_lock);
	env_forget(nic);
	pthread_mutex_unlock(&env_lock);
	capture_swap(nic, NULL, NULL);
}

int gpunic_nic_capture(struct gpunic_nic *nic, const char *path)
{
	char *copy = NULL;
	int err;

	if (!nic || (path && !path[0]))
		return EINVAL;
	if (path) {
		copy = strdup(path);
		if (!copy)
			return ENOMEM;
	}
	/* env_lock across the swap: a NIC opening meanwhile must not rename the new file */
	pthread_mutex_lock(&env_lock);
	err = copy ? capture_start(nic, copy) : capture_swap(nic, NULL, NULL);
	/* a failed start leaves the running capture as it was */
	if (!err || !copy)
		env_forget(nic);
	pthread_mutex_unlock(&env_lock);
	return err;
}
