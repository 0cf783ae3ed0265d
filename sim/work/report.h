/*
 * report.h — results as people read them (`pagetune report`): per trace,
 * first the recommended settings and why, then a table of runs in text, or
 * one self-contained HTML page with the recommendations, a Pareto plot of
 * predicted allocator time against peak reserved memory, the reserved/
 * allocated timelines, and the table of runs.
 *
 * The printers consume data: a pt_report_run is plain values the caller fills
 * (from the store, or straight from pt_sim_run), so this module knows nothing
 * of SQLite, Lua or CUDA.  Every string in a run is untrusted: the text
 * printer replaces control characters, the HTML printer escapes everything it
 * writes.  The page needs no script, no network and no external font or
 * image: CSS and SVG are inline, drawn here.
 */
#ifndef PT_REPORT_H
#define PT_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "confirm.h"
#include "error.h"
#include "sim.h"

/*
 * One run as the report shows it.  Strings may be NULL (shown empty;
 * params_json as "{}").  params_json is the store's flat object of parameter
 * values, {"name":number,...}; null stands for an unlimited value.
 * capacity 0 means no cap.  predicted_alloc_us is NAN when the run had no
 * GPU description.  timeline may be NULL with ntimeline 0.
 */
typedef struct pt_report_run {
  int64_t id;
  const char *trace, *policy, *mechanism, *params_json;
  uint64_t capacity;
  uint64_t peak_reserved_bytes, peak_allocated_bytes, segments_allocated, ooms, driver_calls_total;
  double fragmentation, predicted_alloc_us;   /* predicted_alloc_us may be NAN when unknown */
  const pt_sim_point *timeline;
  size_t ntimeline;
} pt_report_run;

/*
 * A confirmation (`pagetune confirm`: the user's workload run under two
 * stored runs' configurations) as the report shows it, beside the two
 * runs' predictions.  Strings may be NULL (shown empty).
 */
typedef struct pt_report_confirm {
  int64_t id, baseline_run, tuned_run;
  const char *trace, *baseline_policy, *tuned_policy;
  const char *baseline_allocator, *tuned_allocator; /* "pytorch" or "pagetune" */
  const char *time_metric;                          /* "median_step_s" or "wall_s" */
  const char *hostname, *gpu_name, *measured_at;
  int runs_per_arm;
  pt_confirm_gain time, peak;                       /* predicted and measured gains, intervals, medians, verdicts */
  double baseline_predicted_us, tuned_predicted_us; /* NAN: no GPU description */
  uint64_t baseline_predicted_peak, tuned_predicted_peak;
} pt_report_confirm;

/*
 * What the report leads with for one trace: the recommended run, and the run
 * of the settings the snapshot was captured with (the baseline), as ids of
 * runs in the array printed beside.  The caller chooses them (by the
 * objective, among the runs pt_report_recommendable admits) and fills in the
 * export's text, which this module only shows.  Strings may be NULL.
 */
typedef struct pt_report_rec {
  const char *trace;         /* the trace name its runs carry */
  int64_t run;               /* the recommended run; 0: none (every run ran out of memory, or is direct) */
  int64_t baseline;          /* the captured settings' run at the same capacity and GPU; 0: none stored */
  const char *baseline_desc; /* what the baseline is ("pytorch_native at its defaults") */
  const char *chosen_by;     /* how the run was chosen ("the least predicted allocator time") */
  const char *paste;         /* the export's lines for the environment, one a line ("": nothing to set; NULL: no export) */
  const char *code;          /* the program's lines (Python, before the first CUDA allocation); "": none */
  const char *notes;         /* the export's notes (approximations, warnings, what it sets), one a line */
  const char *command;       /* the command that prints the whole export */
} pt_report_rec;

/* May r headline (be recommended, or named least or fastest)?  Not when it ran out of memory, nor direct. */
int pt_report_recommendable(const pt_report_run *r);

/*
 * Why run is recommended, as one paragraph of plain text into out (n bytes):
 * its peak reserved against its peak allocated, the bytes free inside
 * segments at its peak of reserved memory (from its timeline, when it has
 * one), its segments and driver calls, each against base's (the captured
 * settings; NULL: none).  Returns out.
 */
const char *pt_report_why(const pt_report_run *run, const pt_report_run *base, char *out, size_t n);

