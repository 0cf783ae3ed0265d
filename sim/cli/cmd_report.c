/*
 * cmd_report.c — pagetune report: tables of the stored runs with each
 * trace's Pareto front, and with --html one self-contained page.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocconf.h"
#include "file.h"
#include "workbench.h"

static const pt_cli_opt report_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("only this trace: a file, a stored name or a content-hash prefix (at most one)"),
    PT_WB_OPT_OBJECTIVE("how the recommended run is chosen: time (default), memory, or\n"
                        "weighted:W, as best and export choose;"),
    PT_CLI_OPT_STR("html", 0, "FILE", pt_wb_args, html, "also write the HTML page there"),
    PT_WB_OPT_JSON("one JSON object on stdout (runs, recommendations, confirmations)\n"
                   "instead of the text"),
    PT_CLI_END};
const pt_cli_table pt_opts_report = {
    "usage: pagetune report [--db DB] [--trace T] [--objective O] [--html FILE] [--json]\n"
    "\n"
    "First, for each trace (all, or TRACE: a name or a content-hash prefix), the\n"
    "recommended settings: the best run by the objective, never one that ran out\n"
    "of memory nor direct (one driver call per request), as export prints it (the\n"
    "lines to paste), with its predicted peak and time against the settings the\n"
    "snapshot was captured with (pytorch_native at its defaults, at the same\n"
    "capacity and GPU, when stored) and why.  Then tables of the stored runs, each\n"
    "trace's Pareto front marked '*', and what `pagetune confirm` measured on a GPU\n"
    "beside what the model predicted: predicted and measured gains, the measured\n"
    "gain's 95% interval, the verdict.  With --html, also one self-contained page\n"
    "(inline SVG, no network): the recommendations, then per trace the Pareto plot,\n"
    "the recommended run's timeline over the captured settings', the other runs'\n"
    "timelines (folded), the table of runs and the confirmations.  With --json, one\n"
    "object {\"runs\": [...], \"recommendations\": [...], \"confirmations\": [...]}.\n",
    report_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

/* The policy every snapshot's settings are taken to be, at its defaults (the store keeps no capture settings). */
#define CAPTURED_POLICY "pytorch_native"
#define CAPTURED_DESC "pytorch_native at its defaults"

/* Write the page beside the target, then rename: no half-written page. */
static int write_html(const char *path, const pt_report_run *rr, size_t n, const pt_report_rec *recs, size_t nrecs,
                      const pt_report_confirm *rc_, size_t nc, pt_err *err) {
  char tmp[4200];
  FILE *f = pt_file_fopen_beside(path, "w", tmp, sizeof tmp, err);
  if (!f) return PT_EIO;
  int rc = pt_report_html(f, "pagetune report", rr, n, recs, nrecs, rc_, nc, err);
  if (rc < 0) rc = pt_err_prefix(err, rc, "%s", path); /* "PATH: report: write failed: REASON" (a full disk) */
  if (fclose(f) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "%s: write failed: %s", path, strerror(errno));
  if (rc == 0 && rename(tmp, path) != 0) rc = pt_err_set(err, PT_EIO, "%s: cannot rename: %s", path, strerror(errno));
  if (rc < 0) remove(tmp);
  else fprintf(stderr, "wrote %s (%zu runs)\n", path, n);
  return rc;
}

/* "NAME@HASH12": a trace's name where another stored trace has the same one. */
static void rename_trace(pt_store_run *r) {
  char named[sizeof r->trace];
  snprintf(named, sizeof named, "%.200s@%.12s", r->trace, r->trace_hash);
  memcpy(r->trace, named, sizeof named);
}

static int by_name_hash(const void *x, const void *y) {
  const pt_store_run *a = *(const pt_store_run *const *)x, *b = *(const pt_store_run *const *)y;
  int c = strcmp(a->trace, b->trace);
  return c ? c : strcmp(a->trace_hash, b->trace_hash);
}

