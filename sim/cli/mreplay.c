/* mreplay.c — a trace's requests through the mechanism on the real GPU (see mreplay.h). */
#include "mreplay.h"

#include <stdlib.h>
#include <string.h>

#include "cudadev.h"

typedef struct observer {
  pt_cudadev *c;
  const pt_mreplay_opts *o;
  pt_mreplay_result *out;
} observer;

/* The block's pattern: its allocation id, mixed so that neighbours differ in every byte. */
static uint32_t pattern(uint64_t id) { return (uint32_t)((id + 1) * 2654435761u) | 1u; }

/* The driver's view after reserved bytes changed (a failed poll is not the run's failure: it stays 0 then). */
static void on_reserved(void *ctx, uint64_t reserved) {
  observer *ob = ctx;
  uint64_t f, t;
  (void)reserved;
  if (pt_cudadev_mem_info(ob->c, &f, &t) == 0 && f < ob->out->free_before && ob->out->free_before - f > ob->out->driver_peak_used)
    ob->out->driver_peak_used = ob->out->free_before - f;
}

static int on_alloc(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  observer *ob = ctx;
  if (!ob->o->touch || bytes < 4) return 0;
  ob->out->touched++;
  return pt_cudadev_fill(ob->c, addr, bytes / 4, pattern(id));
}

static int on_free(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  observer *ob = ctx;
  if (!ob->o->touch || bytes < 4) return 0;
  uint64_t words = bytes / 4, at[3] = {0, words / 2, words - 1};
  ob->out->checked++;
  for (int k = 0; k < 3; k++) {
    uint32_t v;
    int rc = pt_cudadev_read_word(ob->c, addr + 4 * at[k], &v);
    if (rc < 0) return rc;
    if (v != pattern(id) && !ob->out->mismatches++) {
      ob->out->first_bad_addr = addr;
      ob->out->first_bad_bytes = bytes;
    }
  }
  return 0;
}

/* Expandable segments alive at the start under the expandable mechanism: the VA reserved for them before the
   trace is not in any snapshot, so the real device cannot make it. */
static int refuse_unknown_reservations(const pt_trace_data *t, const pt_sim_config *cfg, pt_err *err) {
  if (strcmp(cfg->mech->name, "expandable")) return 0;
  for (size_t i = 0; i < t->n && (t->ev[i].kind == PT_EV_INIT_SEGMENT || t->ev[i].kind == PT_EV_INIT_ALLOC); i++)
    if (t->ev[i].kind == PT_EV_INIT_SEGMENT && (t->ev[i].flags & PT_SEGF_EXPANDABLE))
      return pt_err_set(err, PT_EUSAGE,
                        "%s: begins with an expandable segment alive (0x%llx), whose VA reservation before the trace no "
                        "snapshot records: the expandable mechanism cannot be replayed on a real GPU from that state",
                        t->path, (unsigned long long)t->ev[i].addr);
  return 0;
}

int pt_mreplay_run(pt_driver *d, const pt_trace_data *t, const pt_sim_config *cfg, const pt_mreplay_opts *o,
                   pt_sim_result *r, pt_mreplay_result *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  memset(r, 0, sizeof *r);
  int rc = refuse_unknown_reservations(t, cfg, err);
  if (rc < 0) return rc;
  pt_cudadev *c;
  if ((rc = pt_cudadev_open(d, 0, err, &c)) < 0) return rc;
  if ((rc = pt_cudadev_mem_info(c, &out->free_before, &out->total)) < 0) {
    pt_cudadev_close(c);
    return rc;
  }
  observer ob = {c, o, out};
  pt_sim_config run = *cfg;
  run.device_ops = &pt_cudadev_ops;
  run.device_st = c;
  run.log = o->log;
  run.call_tlog = o->tlog;
  run.stop_at_oom = 1;
  if (o->touch || o->poll) {
    run.on_alloc = on_alloc;
    run.on_free = on_free;
    run.observer_ctx = &ob;
  }
  if (o->poll) run.on_reserved = on_reserved;
  rc = pt_sim_run(t, &run, err, r);
  pt_cudadev_close(c); /* after the engine gave everything back; leftover reservations go here */
  pt_cudadev *c2;
  pt_err e2 = {{0}};
  if (pt_cudadev_open(d, 0, &e2, &c2) == 0) {
    uint64_t total;
    pt_cudadev_mem_info(c2, &out->free_after, &total);
    pt_cudadev_close(c2);
  }
  if (rc < 0) { /* say whether the failed run gave back what it took */
    char was[sizeof err->msg];
    snprintf(was, sizeof was, "%s", err->msg);
    if (out->free_after == out->free_before)
      pt_err_set(err, rc, "%s; everything the run took was given back (free GPU memory %llu bytes, as before)", was,
                 (unsigned long long)out->free_after);
    else
      pt_err_set(err, rc, "%s; and free GPU memory is %llu bytes, %lld from its %llu before the run", was,
                 (unsigned long long)out->free_after, (long long)(out->free_after - out->free_before),
                 (unsigned long long)out->free_before);
  }
  return rc;
}

int pt_mreplay_hints(const pt_call_log *log, pt_addr_hint **mallocs, size_t *nmallocs, pt_addr_hint **reserves,
                     size_t *nreserves, pt_err *err) {
  *nmallocs = *nreserves = 0;
  *mallocs = malloc((log->n ? log->n : 1) * sizeof **mallocs);
  *reserves = malloc((log->n ? log->n : 1) * sizeof **reserves);
  if (!*mallocs || !*reserves) {
    free(*mallocs);
    free(*reserves);
    *mallocs = *reserves = NULL;
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < log->n; i++) {
    const pt_dev_call *k = &log->v[i];
    if (k->call == PT_DRV_malloc) (*mallocs)[(*nmallocs)++] = (pt_addr_hint){k->va, k->bytes};
    else if (k->call == PT_DRV_address_reserve) (*reserves)[(*nreserves)++] = (pt_addr_hint){k->va, k->bytes};
  }
  return 0;
}
