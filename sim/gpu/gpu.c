/* gpu.c — reading GPU description files (see gpu.h). */
#include "gpu.h"
#include "datadir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* BYTES:US points, blank-separated, into p. */
static int parse_points(char *text, pt_cost_points *p, const char *path, int lineno, pt_err *err) {
  char extra;
  p->n = 0;
  for (char *pt = text ? strtok(text, " \t") : NULL; pt; pt = strtok(NULL, " \t")) {
    double b, us;
    if (p->n == PT_COST_MAX_POINTS || sscanf(pt, "%lf:%lf %c", &b, &us, &extra) != 2)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: cost points are BYTES:US (at most %d)", path, lineno, PT_COST_MAX_POINTS);
    p->bytes[p->n] = b;
    p->us[p->n++] = us;
  }
  return 0;
}

/* The bookkeeping slot of mechanism name (made when new); NULL with err set when there is no room or the name
   is too long. */
static pt_gpu_mech_cost *mech_slot(pt_gpu *g, const char *name, const char *key, const char *path, int lineno, pt_err *err) {
  int i = 0;
  while (i < g->nbookkeeping && strcmp(g->bookkeeping[i].mech, name)) i++;
  if (i == (int)(sizeof g->bookkeeping / sizeof g->bookkeeping[0]) || strlen(name) >= sizeof g->bookkeeping[0].mech) {
    pt_err_set(err, PT_EFORMAT, "%s:%d: %s: too many mechanisms or too long a name", path, lineno, key);
    return NULL;
  }
  if (i == g->nbookkeeping) g->nbookkeeping++;
  snprintf(g->bookkeeping[i].mech, sizeof g->bookkeeping[i].mech, "%s", name);
  return &g->bookkeeping[i];
}

/* bookkeeping_work MECH REQ_US OP_US CHUNK_US [VISIT_US]: each a number >= 0; VISIT_US 0 when left out (a line
   written before visits were counted prices what it priced then). */
static int parse_work(pt_gpu *g, char *rest, const char *path, int lineno, pt_err *err) {
  char mech[64], *end = NULL, extra;
  double v[4] = {0, 0, 0, 0};
  int used = 0, n = sscanf(rest, "%63s %lf %lf %lf %n", mech, &v[0], &v[1], &v[2], &used);
  if (n == 4 && rest[used] && sscanf(rest + used, "%lf %c", &v[3], &extra) != 1) n = 0; /* VISIT_US, then nothing */
  if (n >= 1) strtod(mech, &end);
  if (n != 4 || !*end) /* a first word that is a number: the mechanism left out */
    return pt_err_set(err, PT_EFORMAT, "%s:%d: bookkeeping_work wants MECHANISM REQ_US OP_US CHUNK_US [VISIT_US]", path,
                      lineno);
  for (int k = 0; k < 4; k++)
    if (!(v[k] >= 0) || v[k] > 1e9)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: bookkeeping_work: each cost must be a number from 0 to 1e9", path, lineno);
  pt_gpu_mech_cost *b = mech_slot(g, mech, "bookkeeping_work", path, lineno, err);
  if (!b) return PT_EFORMAT;
  b->has_work = 1;
  b->work = (pt_cost_work){v[0], v[1], v[2], v[3]};
  return 0;
}

