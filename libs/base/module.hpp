// Modules opened with dlopen on first use (the cost model's LibTorch, the library baselines),
// so that commands which never use them do not pay for loading and relocating them.
#pragma once

#include <string>

namespace sparsetune {

// Where module `file` is: $`env_var` when set, else beside the executable (the build puts it
// there), else in ../lib/sparsetune of an installed tree, else `build_path`, where this build
// made it.
std::string FindModule(const std::string& file, const char* env_var, const std::string& build_path);

}  // namespace sparsetune
