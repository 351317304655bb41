// Reads every real matrix and tensor of the shared data set and checks its shape and expanded
// entry count against the manifests.

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <algorithm>

#include "io/read.hpp"

namespace sparsetune {
namespace {

const std::string kDatasets = std::string(SPARSETUNE_SHARED_DIR) + "/datasets";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Rows of a tab-separated manifest as column name -> value.
std::vector<std::map<std::string, std::string>> ReadManifest(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::map<std::string, std::string>> rows;
  std::string line;
  std::vector<std::string> columns;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream stream(line);
    std::string cell;
    while (std::getline(stream, cell, '\t')) cells.push_back(cell);
    if (columns.empty()) {
      columns = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < columns.size() && c < cells.size(); ++c) row[columns[c]] = cells[c];
    rows.push_back(row);
  }
  return rows;
}

TEST(Datasets, EveryMatrixMatchesTheManifest) {
  if (!IsDirectory(kDatasets)) GTEST_SKIP() << "no shared data set at " << kDatasets;
  const auto rows = ReadManifest(kDatasets + "/MANIFEST.tsv");
  ASSERT_FALSE(rows.empty());
  int complex_files = 0;
  for (const auto& row : rows) {
    const std::string name = row.at("name");
    SCOPED_TRACE(name);
    std::vector<std::string> warnings;
    const CooTensor t = ReadTensorFile(kDatasets + "/matrices/" + name + ".mtx", &warnings);
    ASSERT_EQ(t.order(), 2);
    EXPECT_EQ(t.dims[0], std::stoll(row.at("rows")));
    EXPECT_EQ(t.dims[1], std::stoll(row.at("cols")));
    EXPECT_EQ(t.nnz(), std::stoll(row.at("nnz_expanded")));
    EXPECT_EQ(t.duplicates_summed, 0);
    EXPECT_EQ(t.pattern_only, row.at("field") == "pattern");
    EXPECT_STREQ(SymmetryName(t.symmetry), row.at("symmetry").c_str());
    EXPECT_TRUE(t.IsCanonical());
    EXPECT_TRUE(warnings.empty());
    // Complex files keep their imaginary parts, and hold some that are not zero.
    EXPECT_EQ(t.is_complex(), row.at("field") == "complex");
    if (t.is_complex()) {
      ++complex_files;
      EXPECT_TRUE(std::any_of(t.imag.begin(), t.imag.end(), [](double v) { return v != 0; }));
    }
  }
  EXPECT_GT(complex_files, 0);
}

TEST(Datasets, EveryTensorMatchesTheManifest) {
  if (!IsDirectory(kDatasets + "/tensors")) {
    GTEST_SKIP() << "no shared tensors at " << kDatasets << "/tensors";
  }
  const auto rows = ReadManifest(kDatasets + "/tensors/MANIFEST.tsv");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const std::string name = row.at("name");
    SCOPED_TRACE(name);
    const CooTensor t = ReadTensorFile(kDatasets + "/tensors/" + name + ".tns");
    EXPECT_EQ(t.order(), std::stoi(row.at("order")));
    std::string dims;
    for (size_t m = 0; m < t.dims.size(); ++m) dims += (m ? "x" : "") + std::to_string(t.dims[m]);
    EXPECT_EQ(dims, row.at("dims"));
    EXPECT_EQ(t.nnz(), std::stoll(row.at("nnz")));
  }
}

}  // namespace
}  // namespace sparsetune
