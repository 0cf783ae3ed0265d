/* test_cli.c — the command line's option table (parsing and --help from one table) and its option values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "testutil.h"
#include "values.h"

static void test_ulong(void) {
  unsigned long v;
  CU_ASSERT(pt_cli_parse_ulong("42", 100, &v) == 0 && v == 42);
  CU_ASSERT(pt_cli_parse_ulong("0x10", 100, &v) == 0 && v == 16);
  CU_ASSERT_EQUAL(pt_cli_parse_ulong("101", 100, &v), -1);
  CU_ASSERT_EQUAL(pt_cli_parse_ulong("-1", 100, &v), -1);
  CU_ASSERT_EQUAL(pt_cli_parse_ulong("", 100, &v), -1);
  CU_ASSERT_EQUAL(pt_cli_parse_ulong("4x", 100, &v), -1);
  CU_ASSERT_EQUAL(pt_cli_parse_ulong("99999999999999999999999", (unsigned long)-1, &v), -1);
}

static void test_bytes(void) {
  struct {
    const char *s;
    uint64_t want;
  } good[] = {{"123", 123},         {"4K", 4096},          {"4k", 4096},           {"2M", 2 << 20},
              {"80G", 80ull << 30}, {"80GiB", 80ull << 30}, {"1TB", 1ull << 40},   {"3Gb", 3ull << 30},
              {"0", 0},             {"16777215T", 16777215ull << 40}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    uint64_t v = 1;
    CU_ASSERT_EQUAL(pt_cli_parse_bytes(good[i].s, &v), 0);
    CU_ASSERT_EQUAL(v, good[i].want);
  }
  const char *bad[] = {"", "-1", "G", "4X", "4KK", "4 K", "4Ki B", "16777216T", "1.5G", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t v;
    CU_ASSERT_EQUAL(pt_cli_parse_bytes(bad[i], &v), -1);
  }
  uint64_t cap = 7;
  CU_ASSERT_EQUAL(pt_cli_opt_capacity("0", &cap), -1); /* no cap is no --capacity, not --capacity 0 */
  CU_ASSERT_EQUAL(cap, 7);
  CU_ASSERT(pt_cli_opt_capacity("600M", &cap) == 0 && cap == 600ull << 20);
}

