/* file.c — a whole file into memory, bounded (see file.h). */
#include "file.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pt_file_read_all(FILE *f, const char *path, size_t max, char **buf, size_t *len, pt_err *err) {
  *buf = NULL;
  *len = 0;
  size_t cap = 4096, n = 0;
  char *b = malloc(cap);
  if (!b) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > max) {
        free(b);
        return pt_err_set(err, PT_ELIMIT, "%s: larger than %zu bytes", path, max);
      }
      char *nb = realloc(b, cap * 2);
      if (!nb) {
        free(b);
        return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
      }
      b = nb;
      cap *= 2;
    }
    size_t got = fread(b + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f) || n > max) {
    int e = errno;
    free(b);
    return ferror(f) ? pt_err_set(err, PT_EIO, "%s: read failed: %s", path, strerror(e))
                     : pt_err_set(err, PT_ELIMIT, "%s: larger than %zu bytes", path, max);
  }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}

int pt_file_check_output(const char *dst, const char *src, const char *opt, pt_err *err) {
  struct stat d, sb;
  if (lstat(dst, &d) != 0) return 0; /* a new path */
  if (S_ISLNK(d.st_mode))
    return pt_err_set(err, PT_EFORBID, "%s: a symbolic link: %s writes a new file and renames it into place, which would "
                      "replace the link, not write where it points; name the file itself", dst, opt);
  if (!S_ISREG(d.st_mode))
    return pt_err_set(err, PT_EFORBID, "%s: not a regular file: %s writes a regular file, and will not replace this one",
                      dst, opt);
  if (src && stat(src, &sb) == 0 && sb.st_dev == d.st_dev && sb.st_ino == d.st_ino)
    return pt_err_set(err, PT_EFORBID, "%s: is the input %s: %s names another file", dst, src, opt);
  return 0;
}

/*
 * The temporary outputs being written, for pt_file_remove_temps_on_signal: a ring of the last TEMPS names made
 * here.  A slot's first byte is written last, so a handler never reads half a name; a name left there after its
 * file was renamed into place or removed names nothing, and unlinking it fails harmlessly.
 */
#define TEMPS 8
static char temps[TEMPS][4096 + 16];
static unsigned next_temp;

static void remember_temp(const char *tmp) {
  size_t len = strlen(tmp);
  if (!len || len >= sizeof temps[0]) return;
  volatile char *slot = temps[next_temp++ % TEMPS];
  slot[0] = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  memcpy((char *)slot + 1, tmp + 1, len); /* the rest, and its NUL */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  slot[0] = tmp[0];
}

static void remove_temps(int sig) {
  for (int i = 0; i < TEMPS; i++)
    if (temps[i][0]) unlink(temps[i]);
  signal(sig, SIG_DFL); /* and end as the signal would have */
  raise(sig);
}

void pt_file_remove_temps_on_signal(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old, on;
    if (sigaction(sigs[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL) continue; /* someone else's: theirs */
    memset(&on, 0, sizeof on);
    on.sa_handler = remove_temps;
    sigemptyset(&on.sa_mask);
    sigaction(sigs[i], &on, NULL);
  }
}

int pt_file_create_beside(const char *path, char *tmp, size_t n, pt_err *err) {
  if ((size_t)snprintf(tmp, n, "%s.tmp.XXXXXX", path) >= n) {
    pt_err_set(err, PT_ELIMIT, "%s: path too long", path);
    return -1;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) {
    pt_err_set(err, PT_EIO, "%s: cannot create: %s", path, strerror(errno));
    return -1;
  }
  remember_temp(tmp);
  mode_t um = umask(0);
  umask(um);
  (void)fchmod(fd, 0666 & ~um); /* mkstemp made it 0600; the output is an ordinary file */
  return fd;
}

FILE *pt_file_fopen_beside(const char *path, const char *mode, char *tmp, size_t n, pt_err *err) {
  int fd = pt_file_create_beside(path, tmp, n, err);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, mode);
  if (!f) {
    pt_err_set(err, PT_EIO, "%s: cannot create: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
  }
  return f;
}
