/*
 * file.h — a whole file into memory, bounded: the one reader the commands
 * that take a small file whole use (replay JSON for gpu fit, confirm's
 * measurement file); and the one check of an output path that is written
 * beside itself and renamed into place.
 */
#ifndef PT_FILE_H
#define PT_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* Everything left in f (named path in errors), at most max bytes, into a malloc'd NUL-terminated *buf of *len
   bytes: 0; PT_ELIMIT past max ("PATH: larger than MAX bytes"), PT_ENOMEM, or PT_EIO ("PATH: read failed: REASON"),
   with *buf NULL.  f stays open: the caller closes it. */
int pt_file_read_all(FILE *f, const char *path, size_t max, char **buf /* OUT */, size_t *len /* OUT */, pt_err *err);

/* DST, the file option OPT ("-o", "--html") names, may be written beside itself and renamed over: a new path or a
   regular file; not a symbolic link (the rename would replace the link, not write where it points: -o
   /dev/stdout would replace /dev/stdout), a device, FIFO or folder, nor SRC (when not NULL) under any name.
   0, or PT_EFORBID with "DST: REASON". */
int pt_file_check_output(const char *dst, const char *src, const char *opt, pt_err *err);

/* A new file beside path, to write it whole and then rename it into place: PATH.tmp.XXXXXX, made by mkstemp (so
   never an existing file, nor a link a stale PATH.tmp could be, followed), mode 0666 less the umask.  Its name goes
   into tmp (n bytes; PATH's length + 12 is enough).  The open descriptor, or -1 with err set to "PATH: cannot
   create: REASON" (PT_EIO; PT_ELIMIT when the name does not fit). */
int pt_file_create_beside(const char *path, char *tmp, size_t n, pt_err *err);

/* From now on, a SIGINT, SIGTERM or SIGHUP that would end the process (its disposition the default) first removes
   the temporary files pt_file_create_beside made (the last 8) that are still there, then ends it as the signal
   would: an interrupted command leaves no PATH.tmp.XXXXXX.  The command-line program calls it once; a library
   in someone else's process does not. */
void pt_file_remove_temps_on_signal(void);

/* The same as a stdio stream opened for writing ("w" or "wb" in mode); NULL with err set. */
FILE *pt_file_fopen_beside(const char *path, const char *mode, char *tmp, size_t n, pt_err *err);

#endif
