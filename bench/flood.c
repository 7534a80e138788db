// The flood: K writer processes, each making N malloc+free pairs of its own size (1000 + k),
// as fast as it can. Used by scripts/flood.sh, scripts/bench.sh and the pressure tests.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile sink;

static void write_loop(size_t size, long n) {
    for (long i = 0; i < n; ++i) {
        sink = malloc(size);
        free(sink);
    }
}

int main(int argc, char** argv) {
    const int writers = argc > 1 ? atoi(argv[1]) : 4;
    const long n = argc > 2 ? atol(argv[2]) : 200000;
    if (writers < 1 || n < 0) {
        fprintf(stderr, "usage: flood [WRITERS] [ITERATIONS]\n");
        return 2;
    }
    for (int k = 0; k < writers; ++k) {
        const pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            write_loop(1000 + (size_t)k, n);
            _exit(0);
        }
    }
    int failed = 0;
    for (int k = 0; k < writers; ++k) {
        int st = 0;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    return failed;
}
