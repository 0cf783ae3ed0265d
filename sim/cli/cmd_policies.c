/*
 * cmd_policies.c — pagetune policies: every policy the program can find,
 * each with its mechanism, its parameters, its hooks and its doc.
 *
 * The bundled policies are found as the program finds one by name
 * (datadir.h): the folders in search order, a name in an earlier folder
 * hiding the same name in a later one.  User policies are every *.lua in
 * each --dir.  A policy that does not load is listed with its one-line
 * error; only finding no policy file at all is a failure.
 *
 * A parameter is listed from the policy's declaration (its default, range
 * or choices, scale) and the mechanism's table (the kind of value it takes,
 * the bounds any value must keep); a mechanism parameter the policy leaves
 * undeclared is listed too, with source "mechanism": it runs at the
 * mechanism's default and --set cannot change it.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datadir.h"
#include "workbench.h"

#define PT_POL_MAX_DIRS 16

typedef struct policies_args {
  const char *dirs[PT_POL_MAX_DIRS];
  int ndirs, json;
} policies_args;

static const policies_args policies_defaults = {{0}, 0, 0};

static const pt_cli_opt policies_opts[] = {
    PT_CLI_OPT_LIST("dir", "DIR", policies_args, dirs, ndirs, "also list every *.lua in DIR (repeatable)"),
    PT_CLI_OPT_FLAG("json", policies_args, json, "one JSON object: {\"policies\":[...]}"),
    PT_CLI_END};
const pt_cli_table pt_opts_policies = {
    "usage: pagetune policies [--dir DIR]... [--json]\n"
    "\n"
    "The bundled policies (found as --policy NAME finds them: $PAGETUNE_POLICY_DIR,\n"
    "the build tree, the installed data) and every *.lua in each DIR, each with its\n"
    "mechanism, parameters (range, kind, default), hooks and doc (the file's leading\n"
    "comment).  A policy that does not load is listed with its error.  Exit 1 when\n"
    "no policy file is found at all.\n",
    policies_opts, sizeof(policies_args), &policies_defaults, 0};

/* One policy file found: where, and whether it is bundled. */
typedef struct pol_file {
  char path[4096 + 256];
  char name[256]; /* the file name less .lua */
  int bundled;
} pol_file;

typedef struct pol_list {
  pol_file *v;
  size_t n, cap;
} pol_list;

static int has_name(const pol_list *l, size_t from, const char *name) {
  for (size_t i = from; i < l->n; i++)
    if (!strcmp(l->v[i].name, name)) return 1;
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(((const pol_file *)a)->name, ((const pol_file *)b)->name); }

/*
 * The *.lua files of dir, sorted by name, appended to l (a bundled name
 * already listed from an earlier folder is hidden, as the lookup hides it).
 * A folder that cannot be opened: 1 when missing and optional, else PT_EIO.
 */
static int scan_dir(const char *dir, int bundled, pol_list *l, pt_err *err) {
  DIR *d = opendir(dir);
  if (!d) {
    if (bundled) return 1;
    return pt_err_set(err, PT_EIO, "%s: cannot open the folder: %s", dir, strerror(errno));
  }
  size_t first = l->n, from = bundled ? 0 : first;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 4 || len >= sizeof l->v[0].name + 4 || strcmp(e->d_name + len - 4, ".lua")) continue;
    char name[256];
    memcpy(name, e->d_name, len - 4);
    name[len - 4] = 0;
    if (has_name(l, from, name)) continue;
    if (l->n == l->cap) {
      size_t nc = l->cap ? l->cap * 2 : 16;
      pol_file *nv = realloc(l->v, nc * sizeof *nv);
      if (!nv) {
        rc = pt_err_set(err, PT_ENOMEM, "out of memory");
        break;
      }
      l->v = nv, l->cap = nc;
    }
    pol_file *f = &l->v[l->n];
    if ((size_t)snprintf(f->path, sizeof f->path, "%s/%s", dir, e->d_name) >= sizeof f->path) continue;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->bundled = bundled;
    l->n++;
  }
  closedir(d);
  if (rc == 0 && l->n > first) qsort(l->v + first, l->n - first, sizeof *l->v, by_name); /* none: l->v may be NULL */
  return rc;
}

