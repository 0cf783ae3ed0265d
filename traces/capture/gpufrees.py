"""gpufrees.py — when the GPU passed each free, counted in the requests made before it (issue 12).

cudaMallocAsync's pool reuses a freed block fully (merging it with its free neighbours) only once it has
seen the GPU pass the free; until then the free is pending (traces/capture/async_probe, `probe pending`).
A snapshot records when the program freed a block, not when the GPU got there.  This module attaches a
trace tracker to PyTorch's caching allocator (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker,
called for every entry the allocator records, with its lock held): at each free (free_completed) it records
a CUDA event on the block's stream; at each request (alloc, oom) it first queries the oldest outstanding
events of every stream, as the driver does when a request comes.  A free's count is the number of requests
that came before its event was seen complete: 0 when the GPU had passed it by the next request.

    import gpufrees
    g = gpufrees.start(build_dir)   # after CUDA is initialised; None (with g_error) when it cannot build
    ... the workload ...
    gpufrees.stop(g, path)          # writes path (format: sim/trace/gpufrees.h) and path.times (below)

path.times (traces/capture/async_timeline.py reads it): each request and free in order, with the host's time
(us from the start), the host's time so far in the native allocator's cudaMalloc/cudaFree and in
synchronisations (the shim's, when preloaded; 0 without), and for a free the GPU's time of passing it (its
event's elapsed time from a base event the GPU passed as the host's clock started) and its stream:
    pagetune-gpu-times 1
    shim timed|none
    p HOST_US GPU_US                              (at the end: an event the GPU passed just before that host time)
    r HOST_US STALL_US SYNC_US
    f HOST_US STALL_US SYNC_US GPU_US STREAM      (GPU_US -1: not known)
    end REQUESTS FREES

capture.py does this when PT_GPU_FREES=1 (`trace import --gpu-frees`).  Built once per build_dir with
torch.utils.cpp_extension.
"""
import os

EXT_NAME = "pagetune_gpu_frees"
LAST_ERROR = [""]  # the whole text of the last build failure

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#include <chrono>
#include <cstdio>
#include <deque>
#include <dlfcn.h>
#include <map>
#include <vector>

namespace {
using c10::cuda::CUDACachingAllocator::TraceEntry;
struct Free { uint64_t addr, at, seen; bool done; double gpu_us; cudaStream_t stream; };
// at: requests before the free; seen: when seen complete (NEVER: its event could not be recorded); gpu_us: when
// the GPU passed it, us from the base event (-1 unknown); stream: the block's
const uint64_t NEVER = ~(uint64_t)0;
struct Pending { cudaEvent_t ev; size_t idx; };
struct Call { double host_us, stall_us, sync_us; int64_t free_idx; };  // a request (free_idx -1) or a free, in order
std::vector<Free> frees;
std::map<cudaStream_t, std::deque<Pending>> pending;  // per stream, oldest first (a stream passes them in order)
std::vector<cudaEvent_t> spare;
// each stream's last free seen passed: the next one's time is read from it (a float of milliseconds from the
// base alone would hold 0.5 us at 5 s, 2 us at 16 s), added up in double
struct Last { cudaEvent_t ev; double us; };
std::map<cudaStream_t, Last> last_seen;
uint64_t requests = 0, failed = 0;
bool on = false, attached = false;
// with traces/capture/async_probe/shim.c preloaded: its count of synchronisations, read at each request and free
typedef unsigned long long (*syncs_fn)();
syncs_fn shim_syncs = nullptr;
unsigned long long last_syncs = 0;
uint64_t calls = 0;             // requests and frees seen
std::vector<uint64_t> sync_at;  // a synchronisation came before the call of this number (from 1)
// the times file: every request and free with the host's time, the host's stalls (the native allocator's
// cudaMalloc and cudaFree) and synchronisation waits so far, from the shim when preloaded
typedef unsigned long long (*ns_fn)();
ns_fn shim_stall_ns = nullptr, shim_sync_ns = nullptr;
unsigned long long stall0 = 0, sync0 = 0;  // theirs at the start: the file's are since then
std::vector<Call> timeline;
cudaEvent_t base = nullptr;
std::chrono::steady_clock::time_point host0;
double since_start_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host0).count();
}
double gpu_us_of(cudaEvent_t ev) {
  float ms = 0;
  return cudaEventElapsedTime(&ms, base, ev) == cudaSuccess ? 1000.0 * ms : -1;
}
void add_call(int64_t free_idx) {
  timeline.push_back(Call{since_start_us(), shim_stall_ns ? (shim_stall_ns() - stall0) / 1000.0 : 0,
                          shim_sync_ns ? (shim_sync_ns() - sync0) / 1000.0 : 0, free_idx});
}

