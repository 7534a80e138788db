/*
 * The distinctive sizes of the call-stack fixtures (tests/progs/stack_*), shared with the root
 * suite's tests/root/test_stacks.cpp so both always agree. Like fixture_sizes.h: odd values that
 * neither the C/C++ runtime nor the loader asks for, so a test can pick a fixture's events out by
 * size alone; all in 10-11 KiB, clear of fixture_sizes.h's range.
 */
#ifndef MEMTRACK_STACK_SIZES_H
#define MEMTRACK_STACK_SIZES_H

/* stack_chain: main -> alpha -> beta -> gamma -> malloc, size STK_CHAIN_FIRST + i*STK_CHAIN_STEP. */
#define STK_CHAIN_FIRST 10103u
#define STK_CHAIN_STEP 6u
#define STK_CHAIN_DEFAULT_N 5u

/* stack_shlib: main -> stacklib_alloc -> stacklib_leaf -> malloc, inside libstacklib.so. */
#define STK_SHLIB_SIZE 10211u

/* stack_dlopen: one malloc before dlopen(libstacklib.so), then stacklib_alloc(STK_SHLIB_SIZE). */
#define STK_DLOPEN_FIRST_SIZE 10223u

/* stack_cxx (-O2): stk::Widget::make(int) -> operator new, and outer -> [inlined_helper] -> new. */
#define STK_CXX_WIDGET 10313u /* sizeof(stk::Widget), made by stk::Widget::make(int) */
#define STK_CXX_GADGET 10331u /* sizeof(stk::Gadget), made inside the inlined helper */

/* stack_exit_fast: child i (of STK_EXIT_CHILDREN) mallocs STK_EXIT_FIRST + i once, then _exit. */
#define STK_EXIT_FIRST 10401u
#define STK_EXIT_CHILDREN 20u

/* stack_stripped (strip --strip-all): main -> strip_outer -> strip_inner -> malloc. */
#define STK_STRIP_SIZE 10513u

/* stack_nofp (-O2 -fomit-frame-pointer). */
#define STK_NOFP_CHAIN 10619u   /* main -> nofp_outer -> nofp_leaf -> malloc, rbp as the compiler left it */
#define STK_NOFP_LOWADDR 10627u /* malloc called with rbp -> {0, 0x10}: frame 1 is an unmapped address */
#define STK_NOFP_DATA 10631u    /* rbp -> {0, &data}: frame 1 is an address in the binary's data */
#define STK_NOFP_BADRBP 10637u  /* rbp = 8: nothing readable past frame 0 */

/* stack_sites: 10 call sites, STK_SITES_CALLS times each; site i mallocs STK_SITES_FIRST + i*10. */
#define STK_SITES_COUNT 10u
#define STK_SITES_FIRST 10701u
#define STK_SITES_STEP 10u
#define STK_SITES_CALLS 10000u

/* stack_flood: 2^STK_FLOOD_DEPTH distinct stacks, one malloc(STK_FLOOD_SIZE) each. */
#define STK_FLOOD_DEPTH 12u
#define STK_FLOOD_SIZE 10811u
#define STK_FLOOD_MAX_THREADS 8u

/* stack_exec: STK_EXEC_SITES sites before an exec of itself, one after it. */
#define STK_EXEC_BEFORE 10961u
#define STK_EXEC_SITES 8u
#define STK_EXEC_AFTER 10971u

/* stack_cfi (-O2 -fomit-frame-pointer, rbp clobbered): the CFI walk's chains. */
#define STK_CFI_CHAIN 10901u /* main -> cfi_a -> cfi_b -> cfi_c -> malloc */
#define STK_CFI_QSORT 10909u /* main -> qsort -> ... -> cfi_compare -> malloc */
#define STK_CFI_SHLIB 10913u /* main -> cfi_lib_outer -> cfi_lib_inner -> malloc, libstackcfi.so */
#define STK_CFI_REPEAT 10917u /* main -> cfi_repeat -> the chain, STK_CFI_REPEATS times from one site */
#define STK_CFI_REPEATS 5u
#define STK_CFI_TWIN_X 10921u /* main -> cfi_twin_x -> cfi_twin_leaf -> malloc */
#define STK_CFI_TWIN_Y 10923u /* main -> cfi_twin_y -> cfi_twin_leaf -> malloc, same sp and site */
#define STK_CFI_TWINS 3u      /* of each, alternating */
#define STK_CFI_FORK_P 10925u /* main -> cfi_fork_x -> cfi_fork_c -> cfi_fork_m -> cfi_fork_leaf -> malloc */
#define STK_CFI_FORK_Q 10927u /* main -> cfi_fork_y -> cfi_fork_c -> cfi_fork_n -> cfi_fork_leaf -> malloc */
#define STK_CFI_FORKS 3u      /* of each, alternating */
/* stack_cfi_cxx: a vector<unsigned> grown to this many elements: 1, 2, 4, ... 4096 ints. */
#define STK_CFI_CXX_ELEMS 4096u

#endif
