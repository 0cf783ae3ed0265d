/* json.c — JSON output helpers shared by every printer (see json.h). */
#include "json.h"

void pt_json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    if (c == '"' || c == '\\') {
      fprintf(f, "\\%c", c);
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
      p++;
    } else if (c < 0x80) {
      fputc((int)c, f);
      p++;
    } else {
      int len = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
      int ok = len > 0;
      for (int i = 1; ok && i < len; i++) ok = (p[i] & 0xc0) == 0x80;
      if (ok && len == 3) {
        unsigned cp = (c & 0x0f) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
        ok = cp >= 0x800 && !(cp >= 0xd800 && cp <= 0xdfff);
      } else if (ok && len == 4) {
        unsigned cp = (c & 0x07) << 18 | (p[1] & 0x3fu) << 12 | (p[2] & 0x3fu) << 6 | (p[3] & 0x3fu);
        ok = cp >= 0x10000 && cp <= 0x10ffff;
      }
      if (ok) {
        fwrite(p, 1, (size_t)len, f);
        p += len;
      } else {
        fputs("\\ufffd", f);
        p++;
      }
    }
  }
  fputc('"', f);
}
