/*
 * main.c — the pagetune command line: subcommand dispatch, option parsing,
 * and the only place that prints errors and chooses exit codes.
 *
 * Exit status (DESIGN.md, "Contract"): 0 success, 1 bad input or a failed run
 * (one line on stderr: file, position, reason), 2 bad usage.
 */
#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <gsl/gsl_version.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "driver.h"
#include "replay.h"
#include "calibrate.h"
#include "clock.h"
#include "error.h"
#include "export.h"
#include "gen.h"
#include "gpu.h"
#include "json.h"
#include "mech.h"
#include "paramjson.h"
#include "policy.h"
#include "report.h"
#include "sim.h"
#include "store.h"
#include "trace.h"
#include "tracestats.h"
#include "tune.h"

#define EXIT_BAD 1
#define EXIT_USAGE 2

static const char *prog = "pagetune";

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
  fprintf(stderr, "%s %s: ", prog, cmd);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(try '%s %s --help')\n", prog, cmd);
  return EXIT_USAGE;
}

static int fail(const pt_err *err) {
  fprintf(stderr, "%s: %s\n", prog, err->msg);
  return EXIT_BAD;
}

/* Strict unsigned parse: the whole string, in range. */
static int parse_ulong(const char *s, unsigned long max, unsigned long *out) {
  char *end;
  if (!*s || *s == '-') return -1;
  errno = 0;
  unsigned long v = strtoul(s, &end, 0);
  if (errno || *end || v > max) return -1;
  *out = v;
  return 0;
}

/* ---- pagetune trace stats -------------------------------------------------- */

static const char stats_help[] =
    "usage: pagetune trace stats TRACE [--device N] [--json]\n"
    "\n"
    "Read TRACE (a pagetune trace, .gz or not, or a PyTorch memory snapshot\n"
    "pickle) and print what it holds: events, allocs, frees, streams,\n"
    "distinct_sizes, peak_live_bytes, bytes_allocated_total, initial_segments,\n"
    "initial_reserved_bytes, duration_us, and what the real allocator recorded.\n"
    "\n"
    "  --device N   device of a multi-GPU snapshot (default: the one with events)\n"
    "  --json       one JSON object on stdout\n"
    "  -h, --help   this help\n";

static const char import_help[] =
    "usage: pagetune trace import SRC -o DST [--device N] [--json]\n"
    "\n"
    "Convert SRC, a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot;\n"
    "pickle, plain or gzip'd), into a pagetune trace DST (gzip'd when DST ends\n"
    "in .gz).  The pickle is read as data only: opcodes that import or call\n"
    "are refused, nothing is executed.  Frees are free_completed entries;\n"
    "segments alive before recording become the initial state.  DST appears\n"
    "only when the whole import succeeded.\n"
    "\n"
    "  -o, --output DST  the trace to write (required)\n"
    "  --device N        device of a multi-GPU snapshot (default: the one with events)\n"
    "  --json            print the new trace's stats as one JSON object\n"
    "  -h, --help        this help\n";

static const char gen_help[] =
    "usage: pagetune trace gen --kind KIND --seed S [--steps N] -o DST\n"
    "\n"
    "Write a synthetic trace drawn from GSL's mt19937 generator; the same kind,\n"
    "seed and steps always give the same trace.\n"
    "\n"
    "  --kind KIND     train (training loop), infer (variable-length, variable-batch\n"
    "                  inference), kvcache (LLM decoding with a growing KV cache)\n"
    "  --seed S        generator seed (unsigned integer)\n"
    "  --steps N       iterations / requests / sequences (default 20 / 200 / 8)\n"
    "  -o, --output DST  the trace to write (.gz compresses)\n"
    "  -h, --help      this help\n";

static const char trace_help[] =
    "usage: pagetune trace COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  import SRC -o DST   PyTorch memory snapshot -> pagetune trace\n"
    "  stats TRACE         counts and peaks of a trace or snapshot\n"
    "  gen --kind K --seed S -o DST   synthetic trace\n"
    "\n"
    "'pagetune trace COMMAND --help' describes each.  The format: traces/FORMAT.md.\n";

enum { OPT_JSON = 256, OPT_DEVICE, OPT_KIND, OPT_SEED, OPT_STEPS };

static const struct option trace_opts[] = {
    {"json", no_argument, NULL, OPT_JSON},       {"device", required_argument, NULL, OPT_DEVICE},
    {"output", required_argument, NULL, 'o'},    {"kind", required_argument, NULL, OPT_KIND},
    {"seed", required_argument, NULL, OPT_SEED}, {"steps", required_argument, NULL, OPT_STEPS},
    {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};

/* Options of the trace subcommands; which ones a command accepts is checked after. */
typedef struct trace_args {
  int json, device, have_kind, have_seed;
  const char *output;
  pt_gen_opts gen;
  const char *positional[2];
  int npos;
  unsigned long given; /* bitmask of OPT_* - 256 / 'o' seen */
} trace_args;

#define GIVEN(o) (1ul << ((o) == 'o' ? 10 : (o) - 256))

static int parse_trace_args(const char *cmd, const char *help, int argc, char **argv,
                            unsigned long allowed, trace_args *a) {
  *a = (trace_args){.device = -1};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":ho:", trace_opts, NULL)) != -1) {
    unsigned long v;
    switch (c) {
    case 'h': fputs(help, stdout); return -1;
    case '?': return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    case ':': return usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    case OPT_JSON: a->json = 1; break;
    case 'o': a->output = optarg; break;
    case OPT_DEVICE:
      if (parse_ulong(optarg, 4096, &v) < 0) return usage_error(cmd, "bad --device '%s'", optarg);
      a->device = (int)v;
      break;
    case OPT_KIND:
      if (pt_gen_kind_parse(optarg, &a->gen.kind) < 0)
        return usage_error(cmd, "bad --kind '%s' (train|infer|kvcache)", optarg);
      break;
    case OPT_SEED:
      if (parse_ulong(optarg, ULONG_MAX, &v) < 0) return usage_error(cmd, "bad --seed '%s'", optarg);
      a->gen.seed = v;
      break;
    case OPT_STEPS:
      if (parse_ulong(optarg, 1000000, &v) < 0 || v == 0)
        return usage_error(cmd, "bad --steps '%s' (1..1000000)", optarg);
      a->gen.steps = (unsigned)v;
      break;
    }
    if (!(allowed & GIVEN(c))) return usage_error(cmd, "option '%s' does not apply here", argv[optind - 1]);
    a->given |= GIVEN(c);
  }
  for (; optind < argc; optind++) {
    if (a->npos == 2) return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    a->positional[a->npos++] = argv[optind];
  }
  return 0;
}

static int cmd_trace_stats(int argc, char **argv) {
  trace_args a;
  int rc = parse_trace_args("trace stats", stats_help, argc, argv, GIVEN(OPT_JSON) | GIVEN(OPT_DEVICE), &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.npos != 1) return usage_error("trace stats", "%s", "needs exactly one TRACE");
  pt_err err = {{0}};
  pt_trace *t;
  pt_trace_opts o = {.device = a.device};
  if (pt_trace_open(a.positional[0], &o, &err, &t) < 0) return fail(&err);
  pt_trace_stats s;
  rc = pt_trace_stats_compute(t, &s, &err);
  if (rc < 0) {
    pt_trace_close(t);
    return fail(&err);
  }
  if (a.json) pt_trace_stats_print_json(stdout, a.positional[0], pt_trace_get_info(t), &s);
  else pt_trace_stats_print_text(stdout, pt_trace_get_info(t), &s);
  pt_trace_close(t);
  return 0;
}

static int cmd_trace_import(int argc, char **argv) {
  trace_args a;
  int rc = parse_trace_args("trace import", import_help, argc, argv,
                            GIVEN(OPT_JSON) | GIVEN(OPT_DEVICE) | GIVEN('o'), &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.npos != 1) return usage_error("trace import", "%s", "needs exactly one SRC");
  if (!a.output) return usage_error("trace import", "%s", "needs -o DST");
  pt_err err = {{0}};
  pt_trace *t;
  pt_trace_opts o = {.device = a.device};
  if (pt_trace_open(a.positional[0], &o, &err, &t) < 0) return fail(&err);
  pt_trace_writer *w;
  if (pt_trace_writer_open(a.output, pt_trace_get_info(t), &err, &w) < 0) {
    pt_trace_close(t);
    return fail(&err);
  }
  pt_event ev;
  uint64_t n = 0;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) {
    if ((rc = pt_trace_writer_put(w, &ev, &err)) < 0) break;
    n++;
  }
  pt_trace_close(t);
  if (rc < 0) {
    pt_trace_writer_abort(w);
    return fail(&err);
  }
  if (pt_trace_writer_commit(w, &err) < 0) return fail(&err);
  /* read back what was written: the stats come from the file as others will see it */
  if (pt_trace_open(a.output, NULL, &err, &t) < 0) return fail(&err);
  pt_trace_stats s;
  rc = pt_trace_stats_compute(t, &s, &err);
  if (rc == 0) {
    if (a.json) pt_trace_stats_print_json(stdout, a.output, pt_trace_get_info(t), &s);
    else
      printf("%s: %" PRIu64 " records (%" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64
             " initial segments) -> %s\n",
             a.positional[0], n, s.allocs, s.frees, s.initial_segments, a.output);
  }
  pt_trace_close(t);
  return rc < 0 ? fail(&err) : 0;
}

