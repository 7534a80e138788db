/*
 * lifecycle MODE ...: the corners of a process's life where a tracer can lose sight of it.
 *
 *   alloc N                      mallocs and frees FX_LIFE_EXECED N times (what the others exec)
 *   thread-exec PROGRAM ARGS...  a second thread execv()s PROGRAM while the main thread waits:
 *                                the kernel ends the main thread and the exec'ing thread takes
 *                                over its pid
 *   sigcont-children C N K       forks C children one after another, each allocating
 *                                FX_LIFE_CHILD N times; the parent sends each child K SIGCONTs
 *                                right after its fork (as shells and supervisors do)
 *   sigcont-exec C PROGRAM ARGS...  forks C children one after another, each execv()ing
 *                                PROGRAM; the parent sends each child SIGCONTs without pause
 *                                until it has exited (its new-process pause, its new image's
 *                                pause and its run all get them)
 *   sigcont-busy N               forks one child allocating FX_LIFE_CHILD N times; once it
 *                                runs, the parent sends it SIGCONTs without pause until it has
 *                                exited (under a small ring, its pauses for ring pressure get them)
 *   stop-loop N                  forks one child allocating FX_LIFE_CHILD N times and stops and
 *                                continues it (SIGSTOP, SIGCONT) until it exits
 *   leader-exit T N              T threads each allocate FX_LIFE_THREAD0 + 2 * i N times, after
 *                                the main thread has ended with pthread_exit
 *   vfork-exec PROGRAM ARGS...   vfork()s a child that execv()s PROGRAM (posix_spawn's way),
 *                                waits for it
 *   thread-exit N CODE           a second thread allocates FX_LIFE_THREAD0 N times, then ends
 *                                the whole process with exit(CODE) while the main thread waits
 *   traced N                     forks one child allocating FX_LIFE_CHILD N times under ptrace
 *                                (PTRACE_SEIZE), interrupting it over and over as a debugger or
 *                                strace does: stops it did not cause are left as they are
 *                                (PTRACE_LISTEN), signals passed on
 *
 * Every child is waited for; each must exit 0. Exits 0 when all went as planned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "fixture_sizes.h"

static unsigned arg_count(const char *s)
{
	char *end = NULL;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || v > 10000000) {
		fprintf(stderr, "lifecycle: bad count '%s'\n", s);
		exit(FX_FIXTURE_BROKEN);
	}
	return (unsigned)v;
}

/* Waits for `pid`, which must exit 0. */
static void reap(pid_t pid)
{
	int status = fx_wait(pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "lifecycle: child %d ended with status %#x\n", (int)pid, status);
		exit(FX_FIXTURE_BROKEN);
	}
}

static char **exec_argv;

static void *exec_thread(void *arg)
{
	(void)arg;
	execv(exec_argv[0], exec_argv);
	perror("execv");
	exit(FX_FIXTURE_BROKEN);
}

static int thread_exec(char **argv)
{
	exec_argv = argv;
	pthread_t t;
	FX_REQUIRE(pthread_create(&t, NULL, exec_thread, NULL) == 0);
	for (;;)
		pause(); /* ended by the exec */
}

static int sigcont_children(unsigned children, unsigned n, unsigned conts)
{
	for (unsigned c = 0; c < children; c++) {
		pid_t pid = fork();
		FX_REQUIRE(pid >= 0);
		if (pid == 0) {
			fx_alloc_free(FX_LIFE_CHILD, n);
			_exit(0);
		}
		for (unsigned k = 0; k < conts; k++)
			FX_REQUIRE(kill(pid, SIGCONT) == 0);
		reap(pid);
	}
	return 0;
}

/* 1 once `pid` has exited (with 0) and is reaped, 0 while it runs. A zombie takes signals too:
 * sending it one always succeeds until it is reaped. */
static int reaped(pid_t pid)
{
	int status = 0;
	pid_t got = waitpid(pid, &status, WNOHANG);
	FX_REQUIRE(got == 0 || got == pid);
	if (got == 0)
		return 0;
	FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 1;
}

/* Sends `pid` SIGCONTs until it has exited (with 0), then reaps it. */
static void continue_until_exit(pid_t pid)
{
	while (!reaped(pid))
		FX_REQUIRE(kill(pid, SIGCONT) == 0);
}

static int sigcont_exec(unsigned children, char **argv)
{
	for (unsigned c = 0; c < children; c++) {
		pid_t pid = fork();
		FX_REQUIRE(pid >= 0);
		if (pid == 0) {
			execv(argv[0], argv);
			_exit(FX_FIXTURE_BROKEN);
		}
		continue_until_exit(pid);
	}
	return 0;
}

static int sigcont_busy(unsigned n)
{
	/* The SIGCONTs start once the child runs: its pauses for pressure get them, not its
	 * new-process pause (sigcont-children covers that one). */
	int running[2];
	FX_REQUIRE(pipe(running) == 0);
	pid_t pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		close(running[0]);
		FX_REQUIRE(write(running[1], "r", 1) == 1);
		close(running[1]);
		fx_alloc_free(FX_LIFE_CHILD, n);
		_exit(0);
	}
	close(running[1]);
	char byte = 0;
	FX_REQUIRE(read(running[0], &byte, 1) == 1);
	close(running[0]);
	continue_until_exit(pid);
	return 0;
}

static int stop_loop(unsigned n)
{
	pid_t pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		fx_alloc_free(FX_LIFE_CHILD, n);
		_exit(0);
	}
	const struct timespec pause_a_little = {0, 200 * 1000};
	while (!reaped(pid)) {
		FX_REQUIRE(kill(pid, SIGSTOP) == 0);
		nanosleep(&pause_a_little, NULL);
		FX_REQUIRE(kill(pid, SIGCONT) == 0);
		nanosleep(&pause_a_little, NULL);
	}
	return 0;
}

