/* workbench.c — run keys, policy and trace loading, the best run (see workbench.h). */
#include <config.h>

#include "workbench.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#include "datadir.h"
#include "hooktab.h"
#include "mech.h"
#include "tracestats.h"

const pt_wb_args pt_wb_defaults = PT_WB_DEFAULTS;

int pt_wb_opt_timeline(const char *arg, void *field) {
  static const char *const names[] = {"full", "thin", "none"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(arg, names[i])) return *(int *)field = PT_WB_TL_FULL + i, 0;
  return -1;
}


int pt_wb_policy_file(const char *arg, char *buf, size_t n, pt_err *err) {
  if (pt_datadir_is_path(PT_DATA_POLICIES, arg)) {
    if ((size_t)snprintf(buf, n, "%s", arg) >= n) return pt_err_set(err, PT_ELIMIT, "%.200s...: path too long", arg);
    return 0;
  }
  if (pt_datadir_find(PT_DATA_POLICIES, arg, buf, n) == 0) return 0;
  char looked[2048];
  return pt_err_set(err, PT_ENOTFOUND, "%s: no such bundled policy (looked in %s; a policy file is named by a path: ./%s.lua)",
                    arg, pt_datadir_looked(PT_DATA_POLICIES, looked, sizeof looked), arg);
}

void pt_wb_config(pt_policy *pol, uint64_t capacity, const pt_gpu *gpu, pt_sim_config *out) {
  *out = (pt_sim_config){.capacity = capacity, .gpu = gpu};
  out->mech = pt_mech_find(pt_policy_mechanism(pol));
  pt_policy_params(pol, &out->params);
  pt_policy_get_hooks(pol, &out->hooks);
}

int pt_wb_gpu(const char *name, pt_gpu *g, const pt_gpu **out, pt_err *err) {
  *out = NULL;
  if (name && !strcmp(name, "none")) return 0;
  int rc = pt_gpu_load(name ? name : "h200", err, g);
  if (rc == 0) *out = g;
  return rc;
}

int pt_wb_needs_time(const pt_objective *o) { return o->kind != PT_OBJ_MEMORY; }

int pt_wb_no_run(const char *db, const char *trace, const pt_objective *o, const pt_store_run *rows, size_t n,
                 pt_err *err) {
  if (!n) return pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s' stored", db, trace);
  size_t oom = 0, untimed = 0, len = 0;
  char ids[96] = ""; /* the first runs without a predicted time */
  for (size_t i = 0; i < n; i++) {
    if (rows[i].r.ooms) {
      oom++;
    } else if (!rows[i].r.has_gpu) {
      if (untimed++ < 5 && len < sizeof ids)
        len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%" PRId64, untimed > 1 ? ", " : "", rows[i].id);
    }
  }
  if (!pt_wb_needs_time(o) || !untimed)
    return pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s' to choose by %s: all %zu ran out of memory", db,
                      trace, o->text, n);
  return pt_err_set(err, PT_ENOTFOUND,
                    "%s: no run of trace '%s' to choose by %s, which needs a predicted time: of its %zu runs %zu ran "
                    "out of memory and %zu were modelled without a GPU description (--gpu none: run%s %s%s); store "
                    "runs with --gpu NAME, or choose by --objective memory",
                    db, trace, o->text, n, oom, untimed, untimed > 1 ? "s" : "", ids, untimed > 5 ? ", ..." : "");
}

const char *pt_wb_base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

int pt_wb_put_trace(pt_store *db, const char *path, const pt_trace_data *data, pt_err *err, char hash[65],
                    int64_t *id) {
  pt_trace *t;
  pt_trace_stats st;
  int rc = pt_trace_open(path, NULL, err, &t);
  if (rc < 0) return rc;
  rc = pt_trace_stats_compute(t, &st, err);
  pt_trace_close(t);
  if (rc < 0) return rc;
  pt_trace_content_hash(data, hash);
  rc = pt_store_put_trace(db, pt_wb_base_name(path), path, hash, &st, err, id);
  return rc < 0 ? rc : pt_store_set_trace_settings(db, *id, data->info.settings, err);
}

