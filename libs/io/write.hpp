#pragma once

#include <string>

#include "tensor/coo.hpp"

namespace sparsetune {

// Streams a tensor to a file without building its text in memory: Matrix Market coordinate
// (real general, or pattern when pattern_only) for order 2, FROSTT .tns (1-based) otherwise.
// A ".gz" suffix compresses. Values are written as the shortest text that reads back exactly.
void WriteTensorFile(const CooTensor& tensor, const std::string& path);

}  // namespace sparsetune
