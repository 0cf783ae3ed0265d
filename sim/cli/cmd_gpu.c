/* cmd_gpu.c — pagetune gpu info: device 0 described through the CUDA driver (loaded at run time);
   pagetune gpu fit: a description from costs measured in real-mechanism replays. */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "driver.h"
#include "file.h"
#include "fit.h"
#include "gpu.h"
#include "jsonread.h"
#include "workbench.h"

typedef struct gpu_args {
  int json;
} gpu_args;

static const gpu_args defaults;

const pt_cli_table pt_opts_gpu = {
    .help = "usage: pagetune gpu COMMAND [ARGS]\n"
            "\n"
            "GPU descriptions and the GPU through the CUDA driver (libcuda.so.1,\n"
            "loaded at run time).  info needs a GPU (without one: one line saying so,\n"
            "exit 1); fit does not.\n"};

static const pt_cli_opt info_opts[] = {PT_CLI_OPT_FLAG("json", gpu_args, json, "one JSON object"), PT_CLI_END};
const pt_cli_table pt_opts_gpu_info = {
    "usage: pagetune gpu info [--json]\n"
    "\n"
    "Load the CUDA driver (libcuda.so.1, at run time) and describe device 0.\n"
    "Without a GPU or driver: one line saying so, exit 1.\n",
    info_opts, sizeof(gpu_args), &defaults, 0};

int pt_cmd_gpu_info(void *args, char **pos, int npos, pt_err *err) {
  const gpu_args *a = args;
  pt_driver *d;
  pt_gpu_info gi;
  int rc = pt_driver_open(err, &d);
  if (rc < 0) return rc;
  rc = pt_driver_info(d, &gi, err);
  pt_driver_close(d);
  if (rc < 0) return rc;
  if (a->json) {
    fputs("{\"name\":", stdout);
    pt_json_str(stdout, gi.name);
    printf(",\"total_memory\":%zu,\"driver_version\":%d,\"device_count\":%d}\n", gi.total_memory, gi.driver_version,
           gi.device_count);
  } else
    printf("device 0: %s, %zu bytes, driver API %d, %d device(s)\n", gi.name, gi.total_memory, gi.driver_version,
           gi.device_count);
  return 0;
}

/* ---- pagetune gpu fit ------------------------------------------------------ */

typedef struct fit_args {
  const char *gpu, *name, *output, *traces;
  int bookkeeping_only, one_class, no_after, work, no_loop;
  double host_speed;
} fit_args;

/* --host-speed: a number > 0, or "measured" (-1: as measured, whatever the base says). */
static int opt_host_speed(const char *arg, void *field) {
  if (!strcmp(arg, "measured")) {
    *(double *)field = -1;
    return 0;
  }
  return pt_cli_opt_positive(arg, field);
}

static const fit_args fit_defaults = {.gpu = "h200"};
static const pt_cli_opt fit_opts[] = {
    PT_CLI_OPT_STR("gpu", 0, "NAME", fit_args, gpu, "the description to start from (default h200; a name or a .gpu file)"),
    PT_CLI_OPT_STR("name", 0, "NAME", fit_args, name, "the new description's name (default: the base's, with -fit)"),
    PT_CLI_OPT_STR("output", 'o', "FILE", fit_args, output, "where to write it (required; written whole or not at all)"),
    PT_CLI_OPT_FLAG("bookkeeping-only", fit_args, bookkeeping_only,
                    "fit the mechanisms' own work only; keep the base's driver-call points"),
    PT_CLI_OPT_FLAG("one-class", fit_args, one_class,
                    "ignore the replays' request classes (by_class): every request in the plain\n"
                    "lines, no *_repeat line, as replays without the class axis are fitted"),
    PT_CLI_OPT_FLAG("no-after-large", fit_args, no_after,
                    "ignore the replays' calls after a large one (calls_after_large): no\n"
                    "cost_after_large line, each such call in its class's line"),
    PT_CLI_OPT_FLAG("work", fit_args, work,
                    "also fit each mechanism's own work by what it did (a bookkeeping_work\n"
                    "line): every replay's trace and policy simulated here under --gpu's\n"
                    "description to count its free-set work; direct keeps its lines"),
    PT_CLI_OPT_FLAG("no-loop", fit_args, no_loop,
                    "with --work: leave out the base's bookkeeping_loop points (calibrate's\n"
                    "allocate + free loops), fitting on the replays alone"),
    PT_CLI_OPT_STR("traces", 0, "DIR", fit_args, traces,
                   "with --work: a replay's trace path that does not exist here is read\n"
                   "as DIR/its file name"),
    PT_CLI_OPT_PARSE("host-speed", "US", fit_args, host_speed, opt_host_speed, " (a number > 0, or measured)",
                     "express every replay's times at this host speed, in us one read of\n"
                     "the clock takes: each timed run's total scaled by US / the clock\n"
                     "read before it, and the replay's times by the median of those over\n"
                     "its median run's (older replays: by US / clock_read_us_median_run,\n"
                     "else clock_read_us), and the line\n"
                     "written; 'measured': as measured, no line (replays without a clock\n"
                     "read, older than the host speed); default: the base's\n"
                     "host_clock_read_us line (h200's: 0.035), else as measured"),
    PT_CLI_END};