static int cmd_trace_gen(int argc, char **argv) {
  trace_args a;
  int rc = parse_trace_args("trace gen", gen_help, argc, argv,
                            GIVEN(OPT_KIND) | GIVEN(OPT_SEED) | GIVEN(OPT_STEPS) | GIVEN('o'), &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.npos) return usage_error("trace gen", "unexpected argument '%s'", a.positional[0]);
  if (!(a.given & GIVEN(OPT_KIND))) return usage_error("trace gen", "%s", "needs --kind");
  if (!(a.given & GIVEN(OPT_SEED))) return usage_error("trace gen", "%s", "needs --seed");
  if (!a.output) return usage_error("trace gen", "%s", "needs -o DST");
  pt_err err = {{0}};
  if (pt_gen_write(&a.gen, a.output, &err) < 0) return fail(&err);
  return 0;
}

static int cmd_trace(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(trace_help, argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : 0;
  }
  if (!strcmp(argv[1], "stats")) return cmd_trace_stats(argc - 1, argv + 1);
  if (!strcmp(argv[1], "import")) return cmd_trace_import(argc - 1, argv + 1);
  if (!strcmp(argv[1], "gen")) return cmd_trace_gen(argc - 1, argv + 1);
  return usage_error("trace", "unknown command '%s'", argv[1]);
}

/* ---- pagetune sim ------------------------------------------------------------ */

static const char sim_help[] =
    "usage: pagetune sim --trace TRACE --policy POLICY [--set NAME=VALUE]...\n"
    "                    [--capacity BYTES] [--device N] [--invent-addresses] [--json]\n"
    "\n"
    "Replay TRACE's allocation requests through the allocator mechanism POLICY\n"
    "chooses, on a modelled device, and report peak reserved and allocated bytes,\n"
    "fragmentation, segments, driver calls by kind, OOMs, and a reserved/allocated\n"
    "timeline; beside them, what the real allocator recorded in the trace.\n"
    "\n"
    "  --trace TRACE       a pagetune trace or a PyTorch memory snapshot\n"
    "  --policy POLICY     a Lua policy file, or the name of a bundled one\n"
    "                      (pytorch_native, pytorch_expandable, cuda_async, direct,\n"
    "                      large_page_threshold, stitch, tunable_caching)\n"
    "  --set NAME=VALUE    override a policy parameter (checked against its range)\n"
    "  --capacity BYTES    cap on reserved bytes, as torch.cuda.set_per_process_memory_fraction\n"
    "                      (suffixes K, M, G, T: powers of 1024); garbage collection acts only under it\n"
    "  --device N          device of a multi-GPU snapshot\n"
    "  --invent-addresses  do not place segments at the addresses the real run recorded\n"
    "  --repeat N          replay N times and report the median replay rate (benchmarks)\n"
    "  --gpu NAME          model that GPU's page tables and costs (h200, a100, or a .gpu file):\n"
    "                      adds page_table and predicted_alloc_us to the output\n"
    "  --tlb               also run the synthetic access stream through its TLBs (needs --gpu;\n"
    "                      time grows with bytes allocated / page size): adds tlb and\n"
    "                      predicted_translation_us\n"
    "  --list-gpus         name the bundled GPU descriptions and exit\n"
    "  --json              one JSON object, with the timeline\n"
    "  -h, --help          this help\n";

static const char replay_help[] =
    "usage: pagetune replay --trace TRACE --policy POLICY [--set NAME=VALUE]...\n"
    "                       [--capacity BYTES] [--device N] [--gpu NAME] [--repeat N] [--json]\n"
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
    "  --trace, --policy, --set, --capacity, --device, --invent-addresses: as for sim\n"
    "  --gpu NAME          the description whose cost model predicts (default h200)\n"
    "  --repeat N          replay N times (default 5) and report medians\n"
    "  --db DB             also store the run (as sweep would) and the measured times,\n"
    "                      in the measurements table (kind replay_driver_us, and\n"
    "                      replay_driver_us:CALL by kind of call; docs/store.md)\n"
    "  --json              one JSON object: sim's keys and gpu_replay\n"
    "  -h, --help          this help\n";

/* Bytes with an optional binary suffix: 123, 4K, 80G. */
static int parse_bytes(const char *s, uint64_t *out) {
  char *end;
  if (!*s || *s == '-') return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  int shift = 0;
  switch (*end) {
  case 0: break;
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  case 't': case 'T': shift = 40; end++; break;
  default: return -1;
  }
  if (*end == 'i') end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || (shift && v > (UINT64_MAX >> shift))) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

/* A bundled policy's path from its name, or the argument itself. */
static const char *policy_path(const char *arg, char *buf, size_t n) {
  if (strchr(arg, '/') || strstr(arg, ".lua")) return arg;
  const char *dirs[] = {getenv("PAGETUNE_POLICY_DIR"), "policies", PT_DATADIR "/policies"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    if (!dirs[i]) continue;
    snprintf(buf, n, "%s/%s.lua", dirs[i], arg);
    FILE *f = fopen(buf, "r");
    if (f) {
      fclose(f);
      return buf;
    }
  }
  return arg;
}


enum { SIM_TRACE = 300, SIM_POLICY, SIM_SET, SIM_CAPACITY, SIM_DEVICE, SIM_JSON, SIM_INVENT, SIM_REPEAT,
       SIM_GPU, SIM_TLB, SIM_LIST_GPUS, SIM_DB };

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct replay_store_args {
  const char *db, *trace;
  const pt_trace_data *t;
  pt_policy *pol;
  const pt_sim_config *cfg;
} replay_store_args;

static int replay_on_gpu(const pt_call_log *log, const pt_gpu *gpu, const pt_sim_result *r, unsigned long repeat,
                         int json, const replay_store_args *store, pt_err *err);

/* sim, and with on_gpu (pagetune replay) its driver calls made again on the GPU. */
static int cmd_sim(int argc, char **argv, int on_gpu) {
  const char *cmd = on_gpu ? "replay" : "sim";
  static const struct option opts[] = {
      {"trace", required_argument, NULL, SIM_TRACE},     {"policy", required_argument, NULL, SIM_POLICY},
      {"set", required_argument, NULL, SIM_SET},         {"capacity", required_argument, NULL, SIM_CAPACITY},
      {"device", required_argument, NULL, SIM_DEVICE},   {"json", no_argument, NULL, SIM_JSON},
      {"invent-addresses", no_argument, NULL, SIM_INVENT}, {"repeat", required_argument, NULL, SIM_REPEAT},
      {"gpu", required_argument, NULL, SIM_GPU},          {"tlb", no_argument, NULL, SIM_TLB},
      {"list-gpus", no_argument, NULL, SIM_LIST_GPUS},    {"db", required_argument, NULL, SIM_DB},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *trace = NULL, *policy = NULL, *gpu_name = NULL, *db = NULL, *sets[PT_MAX_PARAMS];
  int nsets = 0, json = 0, invent = 0, tlb = 0, c;
  unsigned long device = (unsigned long)-1, repeat = on_gpu ? 5 : 1;
  uint64_t capacity = 0;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(on_gpu ? replay_help : sim_help, stdout); return 0;
    case '?': return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    case ':': return usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    case SIM_TRACE: trace = optarg; break;
    case SIM_POLICY: policy = optarg; break;
    case SIM_SET:
      if (nsets == PT_MAX_PARAMS) return usage_error(cmd, "too many --set (at most %s)", "32");
      sets[nsets++] = optarg;
      break;
    case SIM_CAPACITY:
      if (parse_bytes(optarg, &capacity) < 0 || !capacity) return usage_error(cmd, "bad --capacity '%s'", optarg);
      break;
    case SIM_DEVICE:
      if (parse_ulong(optarg, 4096, &device) < 0) return usage_error(cmd, "bad --device '%s'", optarg);
      break;
    case SIM_JSON: json = 1; break;
    case SIM_INVENT: invent = 1; break;
    case SIM_GPU: gpu_name = optarg; break;
    case SIM_TLB: tlb = 1; break;
    case SIM_DB:
      if (!on_gpu) return usage_error(cmd, "%s", "--db is replay's (sim stores nothing; see sweep)");
      db = optarg;
      break;
    case SIM_LIST_GPUS: {
      char names[1024];
      pt_gpu_list(names, sizeof names);
      printf("%s\n", names);
      return 0;
    }
    case SIM_REPEAT:
      if (parse_ulong(optarg, 100000, &repeat) < 0 || !repeat) return usage_error(cmd, "bad --repeat '%s'", optarg);
      break;
    }
  }
  if (optind < argc) return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (!trace) return usage_error(cmd, "%s", "needs --trace TRACE");
  if (!policy) return usage_error(cmd, "%s", "needs --policy POLICY");
  if (on_gpu && tlb) return usage_error(cmd, "%s", "--tlb is sim's: a replay makes driver calls only");
  if (tlb && !gpu_name) return usage_error(cmd, "%s", "--tlb needs --gpu NAME");
  if (on_gpu && !gpu_name) gpu_name = "h200";

  pt_err err = {{0}};
  char pbuf[4096];
  pt_policy *pol;
  if (pt_policy_load(policy_path(policy, pbuf, sizeof pbuf), NULL, &err, &pol) < 0) return fail(&err);
  for (int i = 0; i < nsets; i++)
    if (pt_policy_set(pol, sets[i], &err) < 0) { /* a bad --set is bad usage: exit 2 */
      pt_policy_free(pol);
      fail(&err);
      return EXIT_USAGE;
    }
  pt_sim_config cfg = {.capacity = capacity, .invent_addresses = invent, .tlb = tlb};
  static pt_gpu gpu;
  if (gpu_name) {
    if (pt_gpu_load(gpu_name, &err, &gpu) < 0) {
      pt_policy_free(pol);
      return fail(&err);
    }
    cfg.gpu = &gpu;
  }
  cfg.mech = pt_mech_find(pt_policy_mechanism(pol));
  pt_policy_params(pol, &cfg.params);
  pt_policy_get_hooks(pol, &cfg.hooks);
  pt_trace_data t;
  pt_trace_opts topts = {.device = (int)device};
  if (pt_trace_load(trace, &topts, &err, &t) < 0) {
    pt_policy_free(pol);
    return fail(&err);
  }
  pt_sim_result r;
  pt_call_log log = {0};
  if (on_gpu) cfg.log = &log;
  unsigned long runs = on_gpu ? 1 : repeat; /* replay: --repeat counts GPU replays */
  double *secs = calloc(runs, sizeof *secs);
  int rc = secs ? 0 : pt_err_set(&err, PT_ENOMEM, "out of memory");
  for (unsigned long k = 0; rc == 0 && k < runs; k++) {
    if (k) pt_sim_result_free(&r);
    if ((rc = pt_sim_run(&t, &cfg, &err, &r)) == 0) secs[k] = r.seconds;
  }
  if (rc < 0) {
    free(secs);
    pt_call_log_free(&log);
    pt_trace_data_free(&t);
    pt_policy_free(pol);
    return fail(&err);
  }
  qsort(secs, runs, sizeof *secs, cmp_double);
  double median = secs[runs / 2], fastest = secs[0], slowest = secs[runs - 1];
  free(secs);
  if (on_gpu) {
    replay_store_args sa = {db, trace, &t, pol, &cfg};
    rc = replay_on_gpu(&log, cfg.gpu, &r, repeat, json, db ? &sa : NULL, &err);
    pt_call_log_free(&log);
    pt_sim_result_free(&r);
    pt_trace_data_free(&t);
    pt_policy_free(pol);
    return rc < 0 ? fail(&err) : 0;
  }
  if (json) {
    fputs("{\"trace\":", stdout);
    pt_json_str(stdout, trace);
    fputs(",\"policy\":", stdout);
    pt_json_str(stdout, pt_policy_name(pol));
    fputs(",\"mechanism\":", stdout);
    pt_json_str(stdout, cfg.mech->name);
    char pj[PT_PARAMS_JSON_MAX];
    pt_params_json(&cfg.params, 0, pj, sizeof pj);
    printf(",\"params\":%s,\"capacity\":%" PRIu64 ",\"repeat\":%lu,\"replay_seconds_median\":%.6g,"
           "\"replay_seconds_min\":%.6g,\"replay_seconds_max\":%.6g,",
           pj, capacity, repeat, median, fastest, slowest);
    pt_sim_print_json_members(stdout, &r, 1);
    fputs("}\n", stdout);
  } else {
    printf("trace:     %s (%zu records)\npolicy:    %s (mechanism %s)\n", trace, t.n, pt_policy_name(pol),
           cfg.mech->name);
    printf("params:   ");
    for (int i = 0; i < cfg.params.n; i++) printf(" %s=%.10g", cfg.params.v[i].name, cfg.params.v[i].value);
    if (capacity) printf("\ncapacity:  %" PRIu64 " bytes\n\n", capacity);
    else printf("\ncapacity:  none\n\n");
    pt_sim_print_text(stdout, &r);
    if (r.observed_segment_allocs || r.observed_peak_reserved_bytes)
      printf("\nmodel vs recorded: segments %" PRIu64 " / %" PRIu64 ", peak reserved %" PRIu64 " / %" PRIu64 " (%s)\n",
             r.segments_allocated, r.observed_segment_allocs, r.peak_reserved_bytes, r.observed_peak_reserved_bytes,
             r.segments_allocated == r.observed_segment_allocs && r.peak_reserved_bytes == r.observed_peak_reserved_bytes
                 ? "match"
                 : "differ");
    printf("replayed %zu records in %.4f s (%.1f M records/s)", t.n, median, median > 0 ? t.n / median / 1e6 : 0.0);
    if (repeat > 1) printf(", median of %lu (min %.4f s, max %.4f s)", repeat, fastest, slowest);
    putchar('\n');
  }
  pt_sim_result_free(&r);
  pt_trace_data_free(&t);
  pt_policy_free(pol);
  return 0;
}

