/*
 * explain.c — segments and the live blocks that pin them at the peak of
 * reserved memory (see explain.h).
 */
#include "explain.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "modeldev.h"
#include "u64map.h"

/* ---- the device seen through a wrapper: the live segments ------------------ */

typedef struct xseg {
  uint64_t addr, bytes; /* VMM: bytes reserved */
  uint64_t mapped;      /* VMM: bytes mapped; else bytes */
  int vmm;
} xseg;

typedef struct xdev {
  pt_model_dev model;
  xseg *seg;
  size_t nseg, cap;
  pt_u64map at;         /* segment address -> index + 1 */
} xdev;

static int seg_add(xdev *x, uint64_t addr, uint64_t bytes, uint64_t mapped, int vmm) {
  if (x->nseg == x->cap) {
    size_t nc = x->cap ? 2 * x->cap : 64;
    xseg *ns = realloc(x->seg, nc * sizeof *ns);
    if (!ns) return PT_ENOMEM;
    x->seg = ns;
    x->cap = nc;
  }
  x->seg[x->nseg] = (xseg){addr, bytes, mapped, vmm};
  if (pt_u64map_put(&x->at, addr, ++x->nseg) < 0) return PT_ENOMEM;
  return 0;
}

static void seg_del(xdev *x, uint64_t addr) {
  uint64_t *i = pt_u64map_get(&x->at, addr);
  if (!i) return;
  size_t k = (size_t)*i - 1;
  pt_u64map_del(&x->at, addr);
  if (k != --x->nseg) { /* the last one takes its place */
    x->seg[k] = x->seg[x->nseg];
    pt_u64map_put(&x->at, x->seg[k].addr, k + 1); /* the key exists: no allocation */
  }
}

/* The VA reservation holding va. */
static xseg *vmm_seg(xdev *x, uint64_t va) {
  for (size_t i = 0; i < x->nseg; i++)
    if (x->seg[i].vmm && va >= x->seg[i].addr && va - x->seg[i].addr < x->seg[i].bytes) return &x->seg[i];
  return NULL;
}

#define M (&pt_model_dev_ops)

static int x_malloc(void *st, uint64_t bytes, uint64_t *addr) {
  xdev *x = st;
  int rc = M->malloc(&x->model, bytes, addr);
  return rc ? rc : seg_add(x, *addr, bytes, bytes, 0);
}
static int x_free(void *st, uint64_t addr, uint64_t bytes) {
  xdev *x = st;
  int rc = M->free(&x->model, addr, bytes);
  if (!rc) seg_del(x, addr);
  return rc;
}
static int x_reserve(void *st, uint64_t bytes, uint64_t align, uint64_t *va) {
  xdev *x = st;
  int rc = M->address_reserve(&x->model, bytes, align, va);
  return rc ? rc : seg_add(x, *va, bytes, 0, 1);
}
static int x_address_free(void *st, uint64_t va, uint64_t bytes) {
  xdev *x = st;
  int rc = M->address_free(&x->model, va, bytes);
  if (!rc) seg_del(x, va);
  return rc;
}
static int x_create(void *st, uint64_t bytes, uint64_t *h) { return M->mem_create(&((xdev *)st)->model, bytes, h); }
static int x_release(void *st, uint64_t h, uint64_t bytes) { return M->mem_release(&((xdev *)st)->model, h, bytes); }
static int x_map(void *st, uint64_t va, uint64_t bytes, uint64_t h) {
  xdev *x = st;
  int rc = M->mem_map(&x->model, va, bytes, h);
  xseg *s = rc ? NULL : vmm_seg(x, va);
  if (s) s->mapped += bytes;
  return rc;
}
static int x_access(void *st, uint64_t va, uint64_t bytes) { return M->mem_set_access(&((xdev *)st)->model, va, bytes); }
static int x_unmap(void *st, uint64_t va, uint64_t bytes) {
  xdev *x = st;
  int rc = M->mem_unmap(&x->model, va, bytes);
  xseg *s = rc ? NULL : vmm_seg(x, va);
  if (s) s->mapped -= bytes < s->mapped ? bytes : s->mapped;
  return rc;
}
static int x_adopt(void *st, uint64_t addr, uint64_t bytes, uint64_t page, uint64_t *handles) {
  xdev *x = st;
  int rc = M->adopt(&x->model, addr, bytes, page, handles);
  return rc ? rc : seg_add(x, addr, bytes, bytes, 0);
}

