/*
 * tune.c — grid × Nelder–Mead search over policy parameters (see tune.h).
 *
 * No global state: a search's state is allocated per call to pt_tune, so
 * tuners may run side by side or one inside another's objective.  GSL's
 * error handler (process-wide) is left alone; instead GSL is never given
 * what makes it call it: the simplex only sees finite values (an objective
 * that is infinite, NaN or unavailable once the search has stopped reads as
 * PT_TUNE_WORST), and is only built for at least one continuous parameter.
 * GSL still calls its handler when one of its own allocations fails; a
 * program that wants that reported rather than aborted sets
 * gsl_set_error_handler_off() once, in main.
 *
 * A start whose value is not finite (a run that ran out of memory) gives the
 * simplex nothing to go by, so it is replaced by the next point of a coarse
 * probe grid over the continuous parameters whose value is finite; a start
 * with no such point left is skipped.  A search that finds no finite value
 * anywhere is PT_ENOTFOUND.
 */
#include "tune.h"

#include <float.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PT_TUNE_WORST DBL_MAX /* what the simplex sees for a point with no finite value */

#define MAX_SEEN 4096

typedef struct search {
  const pt_tune_param *params;
  int nparams;
  int cont[PT_MAX_PARAMS];    /* indices of continuous parameters */
  int ncont;
  pt_params point;            /* grid values fixed, continuous ones filled per evaluation */
  pt_tune_eval eval;
  void *ctx;
  pt_err *err;
  int rc;                     /* first error from eval */
  int evaluations, budget;
  pt_tune_result *out;
  int probe_next;             /* the next probe-grid point to try at this grid point */
  /* memo of evaluated points */
  pt_params seen[MAX_SEEN];
  double seen_value[MAX_SEEN];
  int nseen;
} search;

static double to_space(const pt_tune_param *p, double v) { return p->log_scale ? log(v) : v; }

/* v rounded to a multiple of 10^e, as the double nearest that decimal. */
static double round_pow10(double v, int e) {
  return e < 0 ? round(v * pow(10, -e)) / pow(10, -e) : round(v / pow(10, e)) * pow(10, e);
}

/*
 * The value a point in search space stands for, at the resolution the search
 * has (its convergence test is 1e-3 of search space): a log-scaled parameter
 * to 4 significant digits, a linear one to the power of ten below 1e-3 of its
 * range; within half that step of the default or an end of the range, exactly
 * that (so 0 stays "off" and never becomes 5.55e-17); integers rounded.
 */
static double from_space(const pt_tune_param *p, double x) {
  double lo = to_space(p, p->lo), hi = to_space(p, p->hi);
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  double v = p->log_scale ? exp(x) : x;
  int e = p->log_scale ? (int)floor(log10(fabs(v))) - 3 : (int)floor(log10(p->hi - p->lo)) - 3;
  double q = pow(10, e);
  v = round_pow10(v, e);
  if (fabs(v - p->dflt) <= q / 2 && p->dflt >= p->lo && p->dflt <= p->hi) v = p->dflt;
  else if (fabs(v - p->lo) <= q / 2) v = p->lo;
  else if (fabs(v - p->hi) <= q / 2) v = p->hi;
  if (p->integer) v = round(v);
  if (v < p->lo) v = p->lo;
  if (v > p->hi) v = p->hi;
  return v;
}

/* Evaluate s->point (memoised); returns the objective, HUGE_VAL once stopped. */
static double evaluate(search *s) {
  for (int i = 0; i < s->nseen; i++)
    if (pt_params_equal(&s->seen[i], &s->point)) return s->seen_value[i];
  if (s->rc < 0 || s->evaluations >= s->budget) return HUGE_VAL;
  double v;
  int rc = s->eval(s->ctx, &s->point, &v, s->err);
  s->evaluations++;
  if (rc < 0) {
    s->rc = rc;
    return HUGE_VAL;
  }
  if (isnan(v)) v = HUGE_VAL;
  if (s->nseen < MAX_SEEN) {
    s->seen[s->nseen] = s->point;
    s->seen_value[s->nseen++] = v;
  }
  if (v < s->out->best_value) {
    s->out->best_value = v;
    s->out->best = s->point;
  }
  return v;
}

