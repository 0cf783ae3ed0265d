/*
 * report.c — the Pareto front, the text tables and the HTML page of
 * `pagetune report` (see report.h).
 *
 * Everything here reads pt_report_run values and writes to a FILE; nothing
 * is global.  Writes go through stdio and are checked once, at the end, with
 * fflush + ferror: a failed write sets the stream's error flag and every
 * later write is wasted but harmless, so one check tells the caller the
 * truth without a test after each of the many small prints.
 *
 * The HTML page draws its SVG here, in plain numbers: no script, no link, no
 * external resource of any kind, so the file can be mailed or opened offline.
 * Strings from runs reach the page only through html_text(), which escapes
 * the five HTML metacharacters and replaces control characters.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "paramjson.h"
#include "u64map.h"

#define MIB 1048576.0
#define GIB 1073741824.0

/* ---- small helpers ------------------------------------------------------------ */

static const char *str_or(const char *s, const char *dflt) { return s ? s : dflt; }

static const char *trace_of(const pt_report_run *r) { return str_or(r->trace, ""); }

/* Code points in a UTF-8 string (bytes that do not continue a sequence). */
static size_t utf8_len(const char *s) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) n += (*p & 0xC0) != 0x80;
  return n;
}

static int is_ctrl(unsigned char c) { return c < 0x20 || c == 0x7f; }

static int flush_status(FILE *f, pt_err *err) {
  if (fflush(f) != 0 || ferror(f))
    return pt_err_set(err, PT_EIO, "report: write failed: %s", strerror(errno ? errno : EIO));
  return 0;
}

/* A bounded string builder that never overflows and always stays terminated. */
typedef struct sbuf {
  char *p;
  size_t cap, len;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->len + 1 >= b->cap) return;
  size_t room = b->cap - 1 - b->len;
  if (n > room) n = room;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* Bytes as a short number with unit: 2 MiB, 1.5 GiB, 512 KiB, 100 B. */
static void fmt_bytes(char *out, size_t n, double bytes) {
  if (bytes >= GIB) snprintf(out, n, "%.3g GiB", bytes / GIB);
  else if (bytes >= MIB) snprintf(out, n, "%.3g MiB", bytes / MIB);
  else if (bytes >= 1024) snprintf(out, n, "%.3g KiB", bytes / 1024);
  else snprintf(out, n, "%.0f B", bytes);
}

/* A parameter value: whole MiB/GiB counts of bytes as such, else 6 digits. */
static void fmt_value(char *out, size_t n, double v) {
  int bytes = v == floor(v) && v >= MIB && v < 1e18;
  if (bytes && fmod(v, GIB) == 0) snprintf(out, n, "%.0fGiB", v / GIB);
  else if (bytes && fmod(v, MIB) == 0) snprintf(out, n, "%.0fMiB", v / MIB);
  else snprintf(out, n, "%.6g", v);
}

/* A JSON string's text (escapes as written) for reading: \n, \t and \r as spaces, \uXXXX as written. */
static void put_unescaped(sbuf *b, const char *s, size_t len) {
  for (const char *e = s + len; s < e; s++) {
    if (*s == '\\' && s + 1 < e) {
      s++;
      char c = *s == 'n' || *s == 't' || *s == 'r' ? ' ' : *s;
      if (*s == 'u') sb_puts(b, "\\u");
      else sb_put(b, &c, 1);
    } else {
      sb_put(b, s, 1);
    }
  }
}

/* One member as "name=value" (a number through fmt_value, null as "inf"), space-separated. */
static int put_member(void *ctx, const pt_pj_member *m) {
  sbuf *b = ctx;
  if (b->len) sb_puts(b, " ");
  put_unescaped(b, m->key, m->keylen);
  sb_puts(b, "=");
  char num[48];
  switch (m->kind) {
  case PT_PJ_STRING: put_unescaped(b, m->text, m->len); break;
  case PT_PJ_NULL: sb_puts(b, "inf"); break;
  case PT_PJ_BOOL: sb_put(b, m->text, m->len); break;
  case PT_PJ_NUMBER:
    fmt_value(num, sizeof num, m->num);
    sb_puts(b, num);
    break;
  case PT_PJ_ARRAY: { /* a list knob (mech.h), in PyTorch's list form */
    char list[256];
    sb_puts(b, pt_param_list_format(&m->list, list, sizeof list));
    break;
  }
  }
  return 0;
}

/*
 * The key parameters of a run as "name=value name=value" (plus "cap=SIZE"
 * under a capacity), from the store's flat params object; a value of null
 * is an unlimited one ("inf").  Anything that is not a flat object is shown
 * as written.  The result is raw text: callers sanitize or escape it.
 */
static void fmt_params(const char *json, uint64_t capacity, char *out, size_t cap) {
  sbuf b = {out, cap, 0};
  out[0] = 0;
  if (pt_params_json_walk(str_or(json, "{}"), put_member, &b) < 0) {
    b.len = 0;
    out[0] = 0;
    sb_puts(&b, str_or(json, ""));
  }
  if (capacity) {
    char c[48];
    fmt_bytes(c, sizeof c, (double)capacity);
    char *sp = strchr(c, ' ');
    if (sp) memmove(sp, sp + 1, strlen(sp)); /* "3GiB": one item, as the values are */
    if (b.len) sb_puts(&b, " ");
    sb_puts(&b, "cap=");
    sb_puts(&b, c);
  }
}

/* ---- the recommendation and why ------------------------------------------------- */

int pt_report_recommendable(const pt_report_run *r) {
  return r && !r->ooms && strcmp(str_or(r->mechanism, ""), "direct");
}

/*
 * Bytes free inside segments at the run's peak of reserved memory, from its
 * timeline: of the points at the peak, the one with the most allocated (a
 * peak held on after frees is not where the reserve was needed); -1: no
 * timeline.
 */
static double free_at_peak(const pt_report_run *r) {
  if (!r->timeline || !r->ntimeline) return -1;
  const pt_sim_point *top = &r->timeline[0];
  for (size_t i = 1; i < r->ntimeline; i++) {
    const pt_sim_point *q = &r->timeline[i];
    if (q->reserved > top->reserved || (q->reserved == top->reserved && q->allocated > top->allocated)) top = q;
  }
  return top->reserved > top->allocated ? (double)(top->reserved - top->allocated) : 0;
}

const char *pt_report_why(const pt_report_run *r, const pt_report_run *b, char *out, size_t n) {
  sbuf sb = {out, n, 0};
  char x[48], y[48], z[48], t[400];
  if (!n) return out;
  out[0] = 0;
  if (b == r) b = NULL;
  double res = (double)r->peak_reserved_bytes, fr = free_at_peak(r);
  fmt_bytes(x, sizeof x, res);
  fmt_bytes(y, sizeof y, (double)r->peak_allocated_bytes);
  snprintf(t, sizeof t, "It reserves at most %s for at most %s of live requests", x, y);
  sb_puts(&sb, t);
  if (b) {
    double bres = (double)b->peak_reserved_bytes, d = fabs(res - bres);
    fmt_bytes(x, sizeof x, d);
    fmt_bytes(z, sizeof z, bres);
    if (d > 0) snprintf(t, sizeof t, ": %s %s than the captured settings' %s", x, res < bres ? "less" : "more", z);
    else snprintf(t, sizeof t, ", as the captured settings do");
    sb_puts(&sb, t);
  }
  if (fr >= 0) {
    double bf = b ? free_at_peak(b) : -1;
    fmt_bytes(x, sizeof x, fr);
    fmt_bytes(y, sizeof y, bf);
    snprintf(t, sizeof t, ". At its peak %s lay free inside its segments%s%s", x, bf >= 0 ? ", against " : "", bf >= 0 ? y : "");
    sb_puts(&sb, t);
  }
  snprintf(t, sizeof t, ". It allocates %" PRIu64 " segment%s with %" PRIu64 " driver call%s in all", r->segments_allocated,
           r->segments_allocated == 1 ? "" : "s", r->driver_calls_total, r->driver_calls_total == 1 ? "" : "s");
  sb_puts(&sb, t);
  if (b) {
    snprintf(t, sizeof t, ", against %" PRIu64 " and %" PRIu64, b->segments_allocated, b->driver_calls_total);
    sb_puts(&sb, t);
  }
  if (b && isfinite(r->predicted_alloc_us) && isfinite(b->predicted_alloc_us)) {
    snprintf(t, sizeof t, "; predicted allocator time %.2f ms against %.2f ms", r->predicted_alloc_us / 1000,
             b->predicted_alloc_us / 1000);
    sb_puts(&sb, t);
    int fewer = r->driver_calls_total < b->driver_calls_total, faster = r->predicted_alloc_us < b->predicted_alloc_us;
    if (r->driver_calls_total != b->driver_calls_total && r->predicted_alloc_us != b->predicted_alloc_us && fewer != faster)
      sb_puts(&sb, " (the cost model prices each driver call by its kind and size, and adds the allocator's own work "
                   "per request)");
  }
  sb_puts(&sb, ".");
  return out;
}

/* ---- grouping by trace ---------------------------------------------------------- */

/* Run indices grouped by trace, traces in order of first appearance. */
typedef struct groups {
  size_t *idx;      /* n entries */
  size_t *start;    /* group g is idx[start[g] .. start[g + 1]) */
  size_t ng;
} groups;

static void groups_free(groups *g) {
  free(g->idx);
  free(g->start);
  *g = (groups){0};
}

static int groups_make(const pt_report_run *runs, size_t n, groups *g) {
  *g = (groups){0};
  size_t *first = malloc((n ? n : 1) * sizeof *first); /* first run of each distinct trace */
  size_t *of = malloc((n ? n : 1) * sizeof *of);       /* group of each run */
  g->idx = malloc((n ? n : 1) * sizeof *g->idx);
  g->start = calloc(n + 1, sizeof *g->start);
  if (!first || !of || !g->idx || !g->start) {
    free(first);
    free(of);
    groups_free(g);
    return PT_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < g->ng && strcmp(trace_of(&runs[first[k]]), trace_of(&runs[i]))) k++;
    if (k == g->ng) first[g->ng++] = i;
    of[i] = k;
    g->start[k + 1]++;
  }
  for (size_t k = 0; k < g->ng; k++) g->start[k + 1] += g->start[k];
  size_t *fill = first; /* reused as the fill cursor of each group */
  for (size_t k = 0; k < g->ng; k++) fill[k] = g->start[k];
  for (size_t i = 0; i < n; i++) g->idx[fill[of[i]]++] = i;
  free(first);
  free(of);
  return 0;
}

/* The runs of group k as pointers (caller frees), in input order. */
static const pt_report_run **group_runs(const pt_report_run *runs, const groups *g, size_t k, size_t *m) {
  *m = g->start[k + 1] - g->start[k];
  const pt_report_run **p = malloc((*m ? *m : 1) * sizeof *p);
  if (p)
    for (size_t j = 0; j < *m; j++) p[j] = &runs[g->idx[g->start[k] + j]];
  return p;
}

/* ---- Pareto front --------------------------------------------------------------- */

