// What collect, batch and training run over: manifests, lists and directories.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/errors.hpp"
#include "io/inputs.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

class InputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("sparsetune_inputs_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "checkout/datasets/corpus");
    fs::create_directories(dir_ / "shared/datasets/matrices");
    fs::create_directories(dir_ / "cache/files");
    setenv("SPARSETUNE_SHARED_DATASETS", (dir_ / "shared/datasets").c_str(), 1);
    setenv("SPARSETUNE_CORPUS_CACHE", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SPARSETUNE_SHARED_DATASETS");
    unsetenv("SPARSETUNE_CORPUS_CACHE");
    fs::remove_all(dir_);
  }
  std::string Write(const std::string& relative, const std::string& text) {
    const fs::path p = dir_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

// The InputError that expanding `path` throws, for its line and message.
InputError ExpansionError(const std::string& path) {
  try {
    ExpandInputPaths({path}, "spmv");
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expanding " << path << " must fail";
  return InputError("none");
}

TEST_F(InputsTest, ManifestEntriesOfTheKernelWithTheirOrigins) {
  const std::string real = Write("shared/datasets/matrices/a.mtx", "x");
  const std::string generated = Write("cache/files/g1_uniform.mtx", "x");
  Write("cache/files/t1.tns", "x");
  const std::string manifest = Write("checkout/datasets/corpus/corpus.tsv",
                                     "# comment\n"
                                     "name\tkernels\tnnz\tsource\n"
                                     "a\tspmv,spmm\t10\tshared:matrices/a.mtx\n"
                                     "g1_uniform\tspmv\t20\tgen uniform --rows 9 --seed 3\n"
                                     "t1\tmttkrp\t30\tgen tensor3 --seed 4\n");
  const auto spmv = ExpandInputPaths({manifest}, "spmv");
  ASSERT_EQ(spmv.size(), 2u);
  EXPECT_EQ(fs::path(spmv[0].path), fs::path(real));
  EXPECT_EQ(spmv[0].origin, "shared:matrices/a.mtx");
  EXPECT_EQ(fs::path(spmv[1].path), fs::path(generated));
  EXPECT_EQ(spmv[1].origin, "gen uniform --rows 9 --seed 3");
  const auto mttkrp = ExpandInputPaths({manifest}, "mttkrp");
  ASSERT_EQ(mttkrp.size(), 1u);
  EXPECT_EQ(fs::path(mttkrp[0].path).filename(), "t1.tns");
  EXPECT_THROW(ExpandInputPaths({manifest}, "sddmm"), InputError);  // nothing to collect
}

TEST_F(InputsTest, ManifestErrorsNameTheLine) {
  const std::string manifest = Write("checkout/datasets/corpus/corpus.tsv",
                                     "name\tkernels\tnnz\tsource\n"
                                     "g2\tspmv\t20\tgen banded --seed 1\n");
  const InputError missing = ExpansionError(manifest);  // a generated file not made yet
  EXPECT_EQ(missing.line(), 2);
  EXPECT_NE(std::string(missing.what()).find("--materialize-only"), std::string::npos)
      << missing.what();
  const std::string bad = Write("checkout/datasets/corpus/bad.tsv", "a\tb\n");
  EXPECT_EQ(ExpansionError(bad).line(), 1);  // no header
}

TEST_F(InputsTest, ListsResolveRelativeToTheirFolderAndKeepOrigins) {
  Write("lists/m/one.mtx", "x");
  Write("lists/m/two.mtx", "x");
  const std::string list =
      Write("lists/batch.list", "# two files\nm/one.mtx\r\nm/two.mtx\tgen stencil2d --seed 7\n\n");
  const auto files = ExpandInputPaths({list}, "spmv");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files[0].path), dir_ / "lists/m/one.mtx");
  EXPECT_EQ(files[0].origin, files[0].path);
  EXPECT_EQ(files[1].origin, "gen stencil2d --seed 7");
  const std::string broken = Write("lists/broken.list", "m/one.mtx\nm/three.mtx\n");
  EXPECT_EQ(ExpansionError(broken).line(), 2);  // m/three.mtx does not exist
}

TEST_F(InputsTest, DirectoriesGiveTheirMatrixFilesSorted) {
  Write("dir/b.mtx.gz", "x");
  Write("dir/sub/a.tns", "x");
  Write("dir/a.mtx", "x");
  Write("dir/notes.md", "x");
  Write("dir/c.tgz", "x");  // every name the reader takes, in any letter case
  Write("dir/D.MTX", "x");
  const auto files = ExpandInputPaths({(dir_ / "dir").string()}, "spmv");
  ASSERT_EQ(files.size(), 5u);
  EXPECT_EQ(fs::path(files[0].path).filename(), "D.MTX");
  EXPECT_EQ(fs::path(files[1].path).filename(), "a.mtx");
  EXPECT_EQ(fs::path(files[2].path).filename(), "b.mtx.gz");
  EXPECT_EQ(fs::path(files[3].path).filename(), "c.tgz");
  EXPECT_EQ(fs::path(files[4].path).filename(), "a.tns");
  EXPECT_THROW(ExpandInputPaths({(dir_ / "missing.mtx").string()}, "spmv"), InputError);
}

TEST(MatrixName, DropsMatrixAndTensorExtensions) {
  EXPECT_EQ(MatrixNameOf("/x/bcsstk01.mtx.gz"), "bcsstk01");
  EXPECT_EQ(MatrixNameOf("HB/west0479.tar.gz"), "west0479");
  EXPECT_EQ(MatrixNameOf("HB/west0479.tgz"), "west0479");
  EXPECT_EQ(MatrixNameOf("nell-2.tns"), "nell-2");
}

}  // namespace
}  // namespace sparsetune
