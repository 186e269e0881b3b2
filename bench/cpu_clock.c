/* This core's clock while it runs, for bench/model.sh's share of the FMA peak: a chain of dependent integer adds
   (one per cycle on every x86 core since the P6) timed by the thread's CPU clock, so time-slicing by other processes
   does not count. Prints the GHz of the best of 5 runs of 2e9 adds.
   Usage: cpu_clock */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const uint64_t n = 2000000000ull;
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    uint64_t x = 0;
    const double t0 = cpu_now();
    for (uint64_t i = 0; i < n; i += 8)
      __asm__ volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    const double ghz = (double)n / (cpu_now() - t0) * 1e-9;
    if (ghz > best) best = ghz;
  }
  printf("%.3f\n", best);
  return 0;
}
