/*
 * confirm.c — the measurement file, the bootstrap interval and the verdict
 * of `pagetune confirm` (see confirm.h).
 *
 * The bootstrap draws its indices from splitmix64 (Steele, Lea and Flood's
 * generator, the one java.util.SplittableRandom uses), scaled into [0, n)
 * by Lemire's multiply-shift: a few lines, the same numbers on every
 * platform and library version, so a seed names an interval for good.
 */
#include "confirm.h"
#include "file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"

const char *pt_confirm_arm_name(pt_confirm_arm a) { return a == PT_CONFIRM_TUNED ? "tuned" : "baseline"; }

static const char *const verdict_names[PT_CONFIRM_NVERDICTS] = {"confirmed", "refuted", "within noise", "no prediction",
                                                                "not measured"};

const char *pt_confirm_verdict_name(pt_confirm_verdict v) {
  return (unsigned)v < PT_CONFIRM_NVERDICTS ? verdict_names[v] : "?";
}

int pt_confirm_verdict_parse(const char *s) {
  for (int i = 0; s && i < PT_CONFIRM_NVERDICTS; i++)
    if (!strcmp(s, verdict_names[i])) return i;
  return -1;
}

/* ---- the measurement file ----------------------------------------------------------- */

void pt_confirm_measure_free(pt_confirm_measure *m) {
  if (!m) return;
  free(m->steps_s);
  m->steps_s = NULL;
  m->nsteps = 0;
}

/* The whole file into a NUL-terminated buffer; *buf NULL (and 0) when it does not exist. */
static int slurp(const char *path, char **buf, size_t *len, pt_err *err) {
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return 0;
    return pt_err_set(err, PT_EIO, "%s: cannot open: %s", path, strerror(errno));
  }
  int rc = pt_file_read_all(f, path, PT_CONFIRM_MAX_BYTES, buf, len, err);
  fclose(f);
  return rc;
}

/* A member that may be absent or null: NULL then. */
static const pt_jr_val *member(const pt_jr_val *obj, const char *key) {
  const pt_jr_val *v = pt_jr_get(obj, key);
  return pt_jr_type(v) == PT_JR_NULL ? NULL : v;
}

static int push_step(pt_confirm_measure *m, size_t *cap, double v) {
  if (m->nsteps == *cap) {
    size_t ncap = *cap ? 2 * *cap : 64;
    double *nv = realloc(m->steps_s, ncap * sizeof *nv);
    if (!nv) return -1;
    m->steps_s = nv;
    *cap = ncap;
  }
  m->steps_s[m->nsteps++] = v;
  return 0;
}

