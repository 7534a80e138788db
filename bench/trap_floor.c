// trap_floor: runs a command with empty BPF programs attached to allocator functions, to measure
// what the uprobe traps alone cost (the floor under any uprobe-based tracker). Used by
// scripts/bench.sh: floor = time(trap_floor ... -- CMD) - time(CMD).
//
//   trap_floor [-v] [-e LIB:OFF[,OFF...]]... [-r LIB:OFF[,OFF...]]... -- CMD [ARGS...]
//
// -e attaches the empty entry program at file offsets OFF of LIB, -r the empty return program.
// Each -e or -r becomes one uprobe_multi link for every process on the machine (pid 0), as
// memtrack's own probes are: one link per library and kind. On a kernel without uprobe_multi
// (before 6.6; found by a trial load, as memtrack finds it) each offset becomes one perf-event
// uprobe for every process, as memtrack's probes are there. The command is forked first and held
// until every probe is attached, then it execs; trap_floor exits with its status (128+N when
// killed by signal N). -v prints the start-up and teardown times on stderr.
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "trap_floor.bpf.skel.h"

#define ATTACH_UPROBE_MULTI 48 /* BPF_TRACE_UPROBE_MULTI (Linux 6.6), absent from older headers */
#define UPROBE_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */
#define MAX_LINKS 16 /* -e and -r lists */
#define MAX_OFFSETS 512 /* mimalloc alone defines ~100 entry points */

struct spec {
	const char *path;
	int retprobe;
	unsigned cnt;
	uint64_t offsets[MAX_OFFSETS];
};

