/* python_states.h for building allocatorSim's trace-driven simulator alone
   (bench/long_trace.sh): its Python-state interface without Python or
   pybind11.  A replay of a trace file has no Python frames to read. */
#ifndef PYTHON_STATES_H
#define PYTHON_STATES_H

#include <cstddef>

namespace c10 {
namespace cuda {
namespace AllocatorSim {

typedef struct python_state {
    const char *file_name;
    const char *function_name;
    size_t function_first_lineno;
    size_t lineno;
} python_state_t;

bool python_state_get(size_t max_num_states, python_state_t *states, size_t *num_states);

}  // namespace AllocatorSim
}  // namespace cuda
}  // namespace c10

#endif
