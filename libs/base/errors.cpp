#include "base/errors.hpp"

namespace sparsetune {

namespace {
std::string FormatLocation(const std::string& file, int64_t line, const std::string& cause) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  if (!out.empty()) out += ": ";
  return out + cause;
}
}  // namespace

InputError::InputError(const std::string& cause) : std::runtime_error(cause), cause_(cause) {}

InputError::InputError(const std::string& file, int64_t line, const std::string& cause)
    : std::runtime_error(FormatLocation(file, line, cause)),
      file_(file),
      line_(line),
      cause_(cause) {}

}  // namespace sparsetune