/* bpf_attr's link_create for uprobe_multi, as the 6.6+ uapi lays it out. */
struct link_create_uprobe_multi {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, uprobe_flags, pid;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int usage(void)
{
	fprintf(stderr, "usage: trap_floor [-v] [-e LIB:OFF[,OFF...]]... [-r LIB:OFF[,OFF...]]... -- CMD [ARGS...]\n");
	return 2;
}

/* "LIB:0x98930,0x98ef3" */
static int parse_spec(char *arg, int retprobe, struct spec *s)
{
	char *colon = strrchr(arg, ':');
	if (!colon || colon == arg || !colon[1])
		return -1;
	*colon = 0;
	s->path = arg;
	s->retprobe = retprobe;
	s->cnt = 0;
	for (char *tok = strtok(colon + 1, ","); tok; tok = strtok(NULL, ",")) {
		char *end = NULL;
		errno = 0;
		const unsigned long long v = strtoull(tok, &end, 0);
		if (errno || !end || *end || s->cnt == MAX_OFFSETS)
			return -1;
		s->offsets[s->cnt++] = v;
	}
	return s->cnt ? 0 : -1;
}

static int attach(int prog_fd, const struct spec *s)
{
	struct link_create_uprobe_multi req;
	union bpf_attr attr;
	memset(&req, 0, sizeof(req));
	req.prog_fd = (uint32_t)prog_fd;
	req.attach_type = ATTACH_UPROBE_MULTI;
	req.path = (uint64_t)(uintptr_t)s->path;
	req.offsets = (uint64_t)(uintptr_t)s->offsets;
	req.cnt = s->cnt;
	req.uprobe_flags = s->retprobe ? UPROBE_MULTI_RETURN : 0;
	memset(&attr, 0, sizeof(attr));
	memcpy(&attr, &req, sizeof(req));
	return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

/* libbpf's messages: the failed trial load of uprobe_multi on an older kernel is expected. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

/* The skeleton loaded for uprobe_multi links (multi) or for perf-event uprobes; NULL (errno set)
 * when this kernel refuses it. A kernel with uprobe_multi links refuses one in "/" (a folder)
 * with EBADF; one without refuses the program or the attach type with EINVAL (memtrack's probe,
 * src/probes/KernelFeatures.cpp, and libbpf's). */
static struct trap_floor_bpf *open_and_load(int multi)
{
	struct trap_floor_bpf *skel = trap_floor_bpf__open();
	if (!skel)
		return NULL;
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.floor_entry, (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.floor_return, (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
	}
	int err = trap_floor_bpf__load(skel);
	if (!err && multi) {
		struct spec probe = {.path = "/", .retprobe = 0, .cnt = 1};
		const int link = attach(bpf_program__fd(skel->progs.floor_entry), &probe);
		err = link < 0 && errno == EBADF ? 0 : -EINVAL;
		if (link >= 0)
			close(link);
	}
	if (err) {
		trap_floor_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

int main(int argc, char **argv)
{
	struct spec specs[MAX_LINKS];
	int nspecs = 0, verbose = 0, i = 1;
	for (; i < argc; ++i) {
		if (!strcmp(argv[i], "--")) {
			++i;
			break;
		}
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
		} else if ((!strcmp(argv[i], "-e") || !strcmp(argv[i], "-r")) && i + 1 < argc) {
			if (nspecs == MAX_LINKS || parse_spec(argv[i + 1], argv[i][1] == 'r', &specs[nspecs]) != 0) {
				fprintf(stderr, "trap_floor: bad probe list (LIB:OFF,OFF,...; at most %d offsets, %d lists): %s\n", MAX_OFFSETS, MAX_LINKS, argv[i + 1]);
				return 2;
			}
			++nspecs;
			++i;
		} else {
			return usage();
		}
	}
	if (i >= argc)
		return usage();
	char **cmd = argv + i;

	/* The command first, held on a pipe until the probes are in place (as memtrack holds it). */
	int go[2];
	if (pipe(go) != 0) {
		perror("trap_floor: pipe");
		return 1;
	}
	const pid_t child = fork();
	if (child < 0) {
		perror("trap_floor: fork");
		return 1;
	}
	if (child == 0) {
		char byte;
		close(go[1]);
		if (read(go[0], &byte, 1) != 1)
			_exit(127); /* the parent failed to attach */
		close(go[0]);
		execvp(cmd[0], cmd);
		fprintf(stderr, "trap_floor: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(go[0]);

	const double t0 = now_ms();
	libbpf_set_print(quiet);
	/* uprobe_multi where the kernel takes a program of that attach type (6.6+), else classic. */
	int multi = 1;
	struct trap_floor_bpf *skel = open_and_load(multi);
	if (!skel) {
		multi = 0;
		skel = open_and_load(multi);
	}
	if (!skel) {
		fprintf(stderr, "trap_floor: BPF load failed: %s\n", strerror(errno));
		return 1;
	}
	int links[MAX_LINKS];
	struct bpf_link **perf_links = calloc((size_t)MAX_LINKS * MAX_OFFSETS, sizeof(*perf_links));
	unsigned nperf = 0;
	if (!perf_links) {
		perror("trap_floor: calloc");
		return 1;
	}
	for (int k = 0; k < nspecs; ++k) {
		struct bpf_program *prog = specs[k].retprobe ? skel->progs.floor_return : skel->progs.floor_entry;
		for (unsigned o = 0; o < (multi ? 1 : specs[k].cnt); ++o) {
			int failed;
			if (multi) {
				links[k] = attach(bpf_program__fd(prog), &specs[k]);
				failed = links[k] < 0;
			} else {
				perf_links[nperf] = bpf_program__attach_uprobe(prog, specs[k].retprobe, -1, specs[k].path,
									       specs[k].offsets[o]);
				failed = !perf_links[nperf++];
			}
			if (failed) {
				fprintf(stderr, "trap_floor: attach %s (%u offsets, %s, %s) failed: %s\n", specs[k].path,
					specs[k].cnt, specs[k].retprobe ? "return" : "entry",
					multi ? "uprobe_multi" : "perf event", strerror(errno));
				return 1; /* the child sees EOF and exits */
			}
		}
	}
	if (verbose)
		fprintf(stderr, "trap_floor: %u %s link(s), start-up took %.1f ms\n", multi ? (unsigned)nspecs : nperf,
			multi ? "uprobe_multi" : "perf-event uprobe", now_ms() - t0);
	if (write(go[1], "x", 1) != 1) {
		perror("trap_floor: release the command");
		return 1;
	}
	close(go[1]);

	int st = 0;
	while (waitpid(child, &st, 0) < 0) {
		if (errno != EINTR) {
			perror("trap_floor: waitpid");
			return 1;
		}
	}
	const double t1 = now_ms();
	for (int k = 0; multi && k < nspecs; ++k)
		close(links[k]);
	for (unsigned k = 0; k < nperf; ++k)
		bpf_link__destroy(perf_links[k]);
	free(perf_links);
	trap_floor_bpf__destroy(skel);
	if (verbose)
		fprintf(stderr, "trap_floor: teardown took %.1f ms\n", now_ms() - t1);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}