/* Timed runs first, by time then memory; then the untimed ones by memory. */
static int cmp_pareto(const void *a, const void *b) {
  const pt_report_run *x = *(const pt_report_run *const *)a, *y = *(const pt_report_run *const *)b;
  int xn = isnan(x->predicted_alloc_us), yn = isnan(y->predicted_alloc_us);
  if (xn != yn) return xn - yn;
  if (!xn && x->predicted_alloc_us != y->predicted_alloc_us)
    return x->predicted_alloc_us < y->predicted_alloc_us ? -1 : 1;
  if (x->peak_reserved_bytes != y->peak_reserved_bytes)
    return x->peak_reserved_bytes < y->peak_reserved_bytes ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Runs that ran out of memory are left out first.  One sweep over the sorted runs: a run is beaten exactly when a run with a
 * smaller time has no more memory, or a run with the same time has less.  So,
 * per group of equal times, the members with the group's least memory are on
 * the front when that memory is below the least seen at smaller times.
 */
int pt_report_pareto(const pt_report_run *runs, size_t n, int *on_front /* OUT, n entries */) {
  if (n && (!runs || !on_front)) return PT_EUSAGE;
  groups g;
  int rc = groups_make(runs, n, &g);
  if (rc < 0) return rc;
  for (size_t k = 0; k < g.ng; k++) {
    size_t m;
    const pt_report_run **p = group_runs(runs, &g, k, &m);
    if (!p) {
      groups_free(&g);
      return PT_ENOMEM;
    }
    size_t kept = 0; /* a run that ran out of memory is on no front, and beats none */
    for (size_t j = 0; j < m; j++)
      if (p[j]->ooms) on_front[p[j] - runs] = 0;
      else p[kept++] = p[j];
    m = kept;
    qsort(p, m, sizeof *p, cmp_pareto);
    size_t i = 0;
    int seen = 0;
    uint64_t best = 0;  /* least memory at a smaller time, when seen */
    while (i < m && !isnan(p[i]->predicted_alloc_us)) {
      size_t e = i;
      while (e < m && p[e]->predicted_alloc_us == p[i]->predicted_alloc_us) e++;
      uint64_t least = p[i]->peak_reserved_bytes;
      for (size_t j = i; j < e; j++)
        on_front[p[j] - runs] = p[j]->peak_reserved_bytes == least && (!seen || least < best);
      if (!seen || least < best) best = least;
      seen = 1;
      i = e;
    }
    for (size_t j = i; j < m; j++) /* untimed: memory alone */
      on_front[p[j] - runs] = p[j]->peak_reserved_bytes == p[i]->peak_reserved_bytes;
    free(p);
  }
  groups_free(&g);
  return 0;
}

/* By peak reserved, then id: the order of every table. */
static int cmp_reserved(const void *a, const void *b) {
  const pt_report_run *x = *(const pt_report_run *const *)a, *y = *(const pt_report_run *const *)b;
  if (x->peak_reserved_bytes != y->peak_reserved_bytes)
    return x->peak_reserved_bytes < y->peak_reserved_bytes ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Front flags and groups, as both printers start. */
static int prepare(const pt_report_run *runs, size_t n, int **front, groups *g, pt_err *err) {
  *front = malloc((n ? n : 1) * sizeof **front);
  if (!*front) return pt_err_set(err, PT_ENOMEM, "report: out of memory");
  int rc = pt_report_pareto(runs, n, *front);
  if (rc == 0) rc = groups_make(runs, n, g);
  if (rc < 0) {
    free(*front);
    *front = NULL;
    return pt_err_set(err, rc, "report: %s", rc == PT_EUSAGE ? "no runs array" : "out of memory");
  }
  return 0;
}

/* The runs of group p[0..m) the page shows (sorts p by peak reserved): all of a small group; of a larger one the
   PT_REPORT_HTML_RUNS least peak reserved, and as many of its front. */
static void shown_of(const pt_report_run *runs, const pt_report_run **p, size_t m, const int *front, char *shown) {
  qsort(p, m, sizeof *p, cmp_reserved);
  size_t on = 0;
  for (size_t j = 0; j < m; j++) {
    int f = front[p[j] - runs];
    shown[p[j] - runs] = m <= PT_REPORT_HTML_RUNS || j < PT_REPORT_HTML_RUNS || (f && on < PT_REPORT_HTML_RUNS);
    on += f;
  }
}

int pt_report_html_shown(const pt_report_run *runs, size_t n, char *shown) {
  int *front = NULL;
  groups g = {0};
  pt_err err;
  if (n && prepare(runs, n, &front, &g, &err) < 0) return PT_ENOMEM;
  int rc = 0;
  for (size_t k = 0; k < g.ng && rc == 0; k++) {
    size_t m;
    const pt_report_run **p = group_runs(runs, &g, k, &m);
    if (p) shown_of(runs, p, m, front, shown);
    else rc = PT_ENOMEM;
    free(p);
  }
  free(front);
  groups_free(&g);
  return rc;
}

/* ---- text ----------------------------------------------------------------------- */

/* s with control characters as '?', cut to width code points ("..." marks a cut); returns what it showed. */
static size_t text_str(FILE *f, const char *s, size_t width) {
  size_t len = utf8_len(s);
  size_t keep = len > width ? (width > 3 ? width - 3 : 0) : len, seen = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p & 0xC0) != 0x80 && seen++ == keep) break;
    fputc(is_ctrl(*p) ? '?' : *p, f);
  }
  if (len > width && width >= 3) fputs("...", f);
  return len > width ? width : len;
}

/* The same, padded to width on the right (or on the left when right-aligned). */
static void text_cell(FILE *f, const char *s, size_t width, int right) {
  size_t len = utf8_len(s), shown = len > width ? width : len;
  if (right)
    for (size_t i = shown; i < width; i++) fputc(' ', f);
  text_str(f, s, width);
  if (!right)
    for (size_t i = shown; i < width; i++) fputc(' ', f);
}

/* The numeric cells of a row, formatted once for measuring and printing. */
typedef struct text_row {
  char id[24], peak[32], frag[24], segs[24], ms[32], ooms[24];
} text_row;

static void text_row_fill(const pt_report_run *r, text_row *t) {
  snprintf(t->id, sizeof t->id, "%" PRId64, r->id);
  snprintf(t->peak, sizeof t->peak, "%.1f", (double)r->peak_reserved_bytes / MIB);
  if (isfinite(r->fragmentation)) snprintf(t->frag, sizeof t->frag, "%.1f", 100 * r->fragmentation);
  else snprintf(t->frag, sizeof t->frag, "-");
  snprintf(t->segs, sizeof t->segs, "%" PRIu64, r->segments_allocated);
  if (isnan(r->predicted_alloc_us)) snprintf(t->ms, sizeof t->ms, "-");
  else snprintf(t->ms, sizeof t->ms, "%.2f", r->predicted_alloc_us / 1000);
  snprintf(t->ooms, sizeof t->ooms, "%" PRIu64, r->ooms);
}

/*
 * The next line of a space-separated list wrapped at width code points, into
 * out; *s moves past it.  A single item wider than width is a line of its own
 * (text_cell cuts it).
 */
