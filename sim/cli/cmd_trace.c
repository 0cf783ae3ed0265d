/*
 * cmd_trace.c — pagetune trace import | stats | gen: convert PyTorch
 * snapshots into traces, count what a trace holds, write synthetic traces.
 */
#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "file.h"
#include "gen.h"
#include "gpufrees.h"
#include "trace.h"
#include "tracestats.h"
#include "u64map.h"
#include "values.h"

/* What the trace commands' options set. */
typedef struct trace_args {
  int json, have_kind, have_seed, strip_frames;
  unsigned long device, seed, steps;
  const char *output, *gpu_frees, *async_run;
  pt_gen_kind kind;
} trace_args;

static const trace_args defaults = {.device = ULONG_MAX};

static int opt_kind(const char *arg, void *field) { return pt_gen_kind_parse(arg, field); }

#define OPT_DEVICE \
  PT_CLI_OPT_ULONG("device", "N", trace_args, device, 0, 4096, NULL, \
                   "device of a multi-GPU snapshot (default: the one with events)")
#define OPT_OUTPUT(h) PT_CLI_OPT_STR("output", 'o', "DST", trace_args, output, h)

const pt_cli_table pt_opts_trace = {
    .help = "usage: pagetune trace COMMAND [ARGS]\n"
            "\n"
            "Read, convert and synthesise allocation traces.  The format: traces/FORMAT.md.\n"};

static const pt_cli_opt stats_opts[] = {
    OPT_DEVICE,
    PT_CLI_OPT_FLAG("json", trace_args, json, "one JSON object on stdout"),
    PT_CLI_END};
const pt_cli_table pt_opts_trace_stats = {
    "usage: pagetune trace stats TRACE [--device N] [--json]\n"
    "\n"
    "Read TRACE (a pagetune trace, .gz or not, or a PyTorch memory snapshot\n"
    "pickle) and print what it holds: events, allocs, frees, streams,\n"
    "distinct_sizes, peak_live_bytes, bytes_allocated_total, initial_segments,\n"
    "initial_reserved_bytes, duration_us, and what the real allocator recorded;\n"
    "for a trace with CUDA graphs' private pools also private_pools,\n"
    "private_pool_allocs, private_pool_segment_allocs and captures; for one\n"
    "whose frees waited for other streams' work (record_stream) deferred_frees;\n"
    "for one imported with --gpu-frees or --async-run gpu_timed_frees,\n"
    "gpu_pending_frees and gpu_lag_requests_max; for one with synchronisations\n"
    "(+sync, from --async-run) syncs; for one with the order between streams\n"
    "(+event, +wait, from --async-run) event_records and stream_waits.\n",
    stats_opts, sizeof(trace_args), &defaults, 1};

static const pt_cli_opt import_opts[] = {
    OPT_OUTPUT("the trace to write (required)"),
    OPT_DEVICE,
    PT_CLI_OPT_FLAG("strip-frames", trace_args, strip_frames,
                    "keep no stack frames (source paths, function names, lines): a trace to share"),
    PT_CLI_OPT_STR("gpu-frees", 0, "FILE", trace_args, gpu_frees,
                   "when the GPU passed each free, from the same run (capture.py with\n"
                   "PT_GPU_FREES=1) or, by the snapshot's addresses, another run of the\n"
                   "same workload (traces/capture/async_timeline.py --on): kept as +gpu,\n"
                   "for cuda_async"),
    PT_CLI_OPT_STR("async-run", 0, "LOG", trace_args, async_run,
                   "a run of the same workload under backend:cudaMallocAsync, logged by\n"
                   "traces/capture/async_probe/shim.c: its synchronisations (+sync), with\n"
                   "PT_SHIM_MARK=1 when its GPU passed each free (+gpu), with PT_SHIM_EVENTS=1\n"
                   "its event records and stream waits (+event, +wait); not with --gpu-frees"),
    PT_CLI_OPT_FLAG("json", trace_args, json, "print the new trace's stats as one JSON object"),
    PT_CLI_END};