int pt_wb_load_trace(pt_store *db, const char *path, pt_err *err, pt_wb_trace *out) {
  memset(out, 0, sizeof *out);
  int rc = pt_trace_load(path, NULL, err, &out->t);
  if (rc < 0) return rc;
  if ((rc = pt_wb_put_trace(db, path, &out->t, err, out->hash, &out->id)) < 0) pt_trace_data_free(&out->t);
  return rc;
}

int pt_wb_put_policy(pt_store *db, const pt_policy *pol, pt_err *err, int64_t *id) {
  size_t len;
  const char *text = pt_policy_source(pol, &len);
  return pt_store_put_policy(db, pt_policy_name(pol), pt_policy_mechanism(pol), text, len, err, id);
}

int pt_wb_load_policy(pt_store *db, const char *arg, pt_err *err, pt_policy **pol, int64_t *id) {
  char buf[4096];
  *pol = NULL;
  int rc = pt_wb_policy_file(arg, buf, sizeof buf, err);
  if (rc == 0) rc = pt_policy_load(buf, NULL, err, pol);
  if (rc < 0 || !db) return rc;
  if ((rc = pt_wb_put_policy(db, *pol, err, id)) < 0) {
    pt_policy_free(*pol);
    *pol = NULL;
  }
  return rc;
}

void pt_wb_key(int64_t trace_id, int64_t policy_id, const pt_sim_config *cfg, char *pj, pt_store_run_key *out) {
  pt_params_json(&cfg->params, 1, pj, PT_PARAMS_JSON_MAX);
  *out = (pt_store_run_key){trace_id, policy_id, pj, cfg->capacity, cfg->gpu ? cfg->gpu->name : "",
                            PT_WB_ENGINE_VERSION};
}

int pt_wb_sim(const pt_wb_env *env, const pt_trace_data *t, pt_policy *pol, pt_err *err, pt_sim_result *res) {
  pt_sim_config cfg;
  pt_wb_config(pol, env->capacity, env->gpu, &cfg);
  cfg.timeline_points = env->timeline == PT_WB_TL_THIN ? PT_WB_THIN_POINTS : 0;
  int rc = pt_sim_run(t, &cfg, err, res);
  if (rc == 0 && env->timeline == PT_WB_TL_NONE) {
    free(res->timeline);
    res->timeline = NULL;
    res->ntimeline = 0;
  }
  return rc;
}

int pt_wb_run(const pt_wb_env *env, const pt_wb_trace *tr, pt_policy *pol, int64_t policy_id, int reuse, pt_err *err,
              int64_t *run_id, int *stored, pt_sim_result *res) {
  pt_sim_config cfg;
  pt_wb_config(pol, env->capacity, env->gpu, &cfg);
  char pj[PT_PARAMS_JSON_MAX];
  pt_store_run_key key;
  pt_wb_key(tr->id, policy_id, &cfg, pj, &key);
  memset(res, 0, sizeof *res);
  *stored = 0;
  int rc = pt_store_find_run(env->db, &key, err, run_id);
  if (rc < 0 || (*run_id && reuse)) return rc;
  if ((rc = pt_wb_sim(env, &tr->t, pol, err, res)) < 0) return rc;
  if (!*run_id && (rc = pt_store_put_run(env->db, &key, PT_GIT_REVISION, res, err, run_id)) == 0) *stored = 1;
  if (rc < 0) pt_sim_result_free(res);
  return rc;
}

