/*
 * error.h — status codes shared by every module.
 *
 * Functions return 0 or a negative PT_E* code; pt_strerror() names it.  The
 * text a user sees (file, position, reason) is kept in a pt_err the caller
 * passes down, so only main() prints.
 */
#ifndef PT_ERROR_H
#define PT_ERROR_H

#include <stddef.h>

#define PT_OK       0
#define PT_ENOMEM  (-1)  /* allocation failed */
#define PT_EIO     (-2)  /* read/write/open failed */
#define PT_EFORMAT (-3)  /* malformed input */
#define PT_ELIMIT  (-4)  /* input exceeds a safety limit */
#define PT_EFORBID (-5)  /* input asks for something we refuse to do */
#define PT_EUSAGE  (-6)  /* bad arguments */
#define PT_ENODEV  (-7)  /* no GPU / driver */
#define PT_ENOTFOUND (-8) /* asked-for item absent */

#define PT_ERRMSG_MAX 512

/* Detail of the last failure: "FILE: POSITION: REASON" once formatted. */
typedef struct pt_err {
  char msg[PT_ERRMSG_MAX];
} pt_err;

const char *pt_strerror(int code);

/* Format msg into err (printf-style) and return code; err may be NULL. */
int pt_err_set(pt_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Put "PREFIX: " (printf-style) in front of err's message; returns code. */
int pt_err_prefix(pt_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