// A free's event the GPU passed: its time, from its stream's last one where there is one; it becomes the last.
double passed(cudaStream_t s, cudaEvent_t ev) {
  double us = -1;
  auto it = last_seen.find(s);
  float ms = 0;
  if (it != last_seen.end() && cudaEventElapsedTime(&ms, it->second.ev, ev) == cudaSuccess) us = it->second.us + 1000.0 * ms;
  if (us < 0) us = gpu_us_of(ev);
  if (us < 0) {
    spare.push_back(ev);
    return us;
  }
  if (it != last_seen.end()) spare.push_back(it->second.ev);
  last_seen[s] = Last{ev, us};
  return us;
}

void poll() {
  for (auto &kv : pending) {
    auto &q = kv.second;
    while (!q.empty()) {
      cudaError_t rc = cudaEventQuery(q.front().ev);
      if (rc == cudaErrorNotReady) break;
      Free &f = frees[q.front().idx];
      f.seen = requests;
      f.done = rc == cudaSuccess;
      failed += rc != cudaSuccess;
      if (f.done) f.gpu_us = passed(kv.first, q.front().ev);
      else spare.push_back(q.front().ev);
      q.pop_front();
    }
  }
}

void tracker(const TraceEntry &te) {
  if (!on) return;
  if (shim_syncs && (te.action_ == TraceEntry::Action::ALLOC || te.action_ == TraceEntry::Action::OOM ||
                     te.action_ == TraceEntry::Action::FREE_COMPLETED)) {
    calls++;
    unsigned long long s = shim_syncs();
    if (s != last_syncs) { sync_at.push_back(calls); last_syncs = s; }
  }
  if (te.action_ == TraceEntry::Action::ALLOC || te.action_ == TraceEntry::Action::OOM) {
    poll();
    add_call(-1);
    requests++;
  } else if (te.action_ == TraceEntry::Action::FREE_COMPLETED) {
    cudaStream_t s = (cudaStream_t)te.stream_;  // void* in recent PyTorch (its generic TraceEntry)
    frees.push_back(Free{(uint64_t)te.addr_, requests, NEVER, false, -1, s});
    add_call((int64_t)frees.size() - 1);
    cudaEvent_t ev;
    if (!spare.empty()) { ev = spare.back(); spare.pop_back(); }
    else if (cudaEventCreateWithFlags(&ev, cudaEventDefault) != cudaSuccess) { failed++; return; }  // timed
    if (cudaEventRecord(ev, s) != cudaSuccess) { failed++; spare.push_back(ev); return; }
    pending[s].push_back(Pending{ev, frees.size() - 1});
  }
}
}  // namespace

void start() {
  frees.clear(); pending.clear(); last_seen.clear(); requests = failed = 0;
  sync_at.clear(); calls = 0; timeline.clear();
  shim_syncs = (syncs_fn)dlsym(RTLD_DEFAULT, "pt_shim_syncs");
  shim_stall_ns = (ns_fn)dlsym(RTLD_DEFAULT, "pt_shim_stall_ns");
  shim_sync_ns = (ns_fn)dlsym(RTLD_DEFAULT, "pt_shim_sync_ns");
  // the base: an event the GPU passed just before the host's clock starts (every time is from it, in us)
  if (!base && cudaEventCreateWithFlags(&base, cudaEventDefault) != cudaSuccess) { base = nullptr; failed++; }
  cudaDeviceSynchronize();
  if (base) { cudaEventRecord(base, nullptr); cudaEventSynchronize(base); }
  host0 = std::chrono::steady_clock::now();
  stall0 = shim_stall_ns ? shim_stall_ns() : 0;
  sync0 = shim_sync_ns ? shim_sync_ns() : 0;
  last_syncs = shim_syncs ? shim_syncs() : 0;
  if (!attached) { c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(tracker); attached = true; }
  on = true;
}