static const pt_dev_ops xdev_ops = {"explain", x_malloc, x_free, x_reserve, x_address_free, x_create,
                                    x_release, x_map, x_access, x_unmap, x_adopt};

/* ---- the observer ------------------------------------------------------------- */

#define NOT_LIVE UINT64_MAX

typedef struct watch {
  const pt_trace_data *t;
  xdev *dev;
  uint64_t *addr_of;     /* dense id -> address while live */
  uint64_t peak, calls;  /* reserved changes seen */
  uint64_t peak_call;    /* the change that first reached the peak (second run) */
  int armed, taken, failed;
  uint64_t allocs;       /* allocation requests served */
  uint64_t ooms;         /* requests the whole run failed for want of memory */
  pt_explain *out;
} watch;

static void w_reserved(void *ctx, uint64_t reserved) {
  watch *w = ctx;
  w->calls++;
  if (!w->peak_call) { /* the first run */
    if (reserved > w->peak) {
      w->peak = reserved;
      w->armed = (int)w->calls; /* reused as the call number of the peak */
    }
  } else if (w->calls == w->peak_call) {
    w->armed = 1;
  }
}

static int cmp_block_addr(const void *a, const void *b) {
  const pt_explain_block *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}
static int cmp_block_bytes(const void *a, const void *b) {
  const pt_explain_block *x = a, *y = b;
  return x->bytes > y->bytes ? -1 : x->bytes < y->bytes ? 1 : cmp_block_addr(a, b);
}
static int cmp_seg_addr(const void *a, const void *b) {
  const pt_explain_segment *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}
static int cmp_seg_free(const void *a, const void *b) {
  const pt_explain_segment *x = a, *y = b;
  return x->free_bytes > y->free_bytes ? -1 : x->free_bytes < y->free_bytes ? 1 : cmp_seg_addr(a, b);
}

/* The record index of the n-th allocation request (1-based) and of each dense id's allocation. */
static uint64_t nth_alloc(const pt_trace_data *t, uint64_t n) {
  for (size_t i = 0; i < t->n; i++)
    if (t->ev[i].kind == PT_EV_ALLOC && --n == 0) return i;
  return t->n ? t->n - 1 : 0;
}