const pt_cli_table pt_opts_gpu_fit = {
    "usage: pagetune gpu fit -o FILE [--gpu NAME] [--name NAME] [--bookkeeping-only] [--one-class]\n"
    "                        [--no-after-large] [--work [--traces DIR] [--no-loop]] [--host-speed US|measured]\n"
    "                        REPLAY.json...\n"
    "\n"
    "Write a GPU description whose costs are the ones measured in context by\n"
    "real-mechanism replays: each REPLAY.json holds the output of\n"
    "'pagetune replay --mechanism --json' (one object, or one a line).  Every\n"
    "driver call's time by size class and every mechanism's own work per request\n"
    "or free by size class (those served without a driver call and those that\n"
    "made one apart) are summed over the files; each class becomes one point,\n"
    "its mean (bytes / calls : us / calls), in the cost, bookkeeping_us and\n"
    "bookkeeping_call_us lines of the description --gpu names, which are\n"
    "replaced for the calls and mechanisms measured; the rest is kept as it is.\n"
    "Replays that split their costs by request class (measured_costs.by_class: a\n"
    "repeat is a request or free whose size was freed among the last few frees)\n"
    "give the plain lines from the other class and cost_repeat,\n"
    "bookkeeping_repeat_us and bookkeeping_call_repeat_us lines from the repeats;\n"
    "older replays (no by_class) go whole into the plain lines.  The calls below\n"
    "1 MiB made within 8 calls of a larger one cost more on the H200; replays that\n"
    "count them apart (calls_after_large) give a cost_after_large line per call\n"
    "from them, of both classes, and the class lines from the other calls.  With --work, each\n"
    "mechanism but direct also gets a bookkeeping_work MECH REQ_US OP_US CHUNK_US\n"
    "VISIT_US line, which prices its own work in place of its bookkeeping lines:\n"
    "the replay's trace (\"trace\") and policy (\"policy\", at its defaults) are\n"
    "simulated under --gpu's description to count its requests and frees, its\n"
    "free-set operations, the sets' chunks at each insert and the keys and blocks\n"
    "its searches and walks look at; its measured own work is each request's\n"
    "measured time less the driver calls made in it (measured_costs.requests and\n"
    "requests_with_calls; a run whose own work comes out 0 or less is left\n"
    "out); the four costs are fitted by least squares on the relative\n"
    "error, none negative (of the fits on each subset of the terms that leave\n"
    "none negative, the closest; the terms left out cost 0).  The base's\n"
    "bookkeeping_loop points of a mechanism fitted (calibrate's allocate + free\n"
    "loops: one block reused, the cheapest work a request does, and the same among\n"
    "many free blocks, a search's dearest) are added to its runs, each point one\n"
    "row: its work as calibrate counted it, its time a request plus one read of\n"
    "the clock (a replay times each request between two reads), at the fit's host\n"
    "speed; --no-loop leaves them out.  Every replay's times\n"
    "are first brought to one host speed (--host-speed: a host that runs slower\n"
    "reads its clock slower, and the replay says how fast it read it), the one\n"
    "the description's host_clock_read_us line then names; lines kept from the\n"
    "base hold at the base's speed (a comment says so where the two differ).\n"
    "Calibrate on some traces, predict others with 'pagetune sim --gpu FILE'.\n"
    "Needs no GPU.\n",
    fit_opts, sizeof(fit_args), &fit_defaults, 4096};

