#include "harness.h"

#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#define HARNESS_MAX_CASES 512

static struct {
	const char *name;
	void (*fn)(void);
} cases[HARNESS_MAX_CASES];
static int ncases;

void harness_register(const char *name, void (*fn)(void))
{
	if (ncases == HARNESS_MAX_CASES) {
		fprintf(stderr, "harness: too many test cases\n");
		abort();
	}
	cases[ncases].name = name;
	cases[ncases].fn = fn;
	ncases++;
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void harness_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "SKIP: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(HARNESS_SKIP_CODE);
}

static int run_forked(int i)
{
	pid_t pid;
	int status;

	/* Buffered output would otherwise be written again by the child. */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		cases[i].fn();
		exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "%s: killed by signal %d\n", cases[i].name, WTERMSIG(status));
	return 1;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;

	if (argc > 1) {
		for (int i = 0; i < ncases; i++) {
			if (strcmp(cases[i].name, argv[1]) == 0) {
				cases[i].fn();
				return 0;
			}
		}
		fprintf(stderr, "no test named %s\n", argv[1]);
		return 2;
	}
	for (int i = 0; i < ncases; i++) {
		int rc = run_forked(i);

		printf("%-40s %s\n", cases[i].name,
		       rc == 0 ? "ok" : rc == HARNESS_SKIP_CODE ? "skipped" : "FAILED");
		if (rc == 0)
			passed++;
		else if (rc == HARNESS_SKIP_CODE)
			skipped++;
		else
			failed++;
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