/* bookkeeping_loop MECH BYTES:US:OPS:CHUNKS:VISITS ...: each a number, BYTES > 0, the rest >= 0. */
static int parse_loop(pt_gpu *g, char *rest, const char *path, int lineno, pt_err *err) {
  char *mech = strtok(rest, " \t"), *end = NULL;
  if (mech) strtod(mech, &end);
  if (!mech || !*end || strchr(mech, ':'))
    return pt_err_set(err, PT_EFORMAT, "%s:%d: bookkeeping_loop wants MECHANISM BYTES:US:OPS:CHUNKS:VISITS ...", path, lineno);
  pt_gpu_mech_cost *b = mech_slot(g, mech, "bookkeeping_loop", path, lineno, err);
  if (!b) return PT_EFORMAT;
  b->nloop = 0;
  for (char *pt = strtok(NULL, " \t"); pt; pt = strtok(NULL, " \t")) {
    pt_gpu_loop_point p;
    char extra;
    if (b->nloop == PT_GPU_LOOP_MAX ||
        sscanf(pt, "%lf:%lf:%lf:%lf:%lf %c", &p.bytes, &p.us, &p.ops, &p.chunks, &p.visits, &extra) != 5)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: bookkeeping_loop's points are BYTES:US:OPS:CHUNKS:VISITS (at most %d)",
                        path, lineno, PT_GPU_LOOP_MAX);
    if (!(p.bytes > 0) || p.bytes > 1e18 || !(p.us >= 0) || p.us > 1e9 || !(p.ops >= 0) || p.ops > 1e9 ||
        !(p.chunks >= 0) || p.chunks > 1e9 || !(p.visits >= 0) || p.visits > 1e9)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: bookkeeping_loop: '%s': bytes > 0, the rest from 0 to 1e9", path, lineno, pt);
    b->loop[b->nloop++] = p;
  }
  if (!b->nloop) return pt_err_set(err, PT_EFORMAT, "%s:%d: bookkeeping_loop %s has no point", path, lineno, mech);
  return 0;
}

/* bookkeeping_us [MECH] US, or bookkeeping_us MECH BYTES:US ...; calls: bookkeeping_call_us, the same;
   repeat: the repeat class's twins (bookkeeping_repeat_us, bookkeeping_call_repeat_us). */
static int parse_bookkeeping(pt_gpu *g, char *rest, const char *key, int calls, int repeat, const char *path,
                             int lineno, pt_err *err) {
  char *first = strtok(rest, " \t"), *more = strtok(NULL, ""), *end;
  pt_cost_line *line = repeat ? (calls ? &g->cost.bookkeeping_call_repeat : &g->cost.bookkeeping_repeat)
                              : (calls ? &g->cost.bookkeeping_call : &g->cost.bookkeeping);
  if (first && more && !strchr(first, ':') && (strtod(first, &end), *end)) { /* a mechanism's own line */
    pt_gpu_mech_cost *b = mech_slot(g, first, key, path, lineno, err);
    if (!b) return PT_EFORMAT;
    line = repeat ? (calls ? &b->repeat_call_line : &b->repeat_line) : (calls ? &b->call_line : &b->line);
    first = strtok(more, " \t");
    more = strtok(NULL, "");
  }
  const char *want = "%s:%d: %s wants [MECHANISM] US or MECHANISM BYTES:US ...";
  if (!first) return pt_err_set(err, PT_EFORMAT, want, path, lineno, key);
  if (!strchr(first, ':')) { /* a constant */
    double us = strtod(first, &end);
    if (*end || more || !(us >= 0) || us > 1e9) return pt_err_set(err, PT_EFORMAT, want, path, lineno, key);
    *line = pt_cost_constant(us);
    return 0;
  }
  char buf[4096];
  snprintf(buf, sizeof buf, "%s%s%s", first, more ? " " : "", more ? more : "");
  pt_cost_points p;
  int rc = parse_points(buf, &p, path, lineno, err);
  if (rc < 0 || (rc = pt_cost_line_from_points(&p, line, err)) < 0) return pt_err_prefix(err, rc, "%s:%d", path, lineno);
  return 0;
}

