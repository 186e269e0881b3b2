/* Measures this machine's memcpy bandwidth with T threads, counted as bytes read + bytes written per second (the same
   accounting as lmkit quantize's gb_per_s). Buffers are allocated and touched before the timed region.
   Usage: memcpy_bw THREADS MB_PER_THREAD REPEATS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t bytes;
static int repeats;
static pthread_barrier_t start, stop;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void* run(void* arg) {
  (void)arg;
  char* a = malloc(bytes);
  char* b = malloc(bytes);
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  pthread_barrier_wait(&start);
  for (int r = 0; r < repeats; ++r) memcpy(r % 2 ? a : b, r % 2 ? b : a, bytes);
  pthread_barrier_wait(&stop);
  free(a);
  free(b);
  return NULL;
}
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 256) << 20;
  repeats = argc > 3 ? atoi(argv[3]) : 8;
  pthread_t t[64];
  pthread_barrier_init(&start, NULL, threads + 1);
  pthread_barrier_init(&stop, NULL, threads + 1);
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, run, NULL);
  pthread_barrier_wait(&start);
  double t0 = now();
  pthread_barrier_wait(&stop);
  double dt = now() - t0;
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  printf("%.3f\n", (double)threads * bytes * 2.0 * repeats / dt / 1e9);
  return 0;
}
