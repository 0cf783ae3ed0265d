/* cmd_gpu.c — pagetune gpu info: device 0 described through the CUDA driver (loaded at run time);
   pagetune gpu fit: a description from costs measured in real-mechanism replays. */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "file.h"
#include "fit.h"
#include "gpu.h"
#include "jsonread.h"

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
  const char *gpu, *name, *output;
  int bookkeeping_only, one_class;
} fit_args;

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
    PT_CLI_END};
const pt_cli_table pt_opts_gpu_fit = {
    "usage: pagetune gpu fit -o FILE [--gpu NAME] [--name NAME] [--bookkeeping-only] [--one-class] REPLAY.json...\n"
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
    "older replays (no by_class) go whole into the plain lines.  Calibrate on some\n"
    "traces, predict others with 'pagetune sim --gpu FILE'.  Needs no GPU.\n",
    fit_opts, sizeof(fit_args), &fit_defaults, 4096};

/* One {calls, requests, requests_with_calls} object's points added to f as class cls. */
static int fit_points(pt_cost_fit *f, const pt_jr_val *mc, const char *mech, int cls, const char *path, pt_err *err) {
  const pt_jr_val *calls = pt_jr_get(mc, "calls"), *req = pt_jr_get(mc, "requests");
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < pt_jr_len(calls); i++) {
    const pt_jr_val *m = pt_jr_index(calls, i);
    const char *name = pt_jr_key(m, NULL);
    int c = -1;
    for (int k = 0; k < PT_DRV_NCALLS; k++)
      if (!strcmp(name, pt_drv_call_names[k])) c = k;
    if (c < 0) return pt_err_set(err, PT_EFORMAT, "%s: unknown driver call '%s'", path, name);
    for (size_t j = 0; rc == 0 && j < pt_jr_len(m); j++) {
      const pt_jr_val *p = pt_jr_index(m, j);
      double n = pt_jr_number(pt_jr_index(p, 0)), b = pt_jr_number(pt_jr_index(p, 1)), us = pt_jr_number(pt_jr_index(p, 2));
      if (pt_jr_len(p) != 3 || !(n >= 1) || !(b >= 0) || !(us >= 0) || n > 1e18 || b > 1.8e19)
        return pt_err_set(err, PT_EFORMAT, "%s: %s: a point is [calls, bytes, us]", path, name);
      rc = pt_cost_fit_call(f, cls, c, (uint64_t)n, (uint64_t)b, us, err);
    }
  }
  for (int with = 0; with < 2; with++) {
    if (with) req = pt_jr_get(mc, "requests_with_calls");
    for (size_t j = 0; rc == 0 && j < pt_jr_len(req); j++) {
      const pt_jr_val *p = pt_jr_index(req, j);
      double n = pt_jr_number(pt_jr_index(p, 0)), b = pt_jr_number(pt_jr_index(p, 1)), us = pt_jr_number(pt_jr_index(p, 2));
      if (pt_jr_len(p) != 3 || !(n >= 1) || !(b >= 0) || n > 1e18 || b > 1.8e19 || us != us)
        return pt_err_set(err, PT_EFORMAT, "%s: requests: a point is [requests, bytes, us]", path);
      rc = pt_cost_fit_requests(f, mech, cls, with, (uint64_t)n, (uint64_t)b, us > 0 ? us : 0, err);
    }
  }
  return rc;
}

