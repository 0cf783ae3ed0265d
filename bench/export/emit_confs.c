/*
 * emit_confs.c — the conf strings the GPU check feeds to PyTorch, produced by
 * sim/work/export.c itself (not typed by hand).  One line each: NAME<TAB>VALUE.
 * Usage: emit_confs [DEVICE_TOTAL_BYTES]   (default: the H200's 150109880320)
 * Build: as bench/export/run_on_device.sh does (export.c, the base, device and mech layers,
 *        pagetable.c; -I for each folder of sim/)
 */
#include <stdio.h>
#include <stdlib.h>

#include "export.h"

static int emit(const char *name, const pt_export_input *in, const char *merge) {
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  pt_err err = {{0}};
  if (pt_export_conf(in, merge, conf, sizeof conf, notes, sizeof notes, &err)) {
    fprintf(stderr, "emit_confs: %s: %s\n", name, err.msg);
    return 1;
  }
  printf("%s\t%s\n", name, conf);
  return 0;
}

int main(int argc, char **argv) {
  uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 10) : UINT64_C(150109880320);
  uint64_t cap = UINT64_C(1) << 30; /* the cap the GC check runs under */
  int bad = 0;
  pt_params knobs = {0};
  pt_params_set(&knobs, "garbage_collection_threshold", 0.6);
  pt_params_set(&knobs, "max_split_size_mb", 64);
  pt_export_input in = {.policy = "gpu_check", .mechanism = "caching", .params = &knobs, .capacity = cap,
                        .device_total_bytes = total, .run_id = -1};
  bad |= emit("knobs", &in, NULL);
  pt_params rp2 = {0};
  pt_params_set(&rp2, "roundup_power2_divisions", 4);
  pt_export_input in_rp2 = {.policy = "gpu_check", .mechanism = "caching", .params = &rp2, .run_id = -1};
  bad |= emit("rp2", &in_rp2, NULL);
  pt_export_input in_exp = {.policy = "gpu_check", .mechanism = "expandable", .run_id = -1};
  bad |= emit("expandable", &in_exp, NULL);
  pt_params never = {0}; /* a pool that never releases: what PyTorch's backend does (a releasing one needs the library) */
  pt_params_set(&never, "release_threshold", PT_EXPORT_ASYNC_NEVER);
  pt_export_input in_async = {.policy = "gpu_check", .mechanism = "async_pool", .params = &never, .run_id = -1};
  bad |= emit("async", &in_async, NULL);
  bad |= emit("merged", &in,
              "pinned_use_cuda_host_register:True,max_split_size_mb:128,release_lock_on_cudamalloc:True,expandable_segments:True");
  char f[32];
  pt_err err = {{0}};
  if (pt_export_fraction(cap, total, f, sizeof f, &err)) {
    fprintf(stderr, "emit_confs: fraction: %s\n", err.msg);
    return 1;
  }
  printf("fraction\t%s\ncap\t%llu\n", f, (unsigned long long)cap);
  return bad;
}
