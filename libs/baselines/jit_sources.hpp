// The baselines compiled at run time by sparsetune's JIT (jit_sources/*.cpp in the source
// tree), embedded into the library as text by the build.
#pragma once

#include <string>

namespace sparsetune {

// The text of jit_sources/`file` (for example "hand_kernels.cpp"); throws InternalError for
// a name that is not there.
std::string JitSource(const std::string& file);

}  // namespace sparsetune
