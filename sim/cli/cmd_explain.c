/*
 * cmd_explain.c — pagetune explain: why memory is wasted at the peak of
 * reserved memory: which segments hold free space, how much, and which live
 * blocks pin them, with the stack frames the snapshot recorded for them.
 * The analysis is sim/work/explain.c's (the report shows its summary).
 */
#include <config.h>

#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "explain.h"
#include "workbench.h"

typedef struct explain_args {
  const char *trace, *policy;
  const char *sets[PT_MAX_PARAMS];
  int nsets, json, invent;
  unsigned long device, segments, frames;
  uint64_t capacity;
} explain_args;

static const explain_args defaults = {.policy = "pytorch_native", .device = ULONG_MAX, .segments = 10, .frames = 5};
static const pt_cli_opt explain_opts[] = {
    PT_CLI_OPT_STR("trace", 0, "TRACE", explain_args, trace,
                   "a pagetune trace or a PyTorch memory snapshot (frames: recorded\n"
                   "with _record_memory_history(context=\"alloc\" or \"all\"))"),
    PT_CLI_OPT_STR("policy", 0, "POLICY", explain_args, policy,
                   "a Lua policy file, or the name of a bundled one (default\n"
                   "pytorch_native: PyTorch's own allocator, as the snapshot ran)"),
    PT_CLI_OPT_LIST("set", "NAME=VALUE", explain_args, sets, nsets,
                    "override a policy parameter (checked against its range)"),
    PT_CLI_OPT_PARSE("capacity", "BYTES", explain_args, capacity, pt_cli_opt_capacity, NULL,
                     "cap on reserved bytes (set_per_process_memory_fraction; suffixes K, M, G, T)"),
    PT_CLI_OPT_ULONG("device", "N", explain_args, device, 0, 4096, NULL, "device of a multi-GPU snapshot"),
    PT_CLI_OPT_FLAG("invent-addresses", explain_args, invent,
                    "do not place segments at the addresses the real run recorded"),
    PT_CLI_OPT_ULONG("segments", "N", explain_args, segments, 1, 1000000, NULL,
                     "segments shown in text, the most free space first (default 10)"),
    PT_CLI_OPT_ULONG("frames", "N", explain_args, frames, 0, 256, NULL,
                     "frames shown for each block, innermost first (default 5)"),
    PT_CLI_OPT_FLAG("json", explain_args, json,
                    "one JSON object: the summary's figures and every segment with free space"),
    PT_CLI_END};
const pt_cli_table pt_opts_explain = {
    "usage: pagetune explain --trace TRACE [--policy POLICY] [--set NAME=VALUE]... [--capacity BYTES]\n"
    "                        [--device N] [--invent-addresses] [--segments N] [--frames N] [--json]\n"
    "\n"
    "Why memory is wasted: replay TRACE through POLICY's mechanism on the modelled\n"
    "device, stop at the first moment reserved bytes reach their peak, and show\n"
    "which segments hold free space, how much (a segment's bytes less the requested\n"
    "bytes of the live blocks in it, rounding included), and which live blocks pin\n"
    "them, with the stack frames the snapshot recorded for each (none when it was\n"
    "taken without them or imported with --strip-frames).  Segments with no live\n"
    "block are cached: empty_cache would give them back.  The last line is a\n"
    "one-line summary.\n",
    explain_opts, sizeof(explain_args), &defaults, 0};

int pt_cmd_explain(void *args, char **pos, int npos, pt_err *err) {
  const explain_args *a = args;
  (void)pos;
  (void)npos;
  if (!a->trace) return pt_cli_usage(err, "needs --trace TRACE");
  char pbuf[4096];
  pt_policy *pol = NULL;
  int rc = pt_wb_policy_file(a->policy, pbuf, sizeof pbuf, err);
  if (rc == 0) rc = pt_policy_load(pbuf, NULL, err, &pol);
  if (rc < 0) return rc;
  for (int i = 0; i < a->nsets; i++)
    if (pt_policy_set(pol, a->sets[i], err) < 0) { /* a bad --set is bad usage: exit 2 */
      pt_policy_free(pol);
      return PT_EUSAGE;
    }
  pt_sim_config cfg;
  pt_wb_config(pol, a->capacity, NULL, &cfg);
  cfg.invent_addresses = a->invent;
  pt_trace_opts topts = {.device = a->device == ULONG_MAX ? -1 : (int)a->device};
  pt_trace_data t;
  if ((rc = pt_trace_load(a->trace, &topts, err, &t)) < 0) {
    pt_policy_free(pol);
    return rc;
  }
  pt_explain x;
  if ((rc = pt_explain_run(&t, &cfg, err, &x)) == 0) {
    if (a->json) {
      printf("{\"trace\":");
      pt_json_str(stdout, a->trace);
      printf(",\"policy\":");
      pt_json_str(stdout, a->policy);
      printf(",\"mechanism\":");
      pt_json_str(stdout, cfg.mech ? cfg.mech->name : "?");
      printf(",\"frames_recorded\":%s,", t.frames.nstacks ? "true" : "false");
      pt_explain_print_json_members(stdout, &x, &t.frames, a->frames);
      printf("}\n");
    } else {
      printf("%s, policy %s (%s)%s\n", a->trace, a->policy, cfg.mech ? cfg.mech->name : "?",
             t.frames.nstacks ? "" : ": the trace has no stack frames");
      pt_explain_print_text(stdout, &x, &t.frames, a->segments, a->frames);
    }
    pt_explain_free(&x);
  }
  pt_trace_data_free(&t);
  pt_policy_free(pol);
  return rc;
}
