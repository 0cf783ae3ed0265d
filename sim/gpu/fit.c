/* fit.c — cost and bookkeeping lines from measured sums (see fit.h). */
#include "fit.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int class_of(uint64_t n, uint64_t bytes) {
  uint64_t mean = n ? bytes / n : 0;
  return 63 - __builtin_clzll(mean | 1);
}

/* A measured call point's kind, class, count and time checked: 0, or the error. */
static int check_call(int cls, int c, uint64_t n, double us, pt_err *err) {
  if (c < 0 || c >= PT_DRV_NCALLS || cls < 0 || cls >= PT_REQ_CLASSES)
    return pt_err_set(err, PT_EUSAGE, "no such driver call or request class");
  if (!n || !(us >= 0)) return pt_err_set(err, PT_EFORMAT, "a measured cost needs calls > 0 and a time >= 0");
  return 0;
}

int pt_cost_fit_call(pt_cost_fit *f, int cls, int c, uint64_t n, uint64_t bytes, double us, pt_err *err) {
  int rc = check_call(cls, c, n, us, err);
  if (rc < 0) return rc;
  pt_fit_sum *s = &f->call[cls][c][class_of(n, bytes)];
  s->n += n;
  s->bytes += bytes;
  s->us += us;
  return 0;
}

int pt_cost_fit_call_after(pt_cost_fit *f, int cls, int c, uint64_t n, uint64_t bytes, double us, pt_err *err) {
  int rc = check_call(cls, c, n, us, err);
  if (rc < 0) return rc;
  int k = class_of(n, bytes);
  pt_fit_sum *s = &f->call[cls][c][k], *a = &f->after[c][k];
  if (n > s->n || bytes > s->bytes) /* a subset of the class's calls, which come first (cmd_gpu.c) */
    return pt_err_set(err, PT_EFORMAT, "%s: more calls after a large one (%" PRIu64 ") than calls (%" PRIu64 ") of their "
                      "size class", pt_drv_call_names[c], n, s->n);
  s->n -= n;
  s->bytes -= bytes;
  s->us -= us;
  a->n += n;
  a->bytes += bytes;
  a->us += us;
  return 0;
}

/* The index of mech in f (added when new, if add), or a negative code (err set when add). */
static int mech_index(pt_cost_fit *f, const char *mech, int add, pt_err *err) {
  int m = 0;
  while (m < f->nmech && strcmp(f->mech[m].name, mech)) m++;
  if (m == f->nmech) {
    if (!add) return PT_ENOTFOUND;
    if (m == PT_FIT_MECHS || strlen(mech) >= sizeof f->mech[0].name || !mech[0] || strpbrk(mech, " \t\n#"))
      return pt_err_set(err, PT_EFORMAT, "mechanism '%s': not a name a description can hold", mech);
    snprintf(f->mech[m].name, sizeof f->mech[m].name, "%s", mech);
    f->nmech++;
  }
  return m;
}

int pt_cost_fit_requests(pt_cost_fit *f, const char *mech, int cls, int with_calls, uint64_t n, uint64_t bytes, double us,
                         pt_err *err) {
  if (cls < 0 || cls >= PT_REQ_CLASSES) return pt_err_set(err, PT_EUSAGE, "no such request class");
  if (!n) return pt_err_set(err, PT_EFORMAT, "measured requests need a count > 0");
  int m = mech_index(f, mech, 1, err);
  if (m < 0) return m;
  pt_fit_sum *s = &(with_calls ? f->mech[m].req_call : f->mech[m].req)[cls][class_of(n, bytes)];
  s->n += n;
  s->bytes += bytes;
  s->us += us;
  return 0;
}

#define T PT_FIT_WORK_TERMS

int pt_cost_fit_work(pt_cost_fit *f, const char *mech, const pt_work_counts *c, double own_us, pt_err *err) {
  if (own_us != own_us) return pt_err_set(err, PT_EFORMAT, "a measured own work that is not a number");
  int m = mech_index(f, mech, 1, err);
  if (m < 0) return m;
  if (!(own_us > 0)) {
    f->work_skipped++;
    return 0;
  }
  double x[T] = {(double)c->requests / own_us, (double)c->ops / own_us, (double)c->chunks / own_us,
                 (double)c->visits / own_us};
  for (int i = 0; i < T; i++) {
    f->mech[m].xty[i] += x[i];
    for (int j = 0; j < T; j++) f->mech[m].xtx[i][j] += x[i] * x[j];
  }
  f->mech[m].nwork++;
  return 0;
}

/* The least-squares coefficients of the terms in use (use[k]) into b; 0, or -1 when the system is singular (a
   term the others determine).  Gaussian elimination with partial pivoting: T unknowns at most. */
