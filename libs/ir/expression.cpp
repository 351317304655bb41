#include "ir/expression.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/errors.hpp"

namespace sparsetune {

namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  Access ParseSingleAccess() {
    Access a = ParseAccess();
    SkipSpace();
    if (pos_ < text_.size()) Fail("unexpected '" + CharAt(pos_) + "' after the access");
    return a;
  }

  Assignment Parse() {
    Assignment a;
    SkipSpace();
    a.lhs = ParseAccess();
    SkipSpace();
    if (Peek() == '+' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '=') {
      a.accumulate = true;
      pos_ += 2;
    } else if (Peek() == '=') {
      ++pos_;
    } else {
      Fail("expected '=' after the output access");
    }
    do {
      SkipSpace();
      a.factors.push_back(ParseAccess());
      SkipSpace();
    } while (Consume('*'));
    if (pos_ < text_.size()) {
      Fail("unexpected '" + CharAt(pos_) + "' (only products of tensor accesses are supported)");
    }
    return a;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // The character at `pos` for a message: a whole UTF-8 sequence, or an escape for a byte that
  // is not printable or starts no valid sequence. Messages must stay valid UTF-8: they reach
  // JSON output, which refuses broken UTF-8.
  std::string CharAt(size_t pos) const {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text_[k]); };
    const unsigned char c = byte(pos);
    if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
    // Lengths and second-byte ranges of well-formed UTF-8 (Unicode Table 3-7).
    size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      if (c == 0xe0) low = 0xa0;
      if (c == 0xed) high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      if (c == 0xf0) low = 0x90;
      if (c == 0xf4) high = 0x8f;
    }
    bool valid = length > 0 && pos + length <= text_.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const unsigned char b = byte(pos + k);
      valid = k == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xbf);
    }
    if (valid) return std::string(text_.substr(pos, length));
    static const char* hex = "0123456789abcdef";
    return std::string("\\x") + hex[c >> 4] + hex[c & 15];
  }
  [[noreturn]] void Fail(const std::string& cause) const {
    throw InputError(what_ + ": column " + std::to_string(pos_ + 1) + ": " + cause);
  }
  std::string ParseIdentifier(const char* role) {
    SkipSpace();
    const size_t start = pos_;
    if (!(std::isalpha(static_cast<unsigned char>(Peek())) || Peek() == '_')) {
      Fail(std::string("expected ") + role +
           (Peek() ? ", found '" + CharAt(pos_) + "'" : std::string(", found the end")));
    }
    while (std::isalnum(static_cast<unsigned char>(Peek())) || Peek() == '_') ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  Access ParseAccess() {
    Access access;
    SkipSpace();
    access.column = static_cast<int>(pos_) + 1;
    access.tensor = ParseIdentifier("a tensor name");
    SkipSpace();
    if (!Consume('(')) return access;  // a scalar
    SkipSpace();
    if (Consume(')')) return access;
    do {
      const size_t index_pos = pos_;
      std::string index = ParseIdentifier("an index name");
      if (std::find(access.indices.begin(), access.indices.end(), index) != access.indices.end()) {
        pos_ = index_pos;
        SkipSpace();
        Fail("index " + index + " is repeated in " + access.tensor +
             " (diagonal accesses are not supported)");
      }
      access.indices.push_back(index);
      SkipSpace();
    } while (Consume(','));
    if (!Consume(')')) Fail("expected ',' or ')' in the indices of " + access.tensor);
    return access;
  }

  std::string_view text_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace

std::string AccessText(const std::string& tensor, const std::vector<std::string>& indices) {
  std::string out = tensor;
  if (indices.empty()) return out;
  out += '(';
  for (size_t k = 0; k < indices.size(); ++k) out += (k ? "," : "") + indices[k];
  return out + ')';
}

Assignment ParseAssignment(std::string_view text, const std::string& what) {
  return Parser(text, what).Parse();
}

Access ParseAccess(std::string_view text, const std::string& what) {
  return Parser(text, what).ParseSingleAccess();
}

int Expression::TensorId(const std::string& name) const {
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

int Expression::IndexId(const std::string& name) const {
  auto it = std::find(indices.begin(), indices.end(), name);
  return it == indices.end() ? -1 : static_cast<int>(it - indices.begin());
}

bool Expression::IsOutputIndex(const std::string& index) const {
  const auto& out = output().indices;
  return std::find(out.begin(), out.end(), index) != out.end();
}

bool Expression::IsSparseIndex(const std::string& index) const {
  const auto& modes = sparse_input().indices;
  return std::find(modes.begin(), modes.end(), index) != modes.end();
}

std::vector<std::string> Expression::DenseOnlyIndices() const {
  std::vector<std::string> out;
  for (const auto& index : indices) {
    if (!IsSparseIndex(index)) out.push_back(index);
  }
  return out;
}

Expression BuildExpression(std::string_view text, const std::string& what,
                           const std::string& sparse_name, SparseOutput sparse_output) {
  Assignment a = ParseAssignment(text, what);
  auto fail = [&](int column, const std::string& cause) -> void {
    throw InputError(what + ": column " + std::to_string(column) + ": " + cause);
  };
  if (a.accumulate) fail(a.lhs.column, "use '=' in an expression; '+=' is for schedule trees");

  Expression e;
  std::set<std::string> names;
  e.tensors.push_back({a.lhs.tensor, a.lhs.indices, TensorRole::kDenseOutput});
  names.insert(a.lhs.tensor);
  for (const Access& f : a.factors) {
    if (!names.insert(f.tensor).second) {
      fail(f.column, "tensor " + f.tensor +
                         (f.tensor == a.lhs.tensor ? " is both the output and an input"
                                                   : " appears twice; name each operand once"));
    }
    e.tensors.push_back({f.tensor, f.indices, TensorRole::kDenseInput});
  }
  for (const auto& t : e.tensors) {
    for (const auto& index : t.indices) {
      if (e.IndexId(index) < 0) e.indices.push_back(index);
    }
  }
  // Every output index must be produced by some input.
  for (const auto& index : a.lhs.indices) {
    bool found = false;
    for (const Access& f : a.factors) {
      found |= std::find(f.indices.begin(), f.indices.end(), index) != f.indices.end();
    }
    if (!found) fail(a.lhs.column, "output index " + index + " appears in no input");
  }

  // The sparse operand.
  if (sparse_name.empty()) {
    e.sparse = 1;
  } else {
    e.sparse = e.TensorId(sparse_name);
    if (e.sparse < 0) {
      throw InputError(what + ": --sparse names " + sparse_name +
                       ", which is not a tensor of the expression");
    }
    if (e.sparse == 0) {
      throw InputError(what + ": --sparse names the output " + sparse_name +
                       "; the sparse operand must be an input");
    }
  }
  TensorInfo& sparse = e.tensors[e.sparse];
  sparse.role = TensorRole::kSparseInput;
  if (sparse.indices.empty()) {
    fail(a.factors[e.sparse - 1].column, "the sparse operand " + sparse.name + " has no indices");
  }

  // Does the output follow the sparse pattern?
  const auto& out = e.tensors[0].indices;
  size_t prefix = 0;
  while (prefix < out.size() && prefix < sparse.indices.size() &&
         out[prefix] == sparse.indices[prefix]) {
    ++prefix;
  }
  const bool same_pattern = prefix == sparse.indices.size() && out.size() == prefix;
  if (sparse_output == SparseOutput::kYes) {
    if (prefix == 0) {
      fail(a.lhs.column, "a sparse output must start with the sparse operand's leading indices (" +
                             sparse.indices[0] + ")");
    }
    e.sparse_output_prefix = static_cast<int>(prefix);
  } else if (sparse_output == SparseOutput::kAuto && same_pattern) {
    e.sparse_output_prefix = static_cast<int>(prefix);
  }
  if (e.sparse_output_prefix > 0) e.tensors[0].role = TensorRole::kSparseOutput;

  // Canonical text.
  e.text = AccessText(e.tensors[0].name, e.tensors[0].indices) + " = ";
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    e.text += (t > 1 ? " * " : "") + AccessText(e.tensors[t].name, e.tensors[t].indices);
  }
  return e;
}

std::map<std::string, int64_t> DenseOnlySizes(const Expression& e,
                                              const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> dense;
  for (const auto& index : e.DenseOnlyIndices()) dense[index] = sizes.at(index);
  return dense;
}

std::map<std::string, int64_t> ResolveIndexSizes(const Expression& e,
                                                 const std::vector<int64_t>& sparse_dims,
                                                 const std::map<std::string, int64_t>& dense) {
  const auto& modes = e.sparse_input().indices;
  if (sparse_dims.size() != modes.size()) {
    throw InputError("the sparse operand " + e.sparse_input().name + " has " +
                     std::to_string(modes.size()) + " indices but the tensor file has order " +
                     std::to_string(sparse_dims.size()));
  }
  std::map<std::string, int64_t> sizes;
  for (size_t m = 0; m < modes.size(); ++m) sizes[modes[m]] = sparse_dims[m];
  for (const auto& [index, size] : dense) {
    if (e.IndexId(index) < 0) {
      throw InputError("--dense " + index + "=" + std::to_string(size) +
                       ": the expression has no index " + index);
    }
    if (sizes.count(index)) {
      if (sizes[index] != size) {
        throw InputError("--dense " + index + "=" + std::to_string(size) + ": index " + index +
                         " is a mode of the sparse operand, whose size is " +
                         std::to_string(sizes[index]));
      }
      continue;
    }
    if (size < 1) throw InputError("--dense " + index + ": size must be at least 1");
    sizes[index] = size;
  }
  for (const auto& index : e.indices) {
    if (!sizes.count(index)) {
      throw InputError("index " + index + " has no size: give it with --dense " + index + "=N");
    }
  }
  return sizes;
}

std::map<std::string, int64_t> ParseDenseSizes(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> sizes;
  for (const auto& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      size_t end = item.find(',', start);
      if (end == std::string::npos) end = item.size();
      std::string part = item.substr(start, end - start);
      const size_t eq = part.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
        throw InputError("--dense " + item + ": expected INDEX=SIZE, such as j=256");
      }
      const std::string index = part.substr(0, eq);
      const std::string value = part.substr(eq + 1);
      int64_t size = 0;
      for (char c : value) {
        if (!std::isdigit(static_cast<unsigned char>(c)) || size > (int64_t(1) << 40)) {
          throw InputError("--dense " + item + ": size of " + index + " is not a positive integer");
        }
        size = size * 10 + (c - '0');
      }
      if (size < 1)
        throw InputError("--dense " + item + ": size of " + index + " must be at least 1");
      sizes[index] = size;
      start = end + 1;
    }
  }
  return sizes;
}

}  // namespace sparsetune