const pt_store_run *pt_wb_find_like(const pt_store_run *rows, size_t n, const char *params_json, const pt_store_run *like) {
  const char *engines[] = {like->engine_version, PT_WB_ENGINE_VERSION};
  for (int e = 0; e < 2; e++)
    for (size_t i = 0; i < n; i++) {
      const pt_store_run *r = &rows[i];
      if (!strcmp(r->params_json, params_json) && r->capacity == like->capacity && !strcmp(r->gpu, like->gpu) &&
          !strcmp(r->engine_version, engines[e]))
        return r;
    }
  return NULL;
}

pt_report_run pt_wb_report_run(const pt_store_run *r) {
  uint64_t calls = 0;
  for (int i = 0; i < PT_DRV_NCALLS; i++) calls += r->r.driver_calls[i];
  return (pt_report_run){r->id, r->trace, r->policy, r->mechanism, r->params_json, r->capacity,
                         r->r.peak_reserved_bytes, r->r.peak_allocated_bytes, r->r.segments_allocated, r->r.ooms, calls,
                         r->r.fragmentation, r->r.has_gpu ? r->r.predicted_alloc_us : NAN, NULL, 0};
}

int pt_wb_trace_ref(pt_store *db, const char *arg, pt_err *err, char hash[65]) {
  struct stat sb;
  int st = stat(arg, &sb), e = errno;
  int is_file = st == 0 && S_ISREG(sb.st_mode);
  if (is_file) { /* a file: its runs are found by its content, whatever name it was stored under */
    pt_trace_data t;
    int rc = pt_trace_load(arg, NULL, err, &t);
    if (rc < 0) return rc;
    pt_trace_content_hash(&t, hash);
    pt_trace_data_free(&t);
  } else if (strchr(arg, '/')) {
    return pt_err_set(err, PT_ENOTFOUND, "%s: %s", arg, st ? strerror(e) : "not a regular file");
  }
  pt_store_trace *rows;
  size_t n;
  int rc = pt_store_traces(db, is_file ? hash : arg, err, &rows, &n);
  if (rc < 0) return rc;
  if (n == 1) snprintf(hash, 65, "%s", rows[0].hash);
  else if (n == 0 && is_file)
    rc = pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s': no stored trace has its content (content hash %.12s)", pt_store_path(db), arg, hash);
  else if (n == 0)
    rc = 1; /* nothing stored by that name: the caller says so, as it says "no run" */
  else {
    int len = snprintf(err->msg, sizeof err->msg, "%s: trace '%s' is ambiguous: %zu stored traces match; name one by its content-hash prefix:",
                       pt_store_path(db), arg, n);
    for (size_t i = 0; i < n && len >= 0 && (size_t)len < sizeof err->msg; i++)
      len += snprintf(err->msg + len, sizeof err->msg - (size_t)len, " %.12s (%s)%s", rows[i].hash,
                      rows[i].source[0] ? rows[i].source : rows[i].name, i + 1 < n ? "," : "");
    rc = PT_ENOTFOUND;
  }
  free(rows);
  return rc;
}

int pt_wb_best_of(pt_store *db, const char *trace, const char *const *policies, int npolicies, const pt_objective *obj,
                  pt_err *err, pt_store_run **rows, size_t *n, long *best) {
  char hash[65];
  *rows = NULL;
  *n = 0;
  int rc = pt_wb_trace_ref(db, trace, err, hash);
  if (rc < 0) return rc;
  if (rc == 0) trace = hash;
  rc = pt_store_runs(db, trace, NULL, err, rows, n);
  if (rc < 0) return rc;
  /* the runs of the named policies: a name, or a text-hash prefix, as pt_store_runs matches them */
  char *keep = calloc(*n ? *n : 1, 1);
  if (!keep) {
    free(*rows);
    *rows = NULL;
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < *n; i++) keep[i] = npolicies == 0;
  for (int k = 0; rc == 0 && k < npolicies; k++) {
    pt_store_run *byhash;
    size_t m;
    if ((rc = pt_store_runs(db, trace, policies[k], err, &byhash, &m)) < 0) break;
    for (size_t j = 0; j < m; j++)
      for (size_t i = 0; i < *n; i++)
        if ((*rows)[i].id == byhash[j].id) keep[i] = 1;
    free(byhash);
  }
  if (rc < 0) {
    free(keep);
    free(*rows);
    *rows = NULL;
    *n = 0;
    return rc;
  }
  *best = -1;
  double bv = HUGE_VAL;
  for (size_t i = 0; i < *n; i++) {
    double v = keep[i] ? pt_objective_value(obj, &(*rows)[i].r) : HUGE_VAL;
    if (v < bv) bv = v, *best = (long)i;
  }
  free(keep);
  return 0;
}

