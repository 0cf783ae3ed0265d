/*
 * opts.h — the command line's one option table, read by both the parser
 * (getopt_long) and --help, so that help cannot drift from what is parsed;
 * and the command table the dispatcher (main.c) walks.
 *
 * A command's options are an array of pt_cli_opt ending in PT_CLI_END.  Each
 * says its name, whether it takes a value (a placeholder for --help), its
 * help text, and what it sets: a field of the command's argument struct,
 * found by offset.  -h/--help is every command's and is not listed.  An
 * option that a sibling command (one in the same table) takes but this one
 * does not is refused as "does not apply here"; one no sibling takes is
 * "unknown".
 */
#ifndef PT_CLI_OPTS_H
#define PT_CLI_OPTS_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* Bad usage the command line saw: "pagetune CMD: MESSAGE" and "(try 'pagetune CMD --help')", exit 2. */
#define PT_ECLI_USAGE (-30)
/* Not an error: -h/--help was asked for; the dispatcher prints the help. */
#define PT_CLI_HELP 1

/* What an option sets in its command's argument struct. */
typedef enum pt_cli_kind {
  PT_CLI_FLAG,   /* int = 1 */
  PT_CLI_STR,    /* const char * = the value */
  PT_CLI_LIST,   /* const char *[max]: the value appended; its count is the int at off2 */
  PT_CLI_ULONG,  /* unsigned long in [min, max] */
  PT_CLI_PARSE,  /* parse(value, field); a negative return is a bad value */
  PT_CLI_REFUSE, /* taken by getopt only to be refused with `suffix` as the message; not in --help */
} pt_cli_kind;

typedef struct pt_cli_opt {
  const char *name;   /* long name without "--"; NULL for a short-only option */
  char short_name;    /* 0 for none */
  const char *value;  /* placeholder in --help ("BYTES"); NULL when it takes no value */
  const char *help;   /* its --help text; a '\n' continues it on the next line */
  pt_cli_kind kind;
  size_t off;         /* offset of the field it sets */
  size_t off2;        /* LIST: offset of the int count */
  size_t seen;        /* offset of an int set to 1 when given, plus one; 0 for none */
  unsigned long min, max;                 /* ULONG: the range; LIST: the most values */
  int (*parse)(const char *arg, void *field); /* PARSE */
  const char *suffix; /* after "bad --NAME 'VALUE'", e.g. " (1..1000000)"; REFUSE: the whole message */
  int many;           /* PARSE: its parser gathers each value (--grid), so it may be given again; a STR, ULONG or
                         other PARSE option given twice is refused, never the last value silently taken */
} pt_cli_opt;

#define PT_CLI_END {0}

#define PT_CLI_F_(type, f) .off = offsetof(type, f)
#define PT_CLI_OPT_FLAG(n, type, f, h) {.name = n, .help = h, .kind = PT_CLI_FLAG, PT_CLI_F_(type, f)}
#define PT_CLI_OPT_STR(n, s, v, type, f, h) {.name = n, .short_name = s, .value = v, .help = h, .kind = PT_CLI_STR, PT_CLI_F_(type, f)}
#define PT_CLI_OPT_LIST(n, v, type, f, count, h) \
  {.name = n, .value = v, .help = h, .kind = PT_CLI_LIST, PT_CLI_F_(type, f), .off2 = offsetof(type, count), \
   .max = sizeof ((type *)0)->f / sizeof ((type *)0)->f[0]}
#define PT_CLI_OPT_ULONG(n, v, type, f, lo, hi, sfx, h) \
  {.name = n, .value = v, .help = h, .kind = PT_CLI_ULONG, PT_CLI_F_(type, f), .min = lo, .max = hi, .suffix = sfx}
#define PT_CLI_OPT_PARSE(n, v, type, f, fn, sfx, h) \
  {.name = n, .value = v, .help = h, .kind = PT_CLI_PARSE, PT_CLI_F_(type, f), .parse = fn, .suffix = sfx}
#define PT_CLI_OPT_PARSE_MANY(n, v, type, f, fn, sfx, h) \
  {.name = n, .value = v, .help = h, .kind = PT_CLI_PARSE, PT_CLI_F_(type, f), .parse = fn, .suffix = sfx, .many = 1}
#define PT_CLI_OPT_REFUSE(n, v, why) {.name = n, .value = v, .kind = PT_CLI_REFUSE, .suffix = why}

/* A command's option table: its help, its options, and the argument struct they fill. */
typedef struct pt_cli_table {
  const char *help;     /* usage line(s) and what it does; --help adds a line for each option */
  const pt_cli_opt *opts; /* ends with PT_CLI_END; NULL for a group */
  size_t args_size;     /* the argument struct the options fill */
  const void *defaults; /* its value before parsing (args_size bytes) */
  int maxpos;           /* positional arguments it takes; PT_CLI_COMMAND: a command and its arguments */
} pt_cli_table;

/* maxpos of a command that runs a command of the user's (confirm): its options end at the first positional
   argument, so that the command's own arguments are never taken for options or moved. */
#define PT_CLI_COMMAND INT_MAX

/* Run with the parsed arguments: 0, or a negative PT_E* code with err set (PT_ECLI_USAGE for bad usage). */
typedef int (*pt_cli_run)(void *args, char **pos, int npos, pt_err *err);

/* A line of a command table: a command, or a group of subcommands (trace, gpu). */
typedef struct pt_cli_cmd {
  const char *name;    /* as typed: "sim", or "stats" under "trace" */
  const char *summary; /* its line in the list of commands */
  pt_cli_run run;      /* NULL for a group */
  const pt_cli_table *table;
  const struct pt_cli_cmd *subs; /* a group's commands, ending with a NULL name */
} pt_cli_cmd;

/* A command's handler and option table, as cmd_X.c defines them. */
#define PT_CLI_DECLARE(x) \
  int pt_cmd_##x(void *args, char **pos, int npos, pt_err *err); \
  extern const pt_cli_table pt_opts_##x

/* Set err to a usage message (printf-style) and return PT_ECLI_USAGE. */
int pt_cli_usage(pt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Parse argv[1..argc) for cmd into args (already holding its defaults):
 * options by cmd's table, the rest as positional arguments (*pos, *npos).
 * 0, PT_CLI_HELP when -h/--help came first, or PT_ECLI_USAGE with err set.
 * siblings: the table cmd belongs to (their options "do not apply here").
 */
int pt_cli_parse(const pt_cli_cmd *cmd, const pt_cli_cmd *siblings, int argc, char **argv, void *args, pt_err *err,
                 char ***pos /* OUT */, int *npos /* OUT */);

/* cmd's --help: its text, then a line for each option it takes (or, for a group, each command). */
int pt_cli_help(FILE *f, const char *prog, const pt_cli_cmd *cmd);

/* The list of commands in a table, one "  NAME  SUMMARY" line each (a group as NAME a|b|c). */
int pt_cli_list(FILE *f, const pt_cli_cmd *table);

/* The command named `name` in a table, or NULL. */
const pt_cli_cmd *pt_cli_find(const pt_cli_cmd *table, const char *name);

#endif