/* clash[i] = 1 where another stored trace has the name of run i's; sorted, so a store of 10^5 runs takes n log n,
   not n^2. */
static int find_clashes(const pt_store_run *rows, size_t n, char *clash, pt_err *err) {
  const pt_store_run **p = malloc((n ? n : 1) * sizeof *p);
  if (!p) return pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) p[i] = &rows[i];
  qsort(p, n, sizeof *p, by_name_hash);
  for (size_t i = 0, e; i < n; i = e) {
    for (e = i + 1; e < n && !strcmp(p[e]->trace, p[i]->trace);) e++;
    int two = strcmp(p[i]->trace_hash, p[e - 1]->trace_hash) != 0; /* sorted by hash within the name */
    for (size_t j = i; j < e; j++) clash[p[j] - rows] = (char)two;
  }
  free(p);
  return 0;
}

/* ---- the recommendation of each trace ----------------------------------------------------- */

/* What a trace's recommendation points at, owned here. */
typedef struct rec_text {
  char *paste, *code, *notes;
  char chosen_by[160], command[1400], baseline_desc[400];
} rec_text;

/*
 * The settings a trace was captured with, as the bundled policy that models
 * them (pt_conf_model_of, what sim --conf reads): from the PYTORCH_CUDA_ALLOC_CONF
 * its header's settings line records (a PyTorch snapshot's allocator_settings
 * hold it); PyTorch's defaults (pytorch_native) where none is recorded, or
 * where the value is one the model cannot take (said in desc).
 */
static void captured_model(pt_store *db, int64_t trace_id, pt_conf_model *m, char *desc, size_t n) {
  char settings[1024], conf[PT_CONF_VALUE_MAX];
  pt_err e;
  memset(m, 0, sizeof *m);
  m->policy = CAPTURED_POLICY;
  snprintf(desc, n, "%s", CAPTURED_DESC);
  if (pt_store_trace_settings(db, trace_id, &e, settings, sizeof settings) < 0 ||
      !pt_conf_of_settings(settings, conf, sizeof conf) || !*conf)
    return;
  pt_conf *c = calloc(1, sizeof *c);
  if (!c) return;
  pt_conf_read(c, conf, "captured");
  pt_conf_model tm;
  if (pt_conf_model_of(c, "captured", &tm, &e) == 0 && !tm.unmodelled) {
    *m = tm;
    snprintf(desc, n, "the captured settings (%.300s: %s)", conf, m->policy);
  } else {
    snprintf(desc, n, "%s (the captured '%.300s' is not one the model takes)", CAPTURED_DESC, conf);
  }
  free(c);
}

/* Is r a run of the captured settings: m's policy with its stored text's defaults and m's assignments? */
/* The captured settings' parameters under one stored policy (its params_json), found once a policy. */
typedef struct captured_cache {
  int64_t policy_id[4];
  int ok[4];
  char pj[4][PT_PARAMS_JSON_MAX];
  int n;
} captured_cache;

static int is_captured(pt_store *db, const pt_store_run *r, const pt_conf_model *m, captured_cache *c) {
  if (strcmp(r->policy, m->policy)) return 0;
  for (int k = 0; k < c->n; k++)
    if (c->policy_id[k] == r->policy_id) return c->ok[k] && !strcmp(c->pj[k], r->params_json);
  int k = c->n < 4 ? c->n++ : 3; /* a trace's runs have a policy or two of the captured name: the last slot is reused */
  c->policy_id[k] = r->policy_id;
  c->ok[k] = 0;
  char *text;
  size_t len;
  pt_err e;
  pt_policy *pol;
  if (pt_store_policy_text(db, r->policy_id, &e, &text, &len) < 0) return 0;
  int ok = pt_policy_load_buffer(text, len, r->policy, NULL, &e, &pol) == 0;
  free(text);
  if (!ok) return 0;
  for (int i = 0; ok && i < m->nsets; i++) ok = pt_policy_set(pol, m->sets[i], &e) == 0;
  pt_params d;
  pt_policy_params(pol, &d);
  pt_policy_free(pol);
  c->ok[k] = ok && pt_params_json(&d, 1, c->pj[k], sizeof c->pj[k]) == 0;
  return c->ok[k] && !strcmp(c->pj[k], r->params_json);
}