static const char *const drv_names[] = {
#define PT_X(n) #n,
    PT_DRIVER_CALLS(PT_X)
#undef PT_X
};

static double median_of(double *v, unsigned long n) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

/*
 * pagetune replay: one untimed warm-up, then `repeat` timed replays of the
 * logged calls on device 0; medians by kind of call, beside the cost model's
 * prediction for the same calls.
 */
static int replay_store(const replay_store_args *a, const pt_sim_result *r, const char *device, unsigned long repeat,
                        const double measured[PT_DRV_NCALLS + 1], const uint64_t calls[PT_DRV_NCALLS], pt_err *err,
                        int64_t *run_id);

static int replay_on_gpu(const pt_call_log *log, const pt_gpu *gpu, const pt_sim_result *r, unsigned long repeat,
                         int json, const replay_store_args *store, pt_err *err) {
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
  if (!json) fprintf(stderr, "replaying %zu driver calls on %s: warm-up", log->n, gi.name);
  rc = pt_replay_log(d, log, &res, err);
  for (unsigned long k = 0; rc == 0 && k < repeat; k++) {
    if (!json) fprintf(stderr, ", %lu", k + 1);
    if ((rc = pt_replay_log(d, log, &res, err)) < 0) break;
    for (int c = 0; c < PT_DRV_NCALLS; c++) v[c * repeat + k] = res.us[c];
    v[PT_DRV_NCALLS * repeat + k] = res.total_us;
  }
  if (!json) fputc('\n', stderr);
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
  if (store && (rc = replay_store(store, r, gi.name, repeat, measured, res.calls, err, &run_id)) < 0) return rc;
  if (json) {
    fputs("{\"gpu_replay\":{\"device\":", stdout);
    pt_json_str(stdout, gi.name);
    fputs(",\"cost_model\":", stdout);
    pt_json_str(stdout, gpu->name);
    printf(",\"repeat\":%lu,\"driver_calls\":{", repeat);
    for (int c = 0; c < PT_DRV_NCALLS; c++) printf("%s\"%s\":%" PRIu64, c ? "," : "", drv_names[c], res.calls[c]);
    fputs("},\"measured_us\":{", stdout);
    for (int c = 0; c < PT_DRV_NCALLS; c++) printf("%s\"%s\":%.3f", c ? "," : "", drv_names[c], measured[c]);
    fputs("},\"predicted_us\":{", stdout);
    for (int c = 0; c < PT_DRV_NCALLS; c++) printf("%s\"%s\":%.3f", c ? "," : "", drv_names[c], predicted[c]);
    printf("},\"measured_total_us\":%.3f,\"predicted_total_us\":%.3f,\"run_id\":%" PRId64 "},",
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
      printf("  %-16s %8" PRIu64 " %14.1f %14.1f\n", drv_names[c], res.calls[c], measured[c], predicted[c]);
  printf("  %-16s %8s %14.1f %14.1f", "total", "", measured[PT_DRV_NCALLS], predicted[PT_DRV_NCALLS]);
  if (predicted[PT_DRV_NCALLS] > 0) printf("   (measured / predicted %.2f)", measured[PT_DRV_NCALLS] / predicted[PT_DRV_NCALLS]);
  printf("\n\nmodel: peak reserved %" PRIu64 " bytes, %" PRIu64 " segments; %" PRIu64 " requests, %" PRIu64 " frees\n",
         r->peak_reserved_bytes, r->segments_allocated, r->allocs, r->frees);
  if (store) printf("stored: run %" PRId64 " and its measurements in %s\n", run_id, store->db);
  return 0;
}

/* ---- the workbench: sweep, tune, best, report, export ------------------------------ */

/* Part of every stored run's key: a sweep resumed by a newer model recomputes
   instead of reusing old rows.  model-2: driver costs through calibration
   points by size class, and the H200's measured points (cost.h). */
#define ENGINE_VERSION "pagetune-" PACKAGE_VERSION "/model-2"
#define DEFAULT_DB "pagetune.db"

/* A trace loaded for the workbench, and its row in the store. */
typedef struct wb_trace {
  pt_trace_data t;
  char hash[65];
  int64_t id;
} wb_trace;

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* A loaded trace's row in the store (found or added): its statistics and content hash go with it. */
static int wb_put_trace(pt_store *db, const char *path, const pt_trace_data *data, pt_err *err, char hash[65],
                        int64_t *id) {
  pt_trace *t;
  pt_trace_stats st;
  int rc = pt_trace_open(path, NULL, err, &t);
  if (rc < 0) return rc;
  rc = pt_trace_stats_compute(t, &st, err);
  pt_trace_close(t);
  if (rc < 0) return rc;
  pt_trace_content_hash(data, hash);
  return pt_store_put_trace(db, base_name(path), path, hash, &st, err, id);
}

static int wb_load_trace(pt_store *db, const char *path, pt_err *err, wb_trace *out) {
  memset(out, 0, sizeof *out);
  int rc = pt_trace_load(path, NULL, err, &out->t);
  if (rc < 0) return rc;
  if ((rc = wb_put_trace(db, path, &out->t, err, out->hash, &out->id)) < 0) pt_trace_data_free(&out->t);
  return rc;
}

static int wb_load_policy(pt_store *db, const char *arg, pt_err *err, pt_policy **pol, int64_t *id) {
  char buf[4096];
  int rc = pt_policy_load(policy_path(arg, buf, sizeof buf), NULL, err, pol);
  if (rc < 0) return rc;
  size_t len;
  const char *text = pt_policy_source(*pol, &len);
  if ((rc = pt_store_put_policy(db, pt_policy_name(*pol), pt_policy_mechanism(*pol), text, len, err, id)) < 0) {
    pt_policy_free(*pol);
    *pol = NULL;
  }
  return rc;
}

typedef struct wb_env {
  pt_store *db;
  const pt_gpu *gpu;
  uint64_t capacity;
} wb_env;

/*
 * Run the policy's current parameters on the trace unless that run is
 * stored already; *stored says which.  On success *res holds the result
 * (free with pt_sim_result_free) when it was run, and is zeroed otherwise.
 */
static int wb_run(const wb_env *env, wb_trace *tr, pt_policy *pol, int64_t policy_id, pt_err *err,
                  int64_t *run_id, int *ran, pt_sim_result *res) {
  pt_sim_config cfg = {.capacity = env->capacity, .gpu = env->gpu};
  cfg.mech = pt_mech_find(pt_policy_mechanism(pol));
  pt_policy_params(pol, &cfg.params);
  pt_policy_get_hooks(pol, &cfg.hooks);
  char pj[PT_PARAMS_JSON_MAX];
  pt_params_json(&cfg.params, 1, pj, sizeof pj);
  pt_store_run_key key = {tr->id, policy_id, pj, env->capacity, env->gpu ? env->gpu->name : "", ENGINE_VERSION};
  memset(res, 0, sizeof *res);
  *ran = 0;
  int rc = pt_store_find_run(env->db, &key, err, run_id);
  if (rc < 0 || *run_id) return rc;
  if ((rc = pt_sim_run(&tr->t, &cfg, err, res)) < 0) return rc;
  *ran = 1;
  if ((rc = pt_store_put_run(env->db, &key, PT_GIT_REVISION, res, err, run_id)) < 0) pt_sim_result_free(res);
  return rc;
}

/*
 * pagetune replay --db: the run under the workbench's key (so sweep, best and
 * report see it), and what the GPU measured, as measurements of that run.
 */
static int replay_store(const replay_store_args *a, const pt_sim_result *r, const char *device, unsigned long repeat,
                        const double measured[PT_DRV_NCALLS + 1], const uint64_t calls[PT_DRV_NCALLS], pt_err *err,
                        int64_t *run_id) {
  pt_store *db;
  int rc = pt_store_open(a->db, 0, err, &db);
  if (rc < 0) return rc;
  char hash[65];
  int64_t trace_id, policy_id;
  size_t len;
  const char *text = pt_policy_source(a->pol, &len);
  char pj[PT_PARAMS_JSON_MAX], notes[128];
  pt_params_json(&a->cfg->params, 1, pj, sizeof pj);
  if ((rc = wb_put_trace(db, a->trace, a->t, err, hash, &trace_id)) < 0 ||
      (rc = pt_store_put_policy(db, pt_policy_name(a->pol), pt_policy_mechanism(a->pol), text, len, err,
                                &policy_id)) < 0)
    goto out;
  pt_store_run_key key = {trace_id, policy_id, pj, a->cfg->capacity, a->cfg->gpu->name, ENGINE_VERSION};
  if ((rc = pt_store_find_run(db, &key, err, run_id)) < 0) goto out;
  if (!*run_id && (rc = pt_store_put_run(db, &key, PT_GIT_REVISION, r, err, run_id)) < 0) goto out;
  snprintf(notes, sizeof notes, "pagetune replay, median of %lu replays", repeat);
  int64_t id;
  if ((rc = pt_store_put_measurement(db, *run_id, "replay_driver_us", measured[PT_DRV_NCALLS], "us", device, notes,
                                     err, &id)) < 0)
    goto out;
  for (int c = 0; c < PT_DRV_NCALLS; c++) {
    if (!calls[c]) continue;
    char kind[64];
    snprintf(kind, sizeof kind, "replay_driver_us:%s", drv_names[c]);
    if ((rc = pt_store_put_measurement(db, *run_id, kind, measured[c], "us", device, notes, err, &id)) < 0) goto out;
  }
out:
  pt_store_close(db);
  return rc;
}

/* ---- objectives ---- */

typedef struct objective {
  int kind; /* 0 time, 1 memory, 2 weighted */
  double w, t_ref, m_ref;
} objective;

static int parse_objective(const char *s, objective *o) {
  *o = (objective){0};
  if (!strcmp(s, "time")) return 0;
  if (!strcmp(s, "memory")) {
    o->kind = 1;
    return 0;
  }
  if (!strncmp(s, "weighted:", 9)) {
    char *end;
    o->kind = 2;
    o->w = strtod(s + 9, &end);
    if (end != s + 9 && !*end && o->w >= 0 && o->w <= 1) return 0;
  }
  return -1;
}

/* Lower is better; a run that hit OOM, or lacks the figure, is out (HUGE_VAL). */
static double objective_value(const objective *o, const pt_sim_result *r) {
  if (r->ooms) return HUGE_VAL;
  double t = r->has_gpu ? r->predicted_alloc_us : NAN, m = (double)r->peak_reserved_bytes;
  double v = o->kind == 0 ? t : o->kind == 1 ? m : o->w * t / o->t_ref + (1 - o->w) * m / o->m_ref;
  return isfinite(v) ? v : HUGE_VAL;
}

/* ---- progress ---- */

typedef struct progress {
  size_t done, total;
  double t0;
  int tty;
} progress;

static void progress_step(progress *p, const char *what, int ran) {
  p->done++;
  double el = pt_clock_s() - p->t0, rate = el > 0 ? (double)p->done / el : 0;
  double eta = rate > 0 ? (double)(p->total - p->done) / rate : 0;
  if (p->tty)
    fprintf(stderr, "\r[%zu/%zu] %5.1f runs/s  ETA %4.0f s  %-50.50s", p->done, p->total, rate, eta, what);
  else
    fprintf(stderr, "run %zu/%zu: %s: %s\n", p->done, p->total, what, ran ? "stored" : "already stored, skipped");
  if (p->tty && p->done == p->total) fputc('\n', stderr);
}

/* ---- pagetune sweep ---- */

static const char sweep_help[] =
    "usage: pagetune sweep [--db DB] --trace T... --policy P... [--grid NAME=A,B,C]...\n"
    "                      [--capacity BYTES] [--gpu NAME] [--json]\n"
    "\n"
    "Simulate every trace under every policy, for every combination of the --grid\n"
    "values (applied to the policies that declare that parameter), and store each\n"
    "result in DB (default pagetune.db).  A run already stored (same trace\n"
    "content, policy text, parameters, capacity, GPU and engine version) is\n"
    "skipped, so an interrupted sweep resumes where it stopped.  Progress goes to\n"
    "stderr: a bar on a terminal, one line a run otherwise.\n"
    "\n"
    "  --db DB           the SQLite database (created if missing)\n"
    "  --trace T         a trace or PyTorch snapshot (repeatable)\n"
    "  --policy P        a policy file or bundled name (repeatable)\n"
    "  --grid NAME=LIST  values for a parameter, comma-separated (repeatable)\n"
    "  --capacity BYTES  cap on reserved bytes (set_per_process_memory_fraction)\n"
    "  --gpu NAME        GPU description for predicted times (default h200; 'none' for none)\n"
    "  --json            a JSON summary on stdout\n";

#define MAX_LIST 64

typedef struct grid_axis {
  char name[PT_PARAM_NAME_MAX];
  char values[MAX_LIST][64];
  int n;
} grid_axis;

static int parse_grid(const char *arg, grid_axis *g) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof g->name) return -1;
  snprintf(g->name, sizeof g->name, "%.*s", (int)(eq - arg), arg);
  g->n = 0;
  for (const char *p = eq + 1; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (!len || len >= sizeof g->values[0] || g->n == MAX_LIST) return -1;
    snprintf(g->values[g->n++], sizeof g->values[0], "%.*s", (int)len, p);
    p += len + (c ? 1 : 0);
  }
  return g->n ? 0 : -1;
}