/* The value at x (search space, continuous parameters in order). */
static double evaluate_at(search *s, const double *x) {
  for (int k = 0; k < s->ncont; k++) {
    const pt_tune_param *p = &s->params[s->cont[k]];
    pt_params_set(&s->point, p->name, from_space(p, x[k]));
  }
  return evaluate(s);
}

static double nm_f(const gsl_vector *x, void *arg) {
  search *s = arg;
  double xs[PT_MAX_PARAMS];
  for (int k = 0; k < s->ncont; k++) xs[k] = gsl_vector_get(x, (size_t)k);
  double v = evaluate_at(s, xs);
  return isfinite(v) ? v : PT_TUNE_WORST; /* GSL reports a non-finite value through its handler */
}

/*
 * The probe grid: L levels per continuous parameter at the middles of L equal
 * parts of its search range, L^ncont points with L at most 5 and the grid at
 * most PROBE_MAX points (L at least 2; with many parameters, its first
 * PROBE_MAX points).  Point i into x; 0, or -1 past the end.
 */
#define PROBE_MAX 32
static int probe_point(const search *s, int i, double *x) {
  int levels = 5;
  while (levels > 2 && pow(levels, s->ncont) > PROBE_MAX) levels--;
  if (i >= PROBE_MAX || i >= pow(levels, s->ncont)) return -1;
  for (int k = 0; k < s->ncont; k++, i /= levels) {
    const pt_tune_param *p = &s->params[s->cont[k]];
    double lo = to_space(p, p->lo), hi = to_space(p, p->hi);
    x[k] = lo + (hi - lo) * (i % levels + 0.5) / levels;
  }
  return 0;
}

/* Replace an infeasible start x by the next probe point with a finite value; -1 when none is left. */
static int feasible_start(search *s, double *x) {
  while (s->rc == 0 && s->evaluations < s->budget && isfinite(evaluate_at(s, x)) == 0) {
    if (probe_point(s, s->probe_next++, x) < 0) return -1;
  }
  return s->rc == 0 && s->evaluations < s->budget ? 0 : -1;
}

/* Nelder–Mead from x0 (in search space) until the budget or convergence. */
static void simplex(search *s, const double *x0) {
  size_t n = (size_t)s->ncont;
  if (n == 0) return; /* nothing continuous (GSL refuses a 0-vector through its handler) */
  gsl_vector *x = gsl_vector_alloc(n), *step = gsl_vector_alloc(n);
  gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, n);
  if (!x || !step || !m) {
    s->rc = pt_err_set(s->err, PT_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t k = 0; k < n; k++) {
    const pt_tune_param *p = &s->params[s->cont[k]];
    gsl_vector_set(x, k, x0[k]);
    gsl_vector_set(step, k, (to_space(p, p->hi) - to_space(p, p->lo)) / 4);
  }
  gsl_multimin_function f = {nm_f, n, s};
  if (gsl_multimin_fminimizer_set(m, &f, x, step) != GSL_SUCCESS) goto out;
  for (int iter = 0; iter < 1000 && s->rc == 0 && s->evaluations < s->budget; iter++) {
    if (gsl_multimin_fminimizer_iterate(m) != GSL_SUCCESS) break;
    if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(m), 1e-3) == GSL_SUCCESS) break;
  }
out:
  gsl_multimin_fminimizer_free(m);
  gsl_vector_free(x);
  gsl_vector_free(step);
}

/* Choice c of p into point: a number or a list. */
static void set_choice(pt_params *point, const pt_tune_param *p, int c) {
  if (p->choice_lists && p->choice_lists[c].n) pt_params_set_list(point, p->name, &p->choice_lists[c]);
  else pt_params_set(point, p->name, p->choices[c]);
}

