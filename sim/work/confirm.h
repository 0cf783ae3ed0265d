/*
 * confirm.h — what `pagetune confirm` measures and concludes: the user's
 * own workload run alternately under a baseline configuration and a tuned
 * one; the file its measurement hook (backend/python/pagetune_confirm.py)
 * writes for each run; the gain of the tuned arm over the baseline with a
 * bootstrap interval; and the verdict beside the model's prediction.
 *
 * Data and arithmetic, and the reading of one small file: the command line
 * (sim/cli/cmd_confirm.c) runs the workload, the store keeps what is here
 * (store.h, pt_store_put_confirmation), the report prints it.
 *
 * The gain of a metric is (baseline - tuned) / baseline of the two arms'
 * medians over their runs: positive when the tuned configuration is faster
 * or smaller.  Its 95% interval is a percentile bootstrap over runs: each
 * arm's runs resampled with replacement (as many as it has), the gain of
 * the resamples' medians, PT_CONFIRM_RESAMPLES times, from a fixed seed so
 * that the same runs always give the same interval.
 */
#ifndef PT_CONFIRM_H
#define PT_CONFIRM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PT_CONFIRM_RESAMPLES 10000UL /* bootstrap resamples */
#define PT_CONFIRM_LEVEL 0.95        /* the interval's coverage */
#define PT_CONFIRM_MAX_STEPS 1000000 /* step times a measurement file may hold (all processes) */
#define PT_CONFIRM_MAX_BYTES (64u << 20) /* ... and its size */

typedef enum pt_confirm_arm { PT_CONFIRM_BASELINE, PT_CONFIRM_TUNED } pt_confirm_arm;
const char *pt_confirm_arm_name(pt_confirm_arm a); /* "baseline", "tuned" */

/*
 * A measurement file (PAGETUNE_CONFIRM_OUT), as the hook writes it: one JSON
 * object a line, one line for each Python process of the run that had
 * something to say (it used CUDA through torch, or reported steps):
 *   {"pid": 123, "allocator": "pytorch" | "pagetune" | null,
 *    "peak_reserved_bytes": 1126170624 | null, "steps_s": [0.051, ...],
 *    "gpu_name": "NVIDIA H200" | null, "torch_version": "2.11.0", "note": "..."}
 * Other members are ignored (later hooks may add some).  A workload may
 * write the file itself, in the same form.
 */
#define PT_CONFIRM_ALLOC_MAX 16
#define PT_CONFIRM_GPU_NAME_MAX 128
typedef struct pt_confirm_measure {
  int processes;                        /* lines read; 0: no file, or an empty one */
  char allocator[PT_CONFIRM_ALLOC_MAX]; /* "pytorch", "pagetune", "mixed" (processes disagree), "" (none said) */
  int has_peak;                         /* some process reported a peak */
  uint64_t peak_reserved_bytes;         /* the largest process's peak */
  int step_processes;                   /* processes that reported steps */
  double *steps_s;                      /* their step times, in the file's order (malloc'd; NULL when none) */
  size_t nsteps;
  char gpu_name[PT_CONFIRM_GPU_NAME_MAX]; /* the first process's that named one ("" none; cut to fit) */
  char note[256];                       /* the first process's note, why a figure is missing ("" none; cut to fit) */
} pt_confirm_measure;

/*
 * Read path into *out (cleared first).  A missing file is not an error (a
 * workload that is not Python writes none): processes 0.  A line that is not
 * such an object, or a file past the limits above, is PT_EFORMAT / PT_ELIMIT
 * with err "PATH: line L: reason".  Free with pt_confirm_measure_free.
 */
int pt_confirm_read(const char *path, pt_confirm_measure *out /* OUT */, pt_err *err);
void pt_confirm_measure_free(pt_confirm_measure *m);

/* One run of the workload, as confirm keeps it. */
typedef struct pt_confirm_run {
  int seq;                 /* 1 .. 2N, in the order run */
  pt_confirm_arm arm;
  int64_t run_id;          /* the arm's stored run */
  double wall_s;           /* monotonic clock around the child */
  double median_step_s;    /* of m.steps_s; NAN without steps */
  pt_confirm_measure m;
} pt_confirm_run;

/* The steps as a JSON array of %.17g numbers ("[]" for none), malloc'd into *out; 0 or PT_ENOMEM. */
int pt_confirm_steps_json(const double *steps, size_t n, char **out /* OUT */, pt_err *err);

