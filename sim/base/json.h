/*
 * json.h — what the printers share to write JSON: a string value with the
 * escapes JSON requires (control characters as \\u00XX, invalid UTF-8 as
 * U+FFFD), or null for a NULL pointer.  Untrusted names and paths go
 * through it.
 */
#ifndef PT_JSON_H
#define PT_JSON_H

#include <stdio.h>

void pt_json_str(FILE *f, const char *s);

#endif