/* Recurse over grid parameters; at each full grid point run the starts. */
static void grid(search *s, int i, const pt_tune_opts *o, gsl_rng *rng) {
  if (s->rc < 0 || s->evaluations >= s->budget) return;
  if (i == s->nparams) {
    if (!s->ncont) {
      evaluate(s);
      return;
    }
    s->probe_next = 0;
    for (int start = 0; start < o->starts && s->rc == 0 && s->evaluations < s->budget; start++) {
      double x0[PT_MAX_PARAMS];
      for (int k = 0; k < s->ncont; k++) {
        const pt_tune_param *p = &s->params[s->cont[k]];
        double lo = to_space(p, p->lo), hi = to_space(p, p->hi);
        x0[k] = start == 0 ? to_space(p, p->dflt) : lo + (hi - lo) * gsl_rng_uniform(rng);
        if (!isfinite(x0[k])) x0[k] = (lo + hi) / 2;
      }
      if (feasible_start(s, x0) == 0) simplex(s, x0);
    }
    return;
  }
  const pt_tune_param *p = &s->params[i];
  if (p->nchoices <= 0) {
    grid(s, i + 1, o, rng);
    return;
  }
  for (int c = 0; c < p->nchoices; c++) {
    set_choice(&s->point, p, c);
    grid(s, i + 1, o, rng);
  }
}

/*
 * Points made ahead (pt_tune_opts.prefetch, tune -j N).  The search is a row
 * of chains, one per start at each grid point (the feasible start, then its
 * simplex), whose points depend on each other's only through the budget, the
 * memo (which changes no value) and the probe grid's cursor.  So each chain
 * is run ahead on its own, in a thread of its own, on a search of its own:
 * when it needs a value nobody has made, it waits; when every chain running
 * waits or is done, their points (earlier chains first) are made as one
 * batch, side by side, and the chains go on.  At most `parallel` chains run
 * at once, in the search's order, and at most twice the budget is made.
 * Then the real search runs as it always does, asking eval for every point:
 * a point made ahead is one eval finds made (the caller keeps them), any
 * other it makes then.  Nothing the chains did changes what it asks.
 */
typedef struct ahead ahead;

typedef struct chain {
  search *s;             /* while it runs: its own memo and budget; eval: chain_eval */
  pt_params at;          /* the grid point */
  double x0[PT_MAX_PARAMS];
  int waiting, done, started;
  pt_params want;
  ahead *a;
  pthread_t th;
  pt_err err;            /* its search's own */
  pt_tune_result best;   /* its search's own best, unused */
} chain;

struct ahead {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pt_params *known;      /* made, with their values */
  double *value;
  int nknown, max;
  int stop;              /* no more is made: waiting chains end */
};

/* A chain's eval: a made value, or wait for the next batch (PT_ELIMIT once no more is made). */
static int chain_eval(void *ctx, const pt_params *p, double *v, pt_err *err) {
  chain *c = ctx;
  ahead *a = c->a;
  pthread_mutex_lock(&a->mu);
  int rc = 0;
  for (;;) {
    int i = 0;
    while (i < a->nknown && !pt_params_equal(&a->known[i], p)) i++;
    if (i < a->nknown) {
      *v = a->value[i];
      break;
    }
    if (a->stop) {
      rc = PT_ELIMIT;
      break;
    }
    c->want = *p;
    c->waiting = 1;
    pthread_cond_broadcast(&a->cv);
    while (c->waiting && !a->stop) pthread_cond_wait(&a->cv, &a->mu);
  }
  c->waiting = 0;
  pthread_mutex_unlock(&a->mu);
  return rc;
}

static void *chain_run(void *arg) {
  chain *c = arg;
  search *s = c->s;
  s->point = c->at;
  if (!s->ncont) {
    evaluate(s);
  } else if (feasible_start(s, c->x0) == 0) {
    simplex(s, c->x0);
  }
  pthread_mutex_lock(&c->a->mu);
  c->done = 1;
  pthread_cond_broadcast(&c->a->cv);
  pthread_mutex_unlock(&c->a->mu);
  return NULL;
}

