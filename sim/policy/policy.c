/*
 * policy.c — the Lua policy host (see policy.h): a sandboxed lua_State per
 * policy, the checks on the table a script returns, --set, and the C hook
 * table that calls back into Lua with memoised results.
 *
 * The only file in pagetune that includes lua.h.  Two rules keep it from
 * crashing on hostile scripts:
 *   - Every Lua API call that can allocate or raise runs inside lua_pcall
 *     (the setup and the table checks are C functions called that way);
 *     outside it we only push values that need no memory and read results.
 *   - No Lua code runs outside the budgets: no finalizers (setmetatable
 *     refuses __gc), no C loops a script can make unbounded (see policy.h).
 */
#include "policy.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "clock.h"
#include "u64map.h"

enum { H_ROUND, H_SEGMENT, H_PAGE, H_COLLECT, H_N };
static const char *const hook_names[H_N] = {"round", "segment_size", "page_size", "should_collect"};

#define HANDLER_SLACK ((size_t)1 << 20) /* bytes the message handler may use past the budget */
#define MAX_CHOICES 1024
#define MAX_NAME 200                    /* bytes in a policy's name */
#define LOAD_MASK (LUA_MASKCOUNT | LUA_MASKLINE | LUA_MASKRET)
#define CALL_MASK LUA_MASKCOUNT
#define SLICE 1000 /* instructions between looks at the clock */

/*
 * The byte budget, enforced by our allocator: a growth that would pass max
 * is refused (Lua then raises a memory error).  The message handler runs
 * with a little slack so that formatting a traceback near the limit does
 * not itself fail.
 */
typedef struct budget {
  size_t used, max;
  int refused; /* an allocation was refused for the budget, not by malloc */
  int slack;   /* the message handler is running */
} budget;

typedef struct param {
  pt_policy_param pub;
  char name[PT_PARAM_NAME_MAX];
  char *doc;
  double *choices;
  pt_plist *choice_lists;
  int line;                  /* where the script declares it; 0 unknown */
  const pt_mech_param *mech; /* the mechanism's bounds for it, or NULL */
} param;

/*
 * One loaded policy.  Lines: `line` is the script line running most
 * recently (kept by the line and return hooks while the chunk runs; the
 * hook's first line during hook calls) and says where a memory error
 * struck, since Lua calls no message handler for those; `ret_line` is the
 * line of the chunk's return statement, where the table's checks point
 * when no better line is known.
 */
struct pt_policy {
  lua_State *L;
  budget mem;
  int max_instr;
  double max_seconds;
  /* this call's budgets: instructions left before the current slice, the slice, the clock's deadline */
  int64_t instr_left;
  int slice, mask;
  double deadline;
  const char *tripped; /* which budget ran out in this call, or NULL */
  /* the whole run's budgets (hook calls since pt_policy_get_hooks): what is left, what was spent */
  uint64_t max_run_instr, run_instr;
  double max_run_seconds, run_seconds;
  uint64_t run_calls;
  int run_capped;       /* this call's instruction budget is what the run has left */
  const char *cur_hook; /* the hook being called, for the run budget's message */
  int line, ret_line;
  int c_oom;     /* a C allocation failed while reading the table */
  char *path, *chunkname, *src;
  size_t srclen;
  char short_src[LUA_IDSIZE]; /* how Lua abbreviates chunkname in messages */
  char *name, *doc, *mech_name;
  const pt_mech_ops *mech;
  int np;
  param par[PT_MAX_PARAMS];
  int hook_ref[H_N], hook_line[H_N];
  int view_ref;  /* the read-only `p` passed to hooks */
  pt_u64map memo[H_COLLECT]; /* round, segment_size, page_size: bytes -> result */
  struct {                   /* a direct-mapped front of each memo: no hashing on a hit */
    uint64_t key, val;       /* key 0: empty (a request of 0 bytes simply misses) */
  } front[H_COLLECT][64];
  char errmsg[PT_ERRMSG_MAX]; /* one-line message of the last Lua error */
  char *traceback;
};

/* ---- small helpers ---------------------------------------------------------- */

/* Make s one line: control characters become spaces. */
static void one_line(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = ' ';
}

static int fail(pt_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(pt_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    one_line(err->msg);
  }
  return code;
}

/* Shortest decimal that reads back as v; "inf", "-inf", "nan" as such. */
static const char *fmt_num(double v, char *buf, size_t n) {
  if (isnan(v))
    snprintf(buf, n, "nan");
  else if (isinf(v))
    snprintf(buf, n, v > 0 ? "inf" : "-inf");
  else if (v == floor(v) && fabs(v) < 1e17)
    snprintf(buf, n, "%.0f", v);
  else
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(buf, n, "%.*g", prec, v);
      if (strtod(buf, NULL) == v) break;
    }
  return buf;
}

static char *dup_str(const char *s, size_t len) {
  char *d = malloc(len + 1);
  if (d) {
    memcpy(d, s, len);
    d[len] = 0;
  }
  return d;
}

static pt_policy *owner(lua_State *L) {
  pt_policy *P;
  memcpy(&P, lua_getextraspace(L), sizeof P);
  return P;
}

/* "a, b, c" of the declared parameter names, or "none". */
static const char *declared(const pt_policy *P, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < P->np && at < n; i++) {
    int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", P->par[i].name);
    if (w < 0) break;
    at += (size_t)w;
  }
  return P->np ? buf : "none";
}

/* ---- the allocator and the instruction budget ------------------------------- */

static void *budget_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  budget *b = ud;
  size_t old = ptr ? osize : 0; /* without ptr, osize is a type tag */
  if (nsize == 0) {
    free(ptr);
    b->used -= old;
    return NULL;
  }
  if (nsize > old) {
    size_t limit = b->max + (b->slack ? HANDLER_SLACK : 0);
    if (b->used > limit || nsize - old > limit - b->used) {
      b->refused = 1;
      return NULL;
    }
  }
  void *q = realloc(ptr, nsize);
  if (!q) {
    if (nsize <= old) { /* Lua assumes a shrink cannot fail: keep the old block */
      b->used -= old - nsize;
      return ptr;
    }
    return NULL;
  }
  b->used = b->used - old + nsize;
  return q;
}

/*
 * The count hook fires every SLICE instructions.  Besides counting, it looks
 * at the clock: some single instructions and library calls do work in C that
 * no instruction count sees (comparing two 30 MB strings, shifting a table of
 * millions in table.insert), so a script could stay within its instructions
 * and still run for hours.  The clock bounds that, give or take two slices
 * (it starts at the end of the first, so that short calls never read it).
 */
