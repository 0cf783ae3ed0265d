/* workbench.c — run keys, policy and trace loading, the best run (see workbench.h). */
#include <config.h>

#include "workbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech.h"
#include "tracestats.h"

const pt_wb_args pt_wb_defaults = {
    .db = PT_WB_DEFAULT_DB, .objective = {.text = "time", .kind = PT_OBJ_TIME}, .budget = 60, .seed = 1};


const char *pt_wb_policy_path(const char *arg, char *buf, size_t n) {
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
  return pt_store_put_trace(db, pt_wb_base_name(path), path, hash, &st, err, id);
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
  int rc = pt_policy_load(pt_wb_policy_path(arg, buf, sizeof buf), NULL, err, pol);
  if (rc < 0) return rc;
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
  if ((rc = pt_sim_run(&tr->t, &cfg, err, res)) < 0) return rc;
  if (!*run_id && (rc = pt_store_put_run(env->db, &key, PT_GIT_REVISION, res, err, run_id)) == 0) *stored = 1;
  if (rc < 0) pt_sim_result_free(res);
  return rc;
}

pt_report_run pt_wb_report_run(const pt_store_run *r) {
  uint64_t calls = 0;
  for (int i = 0; i < PT_DRV_NCALLS; i++) calls += r->r.driver_calls[i];
  return (pt_report_run){r->id, r->trace, r->policy, r->mechanism, r->params_json, r->capacity,
                         r->r.peak_reserved_bytes, r->r.peak_allocated_bytes, r->r.segments_allocated, r->r.ooms, calls,
                         r->r.fragmentation, r->r.has_gpu ? r->r.predicted_alloc_us : NAN, NULL, 0};
}

int pt_wb_best(pt_store *db, const char *trace, const pt_objective *obj, pt_err *err, pt_store_run **rows, size_t *n,
               long *best) {
  int rc = pt_store_runs(db, trace, NULL, err, rows, n);
  if (rc < 0) return rc;
  pt_objective o = *obj;
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
    double v = pt_objective_value(&o, &(*rows)[i].r);
    if (v < bv) bv = v, *best = (long)i;
  }
  return 0;
}
