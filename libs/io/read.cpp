#include "io/read.hpp"

#include "base/errors.hpp"

namespace sparsetune {
CooTensor ReadTensorFile(const std::string& path, std::vector<std::string>*) {
  throw InputError(path, 0, "reading is not implemented yet");
}
}  // namespace sparsetune