static void test_grid(void) {
  pt_grid *g = calloc(1, sizeof *g);
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_EQUAL(pt_grid_add(g, "garbage_collection_threshold=0,0.6"), 0);
  CU_ASSERT_EQUAL(g->n, 1);
  CU_ASSERT_STRING_EQUAL(g->axis[0].name, "garbage_collection_threshold");
  CU_ASSERT_EQUAL(g->axis[0].n, 2);
  CU_ASSERT_STRING_EQUAL(g->axis[0].values[1], "0.6");
  CU_ASSERT_EQUAL(pt_grid_add(g, "x=1"), 0);
  const char *bad[] = {"x", "=1", "x=", "x=1,,2", "x=,1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CU_ASSERT_EQUAL(pt_grid_add(g, bad[i]), -1);
  CU_ASSERT_EQUAL(g->n, 2);
  char many[PT_GRID_VALUES * 3 + 8] = "m=1";
  for (int i = 1; i < PT_GRID_VALUES; i++) strcat(many, ",1");
  CU_ASSERT_EQUAL(pt_grid_add(g, many), 0);
  strcat(many, ",1");
  CU_ASSERT_EQUAL(pt_grid_add(g, many), -1); /* 65 values */
  char longv[PT_GRID_VALUE_MAX + 16] = "v=";
  memset(longv + 2, '9', PT_GRID_VALUE_MAX);
  CU_ASSERT_EQUAL(pt_grid_add(g, longv), -1); /* a value of PT_GRID_VALUE_MAX bytes */
  /* a list value is one value: commas inside brackets do not split */
  CU_ASSERT_EQUAL_FATAL(pt_grid_add(g, "roundup_power2_divisions=4,[256:1,512:2,1024:4,>:8],[64:8,>:1],8"), 0);
  const pt_grid_axis *ax = &g->axis[g->n - 1];
  CU_ASSERT_EQUAL(ax->n, 4);
  CU_ASSERT_STRING_EQUAL(ax->values[0], "4");
  CU_ASSERT_STRING_EQUAL(ax->values[1], "[256:1,512:2,1024:4,>:8]");
  CU_ASSERT_STRING_EQUAL(ax->values[2], "[64:8,>:1]");
  CU_ASSERT_STRING_EQUAL(ax->values[3], "8");
  const char *unbalanced[] = {"r=[256:1,4", "r=256:1],4", "r=[[1:2]]", "r=4,"};
  for (size_t i = 0; i < sizeof unbalanced / sizeof unbalanced[0]; i++) CU_ASSERT_EQUAL(pt_grid_add(g, unbalanced[i]), -1);
  CU_ASSERT_EQUAL(pt_grid_add(g, "x=2"), -1); /* a second grid of one parameter */
  CU_ASSERT_EQUAL(pt_grid_add(g, "roundup_power2_divisions=2"), -1);
  for (char y[] = "y0=1"; g->n < PT_GRID_AXES; y[1]++) CU_ASSERT_EQUAL_FATAL(pt_grid_add(g, y), 0);
  CU_ASSERT_EQUAL(pt_grid_add(g, "z=1"), -1); /* a ninth axis */
  free(g);
}

static void test_objective(void) {
  pt_objective o;
  CU_ASSERT(pt_objective_parse("time", &o) == 0 && o.kind == PT_OBJ_TIME);
  CU_ASSERT(pt_objective_parse("memory", &o) == 0 && o.kind == PT_OBJ_MEMORY);
  CU_ASSERT(pt_objective_parse("weighted:0.25", &o) == 0 && o.kind == PT_OBJ_WEIGHTED && o.w == 0.25);
  CU_ASSERT_STRING_EQUAL(o.text, "weighted:0.25");
  const char *bad[] = {"", "fast", "weighted:", "weighted:1.5", "weighted:-0.1", "weighted:0.5x", "weighted:nan", "Time"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CU_ASSERT_EQUAL(pt_objective_parse(bad[i], &o), -1);

  pt_sim_result r = {.has_gpu = 1, .predicted_alloc_us = 200, .peak_reserved_bytes = 1000};
  pt_objective_parse("time", &o);
  CU_ASSERT_EQUAL(pt_objective_value(&o, &r), 200);
  pt_objective_parse("memory", &o);
  CU_ASSERT_EQUAL(pt_objective_value(&o, &r), 1000);
  pt_objective_parse("weighted:0.5", &o);
  CU_ASSERT_DOUBLE_EQUAL(pt_objective_value(&o, &r), sqrt(200.0 * 1000), 1e-9); /* time^W * memory^(1-W) */
  char f[96];
  CU_ASSERT_STRING_EQUAL(pt_objective_formula(&o, f, sizeof f), "time_us^0.5 * peak_reserved_bytes^0.5");
  pt_objective_parse("weighted:0.25", &o);
  CU_ASSERT_DOUBLE_EQUAL(pt_objective_value(&o, &r), pow(200, 0.25) * pow(1000, 0.75), 1e-9);
  CU_ASSERT_STRING_EQUAL(pt_objective_formula(&o, f, sizeof f), "time_us^0.25 * peak_reserved_bytes^0.75");
  pt_objective_parse("weighted:1", &o); /* the ends are the plain objectives */
  CU_ASSERT_DOUBLE_EQUAL(pt_objective_value(&o, &r), 200, 1e-9);
  pt_objective_parse("weighted:0", &o);
  CU_ASSERT_DOUBLE_EQUAL(pt_objective_value(&o, &r), 1000, 1e-9);
  pt_objective_parse("weighted:0.5", &o);
  r.has_gpu = 0; /* no predicted time: out by time, not by memory */
  CU_ASSERT_EQUAL(pt_objective_value(&o, &r), HUGE_VAL);
  pt_objective_parse("memory", &o);
  CU_ASSERT_EQUAL(pt_objective_value(&o, &r), 1000);
  r.ooms = 1;
  CU_ASSERT_EQUAL(pt_objective_value(&o, &r), HUGE_VAL);
}

/* ---- the option table ---- */

typedef struct targs {
  const char *name, *out, *list[2];
  int nlist, flag, have_n;
  unsigned long n;
  uint64_t cap;
} targs;

static const pt_cli_opt topts[] = {
    PT_CLI_OPT_STR("name", 0, "NAME", targs, name, "a name"),
    PT_CLI_OPT_STR("output", 'o', "FILE", targs, out, "where\nit goes"),
    PT_CLI_OPT_LIST("item", "X", targs, list, nlist, "an item (repeatable)"),
    PT_CLI_OPT_FLAG("flag", targs, flag, "a flag"),
    {.name = "n", .value = "N", .kind = PT_CLI_ULONG, .off = offsetof(targs, n), .min = 1, .max = 9,
     .seen = offsetof(targs, have_n) + 1, .suffix = " (1..9)", .help = "a count"},
    PT_CLI_OPT_PARSE("capacity", "BYTES", targs, cap, pt_cli_opt_capacity, NULL, "bytes"),
    PT_CLI_OPT_REFUSE("old", NULL, "--old is gone"),
    PT_CLI_END};
static const pt_cli_opt sibling_opts[] = {PT_CLI_OPT_FLAG("other", targs, flag, "another command's"), PT_CLI_END};
static const targs tdefaults = {.name = "dflt"};
static const pt_cli_table ttable = {"usage: t [OPTIONS] [ARG]\n", topts, sizeof(targs), &tdefaults, 1};
static const pt_cli_table stable = {"usage: s\n", sibling_opts, sizeof(targs), &tdefaults, 0};
static const pt_cli_cmd tcmds[] = {{"t", "test", NULL, &ttable, NULL}, {"s", "sibling", NULL, &stable, NULL}, {0}};

/* Parse a command line given as one string (at most 15 words). */
static int parse(const char *line, targs *a, pt_err *err, int *npos, char ***pos) {
  static char buf[512], *argv[16];
  snprintf(buf, sizeof buf, "%s", line);
  int argc = 0;
  for (char *w = strtok(buf, " "); w && argc < 15; w = strtok(NULL, " ")) argv[argc++] = w;
  argv[argc] = NULL;
  *a = tdefaults;
  err->msg[0] = 0;
  return pt_cli_parse(&tcmds[0], tcmds, argc, argv, a, err, pos, npos);
}

static void test_parse(void) {
  targs a;
  pt_err err;
  char **pos;
  int npos;
  CU_ASSERT_EQUAL(parse("t --name x -o f --item 1 --item=2 --flag --n 3 --capacity 2M arg", &a, &err, &npos, &pos), 0);
  CU_ASSERT_STRING_EQUAL(a.name, "x");
  CU_ASSERT_STRING_EQUAL(a.out, "f");
  CU_ASSERT(a.nlist == 2 && !strcmp(a.list[1], "2"));
  CU_ASSERT(a.flag && a.have_n && a.n == 3 && a.cap == 2 << 20);
  CU_ASSERT(npos == 1 && !strcmp(pos[0], "arg"));
  CU_ASSERT_EQUAL(parse("t", &a, &err, &npos, &pos), 0);
  CU_ASSERT(!strcmp(a.name, "dflt") && !a.have_n && npos == 0);
  CU_ASSERT_EQUAL(parse("t --flag --flag", &a, &err, &npos, &pos), 0); /* a flag twice is the flag */
  CU_ASSERT(a.flag);

  struct {
    const char *line, *msg;
  } bad[] = {
      {"t --bogus", "unknown option '--bogus'"},
      {"t --name", "option '--name' needs a value"},
      {"t -o", "option '-o' needs a value"},
      {"t --other", "option '--other' does not apply here"},
      {"t --n 0", "bad --n '0' (1..9)"},
      {"t --n 10", "bad --n '10' (1..9)"},
      {"t --capacity 0", "bad --capacity '0'"},
      {"t --item 1 --item 2 --item 3", "too many --item (at most 2)"},
      {"t --old", "--old is gone"},
      {"t a b", "unexpected argument 'b'"},
      /* an option of one value given twice: refused, whatever the spelling, not the last one taken */
      {"t --name x --name y", "option '--name' given twice (it takes one value)"},
      {"t -o f --output g", "option '--output' given twice (it takes one value)"},
      {"t --n 3 --n 4", "option '--n' given twice (it takes one value)"},
      {"t --capacity 1M --capacity 2M", "option '--capacity' given twice (it takes one value)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(parse(bad[i].line, &a, &err, &npos, &pos), PT_ECLI_USAGE);
    CU_ASSERT_STRING_EQUAL(err.msg, bad[i].msg);
  }
  CU_ASSERT_EQUAL(parse("t --flag --help --bogus", &a, &err, &npos, &pos), PT_CLI_HELP);
  CU_ASSERT_EQUAL(parse("t -h", &a, &err, &npos, &pos), PT_CLI_HELP);
}

/* --help lists what the parser takes, from the same table: each option but the refused one, and -h. */
static void test_help(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(pt_cli_help(f, "pt", &tcmds[0]), 0);
  fclose(f);
  CU_ASSERT_STRING_EQUAL(text, "usage: t [OPTIONS] [ARG]\n"
                               "\n"
                               "  --name NAME        a name\n"
                               "  -o, --output FILE  where\n"
                               "                     it goes\n"
                               "  --item X           an item (repeatable)\n"
                               "  --flag             a flag\n"
                               "  --n N              a count\n"
                               "  --capacity BYTES   bytes\n"
                               "  -h, --help         this help\n");
  free(text);
}

int pt_test_add_cli(void) {
  CU_pSuite s = CU_add_suite("cli", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "counts: whole, in range, not negative", test_ulong);
  CU_add_test(s, "byte sizes with K, M, G, T suffixes", test_bytes);
  CU_add_test(s, "--grid NAME=A,B,C within its limits", test_grid);
  CU_add_test(s, "objectives and their values", test_objective);
  CU_add_test(s, "the option table parses, and refuses with one message", test_parse);
  CU_add_test(s, "--help is the option table printed", test_help);
  return CU_get_error();
}