static int policy_declares(const pt_policy *pol, const char *name) {
  for (int i = 0; i < pt_policy_nparams(pol); i++)
    if (!strcmp(pt_policy_param_at(pol, i)->name, name)) return 1;
  return 0;
}

/* Load the GPU description named by --gpu ("none" = none); h200 by default. */
static int wb_gpu(const char *name, pt_gpu *g, const pt_gpu **out, pt_err *err) {
  *out = NULL;
  if (name && !strcmp(name, "none")) return 0;
  int rc = pt_gpu_load(name ? name : "h200", err, g);
  if (rc == 0) *out = g;
  return rc;
}

enum { WB_DB = 400, WB_TRACE, WB_POLICY, WB_GRID, WB_CAPACITY, WB_GPU, WB_JSON, WB_OBJECTIVE, WB_BUDGET,
       WB_SEED, WB_HTML, WB_RUN, WB_FORMAT, WB_MERGE };

static const struct option wb_opts[] = {
    {"db", required_argument, NULL, WB_DB},           {"trace", required_argument, NULL, WB_TRACE},
    {"policy", required_argument, NULL, WB_POLICY},   {"grid", required_argument, NULL, WB_GRID},
    {"capacity", required_argument, NULL, WB_CAPACITY}, {"gpu", required_argument, NULL, WB_GPU},
    {"json", no_argument, NULL, WB_JSON},             {"objective", required_argument, NULL, WB_OBJECTIVE},
    {"budget", required_argument, NULL, WB_BUDGET},   {"seed", required_argument, NULL, WB_SEED},
    {"html", required_argument, NULL, WB_HTML},       {"run", required_argument, NULL, WB_RUN},
    {"format", required_argument, NULL, WB_FORMAT},   {"merge", required_argument, NULL, WB_MERGE},
    {"help", no_argument, NULL, 'h'},                 {NULL, 0, NULL, 0}};

