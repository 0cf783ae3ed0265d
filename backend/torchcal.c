/* torchcal.c — PyTorch's allocators timed through torch, in child processes (see torchcal.h). */
#include "torchcal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"

#define MAX_OUT (1u << 20) /* a child's standard output kept, at most: its result is one short line */
#define ERR_TAIL 2048      /* the end of its standard error kept, for messages */
#define MAX_ARGS 24

/* native: PYTORCH_CUDA_ALLOC_CONF unset, PyTorch's defaults. */
const pt_torchcal_backend pt_torchcal_backends[PT_CAL_NTORCH] = {
    {"native", NULL, "native", 0},
    {"expandable", "expandable_segments:True", "native", 1},
    {"cudaMallocAsync", "backend:cudaMallocAsync", "cudaMallocAsync", 0},
};

/* ---- one child ------------------------------------------------------------ */

typedef struct child_io {
  char *out;                 /* standard output, up to MAX_OUT */
  size_t nout, capout;
  int out_overflow;
  char err[ERR_TAIL];        /* the last ERR_TAIL bytes of standard error */
  size_t nerr;
} child_io;

static int keep_out(child_io *io, const char *p, size_t n) {
  if (io->nout + n > MAX_OUT) {
    io->out_overflow = 1;
    return 0;
  }
  if (io->nout + n > io->capout) {
    size_t cap = io->capout ? io->capout : 4096;
    while (cap < io->nout + n) cap *= 2;
    char *b = realloc(io->out, cap);
    if (!b) return PT_ENOMEM;
    io->out = b;
    io->capout = cap;
  }
  memcpy(io->out + io->nout, p, n);
  io->nout += n;
  return 0;
}

static void keep_err(child_io *io, const char *p, size_t n) {
  if (n >= ERR_TAIL) {
    memcpy(io->err, p + n - ERR_TAIL, ERR_TAIL);
    io->nerr = ERR_TAIL;
    return;
  }
  if (io->nerr + n > ERR_TAIL) {
    size_t drop = io->nerr + n - ERR_TAIL;
    memmove(io->err, io->err + drop, io->nerr - drop);
    io->nerr -= drop;
  }
  memcpy(io->err + io->nerr, p, n);
  io->nerr += n;
}

/* The last non-blank line of buf[0..n): *start and *len (0 when none). */
static void last_line(const char *buf, size_t n, size_t *start, size_t *len) {
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) n--;
  size_t s = n;
  while (s && buf[s - 1] != '\n') s--;
  *start = s;
  *len = n - s;
}

/* That line as text for a message: at most 160 bytes, control characters as '?'. */
static const char *quoted(const char *buf, size_t n, char *out, size_t cap) {
  size_t s, len, k = 0;
  last_line(buf, n, &s, &len);
  if (len > 160) len = 160;
  for (size_t i = 0; i < len && k + 1 < cap; i++) out[k++] = (unsigned char)buf[s + i] < 32 ? '?' : buf[s + i];
  out[k] = 0;
  return out;
}

static int cloexec_pipe(int p[2]) {
  if (pipe(p) < 0) return -1;
  fcntl(p[0], F_SETFD, FD_CLOEXEC);
  fcntl(p[1], F_SETFD, FD_CLOEXEC);
  return 0;
}

extern char **environ;

/* What child_env made: the strings past the first `copied` (which are environ's), and the array. */
static void free_env(char **env, size_t copied) {
  for (size_t i = copied; env[i]; i++) free(env[i]);
  free(env);
}

/* The children's environment: this one's, with the allocator's variables, PAGETUNE_DISABLE and
   TORCH_EXTENSIONS_DIR as torchcal.h says; NULL when out of memory.  Made before fork, so that the child
   only assigns it (the driver's threads may hold locks the child cannot take). */