static void budget_hook(lua_State *L, lua_Debug *ar) {
  pt_policy *P = owner(L);
  char buf[160];
  switch (ar->event) {
  case LUA_HOOKCOUNT:
    if (!P->tripped) {
      P->instr_left -= P->slice;
      double t = pt_clock_s();
      if (P->deadline == 0) P->deadline = t + P->max_seconds; /* calls under a slice never read the clock */
      if (P->instr_left <= 0)
        P->tripped = P->run_capped ? "run" : "instruction";
      else if (t > P->deadline)
        P->tripped = "time";
      else {
        if (P->instr_left < P->slice) {
          P->slice = (int)P->instr_left;
          lua_sethook(L, budget_hook, P->mask, P->slice);
        }
        break;
      }
      /* From now on every instruction fails, so a pcall in the script cannot
         catch the error and carry on. */
      lua_sethook(L, budget_hook, CALL_MASK, 1);
    }
    if (!strcmp(P->tripped, "time"))
      snprintf(buf, sizeof buf, "time budget exceeded (%g seconds)", P->max_seconds);
    else if (!strcmp(P->tripped, "run"))
      snprintf(buf, sizeof buf, "%s: whole-run instruction budget exceeded (%" PRIu64 " instructions in %" PRIu64
               " hook calls of this run)", P->cur_hook ? P->cur_hook : "hook", P->max_run_instr, P->run_calls);
    else
      snprintf(buf, sizeof buf, "instruction budget exceeded (%d instructions)", P->max_instr);
    lua_pushstring(L, buf);
    lua_error(L);
    break;
  case LUA_HOOKLINE: /* every Lua function in the state is the script's (no load) */
    P->line = ar->currentline;
    break;
  case LUA_HOOKRET: {
    lua_Debug caller;
    if (lua_getstack(L, 1, &caller)) {
      if (lua_getinfo(L, "l", &caller) && caller.currentline > 0) P->line = caller.currentline;
    } else if (lua_getinfo(L, "Sl", ar) && !strcmp(ar->what, "main")) {
      P->ret_line = ar->currentline;
    }
    break;
  }
  default:
    break;
  }
}

/* ---- errors: one line naming the script and the line ---------------------- */

/* "SCRIPT:LINE: reason" from a Lua message, whatever position it carries. */
static void locate(const pt_policy *P, const char *msg, int line, char *out, size_t n) {
  size_t sl = strlen(P->short_src), pl = strlen(P->path);
  if (!strncmp(msg, P->path, pl) && msg[pl] == ':')
    snprintf(out, n, "%s", msg);
  else if (sl && !strncmp(msg, P->short_src, sl) && msg[sl] == ':')
    snprintf(out, n, "%s%s", P->path, msg + sl);
  else if (line > 0)
    snprintf(out, n, "%s:%d: %s", P->path, line, msg);
  else
    snprintf(out, n, "%s: %s", P->path, msg);
  one_line(out);
}

/* Message handler: position the message, keep it in P->errmsg, append a traceback. */
static int msgh(lua_State *L) {
  pt_policy *P = owner(L);
  P->mem.slack = 1;
  const char *m;
  int t = lua_type(L, 1);
  if (t == LUA_TSTRING || t == LUA_TNUMBER)
    m = lua_tostring(L, 1);
  else
    m = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  int line = 0;
  lua_Debug ar;
  for (int lv = 1; !line && lua_getstack(L, lv, &ar); lv++)
    if (lua_getinfo(L, "l", &ar) && ar.currentline > 0) line = ar.currentline;
  locate(P, m, line ? line : P->line, P->errmsg, sizeof P->errmsg);
  luaL_traceback(L, L, P->errmsg, 1);
  return 1;
}

/* Turn a failed pcall (error object on top) into err; pops it. */
static int lua_failure(pt_policy *P, int status, const char *what, pt_err *err) {
  lua_State *L = P->L;
  int code = PT_EFORMAT;
  char lim[32];
  switch (status) {
  case LUA_ERRMEM:
    if (P->mem.refused) {
      snprintf(lim, sizeof lim, "%zu", P->mem.max);
      if (P->line > 0)
        code = fail(err, PT_ELIMIT, "%s:%d: memory budget exceeded%s%s (limit %s bytes)", P->path,
                    P->line, what ? " in " : "", what ? what : "", lim);
      else
        code = fail(err, PT_ELIMIT, "%s: memory budget exceeded%s%s (limit %s bytes)", P->path,
                    what ? " in " : "", what ? what : "", lim);
    } else {
      code = fail(err, PT_ENOMEM, "%s: out of memory", P->path);
    }
    break;
  case LUA_ERRRUN:
    if (P->tripped) code = PT_ELIMIT;
    fail(err, code, "%s", P->errmsg[0] ? P->errmsg : "(no message)");
    if (lua_type(L, -1) == LUA_TSTRING) {
      free(P->traceback);
      P->traceback = dup_str(lua_tostring(L, -1), lua_rawlen(L, -1));
    }
    break;
  default: /* LUA_ERRERR and anything unforeseen */
    if (P->line > 0)
      code = fail(err, PT_EFORMAT, "%s:%d: error while reporting an error", P->path, P->line);
    else
      code = fail(err, PT_EFORMAT, "%s: error while reporting an error", P->path);
    break;
  }
  lua_pop(L, 1);
  return code;
}

/* Call the function below nargs arguments, with the handler below it; budgets fresh (a hook's capped by the run's). */
static int pcall_budgeted(pt_policy *P, int nargs, int nres, int mask, int first_line) {
  lua_State *L = P->L;
  int base = lua_gettop(L) - nargs; /* the function */
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  P->tripped = NULL;
  P->mem.refused = 0;
  P->line = first_line;
  P->errmsg[0] = 0;
  int64_t allowed = P->max_instr;
  uint64_t run_left = P->max_run_instr - P->run_instr; /* hooks only: run_instr stays 0 at load */
  P->run_capped = P->cur_hook && run_left < (uint64_t)allowed;
  if (P->run_capped) allowed = (int64_t)run_left; /* > 0: the hooks check before calling */
  P->instr_left = allowed;
  P->slice = allowed < SLICE ? (int)allowed : SLICE;
  P->mask = mask;
  P->deadline = 0; /* set at the first slice */
  lua_sethook(L, budget_hook, mask, P->slice);
  int st = lua_pcall(L, nargs, nres, base);
  lua_sethook(L, NULL, 0, 0);
  if (P->cur_hook) { /* what the run spent: whole slices (a call under one slice counts none), and time past the first */
    P->run_calls++;
    P->run_instr += (uint64_t)(allowed - (P->instr_left > 0 ? P->instr_left : 0));
    if (P->deadline != 0) P->run_seconds += pt_clock_s() - (P->deadline - P->max_seconds);
    P->cur_hook = NULL;
  }
  P->mem.slack = 0;
  lua_remove(L, base);
  return st;
}

/* ---- the sandbox ------------------------------------------------------------ */

static int safe_setmetatable(lua_State *L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL)
      return luaL_error(L, "setmetatable: __gc metamethods are not allowed in a policy");
    lua_pop(L, 1);
  }
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

static int safe_rep(lua_State *L) {
  size_t l, lsep = 0;
  luaL_checklstring(L, 1, &l);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_optlstring(L, 3, "", &lsep);
  if (n <= 0 || l + lsep == 0) { /* Lua 5.4 would loop n times copying nothing */
    lua_pushliteral(L, "");
    return 1;
  }
  int nargs = lua_gettop(L) < 3 ? 2 : 3;
  lua_settop(L, nargs);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, nargs, 1);
  return 1;
}

/* The `p` hooks see: a userdata whose fields are the current parameter values. */
static param *find_param(pt_policy *P, const char *name) {
  for (int i = 0; i < P->np; i++)
    if (!strcmp(P->par[i].name, name)) return &P->par[i];
  return NULL;
}

