/*
 * libstacklib.so, the call-stack tests' own shared library (stack_lib.c): an allocation whose
 * innermost frames lie in a module other than the executable.
 */
#ifndef MEMTRACK_STACK_LIB_H
#define MEMTRACK_STACK_LIB_H

#include <stddef.h>

/* stacklib_alloc -> stacklib_leaf -> malloc(size); never NULL (exits FX_FIXTURE_BROKEN). */
void *stacklib_alloc(size_t size);

#endif