// Stops, waits for the GPU, writes path; returns the events that could not be recorded or queried (0: all).
int64_t stop(const std::string &path) {
  on = false;
  cudaDeviceSynchronize();
  for (auto &kv : pending) {
    for (auto &p : kv.second) {
      frees[p.idx].seen = requests; frees[p.idx].done = false;
      frees[p.idx].gpu_us = passed(kv.first, p.ev);  // passed by now (synchronised): its time is known all the same
    }
    kv.second.clear();
  }
  for (Free &x : frees)
    if (x.seen == NEVER) x.seen = requests;  // its event could not be recorded: not seen before the end
  FILE *f = fopen(path.c_str(), "w");
  if (!f) return -1;
  fprintf(f, "pagetune-gpu-frees %d\nrequests %llu\n", shim_syncs ? 2 : 1, (unsigned long long)requests);
  if (shim_syncs) fprintf(f, "syncs recorded\n");
  for (const Free &x : frees)
    fprintf(f, "f 0x%llx %llu%s\n", (unsigned long long)x.addr, (unsigned long long)(x.seen - x.at),
            x.done ? "" : " end");
  for (uint64_t n : sync_at) fprintf(f, "s %llu\n", (unsigned long long)n);
  fprintf(f, "end %zu\n", frees.size());
  fclose(f);
  // the times file beside it: path + ".times"
  FILE *t = fopen((path + ".times").c_str(), "w");
  if (!t) return -1;
  fprintf(t, "pagetune-gpu-times 1\nshim %s\n", shim_stall_ns ? "timed" : "none");
  if (base) {  // the two clocks side by side again at the end: how far they drifted over the capture
    cudaEvent_t last;
    if (cudaEventCreateWithFlags(&last, cudaEventDefault) == cudaSuccess) {
      cudaEventRecord(last, nullptr);
      cudaEventSynchronize(last);
      double h = since_start_us(), g = gpu_us_of(last);
      if (g >= 0) fprintf(t, "p %.3f %.3f\n", h, g);
      cudaEventDestroy(last);
    }
  }
  for (const Call &c : timeline)
    if (c.free_idx < 0)
      fprintf(t, "r %.3f %.3f %.3f\n", c.host_us, c.stall_us, c.sync_us);
    else
      fprintf(t, "f %.3f %.3f %.3f %.3f 0x%llx\n", c.host_us, c.stall_us, c.sync_us, frees[c.free_idx].gpu_us,
              (unsigned long long)(uintptr_t)frees[c.free_idx].stream);
  fprintf(t, "end %zu %zu\n", (size_t)requests, frees.size());
  fclose(t);
  for (auto &kv : last_seen) spare.push_back(kv.second.ev);
  last_seen.clear();
  return (int64_t)failed;
}
"""


def build(build_dir):
    """The extension, built into build_dir once (later calls load it): the module, or an error string
    (the compiler's first error line, else the build's last line)."""
    try:
        from torch.utils.cpp_extension import load_inline
        os.makedirs(build_dir, exist_ok=True)
        return load_inline(EXT_NAME, cpp_sources=CPP_SOURCE, functions=["start", "stop"], with_cuda=True,
                           extra_cflags=["-O2"], build_directory=build_dir, verbose=False)
    except Exception as e:  # noqa: BLE001
        LAST_ERROR[0] = str(e)
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower() and "ninja" not in l]
        return "the C++ extension did not build: %s" % (errors[0] if errors else lines[-1] if lines else
                                                         type(e).__name__)


def start(build_dir):
    """Builds (once) and starts the tracker: the module, or an error string."""
    mod = build(build_dir)
    if not isinstance(mod, str):
        mod.start()
    return mod


if __name__ == "__main__":  # python3 gpufrees.py BUILD_DIR: build only, say how it went
    import sys
    m = build(sys.argv[1])
    print(LAST_ERROR[0][-6000:] + "\n" + m if isinstance(m, str) else "built")
    sys.exit(1 if isinstance(m, str) else 0)


def stop(mod, path):
    """Writes path; the number of events that failed (0: every free is measured), or -1 (path unwritable)."""
    return int(mod.stop(path))