static int parse_line(pt_gpu *g, char *line, const char *path, int lineno, pt_err *err) {
  char *key = strtok(line, " \t"), *rest = strtok(NULL, "");
  if (!key) return 0;
  while (rest && (*rest == ' ' || *rest == '\t')) rest++;
  if (!rest || !*rest) return pt_err_set(err, PT_EFORMAT, "%s:%d: %s has no value", path, lineno, key);
  char extra;
  if (!strcmp(key, "name")) snprintf(g->name, sizeof g->name, "%s", rest);
  else if (!strcmp(key, "description")) snprintf(g->description, sizeof g->description, "%s", rest);
  else if (!strcmp(key, "source")) snprintf(g->source, sizeof g->source, "%s", rest);
  else if (!strcmp(key, "note")) snprintf(g->note, sizeof g->note, "%s", rest);
  else if (!strcmp(key, "mmu")) {
    if (!(g->mmu = pt_mmu_find(rest))) return pt_err_set(err, PT_EFORMAT, "%s:%d: unknown mmu '%s' (v3, v2)", path, lineno, rest);
  } else if (!strcmp(key, "sms")) {
    if (sscanf(rest, "%u %c", &g->tlb.sms, &extra) != 1 || !g->tlb.sms || g->tlb.sms > 4096)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: sms must be 1..4096", path, lineno);
  } else if (!strcmp(key, "memory_bytes")) {
    unsigned long long v;
    if (sscanf(rest, "%llu %c", &v, &extra) != 1 || !v)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: memory_bytes wants a positive integer", path, lineno);
    g->memory_bytes = v;
  } else if (!strcmp(key, "l1_tlb") || !strcmp(key, "l2_tlb")) {
    pt_tlb_geom *t = key[1] == '1' ? &g->tlb.l1 : &g->tlb.l2;
    if (sscanf(rest, "%u %u %lf %c", &t->sets, &t->ways, &t->hit_ns, &extra) != 3 || !t->sets || !t->ways ||
        t->sets > (1u << 20) || t->ways > 4096 || !(t->hit_ns >= 0))
      return pt_err_set(err, PT_EFORMAT, "%s:%d: %s wants SETS WAYS HIT_NS", path, lineno, key);
  } else if (!strcmp(key, "pwc")) {
    if (sscanf(rest, "%u %u %c", &g->tlb.pwc_sets, &g->tlb.pwc_ways, &extra) != 2 || !g->tlb.pwc_sets ||
        !g->tlb.pwc_ways || g->tlb.pwc_sets > (1u << 20) || g->tlb.pwc_ways > 4096)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: pwc wants SETS WAYS", path, lineno);
  } else if (!strcmp(key, "walk_access_ns") || !strcmp(key, "host_clock_read_us")) {
    double *v = key[0] == 'w' ? &g->tlb.walk_access_ns : &g->host_clock_read_us;
    if (sscanf(rest, "%lf %c", v, &extra) != 1 || !(*v >= 0) || *v > 1e9)
      return pt_err_set(err, PT_EFORMAT, "%s:%d: %s wants a number >= 0", path, lineno, key);
  } else if (!strcmp(key, "bookkeeping_us") || !strcmp(key, "bookkeeping_call_us") ||
             !strcmp(key, "bookkeeping_repeat_us") || !strcmp(key, "bookkeeping_call_repeat_us")) {
    int rc = parse_bookkeeping(g, rest, key, strstr(key, "_call") != NULL, strstr(key, "_repeat") != NULL, path, lineno, err);
    if (rc < 0) return rc;
  } else if (!strcmp(key, "bookkeeping_work")) {
    int rc = parse_work(g, rest, path, lineno, err);
    if (rc < 0) return rc;
  } else if (!strcmp(key, "bookkeeping_loop")) {
    int rc = parse_loop(g, rest, path, lineno, err);
    if (rc < 0) return rc;
  } else if (!strcmp(key, "torch_pair_us")) { /* PyTorch's allocators, for comparison: checked, not used */
    char *backend = strtok(rest, " \t");
    pt_cost_points p;
    pt_cost_line l;
    int rc = backend ? parse_points(strtok(NULL, ""), &p, path, lineno, err)
                     : pt_err_set(err, PT_EFORMAT, "%s:%d: torch_pair_us wants BACKEND BYTES:US ...", path, lineno);
    if (rc < 0 || (rc = pt_cost_line_from_points(&p, &l, err)) < 0) return pt_err_prefix(err, rc, "%s:%d", path, lineno);
  } else if (!strcmp(key, "cost") || !strcmp(key, "cost_repeat") || !strcmp(key, "cost_after_large")) {
    char *call = strtok(rest, " \t");
    int c = -1, plain = !strcmp(key, "cost"), after = !strcmp(key, "cost_after_large");
    for (int i = 0; call && i < PT_DRV_NCALLS; i++)
      if (!strcmp(call, pt_drv_call_names[i])) c = i;
    if (c < 0) return pt_err_set(err, PT_EFORMAT, "%s:%d: %s of unknown call '%s'", path, lineno, key, call ? call : "");
    pt_cost_points rp, *p = plain ? &g->points[c] : &rp; /* a base's points are the plain line's (gpu fit) */
    int rc = parse_points(strtok(NULL, ""), p, path, lineno, err);
    if (rc == 0 && !p->n) rc = pt_err_set(err, PT_EFORMAT, "%s:%d: %s %s has no points", path, lineno, key, call);
    pt_cost_line *dst = plain ? &g->cost.call[c] : after ? &g->cost.call_after[c] : &g->cost.call_repeat[c];
    if (rc < 0 || (rc = pt_cost_line_from_points(p, dst, err)) < 0)
      return pt_err_prefix(err, rc, "%s:%d", path, lineno);
  } else {
    return pt_err_set(err, PT_EFORMAT, "%s:%d: unknown setting '%s'", path, lineno, key);
  }
  return 0;
}