/* One {KIND: [[calls, bytes, us], ...]} object's points added to f as class cls's calls, or as its calls after a
   large one (after: a subset of them). */
static int fit_calls(pt_cost_fit *f, const pt_jr_val *calls, int cls, int after, double scale, pt_err *err) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < pt_jr_len(calls); i++) {
    const pt_jr_val *m = pt_jr_index(calls, i);
    const char *name = pt_jr_key(m, NULL);
    int c = -1;
    for (int k = 0; k < PT_DRV_NCALLS; k++)
      if (!strcmp(name, pt_drv_call_names[k])) c = k;
    if (c < 0) return pt_err_set(err, PT_EFORMAT, "unknown driver call '%s'", name);
    for (size_t j = 0; rc == 0 && j < pt_jr_len(m); j++) {
      const pt_jr_val *p = pt_jr_index(m, j);
      double n = pt_jr_number(pt_jr_index(p, 0)), b = pt_jr_number(pt_jr_index(p, 1)), us = pt_jr_number(pt_jr_index(p, 2));
      if (pt_jr_len(p) != 3 || !(n >= 1) || !(b >= 0) || !(us >= 0) || n > 1e18 || b > 1.8e19)
        return pt_err_set(err, PT_EFORMAT, "%s: a point is [calls, bytes, us]", name);
      rc = (after ? pt_cost_fit_call_after : pt_cost_fit_call)(f, cls, c, (uint64_t)n, (uint64_t)b, us * scale, err);
    }
  }
  return rc;
}

/* One {calls, calls_after_large, requests, requests_with_calls} object's points added to f as class cls (errors
   are prefixed with where it is by the caller); calls_after_large (replays older than it have none) unless
   f->no_after. */
static int fit_points(pt_cost_fit *f, const pt_jr_val *mc, const char *mech, int cls, double scale, pt_err *err) {
  const pt_jr_val *req = pt_jr_get(mc, "requests");
  int rc = fit_calls(f, pt_jr_get(mc, "calls"), cls, 0, scale, err);
  if (rc == 0 && !f->no_after) rc = fit_calls(f, pt_jr_get(mc, "calls_after_large"), cls, 1, scale, err);
  for (int with = 0; with < 2; with++) {
    if (with) req = pt_jr_get(mc, "requests_with_calls");
    for (size_t j = 0; rc == 0 && j < pt_jr_len(req); j++) {
      const pt_jr_val *p = pt_jr_index(req, j);
      double n = pt_jr_number(pt_jr_index(p, 0)), b = pt_jr_number(pt_jr_index(p, 1)), us = pt_jr_number(pt_jr_index(p, 2));
      if (pt_jr_len(p) != 3 || !(n >= 1) || !(b >= 0) || n > 1e18 || b > 1.8e19 || us != us)
        return pt_err_set(err, PT_EFORMAT, "requests: a point is [requests, bytes, us]");
      rc = pt_cost_fit_requests(f, mech, cls, with, (uint64_t)n, (uint64_t)b, us > 0 ? us * scale : 0, err);
    }
  }
  return rc;
}

/* --work: what the replays' runs are simulated under, and the counts of each trace and policy simulated
   (a configuration measured in several processes is simulated once). */
typedef struct work_memo {
  char trace[4096], policy[256];
  uint64_t allocs;
  pt_work_counts c;
} work_memo;

typedef struct work_ctx {
  const pt_gpu *gpu;
  const char *traces;
  work_memo *memo;
  size_t n, cap;
} work_ctx;