static int solve_terms(const double xtx[T][T], const double xty[T], const int use[T], double b[T]) {
  double a[T][T + 1];
  int idx[T], n = 0;
  for (int k = 0; k < T; k++)
    if (use[k]) idx[n++] = k;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) a[i][j] = xtx[idx[i]][idx[j]];
    a[i][n] = xty[idx[i]];
  }
  for (int col = 0; col < n; col++) {
    int piv = col;
    for (int i = col + 1; i < n; i++)
      if (fabs(a[i][col]) > fabs(a[piv][col])) piv = i;
    if (!(fabs(a[piv][col]) > 1e-12 * fabs(xtx[idx[col]][idx[col]]))) return -1;
    for (int j = 0; j <= n; j++) {
      double t = a[col][j];
      a[col][j] = a[piv][j];
      a[piv][j] = t;
    }
    for (int i = 0; i < n; i++)
      if (i != col) {
        double q = a[i][col] / a[col][col];
        for (int j = col; j <= n; j++) a[i][j] -= q * a[col][j];
      }
  }
  for (int k = 0; k < T; k++) b[k] = 0;
  for (int i = 0; i < n; i++) b[idx[i]] = a[i][n] / a[i][i];
  return 0;
}

/*
 * Non-negative least squares by every subset of the terms: the least-squares fit on each subset whose
 * coefficients are all >= 0 is a candidate, and the one of the smallest residual is the answer (the
 * non-negative optimum is such a fit, on the terms it leaves above 0).  2^T - 1 small solves.  The residual
 * from the normal equations: sum (1 - x.b)^2 = n - 2 b.xty + b.xtx.b.
 */
int pt_cost_fit_work_solve(const pt_cost_fit *f, const char *mech, pt_cost_work *out, pt_err *err) {
  int m = mech_index((pt_cost_fit *)f, mech, 0, err);
  if (m < 0 || !f->mech[m].nwork) return pt_err_set(err, PT_ENOTFOUND, "%s: no run to fit its work by", mech);
  const double(*xtx)[T] = f->mech[m].xtx, *xty = f->mech[m].xty;
  double best[T] = {0}, best_res = INFINITY;
  for (unsigned set = 1; set < 1u << T; set++) {
    int use[T], ok = 1;
    double b[T], res = (double)f->mech[m].nwork;
    for (int k = 0; k < T; k++) ok &= !(use[k] = (set >> k) & 1) || xtx[k][k] > 0; /* a term no run has is no term */
    if (!ok || solve_terms(xtx, xty, use, b) < 0) continue;                        /* or one the others determine */
    for (int k = 0; k < T; k++) ok &= b[k] >= 0;
    if (!ok) continue;
    for (int i = 0; i < T; i++) {
      res -= 2 * b[i] * xty[i];
      for (int j = 0; j < T; j++) res += b[i] * xtx[i][j] * b[j];
    }
    if (res < best_res) {
      best_res = res;
      memcpy(best, b, sizeof best);
    }
  }
  if (best_res == INFINITY) return pt_err_set(err, PT_EFORMAT, "%s: no non-negative costs fit its runs' work", mech);
  *out = (pt_cost_work){best[0], best[1], best[2], best[3]};
  return 0;
}

/* Classes with fewer calls than this are left out when others have as many: one slow call (a driver's
   first of a size) is not a class's cost. */
#define MIN_SAMPLES 5

static int enough(const pt_fit_sum *s, int k) {
  if (s[k].n >= MIN_SAMPLES) return 1;
  for (int j = 0; j < PT_SIZE_CLASSES; j++)
    if (s[j].n >= MIN_SAMPLES) return 0;
  return s[k].n > 0; /* none has enough: every class measured */
}

/* The points of sums s (each class's mean, a time below 1 ns written as 1 ns: a point's time must be > 0, and
   own work can measure 0 at the clock's grain), with base's (the description's own points for the same kind,
   or NULL) kept below and above the sizes measured: where a replay says nothing, the calibration still does. */
static double mean_bytes(const pt_fit_sum *s) { /* whole bytes, as written: a base's point is never the same size */
  return floor((double)s->bytes / (double)s->n + 0.5);
}

static void fitted_points(const pt_fit_sum *s, const pt_cost_points *base, pt_cost_points *p /* OUT */) {
  double lo = -1, hi = -1;
  p->n = 0;
  for (int k = 0; k < PT_SIZE_CLASSES; k++)
    if (enough(s, k)) {
      double b = mean_bytes(&s[k]);
      if (lo < 0) lo = b;
      hi = b;
    }
  for (size_t i = 0; base && i < base->n && p->n < PT_COST_MAX_POINTS; i++)
    if (base->bytes[i] < lo) p->bytes[p->n] = base->bytes[i], p->us[p->n++] = base->us[i];
  for (int k = 0; k < PT_SIZE_CLASSES && p->n < PT_COST_MAX_POINTS; k++)
    if (enough(s, k)) {
      double us = s[k].us / (double)s[k].n;
      p->bytes[p->n] = mean_bytes(&s[k]);
      p->us[p->n++] = us > 0.001 ? us : 0.001;
    }
  for (size_t i = 0; base && i < base->n && p->n < PT_COST_MAX_POINTS; i++)
    if (base->bytes[i] > hi) p->bytes[p->n] = base->bytes[i], p->us[p->n++] = base->us[i];
}