/* Options of the workbench commands; `allowed` lists what a command takes. */
typedef struct wb_args {
  const char *db, *gpu, *objective, *html, *format, *merge;
  const char *traces[MAX_LIST], *policies[MAX_LIST];
  int ntraces, npolicies, json, ngrid;
  grid_axis grid[8];
  uint64_t capacity;
  unsigned long budget, seed, run;
} wb_args;

#define WB_BIT(o) (1ul << ((o) - WB_DB))

static int parse_wb_args(const char *cmd, const char *help, int argc, char **argv, unsigned long allowed, wb_args *a) {
  *a = (wb_args){.db = DEFAULT_DB, .objective = "time", .budget = 60, .seed = 1};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", wb_opts, NULL)) != -1) {
    if (c == 'h') {
      fputs(help, stdout);
      return -1;
    }
    if (c == '?') return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    if (c == ':') return usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    if (!(allowed & WB_BIT(c))) return usage_error(cmd, "option '%s' does not apply here", argv[optind - 1]);
    objective o;
    switch (c) {
    case WB_DB: a->db = optarg; break;
    case WB_TRACE:
      if (a->ntraces == MAX_LIST) return usage_error(cmd, "too many --trace (at most %s)", "64");
      a->traces[a->ntraces++] = optarg;
      break;
    case WB_POLICY:
      if (a->npolicies == MAX_LIST) return usage_error(cmd, "too many --policy (at most %s)", "64");
      a->policies[a->npolicies++] = optarg;
      break;
    case WB_GRID:
      if (a->ngrid == 8 || parse_grid(optarg, &a->grid[a->ngrid]) < 0)
        return usage_error(cmd, "bad --grid '%s' (NAME=A,B,C; at most 8 grids of 64 values)", optarg);
      a->ngrid++;
      break;
    case WB_CAPACITY:
      if (parse_bytes(optarg, &a->capacity) < 0 || !a->capacity) return usage_error(cmd, "bad --capacity '%s'", optarg);
      break;
    case WB_GPU: a->gpu = optarg; break;
    case WB_JSON: a->json = 1; break;
    case WB_OBJECTIVE:
      if (parse_objective(optarg, &o) < 0)
        return usage_error(cmd, "bad --objective '%s' (time, memory or weighted:W with W in [0,1])", optarg);
      a->objective = optarg;
      break;
    case WB_BUDGET:
      if (parse_ulong(optarg, 100000, &a->budget) < 0 || !a->budget) return usage_error(cmd, "bad --budget '%s'", optarg);
      break;
    case WB_SEED:
      if (parse_ulong(optarg, ULONG_MAX, &a->seed) < 0) return usage_error(cmd, "bad --seed '%s'", optarg);
      break;
    case WB_HTML: a->html = optarg; break;
    case WB_RUN:
      if (parse_ulong(optarg, LONG_MAX, &a->run) < 0 || !a->run) return usage_error(cmd, "bad --run '%s'", optarg);
      break;
    case WB_FORMAT:
      if (strcmp(optarg, "env") && strcmp(optarg, "dockerfile") && strcmp(optarg, "json"))
        return usage_error(cmd, "bad --format '%s' (env, dockerfile or json)", optarg);
      a->format = optarg;
      break;
    case WB_MERGE: a->merge = optarg; break;
    }
  }
  if (optind < argc) return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* Apply grid combination k (mixed radix over the axes the policy declares); -1 when k is past the end. */
static int apply_grid(pt_policy *pol, const wb_args *a, size_t k, pt_err *err) {
  for (int g = 0; g < a->ngrid; g++) {
    if (!policy_declares(pol, a->grid[g].name)) continue;
    char as[PT_PARAM_NAME_MAX + 80];
    snprintf(as, sizeof as, "%s=%s", a->grid[g].name, a->grid[g].values[k % (size_t)a->grid[g].n]);
    k /= (size_t)a->grid[g].n;
    int rc = pt_policy_set(pol, as, err);
    if (rc < 0) return rc;
  }
  return 0;
}

static size_t grid_size(const pt_policy *pol, const wb_args *a) {
  size_t n = 1;
  for (int g = 0; g < a->ngrid; g++)
    if (policy_declares(pol, a->grid[g].name)) n *= (size_t)a->grid[g].n;
  return n;
}

static int cmd_sweep(int argc, char **argv) {
  wb_args a;
  int rc = parse_wb_args("sweep", sweep_help, argc, argv,
                         WB_BIT(WB_DB) | WB_BIT(WB_TRACE) | WB_BIT(WB_POLICY) | WB_BIT(WB_GRID) | WB_BIT(WB_CAPACITY) |
                             WB_BIT(WB_GPU) | WB_BIT(WB_JSON),
                         &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (!a.ntraces || !a.npolicies) return usage_error("sweep", "%s", "needs at least one --trace and one --policy");
  pt_err err = {{0}};
  static pt_gpu gpu;
  wb_env env = {.capacity = a.capacity};
  if (wb_gpu(a.gpu, &gpu, &env.gpu, &err) < 0) return fail(&err);
  if (pt_store_open(a.db, 0, &err, &env.db) < 0) return fail(&err);
  pt_policy *pols[MAX_LIST] = {0};
  int64_t pids[MAX_LIST];
  wb_trace *trs = calloc((size_t)a.ntraces, sizeof *trs);
  int ntr = 0, npol = 0;
  size_t stored = 0, skipped = 0;
  rc = trs ? 0 : pt_err_set(&err, PT_ENOMEM, "out of memory");
  for (; rc == 0 && npol < a.npolicies; npol++) rc = wb_load_policy(env.db, a.policies[npol], &err, &pols[npol], &pids[npol]);
  if (rc < 0) npol--;
  /* unknown grid names are a usage error: no policy declares them */
  for (int g = 0; rc == 0 && g < a.ngrid; g++) {
    int any = 0;
    for (int p = 0; p < npol; p++) any |= policy_declares(pols[p], a.grid[g].name);
    if (!any) rc = pt_err_set(&err, PT_EUSAGE, "--grid %s: no policy given declares that parameter", a.grid[g].name);
  }
  for (; rc == 0 && ntr < a.ntraces; ntr++) rc = wb_load_trace(env.db, a.traces[ntr], &err, &trs[ntr]);
  if (rc < 0 && ntr < a.ntraces) ntr--;
  progress pr = {.t0 = pt_clock_s(), .tty = isatty(2)};
  for (int p = 0; rc == 0 && p < npol; p++) pr.total += grid_size(pols[p], &a) * (size_t)ntr;
  for (int ti = 0; rc == 0 && ti < ntr; ti++)
    for (int p = 0; rc == 0 && p < npol; p++) {
      size_t n = grid_size(pols[p], &a);
      for (size_t k = 0; rc == 0 && k < n; k++) {
        if ((rc = apply_grid(pols[p], &a, k, &err)) < 0) break;
        int64_t id;
        int ran;
        pt_sim_result res;
        rc = wb_run(&env, &trs[ti], pols[p], pids[p], &err, &id, &ran, &res);
        if (rc < 0) break;
        pt_sim_result_free(&res);
        ran ? stored++ : skipped++;
        char what[200];
        pt_params cur;
        pt_policy_params(pols[p], &cur);
        char pj[PT_PARAMS_JSON_MAX];
        pt_params_json(&cur, 1, pj, sizeof pj);
        snprintf(what, sizeof what, "%.40s %.40s %.110s", base_name(a.traces[ti]), pt_policy_name(pols[p]), pj);
        progress_step(&pr, what, ran);
      }
    }
  for (int p = 0; p < npol; p++) pt_policy_free(pols[p]);
  for (int t = 0; t < ntr; t++) pt_trace_data_free(&trs[t].t);
  free(trs);
  pt_store_close(env.db);
  if (rc < 0) {
    if (pr.tty && pr.done) fputc('\n', stderr);
    fail(&err);
    return rc == PT_EUSAGE ? EXIT_USAGE : EXIT_BAD;
  }
  if (a.json) {
    fputs("{\"db\":", stdout);
    pt_json_str(stdout, a.db);
    printf(",\"runs\":%zu,\"stored\":%zu,\"skipped\":%zu}\n", pr.total, stored, skipped);
  }
  else printf("%zu runs: %zu simulated and stored, %zu already in %s\n", pr.total, stored, skipped, a.db);
  return 0;
}

/* ---- pagetune tune ---- */

static const char tune_help[] =
    "usage: pagetune tune [--db DB] --trace T --policy P [--objective time|memory|weighted:W]\n"
    "                     [--budget N] [--capacity BYTES] [--gpu NAME] [--seed S] [--json]\n"
    "\n"
    "Search the parameter ranges POLICY declares for the best value of the\n"
    "objective on TRACE: every combination of parameters with choices (a grid),\n"
    "and GSL's Nelder-Mead simplex over continuous ones (log scale where declared),\n"
    "from several starts.  Every point is stored in DB; a run that hits OOM is\n"
    "out.  Prints the best point and the Pareto front of predicted allocator time\n"
    "against peak reserved bytes over all stored runs of this trace and policy.\n"
    "\n"
    "  --objective O  time (predicted allocator time, default), memory (peak reserved\n"
    "                 bytes), weighted:W (W*time/time0 + (1-W)*memory/memory0, the 0s\n"
    "                 being the policy's defaults)\n"
    "  --budget N     at most N simulations (default 60)\n"
    "  --seed S       seed of the random starts (default 1)\n"
    "  --gpu NAME     GPU description for predicted times (default h200)\n"
    "  (--db, --capacity, --json as for sweep)\n";

typedef struct tune_ctx {
  const wb_env *env;
  wb_trace *tr;
  pt_policy *pol;
  int64_t policy_id;
  objective obj;
  int stored;
} tune_ctx;

/* Simulate the policy at its current values (storing the run if new). */
static int tune_point(tune_ctx *c, pt_err *err, pt_sim_result *res) {
  pt_sim_config cfg = {.capacity = c->env->capacity, .gpu = c->env->gpu};
  cfg.mech = pt_mech_find(pt_policy_mechanism(c->pol));
  pt_policy_params(c->pol, &cfg.params);
  pt_policy_get_hooks(c->pol, &cfg.hooks);
  char pj[PT_PARAMS_JSON_MAX];
  pt_params_json(&cfg.params, 1, pj, sizeof pj);
  pt_store_run_key key = {c->tr->id, c->policy_id, pj, c->env->capacity, c->env->gpu ? c->env->gpu->name : "",
                          ENGINE_VERSION};
  int rc = pt_sim_run(&c->tr->t, &cfg, err, res);
  if (rc < 0) return rc;
  int64_t id, found;
  if ((rc = pt_store_find_run(c->env->db, &key, err, &found)) == 0 && !found &&
      (rc = pt_store_put_run(c->env->db, &key, PT_GIT_REVISION, res, err, &id)) == 0)
    c->stored++;
  if (rc < 0) pt_sim_result_free(res);
  return rc;
}

static int tune_eval(void *ctx, const pt_params *point, double *value, pt_err *err) {
  tune_ctx *c = ctx;
  for (int i = 0; i < point->n; i++) {
    char as[PT_PARAM_NAME_MAX + 40];
    snprintf(as, sizeof as, "%s=%.17g", point->v[i].name, point->v[i].value);
    int rc = pt_policy_set(c->pol, as, err);
    if (rc < 0) return rc;
  }
  pt_sim_result res;
  int rc = tune_point(c, err, &res);
  if (rc < 0) return rc;
  *value = objective_value(&c->obj, &res);
  pt_sim_result_free(&res);
  return 0;
}

static pt_report_run report_run_of(const pt_store_run *r) {
  uint64_t calls = 0;
  for (int i = 0; i < PT_DRV_NCALLS; i++) calls += r->r.driver_calls[i];
  return (pt_report_run){r->id, r->trace, r->policy, r->mechanism, r->params_json, r->capacity,
                         r->r.peak_reserved_bytes, r->r.peak_allocated_bytes, r->r.segments_allocated, r->r.ooms, calls,
                         r->r.fragmentation, r->r.has_gpu ? r->r.predicted_alloc_us : NAN, NULL, 0};
}

/* Print the stored runs of a trace (and policy) on the Pareto front. */
static int print_front(pt_store *db, const char *trace, const char *policy, int json, pt_err *err) {
  pt_store_run *rows;
  size_t n;
  int rc = pt_store_runs(db, trace, policy, err, &rows, &n);
  if (rc < 0) return rc;
  pt_report_run *rr = calloc(n ? n : 1, sizeof *rr);
  int *front = calloc(n ? n : 1, sizeof *front);
  if (!rr || !front) {
    free(rr);
    free(front);
    free(rows);
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) rr[i] = report_run_of(&rows[i]);
  pt_report_pareto(rr, n, front);
  if (json) fputs("\"pareto\":[", stdout);
  else printf("Pareto front (predicted allocator time vs peak reserved), %s:\n", trace);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (!front[i]) continue;
    if (json) {
      printf("%s{\"run\":%" PRId64 ",\"policy\":", first ? "" : ",", rows[i].id);
      pt_json_str(stdout, rows[i].policy);
      printf(",\"params\":%s,\"predicted_alloc_us\":%.6g,\"peak_reserved_bytes\":%" PRIu64 "}", rows[i].params_json,
             rows[i].r.predicted_alloc_us, rows[i].r.peak_reserved_bytes);
    } else {
      printf("  run %-6" PRId64 " %-20s %10.1f us  %12.1f MiB  %s\n", rows[i].id, rows[i].policy,
             rows[i].r.predicted_alloc_us, rows[i].r.peak_reserved_bytes / 1048576.0, rows[i].params_json);
    }
    first = 0;
  }
  if (json) fputs("]", stdout);
  free(rr);
  free(front);
  free(rows);
  return 0;
}