/* The work counts of a replay's trace and policy, simulated under w->gpu (the memo's where made before). */
static int work_counts(work_ctx *w, const char *trace, const char *policy, const char *mech, uint64_t requests,
                       pt_err *err) {
  char tpath[4096], pbuf[4096];
  snprintf(tpath, sizeof tpath, "%s", trace);
  if (access(tpath, R_OK) != 0 && w->traces &&
      snprintf(tpath, sizeof tpath, "%s/%s", w->traces, pt_wb_base_name(trace)) >= (int)sizeof tpath)
    return pt_err_set(err, PT_EFORMAT, "trace path too long");
  if (access(tpath, R_OK) != 0)
    return pt_err_set(err, PT_ENOTFOUND, "trace %s: %s%s", tpath, strerror(errno),
                      w->traces ? "" : " (--traces DIR reads a recorded path as DIR/its file name)");
  size_t i = 0;
  while (i < w->n && (strcmp(w->memo[i].trace, tpath) || strcmp(w->memo[i].policy, policy))) i++;
  if (i == w->n) {
    if (strlen(policy) >= sizeof w->memo[0].policy) return pt_err_set(err, PT_EFORMAT, "policy name too long");
    if (w->n == w->cap) {
      size_t cap = w->cap ? 2 * w->cap : 16;
      work_memo *m = realloc(w->memo, cap * sizeof *m);
      if (!m) return pt_err_set(err, PT_ENOMEM, "out of memory");
      w->memo = m;
      w->cap = cap;
    }
    pt_policy *pol = NULL;
    pt_trace_data t;
    pt_sim_result r;
    pt_trace_opts topts = {.device = -1};
    int rc = pt_wb_policy_file(policy, pbuf, sizeof pbuf, err);
    if (rc == 0) rc = pt_policy_load(pbuf, NULL, err, &pol);
    if (rc < 0) return rc;
    pt_sim_config cfg;
    pt_wb_config(pol, 0, w->gpu, &cfg);
    if (strcmp(cfg.mech->name, mech))
      rc = pt_err_set(err, PT_EFORMAT, "policy %s is mechanism %s here, %s in the replay", policy, cfg.mech->name, mech);
    if (rc == 0 && (rc = pt_trace_load(tpath, &topts, err, &t)) == 0) {
      rc = pt_sim_run(&t, &cfg, err, &r);
      pt_trace_data_free(&t);
      if (rc == 0) {
        w->memo[i] = (work_memo){.allocs = r.allocs, .c = r.work};
        snprintf(w->memo[i].trace, sizeof w->memo[i].trace, "%s", tpath);
        snprintf(w->memo[i].policy, sizeof w->memo[i].policy, "%s", policy);
        w->n++;
        pt_sim_result_free(&r);
      }
    }
    pt_policy_free(pol);
    if (rc < 0) return rc;
  }
  if (w->memo[i].allocs != requests)
    return pt_err_set(err, PT_EFORMAT, "%s under %s makes %llu requests here, %llu in the replay: not the trace replayed",
                      tpath, policy, (unsigned long long)w->memo[i].allocs, (unsigned long long)requests);
  return (int)i;
}

/* --work: one replay's row (errors are prefixed with where it is by the caller) of the work fit (its counts
   simulated, its own work measured); direct has none.  The own work is what the replay measured of each request
   less the calls it made in it (measured_costs.requests and requests_with_calls), not the total less every call:
   the calls no request made (a pool's set-up, the segments alive at the start, a failed request's tries) are in
   neither the total nor a request, and taking them off the total priced randn_loop's requests under cuda_async at
   a third of their time. */
static int fit_work(pt_cost_fit *f, work_ctx *w, const pt_jr_val *g, const char *mech, double scale, pt_err *err) {
  if (!strcmp(mech, "direct")) return 0; /* its own work is its calls: it stays on its lines */
  const char *trace = pt_jr_string(pt_jr_get(g, "trace"), NULL), *policy = pt_jr_string(pt_jr_get(g, "policy"), NULL);
  double requests = pt_jr_number(pt_jr_get(g, "requests"));
  if (!trace || !policy || !(requests >= 0) || requests > 1e18)
    return pt_err_set(err, PT_EFORMAT, "--work needs the replay's trace, policy and requests");
  static const char *const keys[2] = {"requests", "requests_with_calls"};
  const pt_jr_val *mc = pt_jr_get(g, "measured_costs");
  if (!pt_jr_get(mc, keys[0]) && !pt_jr_get(mc, keys[1]))
    return pt_err_set(err, PT_EFORMAT, "--work needs measured_costs.requests (each request's own work)");
  double own_us = 0;
  for (int s = 0; s < 2; s++) { /* checked here: with by_class, fit_points reads the classes' points, not these */
    const pt_jr_val *set = pt_jr_get(mc, keys[s]);
    if (set && pt_jr_type(set) != PT_JR_ARRAY)
      return pt_err_set(err, PT_EFORMAT, "measured_costs.%s: %s, not an array of [requests, bytes, us]", keys[s],
                        pt_jr_type_name(pt_jr_type(set)));
    for (size_t i = 0; i < pt_jr_len(set); i++) {
      const pt_jr_val *p = pt_jr_index(set, i);
      double us = pt_jr_number(pt_jr_index(p, 2));
      if (pt_jr_type(p) != PT_JR_ARRAY || pt_jr_len(p) != 3 || !isfinite(us))
        return pt_err_set(err, PT_EFORMAT, "measured_costs.%s: a point is [requests, bytes, us]", keys[s]);
      own_us += us;
    }
  }
  int k = work_counts(w, trace, policy, mech, (uint64_t)requests, err);
  if (k < 0) return k;
  return pt_cost_fit_work(f, mech, &w->memo[k].c, own_us * scale, err);
}

