/*
 * opts.c — the option table's two readers: the parser, which builds
 * getopt_long's arrays from it, and --help, which prints it (see opts.h).
 */
#include "opts.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "values.h"

#define MAX_OPTS 128 /* a command's options and its siblings' (about 40 names in all today) */
#define HELP_COLUMN 22 /* where option help starts, unless every label is shorter */

static const pt_cli_opt help_opt = {.name = "help", .short_name = 'h', .help = "this help"};

int pt_cli_usage(pt_err *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return PT_ECLI_USAGE;
}

static int is_end(const pt_cli_opt *o) { return !o->name && !o->short_name; }

/* The option as messages name it: "--name", or "-x" for a short-only one. */
static const char *spelled(const pt_cli_opt *o, char *buf, size_t n) {
  if (o->name) snprintf(buf, n, "--%s", o->name);
  else snprintf(buf, n, "-%c", o->short_name);
  return buf;
}

/* Set what o sets from its value arg; PT_ECLI_USAGE for a bad one. */
static int apply(const pt_cli_opt *o, const char *arg, void *args, pt_err *err) {
  char *field = (char *)args + o->off, name[64];
  unsigned long v;
  switch (o->kind) {
  case PT_CLI_FLAG: *(int *)field = 1; break;
  case PT_CLI_STR: *(const char **)field = arg; break;
  case PT_CLI_LIST: {
    int *count = (int *)((char *)args + o->off2);
    if ((unsigned long)*count == o->max) return pt_cli_usage(err, "too many %s (at most %lu)", spelled(o, name, sizeof name), o->max);
    ((const char **)field)[(*count)++] = arg;
    break;
  }
  case PT_CLI_ULONG:
    if (pt_cli_parse_ulong(arg, o->max, &v) < 0 || v < o->min) goto bad;
    *(unsigned long *)field = v;
    break;
  case PT_CLI_PARSE:
    if (o->parse(arg, field) < 0) goto bad;
    break;
  case PT_CLI_REFUSE: return pt_cli_usage(err, "%s", o->suffix);
  }
  if (o->seen) *(int *)((char *)args + o->seen - 1) = 1;
  return 0;
bad:
  return pt_cli_usage(err, "bad %s '%s'%s", spelled(o, name, sizeof name), arg, o->suffix ? o->suffix : "");
}

/* The options getopt sees: cmd's own (and help) first, then its siblings' it lacks. */
static size_t gather(const pt_cli_cmd *cmd, const pt_cli_cmd *siblings, const pt_cli_opt **all, size_t *nown) {
  size_t n = 0;
  all[n++] = &help_opt;
  for (const pt_cli_opt *o = cmd->table->opts; o && !is_end(o) && n < MAX_OPTS; o++) all[n++] = o;
  *nown = n;
  for (const pt_cli_cmd *s = siblings; s && s->name; s++)
    for (const pt_cli_opt *o = s->table ? s->table->opts : NULL; s != cmd && o && !is_end(o) && n < MAX_OPTS; o++) {
      size_t k = 0;
      while (k < n && !(o->name ? all[k]->name && !strcmp(all[k]->name, o->name) : all[k]->short_name == o->short_name))
        k++;
      if (k == n) all[n++] = o;
    }
  return n;
}

