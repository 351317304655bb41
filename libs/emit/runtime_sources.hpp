// Sources that emitted kernels carry verbatim (the level packer, libs/tensor/level_packer.hpp,
// and the pattern orderings, libs/ordering/pattern_ordering.hpp), embedded into the library as
// text by the build.
#pragma once

#include <string>

namespace sparsetune {

// The text of `file` (for example "level_packer.hpp"); throws InternalError for a name that is
// not there.
std::string EmbeddedRuntimeSource(const std::string& file);

}  // namespace sparsetune
