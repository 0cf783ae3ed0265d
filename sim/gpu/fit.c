/* fit.c — cost and bookkeeping lines from measured sums (see fit.h). */
#include "fit.h"

#include <string.h>

static int class_of(uint64_t n, uint64_t bytes) {
  uint64_t mean = n ? bytes / n : 0;
  return 63 - __builtin_clzll(mean | 1);
}

int pt_cost_fit_call(pt_cost_fit *f, int c, uint64_t n, uint64_t bytes, double us, pt_err *err) {
  if (c < 0 || c >= PT_DRV_NCALLS) return pt_err_set(err, PT_EUSAGE, "no such driver call");
  if (!n || !(us >= 0)) return pt_err_set(err, PT_EFORMAT, "a measured cost needs calls > 0 and a time >= 0");
  pt_fit_sum *s = &f->call[c][class_of(n, bytes)];
  s->n += n;
  s->bytes += bytes;
  s->us += us;
  return 0;
}

int pt_cost_fit_requests(pt_cost_fit *f, const char *mech, int with_calls, uint64_t n, uint64_t bytes, double us,
                         pt_err *err) {
  if (!n) return pt_err_set(err, PT_EFORMAT, "measured requests need a count > 0");
  int m = 0;
  while (m < f->nmech && strcmp(f->mech[m].name, mech)) m++;
  if (m == f->nmech) {
    if (m == PT_FIT_MECHS || strlen(mech) >= sizeof f->mech[0].name || !mech[0] || strpbrk(mech, " \t\n#"))
      return pt_err_set(err, PT_EFORMAT, "mechanism '%s': not a name a description can hold", mech);
    snprintf(f->mech[m].name, sizeof f->mech[m].name, "%s", mech);
    f->nmech++;
  }
  pt_fit_sum *s = &(with_calls ? f->mech[m].req_call : f->mech[m].req)[class_of(n, bytes)];
  s->n += n;
  s->bytes += bytes;
  s->us += us;
  return 0;
}

/* The points of sums by class: "BYTES:US ...", each class's mean; a time below 1 ns is written as 1 ns
   (a point's time must be > 0: own work can measure 0 at the clock's grain). */
/* Classes with fewer calls than this are left out when others have as many: one slow call (a driver's
   first of a size) is not a class's cost. */
#define MIN_SAMPLES 5

static int enough(const pt_fit_sum *s, int k) {
  if (s[k].n >= MIN_SAMPLES) return 1;
  for (int j = 0; j < PT_SIZE_CLASSES; j++)
    if (s[j].n >= MIN_SAMPLES) return 0;
  return s[k].n > 0; /* none has enough: every class measured */
}

/* base: the description's own points for the same kind, kept below and above the sizes measured (where a
   replay says nothing, the calibration still does); NULL for none. */
static void write_points(FILE *out, const pt_fit_sum *s, const pt_cost_points *base) {
  double lo = -1, hi = -1;
  for (int k = 0; k < PT_SIZE_CLASSES; k++)
    if (enough(s, k)) {
      double b = (double)s[k].bytes / (double)s[k].n;
      if (lo < 0) lo = b;
      hi = b;
    }
  for (size_t i = 0; base && i < base->n; i++)
    if (base->bytes[i] < lo) fprintf(out, " %.0f:%.4f", base->bytes[i], base->us[i]);
  for (int k = 0; k < PT_SIZE_CLASSES; k++)
    if (enough(s, k)) {
      double us = s[k].us / (double)s[k].n;
      fprintf(out, " %.0f:%.4f", (double)s[k].bytes / (double)s[k].n, us > 0.001 ? us : 0.001);
    }
  for (size_t i = 0; base && i < base->n; i++)
    if (base->bytes[i] > hi) fprintf(out, " %.0f:%.4f", base->bytes[i], base->us[i]);
}

static int any(const pt_fit_sum *s) {
  for (int k = 0; k < PT_SIZE_CLASSES; k++)
    if (s[k].n) return 1;
  return 0;
}

/* Whether line (a description's) is one the fit replaces: cost of a measured call, bookkeeping_us of a
   measured mechanism, name or source. */
static int replaced(const pt_cost_fit *f, const char *line) {
  char key[32] = "", what[32] = "";
  if (sscanf(line, " %31s %31s", key, what) < 1) return 0;
  if (!strcmp(key, "source") || !strcmp(key, "name")) return 1;
  if (!strcmp(key, "cost"))
    for (int c = 0; c < PT_DRV_NCALLS; c++)
      if (!strcmp(what, pt_drv_call_names[c])) return any(f->call[c]);
  if (!strcmp(key, "bookkeeping_us") || !strcmp(key, "bookkeeping_call_us"))
    for (int m = 0; m < f->nmech; m++)
      if (!strcmp(what, f->mech[m].name)) return 1;
  return 0;
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
               "# calibration points kept below and above the sizes the replays measured.\n",
          f->runs, MIN_SAMPLES);
  for (int c = 0; c < PT_DRV_NCALLS; c++)
    if (any(f->call[c])) {
      fprintf(out, "cost %s", pt_drv_call_names[c]);
      write_points(out, f->call[c], base ? &base[c] : NULL);
      fputc('\n', out);
    }
  for (int m = 0; m < f->nmech; m++) { /* a kind of request never seen takes the other's points */
    const pt_fit_sum *plain = any(f->mech[m].req) ? f->mech[m].req : f->mech[m].req_call;
    const pt_fit_sum *call = any(f->mech[m].req_call) ? f->mech[m].req_call : f->mech[m].req;
    fprintf(out, "bookkeeping_us %s", f->mech[m].name);
    write_points(out, plain, NULL);
    fprintf(out, "\nbookkeeping_call_us %s", f->mech[m].name);
    write_points(out, call, NULL);
    fputc('\n', out);
  }
  fprintf(out, "source %s\n", source);
  return ferror(out) ? pt_err_set(err, PT_EIO, "write failed") : 0;
}
