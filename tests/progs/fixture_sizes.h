/*
 * The distinctive sizes each fixture allocates, shared by the fixtures (C and C++) and the root
 * suite that checks them (tests/root/), so both always agree.
 *
 * None of these is a size the C or C++ runtime, stdio or the dynamic loader request on their own
 * (odd values near 7-10 KiB, page multiples only where the kernel demands them), so a test can pick
 * a fixture's events out of everything else a process does by size alone, then count exactly.
 * Everything stays below glibc's 128 KiB mmap threshold except FX_BIG_SIZE, whose point is that
 * glibc's own mmap/brk inside malloc is not recorded.
 */
#ifndef MEMTRACK_FIXTURE_SIZES_H
#define MEMTRACK_FIXTURE_SIZES_H

/* libc_all: one size per call site. */
#define FX_LIBC_MALLOC 7001u
#define FX_LIBC_CALLOC_N 13u
#define FX_LIBC_CALLOC_S 541u /* 13 * 541 = 7033 */
#define FX_LIBC_CALLOC (FX_LIBC_CALLOC_N * FX_LIBC_CALLOC_S)
#define FX_LIBC_GROW_FROM 7103u /* malloc, then realloc to FX_LIBC_GROW_TO */
#define FX_LIBC_BLOCKER 7019u   /* allocated right after it, so the realloc has to move */
#define FX_LIBC_GROW_TO 7207u
#define FX_LIBC_REALLOC_NULL 7309u /* realloc(NULL, n) */
#define FX_LIBC_REALLOC_ZERO 7411u /* malloc, then realloc(p, 0) */
#define FX_LIBC_REALLOC_FAIL 7517u /* malloc, then a realloc that fails, then free */
#define FX_LIBC_RA_NULL_N 17u
#define FX_LIBC_RA_NULL_S 433u /* reallocarray(NULL, 17, 433) = 7361 */
#define FX_LIBC_RA_NULL (FX_LIBC_RA_NULL_N * FX_LIBC_RA_NULL_S)
#define FX_LIBC_RA_FROM 7129u /* malloc, then reallocarray(p, 19, 383) = 7277 */
#define FX_LIBC_RA_N 19u
#define FX_LIBC_RA_S 383u
#define FX_LIBC_RA_TO (FX_LIBC_RA_N * FX_LIBC_RA_S)
#define FX_LIBC_ALIGNED_ALLOC 7424u /* aligned_alloc(64, .): a multiple of 64, as C11 asks */
#define FX_LIBC_MEMALIGN 7527u      /* memalign(128, .) */
#define FX_LIBC_POSIX_MEMALIGN 7639u /* posix_memalign(&p, 256, .) */
#define FX_LIBC_VALLOC 7741u
#define FX_LIBC_PVALLOC 7853u /* requested size; glibc rounds it up to a page internally */

/*
 * cxx_ops: one size per operator new call site. libstdc++'s aligned operator new rounds the size
 * up to a multiple of the alignment before it calls aligned_alloc, so a nested call recorded by
 * mistake shows up at the rounded size (8448, 8640, 8704, 8768): none of those is used here.
 */
#define FX_CXX_NEW_OBJ 8111u         /* new S (sizeof 8111), delete p (sized delete) */
#define FX_CXX_NEW_ARR 8221u         /* new char[8221], delete[] (unsized) */
#define FX_CXX_NEW_ARR_DTOR 8149u    /* new D[1163], sizeof(D) 7 + 8-byte array cookie; sized delete[] */
#define FX_CXX_NOTHROW_OBJ 8263u     /* new (nothrow) S, operator delete(p, nothrow) */
#define FX_CXX_NOTHROW_ARR 8291u     /* new (nothrow) char[], operator delete[](p, nothrow) */
#define FX_CXX_ALIGNED_OBJ 8576u     /* new A (alignas(128), sizeof 8576), sized aligned delete */
#define FX_CXX_ALIGNED_ARR 25728u    /* new A[3], delete[] (aligned, unsized) */
#define FX_CXX_ALIGNED_ALIGN 128u
#define FX_CXX_OPNEW_AL 8431u        /* operator new(., align_val_t(256)), delete(p, al) */
#define FX_CXX_OPNEW_AL_ALIGN 256u
#define FX_CXX_OPNEW_ARR_AL 8609u    /* operator new[](., align_val_t(64)), delete[](p, sz, al) */
#define FX_CXX_OPNEW_ARR_AL_ALIGN 64u
#define FX_CXX_OPNEW_AL_NT 8641u     /* operator new(., align_val_t(512), nothrow), delete(p, al, nothrow) */
#define FX_CXX_OPNEW_AL_NT_ALIGN 512u
#define FX_CXX_OPNEW_ARR_AL_NT 8747u /* operator new[](., align_val_t(32), nothrow), delete[](p, al, nothrow) */
#define FX_CXX_OPNEW_ARR_AL_NT_ALIGN 32u
#define FX_CXX_OPNEW 8849u           /* operator new(.), operator delete(p) */
#define FX_CXX_OPNEW_ARR 8951u       /* operator new[](.), operator delete[](p, sz) */
#define FX_CXX_OPNEW_SIZED 9059u     /* operator new(.), operator delete(p, sz) */

