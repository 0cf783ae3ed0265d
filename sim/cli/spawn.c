/*
 * spawn.c — a child process, run and timed (see spawn.h).
 *
 * Whether the exec worked comes back through a close-on-exec pipe: the
 * child writes exec's errno into it when exec fails, and a successful exec
 * closes it empty.  So "no such command" is told from a command that ran
 * and exited 127.  Between fork and exec the child calls only
 * async-signal-safe functions.
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
  struct sigaction ign, old_int, old_quit;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  fflush(NULL); /* nothing buffered here is written twice by the child */
  double t0 = pt_clock_s();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
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
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  return rc;
}
