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
#include <zlib.h>

#include "driver.h"
#include "error.h"
#include "gen.h"
#include "gpu.h"
#include "mech.h"
#include "policy.h"
#include "sim.h"
#include "trace.h"
#include "tracestats.h"

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

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

enum { SIM_TRACE = 300, SIM_POLICY, SIM_SET, SIM_CAPACITY, SIM_DEVICE, SIM_JSON, SIM_INVENT, SIM_REPEAT,
       SIM_GPU, SIM_TLB, SIM_LIST_GPUS };

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmd_sim(int argc, char **argv) {
  static const struct option opts[] = {
      {"trace", required_argument, NULL, SIM_TRACE},     {"policy", required_argument, NULL, SIM_POLICY},
      {"set", required_argument, NULL, SIM_SET},         {"capacity", required_argument, NULL, SIM_CAPACITY},
      {"device", required_argument, NULL, SIM_DEVICE},   {"json", no_argument, NULL, SIM_JSON},
      {"invent-addresses", no_argument, NULL, SIM_INVENT}, {"repeat", required_argument, NULL, SIM_REPEAT},
      {"gpu", required_argument, NULL, SIM_GPU},          {"tlb", no_argument, NULL, SIM_TLB},
      {"list-gpus", no_argument, NULL, SIM_LIST_GPUS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *trace = NULL, *policy = NULL, *gpu_name = NULL, *sets[PT_MAX_PARAMS];
  int nsets = 0, json = 0, invent = 0, tlb = 0, c;
  unsigned long device = (unsigned long)-1, repeat = 1;
  uint64_t capacity = 0;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(sim_help, stdout); return 0;
    case '?': return usage_error("sim", "unknown option '%s'", argv[optind - 1]);
    case ':': return usage_error("sim", "option '%s' needs a value", argv[optind - 1]);
    case SIM_TRACE: trace = optarg; break;
    case SIM_POLICY: policy = optarg; break;
    case SIM_SET:
      if (nsets == PT_MAX_PARAMS) return usage_error("sim", "too many --set (at most %s)", "32");
      sets[nsets++] = optarg;
      break;
    case SIM_CAPACITY:
      if (parse_bytes(optarg, &capacity) < 0 || !capacity) return usage_error("sim", "bad --capacity '%s'", optarg);
      break;
    case SIM_DEVICE:
      if (parse_ulong(optarg, 4096, &device) < 0) return usage_error("sim", "bad --device '%s'", optarg);
      break;
    case SIM_JSON: json = 1; break;
    case SIM_INVENT: invent = 1; break;
    case SIM_GPU: gpu_name = optarg; break;
    case SIM_TLB: tlb = 1; break;
    case SIM_LIST_GPUS: {
      char names[1024];
      pt_gpu_list(names, sizeof names);
      printf("%s\n", names);
      return 0;
    }
    case SIM_REPEAT:
      if (parse_ulong(optarg, 100000, &repeat) < 0 || !repeat) return usage_error("sim", "bad --repeat '%s'", optarg);
      break;
    }
  }
  if (optind < argc) return usage_error("sim", "unexpected argument '%s'", argv[optind]);
  if (!trace) return usage_error("sim", "%s", "needs --trace TRACE");
  if (!policy) return usage_error("sim", "%s", "needs --policy POLICY");
  if (tlb && !gpu_name) return usage_error("sim", "%s", "--tlb needs --gpu NAME");

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
  double *secs = calloc(repeat, sizeof *secs);
  int rc = secs ? 0 : pt_err_set(&err, PT_ENOMEM, "out of memory");
  for (unsigned long k = 0; rc == 0 && k < repeat; k++) {
    if (k) pt_sim_result_free(&r);
    if ((rc = pt_sim_run(&t, &cfg, &err, &r)) == 0) secs[k] = r.seconds;
  }
  if (rc < 0) {
    free(secs);
    pt_trace_data_free(&t);
    pt_policy_free(pol);
    return fail(&err);
  }
  qsort(secs, repeat, sizeof *secs, cmp_double);
  double median = secs[repeat / 2], fastest = secs[0], slowest = secs[repeat - 1];
  free(secs);
  if (json) {
    fputs("{\"trace\":", stdout);
    json_string(stdout, trace);
    fputs(",\"policy\":", stdout);
    json_string(stdout, pt_policy_name(pol));
    fputs(",\"mechanism\":", stdout);
    json_string(stdout, cfg.mech->name);
    fputs(",\"params\":{", stdout);
    for (int i = 0; i < cfg.params.n; i++) {
      fprintf(stdout, "%s", i ? "," : "");
      json_string(stdout, cfg.params.v[i].name);
      double v = cfg.params.v[i].value;
      if (isfinite(v)) fprintf(stdout, ":%.17g", v);
      else fputs(":null", stdout); /* unlimited */
    }
    printf("},\"capacity\":%" PRIu64 ",\"repeat\":%lu,\"replay_seconds_median\":%.6g,"
           "\"replay_seconds_min\":%.6g,\"replay_seconds_max\":%.6g,",
           capacity, repeat, median, fastest, slowest);
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
    "  gpu info                 describe the GPU through the CUDA driver (needs one)\n"
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
  if (!strcmp(cmd, "sim")) return cmd_sim(argc - 1, argv + 1);
  fprintf(stderr, "%s: unknown command '%s' (try '%s --help')\n", prog, cmd, prog);
  return EXIT_USAGE;
}