/* The file's leading comment lines ("-- " taken off each), into a malloc'd string; NULL when out of memory. */
static char *leading_comment(const char *path) {
  size_t cap = 256, len = 0;
  char *out = malloc(cap), line[1024];
  if (!out) return NULL;
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return out;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "--", 2)) break;
    char *s = line + 2;
    if (*s == ' ') s++;
    s[strcspn(s, "\r\n")] = 0;
    size_t sl = strlen(s);
    if (len + sl + 2 > cap) {
      while (len + sl + 2 > cap) cap *= 2;
      char *no = realloc(out, cap);
      if (!no) {
        free(out);
        fclose(f);
        return NULL;
      }
      out = no;
    }
    if (len) out[len++] = '\n';
    memcpy(out + len, s, sl + 1);
    len += sl;
  }
  fclose(f);
  while (len && out[len - 1] == '\n') out[--len] = 0; /* a trailing "--" line */
  return out;
}

static const char *const kind_names[] = {"real", "whole", "even", "pow2", "flag"};

static void json_num(double v) {
  if (isfinite(v)) printf("%.17g", v);
  else fputs("null", stdout); /* infinity, as params_json writes it */
}

static const pt_mech_param *mech_param(const pt_mech_ops *m, const char *name) {
  for (const pt_mech_param *mp = m ? m->params : NULL; mp && mp->name; mp++)
    if (!strcmp(mp->name, name)) return mp;
  return NULL;
}

static void print_num(double v) {
  if (isinf(v)) fputs(v > 0 ? "inf" : "-inf", stdout);
  else printf("%.17g", v);
}

/* A value, a number or a list (mech.h): a list in PyTorch's form, a JSON string in JSON. */
static void print_value(int json, double v, const pt_plist *l) {
  char buf[256];
  if (l && l->n) {
    if (json) pt_json_str(stdout, pt_param_list_format(l, buf, sizeof buf));
    else fputs(pt_param_list_format(l, buf, sizeof buf), stdout);
  } else if (json) {
    json_num(v);
  } else {
    print_num(v);
  }
}

static const pt_plist *choice_list(const pt_policy_param *p, int i) { return p->choice_lists ? &p->choice_lists[i] : NULL; }

/* One parameter: declared by the policy (p) or only by the mechanism (mp, p NULL). */
static void print_param(int json, const pt_policy_param *p, const pt_mech_param *mp, int first) {
  const char *kind = mp ? kind_names[mp->kind] : "real";
  if (p && p->integer && (!mp || mp->kind == PT_PARAM_REAL)) kind = "whole";
  double dflt = p ? p->dflt : mp->dflt;
  const char *doc = p && p->doc[0] ? p->doc : mp ? mp->doc : "";
  double lo = p && p->has_range ? p->min : mp ? mp->min : -INFINITY;
  double hi = p && p->has_range ? p->max : mp ? mp->max : INFINITY;
  if (json) {
    printf("%s{\"name\":", first ? "" : ",");
    pt_json_str(stdout, p ? p->name : mp->name);
    printf(",\"source\":\"%s\",\"kind\":\"%s\",\"list\":%s,\"default\":", p ? "policy" : "mechanism", kind,
           mp && mp->list ? "true" : "false");
    print_value(1, dflt, p ? &p->dflt_list : NULL);
    fputs(",\"range\":[", stdout);
    json_num(lo);
    putchar(',');
    json_num(hi);
    fputs("],\"choices\":", stdout);
    if (p && p->nchoices) {
      for (int i = 0; i < p->nchoices; i++) putchar(i ? ',' : '['), print_value(1, p->choices[i], choice_list(p, i));
      putchar(']');
    } else {
      fputs("null", stdout);
    }
    printf(",\"scale\":\"%s\",\"tunable\":%s,\"doc\":", p && p->log_scale ? "log" : "linear",
           p && (p->has_range || p->nchoices) ? "true" : "false");
    pt_json_str(stdout, doc);
    putchar('}');
    return;
  }
  printf("    %-30s %-5s default ", p ? p->name : mp->name, kind);
  print_value(0, dflt, p ? &p->dflt_list : NULL);
  if (p && p->nchoices) {
    fputs(", one of {", stdout);
    for (int i = 0; i < p->nchoices; i++) fputs(i ? ", " : "", stdout), print_value(0, p->choices[i], choice_list(p, i));
    putchar('}');
  } else {
    fputs(", range [", stdout);
    print_num(lo);
    fputs(", ", stdout);
    print_num(hi);
    putchar(']');
  }
  if (p && p->log_scale) fputs(" log", stdout);
  if (p && (p->has_range || p->nchoices)) fputs(" (tuned)", stdout);
  if (!p) fputs(" (the mechanism's; not settable)", stdout);
  printf("\n      %s\n", doc);
}

