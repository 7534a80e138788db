/*
 * libmany: the small library dlopen_many loads under many names (each a copy of this file, so
 * each is an object of its own). Its constructor makes one allocation of FX_MANY_LIB_ALLOC bytes
 * and keeps it: the allocation happens after the loader's hook, in code mapped by that dlopen.
 * Built without the fixture helpers (it links nothing of the test's): the volatile global keeps
 * the block.
 */
#include <stdlib.h>

#include "fixture_sizes.h"

void *volatile many_lib_kept;

__attribute__((constructor)) static void many_lib_init(void)
{
	many_lib_kept = malloc(FX_MANY_LIB_ALLOC);
}