#define PT_REPORT_MAX_POINTS 600  /* a timeline is drawn with at most this many points */
#define PT_REPORT_COLUMNS 100     /* the text table fits this many columns */
#define PT_REPORT_HTML_RUNS 100   /* past this many runs of a trace, the page's timelines and table are a selection */

/*
 * The Pareto front of each trace (runs grouped by trace name): on_front[i] = 1
 * when no run of the same trace is at least as good on both predicted_alloc_us
 * and peak_reserved_bytes (lower is better) and better on one; else 0.  Runs
 * with equal values on both are all on the front.  Runs whose time is NAN are
 * judged on memory alone against each other (the least peak reserved of them
 * is on the front), and neither beat nor are beaten by runs with a time.
 * 0, or PT_EUSAGE (NULL runs or on_front with n > 0), or PT_ENOMEM.
 */
int pt_report_pareto(const pt_report_run *runs, size_t n, int *on_front /* OUT, n entries */);

/*
 * First, when recs holds any (nrecs of them, one a trace, matched by trace
 * name), "RECOMMENDED SETTINGS": per trace the recommended run, its lines to
 * paste (as given, never cut), its figures against the baseline's, the why,
 * the export's warnings and the command that prints the whole export; then
 * "RUNS".  Per trace, in order of first appearance: a heading and an aligned table of
 * its runs (id, policy, key parameters, peak reserved MiB, fragmentation %,
 * segments, predicted allocator ms, OOMs), sorted by peak reserved, '*' in
 * the first column of runs on the Pareto front.  Lines stay within
 * PT_REPORT_COLUMNS: parameters that do not fit wrap onto lines of their own
 * under their column; a long name is cut, ending "..." (a long parameter name
 * too, never its value); only the paste lines may be longer.  Control
 * characters print as '?'.
 * 0, or PT_ENOMEM, or PT_EIO (a write to f failed) with err saying so.
 */
int pt_report_text(FILE *f, const pt_report_run *runs, size_t n, const pt_report_rec *recs, size_t nrecs,
                   const pt_report_confirm *confirms, size_t nconfirms, pt_err *err);

/*
 * Which runs the page draws a timeline and a table row for (shown[i] 1): every
 * run of a trace of at most PT_REPORT_HTML_RUNS runs; of a larger trace the
 * PT_REPORT_HTML_RUNS of least peak reserved and up to as many on its Pareto
 * front (the plot has every run).  So a store of 10^5 runs makes a page of a
 * few MB, and the caller reads only these runs' timelines.  0 or PT_ENOMEM.
 */
int pt_report_html_shown(const pt_report_run *runs, size_t n, char *shown /* OUT, n entries */);

/*
 * One HTML page titled title (NULL: "pagetune report"): first a
 * <section class="rec"> per recommendation (the answer: the lines to paste,
 * the figures against the baseline's, the why, the export's warnings in full
 * and its other notes folded), then per trace a section with one
 * <svg class="pareto"> (the recommended and baseline runs ringed and named),
 * an <svg class="overlay"> of the recommended run's timeline with the
 * baseline's reserved bytes over it, an <svg class="timeline" data-run="ID">
 * for every other run shown (pt_report_html_shown; a note says how many are
 * not), folded in a <details> (open when nothing is
 * recommended; runs without a timeline get an empty frame that says so), the
 * table of runs, and the trace's confirmations as a table.  Timelines are
 * drawn on scales shared by the trace's runs, downsampled to
 * PT_REPORT_MAX_POINTS keeping each bucket's maxima.
 * 0, or PT_ENOMEM, or PT_EIO (a write to f failed) with err saying so.
 */
int pt_report_html(FILE *f, const char *title, const pt_report_run *runs, size_t n, const pt_report_rec *recs,
                   size_t nrecs, const pt_report_confirm *confirms, size_t nconfirms, pt_err *err);

/*
 * One JSON object: {"runs": [...], "recommendations": [...], "confirmations":
 * [...]}, snake_case keys, bytes as integers, unknown numbers as null; each run
 * with its Pareto mark; each recommendation with its trace, run and
 * baseline_run (null: none), baseline, chosen_by, paste, why and
 * export_command.
 * 0, or PT_ENOMEM, or PT_EIO.
 */
int pt_report_json(FILE *f, const pt_report_run *runs, size_t n, const pt_report_rec *recs, size_t nrecs,
                   const pt_report_confirm *confirms, size_t nconfirms, pt_err *err);

#endif