/*
 * --work: the base's bookkeeping_loop points (calibrate's allocate + free loops) as rows of the work fit of
 * each mechanism the replays fitted: a point's work a request (scaled to a million requests: the counts are whole)
 * and its time a request plus one clock read, which a replay's timing of each request holds and calibrate's
 * batches do not, at the base's host speed, brought to the fit's (f->host_clock_read_us) like a replay's.  A base
 * that names no host speed adds none (f->loop_skipped says so).
 */
static int fit_loop(pt_cost_fit *f, const pt_gpu *g, pt_err *err) {
  const double per = 1e6;
  for (int m = 0; m < f->nmech; m++) {
    const pt_gpu_mech_cost *b = pt_gpu_mech_lines(g, f->mech[m].name);
    if (!f->mech[m].nwork || !b || !b->nloop) continue;
    if (!(g->host_clock_read_us > 0)) {
      f->loop_skipped = 1;
      continue;
    }
    double scale = f->host_clock_read_us > 0 ? f->host_clock_read_us / g->host_clock_read_us : 1;
    for (int k = 0; k < b->nloop; k++) {
      const pt_gpu_loop_point *p = &b->loop[k];
      pt_work_counts c = {(uint64_t)per, (uint64_t)llround(p->ops * per), (uint64_t)llround(p->chunks * per),
                          (uint64_t)llround(p->visits * per)};
      int rc = pt_cost_fit_work(f, f->mech[m].name, &c, per * (p->us + g->host_clock_read_us) * scale, err);
      if (rc < 0) return pt_err_prefix(err, rc, "bookkeeping_loop %s", f->mech[m].name);
      f->loop_points++;
    }
  }
  return 0;
}

/* *scale brings a replay's times to the host speed ref (µs a clock read): each timed run's total by the clock read
   before it, the median of those over the median run's total (pt_clock_at_speed), where the replay has its runs
   (measured_total_us_runs, clock_read_us_runs: the median run's requests, calls and classes move with its total);
   else ref over the read before the median run (clock_read_us_median_run), else over clock_read_us; 0 if none. */
static int host_scale(const pt_jr_val *g, double ref, double *scale, pt_err *err) {
  const pt_jr_val *runs = pt_jr_get(g, "measured_total_us_runs"), *reads = pt_jr_get(g, "clock_read_us_runs");
  double median = pt_jr_number(pt_jr_get(g, "measured_total_us"));
  size_t n = pt_jr_len(runs);
  if (n && pt_jr_type(runs) == PT_JR_ARRAY && pt_jr_type(reads) == PT_JR_ARRAY && pt_jr_len(reads) == n &&
      median > 0) {
    double *t = malloc(2 * n * sizeof *t);
    if (!t) return pt_err_set(err, PT_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
      t[i] = pt_jr_number(pt_jr_index(runs, i));
      t[n + i] = pt_jr_number(pt_jr_index(reads, i));
    }
    double at = pt_clock_at_speed(t, t + n, n, ref);
    free(t);
    if (at > 0 && isfinite(at)) {
      *scale = at / median;
      return 0;
    }
  }
  const pt_jr_val *run = pt_jr_get(g, "clock_read_us_median_run");
  double clock = pt_jr_number(run ? run : pt_jr_get(g, "clock_read_us"));
  *scale = clock > 0 && clock <= 1e6 ? ref / clock : 0;
  return 0;
}

/* One replay object's measured costs added to f: by request class where it has them and one_class is 0; with
   f->host_clock_read_us, at that host speed (host_scale). */