static void push_value(lua_State *L, const param *pr) {
  double v = pr->pub.value;
  if (pr->pub.list.n) {
    char buf[256];
    lua_pushstring(L, pt_param_list_format(&pr->pub.list, buf, sizeof buf));
  } else if (pr->pub.integer && fabs(v) < 9007199254740992.0)
    lua_pushinteger(L, (lua_Integer)v);
  else
    lua_pushnumber(L, v);
}

static int view_index(lua_State *L) {
  pt_policy *P = owner(L);
  if (lua_type(L, 2) != LUA_TSTRING)
    return luaL_error(L, "p[%s]: parameters are named by strings", luaL_typename(L, 2));
  const char *k = lua_tostring(L, 2);
  param *pr = find_param(P, k);
  if (!pr) {
    char buf[PT_MAX_PARAMS * (PT_PARAM_NAME_MAX + 2)];
    return luaL_error(L, "p.%s: the policy declares no such parameter (declared: %s)", k,
                      declared(P, buf, sizeof buf));
  }
  push_value(L, pr);
  return 1;
}

static int view_newindex(lua_State *L) {
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";
  return luaL_error(L, "p is read-only (assigning p.%s); parameters change only through --set", k);
}

static int view_next(lua_State *L) {
  pt_policy *P = owner(L);
  int i = 0;
  if (!lua_isnil(L, 2)) {
    param *pr = lua_type(L, 2) == LUA_TSTRING ? find_param(P, lua_tostring(L, 2)) : NULL;
    if (!pr) return luaL_error(L, "p: invalid key to 'next'");
    i = (int)(pr - P->par) + 1;
  }
  if (i >= P->np) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, P->par[i].name);
  push_value(L, &P->par[i]);
  return 2;
}

static int view_pairs(lua_State *L) {
  lua_pushcfunction(L, view_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

static int view_tostring(lua_State *L) {
  lua_pushliteral(L, "policy parameters");
  return 1;
}

/* Protected: open the four libraries, trim them, make `p`, learn short_src. */
static int setup(lua_State *L) {
  pt_policy *P = owner(L);
  static const struct {
    const char *name;
    lua_CFunction open;
  } libs[] = {{LUA_GNAME, luaopen_base},
              {LUA_TABLIBNAME, luaopen_table},
              {LUA_STRLIBNAME, luaopen_string},
              {LUA_MATHLIBNAME, luaopen_math}};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    luaL_requiref(L, libs[i].name, libs[i].open, 1);
    lua_pop(L, 1);
  }
  lua_pushglobaltable(L);
  /* xpcall: an error raised by the budget hook runs the message handler
     while Lua has hooks switched off, so a handler could loop unbudgeted. */
  static const char *const drop_base[] = {"dofile", "loadfile", "load", "require", "print",
                                          "warn", "collectgarbage", "xpcall"};
  for (size_t i = 0; i < sizeof drop_base / sizeof drop_base[0]; i++) {
    lua_pushnil(L);
    lua_setfield(L, -2, drop_base[i]);
  }
  lua_getfield(L, -1, "setmetatable");
  lua_pushcclosure(L, safe_setmetatable, 1);
  lua_setfield(L, -2, "setmetatable");

  lua_getfield(L, -1, LUA_STRLIBNAME);
  static const char *const drop_string[] = {"dump", "find", "match", "gmatch", "gsub"};
  for (size_t i = 0; i < sizeof drop_string / sizeof drop_string[0]; i++) {
    lua_pushnil(L);
    lua_setfield(L, -2, drop_string[i]);
  }
  lua_getfield(L, -1, "rep");
  lua_pushcclosure(L, safe_rep, 1);
  lua_setfield(L, -2, "rep");
  lua_pop(L, 1);

  lua_getfield(L, -1, LUA_TABLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "move");
  lua_pop(L, 1);

  lua_getfield(L, -1, LUA_MATHLIBNAME); /* same numbers every run */
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, 0);
  lua_call(L, 1, 0);
  lua_pop(L, 2);

  lua_newuserdatauv(L, 0, 0);
  luaL_newmetatable(L, "pagetune.params");
  static const luaL_Reg view_mt[] = {{"__index", view_index},
                                     {"__newindex", view_newindex},
                                     {"__pairs", view_pairs},
                                     {"__tostring", view_tostring},
                                     {NULL, NULL}};
  luaL_setfuncs(L, view_mt, 0);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable"); /* getmetatable(p) sees false, not the table */
  lua_setmetatable(L, -2);
  P->view_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  /* Messages abbreviate long chunk names; learn how, from an empty chunk. */
  if (luaL_loadbufferx(L, "", 0, P->chunkname, "t") != LUA_OK) return lua_error(L);
  lua_Debug ar;
  lua_getinfo(L, ">S", &ar);
  snprintf(P->short_src, sizeof P->short_src, "%s", ar.short_src);
  return 0;
}

/* ---- where a field is written: a lexical scan of the source ------------------ */