static void wrap_next(const char **s, size_t width, char *out, size_t cap) {
  const char *p = *s, *end = *s;
  while (*p == ' ') p++;
  size_t used = 0;
  for (const char *q = p; *q;) {
    size_t tcp = 0;
    for (; *q && *q != ' '; q++) tcp += (*q & 0xC0) != 0x80;
    if (end > p && used + 1 + tcp > width) break;
    used += (end > p) + tcp;
    end = q;
    while (*q == ' ') q++;
  }
  if (end == p) end = p + strlen(p);
  size_t n = (size_t)(end - p) < cap - 1 ? (size_t)(end - p) : cap - 1;
  memcpy(out, p, n);
  out[n] = 0;
  *s = end;
  /* one name=value too wide: shorten the name, never the value ("garbage_coll...=0.5") */
  const char *eq = strchr(out, '=');
  size_t len = utf8_len(out);
  if (len > width && eq && !strchr(out, ' ') && utf8_len(eq) + 4 <= width) {
    size_t keep = width - utf8_len(eq) - 3, seen = 0;
    char *q = out;
    for (; *q; q++)
      if ((*q & 0xC0) != 0x80 && seen++ == keep) break;
    char value[1200];
    snprintf(value, sizeof value, "%s", eq);
    snprintf(q, cap - (size_t)(q - out), "...%s", value);
  }
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

#define GAP "  "

static void text_trace(FILE *f, const pt_report_run *runs, const pt_report_run **p, size_t m, const int *front) {
  char params[1200], line[1200];
  text_row t;
  /* widths: header or widest cell; policy and params share what is left of the line */
  size_t wid = 2, wpol = 6, wpar = 6, wpeak = 8, wfrag = 6, wsegs = 4, wms = 8, wooms = 4;
  for (size_t j = 0; j < m; j++) {
    text_row_fill(p[j], &t);
    fmt_params(p[j]->params_json, p[j]->capacity, params, sizeof params);
    wid = max_sz(wid, strlen(t.id));
    wpol = max_sz(wpol, utf8_len(str_or(p[j]->policy, "")));
    wpar = max_sz(wpar, utf8_len(params));
    wpeak = max_sz(wpeak, strlen(t.peak));
    wfrag = max_sz(wfrag, strlen(t.frag));
    wsegs = max_sz(wsegs, strlen(t.segs));
    wms = max_sz(wms, strlen(t.ms));
    wooms = max_sz(wooms, strlen(t.ooms));
  }
  size_t fixed = 2 + wid + 2 + 2 + wpeak + 2 + wfrag + 2 + wsegs + 2 + wms + 2 + wooms + 2;
  size_t room = PT_REPORT_COLUMNS > fixed + 20 ? PT_REPORT_COLUMNS - fixed : 20;
  if (wpol > 20) wpol = wpol + wpar > room ? 20 : wpol;
  if (wpol + wpar > room) wpar = room > wpol + 10 ? room - wpol : 10;
  if (wpol + wpar > room) wpol = room > wpar + 8 ? room - wpar : 8;

  fputs("trace ", f);
  text_str(f, trace_of(p[0]), PT_REPORT_COLUMNS - 20);
  fprintf(f, "  (%zu run%s)\n", m, m == 1 ? "" : "s");
  fputs("  ", f);
  text_cell(f, "id", wid, 1);
  fputs(GAP, f);
  text_cell(f, "policy", wpol, 0);
  fputs(GAP, f);
  text_cell(f, "params", wpar, 0);
  fputs(GAP, f);
  text_cell(f, "peak MiB", wpeak, 1);
  fputs(GAP, f);
  text_cell(f, "frag %", wfrag, 1);
  fputs(GAP, f);
  text_cell(f, "segs", wsegs, 1);
  fputs(GAP, f);
  text_cell(f, "alloc ms", wms, 1);
  fputs(GAP, f);
  text_cell(f, "OOMs", wooms, 1);
  fputc('\n', f);
  for (size_t j = 0; j < m; j++) {
    const pt_report_run *r = p[j];
    text_row_fill(r, &t);
    fmt_params(r->params_json, r->capacity, params, sizeof params);
    fputs(front[r - runs] ? "* " : "  ", f);
    text_cell(f, t.id, wid, 1);
    fputs(GAP, f);
    text_cell(f, str_or(r->policy, ""), wpol, 0);
    fputs(GAP, f);
    const char *rest = params;
    wrap_next(&rest, wpar, line, sizeof line);
    text_cell(f, line[0] ? line : "-", wpar, 0);
    fputs(GAP, f);
    text_cell(f, t.peak, wpeak, 1);
    fputs(GAP, f);
    text_cell(f, t.frag, wfrag, 1);
    fputs(GAP, f);
    text_cell(f, t.segs, wsegs, 1);
    fputs(GAP, f);
    text_cell(f, t.ms, wms, 1);
    fputs(GAP, f);
    text_cell(f, t.ooms, wooms, 1);
    fputc('\n', f);
    for (;;) { /* the parameters that did not fit, under their column */
      wrap_next(&rest, wpar, line, sizeof line);
      if (!line[0]) break;
      fprintf(f, "%*s", (int)(2 + wid + 2 + wpol + 2), "");
      text_str(f, line, wpar);
      fputc('\n', f);
    }
  }
}

/* ---- confirmations, as text ------------------------------------------------------- */

static const char *alloc_name(const char *a) {
  return a && !strcmp(a, "pagetune") ? "pagetune's library" : "PyTorch's allocator";
}

static const char *time_label(const pt_report_confirm *c) {
  return c->time_metric && !strcmp(c->time_metric, "median_step_s") ? "time (median step)" : "time (wall)";
}

static void text_confirms(FILE *f, const char *trace, const pt_report_confirm *c, size_t nc) {
  int any = 0;
  for (size_t i = 0; i < nc; i++) {
    const pt_report_confirm *k = &c[i];
    if (strcmp(str_or(k->trace, ""), trace)) continue;
    if (!any) fputs("\n  measured by pagetune confirm: gain = (baseline - tuned) / baseline; A -> B: baseline -> tuned\n", f);
    any = 1;
    fprintf(f, "  confirmation %" PRId64 ": %d runs each, ", k->id, k->runs_per_arm);
    text_str(f, str_or(k->measured_at, ""), 24);
    if (k->hostname && *k->hostname) fputs(", ", f), text_str(f, k->hostname, 20);
    if (k->gpu_name && *k->gpu_name) fputs(", ", f), text_str(f, k->gpu_name, 20);
    fprintf(f, "\n    tuned    run %" PRId64 " ", k->tuned_run);
    text_str(f, str_or(k->tuned_policy, ""), 40);
    fprintf(f, " under %s\n    baseline run %" PRId64 " ", alloc_name(k->tuned_allocator), k->baseline_run);
    text_str(f, str_or(k->baseline_policy, ""), 40);
    fprintf(f, " under %s\n", alloc_name(k->baseline_allocator));
    const struct {
      const char *name;
      const pt_confirm_gain *g;
    } rows[] = {{time_label(k), &k->time}, {"peak reserved", &k->peak}};
    for (size_t j = 0; j < 2; j++) {
      char pg[32], mg[32], iv[48];
      pt_confirm_fmt_gain(pg, sizeof pg, rows[j].g->predicted);
      pt_confirm_fmt_gain(mg, sizeof mg, rows[j].g->measured);
      pt_confirm_fmt_interval(iv, sizeof iv, rows[j].g);
      fprintf(f, "    %-18s predicted %8s  measured %8s %-20s  %s\n", rows[j].name, pg, mg, iv,
              pt_confirm_verdict_name(rows[j].g->verdict));
    }
    char a[32], b[32], m1[32], m2[32];
    pt_confirm_fmt_seconds(a, sizeof a, k->time.base_median);
    pt_confirm_fmt_seconds(b, sizeof b, k->time.tuned_median);
    pt_confirm_fmt_mib(m1, sizeof m1, k->peak.base_median);
    pt_confirm_fmt_mib(m2, sizeof m2, k->peak.tuned_median);
    fprintf(f, "    measured:  time %s -> %s, peak reserved %s -> %s\n", a, b, m1, m2);
    pt_confirm_fmt_seconds(a, sizeof a, k->baseline_predicted_us * 1e-6);
    pt_confirm_fmt_seconds(b, sizeof b, k->tuned_predicted_us * 1e-6);
    pt_confirm_fmt_mib(m1, sizeof m1, (double)k->baseline_predicted_peak);
    pt_confirm_fmt_mib(m2, sizeof m2, (double)k->tuned_predicted_peak);
    fprintf(f, "    predicted: allocator time %s -> %s, peak reserved %s -> %s\n", a, b, m1, m2);
  }
}

/* ---- the recommendation, as text ------------------------------------------------- */

/* The run of id among runs (NULL: none; id 0 is none). */
static const pt_report_run *run_by_id(const pt_report_run *runs, size_t n, int64_t id) {
  for (size_t i = 0; id && i < n; i++)
    if (runs[i].id == id) return &runs[i];
  return NULL;
}

/* The recommendation for trace, or NULL. */
static const pt_report_rec *rec_of(const pt_report_rec *recs, size_t nrecs, const char *trace) {
  for (size_t i = 0; recs && i < nrecs; i++)
    if (!strcmp(str_or(recs[i].trace, ""), trace)) return &recs[i];
  return NULL;
}

/* One figure of the recommended run against the captured settings' (lower is better for all). */
typedef struct vs_row {
  const char *label;
  char a[32], b[32], change[24];
  int better; /* 1 lower, -1 higher, 0 the same or unknown */
} vs_row;

static void vs_fill(vs_row *v, const char *label, double a, double b, int unit /* 0 bytes, 1 ms, 2 count */) {
  v->label = label;
  const double *both[2] = {&a, &b};
  char *out[2] = {v->a, v->b};
  for (int i = 0; i < 2; i++) {
    double x = *both[i];
    if (!isfinite(x) || x < 0) snprintf(out[i], sizeof v->a, "-");
    else if (unit == 0) fmt_bytes(out[i], sizeof v->a, x);
    else if (unit == 1) snprintf(out[i], sizeof v->a, "%.2f ms", x / 1000);
    else snprintf(out[i], sizeof v->a, "%.0f", x);
  }
  v->better = 0;
  snprintf(v->change, sizeof v->change, "-");
  if (isfinite(a) && isfinite(b) && a >= 0 && b > 0) {
    double c = 100 * (a - b) / b;
    snprintf(v->change, sizeof v->change, "%+.1f%%", c);
    if (fabs(c) < 0.05) snprintf(v->change, sizeof v->change, "same");
    v->better = a < b ? 1 : a > b ? -1 : 0;
  }
}

/* The rows of r against b (b may be NULL: its column is "-"); returns how many (at most 5). */
static size_t vs_rows(const pt_report_run *r, const pt_report_run *b, vs_row *v) {
  double nb = NAN;
  vs_fill(&v[0], "peak reserved", (double)r->peak_reserved_bytes, b ? (double)b->peak_reserved_bytes : nb, 0);
  vs_fill(&v[1], "predicted allocator time", r->predicted_alloc_us, b ? b->predicted_alloc_us : nb, 1);
  vs_fill(&v[2], "free in segments at the peak", free_at_peak(r), b ? free_at_peak(b) : nb, 0);
  vs_fill(&v[3], "segments", (double)r->segments_allocated, b ? (double)b->segments_allocated : nb, 2);
  vs_fill(&v[4], "driver calls", (double)r->driver_calls_total, b ? (double)b->driver_calls_total : nb, 2);
  return 5;
}

/* s wrapped at PT_REPORT_COLUMNS, every line starting with indent spaces (the first with lead instead). */
static void text_wrap(FILE *f, const char *lead, const char *s, size_t indent) {
  char line[PT_REPORT_COLUMNS + 8];
  size_t width = PT_REPORT_COLUMNS - indent;
  int first = 1;
  while (*s) {
    wrap_next(&s, width, line, sizeof line);
    if (!line[0]) break;
    if (first) fprintf(f, "%-*s", (int)indent, lead);
    else fprintf(f, "%*s", (int)indent, "");
    text_str(f, line, width);
    fputc('\n', f);
    first = 0;
  }
}

/* The next line of *s (without its newline) into buf, cut to n - 1 bytes; *s moves past it.  0 at the end. */
static int line_next(const char **s, char *buf, size_t n) {
  if (!**s) return 0;
  size_t len = strcspn(*s, "\n"), k = len < n ? len : n - 1;
  memcpy(buf, *s, k);
  buf[k] = 0;
  *s += len + ((*s)[len] == '\n');
  return 1;
}

#define LINE_MAX_ 4096 /* a line of the export's text as the report shows it */
#define WARNING "warning: "

/* The export's notes: the warnings (warn 1) or the rest (warn 0), each to show(f, line); returns how many. */
static size_t each_note(FILE *f, const char *notes, int warn, void (*show)(FILE *, const char *)) {
  char line[LINE_MAX_];
  size_t k = 0;
  for (const char *p = str_or(notes, ""); line_next(&p, line, sizeof line);)
    if ((strncmp(line, WARNING, strlen(WARNING)) == 0) == warn) {
      if (show) show(f, warn ? line + strlen(WARNING) : line);
      k++;
    }
  return k;
}

/* Lines as given, indented, control characters as '?'; never cut. */
static void text_lines(FILE *f, const char *p) {
  char line[LINE_MAX_];
  while (line_next(&p, line, sizeof line)) {
    fputs("    ", f);
    for (const char *c = line; *c; c++) fputc(is_ctrl((unsigned char)*c) ? '?' : *c, f);
    fputc('\n', f);
  }
}

static void text_warning(FILE *f, const char *line) { text_wrap(f, "  warning:", line, 14); }

static void text_rec(FILE *f, const pt_report_run *runs, size_t n, const pt_report_rec *rec) {
  const pt_report_run *r = run_by_id(runs, n, rec->run), *b = run_by_id(runs, n, rec->baseline);
  char params[1200];
  text_str(f, str_or(rec->trace, ""), PT_REPORT_COLUMNS - 30);
  if (!r) {
    fputs(": nothing to recommend (every run ran out of memory, or is direct)\n", f);
    return;
  }
  fprintf(f, ": run %" PRId64 ", ", r->id);
  text_str(f, str_or(r->policy, ""), 40);
  fputc('\n', f);
  fmt_params(r->params_json, r->capacity, params, sizeof params);
  if (params[0]) text_wrap(f, "  ", params, 2);
  /* the lines to paste, never cut: a cut line would not paste */
  const char *env = str_or(rec->paste, ""), *code = str_or(rec->code, "");
  if (rec->paste) /* NULL: no export (a warning says why) */
    fputs(*env ? "  in the environment:\n" : "  in the environment: nothing to set (PyTorch's defaults)\n", f);
  text_lines(f, env);
  if (*code) fputs("  in the program, before the first CUDA allocation:\n", f);
  text_lines(f, code);
  vs_row v[5];
  size_t nv = vs_rows(r, b, v);
  fprintf(f, "  %-30s %12s %12s %8s\n", "", "recommended", b ? "captured" : "", b ? "change" : "");
  for (size_t i = 0; i < nv; i++)
    fprintf(f, "  %-30s %12s %12s %8s\n", v[i].label, v[i].a, b ? v[i].b : "", b ? v[i].change : "");
  char desc[600];
  if (b) snprintf(desc, sizeof desc, "%s, run %" PRId64, str_or(rec->baseline_desc, "the captured settings"), b->id);
  else snprintf(desc, sizeof desc, "%s: no run stored at this capacity and GPU (sweep it to compare)",
                str_or(rec->baseline_desc, "the captured settings"));
  text_wrap(f, "  captured:", desc, 14);
  char why[2048];
  text_wrap(f, "  why:", pt_report_why(r, b, why, sizeof why), 14);
  if (rec->chosen_by) text_wrap(f, "  chosen by:", rec->chosen_by, 14);
  each_note(f, rec->notes, 1, text_warning);
  size_t nn = each_note(f, rec->notes, 0, NULL);
  if (rec->command) {
    char all[1200];
    snprintf(all, sizeof all, "%.1000s%s", rec->command, nn ? " (with the rest of the export's notes)" : "");
    text_wrap(f, "  export:", all, 14);
  }
}

int pt_report_text(FILE *f, const pt_report_run *runs, size_t n, const pt_report_rec *recs, size_t nrecs,
                   const pt_report_confirm *confirms, size_t nconfirms, pt_err *err) {
  if (!f) return pt_err_set(err, PT_EUSAGE, "report: no output stream");
  if (n == 0) {
    fputs("no runs to report\n", f);
    return flush_status(f, err);
  }
  int *front;
  groups g;
  int rc = prepare(runs, n, &front, &g, err);
  if (rc < 0) return rc;
  size_t shown = 0; /* the recommendations first: the answer, then the evidence */
  for (size_t k = 0; k < g.ng; k++) {
    const pt_report_rec *rec = rec_of(recs, nrecs, trace_of(&runs[g.idx[g.start[k]]]));
    if (!rec) continue;
    if (!shown++) fputs("RECOMMENDED SETTINGS\n", f);
    fputc('\n', f);
    text_rec(f, runs, n, rec);
  }
  if (shown) fputs("\nRUNS\n\n", f);
  for (size_t k = 0; k < g.ng && rc == 0; k++) {
    size_t m;
    const pt_report_run **p = group_runs(runs, &g, k, &m);
    if (!p) {
      rc = pt_err_set(err, PT_ENOMEM, "report: out of memory");
      break;
    }
    qsort(p, m, sizeof *p, cmp_reserved);
    if (k) fputc('\n', f);
    text_trace(f, runs, p, m, front);
    text_confirms(f, trace_of(p[0]), confirms, nconfirms);
    free(p);
  }
  if (rc == 0) {
    fputs("\n* on the Pareto front of predicted allocator time against peak reserved memory\n"
          "  (runs without a predicted time, '-', are compared on memory alone).\n"
          "  Page sizes below 2 MiB are a model-only dimension: through VMM a policy picks\n"
          "  handle sizes (2 MiB multiples) and VA layout, not the hardware page size.\n", f);
    if (nconfirms)
      fputs("  Confirmations: the workload run on a GPU under both runs' configurations (pagetune\n"
            "  confirm); the predicted time gain is the allocator time saved as a share of the\n"
            "  baseline's measured time.  confirmed: the interval excludes 0 on the prediction's\n"
            "  side; refuted: on the other side (or at all when P = 0), or it holds 0 but not P;\n"
            "  within noise: it holds 0 and P.\n", f);
    rc = flush_status(f, err);
  }
  free(front);
  groups_free(&g);
  return rc;
}

/* ---- HTML: text and numbers ------------------------------------------------------ */

/* s escaped for HTML text or an attribute value; cut to maxcp code points ("…") when maxcp. */
static void html_text(FILE *f, const char *s, size_t maxcp) {
  s = str_or(s, "");
  size_t len = utf8_len(s);
  int cut = maxcp && len > maxcp;
  size_t keep = cut ? maxcp - 1 : len, seen = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p & 0xC0) != 0x80 && seen++ == keep) break;
    switch (*p) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      if (is_ctrl(*p)) fputs("\xEF\xBF\xBD", f); /* U+FFFD: HTML forbids control characters */
      else fputc(*p, f);
    }
  }
  if (cut) fputs("\xE2\x80\xA6", f); /* … */
}

/* Decimals that show every tick of this step exactly (0.25 -> 2). */
static int step_decimals(double step) {
  for (int d = 0; d < 6; d++) {
    double x = step * pow(10, d);
    if (fabs(x - round(x)) < 1e-6 * (x > 1 ? x : 1)) return d;
  }
  return 6;
}

/* A round tick step giving about nticks intervals over span (1, 2, 2.5, 5 × 10^k). */
static double nice_step(double span, int nticks) {
  if (!(span > 0)) span = 1;
  double raw = span / nticks, mag = pow(10, floor(log10(raw))), r = raw / mag;
  return mag * (r <= 1 ? 1 : r <= 2 ? 2 : r <= 2.5 ? 2.5 : r <= 5 ? 5 : 10);
}

/* A mapping from data to pixels, with its ticks. */
typedef struct axis {
  double lo, hi, step;   /* domain, tick step (linear) */
  int log;               /* log10 scale; ticks at 1, 2, 5 × 10^k */
  double p0, p1;         /* pixels of lo and hi */
} axis;

static double ax_map(const axis *a, double v) {
  double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
  return a->p0 + t * (a->p1 - a->p0);
}

