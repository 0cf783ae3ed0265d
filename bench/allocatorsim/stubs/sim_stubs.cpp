// sim_stubs.cpp — what allocatorSim's simulator links from its PyTorch-side
// utilities (Python states, unwinding, the CUDA sanitizer), for a build of
// the trace-driven simulator alone (bench/long_trace.sh).  None of it is
// reached while a trace file is simulated; the call-path hash it feeds is
// taken while the trace is collected, outside the timed simulation.
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "utils/python_states.h"

namespace c10 {
namespace cuda {
namespace AllocatorSim {
bool python_state_get(size_t, python_state_t *, size_t *num_states) {
    *num_states = 0;
    return false;
}
}  // namespace AllocatorSim
}  // namespace cuda
}  // namespace c10

std::string get_backtrace() { return std::string(); }
std::string get_demangled_backtrace() { return std::string(); }

std::map<uint64_t, std::pair<uint64_t, size_t>> _active_physical_segments;
std::map<uint64_t, std::pair<uint64_t, size_t>> _physical_segment_trace;
void sanitizer_callbacks_subscribe() {}
void sanitizer_callbacks_unsubscribe() {}