static int is_ident0(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_ident(int c) { return is_ident0(c) || (c >= '0' && c <= '9'); }

/* At s[i] == '[': the level of a long bracket "[==[" (>= 0), or -1. */
static int long_open(const char *s, size_t n, size_t i) {
  size_t j = i + 1;
  while (j < n && s[j] == '=') j++;
  return j < n && s[j] == '[' ? (int)(j - i - 1) : -1;
}

/* Index past the long bracket of level lvl opening at s[i]; counts lines. */
static size_t long_skip(const char *s, size_t n, size_t i, int lvl, int *line) {
  for (i += (size_t)lvl + 2; i < n; i++) {
    if (s[i] == '\n') (*line)++;
    if (s[i] != ']') continue;
    size_t j = i + 1;
    while (j < n && s[j] == '=') j++;
    if ((int)(j - i - 1) == lvl && j < n && s[j] == ']') return j + 1;
  }
  return n;
}

/*
 * Walk the identifiers of Lua source outside comments and strings, calling
 * visit(ctx, word, len, line, prev, col0, next) for each: prev is the last
 * significant character before it ('\n' at a line's start, 'a' after a word,
 * '"' after a string), col0 whether it starts its line, next the first
 * non-blank character after it (0 for "==" or the end).  A nonzero return
 * stops the walk.
 */
typedef int (*ident_visit)(void *ctx, const char *w, size_t len, int line, int prev, int col0, int next);

static void walk_idents(const char *s, size_t n, ident_visit visit, void *ctx) {
  int line = 1, prev = '\n';
  size_t i = 0, bol = 0;
  while (i < n) {
    int c = (unsigned char)s[i];
    if (c == '\n') {
      line++;
      prev = '\n';
      bol = ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      i++;
    } else if (c == '-' && i + 1 < n && s[i + 1] == '-') {
      i += 2;
      int lvl = i < n && s[i] == '[' ? long_open(s, n, i) : -1;
      if (lvl >= 0)
        i = long_skip(s, n, i, lvl, &line);
      else
        while (i < n && s[i] != '\n') i++;
    } else if (c == '[' && long_open(s, n, i) >= 0) {
      i = long_skip(s, n, i, long_open(s, n, i), &line);
      prev = '"';
    } else if (c == '"' || c == '\'') {
      for (i++; i < n && s[i] != c; i++) { /* the source loaded, so the string ends */
        if (s[i] == '\\' && i + 1 < n) i++;
        if (s[i] == '\n') line++;
      }
      if (i < n) i++;
      prev = '"';
    } else if (is_ident0(c)) {
      size_t b = i;
      while (i < n && is_ident(s[i])) i++;
      size_t j = i;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n')) j++;
      int next = j < n && !(s[j] == '=' && j + 1 < n && s[j + 1] == '=') ? (unsigned char)s[j] : 0;
      if (visit(ctx, s + b, i - b, line, prev, b == bol, next)) return;
      prev = 'a';
    } else if (c >= '0' && c <= '9') {
      while (i < n && (is_ident(s[i]) || s[i] == '.')) i++;
      prev = '0';
    } else {
      prev = c;
      i++;
    }
  }
}

typedef struct line_query {
  const char *word;
  int from, upto, found;
} line_query;

/* A field written "KEY =" (not "=="), after '{', ',', ';', '.' or at a line's start. */
static int visit_key(void *ctx, const char *w, size_t len, int line, int prev, int col0, int next) {
  line_query *q = ctx;
  (void)col0;
  if (line >= q->from && len == strlen(q->word) && !memcmp(w, q->word, len) && next == '=' &&
      (prev == '{' || prev == ',' || prev == ';' || prev == '.' || prev == '\n')) {
    q->found = line;
    return 1;
  }
  return 0;
}

/* The last "return" at the start of a line (a top-level one, by layout) up to q->upto. */
static int visit_return(void *ctx, const char *w, size_t len, int line, int prev, int col0, int next) {
  line_query *q = ctx;
  (void)prev, (void)next;
  if (line > q->upto) return 1;
  if (col0 && len == 6 && !memcmp(w, "return", 6)) q->found = line;
  return 0;
}

/* Line of the first field "KEY = ..." at or after line from; 0 when none. */
static int key_line(const char *s, size_t n, const char *key, int from) {
  line_query q = {key, from, 0, 0};
  walk_idents(s, n, visit_key, &q);
  return q.found;
}

/* ---- reading the returned table (protected; index 1 is the value) --------------- */

/* Raise "SCRIPT:LINE: reason" (LINE: the return statement's when 0); does not return. */
static void bad(lua_State *L, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void bad(lua_State *L, int line, const char *fmt, ...) {
  pt_policy *P = owner(L);
  char reason[PT_ERRMSG_MAX], msg[2 * PT_ERRMSG_MAX]; /* room for the path too */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (line <= 0) line = P->ret_line;
  if (line > 0)
    snprintf(msg, sizeof msg, "%s:%d: %s", P->path, line, reason);
  else
    snprintf(msg, sizeof msg, "%s: %s", P->path, reason);
  lua_pushstring(L, msg);
  lua_error(L);
  __builtin_unreachable();
}

static int field_line(const pt_policy *P, const char *key, int from) {
  return key_line(P->src, P->srclen, key, from > 0 ? from : 1);
}

/* Push t[key] (raw); return it when a string (not a number), NULL when nil. */
static const char *opt_string(lua_State *L, int t, const char *key, int line, size_t *len) {
  lua_pushstring(L, key);
  int ty = lua_rawget(L, t);
  if (ty == LUA_TSTRING) return lua_tolstring(L, -1, len);
  if (ty != LUA_TNIL) bad(L, line, "'%s' must be a string, not a %s", key, lua_typename(L, ty));
  return NULL;
}

static int same_list(const pt_plist *a, const pt_plist *b) {
  return a->n == b->n && !memcmp(a->v, b->v, sizeof a->v[0] * (size_t)a->n);
}

/* A choice as text: its number, or its list in PyTorch's form. */
static const char *fmt_choice(const pt_policy_param *q, int k, char *buf, size_t n) {
  if (q->choice_lists && q->choice_lists[k].n) return pt_param_list_format(&q->choice_lists[k], buf, n);
  return fmt_num(q->choices[k], buf, n);
}

/* The problem with a list value for pr, or NULL when it is acceptable. */
static const char *list_problem(const pt_policy *P, const param *pr, const pt_plist *l, char *why, size_t n) {
  char a[256], b[256], w[160];
  const pt_policy_param *q = &pr->pub;
  pt_param_list_format(l, a, sizeof a);
  if (!pr->mech || !pr->mech->list) {
    snprintf(why, n, "%s is a list; the %s mechanism takes a number for it", a, P->mech->name);
  } else if (pt_mech_param_violation_list(pr->mech, NAN, l, w, sizeof w)) {
    snprintf(why, n, "%s is not what the %s mechanism accepts: %s", a, P->mech->name, w);
  } else if (q->has_range) {
    for (int k = 0; k < l->n; k++)
      if (l->v[k] < q->min || l->v[k] > q->max) {
        snprintf(why, n, "%s holds %s, outside the range [%s, %s]", a, fmt_num(l->v[k], b, sizeof b),
                 fmt_num(q->min, w, 40), fmt_num(q->max, w + 40, 40));
        return why;
      }
    return NULL;
  } else if (q->nchoices) {
    for (int k = 0; k < q->nchoices; k++)
      if (q->choice_lists && same_list(&q->choice_lists[k], l)) return NULL;
    size_t at = (size_t)snprintf(why, n, "%s is not one of the choices {", a);
    for (int k = 0; k < q->nchoices && at < n; k++)
      at += (size_t)snprintf(why + at, n - at, "%s%s", k ? ", " : "", fmt_choice(q, k, b, sizeof b));
    if (at < n) snprintf(why + at, n - at, "}");
  } else {
    return NULL;
  }
  return why;
}

/* The problem with v for pr, or NULL when v is acceptable. */
static const char *value_problem(const pt_policy *P, const param *pr, double v, char *why, size_t n) {
  char a[40], b[256], c[40], w[128];
  const pt_policy_param *q = &pr->pub;
  fmt_num(v, a, sizeof a);
  if (isnan(v)) {
    snprintf(why, n, "nan is not a value");
  } else if (q->integer && (!isfinite(v) || v != floor(v))) {
    snprintf(why, n, "%s is not an integer", a);
  } else if (q->has_range && (v < q->min || v > q->max)) {
    snprintf(why, n, "%s lies outside the range [%s, %s]", a, fmt_num(q->min, b, sizeof b),
             fmt_num(q->max, c, sizeof c));
  } else if (q->nchoices) {
    int k = 0;
    while (k < q->nchoices && (q->choices[k] != v || (q->choice_lists && q->choice_lists[k].n))) k++;
    if (k < q->nchoices) return NULL;
    size_t at = (size_t)snprintf(why, n, "%s is not one of the choices {", a);
    for (k = 0; k < q->nchoices && at < n; k++)
      at += (size_t)snprintf(why + at, n - at, "%s%s", k ? ", " : "", fmt_choice(q, k, b, sizeof b));
    if (at < n) snprintf(why + at, n - at, "}");
  } else if (pr->mech && pt_mech_param_violation(pr->mech, v, w, sizeof w)) {
    snprintf(why, n, "%s is not what the %s mechanism accepts: %s", a, P->mech->name, w);
  } else {
    return NULL;
  }
  return why;
}

static int valid_name(const char *s, size_t len) {
  if (!len || len >= PT_PARAM_NAME_MAX || !is_ident0((unsigned char)s[0])) return 0;
  for (size_t i = 1; i < len; i++)
    if (!is_ident((unsigned char)s[i])) return 0;
  return 1;
}

/* A script's string value: a list's text (a number's text is refused: write the number). */
static int list_value(const char *text, double *num, pt_plist *list, char *why, size_t n) {
  if (text[0] != '[') {
    snprintf(why, n, "'%.64s': a string here is a list [BOUNDARY_MIB:DIVISIONS,...,>:DIVISIONS]; write a number as a number", text);
    return -1;
  }
  return pt_param_value_parse(text, num, list, why, n) < 0 ? -1 : 0;
}

/* Read one params entry: the value table is on top. */
static void read_param(lua_State *L, pt_policy *P, param *pr, int pline) {
  static const char *const known[] = {"default", "range", "choices", "scale", "integer", "doc", NULL};
  int t = lua_gettop(L);
  const char *nm = pr->name;
  char a[40], b[40], c[40], d[40], w[128], why[PT_ERRMSG_MAX];
  if (lua_type(L, t) != LUA_TTABLE)
    bad(L, pline, "params.%s must be a table {default = ..., range = {lo, hi} | choices = {...}}, not a %s",
        nm, luaL_typename(L, t));
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int k = 0; known[k]; k++) ok |= !strcmp(lua_tostring(L, -2), known[k]);
    if (!ok) {
      if (lua_type(L, -2) == LUA_TSTRING)
        bad(L, field_line(P, lua_tostring(L, -2), pline),
            "params.%s: unknown field '%s' (known: default, range, choices, scale, integer, doc)", nm,
            lua_tostring(L, -2));
      bad(L, pline, "params.%s: a key that is a %s (known fields: default, range, choices, scale, integer, doc)",
          nm, luaL_typename(L, -2));
    }
    lua_pop(L, 1);
  }
  pt_policy_param *q = &pr->pub;

  lua_pushliteral(L, "default");
  int ty = lua_rawget(L, t);
  int dline = field_line(P, "default", pline);
  if (ty == LUA_TNIL) bad(L, pline, "params.%s: 'default' is missing (every parameter needs a number)", nm);
  if (ty == LUA_TSTRING && lua_tostring(L, -1)[0] != '[') {
    bad(L, dline, "params.%s: 'default' must be a number, not a string (a string is a list's text, "
        "[BOUNDARY_MIB:DIVISIONS,...,>:DIVISIONS])", nm);
  } else if (ty == LUA_TSTRING) {
    if (list_value(lua_tostring(L, -1), &q->dflt, &q->dflt_list, why, sizeof why) < 0)
      bad(L, dline, "params.%s: default: %s", nm, why);
    q->value = q->dflt;
    q->list = q->dflt_list;
  } else if (ty != LUA_TNUMBER) {
    bad(L, dline, "params.%s: 'default' must be a number (or a list's text), not a %s", nm, lua_typename(L, ty));
  } else {
    q->dflt = q->value = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);

  lua_pushliteral(L, "integer");
  ty = lua_rawget(L, t);
  if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
    bad(L, field_line(P, "integer", pline), "params.%s: 'integer' must be true or false, not a %s", nm,
        lua_typename(L, ty));
  q->integer = lua_toboolean(L, -1);
  lua_pop(L, 1);

  size_t len;
  const char *s = opt_string(L, t, "scale", field_line(P, "scale", pline), &len);
  if (s && strcmp(s, "linear") && strcmp(s, "log"))
    bad(L, field_line(P, "scale", pline), "params.%s: scale must be \"linear\" or \"log\"", nm);
  q->log_scale = s && !strcmp(s, "log");
  lua_pop(L, 1);
  s = opt_string(L, t, "doc", field_line(P, "doc", pline), &len);
  if (s && !(pr->doc = dup_str(s, len))) P->c_oom = 1, bad(L, pline, "out of memory");
  lua_pop(L, 1);

  lua_pushliteral(L, "range");
  int rty = lua_rawget(L, t);
  lua_pushliteral(L, "choices");
  int cty = lua_rawget(L, t);
  int rline = field_line(P, "range", pline), cline = field_line(P, "choices", pline);
  if (rty != LUA_TNIL && cty != LUA_TNIL)
    bad(L, pline, "params.%s: give a range or choices, not both", nm);
  if (rty != LUA_TNIL) {
    if (rty != LUA_TTABLE || lua_rawlen(L, -2) != 2 || lua_rawgeti(L, -2, 1) != LUA_TNUMBER ||
        lua_rawgeti(L, -3, 2) != LUA_TNUMBER)
      bad(L, rline, "params.%s: range must be {lo, hi}, two numbers", nm);
    q->min = lua_tonumber(L, -2);
    q->max = lua_tonumber(L, -1);
    lua_pop(L, 2);
    if (!isfinite(q->min) || !isfinite(q->max) || q->min > q->max)
      bad(L, rline, "params.%s: range [%s, %s] must be finite with lo <= hi (leave it out for no bound)", nm,
          fmt_num(q->min, a, sizeof a), fmt_num(q->max, b, sizeof b));
    if (q->log_scale && q->min <= 0)
      bad(L, rline, "params.%s: a log scale needs a range above 0, not [%s, %s]", nm,
          fmt_num(q->min, a, sizeof a), fmt_num(q->max, b, sizeof b));
    if (pr->mech && (q->min < pr->mech->min || q->max > pr->mech->max))
      bad(L, rline, "params.%s: range [%s, %s] reaches outside what the %s mechanism accepts, [%s, %s]", nm,
          fmt_num(q->min, a, sizeof a), fmt_num(q->max, b, sizeof b), P->mech->name,
          fmt_num(pr->mech->min, c, sizeof c), fmt_num(pr->mech->max, d, sizeof d));
    q->has_range = 1;
  } else if (cty != LUA_TNIL) {
    size_t nc = cty == LUA_TTABLE ? lua_rawlen(L, -1) : 0;
    if (nc == 0 || nc > MAX_CHOICES)
      bad(L, cline, "params.%s: choices must be a list of 1 to %d numbers", nm, MAX_CHOICES);
    if (!(pr->choices = malloc(nc * sizeof *pr->choices))) P->c_oom = 1, bad(L, cline, "out of memory");
    for (size_t k = 0; k < nc; k++) {
      int cty2 = lua_rawgeti(L, -1, (lua_Integer)k + 1);
      if (cty2 == LUA_TSTRING) { /* a list's text */
        if (!pr->choice_lists && !(pr->choice_lists = calloc(nc, sizeof *pr->choice_lists)))
          P->c_oom = 1, bad(L, cline, "out of memory");
        if (list_value(lua_tostring(L, -1), &pr->choices[k], &pr->choice_lists[k], why, sizeof why) < 0)
          bad(L, cline, "params.%s: choice %zu: %s", nm, k + 1, why);
        lua_pop(L, 1);
        if (pr->choice_lists[k].n) {
          if (list_problem(P, pr, &pr->choice_lists[k], why, sizeof why)) /* the mechanism's rules (no choices yet) */
            bad(L, cline, "params.%s: choice %zu: %s", nm, k + 1, why);
          continue;
        }
      } else {
        if (cty2 != LUA_TNUMBER || isnan(lua_tonumber(L, -1)))
          bad(L, cline, "params.%s: choice %zu is not a number (or a list's text)", nm, k + 1);
        pr->choices[k] = lua_tonumber(L, -1);
        lua_pop(L, 1);
      }
      double v = pr->choices[k];
      if (q->integer && (!isfinite(v) || v != floor(v)))
        bad(L, cline, "params.%s: choice %s is not an integer", nm, fmt_num(v, a, sizeof a));
      if (q->log_scale && v <= 0)
        bad(L, cline, "params.%s: a log scale needs choices above 0, not %s", nm, fmt_num(v, a, sizeof a));
      if (pr->mech && pt_mech_param_violation(pr->mech, v, w, sizeof w))
        bad(L, cline, "params.%s: choice %s is not what the %s mechanism accepts: %s", nm, fmt_num(v, a, sizeof a),
            P->mech->name, w);
    }
    q->nchoices = (int)nc;
    q->choices = pr->choices;
    q->choice_lists = pr->choice_lists;
  } else if (q->log_scale) {
    bad(L, pline, "params.%s: a log scale needs a range or choices", nm);
  }
  lua_pop(L, 2);
  if (q->dflt_list.n ? list_problem(P, pr, &q->dflt_list, why, sizeof why) : value_problem(P, pr, q->dflt, why, sizeof why))
    bad(L, dline, "params.%s: default %s", nm, why);
}