/* Take the segments and live blocks now. */
static int take(watch *w) {
  const pt_trace_data *t = w->t;
  pt_explain *x = w->out;
  xdev *d = w->dev;
  w->taken = 1;
  size_t nb = 0;
  for (size_t i = 0; i < t->nallocs; i++) nb += w->addr_of[i] != NOT_LIVE;
  x->blocks = calloc(nb ? nb : 1, sizeof *x->blocks);
  x->seg = calloc(d->nseg ? d->nseg : 1, sizeof *x->seg);
  uint64_t *rec = calloc(t->nallocs ? t->nallocs : 1, sizeof *rec);
  uint32_t *stk = calloc(t->nallocs ? t->nallocs : 1, sizeof *stk);
  if (!x->blocks || !x->seg || !rec || !stk) {
    free(rec);
    free(stk);
    return PT_ENOMEM;
  }
  for (size_t i = 0; i < t->n; i++) {
    const pt_event *e = &t->ev[i];
    if ((e->kind == PT_EV_ALLOC || e->kind == PT_EV_INIT_ALLOC) && e->id < t->nallocs) {
      rec[e->id] = i;
      stk[e->id] = e->stack;
    }
  }
  for (size_t i = 0; i < t->nallocs; i++) {
    if (w->addr_of[i] == NOT_LIVE) continue;
    x->blocks[x->nblocks++] = (pt_explain_block){w->addr_of[i], t->ev[rec[i]].bytes, rec[i] + 1, stk[i]};
  }
  free(rec);
  free(stk);
  /* a segment's pool: that of the trace's last record of a segment at its address before the peak (the model
     follows the recorded addresses); a VMM reservation's base is in no record, so it stays 0 */
  size_t peak_rec = (size_t)nth_alloc(t, w->allocs);
  pt_u64map pools = {0};
  for (size_t i = 0; t->pools.n && i <= peak_rec && i < t->n; i++) {
    const pt_event *e = &t->ev[i];
    if ((e->kind == PT_EV_SEG_ALLOC || e->kind == PT_EV_INIT_SEGMENT) && pt_u64map_put(&pools, e->addr, e->pool) < 0) {
      pt_u64map_free(&pools);
      return PT_ENOMEM;
    }
  }
  for (size_t i = 0; i < d->nseg; i++) {
    const uint64_t *k = d->seg[i].vmm ? NULL : pt_u64map_get(&pools, d->seg[i].addr);
    x->seg[x->nseg++] = (pt_explain_segment){.addr = d->seg[i].addr, .bytes = d->seg[i].mapped, .vmm = d->seg[i].vmm,
                                             .pool = k ? (unsigned)*k : 0};
  }
  pt_u64map_free(&pools);
  qsort(x->blocks, x->nblocks, sizeof *x->blocks, cmp_block_addr);
  qsort(x->seg, x->nseg, sizeof *x->seg, cmp_seg_addr);
  /* each segment's blocks: those from its address up to its end (VMM: the reservation's) */
  size_t b = 0;
  for (size_t s = 0; s < x->nseg; s++) {
    pt_explain_segment *g = &x->seg[s];
    uint64_t end = g->addr + g->bytes;
    uint64_t *k = g->vmm ? pt_u64map_get(&d->at, g->addr) : NULL;
    if (k) end = g->addr + d->seg[*k - 1].bytes; /* a reservation: its whole extent */
    while (b < x->nblocks && x->blocks[b].addr < g->addr) b++;
    g->first = b;
    while (b < x->nblocks && x->blocks[b].addr < end) g->live_bytes += x->blocks[b++].bytes;
    g->nblocks = b - g->first;
    g->free_bytes = g->bytes > g->live_bytes ? g->bytes - g->live_bytes : 0;
    qsort(x->blocks + g->first, g->nblocks, sizeof *x->blocks, cmp_block_bytes);
  }
  qsort(x->seg, x->nseg, sizeof *x->seg, cmp_seg_free);
  pt_explain_summary *s = &x->sum;
  s->peak_reserved_bytes = w->peak;
  s->record = peak_rec + 1;
  s->time_us = t->n ? t->ev[s->record - 1].time_us : 0;
  for (size_t i = 0; i < x->nblocks; i++) s->live_bytes += x->blocks[i].bytes;
  s->free_bytes = w->peak > s->live_bytes ? w->peak - s->live_bytes : 0;
  s->segments = x->nseg;
  for (size_t i = 0; i < x->nseg; i++) {
    const pt_explain_segment *g = &x->seg[i];
    if (!g->free_bytes) continue;
    if (g->nblocks) {
      s->pinned_segments++;
      s->pinned_free_bytes += g->free_bytes;
      if (!s->top_free_bytes) {
        s->top_segment_addr = g->addr;
        s->top_segment_bytes = g->bytes;
        s->top_free_bytes = g->free_bytes;
        s->top_block_addr = x->blocks[g->first].addr;
        s->top_block_bytes = x->blocks[g->first].bytes;
        s->top_block_stack = x->blocks[g->first].stack;
      }
    } else if (g->pool) {
      s->pool_segments++;
      s->pool_free_bytes += g->free_bytes;
    } else {
      s->cached_segments++;
      s->cached_free_bytes += g->free_bytes;
    }
  }
  return 0;
}

static int w_alloc(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  watch *w = ctx;
  (void)bytes;
  if (w->taken) return 0;
  if (id < w->t->nallocs) w->addr_of[id] = addr;
  w->allocs++;
  if (w->armed && w->peak_call && take(w) < 0) return PT_ENOMEM;
  return 0;
}

static int w_free(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  watch *w = ctx;
  (void)addr;
  (void)bytes;
  if (w->taken) return 0;
  if (w->armed && w->peak_call && take(w) < 0) return PT_ENOMEM; /* before the free: the state at the peak */
  if (id < w->t->nallocs) w->addr_of[id] = NOT_LIVE;
  return 0;
}

