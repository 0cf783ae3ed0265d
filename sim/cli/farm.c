/*
 * farm.c — the writer's handing out and the workers' loop (farm.h), and the
 * worker processes of -j N: forked children, one socket pair each (send with
 * MSG_NOSIGNAL, so a worker gone is an error, never a SIGPIPE).
 */
#include <config.h>

#include "farm.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "file.h"
#include "opts.h"
#include "policy.h"

static const pt_farm_launcher *launcher; /* set once by main (farm.h) */

void pt_farm_set_launcher(const pt_farm_launcher *l) { launcher = l; }
const pt_farm_launcher *pt_farm_get_launcher(void) { return launcher; }

int pt_farm_check_env(const char *prog, pt_err *err) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
  if (launcher) return 0;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && atol(v) > 1)
      return pt_err_set(err, PT_EUSAGE,
                        "started by an MPI launcher as one of %ld processes (%s), but %s does not use MPI: "
                        "each would run the whole command alone; run pagetune-mpi under the launcher%s",
                        atol(v), vars[i], prog,
#ifdef HAVE_MPI
                        ""
#else
                        " (this build has none: configure --with-mpi)"
#endif
    );
  }
  return 0;
}

/* ---- messages ----------------------------------------------------------------------- */

enum { MSG_JOB = 1, MSG_STOP, MSG_HELLO, MSG_RESULT };

typedef struct msg_job {
  uint32_t type, trace, policy, len; /* len: bytes of assignments that follow, NUL included */
  uint64_t tag;
} msg_job;

/* A result: what the store keeps of a pt_sim_result, then ntimeline points. */
typedef struct msg_res {
  uint32_t type;
  int32_t rc;
  uint64_t tag;
  PT_SIM_STATS_FIELDS(PT_SIM_STATS_MEMBER)
  uint64_t driver_calls[PT_DRV_NCALLS], driver_bytes[PT_DRV_NCALLS];
  int32_t addresses_followed, has_gpu, has_tlb, pad;
  double seconds, predicted_alloc_us, predicted_translation_us;
  uint64_t ntimeline;
  char err[PT_ERRMSG_MAX];
} msg_res;

/* What a message carries of a result, copied either way (dst and src: a msg_res and a pt_sim_result). */
#define PT_FARM_COPY(dst, src)                                                  \
  do {                                                                          \
    PT_SIM_STATS_FIELDS(PT_FARM_COPY_FIELD)                                     \
    memcpy((dst)->driver_calls, (src)->driver_calls, sizeof (dst)->driver_calls); \
    memcpy((dst)->driver_bytes, (src)->driver_bytes, sizeof (dst)->driver_bytes); \
    (dst)->addresses_followed = (src)->addresses_followed;                      \
    (dst)->has_gpu = (src)->has_gpu;                                            \
    (dst)->has_tlb = (src)->has_tlb;                                            \
    (dst)->seconds = (src)->seconds;                                            \
    (dst)->predicted_alloc_us = (src)->predicted_alloc_us;                      \
    (dst)->predicted_translation_us = (src)->predicted_translation_us;          \
  } while (0)
#define PT_FARM_COPY_FIELD(t, f, h) (dst_)->f = (src_)->f;

static void res_to_msg(const pt_sim_result *src_, msg_res *dst_) {
  PT_FARM_COPY(dst_, src_);
  dst_->ntimeline = src_->ntimeline;
}

static void msg_to_res(const msg_res *src_, const pt_sim_point *pts, pt_sim_result *dst_) {
  memset(dst_, 0, sizeof *dst_);
  PT_FARM_COPY(dst_, src_);
  dst_->timeline = (pt_sim_point *)pts; /* borrowed from the message: never freed through it */
  dst_->ntimeline = (size_t)src_->ntimeline;
}

int pt_farm_assign(pt_policy *pol, const char *assign, pt_err *err) {
  char line[PT_PARAM_NAME_MAX + 1100];
  for (const char *p = assign; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n >= sizeof line) return pt_err_set(err, PT_ELIMIT, "%.60s...: assignment too long", p);
    memcpy(line, p, n);
    line[n] = 0;
    int rc = pt_policy_set(pol, line, err);
    if (rc < 0) return rc;
    p += n + (nl != NULL);
  }
  return 0;
}

/* ---- the writer ---------------------------------------------------------------------- */

