// The index-notation parser and the named kernels: every kernel's expression parses to the
// tensors, indices and sparse operand it describes, and bad expressions are refused with the
// column and the cause.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "ir/kernels.hpp"

namespace sparsetune {
namespace {

struct ExpectedTensor {
  std::string name;
  std::vector<std::string> indices;
};

struct ExpectedKernel {
  std::vector<ExpectedTensor> tensors;  // output first
  std::vector<std::string> indices;     // in order of first appearance
  std::string sparse;
  int sparse_output_prefix = 0;
};

// Written out from DESIGN.md's kernel table, independently of kernels.cpp.
const std::map<std::string, ExpectedKernel>& Expected() {
  static const std::map<std::string, ExpectedKernel> expected = {
      {"spmv", {{{"y", {"i"}}, {"A", {"i", "k"}}, {"x", {"k"}}}, {"i", "k"}, "A", 0}},
      {"spmm",
       {{{"C", {"i", "j"}}, {"A", {"i", "k"}}, {"B", {"k", "j"}}}, {"i", "j", "k"}, "A", 0}},
      {"sddmm",
       {{{"D", {"i", "j"}}, {"A", {"i", "j"}}, {"B", {"i", "k"}}, {"C", {"k", "j"}}},
        {"i", "j", "k"},
        "A",
        2}},
      // Not in DESIGN.md's table: SDDMM with C given as C^T (the README's kernel list).
      {"sddmm_nt",
       {{{"D", {"i", "j"}}, {"A", {"i", "j"}}, {"B", {"i", "k"}}, {"C", {"j", "k"}}},
        {"i", "j", "k"},
        "A",
        2}},
      {"mttkrp",
       {{{"D", {"i", "j"}}, {"A", {"i", "k", "l"}}, {"B", {"k", "j"}}, {"C", {"l", "j"}}},
        {"i", "j", "k", "l"},
        "A",
        0}},
      {"ttm",
       {{{"A", {"i", "j", "l"}}, {"B", {"i", "j", "k"}}, {"C", {"k", "l"}}},
        {"i", "j", "l", "k"},
        "B",
        0}},
      {"ttmc",
       {{{"A", {"l", "m", "n"}},
         {"B", {"i", "j", "k"}},
         {"C", {"i", "l"}},
         {"D", {"j", "m"}},
         {"E", {"k", "n"}}},
        {"l", "m", "n", "i", "j", "k"},
        "B",
        0}},
      {"sddmm_spmm",
       {{{"A", {"i", "l"}},
         {"B", {"i", "j"}},
         {"C", {"i", "k"}},
         {"D", {"j", "k"}},
         {"E", {"j", "l"}}},
        {"i", "l", "j", "k"},
        "B",
        0}},
      {"sddmm_spmm_gemm",
       {{{"A", {"i", "m"}},
         {"B", {"i", "j"}},
         {"C", {"i", "k"}},
         {"D", {"j", "k"}},
         {"E", {"j", "l"}},
         {"F", {"l", "m"}}},
        {"i", "m", "j", "k", "l"},
        "B",
        0}},
      {"hadamard_gemm",
       {{{"A", {"i", "l"}},
         {"B", {"i", "j"}},
         {"C", {"j", "k"}},
         {"D", {"j", "k"}},
         {"E", {"k", "l"}}},
        {"i", "l", "j", "k"},
        "B",
        0}},
      {"spmm_gemm",
       {{{"A", {"i", "l"}}, {"B", {"i", "j"}}, {"C", {"j", "k"}}, {"D", {"k", "l"}}},
        {"i", "l", "j", "k"},
        "B",
        0}},
      {"spttm_ttm",
       {{{"A", {"i", "l", "m"}}, {"B", {"i", "j", "k"}}, {"C", {"j", "l"}}, {"D", {"k", "m"}}},
        {"i", "l", "m", "j", "k"},
        "B",
        0}},
      {"spttm_spttm",
       {{{"A", {"i", "j", "m"}}, {"B", {"i", "j", "k"}}, {"C", {"k", "l"}}, {"D", {"l", "m"}}},
        {"i", "j", "m", "k", "l"},
        "B",
        2}},
      {"mttkrp_gemm",
       {{{"A", {"i", "m"}},
         {"B", {"i", "k", "l"}},
         {"C", {"l", "j"}},
         {"D", {"k", "j"}},
         {"E", {"j", "m"}}},
        {"i", "m", "k", "l", "j"},
        "B",
        0}},
  };
  return expected;
}

TEST(Kernels, EveryNamedKernelParsesToItsTensorsAndIndices) {
  ASSERT_EQ(KernelLibrary().size(), Expected().size()) << KnownKernelNames();
  for (const KernelDef& k : KernelLibrary()) {
    SCOPED_TRACE(k.name);
    auto it = Expected().find(k.name);
    ASSERT_NE(it, Expected().end()) << "no expectation for kernel " << k.name;
    const ExpectedKernel& want = it->second;
    const Expression e = KernelExpression(k.name);
    ASSERT_EQ(e.tensors.size(), want.tensors.size());
    for (size_t t = 0; t < e.tensors.size(); ++t) {
      EXPECT_EQ(e.tensors[t].name, want.tensors[t].name) << "tensor " << t;
      EXPECT_EQ(e.tensors[t].indices, want.tensors[t].indices) << e.tensors[t].name;
      EXPECT_EQ(e.TensorId(want.tensors[t].name), static_cast<int>(t));
    }
    EXPECT_EQ(e.indices, want.indices);
    EXPECT_EQ(e.sparse_input().name, want.sparse);
    EXPECT_EQ(e.tensors[e.sparse].role, TensorRole::kSparseInput);
    EXPECT_EQ(e.sparse_output_prefix, want.sparse_output_prefix);
    EXPECT_EQ(e.output().role,
              want.sparse_output_prefix > 0 ? TensorRole::kSparseOutput : TensorRole::kDenseOutput);
    for (size_t t = 1; t < e.tensors.size(); ++t) {
      if (static_cast<int>(t) != e.sparse) EXPECT_EQ(e.tensors[t].role, TensorRole::kDenseInput);
    }
    // The canonical text is the expression as written in the library.
    EXPECT_EQ(e.text, k.expression);
    // Every dense-only index has a default size, so the kernel runs without --dense.
    std::vector<int64_t> dims(e.sparse_input().indices.size(), 10);
    const auto sizes = ResolveIndexSizes(e, dims, k.dense_defaults);
    EXPECT_EQ(sizes.size(), e.indices.size());
    for (const auto& index : e.DenseOnlyIndices())
      EXPECT_TRUE(k.dense_defaults.count(index)) << index;
  }
}

TEST(Kernels, UnknownKernelListsTheKnownOnes) {
  EXPECT_EQ(FindKernel("spmx"), nullptr);
  try {
    KernelExpression("spmx");
    FAIL() << "no error";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("unknown kernel 'spmx'"), std::string::npos) << message;
    EXPECT_NE(message.find("spmv, spmm, sddmm, sddmm_nt, mttkrp"), std::string::npos) << message;
  }
}

TEST(Expression, ParsesSpacingScalarsAndAccumulation) {
  const Assignment a = ParseAssignment("  y ( i )+=A(i , k)*x(k)  ", "text");
  EXPECT_TRUE(a.accumulate);
  EXPECT_EQ(a.lhs.tensor, "y");
  EXPECT_EQ(a.lhs.indices, std::vector<std::string>{"i"});
  ASSERT_EQ(a.factors.size(), 2u);
  EXPECT_EQ(a.factors[0].tensor, "A");
  EXPECT_EQ(a.factors[0].indices, (std::vector<std::string>{"i", "k"}));
  EXPECT_EQ(a.factors[0].column, 12);  // 1-based, where the access starts
  EXPECT_EQ(a.factors[1].column, 21);
  // A scalar output and a scalar factor.
  const Assignment s = ParseAssignment("t = B(i_1,j2) * s", "text");
  EXPECT_TRUE(s.lhs.indices.empty());
  EXPECT_EQ(s.factors[0].indices, (std::vector<std::string>{"i_1", "j2"}));
  EXPECT_TRUE(s.factors[1].indices.empty());
  const Access t = ParseAccess(" T(l, m) ", "temp");
  EXPECT_EQ(t.tensor, "T");
  EXPECT_EQ(t.indices, (std::vector<std::string>{"l", "m"}));
}

TEST(Expression, SparseOperandByNameAndCanonicalText) {
  const Expression e =
      BuildExpression("A(i,l)=B(i,j)*C(j,k)*D(k,l)", "--expr", "C", SparseOutput::kAuto);
  EXPECT_EQ(e.sparse_input().name, "C");
  EXPECT_EQ(e.text, "A(i,l) = B(i,j) * C(j,k) * D(k,l)");
  EXPECT_EQ(e.DenseOnlyIndices(), (std::vector<std::string>{"i", "l"}));
  EXPECT_TRUE(e.IsSparseIndex("j"));
  EXPECT_FALSE(e.IsOutputIndex("k"));
  // An output that shares the sparse operand's pattern is sparse unless told otherwise.
  EXPECT_EQ(BuildExpression("D(i,j) = A(i,j) * B(i,k) * C(k,j)", "x").sparse_output_prefix, 2);
  EXPECT_EQ(BuildExpression("D(i,j) = A(i,j) * B(i,k) * C(k,j)", "x", "", SparseOutput::kNo)
                .sparse_output_prefix,
            0);
}

// A bad expression names its source, the column (1-based) and the cause.
struct BadExpression {
  std::string label;
  std::string text;
  int column;
  std::string cause;
};

std::string ErrorOf(const std::string& text, const std::string& sparse = "") {
  try {
    BuildExpression(text, "--expr", sparse);
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(Expression, BadExpressionsSayWhatAndWhere) {
  const std::vector<BadExpression> cases = {
      {"empty", "", 1, "expected a tensor name, found the end"},
      {"blank", "   ", 4, "expected a tensor name, found the end"},
      {"no right-hand side", "y(i) =", 7, "expected a tensor name, found the end"},
      {"no '='", "y(i) A(i,k)", 6, "expected '=' after the output access"},
      {"unclosed output", "y(i = A(i,k) * x(k)", 5, "expected ',' or ')' in the indices of y"},
      {"unclosed factor", "y(i) = A(i,k * x(k)", 14, "expected ',' or ')' in the indices of A"},
      {"unclosed at the end", "y(i) = A(i,k) * x(k", 20, "expected ',' or ')' in the indices of x"},
      {"extra ')'", "y(i) = A(i,k)) * x(k)", 14, "unexpected ')'"},
      {"parenthesized product", "y(i) = (A(i,k) * x(k))", 8, "expected a tensor name, found '('"},
      {"sum", "y(i) = A(i,k) + x(k)", 15, "unexpected '+' (only products"},
      {"unknown character", "y(i) = A(i,k) * x(k) $", 22, "unexpected '$'"},
      {"unknown character in indices", "y(i) = A(i,k;) * x(k)", 13,
       "expected ',' or ')' in the indices of A"},
      {"constant factor", "y(i) = 2 * A(i,k) * x(k)", 8, "expected a tensor name, found '2'"},
      {"empty index", "y(i) = A(i,) * x(k)", 12, "expected an index name, found ')'"},
      {"trailing '*'", "y(i) = A(i,k) * x(k) *", 23, "expected a tensor name, found the end"},
      {"repeated index", "y(i) = A(i, i) * x(i)", 13, "index i is repeated in A"},
      {"'+=' in an expression", "y(i) += A(i,k) * x(k)", 1, "use '=' in an expression"},
      {"output index not on the right", "y(i,j) = A(i,k) * x(k)", 1,
       "output index j appears in no input"},
      {"tensor twice, same order", "y(i) = A(i,k) * A(i,k)", 17,
       "tensor A appears twice; name each operand once"},
      {"tensor twice, other order", "y(i) = A(i,k) * A(k)", 17,
       "tensor A appears twice; name each operand once"},
      {"output as input", "y(i) = A(i,k) * y(k)", 17, "tensor y is both the output and an input"},
      {"scalar sparse operand", "y(i) = s * A(i,k)", 8, "the sparse operand s has no indices"},
  };
  for (const auto& c : cases) {
    const std::string message = ErrorOf(c.text);
    const std::string want = "--expr: column " + std::to_string(c.column) + ": " + c.cause;
    EXPECT_EQ(message.substr(0, want.size()), want) << c.label << ": \"" << c.text << "\"";
  }
}

TEST(Expression, SparseNameMustBeAnInput) {
  EXPECT_NE(ErrorOf("y(i) = A(i,k) * x(k)", "Q").find("--sparse names Q, which is not a tensor"),
            std::string::npos);
  EXPECT_NE(ErrorOf("y(i) = A(i,k) * x(k)", "y").find("--sparse names the output y"),
            std::string::npos);
}

// A character outside ASCII is quoted whole, and bytes that are no character are escaped, so
// the message stays valid UTF-8 (it may end up in JSON output, which refuses broken UTF-8).
TEST(Expression, NonAsciiCharactersKeepTheMessageValidUtf8) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"y(i) = A(i,k) \xc3\x97 x(k)", "'\xc3\x97'"},          // U+00D7, two bytes
      {"y(i) = A(i,k) \xe2\x8b\x85 x(k)", "'\xe2\x8b\x85'"},  // U+22C5, three bytes
      {"y(i) = A(i,k) \xe2\x8b", "'\\xe2'"},                  // cut short
      {"y(i) = A(i,k) \xff x(k)", "'\\xff'"},                 // never in UTF-8
      {"y(i) = A(i,k) \x01 x(k)", "'\\x01'"},                 // a control character
  };
  for (const auto& [text, quoted] : cases) {
    const std::string message = ErrorOf(text);
    EXPECT_NE(message.find("column 15: unexpected " + quoted), std::string::npos) << message;
    EXPECT_NO_THROW(nlohmann::json(message).dump()) << message;
  }
  // Where a name is expected too.
  const std::string index_message = ErrorOf("y(i) = A(\xc3\xa9,k) * x(k)");
  EXPECT_NE(index_message.find("column 10: expected an index name, found '\xc3\xa9'"),
            std::string::npos)
      << index_message;
}

