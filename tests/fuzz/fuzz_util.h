/* Shared pieces of the argument fuzzers (tests/fuzz/fuzz_*.c, make fuzz), on the Check suites'
** generator and C exec (tests/c/test_util.h): "evil" int64 values (negative, zero,
** overflow-sized), saturating arithmetic for the harness's own sizes, buffers of exactly a given
** size (a size past 64 MB or negative, an overflowing extent, marks the call "huge"), the
** verdict on each call, and the main loop. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kg.h"
#include "test_util.h"

static tu_rng fz_rng = { 88172645463325252ull };
static long fz_ok, fz_err, fz_bad;   /* calls that succeeded, were refused; findings */

static inline uint64_t rnd(void) { return tu_rng_next(&fz_rng); }
static inline int64_t pick(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static inline int coin(int pct) { return (int)(rnd() % 100) < pct; }

/* an "evil" int64: negative, zero, or overflow-sized */
static inline int64_t evil(void) {
  static const int64_t v[] = { -1, 0, INT64_MIN, INT64_MAX, (int64_t)1 << 62, -((int64_t)1 << 40), (int64_t)1 << 61 };
  return v[rnd() % (sizeof v / sizeof v[0])];
}
static inline int64_t maybe_evil(int64_t v, int pct) { return coin(pct) ? evil() : v; }
/* saturating a + b and a * b */
static inline int64_t sadd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (a > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t smul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}

/* Buffers that buf() handed out one to three bytes into their allocation: (pointer, base). */
enum { FZ_SHIFTED_MAX = 256 };
static void *fz_shifted[FZ_SHIFTED_MAX][2];
static int fz_nshifted;

/* a buffer of `bytes` random bytes; past 64 MB or negative (an overflowing extent): 64 bytes,
** and *huge is set (the call must then be refused). Now and then the buffer starts one to
** three bytes into its allocation (still exactly `bytes` long): typed operands there must be
** refused as misaligned, byte operands work. Release with fz_free. */
static inline void *buf(int64_t bytes, int *huge) {
  if (bytes < 0 || bytes > (64 << 20)) { *huge = 1; bytes = 64; }
  if (bytes == 0) bytes = 1;
  const int shift = fz_nshifted < FZ_SHIFTED_MAX && coin(4) ? (int)pick(1, 3) : 0;
  unsigned char *base = malloc((size_t)bytes + (size_t)shift), *p = base + shift;
  for (int64_t i = 0; i < bytes; i++) p[i] = (unsigned char)rnd();
  if (shift) {
    fz_shifted[fz_nshifted][0] = p;
    fz_shifted[fz_nshifted++][1] = base;
  }
  return p;
}

/* free() for buf()'s buffers (and plain malloc's): frees the allocation p lies in. */
static inline void fz_free(const void *p) {
  for (int i = 0; i < fz_nshifted; i++)
    if (fz_shifted[i][0] == p) {
      free(fz_shifted[i][1]);
      fz_shifted[i][0] = fz_shifted[fz_nshifted - 1][0];
      fz_shifted[i][1] = fz_shifted[--fz_nshifted][1];
      return;
    }
  free((void *)p);
}

/* The verdict on one call: a known status, and no success where a size was huge. */
static inline void report(const char *what, kg_status st, int huge, const char *desc) {
  if (st == KG_SUCCESS) {
    fz_ok++;
    if (huge) { fz_bad++; printf("ACCEPTED HUGE %s: %s\n", what, desc); }
  } else fz_err++;
  if ((int)st < 0 || st > KG_ERROR_BACKEND || st == KG_ERROR_INTERNAL) {
    fz_bad++;
    printf("UNKNOWN STATUS %d %s: %s\n", (int)st, what, desc);
  }
}

/* main of a fuzzer: argv[1] iterations (default 20000), argv[2] seed; each iteration runs one
** of the n steps at random. Exit 0 when nothing was found. */
static inline int fz_main(int argc, char **argv, void (*const *steps)(void), int n) {
  const long iters = argc > 1 ? atol(argv[1]) : 20000;
  if (argc > 2) tu_rng_seed(&fz_rng, strtoull(argv[2], NULL, 10));
  for (long i = 0; i < iters; i++) steps[rnd() % (uint64_t)n]();
  printf("ok %ld, rejected %ld, findings %ld\n", fz_ok, fz_err, fz_bad);
  return fz_bad != 0;
}

#endif
