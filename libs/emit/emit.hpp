// Standalone kernels: a header and a source with a C ABI that compile with `c++ -O3 -fopenmp`
// alone, plus the schedule JSON.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

// The C identifier prefix of an emitted kernel: sparsetune_<kernel> ("expr" for expressions).
std::string EmittedName(const std::string& kernel);

// Makes sure `dir` can take an emitted kernel before any work is done: it is created when
// missing; InputError when it exists but is not a directory or cannot be written.
void PrepareEmitDirectory(const std::string& dir);

// Writes <dir>/<name>.h, <name>.cpp and <name>.schedule.json for the schedule, with the dense
// sizes baked in. `pattern` is the operand the schedule was tuned on: its packing tells the
// coordinate widths the kernel is generated for (another pattern whose coordinates do not fit
// them is refused by the emitted packer with a message). Returns the paths written. Throws
// InputError when the schedule does not lower or the format does not apply.
std::vector<std::string> EmitKernel(const std::string& dir, const std::string& kernel,
                                    const Expression& expression,
                                    const std::map<std::string, int64_t>& sizes, DType dtype,
                                    const Schedule& schedule, const CooTensor* pattern);

}  // namespace sparsetune
