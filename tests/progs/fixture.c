/* The out-of-line half of fixture.h, linked into every fixture. */
#include "fixture.h"

void *volatile fx_sink;

void fx_escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	fx_sink = p;
}