/*
 * Linear domain with round ends covering [lo, hi] (padded by pad of the span
 * unless from_zero): of the steps 1, 2, 2.5, 5 × 10^k giving 3 to maxint
 * intervals, the one that wastes least room, then the one nearest target
 * intervals.  (A fixed tick count would put a 610 MiB peak under an 800 MiB
 * top; this picks 0-750 by 250.)
 */
static void ax_linear(axis *a, double lo, double hi, double pad, int target, int maxint, int from_zero) {
  if (from_zero) lo = 0;
  if (!(hi > lo)) {
    double d = fabs(hi) > 0 ? fabs(hi) * 0.1 : 1;
    lo -= from_zero ? 0 : d;
    hi += d;
  }
  double span = hi - lo;
  double plo = from_zero ? 0 : lo - pad * span, phi = hi + pad * span;
  if (lo >= 0 && plo < 0) plo = 0;
  static const double mult[] = {1, 2, 2.5, 5};
  double base = pow(10, floor(log10((phi - plo) / maxint)) - 1), best = INFINITY;
  int best_miss = 0;
  a->step = 0;
  for (int d = 0; d < 4; d++, base *= 10)
    for (int k = 0; k < 4; k++) {
      double step = base * mult[k];
      double l = floor(plo / step + 1e-9) * step, h = ceil(phi / step - 1e-9) * step;
      long ints = lround((h - l) / step);
      if (ints < 3 || ints > maxint) continue;
      int miss = abs((int)ints - target);
      if (h - l < best * (1 - 1e-9) || (h - l <= best * (1 + 1e-9) && miss < best_miss)) {
        best = h - l;
        best_miss = miss;
        a->step = step;
        a->lo = l;
        a->hi = h;
      }
    }
  if (a->step == 0) { /* not reached for finite input; keep a sane axis anyway */
    a->step = nice_step(phi - plo, target);
    a->lo = floor(plo / a->step + 1e-9) * a->step;
    a->hi = ceil(phi / a->step - 1e-9) * a->step;
    if (a->hi <= a->lo) a->hi = a->lo + a->step;
  }
  a->log = 0;
}

/* Log domain over whole decades (both ends > 0). */
static void ax_log(axis *a, double lo, double hi) {
  a->lo = pow(10, floor(log10(lo) - 0.02));
  a->hi = pow(10, ceil(log10(hi) + 0.02));
  a->step = 0;
  a->log = 1;
}

/* Ticks of a: calls back with each value; returns how many. */
static size_t ax_ticks(const axis *a, double *v, size_t cap) {
  size_t n = 0;
  if (a->log) {
    int decades = (int)round(log10(a->hi / a->lo));
    static const double mult[] = {1, 2, 5};
    for (double d = a->lo; d <= a->hi * 1.0001 && n < cap; d *= 10)
      for (int k = 0; k < 3 && n < cap; k++) {
        if (k && decades > 2) break; /* many decades: powers of ten only */
        if (d * mult[k] <= a->hi * 1.0001) v[n++] = d * mult[k];
      }
    return n;
  }
  long steps = lround((a->hi - a->lo) / a->step);
  for (long k = 0; k <= steps && n < cap; k++) v[n++] = a->lo + (double)k * a->step;
  return n;
}

/* Tick label: a value in the axis's unit, with as many decimals as the step needs. */
static void tick_label(char *out, size_t n, const axis *a, double v) {
  if (a->log) snprintf(out, n, "%g", v);
  else snprintf(out, n, "%.*f", step_decimals(a->step), fabs(v) < a->step * 1e-9 ? 0.0 : v);
}

/* Event counts on an axis: 0, 20k, 40k (k once every tick is a whole thousand or more). */
static void tick_events(char *out, size_t n, const axis *a, double v) {
  if (v == 0) snprintf(out, n, "0");
  else if (a->hi >= 10000 && a->step >= 100) snprintf(out, n, "%.*fk", step_decimals(a->step / 1000), v / 1000);
  else snprintf(out, n, "%.0f", v);
}

/* Memory unit for a largest value: GiB from 2 GiB up, else MiB. */
static double mem_unit(double max_bytes, const char **name) {
  *name = max_bytes >= 2 * GIB ? "GiB" : "MiB";
  return max_bytes >= 2 * GIB ? GIB : MIB;
}

/* ---- HTML: the page ------------------------------------------------------------- */

static const char css[] =
    ":root{--fg:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#eef1f4;--res:#2f6fde;--alloc:#e0720f;"
    "--front:#1a7f37;--bad:#cf222e}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:#f5f7f9;color:var(--fg);"
    "font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}\n"
    "main{max-width:1340px;margin:0 auto;padding:26px 30px 36px}\n"
    "h1{font-size:24px;margin:0 0 4px;letter-spacing:-.01em}\n"
    ".lead{color:var(--muted);margin:0}\n"
    "section.trace{background:#fff;border:1px solid var(--line);border-radius:10px;padding:18px 22px 20px;"
    "margin:22px 0}\n"
    "h2{font-size:19px;margin:0 0 2px;overflow-wrap:anywhere}\n"
    "h2 .k{color:var(--muted);font-weight:500}\n"
    ".facts{color:var(--muted);margin:0;font-size:13.5px}\n"
    ".facts b{color:var(--fg);font-weight:600}\n"
    "h3{font-size:12px;text-transform:uppercase;letter-spacing:.07em;color:var(--muted);margin:20px 0 9px}\n"
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:12px}\n"
    "figure{margin:0;border:1px solid var(--line);border-radius:8px;padding:4px 6px;background:#fff}\n"
    "figure.wide{max-width:1280px}\n"
    "figcaption{color:var(--muted);font-size:12.5px;padding:2px 6px 4px}\n"
    "svg{display:block;width:100%;height:auto}\n"
    "svg text{fill:var(--fg);font-size:11px}\n"
    "svg .ttl{font-size:13px;font-weight:600}\n"
    "svg .par{fill:var(--muted);font-size:11.5px;font-weight:400;"
    "font-family:ui-monospace,\"SFMono-Regular\",Menlo,Consolas,\"DejaVu Sans Mono\",monospace}\n"
    "svg .sub,svg .tick{fill:var(--muted)}\n"
    "svg .tick{font-size:10.5px}\n"
    "svg .axt{fill:var(--muted);font-size:11px}\n"
    "svg .grid line{stroke:var(--soft);stroke-width:1}\n"
    "svg .axis{stroke:#8c959f;stroke-width:1}\n"
    "svg .lg.res{fill-opacity:.55}\nsvg .lg.alloc{fill-opacity:.7}\n"
    "svg .res{fill:var(--res);fill-opacity:.13;stroke:var(--res);stroke-width:1.3;stroke-linejoin:round}\n"
    "svg .alloc{fill:var(--alloc);fill-opacity:.16;stroke:var(--alloc);stroke-width:1.3;stroke-linejoin:round}\n"
    "svg .capl{stroke:var(--bad);stroke-width:1;stroke-dasharray:5 4}\n"
    "svg .base{fill:none;stroke:#24292f;stroke-width:1.6;stroke-dasharray:6 3;stroke-linejoin:round}\n"
    "svg .ring{fill:none;stroke-width:2}\nsvg .ring.rec{stroke:var(--res)}\nsvg .ring.cap{stroke:#24292f}\n"
    "svg .lbl.rec{fill:var(--res);font-weight:700}\nsvg .lbl.cap{fill:#24292f;font-weight:600}\n"
    "svg .empty{fill:var(--muted);font-size:13px}\n"
    "svg .pt{fill:#fff;stroke:#8c959f;stroke-width:1.5}\n"
    "svg .pt.on{fill:var(--front);stroke:#fff;stroke-width:1.5}\n"
    "svg .lbl{font-size:11px;fill:#424a53}\n"
    "svg .lbl.on{fill:var(--front);font-weight:600}\n"
    "svg .stair{fill:none;stroke:var(--front);stroke-width:1.6}\n"
    "svg .dom{fill:var(--front);fill-opacity:.05;stroke:none}\n"
    "svg .strip{fill:#f6f8fa;stroke:var(--line)}\n"
    "table.runs{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}\n"
    "table.runs th{text-align:left;font-weight:600;color:var(--muted);border-bottom:2px solid var(--line);"
    "padding:6px 7px;vertical-align:bottom;line-height:1.25}\n"
    "table.runs th small{font-weight:400}\n"
    "table.runs td{border-bottom:1px solid var(--soft);padding:5px 7px;vertical-align:top}\n"
    "table.runs td.num{white-space:nowrap}\n"
    "table.runs .num{text-align:right}\n"
    "table.runs tr.on td{background:#f1f9f3}\n"
    "table.runs td.mark{color:var(--front);width:1.5em;text-align:center}\n"
    "table.runs td.pol{font-weight:600;white-space:nowrap}\n"
    "table.runs td.pol.long{white-space:normal;overflow-wrap:anywhere;min-width:12em}\n"
    "table.runs td.par{font-family:ui-monospace,\"SFMono-Regular\",Menlo,Consolas,\"DejaVu Sans Mono\",monospace;"
    "font-size:12px;color:#424a53;overflow-wrap:anywhere;max-width:420px}\n"
    "table.runs td.par .kv{white-space:nowrap}\n"
    "table.runs td.bad{color:var(--bad);font-weight:600}\n"
    "table.confirm td.verdict{white-space:nowrap;font-weight:600}\n"
    "table.confirm td.verdict.ok{color:var(--front)}\n"
    "table.confirm td.pol small{font-weight:400;color:var(--muted)}\n"
    "section.rec{background:#fff;border:1px solid var(--line);border-left:4px solid var(--res);border-radius:10px;"
    "padding:14px 22px 14px;margin:18px 0}\n"
    "section.rec h2 a{color:inherit;text-decoration:none}\n"
    ".pick{margin:6px 0 10px;font-size:15px}\n.pick .sub{color:var(--muted);font-size:13px}\n"
    ".pick .par{font-family:ui-monospace,\"SFMono-Regular\",Menlo,Consolas,\"DejaVu Sans Mono\",monospace;font-size:12.5px;"
    "color:#424a53;margin-left:6px}\n.pick .par .kv{white-space:nowrap}\n"
    ".cols{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:26px;align-items:start;margin-top:12px}\n"
    ".paste .cap{color:var(--muted);font-size:12.5px;margin:6px 0 3px}\n.paste code{font-size:12px}\n"
    ".paste pre,details.notes pre{margin:0;background:#f6f8fa;border:1px solid var(--line);border-radius:6px;"
    "padding:8px 11px;font-size:12.5px;line-height:1.5;white-space:pre-wrap;overflow-wrap:anywhere}\n"
    ".paste pre.env{background:#f0f6ff;border-color:#b6d0f5;color:#0a3069;font-weight:600}\n"
    ".paste pre span.c{color:var(--muted)}\n"
    "table.vs{border-collapse:collapse;font-size:13.5px;font-variant-numeric:tabular-nums}\n"
    "table.vs th{font-weight:600;color:var(--muted);text-align:left;border-bottom:2px solid var(--line);padding:4px 8px;"
    "vertical-align:bottom;line-height:1.25}\ntable.vs th small{font-weight:400}\n"
    "table.vs td{border-bottom:1px solid var(--soft);padding:4px 8px}\ntable.vs .num{text-align:right;white-space:nowrap}\n"
    "table.vs td.good{color:var(--front);font-weight:600}\ntable.vs td.bad{color:var(--bad);font-weight:600}\n"
    ".why{margin:0;font-size:13.5px}\n"
    ".warn{margin:10px 0 0;font-size:13px;background:#fff8c5;border:1px solid #eac54f;border-radius:6px;padding:6px 10px}\n"
    "table.vs td:first-child{white-space:nowrap}\n"
    "details.notes{margin-top:8px;font-size:13px;color:var(--muted)}\ndetails.notes pre{color:var(--fg);margin-top:6px}\n"
    "details.more{margin-top:14px}\ndetails.more summary,details.notes summary{cursor:pointer;color:var(--muted)}\n"
    "details.more summary{font-size:12px;text-transform:uppercase;letter-spacing:.07em;margin-bottom:9px}\n"
    ".sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:-1px}\n"
    "footer{color:var(--muted);font-size:12.5px;margin-top:8px}\n"
    "footer p{margin:4px 0}\n";

/* Timeline geometry (viewBox units = CSS pixels at 100%). */
#define TL_W 640
#define TL_H 262
#define TL_L 58
#define TL_R 14
#define TL_T 52
#define TL_B 222

/* Downsample to at most PT_REPORT_MAX_POINTS, each bucket keeping its maxima at its last event. */
static size_t downsample(const pt_sim_point *in, size_t n, pt_sim_point *out) {
  if (n <= PT_REPORT_MAX_POINTS) {
    if (n) memcpy(out, in, n * sizeof *in);
    return n;
  }
  for (size_t b = 0; b < PT_REPORT_MAX_POINTS; b++) {
    size_t lo = b * n / PT_REPORT_MAX_POINTS, hi = (b + 1) * n / PT_REPORT_MAX_POINTS;
    pt_sim_point q = in[hi - 1];
    for (size_t i = lo; i < hi; i++) {
      if (in[i].reserved > q.reserved) q.reserved = in[i].reserved;
      if (in[i].allocated > q.allocated) q.allocated = in[i].allocated;
    }
    out[b] = q;
  }
  return PT_REPORT_MAX_POINTS;
}

