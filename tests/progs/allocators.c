/*
 * allocators [N]: N rounds of known allocations through one allocator (fixture_sizes.h, FX_AL_*
 * and the allocator's own). Built several times (tests/progs/meson.build):
 *   -DFX_JEMALLOC   jemalloc's API too (mallocx, rallocx, dallocx, sdallocx)
 *   -DFX_MIMALLOC   mimalloc's API too (mi_*)
 *   -DFX_DLOPEN     only mimalloc, loaded by dlopen and called through dlsym
 * Without either, only the C API: whichever allocator the process has (glibc, LD_PRELOAD's).
 * Every block is freed before the round ends.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

#if defined(FX_JEMALLOC)
#include <jemalloc/jemalloc.h>
#elif defined(FX_MIMALLOC)
#include <mimalloc.h>
#elif defined(FX_DLOPEN)
#include <dlfcn.h>
#endif

static void *keep(void *p)
{
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

#if !defined(FX_DLOPEN)
static void c_api(void)
{
	free(keep(malloc(fx_size(FX_AL_MALLOC))));
	free(keep(calloc(fx_size(FX_AL_CALLOC_N), fx_size(FX_AL_CALLOC_S))));
	void *p = keep(malloc(fx_size(FX_AL_REALLOC_FROM)));
	free(keep(realloc(p, fx_size(FX_AL_REALLOC_TO))));
	free(keep(aligned_alloc(64, fx_size(FX_AL_ALIGNED))));
	void *q = NULL;
	FX_REQUIRE(posix_memalign(&q, 128, fx_size(FX_AL_POSIX)) == 0);
	free(keep(q));
}
#endif

#if defined(FX_JEMALLOC)
static void own_api(void)
{
	dallocx(keep(mallocx(fx_size(FX_JE_MALLOCX), 0)), 0);
	void *a = keep(mallocx(fx_size(FX_JE_MALLOCX_ALIGN), MALLOCX_ALIGN(256)));
	FX_REQUIRE(((unsigned long)a & 255) == 0);
	dallocx(a, 0);
	dallocx(keep(mallocx(fx_size(FX_JE_MALLOCX_ZERO), MALLOCX_ZERO)), 0);
	void *r = keep(mallocx(fx_size(FX_JE_RALLOCX_FROM), 0));
	sdallocx(keep(rallocx(r, fx_size(FX_JE_RALLOCX_TO), 0)), FX_JE_RALLOCX_TO, 0);
	sdallocx(keep(malloc(fx_size(FX_JE_SDALLOCX))), FX_JE_SDALLOCX, 0);
}
#elif defined(FX_MIMALLOC)
static void own_api(void)
{
	mi_free(keep(mi_malloc(fx_size(FX_MI_MALLOC))));
	mi_free(keep(mi_calloc(fx_size(FX_MI_CALLOC_N), fx_size(FX_MI_CALLOC_S))));
	mi_free(keep(mi_zalloc(fx_size(FX_MI_ZALLOC))));
	void *p = keep(mi_malloc(fx_size(FX_MI_REALLOC_FROM)));
	mi_free(keep(mi_realloc(p, fx_size(FX_MI_REALLOC_TO))));
	mi_free(keep(mi_malloc_aligned(fx_size(FX_MI_ALIGNED), 64)));
	mi_free(keep(mi_zalloc_aligned(fx_size(FX_MI_ZALIGNED), 64)));
	mi_free(keep(mi_calloc_aligned(fx_size(FX_MI_CALIGNED_N), fx_size(FX_MI_CALIGNED_S), 32)));
	void *a = keep(mi_malloc_aligned(fx_size(FX_MI_REALIGNED_FROM), 64));
	mi_free(keep(mi_realloc_aligned(a, fx_size(FX_MI_REALIGNED_TO), 64)));
	mi_free_size(keep(mi_malloc(fx_size(FX_MI_FREE_SIZE))), FX_MI_FREE_SIZE);
	mi_free(keep(mi_mallocn(fx_size(FX_MI_MALLOCN_N), fx_size(FX_MI_MALLOCN_S))));
	void *s = keep(mi_malloc_aligned(fx_size(FX_MI_SMALL_ALIGNED), 64));
	FX_REQUIRE(((unsigned long)s & 63) == 0);
	mi_free(s);

	mi_heap_t *heap = mi_heap_new();
	FX_REQUIRE(heap != NULL);
	mi_free(keep(mi_heap_malloc(heap, fx_size(FX_MI_HEAP_MALLOC))));
	mi_free(keep(mi_heap_calloc(heap, fx_size(FX_MI_HEAP_CALLOC_N), fx_size(FX_MI_HEAP_CALLOC_S))));
	mi_free(keep(mi_heap_zalloc(heap, fx_size(FX_MI_HEAP_ZALLOC))));
	void *h = keep(mi_heap_malloc(heap, fx_size(FX_MI_HEAP_REALLOC_FROM)));
	mi_free(keep(mi_heap_realloc(heap, h, fx_size(FX_MI_HEAP_REALLOC_TO))));
	mi_free(keep(mi_heap_malloc_aligned(heap, fx_size(FX_MI_HEAP_ALIGNED), 128)));
	mi_free(keep(mi_heap_mallocn(heap, fx_size(FX_MI_HEAP_MALLOCN_N), fx_size(FX_MI_HEAP_MALLOCN_S))));
	mi_heap_delete(heap);
}
#elif defined(FX_DLOPEN)
static void *(*dl_malloc)(size_t);
static void *(*dl_calloc)(size_t, size_t);
static void (*dl_free)(void *);

static void own_api(void)
{
	dl_free(keep(dl_malloc(fx_size(FX_DL_MALLOC))));
	dl_free(keep(dl_calloc(fx_size(FX_DL_CALLOC_N), fx_size(FX_DL_CALLOC_S))));
}
#else
static void own_api(void) {}
#endif

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 10);
#if defined(FX_DLOPEN)
	void *lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return FX_FIXTURE_BROKEN;
	}
	*(void **)&dl_malloc = dlsym(lib, "mi_malloc");
	*(void **)&dl_calloc = dlsym(lib, "mi_calloc");
	*(void **)&dl_free = dlsym(lib, "mi_free");
	FX_REQUIRE(dl_malloc && dl_calloc && dl_free);
#endif
	for (unsigned i = 0; i < n; i++) {
#if !defined(FX_DLOPEN)
		c_api();
#endif
		own_api();
	}
	return 0;
}