const pt_cli_table pt_opts_trace_import = {
    "usage: pagetune trace import SRC -o DST [--device N] [--strip-frames] [--gpu-frees FILE | --async-run LOG] [--json]\n"
    "\n"
    "Convert SRC, a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot;\n"
    "pickle, plain or gzip'd), into a pagetune trace DST (gzip'd when DST ends\n"
    "in .gz).  The pickle is read as data only: opcodes that import or call\n"
    "are refused, nothing is executed.  Frees are free_completed entries;\n"
    "segments alive before recording become the initial state.  The input is\n"
    "streamed: memory holds the records and the distinct stack frames, not\n"
    "the file.  Each allocation's stack frames (recorded with context=\"alloc\"\n"
    "or \"all\") are kept, each distinct frame and stack once, for\n"
    "`pagetune explain`.  Requests in a CUDA graph's private pool (the pool of\n"
    "the dump's segment they lie in) and where each capture begins are kept\n"
    "too (+pool, +capture).  With --gpu-frees, each free carries how many\n"
    "requests came before the GPU passed it (+gpu; traces/FORMAT.md); the file\n"
    "that matches a cudaMallocAsync run best is an unrecorded run's, moved to\n"
    "that backend's timeline by traces/capture/async_timeline.py\n"
    "(docs/model.md).  With --async-run, the requests are paired in order with\n"
    "those of a cudaMallocAsync run of the same workload (each request's size\n"
    "checked), each free with its request's, and take that run's\n"
    "synchronisations (+sync), free times (+gpu) and order between streams\n"
    "(+event, +wait, on SRC's streams; in place of any SRC had).  DST appears\n"
    "only when the whole import succeeded.\n",
    import_opts, sizeof(trace_args), &defaults, 1};

static const pt_cli_opt gen_opts[] = {
    {.name = "kind", .value = "KIND", .kind = PT_CLI_PARSE, .off = offsetof(trace_args, kind), .parse = opt_kind,
     .seen = offsetof(trace_args, have_kind) + 1, .suffix = " (train|infer|kvcache|long_decode)",
     .help = "train (training loop), infer (variable-length, variable-batch\n"
             "inference), kvcache (LLM decoding with a growing KV cache),\n"
             "long_decode (a long decode of a 7B-class model: thousands of segments)"},
    {.name = "seed", .value = "S", .kind = PT_CLI_ULONG, .off = offsetof(trace_args, seed), .max = ULONG_MAX,
     .seen = offsetof(trace_args, have_seed) + 1, .help = "generator seed (unsigned integer)"},
    PT_CLI_OPT_ULONG("steps", "N", trace_args, steps, 1, 1000000, " (1..1000000)",
                     "iterations / requests / sequences / tokens (default 20 / 200 / 8 / 1024)"),
    OPT_OUTPUT("the trace to write (.gz compresses)"),
    PT_CLI_END};
const pt_cli_table pt_opts_trace_gen = {
    "usage: pagetune trace gen --kind KIND --seed S [--steps N] -o DST\n"
    "\n"
    "Write a synthetic trace drawn from GSL's mt19937 generator; the same kind,\n"
    "seed and steps always give the same trace.\n",
    gen_opts, sizeof(trace_args), &defaults, 0};

static pt_trace_opts open_opts(const trace_args *a) {
  return (pt_trace_opts){.device = a->device == ULONG_MAX ? -1 : (int)a->device,
                         .strip_frames = a->strip_frames};
}

/* A snapshot without allocations: recorded without torch.cuda.memory._record_memory_history. */
static void warn_empty(const char *path, const pt_trace_stats *s) {
  if (s->allocs == 0 && s->frees == 0)
    fprintf(stderr, "warning: %s holds no allocation events (was the snapshot taken without "
                    "torch.cuda.memory._record_memory_history()?): there is nothing to replay\n", path);
}

int pt_cmd_trace_stats(void *args, char **pos, int npos, pt_err *err) {
  const trace_args *a = args;
  if (npos != 1) return pt_cli_usage(err, "needs exactly one TRACE");
  pt_trace *t;
  pt_trace_opts o = open_opts(a);
  int rc = pt_trace_open(pos[0], &o, err, &t);
  if (rc < 0) return rc;
  pt_trace_stats s;
  if ((rc = pt_trace_stats_compute(t, &s, err)) == 0) {
    if (a->json) pt_trace_stats_print_json(stdout, pos[0], pt_trace_get_info(t), &s);
    else pt_trace_stats_print_text(stdout, pt_trace_get_info(t), &s);
    warn_empty(pos[0], &s);
  }
  pt_trace_close(t);
  return rc;
}

