#include "base/errors.hpp"

namespace sparsetune {

std::string OneLineText(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {
std::string FormatLocation(const std::string& file, int64_t line, const std::string& cause) {
  std::string out = OneLineText(file);
  if (line > 0) out += ":" + std::to_string(line);
  if (!out.empty()) out += ": ";
  return out + OneLineText(cause);
}
}  // namespace

InputError::InputError(const std::string& cause)
    : std::runtime_error(OneLineText(cause)), cause_(OneLineText(cause)) {}

InputError::InputError(const std::string& file, int64_t line, const std::string& cause)
    : std::runtime_error(FormatLocation(file, line, cause)),
      file_(file),
      line_(line),
      cause_(OneLineText(cause)) {}

}  // namespace sparsetune
