/*
 * cmd_sim.c — pagetune sim: a trace replayed through a policy's allocator
 * mechanism on the modelled device; and pagetune replay: the same run, then
 * its driver calls made again on this machine's GPU, timed beside the cost
 * model's prediction (and, with --db, stored as sweep stores runs).
 */
#include <config.h>

#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocconf.h"
#include "clock.h"
#include "cudadev.h"
#include "driver.h"
#include "file.h"
#include "mreplay.h"
#include "replay.h"
#include "datadir.h"
#include "workbench.h"

/* What sim's and replay's options set. */
typedef struct sim_args {
  const char *trace, *policy, *gpu, *db, *conf, *calls_out;
  const char *sets[PT_MAX_PARAMS];
  int nsets, json, invent, tlb, list_gpus, mechanism, touch;
  unsigned long device, repeat;
  uint64_t capacity, leave_free;
} sim_args;

/* The options sim and replay share. */
#define SIM_OPTS_COMMON                                                                                           \
  PT_CLI_OPT_STR("trace", 0, "TRACE", sim_args, trace, "a pagetune trace or a PyTorch memory snapshot"),          \
  PT_CLI_OPT_STR("policy", 0, "POLICY", sim_args, policy,                                                         \
                 "a Lua policy file, or the name of a bundled one\n"                                              \
                 "(pytorch_native, pytorch_expandable, cuda_async, direct,\n"                                     \
                 "large_page_threshold, stitch, tunable_caching, tunable_expandable)"),                           \
  PT_CLI_OPT_LIST("set", "NAME=VALUE", sim_args, sets, nsets,                                                     \
                  "override a policy parameter (checked against its range); VALUE a number,\n"                    \
                  "or for roundup_power2_divisions PyTorch's list [BOUNDARY_MIB:N,...,>:N]"),                      \
  PT_CLI_OPT_PARSE("capacity", "BYTES", sim_args, capacity, pt_cli_opt_capacity, NULL,                            \
                   "cap on reserved bytes, as torch.cuda.set_per_process_memory_fraction\n"                       \
                   "(suffixes K, M, G, T: powers of 1024); garbage collection acts only under it"),               \
  PT_CLI_OPT_ULONG("device", "N", sim_args, device, 0, 4096, NULL, "device of a multi-GPU snapshot"),             \
  PT_CLI_OPT_FLAG("invent-addresses", sim_args, invent,                                                           \
                  "do not place segments at the addresses the real run recorded")
#define SIM_OPT_LIST_GPUS PT_CLI_OPT_FLAG("list-gpus", sim_args, list_gpus, "name the bundled GPU descriptions and exit")

static const pt_cli_opt sim_opts[] = {
    SIM_OPTS_COMMON,
    PT_CLI_OPT_ULONG("repeat", "N", sim_args, repeat, 1, 100000, NULL,
                     "replay N times and report the median replay rate (benchmarks)"),
    PT_CLI_OPT_STR("gpu", 0, "NAME", sim_args, gpu,
                   "model that GPU's page tables and costs (" PT_WB_GPU_RULE "):\n"
                   "adds page_table, predicted_alloc_us (the requests' and frees' time),\n"
                   "predicted_untimed_us (the driver calls no request makes: the initial\n"
                   "state, a request that failed in the real run tried; not in the first)\n"
                   "request_classes (the repeats the prediction prices apart: requests\n"
                   "and frees whose size was freed among the last 6 frees) and, in --json,\n"
                   "work (the requests and frees made, their free-set operations, the\n"
                   "sets' chunks at each insert and the keys and blocks their searches and\n"
                   "walks look at: what a bookkeeping_work line prices) to the output\n"
                   "(default: none)"),
    PT_CLI_OPT_FLAG("tlb", sim_args, tlb,
                    "also run the synthetic access stream through its TLBs (needs --gpu;\n"
                    "time grows with bytes allocated / page size): adds tlb and\n"
                    "predicted_translation_us"),
    PT_CLI_OPT_STR("conf", 0, "VALUE", sim_args, conf,
                   "a PYTORCH_CUDA_ALLOC_CONF value to simulate, instead of --policy: read as\n"
                   "PyTorch " PT_CONF_TORCH " reads it (the rules of 'pagetune lint'; a value it refuses is\n"
                   "an error, exit 1); backend:cudaMallocAsync picks cuda_async,\n"
                   "expandable_segments:True pytorch_expandable, else pytorch_native; its\n"
                   "knobs are set (--set may follow); per_process_memory_fraction is the\n"
                   "cap, a fraction of --gpu's memory (default h200's; not with --capacity,\n"
                   "which gives a cap otherwise). Keys the model does\n"
                   "not model are named, each with what it does, as notes (stderr; \"conf\"\n"
                   "in --json)"),
    PT_CLI_OPT_FLAG("json", sim_args, json, "one JSON object, with the timeline"),
    SIM_OPT_LIST_GPUS,
    PT_CLI_OPT_REFUSE("db", "DB", "--db is replay's (sim stores nothing; see sweep)"),
    PT_CLI_END};
static const sim_args sim_defaults = {.device = ULONG_MAX, .repeat = 1};
const pt_cli_table pt_opts_sim = {
    "usage: pagetune sim --trace TRACE --policy POLICY [--set NAME=VALUE]... [--capacity BYTES]\n"
    "                    [--device N] [--invent-addresses] [--gpu NAME [--tlb]] [--repeat N] [--json]\n"
    "       pagetune sim --trace TRACE --conf \"PYTORCH_CUDA_ALLOC_CONF value\" [--set NAME=VALUE]...\n"
    "                    [--capacity BYTES] [--gpu NAME [--tlb]] [--json] ...\n"
    "       pagetune sim --list-gpus\n"
    "\n"
    "Replay TRACE's allocation requests through the allocator mechanism POLICY\n"
    "chooses, on a modelled device, and report peak reserved and allocated bytes,\n"
    "fragmentation, segments, driver calls by kind, OOMs, and a reserved/allocated\n"
    "timeline; beside them, what the real allocator recorded in the trace.\n",
    sim_opts, sizeof(sim_args), &sim_defaults, 0};

