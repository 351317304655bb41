#include "base/module.hpp"

#include <cstdlib>
#include <filesystem>

namespace sparsetune {

std::string FindModule(const std::string& file, const char* env_var,
                       const std::string& build_path) {
  if (const char* env = std::getenv(env_var)) return env;
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (const fs::path& candidate :
         {exe.parent_path() / file, exe.parent_path() / "../lib/sparsetune" / file}) {
      if (fs::is_regular_file(candidate, error)) return candidate.string();
    }
  }
  return build_path;
}

}  // namespace sparsetune