/* One policy file, loaded or not; first: the first in the list (JSON commas). */
static int print_policy(int json, const pol_file *f, int first, pt_err *err) {
  char *doc = leading_comment(f->path);
  if (!doc) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_err perr = {{0}};
  pt_policy *pol = NULL;
  int lrc = pt_policy_load(f->path, NULL, &perr, &pol);
  const pt_mech_ops *m = lrc == 0 ? pt_mech_find(pt_policy_mechanism(pol)) : NULL;
  if (json) {
    printf("%s{\"name\":", first ? "" : ",");
    pt_json_str(stdout, lrc == 0 ? pt_policy_name(pol) : f->name);
    fputs(",\"file\":", stdout);
    pt_json_str(stdout, f->path);
    printf(",\"bundled\":%s,\"doc\":", f->bundled ? "true" : "false");
    pt_json_str(stdout, doc);
  } else {
    printf("%s%s (%s)", first ? "" : "\n", lrc == 0 ? pt_policy_name(pol) : f->name, f->path);
  }
  if (lrc < 0) {
    if (json) {
      fputs(",\"error\":", stdout);
      pt_json_str(stdout, perr.msg[0] ? perr.msg : pt_strerror(lrc));
      putchar('}');
    } else {
      printf("\n  error: %s\n", perr.msg[0] ? perr.msg : pt_strerror(lrc));
    }
    free(doc);
    return 0;
  }
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  const char *hooks[4];
  int nh = 0;
  if (h.round) hooks[nh++] = "round";
  if (h.segment_size) hooks[nh++] = "segment_size";
  if (h.page_size) hooks[nh++] = "page_size";
  if (h.should_collect) hooks[nh++] = "should_collect";
  int np = pt_policy_nparams(pol);
  if (json) {
    fputs(",\"mechanism\":", stdout);
    pt_json_str(stdout, pt_policy_mechanism(pol));
    fputs(",\"summary\":", stdout);
    pt_json_str(stdout, pt_policy_doc(pol));
    fputs(",\"hooks\":[", stdout);
    for (int i = 0; i < nh; i++) printf("%s\"%s\"", i ? "," : "", hooks[i]);
    fputs("],\"params\":[", stdout);
  } else {
    printf(": mechanism %s\n  %s\n", pt_policy_mechanism(pol), pt_policy_doc(pol));
    if (doc[0]) printf("  doc: %.*s\n", (int)strcspn(doc, "\n"), doc);
    fputs("  hooks:", stdout);
    for (int i = 0; i < nh; i++) printf(" %s", hooks[i]);
    puts(nh ? "" : " none");
    puts(np || (m && m->params && m->params->name) ? "  parameters:" : "  parameters: none");
  }
  int firstp = 1;
  for (int i = 0; i < np; i++, firstp = 0) {
    const pt_policy_param *p = pt_policy_param_at(pol, i);
    print_param(json, p, mech_param(m, p->name), firstp);
  }
  for (const pt_mech_param *mp = m ? m->params : NULL; mp && mp->name; mp++) {
    int declared = 0;
    for (int i = 0; i < np && !declared; i++) declared = !strcmp(pt_policy_param_at(pol, i)->name, mp->name);
    if (!declared) print_param(json, NULL, mp, firstp), firstp = 0;
  }
  if (json) fputs("]}", stdout);
  pt_policy_free(pol);
  free(doc);
  return 0;
}

int pt_cmd_policies(void *args, char **pos, int npos, pt_err *err) {
  const policies_args *a = args;
  (void)pos, (void)npos;
  pol_list l = {0};
  char dirs[PT_DATA_MAX_DIRS][4096];
  int nd = pt_datadir_dirs(PT_DATA_POLICIES, dirs), rc = 0;
  for (int i = 0; i < nd && rc >= 0; i++) rc = scan_dir(dirs[i], 1, &l, err);
  for (int i = 0; i < a->ndirs && rc >= 0; i++) rc = scan_dir(a->dirs[i], 0, &l, err);
  if (rc >= 0 && l.n == 0) {
    char looked[4096];
    rc = pt_err_set(err, PT_ENOTFOUND, "no policy found; looked in %s%s",
                    pt_datadir_looked(PT_DATA_POLICIES, looked, sizeof looked), a->ndirs ? " and the --dir folders" : "");
  }
  if (rc >= 0) {
    if (a->json) fputs("{\"policies\":[", stdout);
    for (size_t i = 0; i < l.n && rc >= 0; i++) rc = print_policy(a->json, &l.v[i], i == 0, err);
    if (a->json) puts("]}");
  }
  free(l.v);
  return rc < 0 ? rc : 0;
}