/* The chains in the search's order: grid()'s walk, each start's x0 drawn from rng as grid draws them. */
static void chains_of(search *s, int i, const pt_tune_opts *o, gsl_rng *rng, chain **cs, int *n, int max) {
  if (*n >= max) return;
  if (i == s->nparams) {
    for (int start = 0; start < (s->ncont ? o->starts : 1) && *n < max; start++) {
      chain *c = cs[(*n)++];
      c->at = s->point;
      for (int k = 0; k < s->ncont; k++) {
        const pt_tune_param *p = &s->params[s->cont[k]];
        double lo = to_space(p, p->lo), hi = to_space(p, p->hi);
        c->x0[k] = start == 0 ? to_space(p, p->dflt) : lo + (hi - lo) * gsl_rng_uniform(rng);
        if (!isfinite(c->x0[k])) c->x0[k] = (lo + hi) / 2;
      }
    }
    return;
  }
  const pt_tune_param *p = &s->params[i];
  if (p->nchoices <= 0) {
    chains_of(s, i + 1, o, rng, cs, n, max);
    return;
  }
  for (int c = 0; c < p->nchoices; c++) {
    pt_params_set(&s->point, p->name, p->choices[c]);
    chains_of(s, i + 1, o, rng, cs, n, max);
  }
}

/* Run the chains ahead (see above), handing o->prefetch the points they wait for; s is left as it was. */
static int run_ahead(search *s, const pt_tune_opts *o) {
  int maxc = o->budget < 1024 ? o->budget : 1024, nc = 0, width = o->parallel > 1 ? o->parallel : 2;
  chain **cs = calloc((size_t)maxc, sizeof *cs);
  ahead a = {.max = 2 * o->budget < 8192 ? 2 * o->budget : 8192};
  a.known = calloc((size_t)a.max, sizeof *a.known);
  a.value = calloc((size_t)a.max, sizeof *a.value);
  pt_params *batch = calloc((size_t)width, sizeof *batch);
  double *vals = calloc((size_t)width, sizeof *vals);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  int rc = cs && a.known && a.value && batch && vals && rng ? 0 : pt_err_set(s->err, PT_ENOMEM, "out of memory");
  for (int i = 0; rc == 0 && i < maxc; i++)
    if (!(cs[i] = calloc(1, sizeof *cs[i]))) rc = pt_err_set(s->err, PT_ENOMEM, "out of memory");
  pt_params at = s->point;
  if (rc == 0) {
    gsl_rng_set(rng, o->seed);
    chains_of(s, 0, o, rng, cs, &nc, maxc);
  }
  s->point = at;
  pthread_mutex_init(&a.mu, NULL);
  pthread_cond_init(&a.cv, NULL);
  int next = 0; /* the next chain to start */
  while (rc == 0) {
    pthread_mutex_lock(&a.mu);
    int live = 0, busy;
    for (int i = 0; i < next; i++) live += !cs[i]->done;
    while (next < nc && live < width) { /* start chains up to the width */
      chain *c = cs[next++];
      if (!(c->s = malloc(sizeof *c->s))) { /* the memo is large (its pages are touched as it fills) */
        rc = pt_err_set(s->err, PT_ENOMEM, "out of memory");
        break;
      }
      memcpy(c->s, s, offsetof(search, seen)); /* the search's settings; an empty memo */
      c->s->eval = chain_eval;
      c->s->ctx = c;
      c->s->err = &c->err;
      c->s->out = &c->best;
      c->best.best_value = HUGE_VAL;
      c->s->nseen = c->s->evaluations = c->s->rc = c->s->probe_next = 0;
      c->a = &a;
      if (pthread_create(&c->th, NULL, chain_run, c) != 0) {
        rc = pt_err_set(s->err, PT_ENOMEM, "cannot start a thread");
        break;
      }
      c->started = 1;
      live++;
    }
    do { /* until every chain running waits or is done */
      busy = 0;
      for (int i = 0; i < next; i++) busy += cs[i]->started && !cs[i]->done && !cs[i]->waiting;
      if (busy) pthread_cond_wait(&a.cv, &a.mu);
    } while (busy);
    int n = 0;
    for (int i = 0; i < next && n < width; i++) { /* the waiting chains' points, earlier chains first */
      chain *c = cs[i];
      if (!c->waiting) continue;
      int dup = 0;
      for (int k = 0; k < n && !dup; k++) dup = pt_params_equal(&batch[k], &c->want);
      if (!dup) batch[n++] = c->want;
    }
    if (n > a.max - a.nknown) n = a.max - a.nknown;
    int all_done = 1;
    for (int i = 0; i < next; i++) all_done &= cs[i]->done;
    if (rc < 0 || n <= 0) {
      if (all_done && next >= nc) {
        pthread_mutex_unlock(&a.mu);
        break;
      }
      if (n <= 0 && !all_done) { /* room for no more: the waiting chains end */
        a.stop = 1;
        pthread_cond_broadcast(&a.cv);
        pthread_mutex_unlock(&a.mu);
        break;
      }
      pthread_mutex_unlock(&a.mu);
      continue;
    }
    pthread_mutex_unlock(&a.mu);
    rc = o->prefetch(s->ctx, batch, n, vals, s->err); /* the workers make them, side by side */
    pthread_mutex_lock(&a.mu);
    for (int k = 0; rc == 0 && k < n; k++) {
      a.known[a.nknown] = batch[k];
      a.value[a.nknown++] = isnan(vals[k]) ? HUGE_VAL : vals[k];
    }
    for (int i = 0; i < next; i++) cs[i]->waiting = 0; /* each looks again: made, or waits for the next batch */
    if (rc < 0) a.stop = 1;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
  }
  pthread_mutex_lock(&a.mu);
  a.stop = 1;
  pthread_cond_broadcast(&a.cv);
  pthread_mutex_unlock(&a.mu);
  for (int i = 0; cs && i < nc; i++)
    if (cs[i] && cs[i]->started) {
      pthread_join(cs[i]->th, NULL);
      free(cs[i]->s);
    }
  pthread_mutex_destroy(&a.mu);
  pthread_cond_destroy(&a.cv);
  for (int i = 0; cs && i < maxc; i++) free(cs[i]);
  free(cs);
  free(a.known);
  free(a.value);
  free(batch);
  free(vals);
  if (rng) gsl_rng_free(rng);
  return rc;
}

