/* file.c — a whole file into memory, bounded (see file.h). */
#include "file.h"

#include <stdlib.h>

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
    free(b);
    return ferror(f) ? pt_err_set(err, PT_EIO, "%s: read failed", path)
                     : pt_err_set(err, PT_ELIMIT, "%s: larger than %zu bytes", path, max);
  }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}