static int load_file(const char *path, FILE *f, pt_err *err, pt_gpu *g) {
  char line[4096];
  int lineno = 0, rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n')
      return pt_err_set(err, PT_EFORMAT, "%s:%d: line too long", path, lineno);
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    line[strcspn(line, "\r\n")] = 0;
    rc = parse_line(g, line, path, lineno, err);
  }
  if (rc < 0) return rc;
  if (ferror(f)) return pt_err_set(err, PT_EIO, "%s: read failed", path);
  if (!g->name[0] || !g->mmu || !g->tlb.sms || !g->tlb.l1.sets || !g->tlb.l2.sets || !g->tlb.pwc_sets)
    return pt_err_set(err, PT_EFORMAT, "%s: needs name, mmu, sms, l1_tlb, l2_tlb and pwc", path);
  g->tlb.walk_levels = (uint32_t)g->mmu->nlevels;
  return 0;
}

/* A bundled description by name only (never a path), or with as_path a name with a '/' or a .gpu suffix as a path. */
static FILE *gpu_open(const char *name, int as_path, char *path, size_t n, pt_err *err) {
  FILE *f = NULL;
  if (pt_datadir_is_path(PT_DATA_GPUS, name)) {
    if (!as_path) {
      pt_err_set(err, PT_ENOTFOUND, "%s: not the name of a bundled GPU description", name);
      return NULL;
    }
    snprintf(path, n, "%s", name);
    if (!(f = fopen(path, "r"))) pt_err_set(err, PT_ENOTFOUND, "%s: %s", name, strerror(errno));
    return f;
  }
  if (pt_datadir_find(PT_DATA_GPUS, name, path, n) == 0) f = fopen(path, "r");
  if (!f) {
    char names[512], looked[2048];
    pt_gpu_list(names, sizeof names);
    pt_err_set(err, PT_ENOTFOUND, "%s: no such GPU description (known: %s; looked in %s)", name,
               names[0] ? names : "none", pt_datadir_looked(PT_DATA_GPUS, looked, sizeof looked));
  }
  return f;
}

FILE *pt_gpu_open(const char *name, char *path, size_t n, pt_err *err) { return gpu_open(name, 1, path, n, err); }

