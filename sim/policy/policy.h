/*
 * policy.h — the Lua policy host: loads a policy script in a sandbox, reads
 * the table it returns (name, doc, mechanism, params, hooks), lets --set
 * change parameter values within their declared ranges, and hands the
 * simulator plain C: a pt_params of current values and a pt_policy_hooks
 * table whose members call the script's hooks (mech.h).  This is the only
 * file in pagetune that includes lua.h.
 *
 * A policy script returns
 *
 *   return {
 *     name = "large_page_threshold", doc = "...", mechanism = "caching",
 *     params = {
 *       large_page_threshold = { default = 1048576, range = {65536, 1073741824},
 *                                scale = "log", integer = true, doc = "..." },
 *       divisions = { default = 0, choices = {0, 1, 2, 4, 8} },
 *       roundup_power2_divisions = { default = 0, choices = {0, 4, "[256:1,512:2,>:8]"} },
 *     },
 *     page_size = function(p, bytes) ... end,          -- optional hooks
 *     segment_size = function(p, bytes) ... end,
 *     round = function(p, bytes) ... end,
 *     should_collect = function(p, reserved, allocated) ... end,
 *   }
 *
 * round / segment_size / page_size return a positive integer number of bytes
 * and are memoised per argument (p is fixed during a run; --set clears the
 * memo); should_collect returns a boolean and is called every time.  `p` is
 * a read-only view of the current parameter values; reading an undeclared
 * name is an error.
 *
 * Sandbox: a private lua_State whose allocator enforces a byte budget, with
 * only the base, table, string and math libraries, less what could reach
 * outside or run unbounded: dofile, loadfile, load (so no chunk but the
 * script itself, and no bytecode), require, print, warn, collectgarbage,
 * xpcall (a handler for an error the budget raises would run with Lua's
 * hooks off, unbudgeted; pcall stays), string.dump, the string pattern
 * functions (find, match, gmatch, gsub: their backtracking runs in C, out of
 * the instruction count) and table.move (a C loop of any length).
 * string.rep answers empty repetitions itself (Lua 5.4 loops n times over
 * them); setmetatable refuses __gc (finalizers would run outside the
 * budgets); math.random is seeded with 0.  A binary chunk in place of the
 * script is refused.
 *
 * Budgets, fresh for the load and for each hook call: instructions, and
 * wall-clock time for the work in C that instructions do not count
 * (comparing huge strings, table.insert into huge tables; the clock is read
 * every 1000 instructions, so such work can overrun it by up to 2000 steps).
 * Memory is one budget for the state's life.
 *
 * Every error message is one line, "SCRIPT:LINE: reason" (or "SCRIPT:
 * reason" where no line applies), SCRIPT being the path the policy was
 * loaded as.
 *
 * Not thread-safe: one policy, one thread at a time.
 */
#ifndef PT_POLICY_H
#define PT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "mech.h"

typedef struct pt_policy pt_policy;

/* One declared parameter.  Strings and choices live as long as the policy. */
typedef struct pt_policy_param {
  const char *name;
  const char *doc;          /* "" when the script gives none */
  double value, dflt;       /* current value (after --set) and the script's default; NaN for a list */
  pt_plist list, dflt_list; /* ... when it is a list (n > 0; see mech.h) */
  double min, max;          /* the declared range, when has_range */
  int has_range;
  int nchoices;             /* > 0: value must be one of choices[0 .. nchoices-1] */
  const double *choices;
  const pt_plist *choice_lists; /* NULL, or per choice: the list it is (n 0: the number choices[k]) */
  int log_scale;            /* scale = "log" (the tuner searches log(value)) */
  int integer;              /* integer = true */
} pt_policy_param;

/* Budgets; a zero member takes its default. */
typedef struct pt_policy_limits {
  size_t max_bytes;          /* Lua heap (and script size); default 64 MiB */
  uint64_t max_instructions; /* per load and per hook call; default 10 million (at most INT_MAX) */
  double max_seconds;        /* wall-clock time per load and per hook call; default 30 */
  uint64_t max_run_instructions; /* all hook calls of one run together; default 200 million */
  double max_run_seconds;        /* wall-clock time in hook calls of one run; default 120 */
} pt_policy_limits;