static int fit_add(pt_cost_fit *f, const pt_jr_val *o, int one_class, work_ctx *w, const char *path, pt_err *err) {
  const pt_jr_val *g = pt_jr_get(o, "gpu_mechanism_replay"), *mc = pt_jr_get(g, "measured_costs");
  const char *mech = pt_jr_string(pt_jr_get(g, "mechanism"), NULL);
  if (!mc || !mech)
    return pt_err_set(err, PT_EFORMAT, "%s: not the output of pagetune replay --mechanism --json (no measured_costs)", path);
  const pt_jr_val *bc = one_class ? NULL : pt_jr_get(mc, "by_class"), *other = pt_jr_get(bc, "other"),
                  *rep = pt_jr_get(bc, "repeat");
  if (bc && (!other || !rep)) return pt_err_set(err, PT_EFORMAT, "%s: measured_costs.by_class needs 'other' and 'repeat'", path);
  double scale = 1;
  if (f->host_clock_read_us > 0) {
    int rc = host_scale(g, f->host_clock_read_us, &scale, err);
    if (rc < 0) return pt_err_prefix(err, rc, "%s", path);
    if (!(scale > 0))
      return pt_err_set(err, PT_EFORMAT, "%s: no clock read (clock_read_us) to bring its times to the host speed of "
                        "%g us a read (the base's host_clock_read_us, or --host-speed; --host-speed measured fits "
                        "it as measured)", path, f->host_clock_read_us);
  }
  int rc;
  if (bc) {
    rc = fit_points(f, other, mech, PT_REQ_OTHER, scale, err);
    if (rc == 0) rc = fit_points(f, rep, mech, PT_REQ_REPEAT, scale, err);
  } else {
    rc = fit_points(f, mc, mech, PT_REQ_OTHER, scale, err);
  }
  if (rc == 0 && w) rc = fit_work(f, w, g, mech, scale, err);
  if (rc == 0) f->runs++;
  return rc < 0 ? pt_err_prefix(err, rc, "%s", path) : 0;
}

/* The parser's "line 1, column C: REASON" about one line of a file, as "PATH: line N, column C': REASON" (C' counted
   from the line's start, before the blanks that were skipped). */
static int line_error(pt_err *err, int rc, const char *path, int lineno, size_t skipped) {
  int col, used = 0;
  if (sscanf(err->msg, "line 1, column %d: %n", &col, &used) == 1 && used > 0) {
    char reason[PT_ERRMSG_MAX];
    snprintf(reason, sizeof reason, "%s", err->msg + used);
    return pt_err_set(err, rc, "%s: line %d, column %zu: %s", path, lineno, (size_t)col + skipped, reason);
  }
  return pt_err_prefix(err, rc, "%s: line %d", path, lineno);
}

/* A file of one replay object, or one a line. */
static int fit_file(pt_cost_fit *f, const char *path, int one_class, work_ctx *w, pt_err *err) {
  FILE *in = fopen(path, "r");
  if (!in) return pt_err_set(err, PT_ENOTFOUND, "%s: %s", path, strerror(errno));
  char *text;
  size_t len;
  int rc = pt_file_read_all(in, path, 64u << 20, &text, &len, err), lineno = 0;
  fclose(in);
  size_t objects = 0;
  pt_jr_opts o = {.max_bytes = 64u << 20};
  pt_jr_doc *whole;
  pt_err quiet = {{0}};
  if (rc == 0 && pt_jr_parse(text, len, &o, &whole, &quiet) == 0) { /* one object, however laid out */
    rc = fit_add(f, pt_jr_root(whole), one_class, w, path, err);
    pt_jr_free(whole);
    objects = 1;
    len = 0;
  }
  for (size_t at = 0; rc == 0 && at < len;) {
    size_t end = at;
    while (end < len && text[end] != '\n') end++;
    lineno++;
    size_t s = at;
    while (s < end && (text[s] == ' ' || text[s] == '\t' || text[s] == '\r')) s++;
    if (s < end) {
      pt_jr_doc *doc;
      if ((rc = pt_jr_parse(text + s, end - s, &o, &doc, err)) < 0) rc = line_error(err, rc, path, lineno, s - at);
      else {
        char where[4200];
        snprintf(where, sizeof where, "%s: line %d", path, lineno);
        rc = fit_add(f, pt_jr_root(doc), one_class, w, where, err);
        pt_jr_free(doc);
        objects++;
      }
    }
    at = end + 1;
  }
  free(text);
  if (rc == 0 && !objects) rc = pt_err_set(err, PT_EFORMAT, "%s: no replay in it", path);
  return rc;
}