/* One run on the wrapped model. */
static int run_once(const pt_trace_data *t, const pt_sim_config *cfg, watch *w, pt_err *err) {
  xdev d = {0};
  pt_model_dev_init(&d.model, cfg->invent_addresses ? NULL : t->hints, cfg->invent_addresses ? 0 : t->nhints, err);
  w->dev = &d;
  w->calls = w->allocs = 0;
  w->taken = 0;
  if (w->peak_call) w->armed = 0;
  for (size_t i = 0; i < t->nallocs; i++) w->addr_of[i] = NOT_LIVE;
  for (size_t i = 0; i < t->n && (t->ev[i].kind == PT_EV_INIT_SEGMENT || t->ev[i].kind == PT_EV_INIT_ALLOC); i++)
    if (t->ev[i].kind == PT_EV_INIT_ALLOC && t->ev[i].id < t->nallocs) w->addr_of[t->ev[i].id] = t->ev[i].addr;
  pt_sim_config c = *cfg;
  c.device_ops = &xdev_ops;
  c.device_st = &d;
  c.on_alloc = w_alloc;
  c.on_free = w_free;
  c.on_reserved = w_reserved;
  c.observer_ctx = w;
  c.gpu = NULL;
  c.tlb = 0;
  c.log = NULL;
  pt_sim_result r;
  int rc = pt_sim_run(t, &c, err, &r);
  if (rc == 0) {
    w->ooms = r.ooms;
    pt_sim_result_free(&r);
  }
  if (rc == 0 && w->peak_call && !w->taken && take(w) < 0) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_model_dev_done(&d.model);
  pt_u64map_free(&d.at);
  free(d.seg);
  return rc;
}

int pt_explain_run(const pt_trace_data *t, const pt_sim_config *cfg, pt_err *err, pt_explain *out) {
  memset(out, 0, sizeof *out);
  if (cfg->device_ops || cfg->on_alloc || cfg->on_free || cfg->on_reserved)
    return pt_err_set(err, PT_EUSAGE, "explain runs on its own modelled device");
  watch w = {.t = t, .out = out};
  w.addr_of = malloc((t->nallocs ? t->nallocs : 1) * sizeof *w.addr_of);
  if (!w.addr_of) return pt_err_set(err, PT_ENOMEM, "out of memory");
  int rc = run_once(t, cfg, &w, err);
  if (rc == 0 && w.peak) { /* the second run stops at the first change that reached the peak */
    w.peak_call = (uint64_t)w.armed;
    rc = run_once(t, cfg, &w, err);
  }
  free(w.addr_of);
  if (rc < 0) pt_explain_free(out);
  else out->sum.ooms = w.ooms;
  return rc;
}

void pt_explain_free(pt_explain *x) {
  free(x->seg);
  free(x->blocks);
  memset(x, 0, sizeof *x);
}

/* ---- printers ------------------------------------------------------------------ */

static double mib(uint64_t b) { return (double)b / (1 << 20); }

/* bytes as "512 B", "4.0 KiB", "18.00 MiB", "1.50 GiB" */
static const char *human(uint64_t b, char buf[32]) {
  if (b < 1024) snprintf(buf, 32, "%" PRIu64 " B", b);
  else if (b < (1u << 20)) snprintf(buf, 32, "%.1f KiB", (double)b / 1024);
  else if (b < (1u << 30)) snprintf(buf, 32, "%.2f MiB", mib(b));
  else snprintf(buf, 32, "%.2f GiB", (double)b / (1u << 30));
  return buf;
}

/* The first frame of a stack as "name (file:line)"; "" when there is none. */
static void frame_text(const pt_frames *f, uint32_t stack, size_t k, char *buf, size_t n) {
  const uint32_t *fids;
  size_t len = pt_frames_stack(f, stack, &fids);
  const pt_frame *fr = k < len ? pt_frames_frame(f, fids[k]) : NULL;
  if (!fr) {
    buf[0] = 0;
    return;
  }
  snprintf(buf, n, "%s (%s:%" PRIu32 ")", fr->name, fr->file, fr->line);
}

