// SPDX-License-Identifier: MIT
/*
 * Both sides of a `gpunic perf` test in one process (perf_pair.h says why).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf_pair.h"

#define PAIR_SERVER_IP 0x0a000001u	/* 10.0.0.1 */
#define PAIR_CLIENT_IP 0x0a000002u	/* 10.0.0.2 */

struct server_job {
	const struct perf_cfg *cfg;
	struct perf_result *res;
	int err;
};

static void *server_main(void *arg)
{
	struct server_job *job = arg;

	job->err = perf_run(job->cfg, job->res);
	return NULL;
}

/*
 * A client that failed before it connected would leave the server in accept() until its
 * timeout: connect and hang up, which the server reports as a vanished peer. Harmless when the
 * server is past accept() (refused) or already done.
 */
static void release_listener(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
}

int perf_pair_run(struct perf_cfg *client, struct perf_cfg *server, struct perf_pair_names *names,
		  struct perf_result *cres, struct perf_result *sres, int *server_err)
{
	static unsigned seq;
	unsigned n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
	struct server_job job = { .cfg = server, .res = sres };
	pthread_t thr;
	int err;

	if (!client->oob_port) {
		/* one the kernel has free: another run may share the machine */
		err = perf_port_free(SOCK_STREAM, INADDR_LOOPBACK, &client->oob_port);
		if (err) {
			PERF_ERR("--pair: no free TCP port on 127.0.0.1: %s\n", strerror(err));
			return err;
		}
	}
	server->oob_port = client->oob_port;
	snprintf(names->server_link, sizeof(names->server_link), "shm:/gpunic-pair-%d-%u,a,create",
		 (int)getpid(), n);
	snprintf(names->client_link, sizeof(names->client_link), "shm:/gpunic-pair-%d-%u,b",
		 (int)getpid(), n);
	server->host = NULL;
	/* the client is ours: a server still waiting after --timeout waits for nothing */
	server->accept_ms = server->timeout_ms;
	server->link = names->server_link;
	server->ip = PAIR_SERVER_IP;
	client->host = "127.0.0.1";
	client->link = names->client_link;
	client->ip = PAIR_CLIENT_IP;
	server->mac_set = client->mac_set = false;
	server->peer_mac_set = client->peer_mac_set = false;
	err = pthread_create(&thr, NULL, server_main, &job);
	if (err) {
		PERF_ERR("--pair: starting the server thread: %s\n", strerror(err));
		return err;
	}
	/* the client waits for the server's listener and cable (gpunic_perftest_connect, open_link) */
	err = perf_run(client, cres);
	if (err)
		release_listener(client->oob_port);
	pthread_join(thr, NULL);
	*server_err = job.err;
	return err;
}
