/*
 * fuzz_timing.c — libFuzzer target for the two timing files `trace import` reads: a capture's GPU free
 * times (--gpu-frees, pt_gpu_frees_load) and a cudaMallocAsync run's log (--async-run,
 * pt_async_run_load).  Whatever the bytes, each loads or fails with a message naming the file; never a
 * crash, hang or leak.  The loaders read a path, so each input is written to one scratch file first.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpufrees.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/fuzz_timing.XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) __builtin_trap();
    close(fd);
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f)) __builtin_trap();
  pt_err err;
  pt_gpu_frees g;
  if (pt_gpu_frees_load(path, &g, &err) == 0) {
    for (size_t i = 1; i < g.nsync; i++)
      if (g.sync_at[i] <= g.sync_at[i - 1]) __builtin_trap(); /* the order was checked */
    pt_gpu_frees_free(&g);
  } else if (strncmp(err.msg, path, strlen(path)) != 0) {
    __builtin_trap(); /* every error names the file */
  }
  pt_async_run a;
  if (pt_async_run_load(path, &a, &err) == 0) {
    for (size_t i = 0; i < a.n; i++)
      if (a.c[i].free && (a.c[i].free > a.nfree || a.c[i].req == 0 || a.c[i].req > a.nreq)) __builtin_trap();
    pt_async_run_free(&a);
  } else if (strncmp(err.msg, path, strlen(path)) != 0) {
    __builtin_trap();
  }
  return 0;
}