/* One series as a step area: each point's value holds from the previous point's event to its own. */
static void step_path(FILE *f, const char *cls, const pt_sim_point *pts, size_t n, int allocated, const axis *x,
                      const axis *y, double unit) {
  int area = strcmp(cls, "base") != 0; /* "base" is a line over another run's area: not closed */
  double base = ax_map(y, y->lo);
  fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1f", cls, ax_map(x, 0), base);
  for (size_t i = 0; i < n; i++) {
    double v = (double)(allocated ? pts[i].allocated : pts[i].reserved) / unit;
    fprintf(f, "V%.1fH%.1f", ax_map(y, v), ax_map(x, (double)pts[i].event));
  }
  if (area) fprintf(f, "V%.1fZ", base);
  fputs("\"/>\n", f);
}

/* Horizontal grid, y ticks and axis lines for a plot box. */
static void draw_axes(FILE *f, const axis *x, const axis *y, int x_events, int x_ticks, double x_top,
                      double y_right) {
  double v[64];
  char lab[48];
  size_t nt = ax_ticks(y, v, 64);
  fputs("<g class=\"grid\">", f);
  for (size_t i = 0; i < nt; i++)
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x->p0, y_right, ax_map(y, v[i]),
            ax_map(y, v[i]));
  fputs("</g>\n", f);
  for (size_t i = 0; i < nt; i++) {
    tick_label(lab, sizeof lab, y, v[i]);
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", x->p0 - 6,
            ax_map(y, v[i]) + 3.5, lab);
  }
  nt = x_ticks ? ax_ticks(x, v, 64) : 0;
  for (size_t i = 0; i < nt; i++) {
    if (x_events) tick_events(lab, sizeof lab, x, v[i]);
    else tick_label(lab, sizeof lab, x, v[i]);
    double px = ax_map(x, v[i]);
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", px, px, y->p0,
            y->p0 + 4);
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", px, y->p0 + 16,
            lab);
  }
  fprintf(f, "\n<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x->p0, y_right, y->p0,
          y->p0);
  fprintf(f, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", x->p0, x->p0, y->p0,
          x_top);
}

/* Shared scales of a trace's timelines. */
typedef struct tl_scale {
  double max_event, max_bytes, unit;
  const char *unit_name;
} tl_scale;

/* A timeline's axes, their titles, and r's reserved and allocated areas (or a note that it has none). */
static void timeline_plot(FILE *f, const pt_report_run *r, const axis *x, const axis *y, const tl_scale *s, pt_sim_point *buf,
                          double top, double right, int height) {
  draw_axes(f, x, y, 1, 1, top, right);
  fprintf(f, "<text class=\"axt\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">event</text>\n", (x->p0 + x->p1) / 2,
          height - 6);
  fprintf(f, "<text class=\"axt\" transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
          (y->p0 + y->p1) / 2, s->unit_name);
  if (r->ntimeline && r->timeline) {
    size_t m = downsample(r->timeline, r->ntimeline, buf);
    step_path(f, "res", buf, m, 0, x, y, s->unit);
    step_path(f, "alloc", buf, m, 1, x, y, s->unit);
  } else {
    fprintf(f, "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no timeline recorded</text>\n",
            (x->p0 + x->p1) / 2, (y->p0 + y->p1) / 2);
  }
}

static void timeline_svg(FILE *f, const pt_report_run *r, const tl_scale *s, pt_sim_point *buf) {
  char params[1200], a[48], b[48];
  fmt_params(r->params_json, r->capacity, params, sizeof params);
  axis x = {.p0 = TL_L, .p1 = TL_W - TL_R}, y = {.p0 = TL_B, .p1 = TL_T};
  ax_linear(&x, 0, s->max_event, 0, 6, 8, 1);
  ax_linear(&y, 0, s->max_bytes / s->unit, 0, 4, 5, 1);

  fprintf(f, "<figure><svg class=\"timeline\" data-run=\"%" PRId64 "\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
          r->id, TL_W, TL_H);
  fputs("<title>", f);
  html_text(f, r->policy, 0);
  fprintf(f, " #%" PRId64 " ", r->id);
  html_text(f, params, 0);
  fputs("</title>\n", f);
  /* title line: policy, id, parameters cut to the width the legend leaves (estimated glyph widths) */
  size_t pol = utf8_len(str_or(r->policy, ""));
  char id[32];
  snprintf(id, sizeof id, " #%" PRId64, r->id);
  double used = 10 + 7.6 * (double)(pol > 40 ? 40 : pol) + 6.2 * (double)strlen(id) + 8;
  double avail = (TL_W - TL_R - 156) - used;
  size_t pchars = avail > 0 ? (size_t)(avail / 6.9) : 0;
  fputs("<text x=\"10\" y=\"20\"><tspan class=\"ttl\">", f);
  html_text(f, r->policy, 40);
  fprintf(f, "</tspan><tspan class=\"sub\">%s</tspan>", id);
  if (params[0] && pchars >= 8) {
    fputs("<tspan class=\"par\" dx=\"8\">", f);
    html_text(f, params, pchars);
    fputs("</tspan>", f);
  }
  fputs("</text>\n", f);
  fmt_bytes(a, sizeof a, (double)r->peak_reserved_bytes);
  fmt_bytes(b, sizeof b, (double)r->peak_allocated_bytes);
  fprintf(f, "<text class=\"sub\" x=\"10\" y=\"38\">peak reserved %s · allocated %s", a, b);
  if (isfinite(r->fragmentation)) fprintf(f, " · fragmentation %.1f%%", 100 * r->fragmentation);
  fprintf(f, " · %" PRIu64 " segment%s", r->segments_allocated, r->segments_allocated == 1 ? "" : "s");
  if (r->ooms) fprintf(f, " · <tspan style=\"fill:var(--bad)\">%" PRIu64 " OOM</tspan>", r->ooms);
  fputs("</text>\n", f);
  /* legend, top right */
  fprintf(f,
          "<g transform=\"translate(%d 14)\"><rect x=\"0\" y=\"0\" width=\"10\" height=\"10\" rx=\"2\" "
          "class=\"lg res\"/><text x=\"15\" y=\"9\">reserved</text><rect x=\"76\" y=\"0\" width=\"10\" "
          "height=\"10\" rx=\"2\" class=\"lg alloc\"/><text x=\"91\" y=\"9\">allocated</text></g>\n",
          TL_W - TL_R - 146);
  timeline_plot(f, r, &x, &y, s, buf, TL_T, TL_W - TL_R, TL_H);
  if (r->capacity && (double)r->capacity / s->unit <= y.hi) {
    double py = ax_map(&y, (double)r->capacity / s->unit);
    fprintf(f, "<line class=\"capl\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x.p0, x.p1, py, py);
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">capacity</text>\n", x.p1 - 4,
            py - 4);
  }
  fputs("</svg></figure>\n", f);
}

/* The overlay's geometry: as wide as the Pareto plot. */
#define OV_W 1240
#define OV_H 300
#define OV_L 66
#define OV_R 18
#define OV_T 50
#define OV_B 258

/*
 * The recommended run's timeline with the captured settings' reserved bytes
 * drawn over it (b may be NULL: r alone), on the trace's shared scales.
 */
static void overlay_svg(FILE *f, const pt_report_run *r, const pt_report_run *b, const tl_scale *s, pt_sim_point *buf) {
  char x1[48], x2[48];
  axis x = {.p0 = OV_L, .p1 = OV_W - OV_R}, y = {.p0 = OV_B, .p1 = OV_T};
  ax_linear(&x, 0, s->max_event, 0, 10, 12, 1);
  ax_linear(&y, 0, s->max_bytes / s->unit, 0, 4, 6, 1);
  fprintf(f, "<figure class=\"wide\"><svg class=\"overlay\" data-run=\"%" PRId64 "\" data-baseline=\"%" PRId64
             "\" viewBox=\"0 0 %d %d\" role=\"img\">\n<title>",
          r->id, b ? b->id : 0, OV_W, OV_H);
  html_text(f, r->policy, 0);
  fprintf(f, " #%" PRId64 " against the captured settings</title>\n", r->id);
  fputs("<text x=\"10\" y=\"20\"><tspan class=\"ttl\">recommended: ", f);
  html_text(f, r->policy, 40);
  fprintf(f, "</tspan><tspan class=\"sub\"> #%" PRId64 "</tspan>", r->id);
  if (b) {
    fputs("<tspan class=\"ttl\" dx=\"14\">captured settings: ", f);
    html_text(f, b->policy, 40);
    fprintf(f, "</tspan><tspan class=\"sub\"> #%" PRId64 "</tspan>", b->id);
  }
  fputs("</text>\n", f);
  fmt_bytes(x1, sizeof x1, (double)r->peak_reserved_bytes);
  fmt_bytes(x2, sizeof x2, b ? (double)b->peak_reserved_bytes : 0);
  fprintf(f, "<text class=\"sub\" x=\"10\" y=\"38\">peak reserved %s", x1);
  if (b) fprintf(f, " against %s", x2);
  fmt_bytes(x1, sizeof x1, (double)r->peak_allocated_bytes);
  fprintf(f, " · peak allocated %s</text>\n", x1);
  fprintf(f,
          "<g transform=\"translate(%d 14)\"><rect x=\"0\" y=\"0\" width=\"10\" height=\"10\" rx=\"2\" "
          "class=\"lg res\"/><text x=\"15\" y=\"9\">reserved, recommended</text>"
          "<line class=\"base\" x1=\"158\" x2=\"180\" y1=\"5\" y2=\"5\"/><text x=\"186\" y=\"9\">reserved, captured</text>"
          "<rect x=\"310\" y=\"0\" width=\"10\" height=\"10\" rx=\"2\" class=\"lg alloc\"/>"
          "<text x=\"325\" y=\"9\">allocated</text></g>\n",
          OV_W - OV_R - 385);
  timeline_plot(f, r, &x, &y, s, buf, OV_T, OV_W - OV_R, OV_H);
  if (b && b->ntimeline && b->timeline) {
    size_t m = downsample(b->timeline, b->ntimeline, buf);
    step_path(f, "base", buf, m, 0, &x, &y, s->unit);
  }
  fputs("</svg></figure>\n", f);
}

/* Pareto geometry. */
#define PA_W 1240
#define PA_H 440
#define PA_L 74
#define PA_R 22
#define PA_T 40
#define PA_B 388
#define PA_STRIP 96     /* band on the right for runs without a predicted time */
#define PA_MAX_LABELS 60 /* more runs than this: only the front is labelled (points keep a tooltip) */
#define PA_CHAR 6.3     /* estimated width of a label character */
#define PA_CHAR_BOLD 6.9 /* ... of a front label's (semibold) */

typedef struct box {
  double x0, y0, x1, y1;
} box;

