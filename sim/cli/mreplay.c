/* mreplay.c — a trace's requests through the mechanism on the real GPU (see mreplay.h). */
#include "mreplay.h"

#include <string.h>

#include "cudadev.h"

typedef struct touch {
  pt_cudadev *c;
  pt_mreplay_result *out;
  pt_err *err;
} touch;

/* The block's pattern: its allocation id, mixed so that neighbours differ in every byte. */
static uint32_t pattern(uint64_t id) { return (uint32_t)((id + 1) * 2654435761u) | 1u; }

static int t_alloc(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  touch *t = ctx;
  if (bytes < 4) return 0;
  t->out->touched++;
  return pt_cudadev_fill(t->c, addr, bytes / 4, pattern(id));
}

static int t_free(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  touch *t = ctx;
  if (bytes < 4) return 0;
  uint64_t words = bytes / 4, at[3] = {0, words / 2, words - 1};
  t->out->checked++;
  for (int k = 0; k < 3; k++) {
    uint32_t v;
    int rc = pt_cudadev_read_word(t->c, addr + 4 * at[k], &v);
    if (rc < 0) return rc;
    if (v != pattern(id)) {
      if (!t->out->mismatches++) {
        t->out->first_bad_addr = addr;
        t->out->first_bad_bytes = bytes;
      }
    }
  }
  return 0;
}

int pt_mreplay_run(pt_driver *d, const pt_trace_data *t, const pt_sim_config *cfg, int touch_blocks, pt_sim_result *r,
                   pt_mreplay_result *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  memset(r, 0, sizeof *r);
  pt_cudadev *c;
  int rc = pt_cudadev_open(d, 0, err, &c);
  if (rc < 0) return rc;
  if ((rc = pt_cudadev_mem_info(c, &out->free_before, &out->total)) < 0) {
    pt_cudadev_close(c);
    return rc;
  }
  touch tc = {c, out, err};
  pt_sim_config run = *cfg;
  run.device_ops = &pt_cudadev_ops;
  run.device_st = c;
  run.log = NULL;
  if (touch_blocks) {
    run.on_alloc = t_alloc;
    run.on_free = t_free;
    run.observer_ctx = &tc;
  }
  rc = pt_sim_run(t, &run, err, r);
  pt_cudadev_close(c); /* after the engine gave everything back; leftover reservations go here */
  pt_cudadev *c2;
  pt_err e2 = {{0}};
  if (pt_cudadev_open(d, 0, &e2, &c2) == 0) {
    uint64_t total;
    pt_cudadev_mem_info(c2, &out->free_after, &total);
    pt_cudadev_close(c2);
  }
  return rc;
}
