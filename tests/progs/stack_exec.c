/*
 * stack_exec: allocates from STK_EXEC_SITES functions, then execs itself; the new image (another
 * load address) allocates once more and exits. Each stack must be symbolized with the mappings
 * of the image it was taken in, although both images' stacks can reach memtrack together.
 *
 *   STK_EXEC_BEFORE + i  main -> exec_site_i -> malloc, in the first image (i < STK_EXEC_SITES)
 *   STK_EXEC_AFTER       main -> exec_after -> malloc, in the image exec'ed
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "stack_sizes.h"

#define EXEC_SITE(i)                                                                      \
	__attribute__((noinline)) static void exec_site_##i(void)                        \
	{                                                                                 \
		char *p = malloc(fx_size(STK_EXEC_BEFORE + i)); /* STACK_MARK(exec-site-malloc) */ \
		FX_REQUIRE(p != NULL);                                                    \
		fx_escape(p);                                                             \
		free(fx_launder(p));                                                      \
	}
EXEC_SITE(0)
EXEC_SITE(1)
EXEC_SITE(2)
EXEC_SITE(3)
EXEC_SITE(4)
EXEC_SITE(5)
EXEC_SITE(6)
EXEC_SITE(7)

__attribute__((noinline)) static void exec_after(void)
{
	char *p = malloc(fx_size(STK_EXEC_AFTER)); /* STACK_MARK(exec-after-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	free(fx_launder(p));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "after") == 0) {
		exec_after(); /* STACK_MARK(exec-main-calls-after) */
		return 0;
	}
	exec_site_0();
	exec_site_1();
	exec_site_2();
	exec_site_3();
	exec_site_4();
	exec_site_5();
	exec_site_6();
	exec_site_7();
	execl("/proc/self/exe", argv[0], "after", (char *)NULL);
	return FX_FIXTURE_BROKEN;
}