void pt_explain_summary_text(const pt_explain_summary *s, const pt_frames *frames, char *buf, size_t n) {
  if (!s->peak_reserved_bytes) {
    if (s->ooms)
      snprintf(buf, n, "nothing reserved: no segment was ever made, and %" PRIu64 " request%s ran out of memory under "
               "the cap", s->ooms, s->ooms == 1 ? "" : "s");
    else
      snprintf(buf, n, "nothing reserved: no segment was ever made");
    return;
  }
  char h[5][32];
  int w = snprintf(buf, n, "%s reserved at the peak, %s live: %s free, %s of it in %" PRIu64
                   " segment%s that live blocks pin",
                   human(s->peak_reserved_bytes, h[0]), human(s->live_bytes, h[1]), human(s->free_bytes, h[2]),
                   human(s->pinned_free_bytes, h[3]), s->pinned_segments, s->pinned_segments == 1 ? "" : "s");
  if (w < 0 || (size_t)w >= n) return;
  if (s->cached_free_bytes)
    w += snprintf(buf + w, n - (size_t)w, ", %s cached in %" PRIu64 " empty segment%s", human(s->cached_free_bytes, h[4]),
                  s->cached_segments, s->cached_segments == 1 ? "" : "s");
  if (w < 0 || (size_t)w >= n) return;
  if (s->pool_free_bytes)
    w += snprintf(buf + w, n - (size_t)w, ", %s in %" PRIu64 " empty segment%s of CUDA graphs' private pools",
                  human(s->pool_free_bytes, h[4]), s->pool_segments, s->pool_segments == 1 ? "" : "s");
  if (w < 0 || (size_t)w >= n || !s->top_free_bytes) return;
  char where[512];
  frame_text(frames, s->top_block_stack, 0, where, sizeof where);
  snprintf(buf + w, n - (size_t)w, "; the most, %s, held by a %s block%s%s", human(s->top_free_bytes, h[0]),
           human(s->top_block_bytes, h[1]), where[0] ? " from " : " (no frames recorded)", where);
}

void pt_explain_print_text(FILE *f, const pt_explain *x, const pt_frames *frames, size_t max_segments,
                           size_t max_frames) {
  const pt_explain_summary *s = &x->sum;
  char h1[32], h2[32];
  fprintf(f, "peak reserved: %" PRIu64 " bytes (%s), first reached after record %" PRIu64 " (time %" PRId64 " us)\n",
          s->peak_reserved_bytes, human(s->peak_reserved_bytes, h1), s->record, s->time_us);
  fprintf(f, "live then:     %" PRIu64 " bytes (%s) in %zu blocks, in %" PRIu64 " segments; free: %" PRIu64 " bytes (%s, %.1f%%)\n",
          s->live_bytes, human(s->live_bytes, h1), x->nblocks, s->segments, s->free_bytes, human(s->free_bytes, h2),
          s->peak_reserved_bytes ? 100.0 * (double)s->free_bytes / (double)s->peak_reserved_bytes : 0.0);
  if (s->ooms)
    fprintf(f, "out of memory: %" PRIu64 " request%s failed under the cap (not among the blocks below)\n",
            s->ooms, s->ooms == 1 ? "" : "s");
  size_t shown = 0;
  for (size_t i = 0; i < x->nseg && shown < max_segments; i++) {
    const pt_explain_segment *g = &x->seg[i];
    if (!g->free_bytes) break; /* sorted: the rest waste nothing */
    if (!shown) fprintf(f, "\nsegments with free space, the most first:\n");
    shown++;
    char h3[32];
    fprintf(f, "  %10s free of %10s  segment 0x%" PRIx64 "%s  ", human(g->free_bytes, h1), human(g->bytes, h2), g->addr,
            g->vmm ? " (VMM, mapped)" : "");
    if (!g->nblocks) {
      fprintf(f, g->pool ? "no live block: cached in a CUDA graph's private pool, which empty_cache keeps until the pool "
                           "is released\n"
                         : "no live block: cached, empty_cache would give it back\n");
      continue;
    }
    fprintf(f, "pinned by %zu live block%s (%s)\n", g->nblocks, g->nblocks == 1 ? "" : "s", human(g->live_bytes, h3));
    size_t nb = g->nblocks < 3 ? g->nblocks : 3;
    for (size_t b = 0; b < nb; b++) {
      const pt_explain_block *bl = &x->blocks[g->first + b];
      fprintf(f, "      %10s at 0x%" PRIx64 ", allocated at record %" PRIu64 "\n", human(bl->bytes, h1), bl->addr, bl->record);
      for (size_t k = 0; k < max_frames; k++) {
        char line[1024];
        frame_text(frames, bl->stack, k, line, sizeof line);
        if (!line[0]) {
          if (!k) fprintf(f, "          (no frames recorded)\n");
          break;
        }
        fprintf(f, "          %s\n", line);
      }
    }
    if (g->nblocks > nb) fprintf(f, "      ... and %zu more\n", g->nblocks - nb);
  }
  size_t rest = 0;
  for (size_t i = shown; i < x->nseg; i++) rest += x->seg[i].free_bytes > 0;
  if (rest) fprintf(f, "  ... %zu more segment%s with free space (--segments N)\n", rest, rest == 1 ? "" : "s");
  char sum[1024];
  pt_explain_summary_text(s, frames, sum, sizeof sum);
  fprintf(f, "\nsummary: %s\n", sum);
}

