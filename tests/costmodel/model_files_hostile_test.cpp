// A model folder from elsewhere is checked before it is used: every schedule of its set keeps
// the template's form and ScheduleLimits (an unknown format letter, or a split the encoding
// would loop on, names the file and line), and a manifest that does not fit says what differs.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/cli_support.hpp"
#include "costmodel/model_files.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

const std::string kModels = std::string(SPARSETUNE_SOURCE_DIR) + "/models/";

void WriteGz(const std::string& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  gzwrite(out, text.data(), static_cast<unsigned>(text.size()));
  gzclose(out);
}

std::string Refusal(const std::string& path, const WacoTemplate& waco) {
  try {
    ReadScheduleSet(path, waco);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFiles, TheShippedSchedulesSetsAllPass) {
  for (const char* kernel : {"spmv", "spmm", "sddmm", "mttkrp"}) {
    const std::string path = kModels + kernel + "/" + kModelSchedules;
    if (!fs::exists(path)) continue;
    const auto waco = WacoTemplate::ForKernel(kernel);
    ASSERT_NE(waco, nullptr);
    EXPECT_GT(ReadScheduleSet(path, *waco).size(), 100u) << kernel;
  }
}

TEST(ModelFiles, ABadScheduleInASetIsRefusedNamingItsLine) {
  testing::TempDir dir;
  const auto waco = WacoTemplate::ForKernel("spmv");
  const std::string good =
      R"({"chunk":1,"formats":["U","U","C","C"],"narrow":true,"order":["i1","i0","k1","k0"],)"
      R"("parallel":"i1","partition":"balanced","splits":{"i":1,"k":4},"threads":1,)"
      R"("transposed":false,"unroll":4})";
  auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    line.replace(line.find(from), from.size(), to);
    return line;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Was read as compressed.
      {with("[\"U\",\"U\",\"C\",\"C\"]", "[\"U\",\"U\",\"X\",\"C\"]"),
       ":2: format \"X\" is not U, C or S"},
      // The encoding's logarithm looped forever on it.
      {with("\"k\":4", "\"k\":4611686018427387904"),
       ":2: not a valid spmv SuperSchedule: split of k is 4611686018427387904"},
      {with("\"k\":4", "\"k\":3"), "split of k is 3"},
      {with("\"k\":4", "\"j\":4"), "no split for k"},
      {with("\"k0\"]", "\"x0\"]"), "the order must list every variable of the template once"},
      {with("\"parallel\":\"i1\"", "\"parallel\":\"q\""), "the parallel variable"},
      {with("\"chunk\":1", "\"chunk\":2147483648"), "chunk 2147483648 is not a power of two up to"},
      {with("\"threads\":1", "\"threads\":-3"), "threads -3 is out of range"},
  };
  for (const auto& [line, cause] : cases) {
    const std::string path = dir.path() + "/set.jsonl.gz";
    WriteGz(path, good + "\n" + line + "\n");
    const std::string message = Refusal(path, *waco);
    EXPECT_EQ(message.rfind(path, 0), 0u) << message;
    EXPECT_NE(message.find(cause), std::string::npos) << "gave: " << message << "\nwant: " << cause;
  }
  WriteGz(dir.path() + "/good.jsonl.gz", good + "\n");
  EXPECT_EQ(Refusal(dir.path() + "/good.jsonl.gz", *waco), "");
}

// A manifest for the same template version but another encoding said "trained on version 4;
// this sparsetune has version 4".
TEST(ModelFiles, AManifestThatDoesNotFitSaysWhatDiffers) {
  const std::string shipped = kModels + "spmv/" + kModelManifest;
  if (!fs::exists(shipped)) GTEST_SKIP() << "no shipped spmv model";
  std::ifstream in(shipped);
  const nlohmann::json manifest = nlohmann::json::parse(in);
  testing::TempDir dir;
  for (const char* file : {kModelWacoNet, kModelEmbedder, kModelHead, kModelSchedules})
    std::ofstream(dir.path() + "/" + file) << "x";
  auto message = [&](const nlohmann::json& m) -> std::string {
    std::ofstream(dir.path() + "/" + kModelManifest) << m.dump();
    try {
      ReadModelManifest(dir.path(), "spmv");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(manifest), "");
  const int version = WacoTemplate::Version();
  nlohmann::json other_layout = manifest;
  other_layout["layout"]["cardinalities"][0] = 16;
  const std::string layout = message(other_layout);
  EXPECT_NE(layout.find("the model's schedule encoding (split_i:16 "), std::string::npos) << layout;
  EXPECT_NE(layout.find("differs from this sparsetune's for template version " +
                        std::to_string(version) + " (split_i:17 "),
            std::string::npos)
      << layout;
  EXPECT_EQ(layout.find("trained on template version"), std::string::npos) << layout;
  nlohmann::json old_version = manifest;
  old_version["template_version"] = version - 1;
  const std::string versions = message(old_version);
  EXPECT_NE(versions.find("trained on template version " + std::to_string(version - 1) +
                          "; this sparsetune has version " + std::to_string(version)),
            std::string::npos)
      << versions;
}

// How many picks a tune measures comes from the manifest's tune_top_k, else 10; a bad value
// is refused naming the manifest.
TEST(ModelFiles, TheManifestSaysHowManyPicksATuneMeasures) {
  EXPECT_EQ(ModelTopK(kModels + "sddmm"), 30);
  EXPECT_EQ(ModelTopK(kModels + "spmm"), kDefaultTopK);
  EXPECT_EQ(ModelTopK(""), kDefaultTopK);
  testing::TempDir dir;
  EXPECT_EQ(ModelTopK(dir.path()), kDefaultTopK);  // no manifest
  std::ifstream in(kModels + "spmv/" + kModelManifest);
  nlohmann::json manifest = nlohmann::json::parse(in);
  for (const char* file : {kModelWacoNet, kModelEmbedder, kModelHead, kModelSchedules})
    std::ofstream(dir.path() + "/" + file) << "x";
  manifest["tune_top_k"] = 4;
  std::ofstream(dir.path() + "/" + kModelManifest) << manifest.dump();
  EXPECT_EQ(ModelTopK(dir.path()), 4);
  EXPECT_EQ(ReadModelManifest(dir.path(), "spmv").tune_top_k, 4);
  EXPECT_EQ(ReadModelManifest(dir.path(), "spmv").ToJson()["tune_top_k"], 4);
  manifest["tune_top_k"] = -2;
  std::ofstream(dir.path() + "/" + kModelManifest) << manifest.dump();
  EXPECT_EQ(ModelTopK(dir.path()), kDefaultTopK);
  try {
    ReadModelManifest(dir.path(), "spmv");
    ADD_FAILURE() << "a negative tune_top_k was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(kModelManifest), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tune_top_k"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsetune
