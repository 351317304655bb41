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

// The entry points of an emitted kernel that depend on its expression (EmitKernel's header
// documents them all).
struct EmittedInterface {
  std::string name;  // EmittedName
  // The dense sizes that _compute, _compute_tuned_order and _output_size take after the
  // operand, in this order (the expression's indices that are no mode of the sparse operand).
  std::vector<std::string> dense_indices;
  // The dense operands indexed by a mode of the sparse operand, which an ordered schedule
  // renumbers: _to_tuned_order_<name> and _from_tuned_order_<name> convert them, taking the
  // dense sizes they are indexed by (in dense_indices' order) after the operand.
  struct Conversion {
    int tensor = 0;    // in the expression (0: the output)
    std::string name;  // a C identifier, unique in the kernel
    std::vector<std::string> dense_indices;
  };
  std::vector<Conversion> conversions;
};
EmittedInterface DescribeEmittedInterface(const std::string& kernel, const Expression& expression);

// Makes sure `dir` can take an emitted kernel before any work is done: it is created when
// missing; InputError when it exists but is not a directory or cannot be written.
void PrepareEmitDirectory(const std::string& dir);

// Writes <dir>/<name>.h, <name>.cpp and <name>.schedule.json for the schedule: a C ABI that
// packs an operand into the tuned format (renumbered by the schedule's ordering, computed from
// the operand's pattern), updates its values, computes at dense sizes given per call (`sizes`
// are those tuned for) on OpenMP's threads, and converts dense operands to and from the tuned
// order. `pattern` is the operand the schedule was tuned on: its packing tells the coordinate
// widths the kernel is generated for; the source also holds a variant for 32-bit coordinates,
// which an operand whose coordinates do not fit them runs. Returns the paths written. Throws
// InputError when the schedule does not lower or the format does not apply. `calls` (above 0)
// is the call count the schedule was chosen for (tune --calls), and `tuned_order` whether it was
// timed in the tuned order (tune --tuned-order); the header states both.
std::vector<std::string> EmitKernel(const std::string& dir, const std::string& kernel,
                                    const Expression& expression,
                                    const std::map<std::string, int64_t>& sizes, DType dtype,
                                    const Schedule& schedule, const CooTensor* pattern,
                                    int64_t calls = 0, bool tuned_order = false);

}  // namespace sparsetune