/* The points as written (%.0f bytes, %.4f us), read back: what a later fit's base is. */
static void write_points(FILE *out, const pt_fit_sum *s, const pt_cost_points *base, pt_cost_points *written /* OUT */) {
  pt_cost_points p;
  fitted_points(s, base, &p);
  if (written) written->n = 0;
  for (size_t i = 0; i < p.n; i++) {
    char b[64], u[64];
    snprintf(b, sizeof b, "%.0f", p.bytes[i]);
    snprintf(u, sizeof u, "%.4f", p.us[i]);
    fprintf(out, " %s:%s", b, u);
    if (written) written->bytes[written->n] = strtod(b, NULL), written->us[written->n++] = strtod(u, NULL);
  }
}

static int any(const pt_fit_sum *s) {
  if (!s) return 0;
  for (int k = 0; k < PT_SIZE_CLASSES; k++)
    if (s[k].n) return 1;
  return 0;
}

/* Whether a call kind has sums in any class, or after a large one. */
static int any_call(const pt_cost_fit *f, int c) {
  for (int cls = 0; cls < PT_REQ_CLASSES; cls++)
    if (any(f->call[cls][c])) return 1;
  return any(f->after[c]);
}

/* Whether the fit writes a host speed other than the base's: the base's bookkeeping_loop points, which hold at
   its speed, are then dropped (a fit on the fitted description would bring them to the speed from the wrong one). */
static int speed_moved(const pt_cost_fit *f) {
  return f->host_clock_read_us != 0 && f->host_clock_read_us != f->base_clock_read_us;
}

/* Whether line (a description's) is one the fit replaces: cost (and cost_repeat) of a measured call,
   bookkeeping lines of a measured mechanism, name or source. */
static int replaced(const pt_cost_fit *f, const char *line) {
  char key[32] = "", what[32] = "";
  if (sscanf(line, " %31s %31s", key, what) < 1) return 0;
  if (!strcmp(key, "source") || !strcmp(key, "name")) return 1;
  if (!strcmp(key, "host_clock_read_us")) return f->host_clock_read_us != 0;
  if (!strcmp(key, "bookkeeping_loop")) return speed_moved(f);
  if (!strcmp(key, "cost") || !strcmp(key, "cost_repeat") || !strcmp(key, "cost_after_large"))
    for (int c = 0; c < PT_DRV_NCALLS; c++)
      if (!strcmp(what, pt_drv_call_names[c])) return any_call(f, c);
  if (!strcmp(key, "bookkeeping_us") || !strcmp(key, "bookkeeping_call_us") || !strcmp(key, "bookkeeping_repeat_us") ||
      !strcmp(key, "bookkeeping_call_repeat_us") || !strcmp(key, "bookkeeping_work"))
    for (int m = 0; m < f->nmech; m++)
      if (!strcmp(what, f->mech[m].name)) return 1;
  return 0;
}

/* One mechanism's two lines of a class: "KEY MECH POINTS" for requests without and with driver calls (a kind
   never seen takes the other's sums; the repeat class, where its sums say nothing, the plain line's points). */
static void write_bookkeeping(FILE *out, const char *mech, const char *key, const char *call_key, const pt_fit_sum *req,
                              const pt_fit_sum *req_call, const pt_cost_points *plain_base, const pt_cost_points *call_base,
                              pt_cost_points *plain_out, pt_cost_points *call_out) {
  const pt_fit_sum *plain = any(req) ? req : req_call, *call = any(req_call) ? req_call : req;
  fprintf(out, "%s %s", key, mech);
  write_points(out, plain, plain_base, plain_out);
  fprintf(out, "\n%s %s", call_key, mech);
  write_points(out, call, call_base, call_out);
  fputc('\n', out);
}

