/*
 * spawn.h — run a command as a child process, directly (fork and exec, no
 * shell), with the environment given, timed on the monotonic clock: how
 * `pagetune confirm` runs the user's workload.
 */
#ifndef PT_CLI_SPAWN_H
#define PT_CLI_SPAWN_H

#include "error.h"

typedef struct pt_spawn_result {
  int exited;     /* 1: it exited (status is its exit status); 0: a signal ended it (status is the signal) */
  int status;
  double seconds; /* monotonic clock from just before the fork to the child's end */
} pt_spawn_result;

/*
 * Run argv (argv[0] looked up on envp's PATH, as execvp does) with
 * environment envp, standard input from /dev/null and standard output onto
 * this process's standard error, so that what the command prints never
 * mixes with the caller's own output; wait for its end.  While it runs,
 * SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to this process are passed on to
 * the child (whose end is then reported as a signal's); the child starts
 * with the dispositions the caller had.  0 with *out filled when it ran,
 * whatever its status;
 * PT_EIO when it could not be started: "cannot run 'X': reason" (exec's errno).
 */
int pt_spawn_run(char *const argv[], char *const envp[], pt_err *err, pt_spawn_result *out /* OUT */);

#endif
