/*
 * mt-convert: turns a capture into a Perfetto trace.  For now only the
 * summary (--info) exists; the conversion arrives with the decoder.
 */
#include "perfdata/perfdata.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: mt-convert --info CAPTURE\n"
	"       mt-convert CAPTURE -o OUT.pftrace   (not available yet)\n";

int main(int argc, char **argv)
{
	struct pd_err err = {0};

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "--info")) {
		if (argc != 3 || argv[2][0] == '-') {
			fputs(usage, stderr);
			return 2;
		}
		if (pd_info_print(stdout, argv[2], &err)) {
			fprintf(stderr, "mt-convert: %s\n", err.msg);
			return 1;
		}
		return 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2)
			fprintf(stderr, "mt-convert: unknown option %s\n",
				argv[1]);
		fputs(usage, stderr);
		return 2;
	}
	fputs("mt-convert: conversion to Perfetto is not available in this "
	      "build yet; use --info\n",
	      stderr);
	return 2;
}