/* One replay object's measured costs added to f: by request class where it has them and one_class is 0. */
static int fit_add(pt_cost_fit *f, const pt_jr_val *o, int one_class, const char *path, pt_err *err) {
  const pt_jr_val *g = pt_jr_get(o, "gpu_mechanism_replay"), *mc = pt_jr_get(g, "measured_costs");
  const char *mech = pt_jr_string(pt_jr_get(g, "mechanism"), NULL);
  if (!mc || !mech)
    return pt_err_set(err, PT_EFORMAT, "%s: not the output of pagetune replay --mechanism --json (no measured_costs)", path);
  const pt_jr_val *bc = one_class ? NULL : pt_jr_get(mc, "by_class");
  int rc;
  if (bc) {
    const pt_jr_val *other = pt_jr_get(bc, "other"), *rep = pt_jr_get(bc, "repeat");
    if (!other || !rep) return pt_err_set(err, PT_EFORMAT, "%s: measured_costs.by_class needs 'other' and 'repeat'", path);
    rc = fit_points(f, other, mech, PT_REQ_OTHER, path, err);
    if (rc == 0) rc = fit_points(f, rep, mech, PT_REQ_REPEAT, path, err);
  } else {
    rc = fit_points(f, mc, mech, PT_REQ_OTHER, path, err);
  }
  if (rc == 0) f->runs++;
  return rc < 0 ? pt_err_prefix(err, rc, "%s", path) : 0;
}

/* A file of one replay object, or one a line. */
static int fit_file(pt_cost_fit *f, const char *path, int one_class, pt_err *err) {
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
    rc = fit_add(f, pt_jr_root(whole), one_class, path, err);
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
      if ((rc = pt_jr_parse(text + s, end - s, &o, &doc, err)) < 0) rc = pt_err_prefix(err, rc, "%s: line %d", path, lineno);
      else {
        rc = fit_add(f, pt_jr_root(doc), one_class, path, err);
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
  if (a->name && (!a->name[0] || strpbrk(a->name, " \t\n#/")))
    return pt_cli_usage(err, "--name '%s': a name has no blanks, '#' or '/'", a->name);
  pt_cost_fit *f = calloc(1, sizeof *f);
  if (!f) return pt_err_set(err, PT_ENOMEM, "out of memory");
  int rc = 0;
  for (int i = 0; rc == 0 && i < npos; i++) rc = fit_file(f, pos[i], a->one_class, err);
  if (a->bookkeeping_only) memset(f->call, 0, sizeof f->call);
  char base[4096], name[80], tmp[4200], source[600];
  FILE *in = rc == 0 ? pt_gpu_open(a->gpu, base, sizeof base, err) : NULL;
  if (rc == 0 && !in) rc = PT_ENOTFOUND;
  pt_gpu g;
  if (rc == 0 && (rc = pt_gpu_load(a->gpu, err, &g)) == 0) {
    if (snprintf(name, sizeof name, "%s%s", a->name ? a->name : g.name, a->name ? "" : "-fit") >= (int)sizeof g.name)
      rc = pt_cli_usage(err, "--name: at most %zu characters", sizeof g.name - 1);
  }
  if (rc == 0) {
    snprintf(source, sizeof source, "pagetune gpu fit from %d file(s) of real-mechanism replays, on %s", npos, g.name);
    snprintf(tmp, sizeof tmp, "%s.tmp", a->output);
    FILE *out = fopen(tmp, "w");
    if (!out) rc = pt_err_set(err, PT_EIO, "%s: %s", tmp, strerror(errno));
    else {
      rc = pt_cost_fit_write(f, in, g.points, out, name, source, err);
      if (fclose(out) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "%s: write failed", tmp);
      pt_gpu check;
      if (rc == 0 && (rc = pt_gpu_load(tmp, err, &check)) < 0) rc = pt_err_prefix(err, rc, "the fitted description");
      if (rc == 0 && rename(tmp, a->output) != 0) rc = pt_err_set(err, PT_EIO, "%s: %s", a->output, strerror(errno));
      if (rc < 0) remove(tmp);
    }
  }
  if (in) fclose(in);
  if (rc == 0) {
    int ncalls = 0, nrepeat = 0;
    for (int c = 0; c < PT_DRV_NCALLS; c++)
      for (int k = 0; k < PT_SIZE_CLASSES; k++) {
        ncalls += f->call[PT_REQ_OTHER][c][k].n > 0;
        nrepeat += f->call[PT_REQ_REPEAT][c][k].n > 0;
      }
    fprintf(stderr, "%s: %s fitted from %u replay(s): %d call points (%d more of repeats), %d mechanism(s)\n", a->output,
            name, f->runs, ncalls, nrepeat, f->nmech);
  }
  free(f);
  return rc;
}