static int by_line(const void *a, const void *b) {
  const param *x = a, *y = b;
  if (x->line != y->line) return x->line < y->line ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int read_policy(lua_State *L) {
  pt_policy *P = owner(L);
  static const char *const known[] = {"name", "doc", "mechanism", "params", "round", "segment_size",
                                      "page_size", "should_collect", NULL};
  if (lua_type(L, 1) != LUA_TTABLE)
    bad(L, P->ret_line,
        "the script returned %s%s; a policy returns a table {name = ..., mechanism = ..., params = {...}}",
        lua_isnone(L, 1) || lua_isnil(L, 1) ? "" : "a ",
        lua_isnone(L, 1) || lua_isnil(L, 1) ? "nothing" : luaL_typename(L, 1));
  lua_settop(L, 1);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int k = 0; known[k]; k++) ok |= !strcmp(lua_tostring(L, -2), known[k]);
    if (!ok) {
      if (lua_type(L, -2) == LUA_TSTRING)
        bad(L, field_line(P, lua_tostring(L, -2), 1),
            "unknown field '%s' in the policy (known: name, doc, mechanism, params, round, segment_size, "
            "page_size, should_collect)",
            lua_tostring(L, -2));
      bad(L, 0, "the policy table has a key that is a %s; its fields are named by strings",
          luaL_typename(L, -2));
    }
    lua_pop(L, 1);
  }

  size_t len;
  const char *s = opt_string(L, 1, "name", field_line(P, "name", 1), &len);
  if (!s || !len || len > MAX_NAME)
    bad(L, field_line(P, "name", 1), "the policy needs a name: a string of 1 to %d bytes", MAX_NAME);
  if (!(P->name = dup_str(s, len))) P->c_oom = 1, bad(L, 0, "out of memory");
  one_line(P->name);
  lua_pop(L, 1);
  s = opt_string(L, 1, "doc", field_line(P, "doc", 1), &len);
  if (!(P->doc = s ? dup_str(s, len) : dup_str("", 0))) P->c_oom = 1, bad(L, 0, "out of memory");
  lua_pop(L, 1);

  int mline = field_line(P, "mechanism", 1);
  s = opt_string(L, 1, "mechanism", mline, &len);
  if (!s) bad(L, 0, "the policy sets no mechanism (one of %s)", pt_mech_names());
  if (!(P->mech = pt_mech_find(s)) || strlen(s) != len)
    bad(L, mline, "unknown mechanism '%.64s' (known: %s)", s, pt_mech_names());
  if (!(P->mech_name = dup_str(s, len))) P->c_oom = 1, bad(L, 0, "out of memory");
  lua_pop(L, 1);

  int params_line = field_line(P, "params", 1);
  lua_pushliteral(L, "params");
  int ty = lua_rawget(L, 1);
  if (ty != LUA_TNIL && ty != LUA_TTABLE)
    bad(L, params_line, "'params' must be a table of name = {default = ...}, not a %s", lua_typename(L, ty));
  if (ty == LUA_TTABLE) {
    int t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t)) {
      const char *nm = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : NULL;
      if (!nm || !valid_name(nm, len))
        bad(L, params_line, "params: a parameter name must be an identifier of 1 to %d characters, not %s%.64s%s",
            PT_PARAM_NAME_MAX - 1, nm ? "'" : "a ", nm ? nm : luaL_typename(L, -2), nm ? "'" : "");
      if (P->np == PT_MAX_PARAMS) bad(L, params_line, "params: more than %d parameters", PT_MAX_PARAMS);
      param *pr = &P->par[P->np++];
      memcpy(pr->name, nm, len + 1);
      pr->pub.name = pr->name;
      pr->pub.doc = "";
      for (const pt_mech_param *mp = P->mech->params; mp && mp->name; mp++)
        if (!strcmp(mp->name, nm)) pr->mech = mp;
      int pline = field_line(P, nm, params_line);
      pr->line = pline;
      read_param(L, P, pr, pline > 0 ? pline : params_line);
      if (pr->doc) pr->pub.doc = pr->doc;
      lua_pop(L, 1);
    }
    qsort(P->par, (size_t)P->np, sizeof P->par[0], by_line);
    for (int i = 0; i < P->np; i++) { /* qsort moved them: re-point at their own storage */
      P->par[i].pub.name = P->par[i].name;
      P->par[i].pub.doc = P->par[i].doc ? P->par[i].doc : "";
    }
  }
  lua_settop(L, 1);

  for (int h = 0; h < H_N; h++) {
    lua_pushstring(L, hook_names[h]);
    ty = lua_rawget(L, 1);
    if (ty == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    int kline = field_line(P, hook_names[h], 1);
    if (ty != LUA_TFUNCTION)
      bad(L, kline, "'%s' must be a function, not a %s", hook_names[h], lua_typename(L, ty));
    lua_Debug ar;
    lua_pushvalue(L, -1);
    lua_getinfo(L, ">S", &ar);
    P->hook_line[h] = ar.linedefined > 0 ? ar.linedefined : kline;
    P->hook_ref[h] = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  return 0;
}

/* ---- loading ------------------------------------------------------------------ */

int pt_policy_load_buffer(const char *src, size_t len, const char *name, const pt_policy_limits *lim,
                          pt_err *err, pt_policy **out) {
  *out = NULL;
  if (!name) name = "(policy)";
  pt_policy *P = calloc(1, sizeof *P);
  if (!P) return fail(err, PT_ENOMEM, "%s: out of memory", name);
  for (int h = 0; h < H_N; h++) P->hook_ref[h] = LUA_NOREF;
  P->view_ref = LUA_NOREF;
  P->mem.max = lim && lim->max_bytes ? lim->max_bytes : PT_POLICY_DEFAULT_BYTES;
  uint64_t mi = lim && lim->max_instructions ? lim->max_instructions : PT_POLICY_DEFAULT_INSTRUCTIONS;
  P->max_instr = mi > INT_MAX ? INT_MAX : (int)mi;
  P->max_seconds = lim && lim->max_seconds > 0 ? lim->max_seconds : PT_POLICY_DEFAULT_SECONDS;
  P->max_run_instr = lim && lim->max_run_instructions ? lim->max_run_instructions : PT_POLICY_DEFAULT_RUN_INSTRUCTIONS;
  P->max_run_seconds = lim && lim->max_run_seconds > 0 ? lim->max_run_seconds : PT_POLICY_DEFAULT_RUN_SECONDS;
  size_t nlen = strlen(name);
  P->path = dup_str(name, nlen);
  P->chunkname = malloc(nlen + 2);
  P->src = dup_str(src ? src : "", src ? len : 0);
  P->srclen = src ? len : 0;
  int rc;
  if (!P->path || !P->chunkname || !P->src) {
    rc = fail(err, PT_ENOMEM, "%s: out of memory", name);
    goto out;
  }
  P->chunkname[0] = '@';
  memcpy(P->chunkname + 1, name, nlen + 1);
  if (P->srclen > P->mem.max) {
    rc = fail(err, PT_ELIMIT, "%s: the script is %zu bytes, over the %zu-byte limit", name, P->srclen,
              P->mem.max);
    goto out;
  }

  lua_State *L = P->L = lua_newstate(budget_alloc, &P->mem);
  if (!L) {
    rc = fail(err, PT_ELIMIT, "%s: no Lua state fits in the memory budget (limit %zu bytes)", name, P->mem.max);
    goto out;
  }
  memcpy(lua_getextraspace(L), &P, sizeof P);

  lua_pushcfunction(L, setup);
  int st = pcall_budgeted(P, 0, 0, CALL_MASK, 0);
  if (st != LUA_OK) {
    rc = lua_failure(P, st, NULL, err);
    goto out;
  }

  /* A UTF-8 byte-order mark is not Lua; skipping it keeps line numbers. */
  const char *code = P->src;
  size_t clen = P->srclen;
  if (clen >= 3 && !memcmp(code, "\xEF\xBB\xBF", 3)) code += 3, clen -= 3;
  P->mem.refused = 0;
  P->line = 0;
  st = luaL_loadbufferx(L, code, clen, P->chunkname, "t");
  if (st != LUA_OK) {
    if (st == LUA_ERRMEM) {
      rc = lua_failure(P, st, NULL, err);
    } else {
      if (clen > 0 && code[0] == LUA_SIGNATURE[0]) { /* mode "t" refused it */
        rc = fail(err, PT_EFORBID, "%s: a precompiled (binary) Lua chunk; policies are loaded from source "
                  "text only", name);
      } else {
        char msg[PT_ERRMSG_MAX];
        locate(P, lua_tostring(L, -1), 0, msg, sizeof msg);
        rc = fail(err, PT_EFORMAT, "%s", msg);
      }
      lua_pop(L, 1);
    }
    goto out;
  }
  st = pcall_budgeted(P, 0, 1, LOAD_MASK, 0);
  if (st != LUA_OK) {
    rc = lua_failure(P, st, NULL, err);
    goto out;
  }
  /* The return instruction carries the line of the table's closing brace;
     point at the "return" that opens it when the layout shows one. */
  line_query rq = {NULL, 0, P->ret_line, 0};
  walk_idents(code, clen, visit_return, &rq);
  if (rq.found) P->ret_line = rq.found;
  lua_pushcfunction(L, read_policy);
  lua_insert(L, -2);
  st = pcall_budgeted(P, 1, 0, CALL_MASK, P->ret_line);
  if (st != LUA_OK) {
    rc = P->c_oom ? fail(err, PT_ENOMEM, "%s: out of memory", name) : lua_failure(P, st, NULL, err);
    goto out;
  }
  *out = P;
  return 0;
out:
  pt_policy_free(P);
  return rc;
}

int pt_policy_load(const char *path, const pt_policy_limits *lim, pt_err *err, pt_policy **out) {
  *out = NULL;
  size_t max = lim && lim->max_bytes ? lim->max_bytes : PT_POLICY_DEFAULT_BYTES;
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, PT_EIO, "%s: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  int rc = 0;
  while (buf) {
    if (n == cap) {
      if (cap > max) break;
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (!buf)
    rc = fail(err, PT_ENOMEM, "%s: out of memory", path);
  else if (ferror(f))
    rc = fail(err, PT_EIO, "%s: %s", path, strerror(errno));
  else if (n > max)
    rc = fail(err, PT_ELIMIT, "%s: the script is over the %zu-byte limit", path, max);
  fclose(f);
  if (rc == 0) rc = pt_policy_load_buffer(buf, n, path, lim, err, out);
  free(buf);
  return rc;
}

/* ---- accessors ------------------------------------------------------------------ */

const char *pt_policy_name(const pt_policy *pol) { return pol->name; }
const char *pt_policy_doc(const pt_policy *pol) { return pol->doc; }
const char *pt_policy_mechanism(const pt_policy *pol) { return pol->mech_name; }
const char *pt_policy_path(const pt_policy *pol) { return pol->path; }
const char *pt_policy_traceback(const pt_policy *pol) { return pol->traceback ? pol->traceback : ""; }

const char *pt_policy_source(const pt_policy *pol, size_t *len) {
  *len = pol->srclen;
  return pol->src;
}

int pt_policy_nparams(const pt_policy *pol) { return pol->np; }

const pt_policy_param *pt_policy_param_at(const pt_policy *pol, int i) {
  return i >= 0 && i < pol->np ? &pol->par[i].pub : NULL;
}

void pt_policy_params(const pt_policy *pol, pt_params *out) {
  out->n = 0;
  for (int i = 0; i < pol->np; i++) { /* names were checked to fit at load */
    const pt_policy_param *q = &pol->par[i].pub;
    if (q->list.n) (void)pt_params_set_list(out, q->name, &q->list);
    else (void)pt_params_set(out, q->name, q->value);
  }
}

/* ---- --set ------------------------------------------------------------------------ */

int pt_policy_set(pt_policy *pol, const char *assignment, pt_err *err) {
  return pt_policy_set_as(pol, assignment, "--set", err);
}

int pt_policy_set_as(pt_policy *pol, const char *assignment, const char *opt, pt_err *err) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment)
    return fail(err, PT_EUSAGE, "%s: %s expects NAME=VALUE, got '%.100s'", pol->path, opt, assignment);
  size_t nlen = (size_t)(eq - assignment);
  param *pr = NULL;
  for (int i = 0; i < pol->np; i++)
    if (strlen(pol->par[i].name) == nlen && !memcmp(pol->par[i].name, assignment, nlen)) pr = &pol->par[i];
  char buf[PT_MAX_PARAMS * (PT_PARAM_NAME_MAX + 2)];
  if (!pr)
    return fail(err, PT_EUSAGE, "%s: %s %.100s: the policy declares no parameter '%.*s' (declared: %s)",
                pol->path, opt, assignment, (int)(nlen > 64 ? 64 : nlen), assignment, declared(pol, buf, sizeof buf));
  double v;
  pt_plist l;
  char why[PT_ERRMSG_MAX];
  if (pt_param_value_parse(eq + 1, &v, &l, why, sizeof why) < 0)
    return fail(err, PT_EUSAGE, "%s: %s %.100s: %s", pol->path, opt, assignment, why);
  if (l.n ? list_problem(pol, pr, &l, why, sizeof why) : value_problem(pol, pr, v, why, sizeof why))
    return fail(err, PT_EUSAGE, "%s: %s %.100s: %s", pol->path, opt, assignment, why);
  pr->pub.value = v;
  pr->pub.list = l;
  for (int h = 0; h < H_COLLECT; h++) pt_u64map_free(&pol->memo[h]); /* results may depend on p */
  memset(pol->front, 0, sizeof pol->front);
  return 0;
}

/* ---- the hooks -------------------------------------------------------------------- */

static void push_u64(lua_State *L, uint64_t v) {
  if (v <= (uint64_t)LUA_MAXINTEGER)
    lua_pushinteger(L, (lua_Integer)v);
  else
    lua_pushnumber(L, (lua_Number)v);
}

/* What a hook returned, for a message: nil, true, 1.5, the string "2M", a table. */
static const char *describe(lua_State *L, int i, char *buf, size_t n) {
  switch (lua_type(L, i)) {
  case LUA_TNONE:
  case LUA_TNIL: return "nil";
  case LUA_TBOOLEAN: return lua_toboolean(L, i) ? "true" : "false";
  case LUA_TNUMBER:
    if (lua_isinteger(L, i)) {
      snprintf(buf, n, "%lld", (long long)lua_tointeger(L, i));
      return buf;
    }
    return fmt_num(lua_tonumber(L, i), buf, n);
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, i, &len);
    snprintf(buf, n, "the string \"%.40s%s\"", s, len > 40 ? "..." : "");
    return buf;
  }
  default: snprintf(buf, n, "a %s", luaL_typename(L, i)); return buf;
  }
}