/* fork_tree: the parent's own size, then one per child, then the grandchild's. */
#define FX_FORK_PARENT 9001u
#define FX_FORK_CHILD0 9103u /* child 0 allocates it 1*N times */
#define FX_FORK_CHILD1 9209u /* child 1: 2*N times */
#define FX_FORK_CHILD2 9311u /* child 2: 3*N times, and forks the grandchild */
#define FX_FORK_GRANDCHILD 9413u /* grandchild: 4*N times */
#define FX_WIDE_BASE 9501u /* wide_tree: child i allocates FX_WIDE_BASE + i, i + 1 times */

/* threads: one size per thread, each allocated N times. */
#define FX_THREAD0 9511u
#define FX_THREAD1 9613u
#define FX_THREAD2 9719u
#define FX_THREAD3 9829u

/* cross_free: a thread allocates it, the main thread frees it, N times. */
#define FX_CROSS_FREE 3011u

/* lifecycle (tests/progs/lifecycle.c): one size per corner of a process's life. */
#define FX_LIFE_EXECED 9851u   /* `alloc N`: the program a thread execs into, N times */
#define FX_LIFE_CHILD 9857u    /* each child of `sigcont-children` and `stop-loop`, N times */
#define FX_LIFE_THREAD0 9859u  /* `leader-exit`: thread i allocates FX_LIFE_THREAD0 + 2 * i, N times */

/* mmap_ops: lengths passed to mmap/munmap/mremap, and the sbrk increment. */
#define FX_MMAP_LEN 151675u           /* 37 pages + 123 bytes: not a page multiple on purpose */
#define FX_MREMAP_FROM (41u * 4096u)  /* 167936 */
#define FX_MREMAP_GROW (97u * 4096u)  /* 397312, MREMAP_MAYMOVE */
#define FX_MREMAP_SHRINK (53u * 4096u) /* 217088, in place */
#define FX_SBRK_INC 12345u            /* sbrk(+inc) then sbrk(-inc) */

/* exit3, killed, big_alloc. */
#define FX_EXIT3_SIZE 9907u
#define FX_KILLED_SIZE 9931u
#define FX_BIG_SIZE (1024u * 1024u) /* above glibc's mmap threshold: malloc mmaps internally */
#define FX_BIG_START_MARK 9941u     /* malloc+free before the big allocations */
#define FX_BIG_END_MARK 9949u       /* malloc+free after them */

/*
 * allocators (tests/progs/allocators.c): the C API through whichever allocator the fixture is
 * built with or given (its override of malloc & co.), then that allocator's own API.
 */