int pt_cli_parse(const pt_cli_cmd *cmd, const pt_cli_cmd *siblings, int argc, char **argv, void *args, pt_err *err,
                 char ***pos, int *npos) {
  const pt_cli_opt *all[MAX_OPTS];
  size_t nown, n = gather(cmd, siblings, all, &nown), nlong = 0, ns = 1;
  struct option longopts[MAX_OPTS + 1];
  char shorts[2 * MAX_OPTS + 3] = ":"; /* ':' first: a missing value is told from an unknown option */
  if (cmd->table->maxpos == PT_CLI_COMMAND) { /* '+': the options end at the command, whose arguments are left alone */
    memcpy(shorts, "+:", 3);
    ns = 2;
  }
  for (size_t i = 0; i < n; i++) {
    int has_arg = all[i]->value ? required_argument : no_argument;
    if (all[i]->name) longopts[nlong++] = (struct option){all[i]->name, has_arg, NULL, 256 + (int)i};
    if (all[i]->short_name && !memchr(shorts, all[i]->short_name, ns)) {
      shorts[ns++] = all[i]->short_name;
      if (has_arg) shorts[ns++] = ':';
    }
  }
  shorts[ns] = 0;
  longopts[nlong] = (struct option){0};
  int c;
  unsigned char given[MAX_OPTS] = {0}; /* an option of one value given again is refused, not the last one taken */
  optind = 0; /* 0, not 1: getopt starts afresh (the ordering '+' asks for included), as a second parse needs */
  opterr = 0;
  while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
    if (c == '?') return pt_cli_usage(err, "unknown option '%s'", argv[optind - 1]);
    if (c == ':') return pt_cli_usage(err, "option '%s' needs a value", argv[optind - 1]);
    size_t i = 0;
    if (c >= 256) i = (size_t)(c - 256);
    else
      while (i < n && all[i]->short_name != c) i++;
    if (i >= n) return pt_cli_usage(err, "unknown option '%s'", argv[optind - 1]);
    if (all[i] == &help_opt) return PT_CLI_HELP;
    char name[64];
    if (i >= nown) /* named from the table: argv[optind - 1] may be its value */
      return pt_cli_usage(err, "option '%s' does not apply here", spelled(all[i], name, sizeof name));
    if (given[i] && all[i]->kind != PT_CLI_FLAG && all[i]->kind != PT_CLI_LIST && !all[i]->many)
      return pt_cli_usage(err, "option '%s' given twice (it takes one value)", spelled(all[i], name, sizeof name));
    given[i] = 1;
    int rc = apply(all[i], optarg, args, err);
    if (rc < 0) return rc;
  }
  int maxpos = cmd->table->maxpos;
  if (argc - optind > maxpos) return pt_cli_usage(err, "unexpected argument '%s'", argv[optind + maxpos]);
  *pos = argv + optind;
  *npos = argc - optind;
  return 0;
}

/* "  -o, --output DST" */
static int label(const pt_cli_opt *o, char *buf, size_t n) {
  char sh[8] = "";
  if (o->short_name) snprintf(sh, sizeof sh, "-%c%s", o->short_name, o->name ? ", " : "");
  return snprintf(buf, n, "  %s%s%s%s%s", sh, o->name ? "--" : "", o->name ? o->name : "", o->value ? " " : "",
                  o->value ? o->value : "");
}

static int shown(const pt_cli_opt *o) { return o->kind != PT_CLI_REFUSE; }

/* One option's lines: its label, then its help from `col` (on the next line when the label is longer). */
static void print_opt(FILE *f, const pt_cli_opt *o, int col) {
  char lab[128];
  int len = label(o, lab, sizeof lab);
  fputs(lab, f);
  const char *h = o->help ? o->help : "";
  if (len >= col) {
    fputc('\n', f);
    len = 0;
  }
  for (;;) {
    size_t k = strcspn(h, "\n");
    fprintf(f, "%*s%.*s\n", col - len, "", (int)k, h);
    if (!h[k]) break;
    h += k + 1;
    len = 0;
  }
}

int pt_cli_help(FILE *f, const char *prog, const pt_cli_cmd *cmd) {
  fputs(cmd->table->help, f);
  if (cmd->subs) {
    fputs("\nCommands:\n", f);
    pt_cli_list(f, cmd->subs);
    fprintf(f, "\n'%s %s COMMAND --help' describes each.\n", prog, cmd->name);
    return 0;
  }
  int col = 0;
  char lab[128];
  for (const pt_cli_opt *o = cmd->table->opts; o && !is_end(o); o++)
    if (shown(o) && label(o, lab, sizeof lab) + 2 > col) col = label(o, lab, sizeof lab) + 2;
  if (label(&help_opt, lab, sizeof lab) + 2 > col) col = label(&help_opt, lab, sizeof lab) + 2;
  if (col > HELP_COLUMN) col = HELP_COLUMN;
  fputc('\n', f);
  for (const pt_cli_opt *o = cmd->table->opts; o && !is_end(o); o++)
    if (shown(o)) print_opt(f, o, col);
  print_opt(f, &help_opt, col);
  return 0;
}

int pt_cli_list(FILE *f, const pt_cli_cmd *table) {
  for (const pt_cli_cmd *c = table; c->name; c++) {
    char name[128];
    size_t len = (size_t)snprintf(name, sizeof name, "%s", c->name);
    for (const pt_cli_cmd *s = c->subs; s && s->name && len < sizeof name; s++)
      len += (size_t)snprintf(name + len, sizeof name - len, "%s%s", s == c->subs ? " " : "|", s->name);
    fprintf(f, "  %-24s %s\n", name, c->summary);
  }
  return 0;
}

const pt_cli_cmd *pt_cli_find(const pt_cli_cmd *table, const char *name) {
  for (const pt_cli_cmd *c = table; c && c->name; c++)
    if (!strcmp(c->name, name)) return c;
  return NULL;
}