/* The k-th free of the snapshot src, ev: the GPU's time from g (+gpu), unless it waited for other streams. */
static int gpu_time(const pt_gpu_frees *g, size_t k, const char *path, const char *src, pt_event *ev, pt_err *err) {
  if (k >= g->n) return 0; /* counted at the end */
  if (g->f[k].addr != ev->addr)
    return pt_err_set(err, PT_EFORMAT,
                      "%s: free %zu is of 0x%llx, %s's is of 0x%llx: not the same run (free times from another run of "
                      "the same workload take this snapshot's addresses with traces/capture/async_timeline.py --on)",
                      path, k + 1, (unsigned long long)g->f[k].addr, src, (unsigned long long)ev->addr);
  if (!(ev->flags & PT_EVF_DEFERRED)) {
    ev->flags |= PT_EVF_GPU_LAG;
    ev->offset = g->f[k].requests;
  }
  return 0;
}

/* A snapshot's request or free, for pairing with an async run: a request's bytes and number (from 1); a free's
   request's number (0: a block alive when recording began) and whether it waited for other streams. */
typedef struct snap_call {
  uint64_t bytes;
  uint64_t stream;
  uint32_t req;
  uint8_t is_free, deferred;
} snap_call;

/* The requests and frees of trace src, in order, into *out (n of them); 0 or an error. */
static int calls_of(const char *src, const pt_trace_opts *o, snap_call **out, size_t *n, pt_err *err) {
  pt_trace *t;
  int rc = pt_trace_open(src, o, err, &t);
  if (rc < 0) return rc;
  size_t cap = 0;
  uint32_t nreq = 0;
  pt_u64map ids = {0}; /* a live request's id -> its number */
  pt_event ev;
  *out = NULL;
  *n = 0;
  while ((rc = pt_trace_next(t, &ev, err)) > 0) {
    if (ev.kind != PT_EV_ALLOC && ev.kind != PT_EV_FREE) continue;
    if (*n == cap) {
      size_t ncap = cap ? cap * 2 : 4096;
      snap_call *v = realloc(*out, ncap * sizeof *v);
      if (!v) {
        rc = PT_ENOMEM;
        break;
      }
      *out = v;
      cap = ncap;
    }
    snap_call c = {.bytes = ev.bytes, .stream = ev.stream, .is_free = ev.kind == PT_EV_FREE,
                   .deferred = (ev.flags & PT_EVF_DEFERRED) != 0};
    if (!c.is_free) {
      c.req = ++nreq;
      if (pt_u64map_put(&ids, ev.id, c.req) < 0) {
        rc = PT_ENOMEM;
        break;
      }
    } else {
      uint64_t *r = pt_u64map_get(&ids, ev.id);
      c.req = r ? (uint32_t)*r : 0;
    }
    (*out)[(*n)++] = c;
  }
  pt_u64map_free(&ids);
  pt_trace_close(t);
  if (rc == PT_ENOMEM) rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", src);
  if (rc < 0) {
    free(*out);
    *out = NULL;
  }
  return rc < 0 ? rc : 0;
}

/*
 * Pair a snapshot's calls with an async run's: the snapshot's k-th request is the run's (at + k)-th, the first
 * offset at which every request's size agrees (the run began earlier: the model was built before recording
 * began; it may end later), and a free is its request's free.  Frees are paired by request, not by place:
 * a free that waited for other streams' work comes in the snapshot where the native allocator let go of the
 * block, and in the run where PyTorch called cudaFreeAsync on its unifying stream, earlier.  *map_out: for each
 * snapshot call, the run's call (SIZE_MAX: none, a block of before the run's window or never freed in it).
 */
