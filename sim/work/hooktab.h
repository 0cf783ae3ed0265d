/*
 * hooktab.h — a policy's size hooks resolved into tables (sizetable.h), for
 * the allocator library, which runs no Lua.
 *
 * A hook (round, segment_size) becomes a table where its results depend
 * only on its argument and follow pieces of the table's forms (constant,
 * identity, round up to a multiple).  Resolution is by sampling, exact
 * bisection and verification:
 *   1. the hook is evaluated at every power of two and its neighbours
 *      (2^k - 1, 2^k, 2^k + 1, up to 2^50) and at every multiple of 512 B up
 *      to 64 MiB (which holds the multiples of 1 MiB and 2 MiB);
 *   2. from the start of each piece, every form that gives the hook's result
 *      there is followed over the sample points until it first disagrees;
 *      between that sample and the last agreeing one, a binary search on
 *      integer sizes finds the exact last size the form agrees at; the form
 *      reaching furthest makes the piece (ties: constant, identity, round
 *      up by the smallest multiple), and the next piece starts one past it;
 *   3. the table is verified: for each piece the hook is asked at its ends,
 *      the ends +-1 and PT_HOOKTAB_VERIFY pseudo-random sizes inside it (a
 *      fixed seed: the same policy gives the same table), and any
 *      disagreement refuses the hook, in one line naming the hook, the size
 *      and both results.
 * What this cannot prove: that the hook agrees with the table at the sizes
 * never asked.  A hook that departs from its piece's form only at sizes
 * sampling misses (one size in a million, say) gets a table that is wrong
 * there.  Results are memoised by the policy host, and hooks are functions
 * of their argument and the fixed parameters (policy.h), which is what
 * makes a table of them meaningful at all.
 *
 * Bounds: at most PT_HOOKTAB_MAX_CALLS hook calls and PT_HOOKTAB_MAX_SECONDS
 * per hook (each call also under the policy host's own budgets), and at most
 * PT_SIZETAB_MAX_PIECES pieces; past any of them the hook is refused.
 */
#ifndef PT_HOOKTAB_H
#define PT_HOOKTAB_H

#include <stdint.h>

#include "error.h"
#include "mech.h"
#include "policy.h"
#include "sizetable.h"

#define PT_HOOKTAB_MAX_CALLS 1000000u
#define PT_HOOKTAB_MAX_SECONDS 120.0
#define PT_HOOKTAB_VERIFY 256      /* pseudo-random sizes verified in each piece */
#define PT_HOOKTAB_SAMPLE_STEP 512 /* multiples of this are sampled ... */
#define PT_HOOKTAB_SAMPLE_TOP (UINT64_C(64) << 20) /* ... up to here */

/* A size hook, as pt_policy_hooks holds one. */
typedef int (*pt_hooktab_fn)(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err);

/* What resolving cost. */
typedef struct pt_hooktab_stats {
  uint64_t calls;   /* hook calls made (the host's memo may answer some) */
  uint64_t samples; /* sample points */
  uint64_t verified;/* sizes verified */
} pt_hooktab_stats;

/*
 * fn (named hook in messages) as a table, into out.  0; PT_EFORMAT when the
 * hook's results do not fit a table (verification found a size where they
 * differ: "segment_size: at 1048577 B the table gives 2097152, the hook
 * 1572871: ..."); PT_ELIMIT past a bound; the hook's own error, prefixed by
 * the hook and the size.  stats may be NULL.
 */
int pt_hooktab_resolve(pt_hooktab_fn fn, void *ctx, const char *hook, pt_sizetab *out /* OUT */,
                       pt_hooktab_stats *stats, pt_err *err);

/*
 * Every hook of pol: round and segment_size resolved into out (n == 0 for
 * those it lacks); page_size dropped (a model-only dimension: the real
 * driver chooses page sizes), *page_size_dropped set when there was one;
 * should_collect refused (PT_EFORBID: its result depends on the state,
 * reserved and allocated bytes, not on one size).  Messages start with the
 * policy's path.
 */
int pt_hooktab_resolve_policy(pt_policy *pol, pt_sizetab_set *out /* OUT */, int *page_size_dropped /* OUT */,
                              pt_err *err);

#endif
