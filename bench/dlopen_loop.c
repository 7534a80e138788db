// dlopen_loop N LIBRARY: N times dlopen(LIBRARY) then dlclose, so each round maps and unmaps it
// (scripts/bench.sh --allocators: what holding new code until it is probed adds to a dlopen).
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: dlopen_loop N LIBRARY\n");
        return 2;
    }
    const long n = strtol(argv[1], NULL, 10);
    for (long i = 0; i < n; ++i) {
        void* h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        dlclose(h);
    }
    return 0;
}