static int overlaps(const box *a, const box *b) {
  return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/*
 * The first of a few spots around (px, py) where a label of estimated width w
 * hits nothing placed yet.  *anchor says which edge the text is anchored to
 * (0 start, 1 middle, 2 end), the edge next to the point: where the estimate
 * is off, the text then grows away from its point instead of over it.
 */
static box place_label(double px, double py, double w, const box *taken, size_t ntaken, const box *area,
                       int *anchor, int *crowded /* OUT: 1 when no spot was free */) {
  *crowded = 0;
  const double dx[] = {9, -9 - w, -w / 2, -w / 2, 9, 9, -9 - w, -9 - w, -6, -6, 6 - w, 6 - w, 4, 4, -w / 2, -w / 2};
  const double dy[] = {-7, -7, -21, 7, -19, 5, -19, 5, -22, 8, -22, 8, -32, 18, -34, 20};
  const int an[] = {0, 2, 1, 1, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 1, 1};
  for (int k = 0; k < 16; k++) {
    box c = {px + dx[k], py + dy[k], px + dx[k] + w, py + dy[k] + 14};
    if (c.x0 < area->x0 || c.x1 > area->x1 || c.y0 < area->y0 || c.y1 > area->y1) continue;
    size_t i = 0;
    while (i < ntaken && !overlaps(&c, &taken[i])) i++;
    if (i == ntaken) {
      *anchor = an[k];
      return c;
    }
  }
  *crowded = 1;
  int left = px + 9 + w > area->x1; /* crowded everywhere: beside the point, on the side with room */
  *anchor = left ? 2 : 0;
  return left ? (box){px - 9 - w, py - 7, px - 9, py + 7} : (box){px + 9, py - 7, px + 9 + w, py + 7};
}

/* Does another run of this trace have the same policy name (then labels add the id)? */
static int name_repeats(const pt_report_run **p, size_t m, size_t j) {
  for (size_t i = 0; i < m; i++)
    if (i != j && !strcmp(str_or(p[i]->policy, ""), str_or(p[j]->policy, ""))) return 1;
  return 0;
}

/* The Pareto plot of a trace's runs; rec_id and base_id (0: none) are ringed and named. */
static int pareto_svg(FILE *f, const pt_report_run *runs, const pt_report_run **p, size_t m, const int *front, int64_t rec_id,
                      int64_t base_id) {
  size_t ntimed = 0, nuntimed = 0;
  double tmin = INFINITY, tmax = -INFINITY, mmax = 0, mmin = INFINITY;
  for (size_t j = 0; j < m; j++) {
    double t = p[j]->predicted_alloc_us / 1000, b = (double)p[j]->peak_reserved_bytes;
    if (isfinite(t)) {
      ntimed++;
      if (t < tmin) tmin = t;
      if (t > tmax) tmax = t;
    } else {
      nuntimed++; /* NAN, or an infinite time: nowhere on a finite axis */
    }
    if (b > mmax) mmax = b;
    if (b < mmin) mmin = b;
  }
  const char *uname;
  double unit = mem_unit(mmax, &uname);
  double right = PA_W - PA_R - (nuntimed ? PA_STRIP : 0);
  axis x = {.p0 = PA_L, .p1 = right}, y = {.p0 = PA_B, .p1 = PA_T};
  if (ntimed && tmin > 0 && tmax / tmin >= 30) ax_log(&x, tmin, tmax);
  else if (ntimed) ax_linear(&x, tmin, tmax, 0.08, 6, 9, 0);
  else ax_linear(&x, 0, 1, 0, 4, 5, 1);
  ax_linear(&y, mmin / unit, mmax / unit, 0.1, 5, 7, 0);

  box *taken = malloc((4 * m + 1) * sizeof *taken); /* points, stair segments, labels */
  const pt_report_run **stair = malloc((m ? m : 1) * sizeof *stair);
  if (!taken || !stair) {
    free(taken);
    free(stair);
    return PT_ENOMEM;
  }
  fprintf(f, "<figure class=\"wide\"><svg class=\"pareto\" viewBox=\"0 0 %d %d\" role=\"img\">\n", PA_W, PA_H);
  fputs("<title>Predicted allocator time against peak reserved memory</title>\n", f);
  /* legend */
  fprintf(f,
          "<g transform=\"translate(%d 18)\"><circle class=\"pt on\" cx=\"0\" cy=\"0\" r=\"5.5\"/>"
          "<text x=\"10\" y=\"4\">Pareto front</text><circle class=\"pt\" cx=\"104\" cy=\"0\" r=\"4.5\"/>"
          "<text x=\"114\" y=\"4\">dominated</text></g>\n",
          PA_W - PA_R - 186);
  fprintf(f, "<text class=\"sub\" x=\"%d\" y=\"22\">lower left is better: fewer ms in the allocator, "
             "less memory held</text>\n", PA_L);
  draw_axes(f, &x, &y, 0, ntimed > 0, PA_T, right);
  fprintf(f, "<text class=\"axt\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">predicted allocator time (ms%s)</text>\n",
          (x.p0 + x.p1) / 2, PA_H - 10, x.log ? ", log scale" : "");
  fprintf(f, "<text class=\"axt\" transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">"
             "peak reserved (%s)</text>\n", (y.p0 + y.p1) / 2, uname);
  double sx = right + PA_STRIP / 2.0;
  if (nuntimed) {
    fprintf(f, "<rect class=\"strip\" x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\"/>", right + 8, PA_T,
            PA_STRIP - 8, PA_B - PA_T);
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">no predicted</text>"
               "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">time</text>\n",
            sx + 4, PA_B + 16, sx + 4, PA_B + 28);
  }
  if (!ntimed)
    fprintf(f, "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no predicted allocator "
               "times: these runs had no GPU description</text>\n", (x.p0 + x.p1) / 2, (y.p0 + y.p1) / 2);

  /* the front's staircase and the region it dominates */
  size_t ns = 0;
  for (size_t j = 0; j < m; j++)
    if (front[p[j] - runs] && isfinite(p[j]->predicted_alloc_us)) stair[ns++] = p[j];
  qsort(stair, ns, sizeof *stair, cmp_pareto);
  if (ns) {
    double px = ax_map(&x, stair[0]->predicted_alloc_us / 1000);
    double py = ax_map(&y, (double)stair[0]->peak_reserved_bytes / unit);
    fprintf(f, "<path class=\"dom\" d=\"M%.1f %d V%.1f", px, PA_T, py);
    for (size_t j = 1; j < ns; j++)
      fprintf(f, "H%.1fV%.1f", ax_map(&x, stair[j]->predicted_alloc_us / 1000),
              ax_map(&y, (double)stair[j]->peak_reserved_bytes / unit));
    fprintf(f, "H%.1fV%dZ\"/>\n", right, PA_T);
    if (ns > 1) {
      fprintf(f, "<path class=\"stair\" d=\"M%.1f %.1f", px, py);
      for (size_t j = 1; j < ns; j++)
        fprintf(f, "H%.1fV%.1f", ax_map(&x, stair[j]->predicted_alloc_us / 1000),
                ax_map(&y, (double)stair[j]->peak_reserved_bytes / unit));
      fputs("\"/>\n", f);
    }
  }

  /* points (dominated first, so the front draws on top), then their labels */
  size_t nt = 0;
  double *cx = malloc((m ? m : 1) * 2 * sizeof *cx);
  if (!cx) {
    free(taken);
    free(stair);
    return PT_ENOMEM;
  }
  double *cy = cx + m;
  for (size_t j = 0; j < m; j++) {
    double t = p[j]->predicted_alloc_us / 1000;
    cx[j] = isfinite(t) ? ax_map(&x, t) : sx + 4;
    cy[j] = ax_map(&y, (double)p[j]->peak_reserved_bytes / unit);
    double rad = p[j]->id == rec_id || p[j]->id == base_id ? 11 : 6; /* a ringed point: the ring */
    if (m <= PT_REPORT_HTML_RUNS || front[p[j] - runs] || rad > 6) /* a large cloud: labels keep off the front's only */
      taken[nt++] = (box){cx[j] - rad, cy[j] - rad, cx[j] + rad, cy[j] + rad};
  }
  for (size_t j = 0; j + 1 < ns; j++) { /* labels keep off the staircase too */
    double x0 = ax_map(&x, stair[j]->predicted_alloc_us / 1000), x1 = ax_map(&x, stair[j + 1]->predicted_alloc_us / 1000);
    double y0 = ax_map(&y, (double)stair[j]->peak_reserved_bytes / unit);
    double y1 = ax_map(&y, (double)stair[j + 1]->peak_reserved_bytes / unit);
    taken[nt++] = (box){x0, y0 - 2, x1, y0 + 2};
    taken[nt++] = (box){x1 - 2, y0 < y1 ? y0 : y1, x1 + 2, y0 < y1 ? y1 : y0};
  }
  pt_u64map drawn = {0}; /* of a large cloud, one point of each kind a half pixel: the rest would draw over it */
  for (int pass = 0; pass < 2; pass++)
    for (size_t j = 0; j < m; j++) {
      int on = front[p[j] - runs];
      if (on != pass) continue;
      if (m > PT_REPORT_HTML_RUNS) {
        uint64_t at = (uint64_t)lround(cx[j] * 2) << 33 | (uint64_t)lround(cy[j] * 2) << 1 | (uint64_t)on;
        if (pt_u64map_get(&drawn, at)) continue;
        if (pt_u64map_put(&drawn, at, 1) < 0) {
          pt_u64map_free(&drawn);
          free(cx), free(taken), free(stair);
          return PT_ENOMEM;
        }
      }
      fprintf(f, "<circle class=\"pt%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\"><title>", on ? " on" : "", cx[j], cy[j],
              on ? "6" : "4.5");
      html_text(f, p[j]->policy, 0);
      fprintf(f, " #%" PRId64 "</title></circle>\n", p[j]->id);
    }
  for (size_t j = 0; j < m; j++) /* the recommended run and the captured settings, ringed */
    if (p[j]->id == rec_id || p[j]->id == base_id)
      fprintf(f, "<circle class=\"ring %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"10\"/>\n", p[j]->id == rec_id ? "rec" : "cap", cx[j],
              cy[j]);
  box area = {PA_L + 2, PA_T - 2, PA_W - 4, PA_B + 2}; /* inside the plot: left of it are the ticks and the axis title */
  /* the two named runs get the first pick of places, then the front's labels, then the rest; of a large trace, at
     most PA_MAX_LABELS of its front (its runs can tie by the thousand) */
  size_t labels = 0;
  for (int pass = 2; pass >= 0; pass--)
    for (size_t j = 0; j < m; j++) {
      int on = front[p[j] - runs], named = p[j]->id == rec_id || p[j]->id == base_id;
      if ((named ? 2 : on) != pass || (!on && !named && m > PA_MAX_LABELS)) continue;
      if (!named && m > PT_REPORT_HTML_RUNS && labels++ >= PA_MAX_LABELS) continue;
      const char *name = str_or(p[j]->policy, "");
      size_t len = utf8_len(name);
      if (len > 28) len = 28;
      char id[64] = "";
      if (name_repeats(p, m, j)) snprintf(id, sizeof id, " #%" PRId64, p[j]->id);
      const char *role = p[j]->id == rec_id ? " (recommended)" : p[j]->id == base_id ? " (captured)" : "";
      double w = (on || named ? PA_CHAR_BOLD : PA_CHAR) * (double)(len + strlen(id) + strlen(role)) + 2;
      int anchor, crowded;
      box b = place_label(cx[j], cy[j], w, taken, nt, &area, &anchor, &crowded);
      if (crowded && pass == 0) continue; /* a dominated run's label over another's is unreadable: its point keeps a tooltip */
      taken[nt++] = b;
      static const char *const anchors[] = {"start", "middle", "end"};
      const char *cls = p[j]->id == rec_id ? " rec" : p[j]->id == base_id ? " cap" : on ? " on" : "";
      fprintf(f, "<text class=\"lbl%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", cls,
              anchor == 0 ? b.x0 : anchor == 1 ? (b.x0 + b.x1) / 2 : b.x1, b.y1 - 3.5, anchors[anchor]);
      html_text(f, name, 28);
      fprintf(f, "%s%s</text>\n", id, role);
    }
  fputs("</svg></figure>\n", f);
  pt_u64map_free(&drawn);
  free(cx);
  free(taken);
  free(stair);
  return 0;
}

/* A space-separated list as items that wrap between, not inside, themselves (short ones). */
static void html_items(FILE *f, const char *s) {
  char item[1200];
  while (*s) {
    size_t n = strcspn(s, " ");
    if (n) {
      size_t k = n < sizeof item ? n : sizeof item - 1;
      memcpy(item, s, k);
      item[k] = 0;
      fputs(n <= 40 ? "<span class=\"kv\">" : "<span>", f);
      html_text(f, item, 0);
      fputs("</span> ", f);
    }
    s += n;
    while (*s == ' ') s++;
  }
}

static void table_html(FILE *f, const pt_report_run *runs, const pt_report_run **p, size_t m, const int *front) {
  char params[1200];
  fputs("<table class=\"runs\"><thead><tr><th></th><th class=\"num\">id</th><th>policy</th><th>mechanism</th>"
        "<th>parameters</th><th class=\"num\">peak reserved<br><small>MiB</small></th>"
        "<th class=\"num\">peak allocated<br><small>MiB</small></th>"
        "<th class=\"num\">fragmentation<br><small>%</small></th><th class=\"num\">segments</th>"
        "<th class=\"num\">driver calls</th><th class=\"num\">predicted alloc<br><small>ms</small></th>"
        "<th class=\"num\">OOMs</th></tr></thead>\n<tbody>\n", f);
  for (size_t j = 0; j < m; j++) {
    const pt_report_run *r = p[j];
    int on = front[r - runs];
    fmt_params(r->params_json, r->capacity, params, sizeof params);
    fprintf(f, "<tr%s><td class=\"mark\"%s>%s</td><td class=\"num\">%" PRId64 "</td><td class=\"pol%s\">",
            on ? " class=\"on\"" : "", on ? " title=\"on the Pareto front\"" : "", on ? "\xE2\x98\x85" : "",
            r->id, utf8_len(str_or(r->policy, "")) > 32 ? " long" : "");
    html_text(f, r->policy, 0);
    fputs("</td><td>", f);
    html_text(f, r->mechanism, 0);
    fputs("</td><td class=\"par\">", f);
    if (params[0]) html_items(f, params);
    else fputs("\xE2\x80\x94", f);
    fprintf(f, "</td><td class=\"num\">%.1f</td><td class=\"num\">%.1f</td>",
            (double)r->peak_reserved_bytes / MIB, (double)r->peak_allocated_bytes / MIB);
    if (isfinite(r->fragmentation)) fprintf(f, "<td class=\"num\">%.1f</td>", 100 * r->fragmentation);
    else fputs("<td class=\"num\">\xE2\x80\x94</td>", f);
    fprintf(f, "<td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64 "</td>", r->segments_allocated,
            r->driver_calls_total);
    if (isnan(r->predicted_alloc_us)) fputs("<td class=\"num\">\xE2\x80\x94</td>", f);
    else fprintf(f, "<td class=\"num\">%.2f</td>", r->predicted_alloc_us / 1000);
    fprintf(f, "<td class=\"num%s\">%" PRIu64 "</td></tr>\n", r->ooms ? " bad" : "", r->ooms);
  }
  fputs("</tbody></table>\n", f);
}

