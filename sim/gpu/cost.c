/* cost.c — driver-call costs through calibration points (see cost.h). */
#include "cost.h"

int pt_cost_line_from_points(const pt_cost_points *p, pt_cost_line *out, pt_err *err) {
  *out = (pt_cost_line){0};
  for (size_t i = 0; i < p->n; i++) {
    if (!(p->us[i] > 0) || !(p->bytes[i] >= 0))
      return pt_err_set(err, PT_EFORMAT, "calibration point %zu: time must be > 0 and bytes >= 0", i + 1);
    size_t at = out->n; /* insertion by size: a handful of points */
    while (at > 0 && out->bytes[at - 1] > p->bytes[i]) {
      out->bytes[at] = out->bytes[at - 1];
      out->us[at] = out->us[at - 1];
      at--;
    }
    if (at > 0 && out->bytes[at - 1] == p->bytes[i]) {
      *out = (pt_cost_line){0};
      return pt_err_set(err, PT_EFORMAT, "calibration points: two at %.0f bytes", p->bytes[i]);
    }
    out->bytes[at] = p->bytes[i];
    out->us[at] = p->us[i];
    out->n++;
  }
  return 0;
}

double pt_cost_eval(const pt_cost_line *l, double bytes) {
  if (!l->n) return 0;
  if (l->n == 1 || bytes <= l->bytes[0]) return l->us[0];
  size_t i = 1;
  while (i < l->n - 1 && l->bytes[i] < bytes) i++; /* the segment [i-1, i], or the last one carried on */
  double slope = (l->us[i] - l->us[i - 1]) / (l->bytes[i] - l->bytes[i - 1]);
  double t = l->us[i - 1] + slope * (bytes - l->bytes[i - 1]);
  if (bytes > l->bytes[l->n - 1] && t < l->us[l->n - 1]) t = l->us[l->n - 1]; /* past the points: no cheaper */
  return t > 0 ? t : 0;
}

double pt_cost_calls_us(const pt_cost_line *l, const uint64_t calls[PT_SIZE_CLASSES],
                        const uint64_t bytes[PT_SIZE_CLASSES]) {
  double t = 0;
  for (int k = 0; k < PT_SIZE_CLASSES; k++) /* linear within a class: its mean size stands for all */
    if (calls[k]) t += (double)calls[k] * pt_cost_eval(l, (double)bytes[k] / (double)calls[k]);
  return t;
}

pt_cost_line pt_cost_constant(double us) {
  pt_cost_line l = {0};
  if (us > 0) l = (pt_cost_line){.n = 1, .bytes = {0}, .us = {us}};
  return l;
}

double pt_cost_alloc_us(const pt_cost_model *m, const pt_call_sizes *sizes, const pt_req_sizes *req) {
  const pt_cost_line *with_calls = m->bookkeeping_call.n ? &m->bookkeeping_call : &m->bookkeeping;
  double t = pt_cost_calls_us(&m->bookkeeping, req->n, req->bytes) + pt_cost_calls_us(with_calls, req->n_call, req->bytes_call);
  for (int i = 0; i < PT_DRV_NCALLS; i++) t += pt_cost_calls_us(&m->call[i], sizes->calls[i], sizes->bytes[i]);
  return t;
}

double pt_cost_kind_us(const pt_cost_model *m, int c, const pt_call_books *b) {
  static const pt_call_sizes none;
  const pt_call_sizes *all = b->all ? b->all : &none, *rep = b->repeat ? b->repeat : &none;
  int split = b->after && m->call_after[c].n;
  const pt_call_sizes *aft = split ? b->after : &none, *rep_aft = split && b->repeat_after ? b->repeat_after : &none;
  uint64_t n[PT_SIZE_CLASSES], nb[PT_SIZE_CLASSES], rn[PT_SIZE_CLASSES], rb[PT_SIZE_CLASSES];
  for (int k = 0; k < PT_SIZE_CLASSES; k++) { /* subsets, so no underflow */
    rn[k] = rep->calls[c][k] - rep_aft->calls[c][k];
    rb[k] = rep->bytes[c][k] - rep_aft->bytes[c][k];
    n[k] = all->calls[c][k] - rep->calls[c][k] - (aft->calls[c][k] - rep_aft->calls[c][k]);
    nb[k] = all->bytes[c][k] - rep->bytes[c][k] - (aft->bytes[c][k] - rep_aft->bytes[c][k]);
  }
  double t = pt_cost_calls_us(&m->call[c], n, nb) +
             pt_cost_calls_us(m->call_repeat[c].n ? &m->call_repeat[c] : &m->call[c], rn, rb);
  return split ? t + pt_cost_calls_us(&m->call_after[c], aft->calls[c], aft->bytes[c]) : t;
}

double pt_cost_alloc_class_us(const pt_cost_model *m, const pt_call_books *b, const pt_req_sizes *req,
                              const pt_req_sizes *rep_req) {
  static const pt_call_sizes no_calls;
  pt_req_sizes other_req = *req;
  for (int k = 0; k < PT_SIZE_CLASSES; k++) {
    other_req.n[k] -= rep_req->n[k];
    other_req.bytes[k] -= rep_req->bytes[k];
    other_req.n_call[k] -= rep_req->n_call[k];
    other_req.bytes_call[k] -= rep_req->bytes_call[k];
  }
  const pt_cost_line *plain = m->bookkeeping_repeat.n ? &m->bookkeeping_repeat : &m->bookkeeping;
  const pt_cost_line *with_calls = m->bookkeeping_call_repeat.n ? &m->bookkeeping_call_repeat
                                   : m->bookkeeping_call.n     ? &m->bookkeeping_call
                                                               : plain;
  double t = pt_cost_alloc_us(m, &no_calls, &other_req) + pt_cost_calls_us(plain, rep_req->n, rep_req->bytes) +
             pt_cost_calls_us(with_calls, rep_req->n_call, rep_req->bytes_call);
  for (int c = 0; c < PT_DRV_NCALLS; c++) t += pt_cost_kind_us(m, c, b);
  return t;
}

double pt_cost_work_us(const pt_cost_work *w, const pt_work_counts *c) {
  return w->req_us * (double)c->requests + w->op_us * (double)c->ops + w->chunk_us * (double)c->chunks +
         w->visit_us * (double)c->visits;
}

double pt_cost_alloc_total_us(const pt_cost_model *m, const pt_call_books *b, const pt_req_sizes *req,
                              const pt_req_sizes *rep_req, const pt_work_counts *counts) {
  if (!m->has_work) return pt_cost_alloc_class_us(m, b, req, rep_req);
  pt_cost_model calls = *m; /* the driver calls alone: no bookkeeping line */
  calls.bookkeeping.n = calls.bookkeeping_call.n = calls.bookkeeping_repeat.n = calls.bookkeeping_call_repeat.n = 0;
  return pt_cost_alloc_class_us(&calls, b, req, rep_req) + pt_cost_work_us(&m->work, counts);
}
