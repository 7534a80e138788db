/* exec_into PROGRAM [ARGS...]: becomes PROGRAM (execv), allocating nothing of its own first. */
#include <stdio.h>
#include <unistd.h>

#include "fixture.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: exec_into PROGRAM [ARGS...]\n");
		return FX_FIXTURE_BROKEN;
	}
	execv(argv[1], argv + 1);
	perror("execv");
	return FX_FIXTURE_BROKEN;
}
