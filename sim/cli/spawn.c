/*
 * spawn.c — a child process, run and timed (see spawn.h).
 *
 * Whether the exec worked comes back through a close-on-exec pipe: the
 * child writes exec's errno into it when exec fails, and a successful exec
 * closes it empty.  So "no such command" is told from a command that ran
 * and exited 127.  Between fork and exec the child calls only
 * async-signal-safe functions.  SIGINT, SIGQUIT, SIGTERM and SIGHUP that
 * reach this process while the child runs are passed on to it: the child
 * ends, its end is reported, and the caller cleans up; from a terminal
 * both get SIGINT, and the child gets it twice, which ends it the same.
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"

extern char **environ;

/*
 * The child a signal to this process is passed on to while it runs.  A
 * signal handler can reach nothing else, so this one value is global; only
 * pt_spawn_run sets it, around its wait.
 */
static volatile sig_atomic_t running_child;

static void pass_on(int sig) {
  if (running_child > 0) kill((pid_t)running_child, sig);
}

static const int passed_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
#define NPASSED (sizeof passed_signals / sizeof passed_signals[0])

int pt_spawn_run(char *const argv[], char *const envp[], pt_err *err, pt_spawn_result *out) {
  memset(out, 0, sizeof *out);
  if (!argv || !argv[0]) return pt_err_set(err, PT_EUSAGE, "no command to run");
  int fds[2];
  if (pipe(fds) < 0) return pt_err_set(err, PT_EIO, "cannot run '%s': pipe: %s", argv[0], strerror(errno));
  if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return pt_err_set(err, PT_EIO, "cannot run '%s': fcntl: %s", argv[0], strerror(e));
  }
  /* while the child runs, these signals are passed on to it (block them until its pid is known) */
  struct sigaction on, old[NPASSED];
  memset(&on, 0, sizeof on);
  on.sa_handler = pass_on;
  sigemptyset(&on.sa_mask);
  sigset_t block, prev;
  sigemptyset(&block);
  for (size_t i = 0; i < NPASSED; i++) sigaddset(&block, passed_signals[i]);
  sigprocmask(SIG_BLOCK, &block, &prev);
  for (size_t i = 0; i < NPASSED; i++) sigaction(passed_signals[i], &on, &old[i]);
  fflush(NULL); /* nothing buffered here is written twice by the child */
  double t0 = pt_clock_s();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    for (size_t i = 0; i < NPASSED; i++) sigaction(passed_signals[i], &old[i], NULL);
    sigprocmask(SIG_SETMASK, &prev, NULL);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0 && dup2(null, 0) >= 0 && dup2(2, 1) >= 0) {
      if (null > 2) close(null);
      environ = (char **)envp;
      execvp(argv[0], argv);
    }
    int e = errno;
    ssize_t w = write(fds[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  int fork_errno = errno;
  if (pid > 0) running_child = pid;
  sigprocmask(SIG_SETMASK, &prev, NULL);
  close(fds[1]);
  int rc = 0;
  if (pid < 0) {
    rc = pt_err_set(err, PT_EIO, "cannot run '%s': fork: %s", argv[0], strerror(fork_errno));
  } else {
    int e = 0, st = 0;
    ssize_t got;
    do got = read(fds[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    pid_t w;
    do w = waitpid(pid, &st, 0);
    while (w < 0 && errno == EINTR);
    out->seconds = pt_clock_s() - t0;
    if (got == (ssize_t)sizeof e) rc = pt_err_set(err, PT_EIO, "cannot run '%s': %s", argv[0], strerror(e));
    else if (w < 0) rc = pt_err_set(err, PT_EIO, "'%s': waitpid: %s", argv[0], strerror(errno));
    else {
      out->exited = WIFEXITED(st);
      out->status = out->exited ? WEXITSTATUS(st) : WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    }
  }
  close(fds[0]);
  running_child = 0;
  for (size_t i = 0; i < NPASSED; i++) sigaction(passed_signals[i], &old[i], NULL);
  return rc;
}
