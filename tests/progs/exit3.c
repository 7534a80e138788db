/* exit3: one malloc of FX_EXIT3_SIZE, never freed, then exit status 3. */
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

int main(void)
{
	void *p = malloc(fx_size(FX_EXIT3_SIZE));
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	exit(3);
}