TEST(Expression, IndexSizesFromTheTensorAndDenseSizes) {
  const Expression e = KernelExpression("spmm");
  auto sizes = ResolveIndexSizes(e, {30, 40}, {{"j", 8}});
  EXPECT_EQ(sizes, (std::map<std::string, int64_t>{{"i", 30}, {"j", 8}, {"k", 40}}));
  auto error = [&](std::vector<int64_t> dims, std::map<std::string, int64_t> dense) {
    try {
      ResolveIndexSizes(e, dims, dense);
    } catch (const InputError& err) {
      return std::string(err.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error({30, 40}, {}).find("index j has no size: give it with --dense j=N"),
            std::string::npos);
  EXPECT_NE(error({30, 40, 5}, {{"j", 8}}).find("has 2 indices but the tensor file has order 3"),
            std::string::npos);
  EXPECT_NE(error({30, 40}, {{"j", 8}, {"z", 2}}).find("the expression has no index z"),
            std::string::npos);
  EXPECT_NE(error({30, 40}, {{"j", 8}, {"k", 41}}).find("whose size is 40"), std::string::npos);
  EXPECT_EQ(ParseDenseSizes({"k=128,l=64", "j=3"}),
            (std::map<std::string, int64_t>{{"j", 3}, {"k", 128}, {"l", 64}}));
  for (const std::string bad : {"j", "=3", "j=", "j=-1", "j=0", "j=1x"})
    EXPECT_THROW(ParseDenseSizes({bad}), InputError) << bad;
}

}  // namespace
}  // namespace sparsetune
