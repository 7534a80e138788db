/* libstackcfi.so (stack_cfi_lib.c): built like stack_cfi, without frame pointers. */
#ifndef MEMTRACK_STACK_CFI_LIB_H
#define MEMTRACK_STACK_CFI_LIB_H
#include <stddef.h>

void *cfi_lib_outer(size_t size);

#endif