static int gpu_load(const char *name, int as_path, pt_err *err, pt_gpu *out) {
  memset(out, 0, sizeof *out);
  char path[4096];
  FILE *f = gpu_open(name, as_path, path, sizeof path, err);
  if (!f) return PT_ENOTFOUND;
  int rc = load_file(path, f, err, out);
  fclose(f);
  return rc;
}

int pt_gpu_load(const char *name, pt_err *err, pt_gpu *out) { return gpu_load(name, 1, err, out); }

int pt_gpu_load_named(const char *name, pt_err *err, pt_gpu *out) { return gpu_load(name, 0, err, out); }

const pt_gpu_mech_cost *pt_gpu_mech_lines(const pt_gpu *g, const char *mech) {
  for (int i = 0; i < g->nbookkeeping; i++)
    if (!strcmp(g->bookkeeping[i].mech, mech)) return &g->bookkeeping[i];
  return NULL;
}

const pt_cost_line *pt_gpu_bookkeeping(const pt_gpu *g, const char *mech, int with_calls) {
  const pt_gpu_mech_cost *b = pt_gpu_mech_lines(g, mech);
  if (b) return with_calls && b->call_line.n ? &b->call_line : &b->line;
  return with_calls && g->cost.bookkeeping_call.n ? &g->cost.bookkeeping_call : &g->cost.bookkeeping;
}

const pt_cost_line *pt_gpu_bookkeeping_repeat(const pt_gpu *g, const char *mech, int with_calls) {
  const pt_gpu_mech_cost *b = pt_gpu_mech_lines(g, mech);
  if (b) return with_calls ? &b->repeat_call_line : &b->repeat_line; /* the default's repeat lines are not its */
  return with_calls ? &g->cost.bookkeeping_call_repeat : &g->cost.bookkeeping_repeat;
}

pt_cost_model pt_gpu_cost_of(const pt_gpu *g, const char *mech) {
  pt_cost_model m = g->cost;
  m.bookkeeping = *pt_gpu_bookkeeping(g, mech, 0);
  m.bookkeeping_call = *pt_gpu_bookkeeping(g, mech, 1);
  m.bookkeeping_repeat = *pt_gpu_bookkeeping_repeat(g, mech, 0);
  m.bookkeeping_call_repeat = *pt_gpu_bookkeeping_repeat(g, mech, 1);
  const pt_gpu_mech_cost *b = pt_gpu_mech_lines(g, mech);
  if (b && b->has_work) m.has_work = 1, m.work = b->work;
  return m;
}

/* Is nm one of the space-separated names in list (a whole name, not part of one)? */
static int listed(const char *list, const char *nm) {
  size_t l = strlen(nm);
  for (const char *p = list; (p = strstr(p, nm)); p += l)
    if ((p == list || p[-1] == ' ') && (p[l] == ' ' || !p[l])) return 1;
  return 0;
}

int pt_gpu_list(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  char dirs[PT_DATA_MAX_DIRS][4096];
  int nd = pt_datadir_dirs(PT_DATA_GPUS, dirs);
  for (int i = 0; i < nd; i++) {
    DIR *d = opendir(dirs[i]);
    if (!d) continue;
    struct dirent *e;
    while ((e = readdir(d))) {
      size_t l = strlen(e->d_name);
      if (l < 5 || strcmp(e->d_name + l - 4, ".gpu")) continue;
      char nm[256];
      snprintf(nm, sizeof nm, "%.*s", (int)(l - 4), e->d_name);
      if (listed(buf, nm)) continue; /* first found wins */
      int w = snprintf(buf + len, n - len, "%s%s", len ? " " : "", nm);
      if (w < 0 || (size_t)w >= n - len) break;
      len += (size_t)w;
    }
    closedir(d);
    if (len) break;
  }
  return len ? 0 : PT_ENOTFOUND;
}