/* Before a hook's Lua call: PT_ELIMIT when the run's budgets are spent; else 0, with the hook named for the budget. */
static int run_budget_left(pt_policy *P, int h, pt_err *err) {
  if (P->run_instr >= P->max_run_instr)
    return fail(err, PT_ELIMIT, "%s: %s: whole-run instruction budget exceeded (%" PRIu64 " instructions in %" PRIu64
                " hook calls of this run)", P->path, hook_names[h], P->max_run_instr, P->run_calls);
  if (P->run_seconds > P->max_run_seconds)
    return fail(err, PT_ELIMIT, "%s: %s: whole-run time budget exceeded (%.1f seconds in %" PRIu64
                " hook calls of this run, limit %g)", P->path, hook_names[h], P->run_seconds, P->run_calls,
                P->max_run_seconds);
  P->cur_hook = hook_names[h]; /* pcall_budgeted counts the call into the run and clears it */
  return 0;
}

/* Push the hook, p and nothing else; the caller pushes the arguments. */
static void push_hook(pt_policy *P, int h) {
  lua_rawgeti(P->L, LUA_REGISTRYINDEX, P->hook_ref[h]);
  lua_rawgeti(P->L, LUA_REGISTRYINDEX, P->view_ref);
}

static int size_hook(pt_policy *P, int h, uint64_t bytes, uint64_t *out, pt_err *err) {
  unsigned slot = (unsigned)((bytes >> 9) ^ (bytes >> 15)) & 63;
  if (bytes && P->front[h][slot].key == bytes) {
    *out = P->front[h][slot].val;
    return 0;
  }
  uint64_t *hit = pt_u64map_get(&P->memo[h], bytes);
  if (hit) {
    *out = *hit;
    P->front[h][slot].key = bytes;
    P->front[h][slot].val = *hit;
    return 0;
  }
  lua_State *L = P->L;
  int rc = run_budget_left(P, h, err);
  if (rc < 0) return rc;
  int top = lua_gettop(L);
  push_hook(P, h);
  push_u64(L, bytes);
  int st = pcall_budgeted(P, 2, 1, CALL_MASK, P->hook_line[h]);
  if (st != LUA_OK) return lua_failure(P, st, hook_names[h], err);
  if (lua_type(L, -1) == LUA_TNUMBER && lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0) {
    *out = (uint64_t)lua_tointeger(L, -1);
  } else if (lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1) && lua_tonumber(L, -1) > 0 &&
             lua_tonumber(L, -1) < 18446744073709551616.0 && lua_tonumber(L, -1) == floor(lua_tonumber(L, -1))) {
    *out = (uint64_t)lua_tonumber(L, -1);
  } else {
    char d[80];
    rc = fail(err, PT_EFORMAT, "%s:%d: %s returned %s, expected a positive integer number of bytes", P->path,
              P->hook_line[h], hook_names[h], describe(L, -1, d, sizeof d));
  }
  lua_settop(L, top);
  /* A full memo only costs speed: on PT_ENOMEM the next call asks Lua again. */
  if (rc == 0) (void)pt_u64map_put(&P->memo[h], bytes, *out);
  return rc;
}

