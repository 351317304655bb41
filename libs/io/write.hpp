#pragma once

#include <string>

#include "tensor/coo.hpp"

namespace sparsetune {

// Streams a tensor to a file without building its text in memory: Matrix Market coordinate
// (real general, or pattern when pattern_only) for order 2, FROSTT .tns (1-based) otherwise.
// A ".gz" suffix compresses. Values are written as the shortest text that reads back exactly.
// The file appears under `path` only once complete (it is written to a temporary file in the
// same directory, then renamed; SIGINT, SIGTERM and SIGHUP, unless the program handles them
// itself, remove the temporary file before ending the process). A name ending in .tns (or .tns.gz)
// selects FROSTT for any order; a .mtx name for a tensor of order other than 2 is an InputError, as
// is a path that cannot be created. Failing writes (disk full) throw InternalError naming the path.
void WriteTensorFile(const CooTensor& tensor, const std::string& path);
// The same, with `comment` (lines separated by newlines) as % lines after the Matrix Market
// banner; FROSTT files get no comment, since its readers do not agree on a comment syntax.
void WriteTensorFile(const CooTensor& tensor, const std::string& path, const std::string& comment);

}  // namespace sparsetune
