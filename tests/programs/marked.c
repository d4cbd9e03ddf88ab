/*
 * mt_mark_start(), a wait that grows each round (30 ms more each time),
 * then a snapshot request: with --duration-thresh only the rounds that
 * took long enough snapshot.
 */
#include "include/magic_trace.h"

#include <time.h>

int main(void)
{
	for (long i = 0; i < 20; i++) {
		struct timespec ts = {0, i * 30000000L};

		mt_mark_start();
		nanosleep(&ts, NULL);
		mt_take_snapshot_with_arg(i);
	}
	return 0;
}
