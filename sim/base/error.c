/* error.c — status names and the error-detail buffer (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *pt_strerror(int code) {
  switch (code) {
  case PT_OK: return "ok";
  case PT_ENOMEM: return "out of memory";
  case PT_EIO: return "i/o error";
  case PT_EFORMAT: return "malformed input";
  case PT_ELIMIT: return "input exceeds a limit";
  case PT_EFORBID: return "forbidden input";
  case PT_EUSAGE: return "bad usage";
  case PT_ENODEV: return "no GPU";
  case PT_ENOTFOUND: return "not found";
  default: return "unknown error";
  }
}

int pt_err_set(pt_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

int pt_err_prefix(pt_err *err, int code, const char *fmt, ...) {
  if (!err) return code;
  char pre[PT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(pre, sizeof pre - 2, fmt, ap);
  va_end(ap);
  if (n < 0) return code;
  size_t plen = strlen(pre);
  memcpy(pre + plen, ": ", 3);
  plen += 2;
  size_t mlen = strnlen(err->msg, sizeof err->msg - 1);
  if (plen + mlen >= sizeof err->msg) mlen = sizeof err->msg - 1 - plen;
  memmove(err->msg + plen, err->msg, mlen);
  memcpy(err->msg, pre, plen);
  err->msg[plen + mlen] = 0;
  return code;
}