static void html_gain_cells(FILE *f, const pt_confirm_gain *g) {
  char a[32], b[32], iv[48];
  pt_confirm_fmt_gain(a, sizeof a, g->predicted);
  pt_confirm_fmt_gain(b, sizeof b, g->measured);
  pt_confirm_fmt_interval(iv, sizeof iv, g);
  const char *cls = g->verdict == PT_VERDICT_CONFIRMED ? "ok" : g->verdict == PT_VERDICT_REFUTED ? "bad" : "";
  fprintf(f, "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"verdict %s\">%s</td>", a, b,
          iv, cls, pt_confirm_verdict_name(g->verdict));
}

/* The trace's confirmations: one row a metric, the measured medians beside the predicted figures. */
static void confirms_html(FILE *f, const char *trace, const pt_report_confirm *c, size_t nc) {
  int any = 0;
  for (size_t i = 0; i < nc; i++) {
    const pt_report_confirm *k = &c[i];
    if (strcmp(str_or(k->trace, ""), trace)) continue;
    if (!any)
      fputs("<h3>Measured on a GPU: the workload under both configurations (pagetune confirm)</h3>\n"
            "<table class=\"runs confirm\"><thead><tr><th class=\"num\">#</th><th>tuned</th><th>baseline</th>"
            "<th>metric</th><th class=\"num\">predicted<br><small>baseline \xE2\x86\x92 tuned</small></th>"
            "<th class=\"num\">measured<br><small>medians</small></th><th class=\"num\">predicted<br><small>gain</small></th>"
            "<th class=\"num\">measured<br><small>gain</small></th><th class=\"num\">95% interval</th><th>verdict</th>"
            "</tr></thead>\n<tbody>\n", f);
    any = 1;
    char a[32], b[32];
    for (int j = 0; j < 2; j++) {
      fputs("<tr>", f);
      if (j == 0) {
        fprintf(f, "<td class=\"num\" rowspan=\"2\">%" PRId64 "</td><td class=\"pol\" rowspan=\"2\">run %" PRId64 " ", k->id,
                k->tuned_run);
        html_text(f, k->tuned_policy, 40);
        fputs("<br><small>", f);
        html_text(f, alloc_name(k->tuned_allocator), 0);
        fprintf(f, "</small></td><td class=\"pol\" rowspan=\"2\">run %" PRId64 " ", k->baseline_run);
        html_text(f, k->baseline_policy, 40);
        fputs("<br><small>", f);
        html_text(f, alloc_name(k->baseline_allocator), 0);
        fprintf(f, "<br>%d runs each<br>", k->runs_per_arm);
        html_text(f, k->measured_at, 0);
        if (k->hostname && *k->hostname) fputs(", ", f), html_text(f, k->hostname, 40);
        if (k->gpu_name && *k->gpu_name) fputs(", ", f), html_text(f, k->gpu_name, 40);
        fputs("</small></td>", f);
      }
      const pt_confirm_gain *g = j ? &k->peak : &k->time;
      fputs("<td>", f);
      html_text(f, j ? "peak reserved" : time_label(k), 0);
      fputs("</td>", f);
      if (j) {
        pt_confirm_fmt_mib(a, sizeof a, (double)k->baseline_predicted_peak);
        pt_confirm_fmt_mib(b, sizeof b, (double)k->tuned_predicted_peak);
      } else {
        pt_confirm_fmt_seconds(a, sizeof a, k->baseline_predicted_us * 1e-6);
        pt_confirm_fmt_seconds(b, sizeof b, k->tuned_predicted_us * 1e-6);
      }
      fprintf(f, "<td class=\"num\">%s%s \xE2\x86\x92 %s</td>", j ? "" : "allocator ", a, b);
      (j ? pt_confirm_fmt_mib : pt_confirm_fmt_seconds)(a, sizeof a, g->base_median);
      (j ? pt_confirm_fmt_mib : pt_confirm_fmt_seconds)(b, sizeof b, g->tuned_median);
      fprintf(f, "<td class=\"num\">%s \xE2\x86\x92 %s</td>", a, b);
      html_gain_cells(f, g);
      fputs("</tr>\n", f);
    }
  }
  if (any)
    fputs("</tbody></table>\n<p class=\"facts\">Gain = (baseline \xE2\x88\x92 tuned) / baseline of the arms' medians, with a 95% "
          "bootstrap interval over runs. The predicted time gain is the allocator time saved over the trace as a share of the "
          "baseline's measured time. <b>confirmed</b>: the interval excludes 0 on the prediction's side; <b>refuted</b>: it excludes "
          "0 on the other side (or at all when no change was predicted), or holds 0 but not the predicted gain; <b>within "
          "noise</b>: it holds 0 and the predicted gain.</p>\n", f);
}

/* The run of id among a trace's runs (NULL: none). */
static const pt_report_run *group_run(const pt_report_run **p, size_t m, int64_t id) {
  for (size_t j = 0; id && j < m; j++)
    if (p[j]->id == id) return p[j];
  return NULL;
}

/* The export's lines, one <span> a line, comments dimmed. */
static void html_lines(FILE *f, const char *s, const char *cls_comment) {
  char line[LINE_MAX_];
  while (line_next(&s, line, sizeof line)) {
    fprintf(f, "<span%s>", line[0] == '#' && cls_comment ? cls_comment : "");
    html_text(f, line, 0);
    fputs("</span>\n", f);
  }
}

static void html_warning(FILE *f, const char *line) {
  fputs("<p class=\"warn\"><b>Warning.</b> ", f);
  html_text(f, line, 0);
  fputs("</p>\n", f);
}

static void html_note(FILE *f, const char *line) {
  html_text(f, line, 0);
  fputc('\n', f);
}

/* The first screen's answer for one trace (k: its section's number, for the link). */
static void html_rec(FILE *f, const pt_report_run **p, size_t m, const pt_report_rec *rec, size_t k) {
  const pt_report_run *r = group_run(p, m, rec->run), *b = group_run(p, m, rec->baseline);
  char params[1200], why[2048];
  fprintf(f, "<section class=\"rec\">\n<h2><span class=\"k\">recommended for</span> <a href=\"#trace-%zu\">", k);
  html_text(f, rec->trace, 0);
  fputs("</a></h2>\n", f);
  if (!r) {
    fputs("<p class=\"facts\">Nothing to recommend: every run of this trace ran out of memory or is <b>direct</b> "
          "(one driver call per request), and neither is ever recommended.</p>\n</section>\n", f);
    return;
  }
  fmt_params(r->params_json, r->capacity, params, sizeof params);
  fputs("<p class=\"pick\"><b>", f);
  html_text(f, r->policy, 60);
  fprintf(f, "</b> <span class=\"sub\">run #%" PRId64 "</span> <span class=\"par\">", r->id);
  if (params[0]) html_items(f, params);
  fputs("</span>", f);
  if (rec->chosen_by) {
    fputs(" <span class=\"sub\">\xC2\xB7 chosen by ", f);
    html_text(f, rec->chosen_by, 0);
    fputs("</span>", f);
  }
  const char *env = str_or(rec->paste, ""), *code = str_or(rec->code, "");
  fputs("</p>\n<div class=\"paste\"><div class=\"cap\">", f);
  if (rec->paste) /* NULL: no export (a warning says why) */
    fputs(*env ? "paste into the job's environment" : "in the job's environment: <b>nothing to set</b> (PyTorch's defaults)", f);
  if (rec->command) {
    fputs(" \xC2\xB7 <code>", f);
    html_text(f, rec->command, 0);
    fputs("</code> prints it with its notes", f);
  }
  fputs("</div>\n", f);
  if (*env) {
    fputs("<pre class=\"env\">", f);
    html_lines(f, env, " class=\"c\"");
    fputs("</pre>\n", f);
  }
  if (*code) {
    fputs("<div class=\"cap\">in the program, before the first CUDA allocation</div>\n<pre class=\"code\">", f);
    html_lines(f, code, NULL);
    fputs("</pre>\n", f);
  }
  fputs("</div>\n<div class=\"cols\">\n<table class=\"vs\"><thead><tr><th></th><th class=\"num\">recommended</th><th class=\"num\">captured"
        "<br><small>", f);
  if (b) {
    html_text(f, str_or(rec->baseline_desc, "the captured settings"), 60);
    fprintf(f, ", #%" PRId64, b->id);
  } else {
    fputs("not stored", f);
  }
  fputs("</small></th><th class=\"num\">change</th></tr></thead>\n<tbody>\n", f);
  vs_row v[5];
  size_t nv = vs_rows(r, b, v);
  for (size_t i = 0; i < nv; i++)
    fprintf(f, "<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num%s\">%s</td></tr>\n",
            v[i].label, v[i].a, v[i].b, v[i].better > 0 ? " good" : v[i].better < 0 ? " bad" : "", v[i].change);
  fputs("</tbody></table>\n<p class=\"why\"><b>Why.</b> ", f);
  html_text(f, pt_report_why(r, b, why, sizeof why), 0);
  if (!b) {
    fputs(" No run of ", f);
    html_text(f, str_or(rec->baseline_desc, "the captured settings"), 0);
    fputs(" is stored at this capacity and GPU: sweep it to compare.", f);
  }
  fputs("</p>\n</div>\n", f);
  /* the export's warnings in full (what a user must know before pasting), the rest of its notes folded */
  each_note(f, rec->notes, 1, html_warning);
  size_t nn = each_note(f, rec->notes, 0, NULL);
  if (nn) {
    fprintf(f, "<details class=\"notes\"><summary>What else the export notes (%zu)</summary><pre>", nn);
    each_note(f, rec->notes, 0, html_note);
    fputs("</pre></details>\n", f);
  }
  fputs("</section>\n", f);
}