static int send_job(pt_farm *f, int w, const pt_farm_job *j, pt_err *err) {
  size_t len = strlen(j->assign ? j->assign : "") + 1;
  char *buf = malloc(sizeof(msg_job) + len);
  if (!buf) return pt_err_set(err, PT_ENOMEM, "out of memory");
  msg_job h = {MSG_JOB, j->trace, j->policy, (uint32_t)len, j->tag};
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, j->assign ? j->assign : "", len);
  int rc = f->ops->send(f->st, w, buf, sizeof h + len, err);
  free(buf);
  return rc;
}

/* A received message as a result: 0 with *m pointing into buf, or PT_EFORMAT. */
static int as_result(const void *buf, size_t len, int w, const pt_farm *f, const msg_res **m, pt_err *err) {
  *m = buf;
  if (len < sizeof(msg_res) || ((*m)->type != MSG_RESULT && (*m)->type != MSG_HELLO) ||
      (*m)->ntimeline > (len - sizeof(msg_res)) / sizeof(pt_sim_point) ||
      len != sizeof(msg_res) + (*m)->ntimeline * sizeof(pt_sim_point))
    return pt_err_set(err, PT_EFORMAT, "%s %d: a message of %zu bytes that is no result", f->ops->worker_name, w, len);
  return 0;
}

/* Every worker's hello: 0, or the first worker's failure to load. */
static int hellos(pt_farm *f, pt_err *err) {
  int rc = 0;
  for (int got = 0; got < f->nworkers; got++) {
    int w;
    void *buf;
    size_t len;
    int r = f->ops->recv(f->st, &w, &buf, &len, err);
    if (r < 0) return r;
    const msg_res *m;
    if ((r = as_result(buf, len, w, f, &m, err)) == 0 && m->type != MSG_HELLO)
      r = pt_err_set(err, PT_EFORMAT, "%s %d: a result before its hello", f->ops->worker_name, w);
    if (r == 0 && m->rc < 0 && rc == 0) r = pt_err_set(err, m->rc, "%s", m->err);
    free(buf);
    if (r < 0 && rc == 0) rc = r;
  }
  f->ready = rc == 0;
  return rc;
}

int pt_farm_pump(pt_farm *f, pt_farm_next next, pt_farm_done done, void *ctx, pt_err *err) {
  int rc = f->ready ? 0 : hellos(f, err), more = rc == 0;
  pt_err first = *err;
  for (;;) {
    while (more) { /* fill: the worker with the fewest jobs out first */
      int w = -1;
      for (int i = 0; i < f->nworkers; i++)
        if (f->out[i] >= 0 && f->out[i] < f->depth && (w < 0 || f->out[i] < f->out[w])) w = i;
      if (w < 0) break;
      pt_farm_job j;
      int k = next(ctx, &j, err);
      if (k <= 0) {
        more = 0;
        if (k < 0) rc = k, first = *err;
        break;
      }
      if ((k = send_job(f, w, &j, err)) < 0) { /* a worker gone: as when its answer does not come (below) */
        more = 0;
        if (rc == 0) rc = k, first = *err;
        f->nout -= (size_t)f->out[w];
        f->out[w] = -1;
        break;
      }
      f->out[w]++;
      f->nout++;
    }
    if (!f->nout) break;
    int w = -1;
    void *buf = NULL;
    size_t len;
    pt_err e = {{0}};
    int r = f->ops->recv(f->st, &w, &buf, &len, &e);
    if (r < 0) {
      if (w < 0 || w >= f->nworkers) { /* nothing more can come */
        if (rc == 0) rc = r, first = e;
        break;
      }
      f->nout -= (size_t)f->out[w]; /* its jobs are lost: a rerun makes them */
      f->out[w] = -1;
    } else {
      const msg_res *m;
      if ((r = as_result(buf, len, w, f, &m, &e)) == 0) {
        f->out[w]--;
        f->nout--;
        pt_err why = {{0}};
        if (m->rc < 0) { /* the run failed on the worker: done decides whether that stops the farm */
          pt_err_set(&why, m->rc, "%s", m->err);
          r = done(ctx, m->tag, m->rc, NULL, &why, &e);
        } else {
          pt_sim_result res;
          msg_to_res(m, (const pt_sim_point *)(m + 1), &res);
          r = done(ctx, m->tag, 0, &res, &why, &e);
        }
      }
      free(buf);
    }
    if (r < 0) {
      if (rc == 0) rc = r, first = e;
      more = 0;
    }
  }
  if (rc < 0) *err = first;
  return rc;
}