static const pt_cli_opt replay_opts[] = {
    SIM_OPTS_COMMON,
    PT_CLI_OPT_STR("gpu", 0, "NAME", sim_args, gpu,
                   "the description whose cost model predicts (default h200;\n"
                   "none only with --mechanism: replay compares with a prediction)"),
    PT_CLI_OPT_ULONG("repeat", "N", sim_args, repeat, 1, 100000, NULL, "replay N times (default 5) and report medians"),
    PT_CLI_OPT_STR("db", 0, "DB", sim_args, db,
                   "also store the run (as sweep would) and the measured times,\n"
                   "in the measurements table (kind replay_driver_us, and\n"
                   "replay_driver_us:CALL by kind of call; docs/store.md)"),
    PT_CLI_OPT_FLAG("mechanism", sim_args, mechanism,
                    "run the trace's requests through the mechanism itself on the\n"
                    "GPU (its own work and its driver calls), each request timed,\n"
                    "instead of repeating the model's driver calls"),
    PT_CLI_OPT_FLAG("touch", sim_args, touch,
                    "with --mechanism: in the check pass, fill each block with a\n"
                    "pattern of its own and read it back before its free"),
    PT_CLI_OPT_PARSE("leave-free", "BYTES", sim_args, leave_free, pt_cli_opt_capacity, NULL,
                     "with --mechanism: first take the GPU's memory until about BYTES\n"
                     "are free (a test of running out of memory for real; given back\n"
                     "at the end)"),
    PT_CLI_OPT_STR("calls-out", 0, "FILE", sim_args, calls_out,
                   "with --mechanism: write every driver call of the run whose total\n"
                   "is the median, in order, one a line after two '#' lines: kind,\n"
                   "bytes, us, and whether a request made it (1) or not (0) (a\n"
                   "cuMemSetAccess one line a handle it covers); what a cost that\n"
                   "depends on the calls around it is fitted from"),
    PT_CLI_OPT_FLAG("json", sim_args, json, "one JSON object: sim's keys and gpu_replay"),
    SIM_OPT_LIST_GPUS,
    PT_CLI_OPT_REFUSE("tlb", NULL, "--tlb is sim's: a replay makes driver calls only"),
    PT_CLI_END};
static const sim_args replay_defaults = {.device = ULONG_MAX, .repeat = 5, .gpu = "h200"};
const pt_cli_table pt_opts_replay = {
    "usage: pagetune replay --trace TRACE --policy POLICY [--set NAME=VALUE]... [--capacity BYTES]\n"
    "                       [--device N] [--invent-addresses] [--gpu NAME] [--repeat N] [--db DB] [--json]\n"
    "       pagetune replay --mechanism [--touch] [--leave-free BYTES] --trace TRACE --policy POLICY ...\n"
    "                       [--repeat N] [--calls-out FILE] [--json]\n"
    "       pagetune replay --list-gpus\n"
    "\n"
    "Run the model as 'pagetune sim' does, then make the driver calls it made on\n"
    "this machine's GPU (device 0) through the CUDA driver, in the same order and\n"
    "with the same sizes, and time each: cudaMalloc/cudaFree as cuMemAlloc/cuMemFree,\n"
    "and the VMM calls (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess,\n"
    "cuMemUnmap, cuMemRelease, cuMemAddressFree) as themselves.  Prints, for each\n"
    "kind of call, the measured time beside the time the GPU description's cost\n"
    "model predicts.  This measures the driver side of an allocator, not its own\n"
    "bookkeeping.  Segments that existed before the trace are made first, and what\n"
    "is still held at the end is given back, both untimed.  One untimed replay\n"
    "warms the driver up first.  Needs a GPU: without one, one line and exit 1.\n"
    "Stitch's second mappings of a page map the same handle again.  Refused, with the\n"
    "call and the reason: VMM mechanisms on traces that begin with VMM segments.\n"
    "\n"
    "With --mechanism the trace's requests go through the policy's mechanism on\n"
    "device 0 instead (the code pagetune's allocator library runs): each request\n"
    "is timed, allocator work and driver calls together, and each driver call\n"
    "on its own, so a request's time splits into its calls and the allocator's\n"
    "own work (measured_costs in --json: what 'pagetune gpu fit' reads; by_class\n"
    "splits it into the repeats, requests and frees whose size was freed among\n"
    "the last 6 frees, and the rest; clock_read_us_runs, the cost of one read of\n"
    "the clock just before each timed run, untimed: the host's speed then, and\n"
    "clock_read_us_median_run, the one before the run reported; and with --gpu\n"
    "naming a description whose host_clock_read_us says the speed its costs hold\n"
    "at, measured_total_us_at_host_speed: each timed run's total brought to it\n"
    "by the read before that run, the median of those, as 'pagetune gpu fit'\n"
    "brings a replay's times to a host speed); peak\n"
    "reserved and the driver calls come from the same books as the model's; free\n"
    "GPU memory is read before and after, and what the run took must come back.\n"
    "Then one untimed check pass polls cuMemGetInfo whenever reserved bytes\n"
    "change (the driver's own view of the peak) and logs the addresses the GPU\n"
    "returned; the model is run again fed those addresses, and its driver-call\n"
    "counts and peak are compared with the GPU's.  Segments alive when the trace began are made\n"
    "first, untimed (VMM reservations asked at the recorded addresses; addresses\n"
    "translated where the driver put them elsewhere); refused: expandable\n"
    "segments alive at the start under the expandable mechanism.  A request the\n"
    "GPU cannot serve ends the run: one line, saying whether everything was given\n"
    "back, exit 1.  --touch fills each block in the check pass and reads it back\n"
    "before its free (an overlapping or lost mapping shows as a mismatch, exit 1).\n",
    replay_opts, sizeof(sim_args), &replay_defaults, 0};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, unsigned long n) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* The model's run, loaded and ready: what replay_store keys the stored run by. */
typedef struct sim_run {
  const sim_args *a;
  pt_trace_data t;
  pt_policy *pol;
  pt_sim_config cfg;
  pt_sim_result r;
  uint64_t capacity;         /* --capacity, or the cap --conf's per_process_memory_fraction sets */
  pt_conf *conf;             /* --conf read, with what sim made of each key; NULL without */
} sim_run;

/* ---- sim --conf ------------------------------------------------------------------------- */

/*
 * Read a->conf: the policy it means into m (pt_conf_model_of: its knobs as assignments, a finding for
 * each other key), the cap into *capacity; PT_EFORMAT when PyTorch refuses the value (one line).
 */