int pt_cmd_gpu_fit(void *args, char **pos, int npos, pt_err *err) {
  const fit_args *a = args;
  if (!a->output) return pt_cli_usage(err, "needs -o FILE");
  if (!npos) return pt_cli_usage(err, "needs at least one REPLAY.json");
  int checked = pt_file_check_output(a->output, NULL, "-o", err);
  if (checked < 0) return checked;
  if (a->name && (!a->name[0] || strpbrk(a->name, " \t\n#/")))
    return pt_cli_usage(err, "--name '%s': a name has no blanks, '#' or '/'", a->name);
  if (a->traces && !a->work) return pt_cli_usage(err, "--traces is for --work");
  if (a->no_loop && !a->work) return pt_cli_usage(err, "--no-loop is for --work");
  pt_cost_fit *f = calloc(1, sizeof *f);
  pt_gpu *gp = malloc(sizeof *gp);
  if (!f || !gp) {
    free(f);
    free(gp);
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  work_ctx w = {.gpu = gp, .traces = a->traces};
  int rc = pt_gpu_load(a->gpu, err, gp); /* first: --work simulates under it */
  f->host_clock_read_us = a->host_speed ? a->host_speed : rc == 0 ? gp->host_clock_read_us : 0; /* -1: as measured */
  f->base_clock_read_us = rc == 0 ? gp->host_clock_read_us : 0;
  f->no_after = a->no_after;
  for (int i = 0; rc == 0 && i < npos; i++) rc = fit_file(f, pos[i], a->one_class, a->work ? &w : NULL, err);
  if (rc == 0 && a->work && !a->no_loop) rc = fit_loop(f, gp, err);
  if (a->bookkeeping_only) {
    memset(f->call, 0, sizeof f->call);
    memset(f->after, 0, sizeof f->after);
  }
  char base[4096], name[80], tmp[4200], source[600];
  FILE *in = rc == 0 ? pt_gpu_open(a->gpu, base, sizeof base, err) : NULL;
  if (rc == 0 && !in) rc = PT_ENOTFOUND;
  if (rc == 0) {
    if (snprintf(name, sizeof name, "%s%s", a->name ? a->name : gp->name, a->name ? "" : "-fit") >= (int)sizeof gp->name)
      rc = pt_cli_usage(err, "--name: at most %zu characters", sizeof gp->name - 1);
  }
  if (rc == 0) {
    snprintf(source, sizeof source, "pagetune gpu fit from %d file(s) of real-mechanism replays, on %s", npos, gp->name);
    FILE *out = pt_file_fopen_beside(a->output, "w", tmp, sizeof tmp, err);
    if (!out) rc = PT_EIO;
    else {
      rc = pt_cost_fit_write(f, in, gp->points, out, name, source, err);
      if (fclose(out) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "%s: write failed", tmp);
      pt_gpu check;
      if (rc == 0 && (rc = pt_gpu_load(tmp, err, &check)) < 0) rc = pt_err_prefix(err, rc, "the fitted description");
      if (rc == 0 && rename(tmp, a->output) != 0) rc = pt_err_set(err, PT_EIO, "%s: %s", a->output, strerror(errno));
      if (rc < 0) remove(tmp);
    }
  }
  if (in) fclose(in);
  if (rc == 0) {
    int ncalls = 0, nrepeat = 0, nafter = 0;
    for (int c = 0; c < PT_DRV_NCALLS; c++)
      for (int k = 0; k < PT_SIZE_CLASSES; k++) {
        ncalls += f->call[PT_REQ_OTHER][c][k].n > 0;
        nrepeat += f->call[PT_REQ_REPEAT][c][k].n > 0;
        nafter += f->after[c][k].n > 0;
      }
    fprintf(stderr, "%s: %s fitted from %u replay(s): %d call points (%d more of repeats, %d of calls after a large "
                    "one), %d mechanism(s)\n", a->output, name, f->runs, ncalls, nrepeat, nafter, f->nmech);
    if (a->work)
      fprintf(stderr, "%s: own work by what it did fitted for the mechanisms but direct, %zu trace and policy pair(s) "
                      "simulated%s\n", a->output, w.n, f->work_skipped ? "; runs with no own work measured left out" : "");
  }
  free(w.memo);
  free(gp);
  free(f);
  return rc;
}