void pt_farm_stop(pt_farm *f) {
  msg_job h = {MSG_STOP, 0, 0, 0, 0};
  pt_err e;
  for (int w = 0; w < f->nworkers; w++)
    if (f->out && f->out[w] >= 0) f->ops->send(f->st, w, &h, sizeof h, &e);
}

/* ---- the worker ---------------------------------------------------------------------- */

static int noop_run(const pt_farm_work *w, const pt_trace_data *t, pt_sim_result *res) {
  memset(res, 0, sizeof *res);
  size_t n = w->env.timeline == PT_WB_TL_NONE ? 0 : w->env.timeline == PT_WB_TL_THIN ? PT_WB_THIN_POINTS : 1000;
  if (n && !(res->timeline = calloc(n, sizeof *res->timeline))) return PT_ENOMEM;
  res->ntimeline = n;
  res->events = t->n;
  res->has_gpu = w->env.gpu != NULL;
  return 0;
}

static int put_result(const pt_farm_ops *ops, void *st, uint32_t type, uint64_t tag, int rc, const pt_err *err,
                      const pt_sim_result *res) {
  size_t n = res ? res->ntimeline : 0, len = sizeof(msg_res) + n * sizeof(pt_sim_point);
  msg_res *m = calloc(1, len);
  pt_err e;
  if (!m) { /* say so in a message without the points */
    msg_res small = {.type = type, .rc = PT_ENOMEM, .tag = tag};
    snprintf(small.err, sizeof small.err, "%s %d: out of memory", ops->worker_name, ops->id(st));
    return ops->put(st, &small, sizeof small, &e);
  }
  if (res && rc == 0) res_to_msg(res, m);
  else m->ntimeline = 0, len = sizeof(msg_res);
  m->type = type;
  m->rc = rc;
  m->tag = tag;
  if (rc < 0) snprintf(m->err, sizeof m->err, "%s", err->msg[0] ? err->msg : pt_strerror(rc));
  if (n && rc == 0) memcpy(m + 1, res->timeline, n * sizeof(pt_sim_point));
  int r = ops->put(st, m, len, &e);
  free(m);
  return r;
}

int pt_farm_serve(const pt_farm_ops *ops, void *st, pt_farm_work *w, int hello_rc, const pt_err *hello_err) {
  int rc = put_result(ops, st, MSG_HELLO, 0, hello_rc, hello_err, NULL);
  while (rc == 0) {
    void *buf;
    size_t len;
    pt_err err = {{0}};
    if ((rc = ops->get(st, &buf, &len, &err)) < 0) break;
    msg_job h;
    if (len < sizeof h) {
      free(buf);
      rc = PT_EFORMAT;
      break;
    }
    memcpy(&h, buf, sizeof h);
    if (h.type == MSG_STOP) {
      free(buf);
      break;
    }
    const char *assign = (const char *)buf + sizeof h;
    pt_sim_result res = {0};
    int r = 0;
    if (hello_rc < 0 || h.type != MSG_JOB || len != sizeof h + h.len || !h.len || assign[h.len - 1] ||
        h.trace >= (uint32_t)w->ntraces || h.policy >= (uint32_t)w->npols)
      r = pt_err_set(&err, PT_EFORMAT, "%s %d: a job it cannot read", ops->worker_name, ops->id(st));
    if (r == 0) r = pt_farm_assign(w->pols[h.policy], assign, &err);
    if (r == 0) r = w->noop ? noop_run(w, &w->traces[h.trace], &res)
                            : pt_wb_sim(&w->env, &w->traces[h.trace], w->pols[h.policy], &err, &res);
    free(buf);
    rc = put_result(ops, st, MSG_RESULT, h.tag, r, &err, &res);
    if (r == 0) pt_sim_result_free(&res);
  }
  return rc;
}

/* ---- -j N: worker processes ------------------------------------------------------------ */

typedef struct procs {
  int n;
  pid_t *pid;
  int *fd;     /* the writer's end of each socket pair; -1 once closed */
  int self_fd; /* a worker's own end */
  int self;
} procs;

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k, len -= (size_t)k;
  }
  return 0;
}

/* 1 read, 0 end of file before anything, -1 error or a cut message. */
static int read_all(int fd, void *buf, size_t len) {
  char *p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t k = read(fd, p + got, len - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k == 0 && got == 0 ? 0 : -1;
    got += (size_t)k;
  }
  return 1;
}