int pt_cost_fit_write(const pt_cost_fit *f, FILE *in, const pt_cost_points base[PT_DRV_NCALLS], FILE *out, const char *name,
                      const char *source, pt_err *err) {
  char line[4096];
  if (!name[0] || strpbrk(name, " \t\n#/")) return pt_err_set(err, PT_EUSAGE, "'%s' is not a GPU description's name", name);
  fprintf(out, "name %s\n", name);
  while (fgets(line, sizeof line, in)) {
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n') return pt_err_set(err, PT_EFORMAT, "description: line too long");
    if (!replaced(f, line)) fputs(line, out);
  }
  if (ferror(in)) return pt_err_set(err, PT_EIO, "description: read failed");
  fprintf(out, "# Fitted by pagetune gpu fit from %u real-mechanism replay(s): each point a size class's mean,\n"
               "# measured in context (pagetune replay --mechanism), classes of %d calls or more; a call's\n"
               "# calibration points kept below and above the sizes the replays measured; the *_repeat lines\n"
               "# (requests whose size was freed among the last few frees) and cost_after_large (calls below\n"
               "# 1 MiB within 8 calls of a larger one, of either class) the plain line's outside theirs.\n",
          f->runs, MIN_SAMPLES);
  if (f->host_clock_read_us > 0) {
    fprintf(out, "# Every replay's times brought to this host speed: scaled by it over the replay's own clock read.\n");
    if (f->base_clock_read_us > 0 && f->base_clock_read_us != f->host_clock_read_us)
      fprintf(out, "# The lines kept from the base hold at its speed, %.6g us a read.\n", f->base_clock_read_us);
    else if (!(f->base_clock_read_us > 0))
      fprintf(out, "# The lines kept from the base hold at whatever speed it was measured at (it names none).\n");
    fprintf(out, "host_clock_read_us %.6g\n", f->host_clock_read_us);
    if (speed_moved(f) && f->base_clock_read_us > 0)
      fprintf(out, "# The base's bookkeeping_loop lines, if any, are left out: they hold at its speed.\n");
  }
  for (int m = 0; m < f->nmech; m++)
    if (f->mech[m].nwork) {
      fprintf(out, "# bookkeeping_work: own work = REQ_US x requests + OP_US x free-set operations + CHUNK_US x chunks\n"
                   "# at inserts + VISIT_US x keys and blocks looked at, by least squares on the relative error over\n"
                   "# the runs (gpu fit --work) and %u of the base's bookkeeping_loop points (calibrate's cached\n"
                   "# allocate + free loop, a request's time plus one clock read)%s.\n",
              f->loop_points, f->loop_skipped ? "; some left out: the base names no host speed" : "");
      break;
    }
  for (int c = 0; c < PT_DRV_NCALLS; c++) {
    if (!any_call(f, c)) continue;
    pt_cost_points plain;
    const pt_fit_sum *s = any(f->call[PT_REQ_OTHER][c])    ? f->call[PT_REQ_OTHER][c]
                          : any(f->call[PT_REQ_REPEAT][c]) ? f->call[PT_REQ_REPEAT][c]
                                                           : f->after[c]; /* every call after a large one */
    fprintf(out, "cost %s", pt_drv_call_names[c]);
    write_points(out, s, base ? &base[c] : NULL, &plain);
    fputc('\n', out);
    if (any(f->call[PT_REQ_REPEAT][c])) {
      fprintf(out, "cost_repeat %s", pt_drv_call_names[c]);
      write_points(out, f->call[PT_REQ_REPEAT][c], &plain, NULL);
      fputc('\n', out);
    }
    if (any(f->after[c])) {
      fprintf(out, "cost_after_large %s", pt_drv_call_names[c]);
      write_points(out, f->after[c], &plain, NULL);
      fputc('\n', out);
    }
  }
  for (int m = 0; m < f->nmech; m++) {
    const char *mech = f->mech[m].name;
    const pt_fit_sum *req = f->mech[m].req[PT_REQ_OTHER], *req_call = f->mech[m].req_call[PT_REQ_OTHER];
    const pt_fit_sum *rep = f->mech[m].req[PT_REQ_REPEAT], *rep_call = f->mech[m].req_call[PT_REQ_REPEAT];
    if (!any(req) && !any(req_call)) req = rep, req_call = rep_call; /* only repeats seen: they are the plain lines */
    if (f->mech[m].nwork) {
      pt_cost_work w;
      int rc = pt_cost_fit_work_solve(f, mech, &w, err);
      if (rc < 0) return rc;
      fprintf(out, "bookkeeping_work %s %.6g %.6g %.6g %.6g\n", mech, w.req_us, w.op_us, w.chunk_us, w.visit_us);
    }
    if (!any(req) && !any(req_call)) continue; /* work runs only */
    pt_cost_points plain, call;
    write_bookkeeping(out, mech, "bookkeeping_us", "bookkeeping_call_us", req, req_call, NULL, NULL, &plain, &call);
    if (req != rep && (any(rep) || any(rep_call)))
      write_bookkeeping(out, mech, "bookkeeping_repeat_us", "bookkeeping_call_repeat_us", rep, rep_call, &plain, &call,
                        NULL, NULL);
  }
  fprintf(out, "source %s\n", source);
  return ferror(out) ? pt_err_set(err, PT_EIO, "write failed") : 0;
}
