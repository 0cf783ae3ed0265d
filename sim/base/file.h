/*
 * file.h — a whole file into memory, bounded: the one reader the commands
 * that take a small file whole use (replay JSON for gpu fit, confirm's
 * measurement file).
 */
#ifndef PT_FILE_H
#define PT_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* Everything left in f (named path in errors), at most max bytes, into a malloc'd NUL-terminated *buf of *len
   bytes: 0; PT_ELIMIT past max ("PATH: larger than MAX bytes"), PT_ENOMEM, or PT_EIO ("PATH: read failed"),
   with *buf NULL.  f stays open: the caller closes it. */
int pt_file_read_all(FILE *f, const char *path, size_t max, char **buf /* OUT */, size_t *len /* OUT */, pt_err *err);

#endif