static void json_frames(FILE *f, const pt_frames *frames, uint32_t stack, size_t max_frames) {
  const uint32_t *fids;
  size_t len = pt_frames_stack(frames, stack, &fids);
  fputc('[', f);
  for (size_t k = 0; k < len && k < max_frames; k++) {
    const pt_frame *fr = pt_frames_frame(frames, fids[k]);
    fprintf(f, "%s{\"name\":", k ? "," : "");
    pt_json_str(f, fr->name);
    fprintf(f, ",\"file\":");
    pt_json_str(f, fr->file);
    fprintf(f, ",\"line\":%" PRIu32 "}", fr->line);
  }
  fputc(']', f);
}

void pt_explain_print_json_members(FILE *f, const pt_explain *x, const pt_frames *frames, size_t max_frames) {
  const pt_explain_summary *s = &x->sum;
  char sum[1024];
  pt_explain_summary_text(s, frames, sum, sizeof sum);
  fprintf(f, "\"peak_reserved_bytes\":%" PRIu64 ",\"record_at_peak\":%" PRIu64 ",\"time_us_at_peak\":%" PRId64
             ",\"live_bytes\":%" PRIu64 ",\"live_blocks\":%zu,\"free_bytes\":%" PRIu64 ",\"segments\":%" PRIu64
             ",\"pinned_segments\":%" PRIu64 ",\"pinned_free_bytes\":%" PRIu64 ",\"cached_segments\":%" PRIu64
             ",\"cached_free_bytes\":%" PRIu64 ",\"pool_segments\":%" PRIu64 ",\"pool_free_bytes\":%" PRIu64
             ",\"ooms\":%" PRIu64 ",\"summary\":",
          s->peak_reserved_bytes, s->record, s->time_us, s->live_bytes, x->nblocks, s->free_bytes, s->segments,
          s->pinned_segments, s->pinned_free_bytes, s->cached_segments, s->cached_free_bytes, s->pool_segments,
          s->pool_free_bytes, s->ooms);
  pt_json_str(f, sum);
  fprintf(f, ",\"segments_with_free_space\":[");
  for (size_t i = 0; i < x->nseg && x->seg[i].free_bytes; i++) {
    const pt_explain_segment *g = &x->seg[i];
    fprintf(f, "%s{\"addr\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"vmm\":%s,\"private_pool\":%s,\"free_bytes\":%" PRIu64
               ",\"live_bytes\":%" PRIu64 ",\"blocks\":[",
            i ? "," : "", g->addr, g->bytes, g->vmm ? "true" : "false", g->pool ? "true" : "false", g->free_bytes,
            g->live_bytes);
    for (size_t b = 0; b < g->nblocks; b++) {
      const pt_explain_block *bl = &x->blocks[g->first + b];
      fprintf(f, "%s{\"addr\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"record\":%" PRIu64 ",\"frames\":", b ? "," : "", bl->addr,
              bl->bytes, bl->record);
      json_frames(f, frames, bl->stack, max_frames);
      fputc('}', f);
    }
    fprintf(f, "]}");
  }
  fputc(']', f);
}