/* params_json with free_lag at 0 and lazy_check at 2, as the store writes it (paramjson.h): runs that differ only
   in what the model assumes of the run (the GPU's lag, when the driver looks at its frees) compare equal; "" when
   it does not read. */
static void lag_free_key(const char *pj, char *out, size_t n) {
  pt_params p;
  if (pt_params_from_json(pj, &p) < 0 || pt_params_set(&p, "free_lag", 0) < 0 ||
      (pt_params_get(&p, "lazy_check", -1) != -1 && pt_params_set(&p, "lazy_check", 2) < 0) || pt_params_json(&p, 1, out, n) < 0)
    out[0] = 0;
}

/*
 * A cudaMallocAsync peak is a spread (docs/model.md): how far the GPU lags the CPU, free_lag in the model,
 * differs between real runs.  The stored runs of r's configuration at other free_lag values give it; the
 * note says it, and says when the saving against the captured settings' run (base, or NULL) lies inside it;
 * a spread of one value (a trace timed with +gpu, no cross-stream frees) is said as such.  Without such runs,
 * how to store them.  Appended to *notes (malloc'd text, or NULL).
 */
static int async_spread_note(const pt_store_run *rows, size_t first, size_t n, const pt_store_run *r,
                             const pt_store_run *base, char **notes, pt_err *err) {
  if (strcmp(r->mechanism, "async_pool")) return 0;
  char key[PT_PARAMS_JSON_MAX], other[PT_PARAMS_JSON_MAX];
  lag_free_key(r->params_json, key, sizeof key);
  uint64_t lo = UINT64_MAX, hi = 0;
  int runs = 0;
  for (size_t i = first; i < n; i++) {
    const pt_store_run *q = &rows[i];
    if (strcmp(q->trace_hash, r->trace_hash) || strcmp(q->mechanism, "async_pool") || q->capacity != r->capacity ||
        strcmp(q->gpu, r->gpu) || q->r.ooms)
      continue;
    lag_free_key(q->params_json, other, sizeof other);
    if (!key[0] || strcmp(other, key)) continue;
    runs++;
    if (q->r.peak_reserved_bytes < lo) lo = q->r.peak_reserved_bytes;
    if (q->r.peak_reserved_bytes > hi) hi = q->r.peak_reserved_bytes;
  }
  char add[900];
  if (runs < 2)
    snprintf(add, sizeof add,
             "warning: a cudaMallocAsync peak depends on how far the GPU lags the CPU, which other work on the GPU "
             "changes, and on where the program synchronises; 'pagetune sweep --policy %s --grid "
             "free_lag=0,4,16,64,256,1000000000 --grid lazy_check=0,1' (with this run's settings) stores the spread "
             "the model expects, which this report then shows\n", r->policy);
  else if (lo == hi) /* a trace whose frees carry the GPU's times (+gpu), with no cross-stream frees: no spread */
    snprintf(add, sizeof add,
             "warning: over free_lag and lazy_check (the GPU's lag, when the driver looks at its frees; %d stored "
             "runs) this configuration's peak reserved is %.1f MiB in every one, the GPU's timing being the captured "
             "run's; other work on the same GPU changes that timing, and the peak with it (docs/model.md)\n",
             runs, (double)lo / 1048576);
  else {
    int inside = base && base->r.peak_reserved_bytes <= hi && base->r.peak_reserved_bytes > r->r.peak_reserved_bytes;
    int n0 = snprintf(add, sizeof add,
                      "warning: over free_lag and lazy_check (the GPU's lag, when the driver looks at its frees; %d "
                      "stored runs) this configuration's peak reserved is %.1f-%.1f MiB: a real run can land anywhere "
                      "in it%s",
                      runs, (double)lo / 1048576, (double)hi / 1048576, inside ? "" : "\n");
    if (inside && n0 > 0 && (size_t)n0 < sizeof add)
      snprintf(add + n0, sizeof add - (size_t)n0,
               "; the captured settings' peak (%.1f MiB) lies inside it, so the predicted saving "
               "(%.1f MiB) is not a gain to count on\n",
               (double)base->r.peak_reserved_bytes / 1048576,
               (double)(base->r.peak_reserved_bytes - r->r.peak_reserved_bytes) / 1048576);
  }
  size_t had = *notes ? strlen(*notes) : 0;
  char *grown = realloc(*notes, had + strlen(add) + 1);
  if (!grown) return pt_err_set(err, PT_ENOMEM, "out of memory");
  memcpy(grown + had, add, strlen(add) + 1);
  *notes = grown;
  return 0;
}