#define FX_AL_MALLOC 11001u
#define FX_AL_CALLOC_N 7u
#define FX_AL_CALLOC_S 1601u /* 7 * 1601 = 11207 */
#define FX_AL_CALLOC (FX_AL_CALLOC_N * FX_AL_CALLOC_S)
#define FX_AL_REALLOC_FROM 11003u /* malloc, then realloc to FX_AL_REALLOC_TO */
#define FX_AL_REALLOC_TO 11311u
#define FX_AL_ALIGNED 11264u /* aligned_alloc(64, .) */
#define FX_AL_POSIX 11401u   /* posix_memalign(&p, 128, .) */
/* jemalloc's API: mallocx plain (freed by dallocx), aligned, zeroed; rallocx; sdallocx. */
#define FX_JE_MALLOCX 11503u
#define FX_JE_MALLOCX_ALIGN 11520u /* MALLOCX_ALIGN(256) */
#define FX_JE_MALLOCX_ZERO 11509u
#define FX_JE_RALLOCX_FROM 11513u /* mallocx, then rallocx to FX_JE_RALLOCX_TO, sdallocx */
#define FX_JE_RALLOCX_TO 11617u
#define FX_JE_SDALLOCX 11621u /* malloc, then sdallocx */
/* mimalloc's API. */
#define FX_MI_MALLOC 11701u
#define FX_MI_CALLOC_N 3u
#define FX_MI_CALLOC_S 3903u /* 3 * 3903 = 11709 */
#define FX_MI_CALLOC (FX_MI_CALLOC_N * FX_MI_CALLOC_S)
#define FX_MI_ZALLOC 11713u
#define FX_MI_REALLOC_FROM 11719u /* mi_malloc, then mi_realloc to FX_MI_REALLOC_TO */
#define FX_MI_REALLOC_TO 11821u
#define FX_MI_ALIGNED 11776u  /* mi_malloc_aligned(., 64) */
#define FX_MI_ZALIGNED 11840u /* mi_zalloc_aligned(., 64) */
#define FX_MI_CALIGNED_N 5u
#define FX_MI_CALIGNED_S 2371u /* mi_calloc_aligned(5, 2371, 32) = 11855 */
#define FX_MI_CALIGNED (FX_MI_CALIGNED_N * FX_MI_CALIGNED_S)
#define FX_MI_REALIGNED_FROM 11903u /* mi_malloc_aligned, then mi_realloc_aligned to ..._TO */
#define FX_MI_REALIGNED_TO 11968u
#define FX_MI_FREE_SIZE 11927u /* mi_malloc, then mi_free_size */
#define FX_MI_MALLOCN_N 7u
#define FX_MI_MALLOCN_S 1693u /* mi_mallocn(7, 1693) = 11851 */
#define FX_MI_MALLOCN (FX_MI_MALLOCN_N * FX_MI_MALLOCN_S)
/* mi_malloc_aligned(512, 64) takes mimalloc's small path: a tail call to mi_heap_malloc_small. */
#define FX_MI_SMALL_ALIGNED 512u
/* mimalloc's mi_heap_* API, on a heap of the fixture's own (the heap is the first argument). */
#define FX_MI_HEAP_MALLOC 11731u
#define FX_MI_HEAP_CALLOC_N 3u
#define FX_MI_HEAP_CALLOC_S 3911u /* 11733 */
#define FX_MI_HEAP_CALLOC (FX_MI_HEAP_CALLOC_N * FX_MI_HEAP_CALLOC_S)
#define FX_MI_HEAP_ZALLOC 11737u
#define FX_MI_HEAP_REALLOC_FROM 11741u /* mi_heap_malloc, then mi_heap_realloc to ..._TO */
#define FX_MI_HEAP_REALLOC_TO 11843u
#define FX_MI_HEAP_ALIGNED 11648u /* mi_heap_malloc_aligned(heap, ., 128) */
#define FX_MI_HEAP_MALLOCN_N 9u
#define FX_MI_HEAP_MALLOCN_S 1303u /* 11727 */
#define FX_MI_HEAP_MALLOCN (FX_MI_HEAP_MALLOCN_N * FX_MI_HEAP_MALLOCN_S)
/* allocators built for dlopen: mimalloc loaded at run time, called through dlsym. */
#define FX_DL_MALLOC 12001u
#define FX_DL_CALLOC_N 3u
#define FX_DL_CALLOC_S 4003u /* 12009 */
#define FX_DL_CALLOC (FX_DL_CALLOC_N * FX_DL_CALLOC_S)

/* heap_trim: two blocks from the brk heap whose frees make glibc trim it (free -> brk). */
#define FX_TRIM_A 100003u
#define FX_TRIM_B 100019u

/* dlopen_many: each libmany copy's constructor allocates this once and keeps it. */
#define FX_MANY_LIB_ALLOC 13001u
/* timeline_tree: child 0's exit code, and the anonymous memory child 3 touches (MiB). */
#define FX_TIMELINE_CODE 42
#define FX_TIMELINE_TOUCH_MIB 128
/* timeline_tree: what child 2 holds when it execs. */
#define FX_TIMELINE_EXEC_DROP 50021u

#endif
