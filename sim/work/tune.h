/*
 * tune.h — searching a policy's parameter space.
 *
 * Parameters with a list of choices are searched by grid (every
 * combination), a list-valued knob among them: its choices may be lists
 * (mech.h), each tried as one grid value, since a per-interval table has no
 * order a simplex could follow; continuous ones by GSL's Nelder–Mead simplex
 * (gsl_multimin_fminimizer_nmsimplex2) in a space where log-scaled
 * parameters are searched by their logarithm, from several starts (the
 * defaults first, then seeded random points).  Ranges hold by clamping; an
 * integer parameter is rounded before evaluation, and each distinct point is
 * evaluated once (memoised), so the budget counts real evaluations.
 * The objective is a callback: the tuner knows neither the simulator nor
 * the store.  A value that is not finite marks an infeasible point (a run
 * that ran out of memory): such a start is replaced by a feasible point of a
 * coarse grid (tune.c), and a search that finds no finite value returns
 * PT_ENOTFOUND.  Continuous values are evaluated at the search's resolution:
 * 4 significant digits on a log scale, 1e-3 of the range on a linear one,
 * the default and the range's ends exactly.
 */
#ifndef PT_TUNE_H
#define PT_TUNE_H

#include <stddef.h>

#include "error.h"
#include "mech.h"

typedef struct pt_tune_param {
  const char *name;
  double dflt, lo, hi;       /* lo/hi for continuous parameters */
  int log_scale, integer;
  const double *choices;     /* nchoices > 0: a grid parameter */
  int nchoices;
  const pt_plist *choice_lists; /* NULL, or per choice the list it is (n 0: the number choices[k]) */
} pt_tune_param;

/* Evaluate one point: 0 with *value (lower is better), or a negative PT_E* (stops the search). */
typedef int (*pt_tune_eval)(void *ctx, const pt_params *point, double *value, pt_err *err);

/*
 * Points made ahead, for a caller that can make many at once (tune -j N):
 * before the search, each of its chains (a start at a grid point, then its
 * simplex) is run ahead in a thread of its own, and the points they wait for
 * are handed here in batches of at most `parallel`, earlier chains' first, at
 * most twice the budget in all; prefetch makes them (side by side) and says
 * their values (NaN: none).  The search then asks eval for every point as it
 * would without prefetch, so what it spends its budget on, and its result,
 * do not depend on what prefetch did or how long it took; eval finds the
 * points made ahead already made (the caller keeps them).
 */
typedef int (*pt_tune_prefetch)(void *ctx, const pt_params *points, int n, double *values /* OUT */, pt_err *err);

typedef struct pt_tune_opts {
  int budget;                /* most evaluations in all (default 60) */
  int starts;                /* Nelder–Mead starts per grid point (default 3) */
  unsigned long seed;        /* for the random starts */
  pt_tune_prefetch prefetch; /* NULL: none */
  int parallel;              /* with prefetch: points made at once (chains run ahead at once) */
} pt_tune_opts;

typedef struct pt_tune_result {
  pt_params best;
  double best_value;
  int evaluations;
} pt_tune_result;

int pt_tune(const pt_tune_param *params, int nparams, const pt_tune_opts *opts, pt_tune_eval eval, void *ctx,
            pt_err *err, pt_tune_result *out /* OUT */);

#endif
