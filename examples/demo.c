/*
 * memtrack demo: a recognisable, fully known mix of heap allocations.
 *
 * Child process (forked first, waited for): 10 malloc (512 B .. 5 KiB), all freed.
 * Parent, afterwards:
 *   100 malloc, sizes 16, 32, ..., 1600 bytes, all freed;
 *    10 calloc(16, 64) = 1 KiB each, 5 freed and 5 deliberately left live at exit;
 *    10 realloc of one block growing 64 B -> 32 KiB (the first from NULL), freed at the end;
 *     1 posix_memalign(64, 4096), freed.
 * So at exit exactly 5 blocks of 1 KiB (5120 bytes) are live, all from calloc in the parent.
 *
 * Pointers go through volatile slots so the compiler cannot elide a malloc/free pair.
 * Prints nothing unless something fails.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
    MALLOC_COUNT = 100,
    MALLOC_STEP = 16,
    CALLOC_COUNT = 10,
    CALLOC_NMEMB = 16,
    CALLOC_SIZE = 64, /* 16 * 64 = 1 KiB */
    LEAKED_COUNT = 5,
    REALLOC_COUNT = 10,
    REALLOC_FIRST = 64,
    MEMALIGN_ALIGNMENT = 64,
    MEMALIGN_SIZE = 4096,
    CHILD_COUNT = 10,
    CHILD_STEP = 512,
};

static void *volatile slots[MALLOC_COUNT];
/* Still reachable at exit, on purpose. */
static void *volatile leaked[LEAKED_COUNT];

static int fail(const char *what)
{
    fprintf(stderr, "demo: %s: %s\n", what, strerror(errno));
    return 1;
}

static int child_work(void)
{
    for (int i = 0; i < CHILD_COUNT; i++) {
        size_t size = (size_t)(i + 1) * CHILD_STEP;
        void *p = malloc(size);
        if (!p)
            return fail("child malloc");
        memset(p, 0xc1, size);
        slots[i] = p;
    }
    for (int i = 0; i < CHILD_COUNT; i++)
        free(slots[i]);
    return 0;
}

static int run_child(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0)
        _exit(child_work());

    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return fail("waitpid");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "demo: child failed (wait status %#x)\n", (unsigned)status);
        return 1;
    }
    return 0;
}

static int malloc_batch(void)
{
    for (int i = 0; i < MALLOC_COUNT; i++) {
        size_t size = (size_t)(i + 1) * MALLOC_STEP;
        void *p = malloc(size);
        if (!p)
            return fail("malloc");
        memset(p, 0xa5, size);
        slots[i] = p;
    }
    for (int i = 0; i < MALLOC_COUNT; i++)
        free(slots[i]);
    return 0;
}

static int calloc_batch(void)
{
    for (int i = 0; i < CALLOC_COUNT; i++) {
        void *p = calloc(CALLOC_NMEMB, CALLOC_SIZE);
        if (!p)
            return fail("calloc");
        slots[i] = p;
    }
    for (int i = 0; i < CALLOC_COUNT; i++) {
        if (i < LEAKED_COUNT)
            leaked[i] = slots[i];
        else
            free(slots[i]);
    }
    return 0;
}

static int realloc_chain(void)
{
    void *p = NULL;
    size_t size = REALLOC_FIRST;
    for (int i = 0; i < REALLOC_COUNT; i++, size *= 2) {
        void *q = realloc(p, size);
        if (!q) {
            free(p);
            return fail("realloc");
        }
        memset(q, 0x5a, size);
        slots[0] = q;
        p = slots[0];
    }
    free(p);
    return 0;
}

static int aligned_block(void)
{
    void *p = NULL;
    int err = posix_memalign(&p, MEMALIGN_ALIGNMENT, MEMALIGN_SIZE);
    if (err != 0) {
        errno = err;
        return fail("posix_memalign");
    }
    memset(p, 0x3c, MEMALIGN_SIZE);
    slots[0] = p;
    free(slots[0]);
    return 0;
}

int main(void)
{
    if (run_child() != 0 || malloc_batch() != 0 || calloc_batch() != 0 || realloc_chain() != 0 ||
        aligned_block() != 0)
        return 1;
    return 0;
}