static int frame_send(int fd, const void *buf, size_t len) {
  uint64_t n = len;
  return write_all(fd, &n, sizeof n) < 0 || write_all(fd, buf, len) < 0 ? -1 : 0;
}

static int frame_recv(int fd, void **buf, size_t *len) {
  uint64_t n;
  *buf = NULL;
  int k = read_all(fd, &n, sizeof n);
  if (k <= 0) return k;
  if (n > ((uint64_t)1 << 32) || !(*buf = malloc(n ? n : 1))) return -1;
  if (read_all(fd, *buf, n) != 1) {
    free(*buf);
    *buf = NULL;
    return -1;
  }
  *len = n;
  return 1;
}

static int procs_gone(procs *p, int w, pt_err *err);

static int procs_send(void *st, int w, const void *buf, size_t len, pt_err *err) {
  procs *p = st;
  if (p->fd[w] < 0) return pt_err_set(err, PT_EIO, "worker process %d is gone", w);
  return frame_send(p->fd[w], buf, len) < 0 ? procs_gone(p, w, err) : 0; /* its end closed: it died */
}

/* Why worker w is gone, after its socket closed. */
static int procs_gone(procs *p, int w, pt_err *err) {
  close(p->fd[w]);
  p->fd[w] = -1;
  int status = 0;
  pid_t r;
  while ((r = waitpid(p->pid[w], &status, 0)) < 0 && errno == EINTR) {
  }
  long pid = (long)p->pid[w];
  p->pid[w] = -1;
  if (r > 0 && WIFSIGNALED(status))
    return pt_err_set(err, PT_EIO, "worker process %d (pid %ld) died: signal %d; the runs it held are not stored (run the "
                      "command again to make them)", w, pid, WTERMSIG(status));
  return pt_err_set(err, PT_EIO, "worker process %d (pid %ld) stopped (exit status %d); the runs it held are not stored",
                    w, pid, r > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static int procs_recv(void *st, int *w, void **buf, size_t *len, pt_err *err) {
  procs *p = st;
  struct pollfd fds[1024];
  *w = -1;
  for (;;) {
    int n = 0;
    for (int i = 0; i < p->n; i++) fds[i] = (struct pollfd){p->fd[i], POLLIN, 0}, n += p->fd[i] >= 0;
    if (!n) return pt_err_set(err, PT_EIO, "no worker process is left");
    int k = poll(fds, (nfds_t)p->n, -1);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return pt_err_set(err, PT_EIO, "waiting for the worker processes: %s", strerror(errno));
    for (int i = 0; i < p->n; i++) {
      if (p->fd[i] < 0 || !fds[i].revents) continue;
      *w = i;
      if (frame_recv(p->fd[i], buf, len) == 1) return 0;
      return procs_gone(p, i, err);
    }
  }
}

static int procs_get(void *st, void **buf, size_t *len, pt_err *err) {
  procs *p = st;
  return frame_recv(p->self_fd, buf, len) == 1 ? 0 : pt_err_set(err, PT_EIO, "the writer is gone");
}

static int procs_put(void *st, const void *buf, size_t len, pt_err *err) {
  procs *p = st;
  return frame_send(p->self_fd, buf, len) == 0 ? 0 : pt_err_set(err, PT_EIO, "the writer is gone");
}

static int procs_id(void *st) { return ((procs *)st)->self; }

static const pt_farm_ops procs_ops = {"worker process", procs_send, procs_recv, procs_get, procs_put, procs_id};

int pt_farm_procs(int n, pt_farm_work *w, pt_farm *f, pt_err *err) {
  memset(f, 0, sizeof *f);
  if (n < 1 || n > 1024) return pt_err_set(err, PT_EUSAGE, "-j %d: between 1 and 1024 workers", n);
  procs *p = calloc(1, sizeof *p);
  f->out = calloc((size_t)n, sizeof *f->out);
  if (p) p->pid = calloc((size_t)n, sizeof *p->pid), p->fd = calloc((size_t)n, sizeof *p->fd);
  if (!p || !f->out || !p->pid || !p->fd) {
    if (p) free(p->pid), free(p->fd);
    free(p);
    free(f->out);
    f->out = NULL;
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  *f = (pt_farm){&procs_ops, p, 0, 4, f->out, 0, 0};
  fflush(NULL); /* nothing buffered is written twice */
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
      rc = pt_err_set(err, PT_EIO, "-j: socketpair: %s", strerror(errno));
      break;
    }
    pid_t pid = fork();
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      rc = pt_err_set(err, PT_EIO, "-j: fork: %s", strerror(errno));
      break;
    }
    if (pid == 0) { /* the worker: its own end only; never the store; _exit, so no handler of the writer's runs */
#ifdef __linux__
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* the writer killed: its workers go too */
#endif
      for (int k = 0; k < i; k++) close(p->fd[k]);
      close(sv[0]);
      p->self_fd = sv[1];
      p->self = i;
      _exit(pt_farm_serve(&procs_ops, p, w, 0, NULL) < 0);
    }
    close(sv[1]);
    p->fd[i] = sv[0];
    p->pid[i] = pid;
    p->n = f->nworkers = i + 1;
  }
  if (rc < 0) pt_farm_procs_end(f);
  return rc;
}