static int hook_round(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err) {
  return size_hook(ctx, H_ROUND, bytes, out, err);
}
static int hook_segment_size(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err) {
  return size_hook(ctx, H_SEGMENT, bytes, out, err);
}
static int hook_page_size(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err) {
  return size_hook(ctx, H_PAGE, bytes, out, err);
}

static int hook_should_collect(void *ctx, uint64_t reserved, uint64_t allocated, int *out, pt_err *err) {
  pt_policy *P = ctx;
  lua_State *L = P->L;
  int rc = run_budget_left(P, H_COLLECT, err);
  if (rc < 0) return rc;
  int top = lua_gettop(L);
  push_hook(P, H_COLLECT);
  push_u64(L, reserved);
  push_u64(L, allocated);
  int st = pcall_budgeted(P, 3, 1, CALL_MASK, P->hook_line[H_COLLECT]);
  if (st != LUA_OK) return lua_failure(P, st, hook_names[H_COLLECT], err);
  if (lua_type(L, -1) == LUA_TBOOLEAN) {
    *out = lua_toboolean(L, -1);
  } else {
    char d[80];
    rc = fail(err, PT_EFORMAT, "%s:%d: should_collect returned %s, expected true or false", P->path,
              P->hook_line[H_COLLECT], describe(L, -1, d, sizeof d));
  }
  lua_settop(L, top);
  return rc;
}

