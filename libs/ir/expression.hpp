#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sparsetune {

// One tensor access in index notation, e.g. B(i,j). `column` is 1-based in the source text.
struct Access {
  std::string tensor;
  std::vector<std::string> indices;
  int column = 0;
};

// `lhs = f1 * f2 * ...` or `lhs += ...` as written; no semantics checked yet.
struct Assignment {
  Access lhs;
  std::vector<Access> factors;
  bool accumulate = false;
};

// Parses index notation. Throws InputError("<what>: column N: cause") where `what` names the
// source of the text (such as "--expr" or a schedule file) for messages.
Assignment ParseAssignment(std::string_view text, const std::string& what);

// "B(i,j)", or "t" without indices: an access as index notation writes it.
std::string AccessText(const std::string& tensor, const std::vector<std::string>& indices);

// A single access such as "T(l)" or "t".
Access ParseAccess(std::string_view text, const std::string& what);

enum class TensorRole { kSparseInput, kDenseInput, kDenseOutput, kSparseOutput, kTemporary };

struct TensorInfo {
  std::string name;
  std::vector<std::string> indices;
  TensorRole role = TensorRole::kDenseInput;
};

// A pure multiplicative contraction with exactly one sparse input: O(out) = sum over the
// indices absent from out of the product of the inputs. Every other input is dense and
// row-major. The output is sparse when it shares the sparse input's pattern (same modes, as in
// SDDMM) or, when asked for, a prefix of its modes followed by dense ones (as in SpTTM).
struct Expression {
  std::string text;                  // canonical text
  std::vector<TensorInfo> tensors;   // output first, then the inputs in source order
  std::vector<std::string> indices;  // every index, in order of first appearance
  int sparse = -1;                   // tensors[sparse] is the sparse input
  // For a sparse output: how many leading output indices follow the sparse input's pattern.
  int sparse_output_prefix = 0;

  const TensorInfo& output() const { return tensors[0]; }
  const TensorInfo& sparse_input() const { return tensors[sparse]; }
  int TensorId(const std::string& name) const;  // -1 when absent
  int IndexId(const std::string& name) const;   // -1 when absent
  bool IsOutputIndex(const std::string& index) const;
  bool IsSparseIndex(const std::string& index) const;  // a mode of the sparse input
  // Indices that no sparse mode fixes: their sizes come from the user or the kernel defaults.
  std::vector<std::string> DenseOnlyIndices() const;
};

enum class SparseOutput { kAuto, kYes, kNo };

// Checks the semantics and builds the expression. `sparse_name` empty means the first tensor on
// the right-hand side. kAuto makes the output sparse only when its indices equal the sparse
// input's; kYes also accepts a prefix of them followed by dense indices.
Expression BuildExpression(std::string_view text, const std::string& what,
                           const std::string& sparse_name = "",
                           SparseOutput sparse_output = SparseOutput::kAuto);

// Sizes of all indices: the sparse modes from the tensor's dims, the rest from `dense`.
// Throws InputError naming a missing or inconsistent size.
std::map<std::string, int64_t> ResolveIndexSizes(const Expression& expression,
                                                 const std::vector<int64_t>& sparse_dims,
                                                 const std::map<std::string, int64_t>& dense);

// The sizes of the dense-only indices among `sizes` (the database's key of the dense sizes).
std::map<std::string, int64_t> DenseOnlySizes(const Expression& expression,
                                              const std::map<std::string, int64_t>& sizes);

// Parses "j=256" / "k=128,l=64" style assignments (repeatable on the command line).
std::map<std::string, int64_t> ParseDenseSizes(const std::vector<std::string>& items);

}  // namespace sparsetune