static int pair_async(const pt_async_run *ar, const snap_call *sc, size_t n, const char *log, const char *src,
                      size_t **map_out, size_t *at_out, pt_err *err) {
  size_t nreq = 0;
  for (size_t j = 0; j < n; j++) nreq += !sc[j].is_free;
  uint64_t *rbytes = malloc((ar->nreq + 1) * sizeof *rbytes); /* the run's request k's bytes, call of request k */
  size_t *rcall = malloc((ar->nreq + 1) * sizeof *rcall), *fcall = malloc((ar->nreq + 1) * sizeof *fcall);
  size_t *map = malloc((n ? n : 1) * sizeof *map);
  int rc = 0;
  if (!rbytes || !rcall || !fcall || !map) {
    rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", log);
    goto done;
  }
  for (size_t k = 0; k <= ar->nreq; k++) fcall[k] = SIZE_MAX;
  for (size_t i = 0; i < ar->n; i++) {
    const pt_async_call *c = &ar->c[i];
    if (c->free) fcall[c->req] = i;
    else rbytes[c->req] = c->bytes, rcall[c->req] = i;
  }
  size_t at = SIZE_MAX, best = 0, best_len = 0;
  for (size_t p = 0; p + nreq <= ar->nreq && at == SIZE_MAX; p++) {
    size_t k = 0;
    for (size_t j = 0; j < n && (sc[j].is_free || rbytes[p + k + 1] == sc[j].bytes); j++) k += !sc[j].is_free;
    if (k == nreq) at = p;
    else if (k > best_len) best_len = k, best = p;
  }
  if (at == SIZE_MAX) {
    if (ar->nreq < nreq)
      rc = pt_err_set(err, PT_EFORMAT, "%s: %zu requests, fewer than %s's %zu: not a run of the same workload", log,
                      ar->nreq, src, nreq);
    else {
      size_t k = 0, j = 0;
      for (; j < n; j++)
        if (!sc[j].is_free && k++ == best_len) break;
      rc = pt_err_set(err, PT_EFORMAT,
                      "%s: not a run of the same workload: %s's request %zu (%llu bytes) is, at best, the run's request "
                      "%zu (%llu bytes)",
                      log, src, best_len + 1, (unsigned long long)sc[j].bytes, best + best_len + 1,
                      (unsigned long long)rbytes[best + best_len + 1]);
    }
    goto done;
  }
  for (size_t j = 0; j < n; j++)
    map[j] = !sc[j].is_free ? rcall[at + sc[j].req] : sc[j].req ? fcall[at + sc[j].req] : SIZE_MAX;
  *map_out = map;
  *at_out = at;
  map = NULL;
done:
  free(rbytes);
  free(rcall);
  free(fcall);
  free(map);
  return rc;
}

/* rb[i]: the requests of async run ar before its call i (i = 0 .. ar->n), in *out. */
static int requests_before(const pt_async_run *ar, const char *log, size_t **out, pt_err *err) {
  size_t *rb = malloc((ar->n + 1) * sizeof *rb);
  if (!rb) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", log);
  rb[0] = 0;
  for (size_t i = 0; i < ar->n; i++) rb[i + 1] = rb[i] + !ar->c[i].free;
  *out = rb;
  return 0;
}

/* What --async-run adds to the snapshot it is paired with (pair_async). */
typedef struct async_pairing {
  pt_async_run ar;
  snap_call *sc;     /* the snapshot's calls */
  size_t nsc, *map;  /* map[j]: the run's call for snapshot call j */
  size_t at;         /* the run's requests before the snapshot's first */
  size_t *rbefore;   /* requests_before */
  size_t j, reqs;    /* the snapshot's calls and requests written so far */
  size_t order_at;   /* the run's stream order written so far */
  pt_u64map streams; /* a run's stream -> the snapshot's (the two processes' handles differ) */
  int carry;         /* a synchronisation before a free that is not in its place here: on the next request */
} async_pairing;

/*
 * The run's streams as the snapshot's: each paired request's stream is its snapshot request's (one to one, else
 * not the same run); a stream no request was made on (PyTorch's unifying free stream) keeps its handle, or, where
 * that is one of the snapshot's, a fresh one (2^62 + k).
 */
static int map_streams(async_pairing *p, const char *log, const char *src, pt_err *err) {
  pt_u64map back = {0}; /* the snapshot's stream -> the run's */
  int rc = 0;
  for (size_t j = 0; j < p->nsc && rc == 0; j++) {
    if (p->sc[j].is_free || p->map[j] == SIZE_MAX) continue;
    uint64_t run = p->ar.c[p->map[j]].stream, snap = p->sc[j].stream, *r = pt_u64map_get(&p->streams, run),
             *b = pt_u64map_get(&back, snap);
    if (r && *r != snap)
      rc = pt_err_set(err, PT_EFORMAT, "%s: not a run of the same workload: its stream 0x%llx makes requests that %s "
                      "makes on 0x%llx and on 0x%llx", log, (unsigned long long)run, src, (unsigned long long)*r,
                      (unsigned long long)snap);
    else if (b && *b != run)
      rc = pt_err_set(err, PT_EFORMAT, "%s: not a run of the same workload: its streams 0x%llx and 0x%llx make requests "
                      "that %s makes on 0x%llx", log, (unsigned long long)*b, (unsigned long long)run, src,
                      (unsigned long long)snap);
    else if (!r && (pt_u64map_put(&p->streams, run, snap) < 0 || pt_u64map_put(&back, snap, run) < 0))
      rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", log);
  }
  uint64_t fresh = UINT64_C(1) << 62;
  for (size_t i = 0; i < p->ar.order.n && rc == 0; i++) {
    uint64_t run = p->ar.order.op[i].stream;
    if (pt_u64map_get(&p->streams, run)) continue;
    uint64_t to = run;
    while (pt_u64map_get(&back, to)) to = fresh++; /* a handle of the snapshot's: another */
    if (pt_u64map_put(&p->streams, run, to) < 0 || pt_u64map_put(&back, to, run) < 0)
      rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", log);
  }
  pt_u64map_free(&back);
  return rc;
}