#define PT_POLICY_DEFAULT_BYTES ((size_t)64 << 20)
#define PT_POLICY_DEFAULT_INSTRUCTIONS 10000000u
#define PT_POLICY_DEFAULT_SECONDS 30.0
/* A hook may spend most of its per-call budget on every call and never trip it, which would hold a run of
   thousands of calls for minutes: the hooks of one run (from pt_policy_get_hooks on) share these. */
#define PT_POLICY_DEFAULT_RUN_INSTRUCTIONS 200000000u
#define PT_POLICY_DEFAULT_RUN_SECONDS 120.0

/*
 * Load a policy from a file (or from a buffer; name is what messages call
 * it).  lim may be NULL.  0 with *out set, or a negative PT_E* with err
 * saying "SCRIPT:LINE: reason" on one line and *out NULL: PT_EIO (cannot
 * read), PT_EFORMAT (a Lua error, a malformed table, a bad parameter),
 * PT_EFORBID (a binary chunk), PT_ELIMIT (a budget exceeded), PT_ENOMEM.
 */
int pt_policy_load(const char *path, const pt_policy_limits *lim, pt_err *err, pt_policy **out /* OUT */);
int pt_policy_load_buffer(const char *src, size_t len, const char *name, const pt_policy_limits *lim,
                          pt_err *err, pt_policy **out /* OUT */);

const char *pt_policy_name(const pt_policy *pol);
const char *pt_policy_doc(const pt_policy *pol);      /* "" when none */
const char *pt_policy_mechanism(const pt_policy *pol); /* a name pt_mech_find knows */
const char *pt_policy_path(const pt_policy *pol);     /* the path or name it was loaded as */
/* The script text as loaded (not NUL-terminated in general; *len its size). */
const char *pt_policy_source(const pt_policy *pol, size_t *len /* OUT */);

/* Declared parameters, in the order the script declares them. */
int pt_policy_nparams(const pt_policy *pol);
const pt_policy_param *pt_policy_param_at(const pt_policy *pol, int i);

/*
 * Apply one --set assignment, "name=value": the name must be declared, the
 * value a plain decimal number ("inf"/"-inf" allowed where nothing bounds
 * it), within the declared range or among the choices, integral for an
 * integer parameter and inside the mechanism's own bounds; or, where the
 * mechanism takes a list (mech.h), PyTorch's list form [BOUNDARY:V,...,>:V]
 * (a string in the script: default = "[...]", choices = {4, "[...]"}).
 * A list parameter is shown to hooks (p.NAME) as that text.  0, or PT_EUSAGE
 * with err naming the script, the assignment and the reason.
 */
int pt_policy_set(pt_policy *pol, const char *assignment, pt_err *err);
/* The same, its messages naming the option opt ("--grid") in place of --set. */
int pt_policy_set_as(pt_policy *pol, const char *assignment, const char *opt, pt_err *err);

/* Current values of every declared parameter (out is overwritten). */
void pt_policy_params(const pt_policy *pol, pt_params *out /* OUT */);

/*
 * The hooks the script defines, backed by Lua (NULL members for the hooks
 * it lacks); ctx is pol, valid until pt_policy_free.  A hook that fails
 * returns PT_EFORMAT (a Lua error or a wrong return value) or PT_ELIMIT (a
 * budget exceeded) with a one-line "SCRIPT:LINE: reason" in its err.  Each
 * call begins a run: the hook calls from then on share the whole-run
 * budgets (max_run_instructions, max_run_seconds), and one past them fails
 * naming the script and the hook.
 *
 * (Named _get_hooks, not pt_policy_hooks: that name is mech.h's typedef.)
 */
void pt_policy_get_hooks(pt_policy *pol, pt_policy_hooks *out /* OUT */);

/* The full text (message and Lua traceback) of the last failed hook call; "" when none. */
const char *pt_policy_traceback(const pt_policy *pol);

void pt_policy_free(pt_policy *pol);

#endif