static int conf_setup(const sim_args *a, const pt_gpu *gpu, pt_conf *c, pt_conf_model *m, uint64_t *capacity, pt_err *err) {
  pt_conf_read(c, a->conf, "--conf");
  int rc = pt_conf_model_of(c, "--conf", m, err);
  if (rc < 0) return rc;
  if (c->has_fraction) {
    if (a->capacity) return pt_cli_usage(err, "--capacity and --conf's per_process_memory_fraction both set the cap: give one");
    if (c->fraction < 1.0) { /* 1.0: no cap, as in PyTorch */
      *capacity = (uint64_t)(c->fraction * (double)gpu->memory_bytes);
      if (!*capacity) return pt_err_set(err, PT_EFORMAT, "--conf: per_process_memory_fraction %.17g of %s's memory is a cap of 0 bytes", c->fraction, gpu->name);
      pt_conf_add(c, "per_process_memory_fraction", PT_CONF_NOTE, "the cap: %s x %llu = %llu bytes (%s's memory)",
                  pt_conf_value(c, "per_process_memory_fraction"), (unsigned long long)gpu->memory_bytes,
                  (unsigned long long)*capacity, gpu->name);
    } else {
      pt_conf_add(c, "per_process_memory_fraction", PT_CONF_NOTE, "1: no cap, as in PyTorch");
    }
  }
  if (pt_conf_value(c, "garbage_collection_threshold") && !c->async && !*capacity && !a->capacity)
    pt_conf_add(c, "garbage_collection_threshold", PT_CONF_WARNING,
                "acts only under a cap: without per_process_memory_fraction or --capacity it does nothing here, as in PyTorch");
  return 0;
}

static void conf_print_json(const pt_conf *c, const char *conf) {
  fputs(",\"conf\":{\"value\":", stdout);
  pt_json_str(stdout, conf);
  printf(",\"torch_version\":\"%s\",\"findings\":", PT_CONF_TORCH);
  pt_conf_findings_json(stdout, c);
  putchar('}');
}

/*
 * pagetune replay --db: the run under the workbench's key (so sweep, best and
 * report see it), and what the GPU measured, as measurements of that run.
 */
static int replay_store(const sim_run *s, const char *device, const double measured[PT_DRV_NCALLS + 1],
                        const uint64_t calls[PT_DRV_NCALLS], pt_err *err, int64_t *run_id) {
  pt_store *db;
  int rc = pt_store_open(s->a->db, 0, err, &db);
  if (rc < 0) return rc;
  char hash[65], pj[PT_PARAMS_JSON_MAX], notes[128];
  int64_t trace_id, policy_id, id;
  pt_store_run_key key;
  if ((rc = pt_wb_put_trace(db, s->a->trace, &s->t, err, hash, &trace_id)) < 0 ||
      (rc = pt_wb_put_policy(db, s->pol, err, &policy_id)) < 0)
    goto out;
  pt_wb_key(trace_id, policy_id, &s->cfg, pj, &key);
  if ((rc = pt_store_find_run(db, &key, err, run_id)) < 0) goto out;
  if (!*run_id && (rc = pt_store_put_run(db, &key, PT_GIT_REVISION, &s->r, err, run_id)) < 0) goto out;
  snprintf(notes, sizeof notes, "pagetune replay, median of %lu replays", s->a->repeat);
  if ((rc = pt_store_put_measurement(db, *run_id, "replay_driver_us", measured[PT_DRV_NCALLS], "us", device, notes,
                                     err, &id)) < 0)
    goto out;
  for (int c = 0; c < PT_DRV_NCALLS; c++) {
    if (!calls[c]) continue;
    char kind[64];
    snprintf(kind, sizeof kind, "replay_driver_us:%s", pt_drv_call_names[c]);
    if ((rc = pt_store_put_measurement(db, *run_id, kind, measured[c], "us", device, notes, err, &id)) < 0) goto out;
  }
out:
  pt_store_close(db);
  return rc;
}

/* ,"key":{"malloc":US,...}: µs for every kind of driver call. */
static void print_calls(const char *key, const double v[PT_DRV_NCALLS]) {
  printf(",\"%s\":{", key);
  for (int c = 0; c < PT_DRV_NCALLS; c++) printf("%s\"%s\":%.3f", c ? "," : "", pt_drv_call_names[c], v[c]);
  putchar('}');
}

/*
 * pagetune replay: one untimed warm-up, then `repeat` timed replays of the
 * logged calls on device 0; medians by kind of call, beside the cost model's
 * prediction for the same calls.
 */