static void async_pairing_free(async_pairing *p) {
  pt_async_run_free(&p->ar);
  pt_u64map_free(&p->streams);
  free(p->sc);
  free(p->map);
  free(p->rbefore);
}

static int async_pairing_load(async_pairing *p, const char *log, const char *src, const pt_trace_opts *o, pt_err *err) {
  int rc;
  if ((rc = pt_async_run_load(log, &p->ar, err)) < 0 || (rc = calls_of(src, o, &p->sc, &p->nsc, err)) < 0 ||
      (rc = pair_async(&p->ar, p->sc, p->nsc, log, src, &p->map, &p->at, err)) < 0 ||
      (rc = requests_before(&p->ar, log, &p->rbefore, err)) < 0 || (rc = map_streams(p, log, src, err)) < 0)
    return rc;
  return 0;
}

/*
 * The run's timing on snapshot record ev, a request or free (the snapshot's next call), and the run's stream
 * order before it into w: the run's synchronisations before its call (+sync), its free's GPU time (+gpu), and
 * its event records and stream waits up to its call (+event, +wait, on the snapshot's streams: map_streams).  A
 * free that waited for other streams
 * (+deferred) comes here later than in the run, where PyTorch freed it on its unifying stream: the
 * synchronisation before it goes on the next request, the stream order on the next call in its place, and its
 * GPU time is what was left of it by here (K less the run's requests between the two places, at least 0).
 */
static int async_time(async_pairing *p, pt_event *ev, pt_trace_writer *w, pt_err *err) {
  size_t i = p->map[p->j];
  const pt_async_call *c = i == SIZE_MAX ? NULL : &p->ar.c[i];
  int deferred = p->sc[p->j++].deferred, sync = c && c->sync, rc;
  if (deferred) {
    p->carry |= sync;
  } else if (sync || (p->carry && ev->kind == PT_EV_ALLOC)) {
    ev->flags |= PT_EVF_SYNC;
    p->carry = p->carry && ev->kind != PT_EV_ALLOC;
  }
  if (c && c->free && p->ar.lag[c->free - 1]) {
    uint64_t k = p->ar.lag[c->free - 1] - 1;
    if (deferred) { /* the run's requests from its free to the request the snapshot's place comes before */
      size_t here = p->at + p->reqs, then = p->rbefore[i];
      k = here <= then ? k : k > here - then ? k - (here - then) : 0;
    }
    ev->flags |= PT_EVF_GPU_LAG;
    ev->offset = k;
  }
  p->reqs += ev->kind == PT_EV_ALLOC;
  if (c && !deferred)
    for (const pt_order *o = &p->ar.order; p->order_at < o->n && o->op[p->order_at].before <= i; p->order_at++) {
      pt_order_op op = o->op[p->order_at];
      op.stream = *pt_u64map_get(&p->streams, op.stream); /* every one mapped (map_streams) */
      if ((rc = pt_trace_writer_put_order(w, &op, err)) < 0) return rc;
    }
  return 0;
}

/* The source's own stream order before the record it last returned (a pagetune trace's +event / +wait), into w. */
static int copy_order(pt_trace *t, pt_trace_writer *w, pt_err *err) {
  const pt_order *o = pt_trace_order(t);
  int rc;
  for (size_t i = 0; i < o->n; i++)
    if ((rc = pt_trace_writer_put_order(w, &o->op[i], err)) < 0) return rc;
  return 0;
}

