/*
 * values.h — what the command line's option values mean: counts, byte
 * sizes with suffixes, parameter grids, objectives.  Pure functions, so the
 * unit tests reach them (tests/test_cli.c).  Those named pt_cli_opt_* are
 * option parsers for the option table (opts.h): they take the field to set.
 */
#ifndef PT_CLI_VALUES_H
#define PT_CLI_VALUES_H

#include <stdint.h>

#include "mech.h"
#include "sim.h"

/* The whole of s as an unsigned number (decimal, 0x hex or 0 octal) up to max; -1 otherwise. */
int pt_cli_parse_ulong(const char *s, unsigned long max, unsigned long *out /* OUT */);

/* Bytes with an optional binary suffix (K, M, G, T; then i and B allowed: 4K, 80GiB); -1 when not such. */
int pt_cli_parse_bytes(const char *s, uint64_t *out /* OUT */);
/* Option parser: a nonzero byte count into a uint64_t. */
int pt_cli_opt_capacity(const char *arg, void *field);

/*
 * --grid NAME=A,B,C: the values a sweep gives one parameter, split at the
 * commas outside brackets, so a list value (PyTorch's [BOUNDARY:V,...,>:V],
 * mech.h) is one value: roundup_power2_divisions=0,4,[256:1,512:2,>:8] is
 * three.  Each value is checked by the policy (pt_policy_set) when applied.
 */
#define PT_GRID_AXES 8
#define PT_GRID_VALUES 64
#define PT_GRID_VALUE_MAX 128
typedef struct pt_grid_axis {
  char name[PT_PARAM_NAME_MAX];
  char values[PT_GRID_VALUES][PT_GRID_VALUE_MAX];
  int n;
} pt_grid_axis;
typedef struct pt_grid {
  pt_grid_axis axis[PT_GRID_AXES];
  int n;
} pt_grid;
/* Add NAME=A,B,C to g; -1 when malformed (an empty value, an unbalanced bracket), when NAME has a grid already, or
   past the limits (PT_GRID_AXES axes of PT_GRID_VALUES values of PT_GRID_VALUE_MAX - 1 bytes). */
int pt_grid_add(pt_grid *g, const char *arg);
/* Option parser: pt_grid_add into a pt_grid. */
int pt_cli_opt_grid(const char *arg, void *field);

/* What the workbench minimizes. */
typedef enum pt_objective_kind { PT_OBJ_TIME, PT_OBJ_MEMORY, PT_OBJ_WEIGHTED } pt_objective_kind;
typedef struct pt_objective {
  const char *text;       /* as given: "time", "memory", "weighted:0.5" */
  pt_objective_kind kind;
  double w;               /* weighted: the weight of time, in [0, 1] */
} pt_objective;
/*
 * weighted:W, the one meaning tune, best, export and confirm share:
 * time_us^W * peak_reserved_bytes^(1-W), so that a 1% change in predicted
 * time counts W and a 1% change in peak memory 1-W.  It needs no reference
 * run, so a run's value, and the order of runs, are the same whichever runs
 * are stored beside it.
 */
#define PT_OBJ_WEIGHTED_HELP "weighted:W minimises time_us^W * peak_reserved_bytes^(1-W):\n" \
  "a 1% change in time counts W, in memory 1-W"
/* "time", "memory" or "weighted:W" with W in [0, 1]; -1 otherwise. */
int pt_objective_parse(const char *s, pt_objective *out /* OUT */);
/* Option parser: pt_objective_parse into a pt_objective. */
int pt_cli_opt_objective(const char *arg, void *field);
/* Option parser: a finite number > 0 into a double. */
int pt_cli_opt_positive(const char *arg, void *field);
/* Lower is better; a run that hit OOM, or lacks the figure, is out (HUGE_VAL). */
double pt_objective_value(const pt_objective *o, const pt_sim_result *r);
/* What o's value is, for output: "predicted_alloc_us", "peak_reserved_bytes", "time_us^0.5 * peak_reserved_bytes^0.5". */
const char *pt_objective_formula(const pt_objective *o, char *buf, size_t n);

#endif