/* A name the shell takes as one word unquoted. */
static int plain_word(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+=:,@", *s)) return 0;
  return 1;
}

/*
 * The export's text of run r (its env format) split three ways: the lines to
 * paste into the environment (not comments), the program's lines (the
 * comments indented "#   ", without it), and the rest of its comments as
 * notes; its heading is left out (the report says what it names).
 */
static int export_text(pt_store *db, const char *dbpath, const pt_store_run *r, int clash, rec_text *t, pt_err *err) {
  pt_wb_export *x = malloc(sizeof *x);
  if (!x) return pt_err_set(err, PT_ENOMEM, "out of memory");
  char *all = NULL;
  size_t len = 0;
  int rc = pt_wb_export_of_run(db, r, NULL, x, err);
  FILE *f = rc == 0 ? open_memstream(&all, &len) : NULL;
  if (rc == 0 && !f) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  if (rc == 0) rc = pt_export_write(f, &x->in, "env", NULL, err);
  if (f && fclose(f) != 0 && rc == 0) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  free(x);
  t->paste = calloc(len + 1, 1);
  t->code = calloc(len + 1, 1);
  t->notes = calloc(len + 1, 1);
  if (rc == 0 && (!t->paste || !t->code || !t->notes)) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  size_t np = 0, nc = 0, nn = 0;
  for (const char *p = all; rc == 0 && p && *p;) {
    size_t l = strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');
    if (p[0] != '#') memcpy(t->paste + np, p, l), np += l;
    else if (!strncmp(p, "#   ", 4)) memcpy(t->code + nc, p + 4, l - 4), nc += l - 4;
    else if (strncmp(p, "# pagetune export: ", 19) && l > 2) memcpy(t->notes + nn, p + 2, l - 2), nn += l - 2;
    p += l;
  }
  free(all);
  if (rc < 0) return rc;
  char tr[80];
  if (!clash && plain_word(r->trace)) snprintf(tr, sizeof tr, "%.78s", r->trace);
  else snprintf(tr, sizeof tr, "%.12s", r->trace_hash);
  snprintf(t->command, sizeof t->command, "pagetune export%s%.1000s --trace %s --run %" PRId64 " --format env",
           strcmp(dbpath, PT_WB_DEFAULT_DB) ? " --db " : "", strcmp(dbpath, PT_WB_DEFAULT_DB) ? dbpath : "", tr, r->id);
  return 0;
}

/*
 * The recommendation of the trace of rows[first]: the best run by o among
 * those pt_report_recommendable admits (by memory when o needs a time no run
 * has), the captured settings' run at its capacity and GPU, and the export.
 */