/* One line's object into m. */
static int read_line(const char *path, int line, const char *text, size_t len, pt_confirm_measure *m, size_t *cap,
                     pt_err *err) {
  pt_jr_doc *doc;
  pt_err jerr;
  int rc = pt_jr_parse(text, len, NULL, &doc, &jerr);
  if (rc < 0) return pt_err_set(err, rc, "%s: line %d: %s", path, line, jerr.msg);
  const pt_jr_val *o = pt_jr_root(doc), *v;
  if (pt_jr_type(o) != PT_JR_OBJECT) {
    rc = pt_err_set(err, PT_EFORMAT, "%s: line %d: not a JSON object", path, line);
    goto out;
  }
  if ((v = member(o, "allocator"))) {
    const char *s = pt_jr_string(v, NULL);
    if (!s || (strcmp(s, "pytorch") && strcmp(s, "pagetune"))) {
      rc = pt_err_set(err, PT_EFORMAT, "%s: line %d: allocator must be \"pytorch\", \"pagetune\" or null", path, line);
      goto out;
    }
    if (!m->allocator[0]) snprintf(m->allocator, sizeof m->allocator, "%s", s);
    else if (strcmp(m->allocator, s)) snprintf(m->allocator, sizeof m->allocator, "mixed");
  }
  if ((v = member(o, "peak_reserved_bytes"))) {
    const char *t = pt_jr_number_text(v);
    char *end = NULL;
    errno = 0;
    unsigned long long b = t && *t >= '0' && *t <= '9' ? strtoull(t, &end, 10) : 0;
    if (!t || !end || *end || errno || b > INT64_MAX) {
      rc = pt_err_set(err, PT_EFORMAT, "%s: line %d: peak_reserved_bytes must be a whole number of bytes or null", path,
                      line);
      goto out;
    }
    if (!m->has_peak || b > m->peak_reserved_bytes) m->peak_reserved_bytes = b;
    m->has_peak = 1;
  }
  if ((v = member(o, "steps_s"))) {
    if (pt_jr_type(v) != PT_JR_ARRAY) {
      rc = pt_err_set(err, PT_EFORMAT, "%s: line %d: steps_s must be an array of seconds", path, line);
      goto out;
    }
    size_t k = pt_jr_len(v);
    if (k) m->step_processes++;
    for (size_t i = 0; i < k; i++) {
      double s = pt_jr_number(pt_jr_index(v, i));
      if (!(s >= 0) || !isfinite(s)) {
        rc = pt_err_set(err, PT_EFORMAT, "%s: line %d: steps_s[%zu] is not a time in seconds", path, line, i);
        goto out;
      }
      if (m->nsteps == PT_CONFIRM_MAX_STEPS) {
        rc = pt_err_set(err, PT_ELIMIT, "%s: more than %d step times", path, PT_CONFIRM_MAX_STEPS);
        goto out;
      }
      if (push_step(m, cap, s) < 0) {
        rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
        goto out;
      }
    }
  }
  if ((v = member(o, "gpu_name")) && !m->gpu_name[0]) {
    const char *s = pt_jr_string(v, NULL);
    if (!s) {
      rc = pt_err_set(err, PT_EFORMAT, "%s: line %d: gpu_name must be a string or null", path, line);
      goto out;
    }
    snprintf(m->gpu_name, sizeof m->gpu_name, "%s", s);
    for (char *c = m->gpu_name; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  if ((v = member(o, "note")) && !m->note[0]) {
    const char *s = pt_jr_string(v, NULL);
    if (s) snprintf(m->note, sizeof m->note, "%s", s);
    for (char *c = m->note; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  m->processes++;
out:
  pt_jr_free(doc);
  return rc;
}

int pt_confirm_read(const char *path, pt_confirm_measure *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  char *buf;
  size_t len, cap = 0;
  int rc = slurp(path, &buf, &len, err);
  if (rc < 0 || !buf) return rc;
  int line = 0;
  for (size_t i = 0; rc == 0 && i < len;) {
    size_t k = i;
    while (k < len && buf[k] != '\n') k++;
    line++;
    size_t a = i, b = k;
    while (a < b && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r')) a++;
    if (a < b) rc = read_line(path, line, buf + a, b - a, out, &cap, err);
    i = k + 1;
  }
  free(buf);
  if (rc < 0) pt_confirm_measure_free(out);
  return rc;
}

int pt_confirm_steps_json(const double *steps, size_t n, char **out, pt_err *err) {
  size_t cap = 3 + 26 * n;
  char *s = malloc(cap);
  if (!s) return pt_err_set(err, PT_ENOMEM, "out of memory");
  size_t len = 0;
  s[len++] = '[';
  for (size_t i = 0; i < n; i++) len += (size_t)snprintf(s + len, cap - len, "%s%.17g", i ? "," : "", steps[i]);
  s[len++] = ']';
  s[len] = 0;
  *out = s;
  return 0;
}

/* ---- statistics -------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n), which it sorts. */
static double median_sorting(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double pt_confirm_median(const double *v, size_t n) {
  if (!n) return NAN;
  for (size_t i = 0; i < n; i++)
    if (isnan(v[i])) return NAN;
  double *c = malloc(n * sizeof *c);
  if (!c) return NAN;
  memcpy(c, v, n * sizeof *c);
  double m = median_sorting(c, n);
  free(c);
  return m;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* A uniform index in [0, n). */
static size_t draw(uint64_t *x, size_t n) { return (size_t)(((unsigned __int128)splitmix64(x) * n) >> 64); }

/* The median of n draws from v (with replacement), using buf. */
static double resample_median(const double *v, size_t n, uint64_t *x, double *buf) {
  for (size_t i = 0; i < n; i++) buf[i] = v[draw(x, n)];
  return median_sorting(buf, n);
}

static int usable(const double *v, size_t n, int positive) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i]) || (positive ? v[i] <= 0 : v[i] < 0)) return 0;
  return 1;
}

int pt_confirm_bootstrap(const double *base, size_t nb, const double *tuned, size_t nt, unsigned long resamples,
                         uint64_t seed, pt_confirm_gain *g, pt_err *err) {
  g->measured = g->lo = g->hi = g->base_median = g->tuned_median = NAN;
  if (!resamples) return pt_err_set(err, PT_EUSAGE, "confirm: no resamples");
  if (!usable(base, nb, 1) || !usable(tuned, nt, 0)) {
    g->verdict = PT_VERDICT_NOT_MEASURED;
    return 0;
  }
  double *gains = malloc(resamples * sizeof *gains), *buf = malloc((nb > nt ? nb : nt) * sizeof *buf);
  if (!gains || !buf) {
    free(gains);
    free(buf);
    return pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
  }
  double mb = pt_confirm_median(base, nb), mt = pt_confirm_median(tuned, nt);
  uint64_t x = seed;
  for (unsigned long r = 0; r < resamples; r++) {
    double rb = resample_median(base, nb, &x, buf);
    double rt = resample_median(tuned, nt, &x, buf);
    gains[r] = (rb - rt) / rb;
  }
  qsort(gains, resamples, sizeof *gains, cmp_double);
  /* the percentile interval: the values at ranks floor(a R) and ceil((1 - a) R) - 1 (0-based), a = 2.5% */
  double a = (1 - PT_CONFIRM_LEVEL) / 2;
  size_t ilo = (size_t)floor(a * (double)resamples), ihi = (size_t)ceil((1 - a) * (double)resamples);
  if (ihi > 0) ihi--;
  if (ilo >= resamples) ilo = resamples - 1;
  if (ihi >= resamples) ihi = resamples - 1;
  g->base_median = mb;
  g->tuned_median = mt;
  g->measured = (mb - mt) / mb;
  g->lo = gains[ilo];
  g->hi = gains[ihi];
  g->verdict = pt_confirm_judge(g->predicted, g->lo, g->hi);
  free(gains);
  free(buf);
  return 0;
}

pt_confirm_verdict pt_confirm_judge(double p, double lo, double hi) {
  if (isnan(lo) || isnan(hi)) return PT_VERDICT_NOT_MEASURED;
  if (isnan(p)) return PT_VERDICT_NO_PREDICTION;
  if (lo > 0 || hi < 0) return (p > 0 && lo > 0) || (p < 0 && hi < 0) ? PT_VERDICT_CONFIRMED : PT_VERDICT_REFUTED;
  return p < lo || p > hi ? PT_VERDICT_REFUTED : PT_VERDICT_NOISE;
}

double pt_confirm_time_prediction(double base_us, double tuned_us, double base_s) {
  if (isnan(base_us) || isnan(tuned_us) || !(base_s > 0) || !isfinite(base_s)) return NAN;
  return (base_us - tuned_us) * 1e-6 / base_s;
}

double pt_confirm_peak_prediction(uint64_t base_bytes, uint64_t tuned_bytes) {
  if (!base_bytes) return NAN;
  return ((double)base_bytes - (double)tuned_bytes) / (double)base_bytes;
}

void pt_confirm_fmt_gain(char *buf, size_t n, double gain) {
  if (isnan(gain)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%+.2f%%", 100 * gain);
}

void pt_confirm_fmt_interval(char *buf, size_t n, const pt_confirm_gain *g) {
  if (isnan(g->lo)) snprintf(buf, n, "-");
  else snprintf(buf, n, "[%+.2f%%, %+.2f%%]", 100 * g->lo, 100 * g->hi);
}

void pt_confirm_fmt_seconds(char *buf, size_t n, double seconds) {
  if (isnan(seconds)) snprintf(buf, n, "-");
  else if (seconds < 1) snprintf(buf, n, "%.2f ms", seconds * 1e3);
  else snprintf(buf, n, "%.3f s", seconds);
}

void pt_confirm_fmt_mib(char *buf, size_t n, double bytes) {
  if (isnan(bytes)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
}
