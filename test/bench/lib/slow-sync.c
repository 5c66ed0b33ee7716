// Preloaded into the daemon by BENCH_SLOW_SYNC_MS (lib/slow-sync.mjs): every fsync, fdatasync and
// syncfs through libc first sleeps SLOW_SYNC_MS. It stands in for an SD card's flush (tens of ms),
// which this VM's disk (1 to 3 ms) cannot show. Benchmarks only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void pause_first(void) {
  const char *ms_text = getenv("SLOW_SYNC_MS");
  long ms = ms_text ? atol(ms_text) : 0;
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  if (ms > 0) nanosleep(&ts, 0);
}

// Each call: the pause, then libc's own function, found once.
#define SLOWED(name)                                                       \
  int name(int fd) {                                                       \
    static int (*real)(int);                                               \
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, #name);               \
    pause_first();                                                         \
    return real(fd);                                                       \
  }

SLOWED(fsync)
SLOWED(fdatasync)
SLOWED(syncfs)