static int trace_html(FILE *f, const pt_report_run *runs, const pt_report_run **p, size_t m, const int *front,
                      char *shown, pt_sim_point *buf, const pt_report_rec *rec, size_t k,
                      const pt_report_confirm *confirms, size_t nconfirms) {
  /* facts: events, least memory, fastest predicted (among runs that may headline) */
  tl_scale s = {0};
  const pt_report_run *least = NULL, *fastest = NULL;
  size_t oom = 0;
  for (size_t j = 0; j < m; j++) {
    const pt_report_run *r = p[j];
    if ((double)r->peak_reserved_bytes > s.max_bytes) s.max_bytes = (double)r->peak_reserved_bytes;
    if ((double)r->peak_allocated_bytes > s.max_bytes) s.max_bytes = (double)r->peak_allocated_bytes;
    for (size_t i = 0; r->timeline && i < r->ntimeline; i++) {
      const pt_sim_point *q = &r->timeline[i];
      if ((double)q->event > s.max_event) s.max_event = (double)q->event;
      if ((double)q->reserved > s.max_bytes) s.max_bytes = (double)q->reserved;
      if ((double)q->allocated > s.max_bytes) s.max_bytes = (double)q->allocated;
    }
    oom += r->ooms != 0;
    if (!pt_report_recommendable(r)) continue;
    if (!least || r->peak_reserved_bytes < least->peak_reserved_bytes) least = r;
    if (isfinite(r->predicted_alloc_us) && (!fastest || r->predicted_alloc_us < fastest->predicted_alloc_us))
      fastest = r;
  }
  for (size_t j = 0; j < m; j++) /* a cap just above the peaks is worth showing */
    if (p[j]->capacity && (double)p[j]->capacity <= 1.5 * s.max_bytes && (double)p[j]->capacity > s.max_bytes)
      s.max_bytes = (double)p[j]->capacity;
  if (s.max_event < 1) s.max_event = 1;
  s.unit = mem_unit(s.max_bytes, &s.unit_name);

  char a[48];
  fprintf(f, "<section class=\"trace\" id=\"trace-%zu\">\n<h2><span class=\"k\">trace</span> ", k);
  html_text(f, trace_of(p[0]), 0);
  fputs("</h2>\n<p class=\"facts\">", f);
  fprintf(f, "<b>%zu</b> run%s", m, m == 1 ? "" : "s");
  if (s.max_event > 1) fprintf(f, " · <b>%.0f</b> events", s.max_event);
  if (oom) fprintf(f, " · <b>%zu</b> ran out of memory%s", oom, least ? "" : ": no run to recommend");
  if (least) {
    fmt_bytes(a, sizeof a, (double)least->peak_reserved_bytes);
    fputs(" · least memory: <b>", f);
    html_text(f, least->policy, 40);
    fprintf(f, "</b> (%s peak reserved)", a);
  }
  if (fastest) {
    fputs(" · fastest predicted: <b>", f);
    html_text(f, fastest->policy, 40);
    fprintf(f, "</b> (%.2f ms in the allocator)", fastest->predicted_alloc_us / 1000);
  }
  fputs("</p>\n", f);

  const pt_report_run *r = rec ? group_run(p, m, rec->run) : NULL, *b = rec && r ? group_run(p, m, rec->baseline) : NULL;
  const pt_report_run **q = malloc((m ? m : 1) * sizeof *q); /* the runs shown (and the two named), by peak reserved */
  if (!q) return PT_ENOMEM;
  memcpy(q, p, m * sizeof *p);
  shown_of(runs, q, m, front, shown);
  size_t nq = 0, rest = 0;
  for (size_t j = 0; j < m; j++) {
    if (shown[q[j] - runs] || q[j] == r || q[j] == b) q[nq++] = q[j];
    rest += shown[p[j] - runs] && p[j] != r && p[j] != b;
  }
  fputs("<h3>Predicted allocator time against peak reserved memory</h3>\n", f);
  int rc = pareto_svg(f, runs, p, m, front, r ? r->id : 0, b ? b->id : 0);
  if (rc < 0) {
    free(q);
    return rc;
  }
  if (r) {
    fputs("<h3>Reserved and allocated memory over the trace: recommended against captured</h3>\n", f);
    overlay_svg(f, r, b, &s, buf);
  }
  if (rest) {
    fprintf(f, "<details class=\"more\"%s><summary>Reserved and allocated memory of %s%zu run%s</summary>\n",
            r ? "" : " open", r ? "the other " : "", rest, rest == 1 ? "" : "s");
    if (nq < m)
      fprintf(f, "<p class=\"facts\">%zu of %zu runs: the %d of least peak reserved memory and up to %d of the "
                 "Pareto front (every run is on the plot above; <code>pagetune report --json</code> lists them "
                 "all).</p>\n", nq, m, PT_REPORT_HTML_RUNS, PT_REPORT_HTML_RUNS);
    fputs("<div class=\"grid\">\n", f);
    for (size_t j = 0; j < m; j++)
      if (shown[p[j] - runs] && p[j] != r && p[j] != b) timeline_svg(f, p[j], &s, buf);
    fputs("</div>\n</details>\n", f);
  }
  fputs("<h3>Runs, by peak reserved memory</h3>\n", f);
  table_html(f, runs, q, nq, front);
  if (nq < m) fprintf(f, "<p class=\"facts\">%zu more runs: <code>pagetune report --json</code>.</p>\n", m - nq);
  free(q);
  qsort(p, m, sizeof *p, cmp_reserved);
  confirms_html(f, trace_of(p[0]), confirms, nconfirms);
  fputs("</section>\n", f);
  return 0;
}

int pt_report_html(FILE *f, const char *title, const pt_report_run *runs, size_t n, const pt_report_rec *recs,
                   size_t nrecs, const pt_report_confirm *confirms, size_t nconfirms, pt_err *err) {
  if (!f) return pt_err_set(err, PT_EUSAGE, "report: no output stream");
  int *front = NULL;
  groups g = {0};
  int rc = n ? prepare(runs, n, &front, &g, err) : 0;
  if (rc < 0) return rc;
  pt_sim_point *buf = malloc(PT_REPORT_MAX_POINTS * sizeof *buf);
  char *shown = malloc(n ? n : 1);
  if (!buf || !shown) {
    free(buf);
    free(shown);
    free(front);
    groups_free(&g);
    return pt_err_set(err, PT_ENOMEM, "report: out of memory");
  }
  title = str_or(title, "pagetune report");
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", f);
  html_text(f, title, 0);
  fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n<header><h1>", css);
  html_text(f, title, 0);
  fprintf(f, "</h1>\n<p class=\"lead\">%zu run%s over %zu trace%s, replayed through allocator policies by "
             "pagetune. <span class=\"sw\" style=\"background:var(--res)\"></span>reserved: held from the driver "
             "<span class=\"sw\" style=\"background:var(--alloc)\"></span>allocated: in use by live "
             "requests</p>\n</header>\n",
          n, n == 1 ? "" : "s", g.ng, g.ng == 1 ? "" : "s");
  if (n == 0) fputs("<section class=\"trace\"><p class=\"facts\">No runs to show.</p></section>\n", f);
  for (int pass = 0; pass < 2; pass++) /* the answer for every trace first, then each trace's evidence */
    for (size_t k = 0; k < g.ng && rc == 0; k++) {
      size_t m;
      const pt_report_run **p = group_runs(runs, &g, k, &m);
      if (!p) {
        rc = PT_ENOMEM;
        break;
      }
      const pt_report_rec *rec = rec_of(recs, nrecs, trace_of(p[0]));
      if (pass == 0 && rec) html_rec(f, p, m, rec, k);
      if (pass == 1) rc = trace_html(f, runs, p, m, front, shown, buf, rec, k, confirms, nconfirms);
      free(p);
    }
  if (rc == 0) {
    fputs("<footer>\n<p>Predicted allocator time is the cost model's estimate of the time spent in the allocator "
          "(driver calls and bookkeeping) on the GPU description the run used; runs without one show "
          "\xE2\x80\x94 and are compared on memory alone. Timelines keep the largest value in each stretch of "
          "events, so peaks survive downsampling; all timelines of a trace share their scales.</p>\n"
          "<p>Page sizes below 2 MiB are a model-only dimension: through the VMM API a policy picks handle "
          "sizes (2 MiB multiples) and the VA layout, not the hardware page size.</p>\n</footer>\n"
          "</main>\n</body>\n</html>\n", f);
    rc = flush_status(f, err);
  } else {
    pt_err_set(err, rc, "report: out of memory");
  }
  free(buf);
  free(shown);
  free(front);
  groups_free(&g);
  return rc;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_num(FILE *f, double v) {
  if (!isfinite(v)) fputs("null", f);
  else fprintf(f, "%.17g", v);
}

/* Bytes as an integer (a median of an even number of runs may end in .5: rounded). */
static void json_bytes(FILE *f, double v) {
  if (!isfinite(v)) fputs("null", f);
  else fprintf(f, "%.0f", round(v));
}

static void json_gain(FILE *f, const char *key, const pt_confirm_gain *g, const char *metric, int bytes) {
  fprintf(f, "\"%s\":{", key);
  if (metric) {
    fputs("\"metric\":", f);
    pt_json_str(f, metric);
    fputc(',', f);
  }
  fputs("\"predicted_gain\":", f);
  json_num(f, g->predicted);
  fputs(",\"measured_gain\":", f);
  json_num(f, g->measured);
  fputs(",\"interval\":", f);
  if (isnan(g->lo)) {
    fputs("null", f);
  } else {
    fputc('[', f);
    json_num(f, g->lo);
    fputc(',', f);
    json_num(f, g->hi);
    fputc(']', f);
  }
  fprintf(f, ",\"baseline_median%s\":", bytes ? "_bytes" : "_s");
  (bytes ? json_bytes : json_num)(f, g->base_median);
  fprintf(f, ",\"tuned_median%s\":", bytes ? "_bytes" : "_s");
  (bytes ? json_bytes : json_num)(f, g->tuned_median);
  fprintf(f, ",\"verdict\":\"%s\"}", pt_confirm_verdict_name(g->verdict));
}

static void json_arm(FILE *f, const char *key, int64_t run, const char *policy, const char *allocator, double us, uint64_t peak) {
  fprintf(f, "\"%s\":{\"run\":%" PRId64 ",\"policy\":", key, run);
  pt_json_str(f, policy);
  fputs(",\"allocator\":", f);
  pt_json_str(f, allocator);
  fputs(",\"predicted_alloc_us\":", f);
  json_num(f, us);
  fprintf(f, ",\"predicted_peak_reserved_bytes\":%" PRIu64 "}", peak);
}

int pt_report_json(FILE *f, const pt_report_run *runs, size_t n, const pt_report_rec *recs, size_t nrecs,
                   const pt_report_confirm *confirms, size_t nconfirms, pt_err *err) {
  if (!f) return pt_err_set(err, PT_EUSAGE, "report: no output stream");
  int *front = calloc(n ? n : 1, sizeof *front);
  if (!front) return pt_err_set(err, PT_ENOMEM, "report: out of memory");
  if (n && pt_report_pareto(runs, n, front) < 0) {
    free(front);
    return pt_err_set(err, PT_ENOMEM, "report: out of memory");
  }
  fputs("{\"runs\":[", f);
  for (size_t i = 0; i < n; i++) {
    const pt_report_run *r = &runs[i];
    fprintf(f, "%s{\"run\":%" PRId64 ",\"trace\":", i ? "," : "", r->id);
    pt_json_str(f, r->trace);
    fputs(",\"policy\":", f);
    pt_json_str(f, r->policy);
    fputs(",\"mechanism\":", f);
    pt_json_str(f, r->mechanism);
    fprintf(f, ",\"params\":%s,\"capacity\":%" PRIu64 ",\"pareto\":%s,\"peak_reserved_bytes\":%" PRIu64
               ",\"peak_allocated_bytes\":%" PRIu64 ",\"fragmentation\":",
            r->params_json && *r->params_json ? r->params_json : "{}", r->capacity, front[i] ? "true" : "false",
            r->peak_reserved_bytes, r->peak_allocated_bytes);
    json_num(f, r->fragmentation);
    fprintf(f, ",\"segments_allocated\":%" PRIu64 ",\"driver_calls\":%" PRIu64 ",\"ooms\":%" PRIu64 ",\"predicted_alloc_us\":",
            r->segments_allocated, r->driver_calls_total, r->ooms);
    json_num(f, r->predicted_alloc_us);
    fputc('}', f);
  }
  fputs("],\"recommendations\":[", f);
  for (size_t i = 0; recs && i < nrecs; i++) {
    const pt_report_rec *k = &recs[i];
    const pt_report_run *r = run_by_id(runs, n, k->run), *b = r ? run_by_id(runs, n, k->baseline) : NULL;
    fprintf(f, "%s{\"trace\":", i ? "," : "");
    pt_json_str(f, k->trace);
    fputs(",\"run\":", f);
    r ? fprintf(f, "%" PRId64, r->id) : fputs("null", f);
    fputs(",\"baseline_run\":", f);
    b ? fprintf(f, "%" PRId64, b->id) : fputs("null", f);
    fputs(",\"baseline\":", f);
    pt_json_str(f, k->baseline_desc);
    fputs(",\"chosen_by\":", f);
    pt_json_str(f, k->chosen_by);
    fputs(",\"paste\":", f);
    pt_json_str(f, r ? k->paste : NULL);
    fputs(",\"why\":", f);
    char why[2048];
    pt_json_str(f, r ? pt_report_why(r, b, why, sizeof why) : NULL);
    fputs(",\"export_command\":", f);
    pt_json_str(f, r ? k->command : NULL);
    fputs(",\"warnings\":[", f); /* the export's (and the report's own) warnings, as the text shows them */
    char line[LINE_MAX_];
    int nw = 0;
    for (const char *p = r ? str_or(k->notes, "") : ""; line_next(&p, line, sizeof line);)
      if (!strncmp(line, WARNING, strlen(WARNING))) {
        fputs(nw++ ? "," : "", f);
        pt_json_str(f, line + strlen(WARNING));
      }
    fputs("]}", f);
  }
  fputs("],\"confirmations\":[", f);
  for (size_t i = 0; i < nconfirms; i++) {
    const pt_report_confirm *k = &confirms[i];
    fprintf(f, "%s{\"confirmation\":%" PRId64 ",\"trace\":", i ? "," : "", k->id);
    pt_json_str(f, k->trace);
    fputc(',', f);
    json_arm(f, "baseline", k->baseline_run, k->baseline_policy, k->baseline_allocator, k->baseline_predicted_us,
             k->baseline_predicted_peak);
    fputc(',', f);
    json_arm(f, "tuned", k->tuned_run, k->tuned_policy, k->tuned_allocator, k->tuned_predicted_us, k->tuned_predicted_peak);
    fprintf(f, ",\"runs_per_arm\":%d,\"measured_at\":", k->runs_per_arm);
    pt_json_str(f, k->measured_at);
    fputs(",\"hostname\":", f);
    pt_json_str(f, k->hostname);
    fputs(",\"gpu_name\":", f);
    pt_json_str(f, k->gpu_name && *k->gpu_name ? k->gpu_name : NULL);
    fputc(',', f);
    json_gain(f, "time", &k->time, k->time_metric, 0);
    fputc(',', f);
    json_gain(f, "peak_reserved", &k->peak, NULL, 1);
    fputc('}', f);
  }
  fputs("]}\n", f);
  free(front);
  return flush_status(f, err);
}