static int cmd_tune(int argc, char **argv) {
  wb_args a;
  int rc = parse_wb_args("tune", tune_help, argc, argv,
                         WB_BIT(WB_DB) | WB_BIT(WB_TRACE) | WB_BIT(WB_POLICY) | WB_BIT(WB_OBJECTIVE) |
                             WB_BIT(WB_BUDGET) | WB_BIT(WB_CAPACITY) | WB_BIT(WB_GPU) | WB_BIT(WB_SEED) | WB_BIT(WB_JSON),
                         &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.ntraces != 1 || a.npolicies != 1) return usage_error("tune", "%s", "needs exactly one --trace and one --policy");
  objective obj;
  parse_objective(a.objective, &obj);
  pt_err err = {{0}};
  static pt_gpu gpu;
  wb_env env = {.capacity = a.capacity};
  if (wb_gpu(a.gpu, &gpu, &env.gpu, &err) < 0) return fail(&err);
  if (!env.gpu && obj.kind != 1) return usage_error("tune", "%s", "a time objective needs a GPU description (--gpu)");
  if (pt_store_open(a.db, 0, &err, &env.db) < 0) return fail(&err);
  tune_ctx c = {.env = &env, .obj = obj};
  wb_trace tr;
  pt_tune_param tp[PT_MAX_PARAMS];
  int ntp = 0;
  rc = wb_load_policy(env.db, a.policies[0], &err, &c.pol, &c.policy_id);
  if (rc == 0 && (rc = wb_load_trace(env.db, a.traces[0], &err, &tr)) < 0) {
    pt_policy_free(c.pol);
    c.pol = NULL;
  }
  if (rc < 0) {
    pt_store_close(env.db);
    return fail(&err);
  }
  c.tr = &tr;
  for (int i = 0; i < pt_policy_nparams(c.pol); i++) {
    const pt_policy_param *p = pt_policy_param_at(c.pol, i);
    if (!p->has_range && p->nchoices <= 0) continue;
    tp[ntp++] = (pt_tune_param){p->name, p->dflt, p->min, p->max, p->log_scale, p->integer, p->choices, p->nchoices};
  }
  pt_sim_result res;
  if (!ntp) rc = pt_err_set(&err, PT_EUSAGE, "%s declares no range or choices to tune", pt_policy_path(c.pol));
  else rc = tune_point(&c, &err, &res); /* the defaults: the weighted objective's references */
  pt_tune_result best;
  if (rc == 0) {
    c.obj.t_ref = res.has_gpu && res.predicted_alloc_us > 0 ? res.predicted_alloc_us : 1;
    c.obj.m_ref = res.peak_reserved_bytes ? (double)res.peak_reserved_bytes : 1;
    pt_sim_result_free(&res);
    pt_tune_opts o = {.budget = (int)a.budget, .starts = 3, .seed = a.seed};
    rc = pt_tune(tp, ntp, &o, tune_eval, &c, &err, &best);
  }
  if (rc == 0) {
    char pj[PT_PARAMS_JSON_MAX];
    pt_params_json(&best.best, 1, pj, sizeof pj);
    if (a.json) {
      printf("{\"trace\":");
      pt_json_str(stdout, a.traces[0]);
      printf(",\"policy\":");
      pt_json_str(stdout, pt_policy_name(c.pol));
      printf(",\"objective\":\"%s\",\"best_value\":%.9g,\"best_params\":%s,\"evaluations\":%d,\"stored\":%d,",
             a.objective, best.best_value, pj, best.evaluations, c.stored);
      rc = print_front(env.db, tr.hash, pt_policy_name(c.pol), 1, &err);
      puts("}");
    } else {
      printf("tuned %s on %s (%s): %d simulations, %d new runs stored in %s\n", pt_policy_name(c.pol), a.traces[0],
             a.objective, best.evaluations, c.stored, a.db);
      printf("best: %s  objective %.6g\n\n", pj, best.best_value);
      rc = print_front(env.db, tr.hash, pt_policy_name(c.pol), 0, &err);
    }
  }
  pt_policy_free(c.pol);
  pt_trace_data_free(&tr.t);
  pt_store_close(env.db);
  if (rc < 0) {
    fail(&err);
    return rc == PT_EUSAGE ? EXIT_USAGE : EXIT_BAD;
  }
  return 0;
}

/* ---- pagetune best, report, export ---- */

static const char best_help[] =
    "usage: pagetune best [--db DB] --trace T [--objective time|memory|weighted:W] [--json]\n"
    "\n"
    "The best stored run for TRACE (a name or a prefix of its content hash) by the\n"
    "objective; runs that hit OOM are out.  weighted:W compares W*time/best_time +\n"
    "(1-W)*memory/best_memory over the stored runs.\n";

/* Rows of a trace and the index of the best by the objective (-1: none). */
static int best_of(pt_store *db, const char *trace, const char *objective_s, pt_err *err, pt_store_run **rows,
                   size_t *n, long *best) {
  int rc = pt_store_runs(db, trace, NULL, err, rows, n);
  if (rc < 0) return rc;
  objective o;
  parse_objective(objective_s, &o);
  o.t_ref = o.m_ref = HUGE_VAL;
  for (size_t i = 0; i < *n; i++) {
    const pt_sim_result *r = &(*rows)[i].r;
    if (r->ooms) continue;
    if (r->has_gpu && r->predicted_alloc_us > 0 && r->predicted_alloc_us < o.t_ref) o.t_ref = r->predicted_alloc_us;
    if (r->peak_reserved_bytes && (double)r->peak_reserved_bytes < o.m_ref) o.m_ref = (double)r->peak_reserved_bytes;
  }
  *best = -1;
  double bv = HUGE_VAL;
  for (size_t i = 0; i < *n; i++) {
    double v = objective_value(&o, &(*rows)[i].r);
    if (v < bv) bv = v, *best = (long)i;
  }
  return 0;
}