int pt_tune(const pt_tune_param *params, int nparams, const pt_tune_opts *opts, pt_tune_eval eval, void *ctx,
            pt_err *err, pt_tune_result *out) {
  memset(out, 0, sizeof *out);
  out->best_value = HUGE_VAL;
  pt_tune_opts o = {.budget = 60, .starts = 3, .seed = 1};
  if (opts) {
    if (opts->budget > 0) o.budget = opts->budget;
    if (opts->starts > 0) o.starts = opts->starts;
    o.seed = opts->seed;
    o.prefetch = opts->prefetch;
    o.parallel = opts->parallel;
  }
  if (nparams > PT_MAX_PARAMS) return pt_err_set(err, PT_ELIMIT, "too many parameters (%d)", nparams);
  search *s = calloc(1, sizeof *s); /* large (the memo), so on the heap */
  if (!s) return pt_err_set(err, PT_ENOMEM, "out of memory");
  s->params = params;
  s->nparams = nparams;
  s->eval = eval;
  s->ctx = ctx;
  s->err = err;
  s->budget = o.budget;
  s->out = out;
  int rc = 0;
  for (int i = 0; i < nparams && rc == 0; i++) {
    const pt_tune_param *p = &params[i];
    if (p->nchoices <= 0) {
      if (!(p->lo <= p->hi) || (p->log_scale && p->lo <= 0)) {
        rc = pt_err_set(err, PT_EUSAGE, "parameter %s: bad range [%g, %g]%s", p->name, p->lo, p->hi,
                        p->log_scale ? " for a log scale" : "");
        break;
      }
      if (p->lo == p->hi) { /* nothing to search: fixed */
        pt_params_set(&s->point, p->name, p->lo);
        continue;
      }
      s->cont[s->ncont++] = i;
    }
    if (p->nchoices > 0) set_choice(&s->point, p, 0);
    else pt_params_set(&s->point, p->name, p->dflt);
  }
  gsl_rng *rng = rc == 0 ? gsl_rng_alloc(gsl_rng_mt19937) : NULL;
  if (rc == 0 && !rng) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  if (rc == 0 && o.prefetch) rc = run_ahead(s, &o);
  if (rc == 0) {
    gsl_rng_set(rng, o.seed);
    grid(s, 0, &o, rng);
    out->evaluations = s->evaluations;
    rc = s->rc;
  }
  if (rng) gsl_rng_free(rng);
  free(s);
  if (rc < 0) return rc;
  if (!isfinite(out->best_value))
    return pt_err_set(err, PT_ENOTFOUND, "none of the %d points evaluated has a finite objective", out->evaluations);
  return 0;
}