int pt_cmd_trace_import(void *args, char **pos, int npos, pt_err *err) {
  const trace_args *a = args;
  if (npos != 1) return pt_cli_usage(err, "needs exactly one SRC");
  if (!a->output) return pt_cli_usage(err, "needs -o DST");
  if (a->gpu_frees && a->async_run) return pt_cli_usage(err, "--gpu-frees and --async-run both time the frees: give one");
  pt_trace *t;
  pt_trace_opts o = open_opts(a);
  int rc = pt_file_check_output(a->output, pos[0], "-o", err);
  if (rc < 0) return rc;
  rc = pt_trace_open(pos[0], &o, err, &t);
  if (rc < 0) return rc;
  pt_gpu_frees g = {0};
  async_pairing ap = {0};
  pt_trace_writer *w = NULL;
  if ((a->gpu_frees && (rc = pt_gpu_frees_load(a->gpu_frees, &g, err)) < 0) ||
      (a->async_run && (rc = async_pairing_load(&ap, a->async_run, pos[0], &o, err)) < 0))
    goto done;
  pt_trace_info info = *pt_trace_get_info(t);
  if (a->async_run || g.syncs_recorded) info.syncs_recorded = 1; /* its +sync lines are all the run's */
  if ((rc = pt_trace_writer_open(a->output, &info, err, &w)) < 0) goto done;
  if (!a->strip_frames) pt_trace_writer_set_frames(w, pt_trace_frames(t));
  pt_trace_writer_set_pools(w, pt_trace_pools(t));
  pt_event ev;
  uint64_t n = 0, calls = 0;
  size_t nfree = 0, ks = 0;
  while ((rc = pt_trace_next(t, &ev, err)) > 0) {
    if (a->gpu_frees && ev.kind == PT_EV_FREE && (rc = gpu_time(&g, nfree++, a->gpu_frees, pos[0], &ev, err)) < 0) break;
    if (a->gpu_frees && (ev.kind == PT_EV_ALLOC || ev.kind == PT_EV_FREE || ev.kind == PT_EV_OOM) && ks < g.nsync &&
        g.sync_at[ks] == ++calls) { /* the capture's synchronisations: before its calls, counted as the tracker did */
      ev.flags |= PT_EVF_SYNC;
      ks++;
    }
    if (a->async_run) { /* the run's stream order replaces the source's */
      if ((ev.kind == PT_EV_ALLOC || ev.kind == PT_EV_FREE) && (rc = async_time(&ap, &ev, w, err)) < 0) break;
    } else if ((rc = copy_order(t, w, err)) < 0) {
      break;
    }
    if ((rc = pt_trace_writer_put(w, &ev, err)) < 0) break;
    n++;
  }
  if (rc >= 0 && a->gpu_frees && nfree != g.n)
    rc = pt_err_set(err, PT_EFORMAT, "%s: %zu frees, %s %zu: not the same run", a->gpu_frees, g.n, pos[0], nfree);
  if (rc >= 0 && a->gpu_frees && ks != g.nsync)
    rc = pt_err_set(err, PT_EFORMAT, "%s: a synchronisation before call %llu, %s has %llu requests and frees: not the same run",
                    a->gpu_frees, (unsigned long long)g.sync_at[ks], pos[0], (unsigned long long)calls);
done:
  pt_trace_close(t);
  async_pairing_free(&ap);
  pt_gpu_frees_free(&g);
  if (rc < 0) {
    pt_trace_writer_abort(w);
    return rc;
  }
  if ((rc = pt_trace_writer_commit(w, err)) < 0) return rc;
  /* read back what was written: the stats come from the file as others will see it */
  if ((rc = pt_trace_open(a->output, NULL, err, &t)) < 0) return rc;
  pt_trace_stats s;
  if ((rc = pt_trace_stats_compute(t, &s, err)) == 0) {
    if (a->json) pt_trace_stats_print_json(stdout, a->output, pt_trace_get_info(t), &s);
    else
      printf("%s: %" PRIu64 " records (%" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64
             " initial segments) -> %s\n",
             pos[0], n, s.allocs, s.frees, s.initial_segments, a->output);
    warn_empty(pos[0], &s);
  }
  pt_trace_close(t);
  return rc;
}

int pt_cmd_trace_gen(void *args, char **pos, int npos, pt_err *err) {
  const trace_args *a = args;
  if (!a->have_kind) return pt_cli_usage(err, "needs --kind");
  if (!a->have_seed) return pt_cli_usage(err, "needs --seed");
  if (!a->output) return pt_cli_usage(err, "needs -o DST");
  pt_gen_opts g = {.kind = a->kind, .seed = a->seed, .steps = (unsigned)a->steps};
  int rc = pt_file_check_output(a->output, NULL, "-o", err);
  return rc < 0 ? rc : pt_gen_write(&g, a->output, err);
}