static int replay_on_gpu(const sim_run *s, const pt_call_log *log, pt_err *err) {
  const sim_args *a = s->a;
  const pt_sim_result *r = &s->r;
  unsigned long repeat = a->repeat;
  pt_driver *d;
  pt_gpu_info gi;
  int rc = pt_driver_open(err, &d);
  if (rc < 0) return rc;
  if ((rc = pt_driver_info(d, &gi, err)) < 0) {
    pt_driver_close(d);
    return rc;
  }
  double *v = calloc((PT_DRV_NCALLS + 1) * repeat, sizeof *v); /* [kind][rep], total last */
  if (!v) {
    pt_driver_close(d);
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  pt_replay_result res;
  if (!a->json) fprintf(stderr, "replaying %zu driver calls on %s: warm-up", log->n, gi.name);
  rc = pt_replay_log(d, log, &res, err);
  for (unsigned long k = 0; rc == 0 && k < repeat; k++) {
    if (!a->json) fprintf(stderr, ", %lu", k + 1);
    if ((rc = pt_replay_log(d, log, &res, err)) < 0) break;
    for (int c = 0; c < PT_DRV_NCALLS; c++) v[c * repeat + k] = res.us[c];
    v[PT_DRV_NCALLS * repeat + k] = res.total_us;
  }
  if (!a->json) fputc('\n', stderr);
  pt_driver_close(d);
  if (rc < 0) {
    free(v);
    return rc;
  }
  double measured[PT_DRV_NCALLS + 1], predicted[PT_DRV_NCALLS + 1] = {0};
  for (int c = 0; c <= PT_DRV_NCALLS; c++) measured[c] = median_of(&v[c * repeat], repeat);
  free(v);
  for (int c = 0; c < PT_DRV_NCALLS; c++) {
    predicted[c] = r->predicted_call_us[c];
    predicted[PT_DRV_NCALLS] += predicted[c];
  }
  int64_t run_id = 0;
  if (a->db && (rc = replay_store(s, gi.name, measured, res.calls, err, &run_id)) < 0) return rc;
  const pt_gpu *gpu = s->cfg.gpu;
  if (a->json) {
    fputs("{\"gpu_replay\":{\"device\":", stdout);
    pt_json_str(stdout, gi.name);
    fputs(",\"cost_model\":", stdout);
    pt_json_str(stdout, gpu->name);
    printf(",\"repeat\":%lu,", repeat);
    pt_sim_print_calls_json(stdout, "driver_calls", res.calls);
    print_calls("measured_us", measured);
    print_calls("predicted_us", predicted);
    printf(",\"measured_total_us\":%.3f,\"predicted_total_us\":%.3f,\"run_id\":%" PRId64 "},",
           measured[PT_DRV_NCALLS], predicted[PT_DRV_NCALLS], run_id);
    pt_sim_print_json_members(stdout, r, 0);
    fputs("}\n", stdout);
    return 0;
  }
  printf("driver calls of the run, made on %s (device 0), median of %lu replays,\n"
         "beside the %s cost model's prediction:\n\n", gi.name, repeat, gpu->name);
  printf("  %-16s %8s %14s %14s\n", "call", "calls", "measured us", "predicted us");
  for (int c = 0; c < PT_DRV_NCALLS; c++)
    if (res.calls[c])
      printf("  %-16s %8" PRIu64 " %14.1f %14.1f\n", pt_drv_call_names[c], res.calls[c], measured[c], predicted[c]);
  printf("  %-16s %8s %14.1f %14.1f", "total", "", measured[PT_DRV_NCALLS], predicted[PT_DRV_NCALLS]);
  if (predicted[PT_DRV_NCALLS] > 0) printf("   (measured / predicted %.2f)", measured[PT_DRV_NCALLS] / predicted[PT_DRV_NCALLS]);
  printf("\n\nmodel: peak reserved %" PRIu64 " bytes, %" PRIu64 " segments; %" PRIu64 " requests, %" PRIu64 " frees\n",
         r->peak_reserved_bytes, r->segments_allocated, r->allocs, r->frees);
  if (a->db) printf("stored: run %" PRId64 " and its measurements in %s\n", run_id, a->db);
  return 0;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* Median, 99th percentile and sum of n request times (sorted in place). */
static void request_stats(float *v, size_t n, double out[3]) {
  out[0] = out[1] = out[2] = 0;
  if (!n) return;
  qsort(v, n, sizeof *v, cmp_float);
  out[0] = v[n / 2];
  out[1] = v[(size_t)((double)(n - 1) * 0.99)];
  for (size_t i = 0; i < n; i++) out[2] += v[i];
}

/* The measured costs of a run on the GPU: each kind of call by size class ([calls, bytes, us]) and the
   allocator's own work by request size class ([requests, bytes, us]): what pagetune gpu fit reads. */
/* "KEY":{KIND:[[calls, bytes, us], ...], ...}: driver calls by kind and size class. */
static void print_call_points(const char *key, const pt_call_sizes *sz, const pt_call_times *tm) {
  printf("\"%s\":{", key);
  const char *sep = "";
  for (int c = 0; c < PT_DRV_NCALLS; c++) {
    const char *inner = "";
    for (int k = 0; k < PT_SIZE_CLASSES; k++) {
      if (!sz->calls[c][k]) continue;
      if (!*inner) printf("%s\"%s\":[", sep, pt_drv_call_names[c]);
      printf("%s[%" PRIu64 ",%" PRIu64 ",%.4f]", inner, sz->calls[c][k], sz->bytes[c][k], tm->us[c][k]);
      inner = ",";
      sep = ",";
    }
    if (*inner) putchar(']');
  }
  putchar('}');
}

/* "calls":{...},"calls_after_large":{...},"requests":[...],"requests_with_calls":[...]: driver calls, those after a
   large one among them (device.h: a subset, what cost_after_large prices), and requests and frees as [count,
   bytes, us of own work] by size class (without, with driver calls). */
static void print_cost_points(const pt_call_sizes *sz, const pt_call_times *tm, const pt_call_sizes *after_sz,
                              const pt_call_times *after_tm, const pt_req_sizes *req, const double own[PT_SIZE_CLASSES],
                              const double own_call[PT_SIZE_CLASSES]) {
  print_call_points("calls", sz, tm);
  putchar(',');
  print_call_points("calls_after_large", after_sz, after_tm);
  const char *sep = "";
  for (int with = 0; with < 2; with++) { /* requests served without a driver call, then with */
    printf("%s\"%s\":[", with ? "]," : ",", with ? "requests_with_calls" : "requests");
    const uint64_t *n = with ? req->n_call : req->n, *b = with ? req->bytes_call : req->bytes;
    const double *us = with ? own_call : own;
    sep = "";
    for (int k = 0; k < PT_SIZE_CLASSES; k++)
      if (n[k]) {
        printf("%s[%" PRIu64 ",%" PRIu64 ",%.4f]", sep, n[k], b[k], us[k]);
        sep = ",";
      }
  }
  putchar(']');
}

static void print_measured_costs(const pt_sim_result *r) {
  fputs("\"measured_costs\":{", stdout);
  print_cost_points(r->call_sizes, r->call_times, r->after_call_sizes, r->after_call_times, &r->req, r->own_us,
                    r->own_call_us);
  fputs(",\"requests_by_live\":[", stdout); /* [fewest live blocks of the bin, requests, us] */
  const char *sep = "";
  for (int b = 0; b < PT_LIVE_BINS; b++)
    if (r->own_live_n[b]) {
      printf("%s[%" PRIu64 ",%" PRIu64 ",%.4f]", sep, (UINT64_C(1) << b) - 1, r->own_live_n[b], r->own_live_us[b]);
      sep = ",";
    }
  /* the same split by request class (sim.h): the repeats, and the rest (the totals less the repeats) */
  static pt_call_sizes osz, oasz;
  static pt_call_times otm, oatm;
  pt_req_sizes oreq;
  double own[PT_SIZE_CLASSES], own_call[PT_SIZE_CLASSES];
  for (int c = 0; c < PT_DRV_NCALLS; c++)
    for (int k = 0; k < PT_SIZE_CLASSES; k++) {
      osz.calls[c][k] = r->call_sizes->calls[c][k] - r->repeat_call_sizes->calls[c][k];
      osz.bytes[c][k] = r->call_sizes->bytes[c][k] - r->repeat_call_sizes->bytes[c][k];
      otm.us[c][k] = r->call_times->us[c][k] - r->repeat_call_times->us[c][k];
      oasz.calls[c][k] = r->after_call_sizes->calls[c][k] - r->repeat_after_call_sizes->calls[c][k];
      oasz.bytes[c][k] = r->after_call_sizes->bytes[c][k] - r->repeat_after_call_sizes->bytes[c][k];
      oatm.us[c][k] = r->after_call_times->us[c][k] - r->repeat_after_call_times->us[c][k];
    }
  for (int k = 0; k < PT_SIZE_CLASSES; k++) {
    oreq.n[k] = r->req.n[k] - r->req_repeat.n[k];
    oreq.bytes[k] = r->req.bytes[k] - r->req_repeat.bytes[k];
    oreq.n_call[k] = r->req.n_call[k] - r->req_repeat.n_call[k];
    oreq.bytes_call[k] = r->req.bytes_call[k] - r->req_repeat.bytes_call[k];
    own[k] = r->own_us[k] - r->own_repeat_us[k];
    own_call[k] = r->own_call_us[k] - r->own_call_repeat_us[k];
  }
  printf("],\"repeat_window\":%d,\"by_class\":{\"other\":{", PT_REPEAT_WINDOW);
  print_cost_points(&osz, &otm, &oasz, &oatm, &oreq, own, own_call);
  fputs("},\"repeat\":{", stdout);
  print_cost_points(r->repeat_call_sizes, r->repeat_call_times, r->repeat_after_call_sizes, r->repeat_after_call_times,
                    &r->req_repeat, r->own_repeat_us, r->own_call_repeat_us);
  printf("}},\"failed_calls_us\":%.4f}", r->call_times->failed_us);
}

/* The host's speed (clock.h): one read of the clock that times each request, µs, the mean of these many reads
   (a request's time holds two: its own work includes them, measured and fitted alike); after the runs, and before
   each (about 1 ms, untimed). */
enum { CLOCK_READS_RUN = 20000 }; /* before each run: about 1 ms */

/* --calls-out: the file made beside path before the replay (file.h: a path that cannot be written fails before
   any GPU work), and one timed run's calls written to it, in order, then renamed to path: whole or not at all. */
static FILE *calls_open(const char *path, char *tmp, size_t n, pt_err *err) {
  return pt_file_check_output(path, NULL, "--calls-out", err) < 0 ? NULL : pt_file_fopen_beside(path, "w", tmp, n, err);
}

static int calls_write(FILE *f, const char *tmp, const char *path, const char *trace, const char *policy,
                       const pt_call_tlog *tl, pt_err *err) {
  fprintf(f, "# pagetune replay --mechanism --calls-out: %s under %s, the run whose total is the median\n"
             "# call bytes us request (request 0: a call no request made, untimed in the total)%s\n",
          trace, policy, tl->lost ? "; some calls dropped: out of memory" : "");
  for (size_t i = 0; i < tl->n; i++)
    fprintf(f, "%s %" PRIu64 " %.4f %d\n", pt_drv_call_names[tl->v[i].call], tl->v[i].bytes, tl->v[i].us, tl->v[i].request);
  errno = 0;
  int e = ferror(f) ? (errno ? errno : EIO) : 0; /* the first failure's reason */
  if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    remove(tmp);
    return pt_err_set(err, PT_EIO, "%s: cannot write: %s", path, strerror(e));
  }
  return 0;
}

/* What the untimed check pass found: the driver's peak, and the model fed the GPU's addresses. */
typedef struct mcheck {
  pt_mreplay_result mr;
  pt_sim_result gpu, fed;   /* the check pass on the GPU; the model fed its addresses */
  int calls_equal;
} mcheck;

static int check_pass(pt_driver *d, sim_run *s, mcheck *k, pt_err *err) {
  pt_call_log log = {0};
  pt_mreplay_opts o = {.touch = s->a->touch, .poll = 1, .log = &log};
  int rc = pt_mreplay_run(d, &s->t, &s->cfg, &o, &k->gpu, &k->mr, err);
  pt_addr_hint *mh = NULL, *vh = NULL;
  size_t nm = 0, nv = 0;
  if (rc == 0) rc = pt_mreplay_hints(&log, &mh, &nm, &vh, &nv, err);
  if (rc == 0) {
    pt_sim_config fed = s->cfg;
    fed.gpu = NULL; /* calls and bytes only: page tables cannot hold the driver's sub-allocated small blocks */
    fed.tlb = 0;
    fed.given_addresses = 1;
    fed.malloc_hints = mh;
    fed.nmalloc_hints = nm;
    fed.reserve_hints = vh;
    fed.nreserve_hints = nv;
    rc = pt_sim_run(&s->t, &fed, err, &k->fed);
  }
  if (rc == 0) {
    k->calls_equal = 1;
    for (int c = 0; c < PT_DRV_NCALLS; c++) k->calls_equal &= k->fed.driver_calls[c] == k->gpu.driver_calls[c];
  }
  free(mh);
  free(vh);
  pt_call_log_free(&log);
  return rc;
}

/*
 * pagetune replay --mechanism: the requests through the mechanism on device
 * 0, `repeat` times after one untimed warm-up; per-request times of the run
 * whose total is the median, beside the model's prediction; then the
 * untimed check pass.
 */
static int replay_mechanism(sim_run *s, pt_err *err) {
  const sim_args *a = s->a;
  pt_driver *d;
  pt_gpu_info gi;
  int rc = pt_driver_open(err, &d);
  if (rc < 0) return rc;
  if ((rc = pt_driver_info(d, &gi, err)) < 0) {
    pt_driver_close(d);
    return rc;
  }
  pt_cudadev *ballast = NULL;
  if (a->leave_free && (rc = pt_cudadev_open(d, 0, err, &ballast)) == 0) rc = pt_cudadev_occupy(ballast, a->leave_free);
  unsigned long repeat = a->repeat;
  pt_sim_result *runs = calloc(repeat + 1, sizeof *runs);
  pt_mreplay_result *mr = calloc(repeat + 1, sizeof *mr);
  double *total = calloc(repeat + 1, sizeof *total), *speed = calloc(repeat + 1, sizeof *speed);
  mcheck *k = calloc(1, sizeof *k);
  pt_call_tlog *tlog = a->calls_out ? calloc(repeat + 1, sizeof *tlog) : NULL;
  if (rc == 0 && (!runs || !mr || !total || !speed || !k || (a->calls_out && !tlog)))
    rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  char calls_tmp[4200];
  FILE *calls = rc == 0 && a->calls_out ? calls_open(a->calls_out, calls_tmp, sizeof calls_tmp, err) : NULL;
  if (a->calls_out && !calls && rc == 0) rc = PT_EIO;
  int progress = rc == 0 && !a->json; /* a progress line on stderr, ended before anything else is said */
  if (progress)
    fprintf(stderr, "replaying %" PRIu64 " requests through %s on %s: warm-up", s->r.allocs, s->cfg.mech->name, gi.name);
  unsigned long done = 0;
  pt_mreplay_opts timed = {0}; /* nothing but the requests: a fill's work would be waited for at a free */
  for (unsigned long i = 0; rc == 0 && i <= repeat; i++, done++) {
    if (i && !a->json) fprintf(stderr, ", %lu", i);
    if (i) speed[i] = pt_clock_read_us(CLOCK_READS_RUN); /* the host's speed just before the run, untimed */
    timed.tlog = tlog && i ? &tlog[i] : NULL;
    if ((rc = pt_mreplay_run(d, &s->t, &s->cfg, &timed, &runs[i], &mr[i], err)) < 0) break;
    for (size_t j = 0; j < runs[i].nalloc_us; j++) total[i] += runs[i].alloc_us[j];
    for (size_t j = 0; j < runs[i].nfree_us; j++) total[i] += runs[i].free_us[j];
  }
  if (rc == 0 && !a->json) fputs(", check", stderr);
  if (rc == 0) rc = check_pass(d, s, k, err);
  if (rc == 0 && k->mr.mismatches)
    rc = pt_err_set(err, PT_EIO, "%s: --touch: block at 0x%" PRIx64 " (%" PRIu64 " bytes) read back another's pattern (%" PRIu64 " bad words in the run)",
                    a->trace, k->mr.first_bad_addr, k->mr.first_bad_bytes, k->mr.mismatches);
  if (progress) fputc('\n', stderr); /* the progress line ended, before any error */
  pt_cudadev_close(ballast);
  pt_driver_close(d);
  if (rc == 0) {
    unsigned long best = 1; /* the timed run whose total is the median */
    double *sorted = malloc(repeat * sizeof *sorted);
    if (!sorted) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
    else {
      memcpy(sorted, total + 1, repeat * sizeof *sorted);
      double med = median_of(sorted, repeat);
      for (unsigned long i = 1; i <= repeat; i++)
        if (total[i] == med) best = i;
      free(sorted);
      pt_sim_result *r = &runs[best];
      double al[3], fr[3];
      request_stats(r->alloc_us, r->nalloc_us, al);
      request_stats(r->free_us, r->nfree_us, fr);
      const pt_mreplay_result *m = &mr[best];
      int64_t back = (int64_t)m->free_after - (int64_t)m->free_before;
      if (calls) {
        rc = calls_write(calls, calls_tmp, a->calls_out, a->trace, pt_policy_name(s->pol), &tlog[best], err);
        calls = NULL; /* closed */
        if (rc < 0) goto out;
      }
      double at_speed = s->cfg.gpu ? pt_clock_at_speed(total + 1, speed + 1, repeat, s->cfg.gpu->host_clock_read_us) : 0;
      if (a->json) {
        fputs("{\"gpu_mechanism_replay\":{\"device\":", stdout);
        pt_json_str(stdout, gi.name);
        fputs(",\"trace\":", stdout);
        pt_json_str(stdout, a->trace);
        fputs(",\"policy\":", stdout);
        pt_json_str(stdout, pt_policy_name(s->pol));
        fputs(",\"mechanism\":", stdout);
        pt_json_str(stdout, s->cfg.mech->name);
        printf(",\"repeat\":%lu,\"requests\":%zu,\"alloc_us\":{\"median\":%.4f,\"p99\":%.4f,\"total\":%.3f},"
               "\"free_us\":{\"median\":%.4f,\"p99\":%.4f,\"total\":%.3f},\"measured_total_us\":%.3f,"
               "\"predicted_total_us\":%.3f,\"peak_reserved_bytes\":%" PRIu64 ",\"model_peak_reserved_bytes\":%" PRIu64
               ",\"free_before\":%" PRIu64 ",\"free_after\":%" PRIu64 ",\"touched\":%" PRIu64 ",\"checked\":%" PRIu64
               ",\"mismatches\":%" PRIu64 ",",
               repeat, r->nalloc_us, al[0], al[1], al[2], fr[0], fr[1], fr[2], total[best], s->r.predicted_alloc_us,
               r->peak_reserved_bytes, s->r.peak_reserved_bytes, m->free_before, m->free_after, k->mr.touched,
               k->mr.checked, k->mr.mismatches);
        printf("\"clock_read_us\":%.4f,\"clock_read_us_median_run\":%.6g,", pt_clock_read_us(PT_CLOCK_READS), speed[best]);
        fputs("\"measured_total_us_runs\":[", stdout); /* every timed run's total, for the spread */
        for (unsigned long i = 1; i <= repeat; i++) printf("%s%.3f", i > 1 ? "," : "", total[i]);
        fputs("],\"clock_read_us_runs\":[", stdout); /* the host's speed before each */
        for (unsigned long i = 1; i <= repeat; i++) printf("%s%.6g", i > 1 ? "," : "", speed[i]);
        fputs("],", stdout);
        if (at_speed > 0) /* the measured total at the speed the prediction's costs hold at */
          printf("\"host_clock_read_us\":%.6g,\"measured_total_us_at_host_speed\":%.3f,", s->cfg.gpu->host_clock_read_us,
                 at_speed);
        pt_sim_print_calls_json(stdout, "driver_calls", r->driver_calls);
        putchar(',');
        print_measured_costs(r);
        printf(",\"check\":{\"driver_peak_used_bytes\":%" PRIu64 ",\"peak_reserved_bytes\":%" PRIu64
               ",\"fed_model_peak_reserved_bytes\":%" PRIu64 ",\"fed_model_calls_equal\":%s,",
               k->mr.driver_peak_used, k->gpu.peak_reserved_bytes, k->fed.peak_reserved_bytes,
               k->calls_equal ? "true" : "false");
        pt_sim_print_calls_json(stdout, "driver_calls", k->gpu.driver_calls);
        putchar(',');
        pt_sim_print_calls_json(stdout, "fed_model_driver_calls", k->fed.driver_calls);
        fputs("}},", stdout);
        pt_sim_print_json_members(stdout, &s->r, 0);
        fputs("}\n", stdout);
      } else {
        printf("the requests of %s through %s on %s (device 0), the median of %lu runs:\n\n", a->trace,
               s->cfg.mech->name, gi.name, repeat);
        printf("  %-8s %10s %12s %12s %14s\n", "request", "count", "median us", "p99 us", "total us");
        printf("  %-8s %10zu %12.3f %12.3f %14.1f\n", "alloc", r->nalloc_us, al[0], al[1], al[2]);
        printf("  %-8s %10zu %12.3f %12.3f %14.1f\n", "free", r->nfree_us, fr[0], fr[1], fr[2]);
        double calls_us = r->call_times->total_us;
        printf("\nmeasured %.1f us in all (driver calls %.1f, the allocator's own work %.1f); the %s cost model "
               "predicted %.1f us\n",
               total[best], calls_us, total[best] - calls_us, s->cfg.gpu ? s->cfg.gpu->name : "(no)", s->r.predicted_alloc_us);
        if (at_speed > 0)
          printf("at the host speed %s's costs hold at (a clock read of %.4f us; here %.4f before the median run, each "
                 "run brought to it by the read before it): %.1f us measured, the median\n",
                 s->cfg.gpu->name, s->cfg.gpu->host_clock_read_us, speed[best], at_speed);
        printf("peak reserved %" PRIu64 " bytes on the GPU, %" PRIu64 " in the model; %" PRIu64 " driver calls\n",
               r->peak_reserved_bytes, s->r.peak_reserved_bytes, r->driver_calls[PT_DRV_malloc] + r->driver_calls[PT_DRV_mem_create]);
        printf("free GPU memory %" PRIu64 " before, %" PRIu64 " after (%+" PRId64 ")\n", m->free_before, m->free_after, back);
        if (a->touch)
          printf("touch (check pass): %" PRIu64 " blocks filled, %" PRIu64 " read back, no mismatch\n", k->mr.touched,
                 k->mr.checked);
        printf("check pass: the driver saw at most %" PRIu64 " bytes in use (books: %" PRIu64 "); the model fed the GPU's "
               "addresses: peak %" PRIu64 ", driver calls %s\n",
               k->mr.driver_peak_used, k->gpu.peak_reserved_bytes, k->fed.peak_reserved_bytes,
               k->calls_equal ? "equal" : "DIFFER");
      }
    }
  }
out:
  if (calls) { /* the replay failed: no file */
    fclose(calls);
    remove(calls_tmp);
  }
  for (unsigned long i = 0; i < done && runs; i++) pt_sim_result_free(&runs[i]);
  for (unsigned long i = 0; tlog && i <= repeat; i++) pt_call_tlog_free(&tlog[i]);
  free(tlog);
  if (k) {
    pt_sim_result_free(&k->gpu);
    pt_sim_result_free(&k->fed);
  }
  free(k);
  free(runs);
  free(mr);
  free(total);
  free(speed);
  return rc;
}

static void print_sim(const sim_run *s, double median, double fastest, double slowest) {
  const sim_args *a = s->a;
  const pt_sim_result *r = &s->r;
  if (a->json) {
    char pj[PT_PARAMS_JSON_MAX];
    pt_params_json(&s->cfg.params, 0, pj, sizeof pj);
    fputs("{\"trace\":", stdout);
    pt_json_str(stdout, a->trace);
    fputs(",\"policy\":", stdout);
    pt_json_str(stdout, pt_policy_name(s->pol));
    fputs(",\"mechanism\":", stdout);
    pt_json_str(stdout, s->cfg.mech->name);
    printf(",\"params\":%s,\"capacity\":%" PRIu64 ",\"repeat\":%lu,\"replay_seconds_median\":%.6g,"
           "\"replay_seconds_min\":%.6g,\"replay_seconds_max\":%.6g",
           pj, s->capacity, a->repeat, median, fastest, slowest);
    if (s->conf) conf_print_json(s->conf, a->conf);
    putchar(',');
    pt_sim_print_json_members(stdout, r, 1);
    fputs("}\n", stdout);
    return;
  }
  printf("trace:     %s (%zu records)\n", a->trace, s->t.n);
  if (s->conf) printf("conf:      %s (as PyTorch %s reads it)\n", a->conf, PT_CONF_TORCH);
  printf("policy:    %s (mechanism %s)\n", pt_policy_name(s->pol), s->cfg.mech->name);
  printf("params:   ");
  for (int i = 0; i < s->cfg.params.n; i++) {
    char list[256];
    if (s->cfg.params.v[i].list.n)
      printf(" %s=%s", s->cfg.params.v[i].name, pt_param_list_format(&s->cfg.params.v[i].list, list, sizeof list));
    else
      printf(" %s=%.10g", s->cfg.params.v[i].name, s->cfg.params.v[i].value);
  }
  if (s->capacity) printf("\ncapacity:  %" PRIu64 " bytes\n\n", s->capacity);
  else printf("\ncapacity:  none\n\n");
  pt_sim_print_text(stdout, r);
  if (r->observed_segment_allocs || r->observed_peak_reserved_bytes) {
    /* counted as the snapshot counts them: a cudaMalloc'd segment, or a range made accessible (an expandable
       segment's growth: one segment_map record, however many handles it maps) */
    uint64_t segs = r->driver_calls[PT_DRV_malloc] + r->driver_calls[PT_DRV_mem_set_access];
    printf("\nmodel vs recorded: segments %" PRIu64 " / %" PRIu64 ", releases %" PRIu64 " / %" PRIu64
           ", peak reserved %" PRIu64 " / %" PRIu64 " (%s)\n",
           segs, r->observed_segment_allocs, r->segment_releases, r->observed_segment_releases, r->peak_reserved_bytes,
           r->observed_peak_reserved_bytes,
           segs == r->observed_segment_allocs && r->segment_releases == r->observed_segment_releases &&
                   r->peak_reserved_bytes == r->observed_peak_reserved_bytes
               ? "match"
               : "differ");
  }
  printf("replayed %zu records in %.4f s (%.1f M records/s)", s->t.n, median,
         median > 0 ? s->t.n / median / 1e6 : 0.0);
  if (a->repeat > 1) printf(", median of %lu (min %.4f s, max %.4f s)", a->repeat, fastest, slowest);
  putchar('\n');
}

/* sim, and with on_gpu (pagetune replay) its driver calls made again on the GPU. */
static int run_sim(const sim_args *a, int on_gpu, pt_err *err) {
  if (a->list_gpus) {
    char names[1024], looked[2048];
    if (pt_gpu_list(names, sizeof names) < 0)
      return pt_err_set(err, PT_ENOTFOUND, "no GPU descriptions found (looked in %s)",
                        pt_datadir_looked(PT_DATA_GPUS, looked, sizeof looked));
    printf("%s\n", names);
    return 0;
  }
  if (!a->trace) return pt_cli_usage(err, "needs --trace TRACE");
  if (!a->policy && !a->conf) return pt_cli_usage(err, "needs --policy POLICY (or --conf VALUE)");
  if (a->policy && a->conf) return pt_cli_usage(err, "--conf chooses the policy: give --policy or --conf, not both");
  const char *gpu_name = a->gpu && strcmp(a->gpu, "none") ? a->gpu : NULL; /* "none": no GPU model */
  if (a->tlb && !gpu_name) return pt_cli_usage(err, "--tlb needs a GPU description (--gpu NAME, not none)");
  if (on_gpu && !a->mechanism && !gpu_name)
    return pt_cli_usage(err, "replay compares the GPU with a prediction: it needs a GPU description (--gpu NAME, not none)");
  char pbuf[4096];
  sim_run s = {.a = a, .capacity = a->capacity};
  pt_gpu gpu, conf_gpu;
  int rc = 0;
  if (gpu_name && (rc = pt_gpu_load(gpu_name, err, &gpu)) < 0) return rc;
  const char *policy = a->policy;
  pt_conf_model *m = NULL;
  if (a->conf) { /* the device whose memory a fraction is of: --gpu's, else the H200 the traces were captured on */
    if (!gpu_name && (rc = pt_gpu_load_named("h200", err, &conf_gpu)) < 0) return rc;
    s.conf = calloc(1, sizeof *s.conf);
    m = calloc(1, sizeof *m);
    if (!s.conf || !m) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
    if (rc == 0) rc = conf_setup(a, gpu_name ? &gpu : &conf_gpu, s.conf, m, &s.capacity, err);
    if (rc == 0) policy = m->policy;
    if (rc == 0 && !a->json) pt_conf_findings_text(stderr, "sim --conf: ", s.conf);
  }
  if (rc == 0) rc = pt_wb_policy_file(policy, pbuf, sizeof pbuf, err);
  if (rc == 0) rc = pt_policy_load(pbuf, NULL, err, &s.pol);
  for (int i = 0; m && rc == 0 && i < m->nsets; i++) /* PyTorch accepted it: one the policy refuses is the model's limit */
    if (pt_policy_set(s.pol, m->sets[i], err) < 0) rc = pt_err_prefix(err, PT_EFORMAT, "--conf");
  free(m);
  for (int i = 0; rc == 0 && i < a->nsets; i++)
    if (pt_policy_set(s.pol, a->sets[i], err) < 0) rc = PT_EUSAGE; /* a bad --set is bad usage: exit 2 */
  if (rc < 0) {
    if (s.pol) pt_policy_free(s.pol);
    free(s.conf);
    return rc;
  }
  pt_wb_config(s.pol, s.capacity, gpu_name ? &gpu : NULL, &s.cfg);
  s.cfg.invent_addresses = a->invent;
  s.cfg.tlb = a->tlb;
  pt_trace_opts topts = {.device = a->device == ULONG_MAX ? -1 : (int)a->device};
  if ((rc = pt_trace_load(a->trace, &topts, err, &s.t)) < 0) {
    pt_policy_free(s.pol);
    free(s.conf);
    return rc;
  }
  const char *misuse = a->mechanism && a->db ? "--db stores the driver-call replay; with --mechanism it stores nothing yet"
                      : a->mechanism          ? NULL
                      : a->leave_free         ? "--leave-free needs --mechanism"
                      : a->touch              ? "--touch needs --mechanism"
                      : a->calls_out          ? "--calls-out needs --mechanism"
                                              : NULL;
  if (misuse) {
    pt_trace_data_free(&s.t);
    pt_policy_free(s.pol);
    free(s.conf);
    return pt_cli_usage(err, "%s", misuse);
  }
  pt_call_log log = {0};
  if (on_gpu && !a->mechanism) s.cfg.log = &log;
  unsigned long runs = on_gpu ? 1 : a->repeat; /* replay: --repeat counts GPU replays */
  double *secs = calloc(runs, sizeof *secs);
  rc = secs ? 0 : pt_err_set(err, PT_ENOMEM, "out of memory");
  for (unsigned long k = 0; rc == 0 && k < runs; k++) {
    if (k) pt_sim_result_free(&s.r);
    if ((rc = pt_sim_run(&s.t, &s.cfg, err, &s.r)) == 0) secs[k] = s.r.seconds;
  }
  if (rc == 0) {
    qsort(secs, runs, sizeof *secs, cmp_double);
    if (on_gpu && a->mechanism) rc = replay_mechanism(&s, err);
    else if (on_gpu) rc = replay_on_gpu(&s, &log, err);
    else print_sim(&s, secs[runs / 2], secs[0], secs[runs - 1]);
    pt_sim_result_free(&s.r);
  }
  free(secs);
  pt_call_log_free(&log);
  pt_trace_data_free(&s.t);
  pt_policy_free(s.pol);
  free(s.conf);
  return rc;
}

int pt_cmd_sim(void *args, char **pos, int npos, pt_err *err) { return run_sim(args, 0, err); }
int pt_cmd_replay(void *args, char **pos, int npos, pt_err *err) { return run_sim(args, 1, err); }