/*
 * The verdict on one metric, from P (the predicted gain) and [lo, hi] (the
 * measured gain's interval); PT_CONFIRM_RULE says it in words:
 *   confirmed      the interval excludes 0 on P's side (lo > 0 and P > 0, or hi < 0 and P < 0);
 *   refuted        the interval excludes 0 on the other side, or excludes 0 when P is 0;
 *                  or it holds 0 but not P (the predicted gain is ruled out);
 *   within noise   the interval holds both 0 and P;
 *   no prediction  P is unknown (a run without a GPU description has no predicted time);
 *   not measured   the metric was not measured in every run (a workload that is not Python reports no peak).
 */
typedef enum pt_confirm_verdict {
  PT_VERDICT_CONFIRMED,
  PT_VERDICT_REFUTED,
  PT_VERDICT_NOISE,
  PT_VERDICT_NO_PREDICTION,
  PT_VERDICT_NOT_MEASURED,
} pt_confirm_verdict;
#define PT_CONFIRM_NVERDICTS 5

#define PT_CONFIRM_RULE                                                                                 \
  "verdict, from P, the predicted gain, and [lo, hi], the measured gain's 95% interval:\n"              \
  "  confirmed      the interval excludes 0 on P's side (lo > 0 with P > 0, hi < 0 with P < 0)\n"       \
  "  refuted        the interval excludes 0 on the other side (or at all, when P = 0),\n"               \
  "                 or it holds 0 but not P: the predicted gain is ruled out\n"                         \
  "  within noise   the interval holds both 0 and P\n"

const char *pt_confirm_verdict_name(pt_confirm_verdict v); /* "confirmed", ..., "not measured" */
/* The verdict named s (as pt_confirm_verdict_name writes it); -1 for none. */
int pt_confirm_verdict_parse(const char *s);
pt_confirm_verdict pt_confirm_judge(double predicted, double lo, double hi);

/* One metric's gain: the model's, the measured one and its interval, the arms' medians. */
typedef struct pt_confirm_gain {
  double predicted;                  /* NAN: no prediction */
  double measured;                   /* gain of the arms' medians; NAN: not measured */
  double lo, hi;                     /* its PT_CONFIRM_LEVEL interval; NAN: not measured */
  double base_median, tuned_median;  /* the arms' medians (seconds, or bytes); NAN: not measured */
  pt_confirm_verdict verdict;
} pt_confirm_gain;

/* The text forms report and confirm print, "-" for NAN: a gain as a signed percentage, an interval, a time
   in seconds (ms below 1 s), bytes in MiB. */
void pt_confirm_fmt_gain(char *buf, size_t n, double gain);
void pt_confirm_fmt_interval(char *buf, size_t n, const pt_confirm_gain *g);
void pt_confirm_fmt_seconds(char *buf, size_t n, double seconds);
void pt_confirm_fmt_mib(char *buf, size_t n, double bytes);

/* The median of v[0..n) (a sorted copy: v is left as it is); NAN for n 0 or a NAN in v; PT_ENOMEM aside, exact. */
double pt_confirm_median(const double *v, size_t n);

/*
 * The measured gain of tuned over base (their medians) and its bootstrap
 * interval (resamples resamples, from seed), into g->measured, lo, hi,
 * base_median, tuned_median; g->predicted is left as it is and g->verdict
 * set from it.  Each arm needs at least one sample and the baseline's
 * samples must be positive: otherwise (or with a NAN sample) the metric is
 * not measured (NANs, PT_VERDICT_NOT_MEASURED), which is not an error.
 * 0, or PT_EUSAGE (resamples 0), PT_ENOMEM.
 */
int pt_confirm_bootstrap(const double *base, size_t nb, const double *tuned, size_t nt, unsigned long resamples,
                         uint64_t seed, pt_confirm_gain *g /* IN/OUT */, pt_err *err);

/*
 * The predicted gain of the measured time: the model's allocator-time saving
 * over the trace, base_us - tuned_us (µs, the stored predicted_alloc_us of
 * the two runs), as a share of the baseline's measured time for the same
 * work (base_s seconds: a run's wall time, or the sum of its step times).
 * It assumes one run of the workload makes the trace's requests once.  NAN
 * when either prediction is unknown (NAN) or base_s is not positive.
 */
double pt_confirm_time_prediction(double base_us, double tuned_us, double base_s);

/* The predicted gain of peak reserved bytes, (base - tuned) / base; NAN for base 0. */
double pt_confirm_peak_prediction(uint64_t base_bytes, uint64_t tuned_bytes);

#endif