static int recommend(pt_store *db, const pt_wb_args *a, const pt_store_run *rows, const pt_report_run *rr, size_t n,
                     size_t first, const char *clash, pt_report_rec *rec, rec_text *t, pt_err *err) {
  const char *hash = rows[first].trace_hash;
  long best = -1;
  pt_objective mem = {"memory", PT_OBJ_MEMORY, 0};
  const pt_objective *os[] = {&a->objective, &mem};
  int used = 0;
  for (int k = 0; k < 2 && best < 0; k++) {
    double bv = HUGE_VAL;
    for (size_t i = first; i < n; i++) {
      if (strcmp(rows[i].trace_hash, hash) || !pt_report_recommendable(&rr[i])) continue;
      double v = pt_objective_value(os[k], &rows[i].r);
      if (v < bv) bv = v, best = (long)i, used = k;
    }
  }
  char f[96];
  pt_conf_model cm;
  captured_model(db, rows[first].trace_id, &cm, t->baseline_desc, sizeof t->baseline_desc);
  *rec = (pt_report_rec){.trace = rows[first].trace, .baseline_desc = t->baseline_desc};
  if (best < 0) return 0;
  const pt_store_run *r = &rows[best];
  rec->run = r->id;
  captured_cache *cc = calloc(1, sizeof *cc);
  if (!cc) return pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = first; i < n && !rec->baseline; i++)
    if (!strcmp(rows[i].trace_hash, hash) && rows[i].capacity == r->capacity && !strcmp(rows[i].gpu, r->gpu) &&
        is_captured(db, &rows[i], &cm, cc))
      rec->baseline = rows[i].id;
  free(cc);
  snprintf(t->chosen_by, sizeof t->chosen_by, "%s (%s)%s", used ? "memory" : a->objective.text,
           pt_objective_formula(os[used], f, sizeof f),
           used ? ": no run has the predicted time the objective needs" : "");
  rec->chosen_by = t->chosen_by;
  pt_err xerr = {{0}};
  int rc = export_text(db, a->db, r, clash[best], t, &xerr);
  if (rc < 0 && rc != PT_ENOMEM) { /* a run export cannot write is still the answer: the report says why */
    free(t->paste), free(t->code), free(t->notes);
    t->code = t->paste = NULL;
    size_t len = strlen(xerr.msg) + 64;
    if (!(t->notes = malloc(len))) return pt_err_set(err, PT_ENOMEM, "out of memory");
    snprintf(t->notes, len, "warning: no lines to paste: %s\n", xerr.msg);
    rec->notes = t->notes;
    return 0;
  }
  if (rc < 0) return pt_err_set(err, rc, "%s", xerr.msg);
  const pt_store_run *base = NULL;
  for (size_t i = first; i < n && rec->baseline && !base; i++)
    if (rows[i].id == rec->baseline) base = &rows[i];
  if ((rc = async_spread_note(rows, first, n, r, base, &t->notes, err)) < 0) return rc;
  rec->paste = t->paste;
  rec->code = t->code;
  rec->notes = t->notes;
  rec->command = t->command;
  return 0;
}