static char **child_env(const pt_torchcal_cfg *c, const char *conf, size_t *copied /* OUT */) {
  static const char *const ours[] = {"PYTORCH_CUDA_ALLOC_CONF=", "PYTORCH_ALLOC_CONF=", "PAGETUNE_DISABLE=",
                                     "TORCH_EXTENSIONS_DIR="};
  size_t n = 0, k = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 4, sizeof *env);
  if (!env) return NULL;
  for (size_t i = 0; i < n; i++) {
    int mine = 0;
    for (size_t j = 0; j < sizeof ours / sizeof ours[0]; j++) mine |= !strncmp(environ[i], ours[j], strlen(ours[j]));
    if (!mine) env[k++] = environ[i];
  }
  *copied = k; /* env[k..] are this function's own */
  const char *vals[3][2] = {{"PYTORCH_CUDA_ALLOC_CONF=", conf}, {"PAGETUNE_DISABLE=", "1"},
                            {"TORCH_EXTENSIONS_DIR=", c->build_dir}};
  for (size_t j = 0; j < 3; j++) {
    if (!vals[j][1]) continue;
    size_t len = strlen(vals[j][0]) + strlen(vals[j][1]) + 1;
    char *v = malloc(len);
    if (!v) {
      env[k] = NULL;
      free_env(env, *copied);
      return NULL;
    }
    snprintf(v, len, "%s%s", vals[j][0], vals[j][1]);
    env[k++] = v;
  }
  env[k] = NULL;
  return env;
}

static void say(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* In the child: its own process group, the pipes as stdout and stderr, the environment, the program. */
static void child(char **env, char *const *argv, int out, int err) {
  setpgid(0, 0);
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, 0);
  dup2(out, 1);
  dup2(err, 2);
  environ = env;
  execvp(argv[0], argv);
  int e = errno;
  say("cannot run ");
  say(argv[0]);
  say(": ");
  say(strerror(e));
  say("\n");
  _exit(127);
}