int pt_wb_best(pt_store *db, const char *trace, const pt_objective *obj, pt_err *err, pt_store_run **rows, size_t *n,
               long *best) {
  return pt_wb_best_of(db, trace, NULL, 0, obj, err, rows, n, best);
}

/* ---- a run's export ------------------------------------------------------------------ */

int pt_wb_export_of_policy(pt_policy *pol, const pt_params *params, uint64_t capacity, const char *gpu, const char *trace,
                           int64_t run_id, pt_wb_export *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  if (params) out->params = *params;
  /* the device: a stored name is looked up among the bundled descriptions, never opened as a path */
  pt_gpu g;
  pt_err gerr;
  snprintf(out->device, sizeof out->device, "%s", gpu && gpu[0] ? gpu : "h200");
  uint64_t total = pt_gpu_load_named(out->device, &gerr, &g) == 0 ? g.memory_bytes : 0;
  int rc = 0;
  if (pol) {
    pt_policy_hooks hk;
    pt_policy_get_hooks(pol, &hk);
    out->has_hooks = hk.round || hk.segment_size || hk.page_size || hk.should_collect;
    for (int i = 0; rc == 0 && out->has_hooks && i < out->params.n; i++) /* the run's values of the policy's own parameters */
      for (int k = 0; k < pt_policy_nparams(pol); k++)
        if (!strcmp(pt_policy_param_at(pol, k)->name, out->params.v[i].name)) {
          char as[PT_PARAM_NAME_MAX + 300], v[256];
          snprintf(as, sizeof as, "%s=%s", out->params.v[i].name, pt_params_value_text(&out->params, i, v, sizeof v));
          if ((rc = pt_policy_set(pol, as, err)) < 0) rc = pt_err_prefix(err, rc, "%s: run %" PRId64, "export", run_id);
        }
    if (rc == 0 && out->has_hooks) {
      pt_err perr;
      if (pt_hooktab_resolve_policy(pol, &out->tables, &out->page_size_dropped, &perr) == 0) out->resolved = 1;
      else snprintf(out->refused, sizeof out->refused, "%s", perr.msg);
    }
  }
  out->in = (pt_export_input){pol ? pt_policy_name(pol) : NULL, pol ? pt_policy_mechanism(pol) : NULL, &out->params,
                              capacity, total, out->has_hooks, trace, run_id, out->resolved ? &out->tables : NULL,
                              out->refused, out->page_size_dropped, out->device};
  return rc;
}

int pt_wb_export_of_run(pt_store *db, const pt_store_run *r, const char *gpu, pt_wb_export *out, pt_err *err) {
  pt_params params;
  if (pt_params_from_json(r->params_json, &params) < 0)
    return pt_err_set(err, PT_EFORMAT, "run %" PRId64 ": unreadable parameters %s", r->id, r->params_json);
  pt_gpu g;
  int rc = 0;
  if (gpu && strcmp(gpu, "none") && (rc = pt_gpu_load(gpu, err, &g)) < 0) return rc; /* the user's: a name or a path */
  char *text;
  size_t len;
  if ((rc = pt_store_policy_text(db, r->policy_id, err, &text, &len)) < 0) return rc;
  pt_policy *pol;
  pt_err perr;
  if (pt_policy_load_buffer(text, len, r->policy, NULL, &perr, &pol) < 0) pol = NULL; /* taken to have no hooks */
  free(text);
  rc = pt_wb_export_of_policy(pol, &params, r->capacity, r->gpu, r->trace, r->id, out, err);
  pt_policy_free(pol);
  /* the run's own names (the policy's point into it, freed above) */
  out->in.policy = r->policy;
  out->in.mechanism = r->mechanism;
  if (gpu && !strcmp(gpu, "none")) { /* the device's size left to the machine */
    out->in.device_total_bytes = 0;
    out->in.device_name = NULL;
  } else if (gpu) {
    snprintf(out->device, sizeof out->device, "%s", g.name);
    out->in.device_total_bytes = g.memory_bytes;
  }
  return rc;
}

