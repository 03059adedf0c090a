/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the apps toolkit tests: a temporary folder removed at exit, running a
 * program and reading a file back.
 */
#ifndef GPUNIC_TEST_APPS_H
#define GPUNIC_TEST_APPS_H

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define SYSTEM_PYTHON "/usr/bin/python3"

static char test_tmpdir[PATH_MAX] __attribute__((unused));

static inline int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static inline void rm_tmpdir(void)
{
	if (test_tmpdir[0])
		nftw(test_tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* @dir/@name into @buf of PATH_MAX bytes; a path that does not fit fails the test. */
static inline char *path_join(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= PATH_MAX)
		harness_fail(__FILE__, __LINE__, "path too long: %s/%s", dir, name);
	return buf;
}

/* @dir/@name in a static buffer (one at a time). */
static inline const char *tmp_path(const char *dir, const char *name)
{
	static char path[PATH_MAX];

	return path_join(path, dir, name);
}

/* A fresh folder under $TMPDIR (or /tmp), removed when the test process exits. */
static inline const char *tmpdir_make(void)
{
	const char *base = getenv("TMPDIR");

	path_join(test_tmpdir, base && *base ? base : "/tmp", "gpunic-apps-XXXXXX");
	if (!mkdtemp(test_tmpdir))
		harness_fail(__FILE__, __LINE__, "mkdtemp %s failed", test_tmpdir);
	atexit(rm_tmpdir);
	return test_tmpdir;
}

/* The whole file as a NUL-terminated string (free() it); NULL if it cannot be read. */
static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)len + 1);
	if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Run @argv (PATH searched) with stdout and stderr passed through. Return: exit status, or -1. */
static inline int run_prog(char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Run the system Python on @code with @path as its one argument. Return: exit status, or -1. */
static inline int run_python(const char *code, const char *path)
{
	char *argv[] = { SYSTEM_PYTHON, "-c", (char *)code, (char *)path, NULL };

	return run_prog(argv);
}

/* Is @prog runnable from PATH? */
static inline bool have_prog(const char *prog)
{
	char *argv[] = { "sh", "-c", "command -v \"$0\" >/dev/null", (char *)prog, NULL };

	return run_prog(argv) == 0;
}

#endif