void pt_farm_procs_end(pt_farm *f) {
  procs *p = f->st;
  if (!p) return;
  pt_farm_stop(f);
  for (int i = 0; i < p->n; i++) {
    if (p->fd[i] >= 0) close(p->fd[i]);
    while (p->pid[i] > 0 && waitpid(p->pid[i], NULL, 0) < 0 && errno == EINTR) {
    }
  }
  free(p->pid);
  free(p->fd);
  free(p);
  free(f->out);
  memset(f, 0, sizeof *f);
}

/* ---- a launcher's ranks ----------------------------------------------------------------- */

int pt_farm_launched(const pt_farm_launcher *l, pt_farm *f, pt_err *err) {
  memset(f, 0, sizeof *f);
  int n = l->size - 1;
  if (!(f->out = calloc((size_t)(n > 0 ? n : 1), sizeof *f->out))) return pt_err_set(err, PT_ENOMEM, "out of memory");
  f->ops = l->ops;
  f->st = l->st;
  f->nworkers = n;
  f->depth = 4;
  return 0;
}

void pt_farm_free(pt_farm *f) {
  free(f->out);
  memset(f, 0, sizeof *f);
}

int pt_farm_broadcast_traces(const pt_wb_args *a, const pt_farm_launcher *l, pt_err *err) {
  int rc = 0;
  for (int i = 0; i < a->ntraces && rc == 0; i++) {
    FILE *fp = fopen(a->traces[i], "rb");
    char *buf = NULL;
    size_t len = 0;
    if (!fp) rc = pt_err_set(err, PT_EIO, "%s: %s", a->traces[i], strerror(errno));
    else rc = pt_file_read_all(fp, a->traces[i], (size_t)1 << 34, &buf, &len, err);
    if (fp) fclose(fp);
    size_t sent = rc == 0 ? len : SIZE_MAX;
    void *p = buf;
    pt_err e;
    int r = l->bcast(l->st, &p, &sent, &e);
    free(buf);
    if (r < 0 && rc == 0) rc = r, *err = e;
  }
  return rc;
}

/* Receive trace i's bytes from rank 0 into a file of its name in dir, the path into out. */
static int received_trace(const pt_wb_args *a, int i, const pt_farm_launcher *l, const char *dir, char *out, size_t n,
                          pt_err *err) {
  void *buf = NULL;
  size_t len = 0;
  int rc = l->bcast(l->st, &buf, &len, err);
  if (rc < 0) return rc;
  if (len == SIZE_MAX) return pt_err_set(err, PT_EIO, "rank 0 could not read %s", a->traces[i]);
  snprintf(out, n, "%s/%d-%s", dir, i, pt_wb_base_name(a->traces[i]));
  FILE *fp = fopen(out, "wb");
  if (!fp || fwrite(buf, 1, len, fp) != len) rc = pt_err_set(err, PT_EIO, "%s: cannot write: %s", out, strerror(errno));
  if (fp && fclose(fp) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "%s: cannot write: %s", out, strerror(errno));
  free(buf);
  return rc;
}