static int cmd_best(int argc, char **argv) {
  wb_args a;
  int rc = parse_wb_args("best", best_help, argc, argv, WB_BIT(WB_DB) | WB_BIT(WB_TRACE) | WB_BIT(WB_OBJECTIVE) | WB_BIT(WB_JSON), &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.ntraces != 1) return usage_error("best", "%s", "needs exactly one --trace");
  pt_err err = {{0}};
  pt_store *db;
  if (pt_store_open(a.db, PT_STORE_READONLY, &err, &db) < 0) return fail(&err);
  pt_store_run *rows;
  size_t n;
  long b;
  rc = best_of(db, a.traces[0], a.objective, &err, &rows, &n, &b);
  pt_store_close(db);
  if (rc < 0) return fail(&err);
  if (b < 0) {
    free(rows);
    pt_err_set(&err, PT_ENOTFOUND, "%s: no run of trace '%s' (without OOM%s) to choose from", a.db, a.traces[0],
               strcmp(a.objective, "memory") ? ", with a predicted time" : "");
    return fail(&err);
  }
  const pt_store_run *r = &rows[b];
  if (a.json) {
    printf("{\"run\":%" PRId64 ",\"trace\":", r->id);
    pt_json_str(stdout, r->trace);
    printf(",\"policy\":");
    pt_json_str(stdout, r->policy);
    printf(",\"mechanism\":\"%s\",\"params\":%s,\"capacity\":%" PRIu64 ",\"objective\":\"%s\",", r->mechanism,
           r->params_json, r->capacity, a.objective);
    pt_sim_print_json_members(stdout, &r->r, 0);
    puts("}");
  } else {
    printf("best run for %s by %s: run %" PRId64 ", policy %s (%s)\nparams: %s\n", r->trace, a.objective, r->id,
           r->policy, r->mechanism, r->params_json);
    printf("peak reserved %" PRIu64 " bytes (%.1f MiB), fragmentation %.3f, %" PRIu64 " segments, predicted allocator time %.1f us\n",
           r->r.peak_reserved_bytes, r->r.peak_reserved_bytes / 1048576.0, r->r.fragmentation, r->r.segments_allocated,
           r->r.predicted_alloc_us);
  }
  free(rows);
  return 0;
}

static const char report_help[] =
    "usage: pagetune report [--db DB] [--trace T] [--html FILE]\n"
    "\n"
    "Tables of the stored runs (all traces, or TRACE: a name or a content-hash\n"
    "prefix), each trace's Pareto front marked '*'.  With --html, also one\n"
    "self-contained page (inline SVG, no network): each policy's reserved/\n"
    "allocated timeline, the Pareto plot, and the table of runs.\n";

static int cmd_report(int argc, char **argv) {
  wb_args a;
  int rc = parse_wb_args("report", report_help, argc, argv, WB_BIT(WB_DB) | WB_BIT(WB_TRACE) | WB_BIT(WB_HTML), &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.ntraces > 1) return usage_error("report", "%s", "takes at most one --trace");
  pt_err err = {{0}};
  pt_store *db;
  if (pt_store_open(a.db, PT_STORE_READONLY, &err, &db) < 0) return fail(&err);
  pt_store_run *rows = NULL;
  size_t n = 0;
  rc = pt_store_runs(db, a.ntraces ? a.traces[0] : NULL, NULL, &err, &rows, &n);
  pt_report_run *rr = rc == 0 ? calloc(n ? n : 1, sizeof *rr) : NULL;
  pt_sim_point **tl = rc == 0 ? calloc(n ? n : 1, sizeof *tl) : NULL;
  if (rc == 0 && (!rr || !tl)) rc = pt_err_set(&err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rr[i] = report_run_of(&rows[i]);
    if (a.html) rc = pt_store_timeline(db, rows[i].id, &err, &tl[i], &rr[i].ntimeline);
    rr[i].timeline = tl[i];
  }
  pt_store_close(db);
  if (rc == 0) rc = pt_report_text(stdout, rr, n, &err);
  if (rc == 0 && a.html) {
    /* write beside the target, then rename: no half-written page */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", a.html);
    FILE *f = fopen(tmp, "w");
    if (!f) rc = pt_err_set(&err, PT_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    else {
      rc = pt_report_html(f, "pagetune report", rr, n, &err);
      if (fclose(f) != 0 && rc == 0) rc = pt_err_set(&err, PT_EIO, "%s: write failed: %s", tmp, strerror(errno));
      if (rc == 0 && rename(tmp, a.html) != 0) rc = pt_err_set(&err, PT_EIO, "%s: cannot rename: %s", a.html, strerror(errno));
      if (rc < 0) remove(tmp);
      else fprintf(stderr, "wrote %s (%zu runs)\n", a.html, n);
    }
  }
  for (size_t i = 0; tl && i < n; i++) free(tl[i]);
  free(tl);
  free(rr);
  free(rows);
  return rc < 0 ? fail(&err) : 0;
}

static const char export_help[] =
    "usage: pagetune export [--db DB] --trace T [--run ID] [--objective O]\n"
    "                       --format env|dockerfile|json [--merge \"EXISTING\"]\n"
    "\n"
    "The configuration of a stored run (--run, or the best run of TRACE by the\n"
    "objective) for a PyTorch image: what PyTorch can express as a\n"
    "PYTORCH_CUDA_ALLOC_CONF value with only keys PyTorch accepts, set as both\n"
    "PYTORCH_ALLOC_CONF (read first by current PyTorch) and PYTORCH_CUDA_ALLOC_CONF\n"
    "(older PyTorch, vLLM); what it cannot, as pagetune's allocator library\n"
    "configuration.  Approximations and knobs that would do nothing are said.\n"
    "\n"
    "  --format F     env (shell export lines), dockerfile (ENV lines), json\n"
    "  --merge VALUE  an existing PYTORCH_CUDA_ALLOC_CONF value to merge into\n";

static int cmd_export(int argc, char **argv) {
  wb_args a;
  int rc = parse_wb_args("export", export_help, argc, argv,
                         WB_BIT(WB_DB) | WB_BIT(WB_TRACE) | WB_BIT(WB_RUN) | WB_BIT(WB_OBJECTIVE) | WB_BIT(WB_FORMAT) |
                             WB_BIT(WB_MERGE),
                         &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.ntraces != 1) return usage_error("export", "%s", "needs exactly one --trace");
  if (!a.format) return usage_error("export", "%s", "needs --format env|dockerfile|json");
  pt_err err = {{0}};
  pt_store *db;
  if (pt_store_open(a.db, PT_STORE_READONLY, &err, &db) < 0) return fail(&err);
  pt_store_run *rows;
  size_t n;
  long b = -1;
  rc = best_of(db, a.traces[0], a.objective, &err, &rows, &n, &b);
  pt_store_close(db);
  if (rc < 0) return fail(&err);
  if (a.run) {
    b = -1;
    for (size_t i = 0; i < n; i++)
      if (rows[i].id == (int64_t)a.run) b = (long)i;
    if (b < 0) pt_err_set(&err, PT_ENOTFOUND, "%s: no run %lu of trace '%s'", a.db, a.run, a.traces[0]);
  } else if (b < 0) {
    pt_err_set(&err, PT_ENOTFOUND, "%s: no run of trace '%s' to export", a.db, a.traces[0]);
  }
  if (b < 0) {
    free(rows);
    return fail(&err);
  }
  const pt_store_run *r = &rows[b];
  pt_params params;
  if (pt_params_from_json(r->params_json, &params) < 0) {
    pt_err_set(&err, PT_EFORMAT, "%s: run %" PRId64 ": unreadable parameters %s", a.db, r->id, r->params_json);
    free(rows);
    return fail(&err);
  }
  /* whether the policy had hooks: ask the policy itself when it can be found */
  int hooks = 0;
  char pb[4096];
  pt_policy *pol;
  pt_err perr;
  if (pt_policy_load(policy_path(r->policy, pb, sizeof pb), NULL, &perr, &pol) == 0) {
    pt_policy_hooks h;
    pt_policy_get_hooks(pol, &h);
    hooks = h.round || h.segment_size || h.page_size || h.should_collect;
    pt_policy_free(pol);
  }
  pt_gpu gpu;
  uint64_t total = pt_gpu_load(r->gpu[0] ? r->gpu : "h200", &perr, &gpu) == 0 ? gpu.memory_bytes : 0;
  pt_export_input in = {r->policy, r->mechanism, &params, r->capacity, total, hooks, r->trace, r->id};
  rc = pt_export_write(stdout, &in, a.format, a.merge, &err);
  free(rows);
  if (rc < 0) {
    fail(&err);
    return rc == PT_EUSAGE ? EXIT_USAGE : EXIT_BAD;
  }
  return 0;
}

/* ---- pagetune gpu ------------------------------------------------------------ */

static const char gpu_help[] =
    "usage: pagetune gpu info [--json]\n"
    "\n"
    "Load the CUDA driver (libcuda.so.1, at run time) and describe device 0.\n"
    "Without a GPU or driver: one line saying so, exit 1.\n";

static int cmd_gpu(int argc, char **argv) {
  int json = 0;
  if (argc < 2) {
    fputs(gpu_help, stderr);
    return EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(gpu_help, stdout);
    return 0;
  }
  if (strcmp(argv[1], "info")) return usage_error("gpu", "unknown command '%s'", argv[1]);
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(gpu_help, stdout);
      return 0;
    } else return usage_error("gpu info", "unexpected argument '%s'", argv[i]);
  }
  pt_err err = {{0}};
  pt_driver *d;
  pt_gpu_info gi;
  if (pt_driver_open(&err, &d) < 0) return fail(&err);
  int rc = pt_driver_info(d, &gi, &err);
  pt_driver_close(d);
  if (rc < 0) return fail(&err);
  if (json)
    printf("{\"name\":\"%s\",\"total_memory\":%zu,\"driver_version\":%d,\"device_count\":%d}\n", gi.name,
           gi.total_memory, gi.driver_version, gi.device_count);
  else
    printf("device 0: %s, %zu bytes, driver API %d, %d device(s)\n", gi.name, gi.total_memory,
           gi.driver_version, gi.device_count);
  return 0;
}

