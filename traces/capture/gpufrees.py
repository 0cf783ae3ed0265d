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
    gpufrees.stop(g, path)          # writes path (format: sim/trace/gpufrees.h)

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
#include <cstdio>
#include <deque>
#include <dlfcn.h>
#include <map>
#include <vector>

namespace {
using c10::cuda::CUDACachingAllocator::TraceEntry;
struct Free { uint64_t addr, at, seen; bool done; };   // at: requests before the free; seen: when seen complete
struct Pending { cudaEvent_t ev; size_t idx; };
std::vector<Free> frees;
std::map<cudaStream_t, std::deque<Pending>> pending;  // per stream, oldest first (a stream passes them in order)
std::vector<cudaEvent_t> spare;
uint64_t requests = 0, failed = 0;
bool on = false, attached = false;
// with traces/capture/async_probe/shim.c preloaded: its count of synchronisations, read at each request and free
typedef unsigned long long (*syncs_fn)();
syncs_fn shim_syncs = nullptr;
unsigned long long last_syncs = 0;
uint64_t calls = 0;             // requests and frees seen
std::vector<uint64_t> sync_at;  // a synchronisation came before the call of this number (from 1)

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
      spare.push_back(q.front().ev);
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
    requests++;
  } else if (te.action_ == TraceEntry::Action::FREE_COMPLETED) {
    frees.push_back(Free{(uint64_t)te.addr_, requests, 0, false});
    cudaEvent_t ev;
    if (!spare.empty()) { ev = spare.back(); spare.pop_back(); }
    else if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) { failed++; return; }
    cudaStream_t s = (cudaStream_t)te.stream_;  // void* in recent PyTorch (its generic TraceEntry)
    if (cudaEventRecord(ev, s) != cudaSuccess) { failed++; spare.push_back(ev); return; }
    pending[s].push_back(Pending{ev, frees.size() - 1});
  }
}
}  // namespace

void start() {
  frees.clear(); pending.clear(); requests = failed = 0;
  sync_at.clear(); calls = 0;
  shim_syncs = (syncs_fn)dlsym(RTLD_DEFAULT, "pt_shim_syncs");
  last_syncs = shim_syncs ? shim_syncs() : 0;
  if (!attached) { c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(tracker); attached = true; }
  on = true;
}

// Stops, waits for the GPU, writes path; returns the events that could not be recorded or queried (0: all).
int64_t stop(const std::string &path) {
  on = false;
  cudaDeviceSynchronize();
  for (auto &kv : pending)
    for (auto &p : kv.second) { frees[p.idx].seen = requests; frees[p.idx].done = false; }
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
