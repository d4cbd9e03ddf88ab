/*
 * mt-capture: records a program's control flow with Intel PT.  Only the
 * check for the PMU exists so far; the capture backends come next.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PT_TYPE "/sys/bus/event_source/devices/intel_pt/type"

static const char usage[] =
	"usage: mt-capture [options] -- COMMAND [ARGS...]\n"
	"Records COMMAND's control flow with Intel PT (not built yet: for "
	"now mt-capture\nonly checks that this machine has the intel_pt "
	"PMU).\n";

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 0;
		}
	}
	if (access(PT_TYPE, R_OK)) {
		fputs("mt-capture: no intel_pt PMU on this machine "
		      "(/sys/bus/event_source/devices/intel_pt is missing: a "
		      "virtual machine, an AMD CPU or a CPU older than "
		      "Broadwell?); capture is not available here\n",
		      stderr);
		return 1;
	}
	fputs("mt-capture: the Intel PT capture backend is not built yet\n",
	      stderr);
	return 1;
}
