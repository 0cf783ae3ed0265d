/*
 * farm.h — runs spread over workers with one writer: `sweep -j N` and
 * `tune -j N` (worker processes on one machine), and the same commands under
 * MPI (pagetune-mpi: the ranks past 0 are the workers).
 *
 * The writer (the command's own process; MPI rank 0) is the only one that
 * opens the store: it decides which runs are needed (a run already stored is
 * skipped, so a killed job resumes), hands them out and stores each result as
 * it comes back.  Workers hold the traces and policies, loaded once, and
 * simulate.  A job names a trace and a policy by their index in the command
 * line and carries the parameters as assignment lines ("NAME=VALUE", as
 * `sim --set` takes them; pt_farm_assign applies them on both sides, so the
 * writer's key and the worker's run are of the same values).  A result carries
 * what pt_store_put_run stores and an objective reads.
 *
 * A transport moves whole messages (pt_farm_ops): pipes to forked worker
 * processes (farm.c) or MPI point-to-point messages (farm_mpi.c, built into
 * pagetune-mpi only, so that pagetune itself never links libmpi).  Messages
 * are native structs: every worker runs the same build on the same kind of
 * machine.
 */
#ifndef PT_CLI_FARM_H
#define PT_CLI_FARM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "workbench.h"

/* Whole messages between the writer and its workers (ids 0 .. nworkers-1). */
typedef struct pt_farm_ops {
  const char *worker_name; /* in messages: "worker process", "rank" */
  int (*send)(void *st, int worker, const void *buf, size_t len, pt_err *err);
  /* the next message from any worker, in *buf (malloc'd); a worker gone is PT_EIO naming it */
  int (*recv)(void *st, int *worker /* OUT */, void **buf /* OUT */, size_t *len /* OUT */, pt_err *err);
  /* a worker's side: the next message from the writer, and one to it */
  int (*get)(void *st, void **buf /* OUT */, size_t *len /* OUT */, pt_err *err);
  int (*put)(void *st, const void *buf, size_t len, pt_err *err);
  int (*id)(void *st);     /* a worker's own id, for its messages (MPI: its rank) */
} pt_farm_ops;

/*
 * Under a launcher (pagetune-mpi under mpirun/srun with more than one rank),
 * main registers it before dispatching: rank 0 is the writer, the others
 * workers.  bcast sends rank 0's bytes to every rank (--broadcast-traces).
 * Set once, by main, before any command runs: the one process-wide setting.
 */
typedef struct pt_farm_launcher {
  const pt_farm_ops *ops;
  void *st;
  int rank, size;
  const char *library;     /* the MPI library's version line, for messages */
  /* rank 0 gives buf and len (len SIZE_MAX: rank 0 failed, nothing follows); the others get a malloc'd buf */
  int (*bcast)(void *st, void **buf, size_t *len, pt_err *err);
} pt_farm_launcher;
void pt_farm_set_launcher(const pt_farm_launcher *l);
/* The registered launcher, or NULL. */
const pt_farm_launcher *pt_farm_get_launcher(void);
/*
 * PT_EUSAGE when this process was started by an MPI launcher as one of
 * several (its environment says so) but no launcher is registered (the plain
 * pagetune): every process would sweep alone into the same store.
 */
int pt_farm_check_env(const char *prog, pt_err *err);

/* A writer's workers and the jobs it has out. */
typedef struct pt_farm {
  const pt_farm_ops *ops;
  void *st;
  int nworkers;
  int depth;               /* jobs out per worker at most (so none waits for the writer) */
  int *out;                /* jobs out, per worker */
  size_t nout;
  int ready;               /* every worker's hello received */
} pt_farm;

/* A job: the trace and policy by index, the assignments ("NAME=VALUE" lines), and the writer's tag. */
typedef struct pt_farm_job {
  uint32_t trace, policy;
  uint64_t tag;
  const char *assign;
} pt_farm_job;

