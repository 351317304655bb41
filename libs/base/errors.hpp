#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace sparsetune {

// `text` on one line: control characters escaped (\n, \r, \xNN). Refusals quote user input.
std::string OneLineText(const std::string& text);

// Bad input from the user: a file, an argument, an expression, a schedule. Ends the command
// with exit code 2. The message names the file, the line (when there is one) and the cause.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& cause);
  InputError(const std::string& file, int64_t line, const std::string& cause);

  const std::string& file() const { return file_; }
  int64_t line() const { return line_; }
  const std::string& cause() const { return cause_; }

 private:
  std::string file_;
  int64_t line_ = 0;
  std::string cause_;
};

// A failure of sparsetune itself or of its environment (compiler missing, disk full). Exit 3.
class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sparsetune