/* Read both pipes until they close or the time passes (*timed_out); the child's group is killed then. */
static int collect(pid_t pid, int out, int err, double timeout_s, child_io *io, int *timed_out) {
  struct pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
  double deadline = pt_clock_s() + timeout_s;
  int open_fds = 2, rc = 0;
  char chunk[8192];
  *timed_out = 0;
  while (open_fds && rc == 0) {
    double left = deadline - pt_clock_s();
    if (left <= 0) {
      *timed_out = 1;
      break;
    }
    int r = poll(fds, 2, left > 3600 ? 3600000 : (int)(left * 1000) + 1);
    if (r < 0 && errno != EINTR) rc = PT_EIO;
    for (int i = 0; r > 0 && i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
      if (n > 0) {
        if (i == 0) rc = keep_out(io, chunk, (size_t)n);
        else keep_err(io, chunk, (size_t)n);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
  if (*timed_out || rc < 0) {
    kill(-pid, SIGKILL); /* the group it leads: a build's compilers too */
    kill(pid, SIGKILL);
  }
  return rc;
}

/* What a child's exit status says, for a message. */
static void status_words(int status, char *buf, size_t n) {
  if (WIFEXITED(status)) snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
  else snprintf(buf, n, "ended with wait status %d", status);
}

/* The child's result line read: 0 with *doc, or an error naming what went wrong. */
static int result(const child_io *io, int status, pt_jr_doc **doc, pt_err *err) {
  char said[200], how[64], why[PT_ERRMSG_MAX];
  size_t s, len;
  status_words(status, how, sizeof how);
  int failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  last_line(io->out ? io->out : "", io->nout, &s, &len);
  pt_err jerr = {{0}};
  int rc = len && !io->out_overflow ? pt_jr_parse(io->out + s, len, NULL, doc, &jerr) : PT_EFORMAT;
  if (rc == 0 && pt_jr_type(pt_jr_root(*doc)) != PT_JR_OBJECT) {
    pt_jr_free(*doc);
    *doc = NULL;
    rc = pt_err_set(&jerr, PT_EFORMAT, "not a JSON object");
  }
  if (rc == 0) {
    const char *e = pt_jr_string(pt_jr_get(pt_jr_root(*doc), "error"), NULL);
    if (e || failed) {
      rc = pt_err_set(err, PT_EIO, "%.400s", e ? e : how);
      pt_jr_free(*doc);
      *doc = NULL;
    }
    return rc;
  }
  if (io->out_overflow) return pt_err_set(err, PT_EFORMAT, "printed more than %u bytes", MAX_OUT);
  if (failed) {
    if (io->nerr) snprintf(why, sizeof why, "%s: '%s'", how, quoted(io->err, io->nerr, said, sizeof said));
    else snprintf(why, sizeof why, "%s and printed nothing on stderr", how);
    return pt_err_set(err, PT_EIO, "%s", why);
  }
  if (!len) return pt_err_set(err, PT_EFORMAT, "printed no result (no JSON line on standard output)");
  return pt_err_set(err, PT_EFORMAT, "printed no JSON result: its last line '%s' is not a JSON object (%s)",
                    quoted(io->out, io->nout, said, sizeof said), jerr.msg);
}

int pt_torchcal_exec(const pt_torchcal_cfg *c, const char *conf, const char *const *args, pt_jr_doc **doc, pt_err *err) {
  *doc = NULL;
  char *argv[MAX_ARGS + 3];
  size_t k = 0;
  argv[k++] = (char *)c->python;
  argv[k++] = (char *)c->script;
  for (size_t i = 0; args[i] && k < MAX_ARGS + 2; i++) argv[k++] = (char *)args[i];
  argv[k] = NULL;
  char who[1024];
  snprintf(who, sizeof who, "%s %s %s", c->python, c->script, args[0] ? args[0] : "");
  int op[2], ep[2];
  if (cloexec_pipe(op) < 0) return pt_err_set(err, PT_EIO, "%s: cannot make a pipe: %s", who, strerror(errno));
  if (cloexec_pipe(ep) < 0) {
    int e = errno;
    close(op[0]), close(op[1]);
    return pt_err_set(err, PT_EIO, "%s: cannot make a pipe: %s", who, strerror(e));
  }
  size_t copied;
  char **env = child_env(c, conf, &copied);
  if (!env) {
    close(op[0]), close(op[1]), close(ep[0]), close(ep[1]);
    return pt_err_set(err, PT_ENOMEM, "%s: out of memory", who);
  }
  fflush(NULL); /* nothing buffered here is written twice */
  pid_t pid = fork();
  if (pid == 0) child(env, argv, op[1], ep[1]);
  int fork_errno = errno;
  free_env(env, copied);
  close(op[1]);
  close(ep[1]);
  if (pid < 0) {
    close(op[0]), close(ep[0]);
    return pt_err_set(err, PT_EIO, "%s: cannot start: %s", who, strerror(fork_errno));
  }
  setpgid(pid, pid); /* as the child does: whichever runs first */
  child_io io = {0};
  int timed_out, status = 0;
  int rc = collect(pid, op[0], ep[0], c->timeout_s, &io, &timed_out);
  close(op[0]);
  close(ep[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  pt_err why = {{0}};
  if (timed_out) {
    char said[200];
    rc = pt_err_set(&why, PT_EIO, "did not finish in %g s and was stopped (--torch-timeout)%s%s%s", c->timeout_s,
                    io.nerr ? " (its last words: '" : "", io.nerr ? quoted(io.err, io.nerr, said, sizeof said) : "",
                    io.nerr ? "')" : "");
  } else if (rc < 0) {
    rc = pt_err_set(&why, rc, rc == PT_ENOMEM ? "out of memory reading its output" : "reading its output failed");
  } else {
    rc = result(&io, status, doc, &why);
  }
  free(io.out);
  if (rc < 0) pt_err_set(err, rc, "%.300s: %.400s", who, why.msg);
  return rc;
}

/* ---- reading the results ------------------------------------------------------ */

/* A positive, finite number member of obj: *v; else an error naming where. */
static int positive(const pt_jr_val *obj, const char *key, const char *what, double *v, pt_err *err) {
  const pt_jr_val *m = pt_jr_get(obj, key);
  char name[96];
  snprintf(name, sizeof name, "%s.%s", what, key);
  int rc = pt_jr_expect(m, PT_JR_NUMBER, name, err);
  if (rc < 0) return rc;
  *v = pt_jr_number(m);
  if (!(*v > 0) || !isfinite(*v)) return pt_jr_err_at(m, err, PT_EFORMAT, "%s must be a positive number", name);
  return 0;
}

int pt_torchcal_parse_measure(const pt_jr_val *root, const pt_torchcal_backend *b, const pt_cal_plan *plan,
                              pt_cal_series *s, pt_err *err) {
  memset(s, 0, sizeof *s);
  int rc = pt_jr_expect(root, PT_JR_OBJECT, "the result", err);
  if (rc < 0) return rc;
  const pt_jr_val *from = pt_jr_get(root, "from"), *alloc = pt_jr_get(root, "allocator_backend"),
                  *pairs = pt_jr_get(root, "us_per_pair"), *exp = pt_jr_get(root, "expandable_segments");
  if ((rc = pt_jr_expect(from, PT_JR_STRING, "from", err)) < 0 ||
      (rc = pt_jr_expect(alloc, PT_JR_STRING, "allocator_backend", err)) < 0 ||
      (rc = pt_jr_expect(pairs, PT_JR_OBJECT, "us_per_pair", err)) < 0)
    return rc;
  const char *f = pt_jr_string(from, NULL), *a = pt_jr_string(alloc, NULL);
  if (strcmp(f, "cpp_extension") && strcmp(f, "python"))
    return pt_jr_err_at(from, err, PT_EFORMAT, "from must be \"cpp_extension\" or \"python\", not \"%.40s\"", f);
  const char *conf = b->conf ? b->conf : "(unset)";
  if (strcmp(a, b->allocator))
    return pt_jr_err_at(alloc, err, PT_EFORMAT,
                        "torch's allocator is \"%.40s\", not \"%s\": PYTORCH_CUDA_ALLOC_CONF=%s was not honoured", a,
                        b->allocator, conf);
  if (pt_jr_bool(exp) >= 0 && pt_jr_bool(exp) != b->expandable)
    return pt_jr_err_at(exp, err, PT_EFORMAT, "the allocator's segments are %sexpandable under PYTORCH_CUDA_ALLOC_CONF=%s",
                        b->expandable ? "not " : "", conf);
  double batches;
  if ((rc = positive(root, "batches", "the result", &batches, err)) < 0) return rc;
  for (size_t k = 0; k < plan->nsizes && k < PT_CAL_MAX_SIZES; k++) {
    char key[32], what[64];
    snprintf(key, sizeof key, "%llu", (unsigned long long)plan->sizes[k]);
    snprintf(what, sizeof what, "us_per_pair.%s", key);
    const pt_jr_val *p = pt_jr_get(pairs, key);
    pt_cal_point *pt = &s->at[k];
    double n;
    if ((rc = pt_jr_expect(p, PT_JR_OBJECT, what, err)) < 0 || (rc = positive(p, "median", what, &pt->pair_us, err)) < 0 ||
        (rc = positive(p, "min", what, &pt->min_us, err)) < 0 || (rc = positive(p, "max", what, &pt->max_us, err)) < 0 ||
        (rc = positive(p, "pairs", what, &n, err)) < 0)
      return rc;
    if (pt->min_us > pt->pair_us || pt->pair_us > pt->max_us)
      return pt_jr_err_at(p, err, PT_EFORMAT, "%s: min <= median <= max does not hold", what);
    pt->bytes = plan->sizes[k];
    pt->pairs = n > 4e9 ? 4000000000u : (unsigned)n;
    pt->batches = batches > 99 ? 99 : (unsigned)batches;
  }
  snprintf(s->name, sizeof s->name, "%s", b->name);
  snprintf(s->from, sizeof s->from, "%s", f);
  s->n = plan->nsizes;
  return 0;
}

/* ---- the whole run ------------------------------------------------------------ */

int pt_torchcal_build_dir(const char *dir, char *out, size_t n, pt_err *err) {
  const char *tmp = getenv("TMPDIR");
  if (dir) snprintf(out, n, "%s", dir);
  else snprintf(out, n, "%s/pagetune-torch-ext-%ld", tmp && *tmp ? tmp : "/tmp", (long)getuid());
  if (mkdir(out, 0700) < 0 && errno != EEXIST)
    return pt_err_set(err, PT_EIO, "%s: cannot make the directory: %s", out, strerror(errno));
  struct stat st;
  if (lstat(out, &st) < 0) return pt_err_set(err, PT_EIO, "%s: %s", out, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return pt_err_set(err, PT_EIO, "%s: not a directory", out);
  if (!dir && (st.st_uid != getuid() || (st.st_mode & 022)))
    return pt_err_set(err, PT_EFORBID,
                      "%s: not a directory of this user's that only this user may write (--torch-build DIR names "
                      "another)", out);
  return 0;
}

/* Why torch cannot be used: the probe's failure without the command line or the script's own "torch is not
   importable: " in front. */
static void not_importable(pt_cal_torch *t, const pt_torchcal_cfg *c, const char *why) {
  const char *p = strstr(why, " probe: "), *q;
  p = p ? p + strlen(" probe: ") : why;
  if ((q = strstr(p, "torch is not importable: "))) p = q + strlen("torch is not importable: ");
  snprintf(t->skipped, sizeof t->skipped, "torch is not importable with %.200s: %.280s", c->python, p);
}

static int probe(const pt_torchcal_cfg *c, pt_cal_torch *t) {
  static const char *const args[] = {"probe", NULL};
  pt_jr_doc *doc;
  pt_err e = {{0}};
  if (pt_torchcal_exec(c, NULL, args, &doc, &e) < 0) {
    not_importable(t, c, e.msg);
    return -1;
  }
  const pt_jr_val *root = pt_jr_root(doc);
  const char *v = pt_jr_string(pt_jr_get(root, "torch"), NULL), *dev = pt_jr_string(pt_jr_get(root, "device"), NULL);
  int cuda = pt_jr_bool(pt_jr_get(root, "cuda"));
  if (!v || cuda < 0) snprintf(t->skipped, sizeof t->skipped, "%.200s: the probe's result has no torch version", c->python);
  else if (!cuda) snprintf(t->skipped, sizeof t->skipped, "torch %.40s with %.200s sees no GPU", v, c->python);
  else {
    snprintf(t->version, sizeof t->version, "%s", v);
    snprintf(t->device, sizeof t->device, "%s", dev ? dev : "?");
  }
  pt_jr_free(doc);
  return t->skipped[0] ? -1 : 0;
}

int pt_torchcal_run(const pt_torchcal_cfg *cfg, pt_cal_torch *t, pt_err *err) {
  memset(t, 0, sizeof *t);
  snprintf(t->python, sizeof t->python, "%s", cfg->python);
  const pt_cal_plan *plan = cfg->plan;
  if (cfg->noisy) fprintf(stderr, "calibrating PyTorch's allocators through %s: ", cfg->python);
  if (probe(cfg, t) < 0) {
    if (cfg->noisy) fprintf(stderr, "not measured: %s\n", t->skipped);
    return 0;
  }
  int rc = pt_torchcal_build_dir(cfg->build_dir, t->build_dir, sizeof t->build_dir, err);
  if (rc < 0) return rc;
  pt_torchcal_cfg c = *cfg;
  c.build_dir = t->build_dir;
  if (c.noisy)
    fprintf(stderr, "torch %s on %s; the C++ extension (in %s; about a minute the first time): ", t->version, t->device,
            t->build_dir);
  const char *const build_args[] = {"build", "--build-dir", c.build_dir, NULL};
  pt_jr_doc *doc;
  pt_err e = {{0}};
  double t0 = pt_clock_s();
  if (pt_torchcal_exec(&c, NULL, build_args, &doc, &e) < 0) {
    snprintf(t->cpp_error, sizeof t->cpp_error, "%s", e.msg);
    if (c.noisy) fprintf(stderr, "not built (%s), so from Python:", e.msg);
  } else {
    pt_jr_free(doc);
    if (c.noisy) fprintf(stderr, "ready (%.0f s):", pt_clock_s() - t0);
  }
  char sizes[PT_CAL_MAX_SIZES * 21 + 1] = "", batches[16], pairs[16];
  for (size_t k = 0, len = 0; k < plan->nsizes && k < PT_CAL_MAX_SIZES; k++)
    len += (size_t)snprintf(sizes + len, sizeof sizes - len, "%s%llu", k ? "," : "", (unsigned long long)plan->sizes[k]);
  snprintf(batches, sizeof batches, "%u", plan->batches);
  snprintf(pairs, sizeof pairs, "%u", plan->pairs);
  const char *const args[] = {"measure", "--from", t->cpp_error[0] ? "python" : "cpp", "--build-dir", c.build_dir,
                              "--sizes", sizes, "--batches", batches, "--pairs", pairs, NULL};
  for (int i = 0; i < PT_CAL_NTORCH; i++) {
    const pt_torchcal_backend *b = &pt_torchcal_backends[i];
    if (c.noisy) fprintf(stderr, " %s", b->name);
    if ((rc = pt_torchcal_exec(&c, b->conf, args, &doc, &e)) == 0) {
      rc = pt_torchcal_parse_measure(pt_jr_root(doc), b, plan, &t->backends[i], &e);
      if (rc < 0) pt_err_prefix(&e, rc, "%s measure's result", c.python);
      pt_jr_free(doc);
    }
    if (rc < 0) {
      if (c.noisy) fputc('\n', stderr);
      return pt_err_set(err, rc, "calibrate: PyTorch's %s allocator: %.400s (--no-torch leaves PyTorch out)", b->name,
                        e.msg);
    }
    t->n = (size_t)i + 1;
  }
  if (c.noisy) fputc('\n', stderr);
  t->measured = 1;
  return 0;
}