/* ---- the allocator library's files ---------------------------------------------------- */

static const char *existing(char *buf, size_t n, const char *dir, const char *name) {
  if (!dir || !*dir || snprintf(buf, n, "%s/%s", dir, name) >= (int)n) return NULL;
  return access(buf, R_OK) == 0 ? buf : NULL;
}

void pt_wb_find_lib_files(pt_wb_lib_files *lf, pt_export_context *ctx) {
  char exe[4096], build[4096 + 16], libdir[4096];
  pt_datadir_program(exe, sizeof exe);
  snprintf(build, sizeof build, "%s/backend/.libs", exe);
  const char *env = getenv("PAGETUNE_ALLOC_LIB");
  int in_build = 0;
  if (env && *env) ctx->lib = access(env, R_OK) == 0 ? snprintf(lf->lib, sizeof lf->lib, "%s", env), lf->lib : NULL;
  else if ((ctx->lib = existing(lf->lib, sizeof lf->lib, build, "libpagetune_alloc.so"))) in_build = 1;
  else ctx->lib = existing(lf->lib, sizeof lf->lib, PT_PKGLIBDIR, "libpagetune_alloc.so");
  snprintf(libdir, sizeof libdir, "%s", ctx->lib ? ctx->lib : "");
  char *slash = strrchr(libdir, '/');
  if (slash) *slash = 0;
  char src[4096 + 16], abs_src[] = PT_ABS_SRCDIR "/backend/python";
  snprintf(src, sizeof src, "%s/backend/python", exe);
  const char *dirs[] = {in_build ? NULL : libdir, in_build ? src : NULL, in_build ? abs_src : NULL};
  ctx->alloc_py = ctx->site_py = NULL;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !(ctx->alloc_py && ctx->site_py); i++) {
    ctx->alloc_py = existing(lf->alloc_py, sizeof lf->alloc_py, dirs[i], "pagetune_alloc.py");
    ctx->site_py = existing(lf->site_py, sizeof lf->site_py, dirs[i], "pagetune_sitecustomize.py");
  }
  if (!(ctx->alloc_py && ctx->site_py)) ctx->alloc_py = ctx->site_py = NULL; /* both from one place, or neither */
}

const char *pt_wb_lib_looked(const pt_export_context *ctx) {
  return ctx->lib ? "beside the library"
                  : "PAGETUNE_ALLOC_LIB, the build tree's backend/.libs/, " PT_PKGLIBDIR " (a build without CUDA has none)";
}

const char *pt_wb_find_python(const char *name, char *buf, size_t n) {
  pt_wb_lib_files lf;
  pt_export_context ctx = {0};
  pt_wb_find_lib_files(&lf, &ctx);
  char exe[4096], src[4096 + 16], libdir[4096];
  snprintf(libdir, sizeof libdir, "%s", ctx.site_py ? ctx.site_py : "");
  char *slash = strrchr(libdir, '/');
  if (slash) *slash = 0;
  snprintf(src, sizeof src, "%s/backend/python", pt_datadir_program(exe, sizeof exe));
  const char *dirs[] = {libdir, src, PT_ABS_SRCDIR "/backend/python", PT_PKGLIBDIR};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (existing(buf, n, dirs[i], name)) return buf;
  return NULL;
}