struct leader_job {
	pid_t leader;
	size_t size;
	unsigned n;
};

/* Whether the main thread has ended: /proc shows it a zombie while the others run. */
static int leader_gone(pid_t leader)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)leader);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	const char *state = strrchr(buf, ')');
	return state && (state[2] == 'Z' || state[2] == 'X');
}

static void *leader_worker(void *arg)
{
	const struct leader_job *job = arg;
	const struct timespec a_moment = {0, 1000 * 1000};
	while (!leader_gone(job->leader))
		nanosleep(&a_moment, NULL);
	fx_alloc_free(job->size, job->n);
	return NULL;
}

static int leader_exit(unsigned threads, unsigned n)
{
	static struct leader_job jobs[16];
	FX_REQUIRE(threads >= 1 && threads <= 16);
	for (unsigned i = 0; i < threads; i++) {
		jobs[i] = (struct leader_job){getpid(), FX_LIFE_THREAD0 + 2 * i, n};
		pthread_t t;
		FX_REQUIRE(pthread_create(&t, NULL, leader_worker, &jobs[i]) == 0);
	}
	pthread_exit(NULL); /* the process lives on in its threads, and exits 0 with the last */
}

static int vfork_exec(char **argv)
{
	pid_t pid = vfork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(FX_FIXTURE_BROKEN);
	}
	reap(pid);
	return 0;
}

static unsigned exit_n, exit_code;

static void *exiting_thread(void *arg)
{
	(void)arg;
	fx_alloc_free(FX_LIFE_THREAD0, exit_n);
	exit((int)exit_code);
}

static int thread_exit(unsigned n, unsigned code)
{
	exit_n = n;
	exit_code = code;
	pthread_t t;
	FX_REQUIRE(pthread_create(&t, NULL, exiting_thread, NULL) == 0);
	for (;;)
		pause(); /* ended by the other thread's exit */
}

/*
 * Waits for the traced child's next report after an interrupt, as a well-behaved tracer does: a
 * signal is passed on, a group stop someone else caused (memtrack's pauses are SIGSTOPs) is left
 * in place with PTRACE_LISTEN until their SIGCONT, the interrupt's own stop is continued.
 * Returns 1 once the child has exited (with 0), else 0.
 */
static int tracer_step(pid_t pid)
{
	for (;;) {
		int status = 0;
		pid_t got = waitpid(pid, &status, __WALL);
		if (got < 0 && errno == EINTR)
			continue;
		FX_REQUIRE(got == pid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			return 1;
		}
		FX_REQUIRE(WIFSTOPPED(status));
		const int sig = WSTOPSIG(status);
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
				FX_REQUIRE(ptrace(PTRACE_LISTEN, pid, 0, 0) == 0 || errno == ESRCH);
				continue;
			}
			FX_REQUIRE(ptrace(PTRACE_CONT, pid, 0, 0) == 0 || errno == ESRCH);
			return 0;
		}
		FX_REQUIRE(ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig) == 0 || errno == ESRCH);
	}
}

static int traced(unsigned n)
{
	int go[2];
	FX_REQUIRE(pipe(go) == 0);
	pid_t pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		FX_REQUIRE(read(go[0], &c, 1) == 1);
		fx_alloc_free(FX_LIFE_CHILD, n);
		_exit(0);
	}
	close(go[0]);
	FX_REQUIRE(ptrace(PTRACE_SEIZE, pid, 0, 0) == 0);
	FX_REQUIRE(write(go[1], "g", 1) == 1);
	close(go[1]);
	const struct timespec pause_a_little = {0, 200 * 1000};
	for (;;) {
		nanosleep(&pause_a_little, NULL);
		/* ESRCH: not stopped for us right now is impossible for a seized tracee; it exited. */
		FX_REQUIRE(ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0 || errno == ESRCH);
		if (tracer_step(pid))
			return 0;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "alloc") && argc == 3) {
		fx_alloc_free(FX_LIFE_EXECED, arg_count(argv[2]));
		return 0;
	}
	if (!strcmp(mode, "thread-exec") && argc >= 3)
		return thread_exec(argv + 2);
	if (!strcmp(mode, "sigcont-children") && argc == 5)
		return sigcont_children(arg_count(argv[2]), arg_count(argv[3]), arg_count(argv[4]));
	if (!strcmp(mode, "sigcont-exec") && argc >= 4)
		return sigcont_exec(arg_count(argv[2]), argv + 3);
	if (!strcmp(mode, "sigcont-busy") && argc == 3)
		return sigcont_busy(arg_count(argv[2]));
	if (!strcmp(mode, "stop-loop") && argc == 3)
		return stop_loop(arg_count(argv[2]));
	if (!strcmp(mode, "leader-exit") && argc == 4)
		return leader_exit(arg_count(argv[2]), arg_count(argv[3]));
	if (!strcmp(mode, "vfork-exec") && argc >= 3)
		return vfork_exec(argv + 2);
	if (!strcmp(mode, "thread-exit") && argc == 4)
		return thread_exit(arg_count(argv[2]), arg_count(argv[3]));
	if (!strcmp(mode, "traced") && argc == 3)
		return traced(arg_count(argv[2]));
	fprintf(stderr, "usage: lifecycle alloc N | thread-exec PROGRAM ARGS... | sigcont-children C N K |"
			" sigcont-exec C PROGRAM ARGS... | sigcont-busy N | stop-loop N | leader-exit T N | vfork-exec PROGRAM ARGS... | thread-exit N CODE | traced N\n");
	return FX_FIXTURE_BROKEN;
}