int pt_farm_worker_main(const pt_wb_args *a, int timeline, const pt_farm_launcher *l, pt_err *err) {
  pt_farm_work w = {.env = {.capacity = a->capacity, .timeline = timeline}};
  pt_gpu gpu;
  pt_err lerr = {{0}};
  int rc = 0, nt = a->ntraces;
  char dir[4096] = "";
  char (*paths)[4096] = calloc((size_t)(nt ? nt : 1), sizeof *paths);
  w.traces = calloc((size_t)(nt ? nt : 1), sizeof *w.traces);
  w.pols = calloc((size_t)(a->npolicies ? a->npolicies : 1), sizeof *w.pols);
  if (!paths || !w.traces || !w.pols) rc = pt_err_set(&lerr, PT_ENOMEM, "out of memory");
  if (a->broadcast_traces) { /* every broadcast is received, whatever failed, so rank 0 never waits */
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pagetune-rank%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", l->rank);
    if (rc == 0 && !mkdtemp(dir)) rc = pt_err_set(&lerr, PT_EIO, "rank %d: %s: %s", l->rank, dir, strerror(errno)), dir[0] = 0;
    for (int i = 0; i < nt; i++) {
      pt_err e;
      int r = rc == 0 ? received_trace(a, i, l, dir, paths[i], sizeof paths[i], &e) : 0;
      if (rc < 0) { /* still take rank 0's bytes */
        void *buf = NULL;
        size_t len;
        r = l->bcast(l->st, &buf, &len, &e);
        free(buf);
        if (r == 0 && len == SIZE_MAX) break;
      } else if (r < 0) {
        rc = r, lerr = e;
        if (!strncmp(e.msg, "rank 0 could not read", 21)) break; /* rank 0 sends no more */
      }
    }
  } else {
    for (int i = 0; rc == 0 && i < nt; i++) snprintf(paths[i], sizeof paths[i], "%s", a->traces[i]);
  }
  if (rc == 0) rc = pt_wb_gpu(a->gpu, &gpu, &w.env.gpu, &lerr);
  for (int i = 0; rc == 0 && i < a->npolicies; i++) {
    char file[4096];
    if ((rc = pt_wb_policy_file(a->policies[i], file, sizeof file, &lerr)) == 0 &&
        (rc = pt_policy_load(file, NULL, &lerr, &w.pols[i])) == 0)
      w.npols++;
  }
  for (int i = 0; rc == 0 && i < nt; i++)
    if ((rc = pt_trace_load(paths[i], NULL, &lerr, &w.traces[i])) == 0) w.ntraces++;
  for (int i = 0; dir[0] && i < nt; i++)
    if (paths[i][0]) remove(paths[i]);
  if (dir[0]) rmdir(dir);
  if (rc < 0) pt_err_prefix(&lerr, rc, "rank %d", l->rank);
  w.noop = pt_farm_work_of(&w.env, NULL, 0, NULL, 0).noop;
  int r = pt_farm_serve(l->ops, l->st, &w, rc, &lerr);
  for (int i = 0; i < w.npols; i++) pt_policy_free(w.pols[i]);
  for (int i = 0; i < w.ntraces; i++) pt_trace_data_free(&w.traces[i]);
  free(w.pols);
  free(w.traces);
  free(paths);
  return r < 0 ? pt_err_set(err, r, "rank %d: the writer (rank 0) cannot be reached", l->rank) : 0;
}

pt_farm_work pt_farm_work_of(const pt_wb_env *env, pt_trace_data *traces, int ntraces, pt_policy **pols, int npols) {
  pt_farm_work w = {*env, traces, ntraces, pols, npols, 0};
  w.env.db = NULL;
  const char *noop = getenv("PAGETUNE_NOOP_ENGINE");
  w.noop = noop && !strcmp(noop, "1");
  return w;
}

int pt_farm_command(const pt_wb_args *a, int timeline, const char *usage, pt_farm_main run, pt_err *err) {
  const pt_farm_launcher *l = pt_farm_get_launcher();
  if (l && l->rank > 0) return pt_farm_worker_main(a, timeline, l, err);
  int rc = pt_farm_check_env("pagetune", err);
  if (rc == 0 && usage) rc = pt_cli_usage(err, "%s", usage);
  if (rc == 0 && l && a->jobs > 1)
    rc = pt_cli_usage(err, "-j applies without MPI: under a launcher the other ranks are the workers");
  if (rc == 0 && !l && a->broadcast_traces)
    rc = pt_cli_usage(err, "--broadcast-traces applies under MPI only (pagetune-mpi with more than one rank)");
  if (!l) return rc < 0 ? rc : run(a, NULL, err);
  pt_err e; /* the workers wait for the traces, then for jobs: both always come */
  int b = a->broadcast_traces ? pt_farm_broadcast_traces(a, l, rc < 0 ? &e : err) : 0;
  if (rc == 0) rc = b;
  if (rc == 0) rc = run(a, l, err);
  pt_farm f;
  if (pt_farm_launched(l, &f, &e) == 0) pt_farm_stop(&f), pt_farm_free(&f);
  return rc;
}