int pt_cmd_report(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (a->ntraces > 1) return pt_cli_usage(err, "takes at most one --trace");
  pt_store *db;
  int rc = a->html ? pt_file_check_output(a->html, NULL, "--html", err) : 0; /* before the text is printed */
  if (rc == 0) rc = pt_store_open(a->db, PT_STORE_READONLY, err, &db);
  if (rc < 0) return rc;
  pt_store_run *rows = NULL;
  size_t n = 0, nc = 0;
  pt_store_confirmation *cs = NULL;
  pt_report_confirm *rc_ = NULL;
  char hash[65];
  const char *trace = a->ntraces ? a->traces[0] : NULL;
  if (trace && (rc = pt_wb_trace_ref(db, trace, err, hash)) == 0) trace = hash;
  if (rc == 1) rc = 0; /* no trace of that name: no runs, said below */
  if (rc == 0) rc = pt_store_runs(db, trace, NULL, err, &rows, &n);
  if (rc == 0 && a->ntraces && !n) /* as best and export: a trace asked for and not there is bad input */
    rc = pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s' stored", a->db, a->traces[0]);
  if (rc == 0) rc = pt_store_confirmations(db, trace, err, &cs, &nc);
  /* two traces stored under one name are two traces: each such name gets its content-hash prefix */
  char *clash = rc == 0 ? calloc(n ? n : 1, 1) : NULL;
  if (rc == 0 && !clash) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  if (rc == 0) rc = find_clashes(rows, n, clash, err);
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (clash[i]) rename_trace(&rows[i]);
  if (rc == 0 && !(rc_ = calloc(nc ? nc : 1, sizeof *rc_))) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < nc; i++) {
    const pt_store_confirmation *c = &cs[i];
    rc_[i] = (pt_report_confirm){c->id, c->baseline_run, c->tuned_run, c->trace, c->baseline_policy, c->tuned_policy,
                                 c->baseline_allocator, c->tuned_allocator, c->time_metric, c->hostname, c->gpu_name,
                                 c->measured_at, c->runs_per_arm, c->time, c->peak, c->baseline_predicted_us,
                                 c->tuned_predicted_us, c->baseline_predicted_peak, c->tuned_predicted_peak};
  }
  pt_report_run *rr = rc == 0 ? calloc(n ? n : 1, sizeof *rr) : NULL;
  pt_sim_point **tl = rc == 0 ? calloc(n ? n : 1, sizeof *tl) : NULL;
  if (rc == 0 && (!rr || !tl)) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++) rr[i] = pt_wb_report_run(&rows[i]);
  /* one recommendation a trace, in order of first appearance */
  pt_report_rec *recs = rc == 0 ? calloc(n ? n : 1, sizeof *recs) : NULL;
  rec_text *rt = rc == 0 ? calloc(n ? n : 1, sizeof *rt) : NULL;
  size_t nrecs = 0;
  if (rc == 0 && (!recs || !rt)) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  const char **rec_hash = rc == 0 ? calloc(n ? n : 1, sizeof *rec_hash) : NULL; /* the trace of each rec */
  if (rc == 0 && !rec_hash) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++) { /* a trace's first run: a hash no rec has yet (n x traces, not n^2) */
    size_t j = 0;
    while (j < nrecs && strcmp(rows[i].trace_hash, rec_hash[j])) j++;
    if (j < nrecs) continue;
    rec_hash[nrecs] = rows[i].trace_hash;
    rc = recommend(db, a, rows, rr, n, i, clash, &recs[nrecs], &rt[nrecs], err), nrecs++;
  }
  free(rec_hash);
  /* timelines: of the runs the page draws (pt_report_html_shown); the recommended and captured runs' for the why */
  char *shown = rc == 0 && a->html ? malloc(n ? n : 1) : NULL;
  if (rc == 0 && a->html && (!shown || pt_report_html_shown(rr, n, shown) < 0))
    rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    int named = 0;
    for (size_t k = 0; k < nrecs; k++) named |= recs[k].run == rows[i].id || recs[k].baseline == rows[i].id;
    if ((a->html && shown[i]) || named) rc = pt_store_timeline(db, rows[i].id, err, &tl[i], &rr[i].ntimeline);
    rr[i].timeline = tl[i];
  }
  free(shown);
  pt_store_close(db);
  if (rc == 0)
    rc = a->json ? pt_report_json(stdout, rr, n, recs, nrecs, rc_, nc, err)
                 : pt_report_text(stdout, rr, n, recs, nrecs, rc_, nc, err);
  if (rc == 0 && a->html) rc = write_html(a->html, rr, n, recs, nrecs, rc_, nc, err);
  for (size_t i = 0; tl && i < n; i++) free(tl[i]);
  for (size_t k = 0; rt && k < nrecs; k++) free(rt[k].paste), free(rt[k].code), free(rt[k].notes);
  free(rt);
  free(recs);
  free(clash);
  free(tl);
  free(rr);
  free(rows);
  free(rc_);
  free(cs);
  return rc;
}
