#pragma once

#include <string>

#include "tensor/coo.hpp"

namespace sparsetune {

// A stable hash of the dims and the sorted coordinates of a canonical tensor: the same
// pattern gives the same fingerprint whatever its values, file format, entry order or
// formatting. 32 hex digits.
std::string PatternFingerprint(const CooTensor& tensor);

}  // namespace sparsetune
