// The flood: K writer processes, each making N malloc+free pairs of size 1000 + k, as fast as it
// can; with THREADS > 1, each writer runs that many threads instead, released together by a
// barrier, thread j of writer k making N pairs of size 2000 + k * THREADS + j. Every size
// belongs to one thread of one process, so a reader can check each writer's counts exactly.
// Threads use sizes above glibc's thread cache (at most 1032 bytes): at its exit a thread hands
// its cached blocks back through free() again, which would be recorded as second Frees.
// Used by scripts/flood.sh, scripts/bench.sh and the pressure tests.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_barrier_t start_line;
static long iterations;

static void write_loop(size_t size, long n) {
    void* volatile block;  // one per thread: the compiler keeps each malloc and free
    for (long i = 0; i < n; ++i) {
        block = malloc(size);
        free(block);
    }
}

static void* thread_main(void* arg) {
    pthread_barrier_wait(&start_line);
    write_loop((size_t)arg, iterations);
    return NULL;
}

// Writer k: its threads, all started before any of them writes.
static int writer(int k, int threads, long n) {
    if (threads == 1) {
        write_loop(1000 + (size_t)k, n);
        return 0;
    }
    iterations = n;
    pthread_t tids[threads];
    if (pthread_barrier_init(&start_line, NULL, (unsigned)threads) != 0) return 1;
    for (int j = 0; j < threads; ++j) {
        const size_t size = 2000 + (size_t)k * (size_t)threads + (size_t)j;
        if (pthread_create(&tids[j], NULL, thread_main, (void*)size) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (int j = 0; j < threads; ++j) pthread_join(tids[j], NULL);
    return 0;
}

int main(int argc, char** argv) {
    const int writers = argc > 1 ? atoi(argv[1]) : 4;
    const long n = argc > 2 ? atol(argv[2]) : 200000;
    const int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (writers < 1 || n < 0 || threads < 1 || threads > 1024) {
        fprintf(stderr, "usage: flood [WRITERS] [ITERATIONS] [THREADS]\n");
        return 2;
    }
    for (int k = 0; k < writers; ++k) {
        const pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) _exit(writer(k, threads, n));
    }
    int failed = 0;
    for (int k = 0; k < writers; ++k) {
        int st = 0;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    return failed;
}