/* The next job into *job (1), or none left (0); the assignment text must live until the next call. */
typedef int (*pt_farm_next)(void *ctx, pt_farm_job *job /* OUT */, pt_err *err);
/* A job's result (rc 0: res, freed by the farm after the call), or its failure on the worker (rc < 0, res NULL,
   why its message); a negative return stops the handing out. */
typedef int (*pt_farm_done)(void *ctx, uint64_t tag, int rc, const pt_sim_result *res, const pt_err *why, pt_err *err);

/* Apply assignment lines to pol (the writer, for a run's key; the worker, for its run). */
int pt_farm_assign(pt_policy *pol, const char *assign, pt_err *err);

/*
 * Hand out next()'s jobs, up to depth per worker, and give every result to
 * done(), until next() has none left and none is out.  The first failure (one
 * done returns, a worker gone) stops the handing out;
 * the jobs still out are waited for and their results given to done, so
 * nothing finished is lost; then it is returned.
 */
int pt_farm_pump(pt_farm *f, pt_farm_next next, pt_farm_done done, void *ctx, pt_err *err);
/* Tell every worker to stop (after the last pump, or instead of one). */
void pt_farm_stop(pt_farm *f);

/* What a worker holds: the traces and policies of the command line, loaded once. */
typedef struct pt_farm_work {
  pt_wb_env env;           /* gpu, capacity, timeline; no store */
  pt_trace_data *traces;
  int ntraces;
  pt_policy **pols;
  int npols;
  int noop;                /* PAGETUNE_NOOP_ENGINE=1: answer without simulating (the writer's ceiling) */
} pt_farm_work;

/*
 * A worker: say hello (hello_rc: 0, or the load's failure, sent with hello_err), then
 * serve jobs until told to stop.  The writer reports a failure; the worker returns 0
 * after a stop, negative when the writer can no longer be reached.
 */
int pt_farm_serve(const pt_farm_ops *ops, void *st, pt_farm_work *w, int hello_rc, const pt_err *hello_err);

/*
 * -j N: fork n worker processes serving w (the command's loaded traces and
 * policies; the children never touch the store and leave by _exit), into *f.
 * pt_farm_procs_end stops them, waits for them and frees *f.
 */
int pt_farm_procs(int n, pt_farm_work *w, pt_farm *f /* OUT */, pt_err *err);
void pt_farm_procs_end(pt_farm *f);

/* What workers hold for env's runs (the store left out), the no-op engine as PAGETUNE_NOOP_ENGINE says. */
pt_farm_work pt_farm_work_of(const pt_wb_env *env, pt_trace_data *traces, int ntraces, pt_policy **pols, int npols);

/*
 * A workbench command that hands runs out (sweep, tune), as every process
 * runs it: a launcher's worker rank serves (pt_farm_worker_main, with the
 * command's timeline); the writer checks the usage (the command's own
 * message, NULL when its arguments are right; -j under a launcher,
 * --broadcast-traces without one; a launched plain pagetune), broadcasts the
 * traces when asked, runs run(a, launcher or NULL), and under a launcher stops
 * the workers whatever happened, so no rank waits.
 */
typedef int (*pt_farm_main)(const pt_wb_args *a, const pt_farm_launcher *l, pt_err *err);
int pt_farm_command(const pt_wb_args *a, int timeline, const char *usage, pt_farm_main run, pt_err *err);

/* A launcher's writer side (rank 0) over its size-1 workers, into *f; free with pt_farm_free. */
int pt_farm_launched(const pt_farm_launcher *l, pt_farm *f /* OUT */, pt_err *err);
void pt_farm_free(pt_farm *f);

/*
 * A worker rank of a launcher: load the traces and policies a (sweep's or
 * tune's arguments) names, without a store (from the paths, or rank 0's bytes
 * with --broadcast-traces), then serve.
 */
int pt_farm_worker_main(const pt_wb_args *a, int timeline, const pt_farm_launcher *l, pt_err *err);
/* Rank 0's part of --broadcast-traces: each trace file's bytes to every rank, in order. */
int pt_farm_broadcast_traces(const pt_wb_args *a, const pt_farm_launcher *l, pt_err *err);

#endif