void pt_policy_get_hooks(pt_policy *pol, pt_policy_hooks *out) {
  *out = (pt_policy_hooks){.ctx = pol};
  pol->run_instr = pol->run_calls = 0; /* a run begins */
  pol->run_seconds = 0;
  if (pol->hook_ref[H_ROUND] != LUA_NOREF) out->round = hook_round;
  if (pol->hook_ref[H_SEGMENT] != LUA_NOREF) out->segment_size = hook_segment_size;
  if (pol->hook_ref[H_PAGE] != LUA_NOREF) out->page_size = hook_page_size;
  if (pol->hook_ref[H_COLLECT] != LUA_NOREF) out->should_collect = hook_should_collect;
}

void pt_policy_free(pt_policy *pol) {
  if (!pol) return;
  if (pol->L) lua_close(pol->L); /* runs no Lua: setmetatable refuses __gc */
  for (int h = 0; h < H_COLLECT; h++) pt_u64map_free(&pol->memo[h]);
  for (int i = 0; i < PT_MAX_PARAMS; i++) {
    free(pol->par[i].doc);
    free(pol->par[i].choices);
    free(pol->par[i].choice_lists);
  }
  free(pol->path);
  free(pol->chunkname);
  free(pol->src);
  free(pol->name);
  free(pol->doc);
  free(pol->mech_name);
  free(pol->traceback);
  free(pol);
}