/* ---- pagetune calibrate --------------------------------------------------------- */

static const char calibrate_help[] =
    "usage: pagetune calibrate [--base NAME] [--repeat N] [-o FILE] [--db DB] [--json]\n"
    "\n"
    "Measure what the driver calls cost on this machine's GPU (device 0): cuMemAlloc\n"
    "and cuMemFree from 512 B to 1 GiB; cuMemCreate, cuMemMap, cuMemSetAccess,\n"
    "cuMemUnmap and cuMemRelease of one handle from 2 MiB to 2 GiB; cuMemAddressReserve\n"
    "and cuMemAddressFree from 2 MiB to 1 TiB; the median of N calls each.  Writes a\n"
    "GPU description: the base one (its MMU, TLBs and notes) with these cost lines\n"
    "appended, which replace its own; use it with --gpu FILE in sim, sweep, tune\n"
    "and replay.  Needs a GPU: without one, one line and exit 1.\n"
    "\n"
    "  --base NAME   the description to start from (default h200)\n"
    "  --repeat N    calls per size, 1..64 (default 9)\n"
    "  -o FILE       write the description there (default: standard output)\n"
    "  --db DB       also store every point in DB's calibrations table (docs/store.md)\n"
    "  --json        the measured points as one JSON object instead\n"
    "  -h, --help    this help\n";

static int cmd_calibrate(int argc, char **argv) {
  const char *base = "h200", *outpath = NULL, *dbpath = NULL;
  unsigned long reps = 9;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(calibrate_help, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--json")) json = 1;
    else if (i + 1 < argc && !strcmp(argv[i], "--base")) base = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "-o")) outpath = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--db")) dbpath = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--repeat")) {
      if (parse_ulong(argv[++i], 64, &reps) < 0 || !reps) return usage_error("calibrate", "bad --repeat '%s'", argv[i]);
    } else return usage_error("calibrate", "unexpected argument '%s'", argv[i]);
  }
  pt_err err = {{0}};
  char path[4096];
  FILE *bf = pt_gpu_open(base, path, sizeof path, &err);
  if (!bf) return fail(&err);
  pt_gpu g;
  int rc = pt_gpu_load(path, &err, &g);
  if (rc < 0) {
    fclose(bf);
    return fail(&err);
  }
  pt_driver *d;
  pt_gpu_info gi;
  pt_cost_points pts[PT_DRV_NCALLS];
  if ((rc = pt_driver_open(&err, &d)) == 0) {
    if ((rc = pt_driver_info(d, &gi, &err)) == 0) rc = pt_calibrate(d, (unsigned)reps, !json, pts, &err);
    pt_driver_close(d);
  }
  if (rc < 0) {
    fclose(bf);
    return fail(&err);
  }
  time_t now = time(NULL);
  char when[64];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  if (dbpath) { /* stored first: a bad database path fails before anything is written */
    pt_store *db;
    char gname[96], source[512];
    snprintf(gname, sizeof gname, "%s-calibrated", g.name);
    snprintf(source, sizeof source, "pagetune calibrate on %s, %s, median of %lu", gi.name, when, reps);
    if ((rc = pt_store_open(dbpath, 0, &err, &db)) == 0) {
      for (int c = 0; rc == 0 && c < PT_DRV_NCALLS; c++)
        for (size_t k = 0; rc == 0 && k < pts[c].n; k++) {
          int64_t id;
          rc = pt_store_put_calibration(db, gname, drv_names[c], (uint64_t)pts[c].bytes[k], pts[c].us[k], source,
                                        &err, &id);
        }
      pt_store_close(db);
    }
    if (rc < 0) {
      fclose(bf);
      return fail(&err);
    }
  }
  char tmp[4200];
  FILE *out = stdout;
  if (outpath) {
    snprintf(tmp, sizeof tmp, "%s.tmp", outpath);
    if (!(out = fopen(tmp, "w"))) {
      fclose(bf);
      pt_err_set(&err, PT_EIO, "%s: cannot write: %s", tmp, strerror(errno));
      return fail(&err);
    }
  }
  if (json) {
    fputs("{\"device\":", out);
    pt_json_str(out, gi.name);
    fprintf(out, ",\"driver_version\":%d,\"repeat\":%lu,\"measured\":", gi.driver_version, reps);
    pt_json_str(out, when);
    fputs(",\"points_us\":{", out);
  } else {
    char line[1024];
    while (fgets(line, sizeof line, bf)) fputs(line, out);
    fprintf(out, "\n# ---- measured by pagetune calibrate on %s (driver API %d), %s, median of %lu calls a size\n",
            gi.name, gi.driver_version, when, reps);
    fprintf(out, "name %s-calibrated\nsource pagetune calibrate on %s, %s (driver calls); %s for the rest\n", g.name,
            gi.name, when, path);
  }
  for (int c = 0, first = 1; c < PT_DRV_NCALLS; c++) {
    if (!pts[c].n) continue;
    if (json) {
      fprintf(out, "%s\"%s\":[", first ? "" : ",", drv_names[c]);
      for (size_t k = 0; k < pts[c].n; k++) fprintf(out, "%s[%.0f,%.3f]", k ? "," : "", pts[c].bytes[k], pts[c].us[k]);
      fputc(']', out);
    } else {
      fprintf(out, "cost %s", drv_names[c]);
      for (size_t k = 0; k < pts[c].n; k++) fprintf(out, " %.0f:%.3f", pts[c].bytes[k], pts[c].us[k]);
      fputc('\n', out);
    }
    first = 0;
  }
  if (json) fputs("}}\n", out);
  int read_failed = ferror(bf);
  fclose(bf);
  if (read_failed) {
    if (outpath) {
      fclose(out);
      remove(tmp);
    }
    pt_err_set(&err, PT_EIO, "%s: read failed", path);
    return fail(&err);
  }
  if (outpath) {
    int failed = ferror(out);
    failed |= fclose(out) != 0;
    int saved = errno;
    if (failed || rename(tmp, outpath) != 0) {
      saved = failed ? saved : errno;
      remove(tmp);
      pt_err_set(&err, PT_EIO, "%s: cannot write: %s", failed ? tmp : outpath, strerror(saved));
      return fail(&err);
    }
    fprintf(stderr, "wrote %s\n", outpath);
  } else if (fflush(stdout) != 0 || ferror(stdout)) {
    pt_err_set(&err, PT_EIO, "standard output: write failed");
    return fail(&err);
  }
  return 0;
}

/* ---- top level ------------------------------------------------------------------ */

static const char main_help[] =
    "usage: pagetune [--version] [--help] COMMAND [ARGS]\n"
    "\n"
    "A workbench for GPU memory-allocation policies: replay allocation traces\n"
    "captured from PyTorch workloads through a model of the allocator.\n"
    "\n"
    "Commands:\n"
    "  trace import|stats|gen   read, convert and synthesise allocation traces\n"
    "  sim                      replay a trace through an allocator policy\n"
    "  replay                   make the driver calls a policy's run makes on the GPU, timed\n"
    "  sweep                    traces x policies x parameter grids, stored in SQLite\n"
    "  tune                     search a policy's parameters (grid + Nelder-Mead)\n"
    "  best                     the best stored run of a trace\n"
    "  report                   tables, and an HTML page with timelines and the Pareto plot\n"
    "  export                   PYTORCH_CUDA_ALLOC_CONF / Dockerfile ENV / JSON for a run\n"
    "  gpu info                 describe the GPU through the CUDA driver (needs one)\n"
    "  calibrate                measure the driver calls' costs on the GPU: a GPU description\n"
    "\n"
    "'pagetune COMMAND --help' describes each.  Exit status: 0 success, 1 bad\n"
    "input or failed run, 2 bad usage.\n";

static void print_version(void) {
  printf("pagetune %s\n", PACKAGE_VERSION);
  printf("cuda: %s\n", pt_driver_built() ? "yes (driver loaded at run time)" : "no");
  printf("gsl: %s\nzlib: %s\n", GSL_VERSION, zlibVersion());
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(main_help, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(main_help, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    print_version();
    return 0;
  }
  if (!strcmp(cmd, "trace")) return cmd_trace(argc - 1, argv + 1);
  if (!strcmp(cmd, "gpu")) return cmd_gpu(argc - 1, argv + 1);
  if (!strcmp(cmd, "calibrate")) return cmd_calibrate(argc - 1, argv + 1);
  if (!strcmp(cmd, "sim")) return cmd_sim(argc - 1, argv + 1, 0);
  if (!strcmp(cmd, "replay")) return cmd_sim(argc - 1, argv + 1, 1);
  if (!strcmp(cmd, "sweep")) return cmd_sweep(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "best")) return cmd_best(argc - 1, argv + 1);
  if (!strcmp(cmd, "report")) return cmd_report(argc - 1, argv + 1);
  if (!strcmp(cmd, "export")) return cmd_export(argc - 1, argv + 1);
  fprintf(stderr, "%s: unknown command '%s' (try '%s --help')\n", prog, cmd, prog);
  return EXIT_USAGE;
}
