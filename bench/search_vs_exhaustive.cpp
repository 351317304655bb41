// The HNSW search against exhaustive scoring of the model's whole schedule set: for each
// matrix, the overlap of the two top-10 lists and the share of the set the search scored, at
// several beam widths (ef). The search is worth having when it finds (nearly) the same top 10
// as scoring everything, for a small share of the evaluations.
//
// Usage: search_vs_exhaustive MODEL_DIR KERNEL FILE... [--k 10] [--ef 50,100,200,400]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "base/paths.hpp"
#include "costmodel/cost_model.hpp"
#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "search/schedule_index.hpp"
#include "superschedule/waco_template.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

struct Totals {
  double overlap = 0, evaluated = 0, ms = 0;
  int matrices = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace sparsetune;
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: search_vs_exhaustive MODEL_DIR KERNEL FILE... [--k 10] "
                 "[--ef 50,100,200,400]\n");
    return 2;
  }
  const std::string model_dir = argv[1], kernel = argv[2];
  std::vector<std::string> files;
  int k = 10;
  std::vector<int> efs = {50, 100, 200, 400};
  for (int a = 3; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--k" && a + 1 < argc) {
      k = std::max(1, std::atoi(argv[++a]));
    } else if (arg == "--ef" && a + 1 < argc) {
      efs = ParseList(argv[++a]);
    } else {
      files.push_back(arg);
    }
  }
  try {
    auto model = LoadCostModel(model_dir, kernel);
    auto waco = WacoTemplate::ForKernel(kernel);
    const Expression expression = KernelExpression(kernel);
    const KernelDef& def = *FindKernel(kernel);
    const auto& set = model->schedule_set();
    std::printf("%s: %zu schedules in the set; top %d; %zu matrices\n", kernel.c_str(), set.size(),
                k, files.size());
    std::vector<std::unique_ptr<ScheduleIndex>> indexes;
    for (int ef : efs) {
      SearchOptions options;
      options.ef = ef;
      indexes.push_back(ScheduleIndex::Open(*model, CacheDirectory() + "/search", options));
    }
    std::vector<Totals> totals(efs.size());
    Totals exhaustive;
    std::printf("%-28s %7s %10s", "matrix", "valid", "exhaustive");
    for (int ef : efs) std::printf("   ef=%-4d overlap  scored", ef);
    std::printf("\n");
    for (const std::string& file : files) {
      const CooTensor tensor = ReadTensorFile(file);
      const auto sizes = ResolveIndexSizes(expression, tensor.dims, def.dense_defaults);
      std::vector<char> valid(set.size());
      int64_t valid_count = 0;
      for (size_t s = 0; s < set.size(); ++s)
        valid_count += valid[s] = waco->CheckMember(set[s], sizes).empty();
      const auto is_valid = [&](size_t s) { return valid[s] != 0; };
      const std::vector<float> embedding = model->EmbedMatrix(tensor);
      auto start = Clock::now();
      const auto best = indexes[0]->Exhaustive(embedding, k, is_valid);
      const double exhaustive_ms = sparsetune::MsSince(start);
      exhaustive.ms += exhaustive_ms;
      ++exhaustive.matrices;
      std::set<size_t> truth;
      for (const auto& r : best) truth.insert(r.index);
      std::string name = file.substr(file.find_last_of('/') + 1);
      std::printf("%-28s %7lld %8.1fms", name.substr(0, 28).c_str(), (long long)valid_count,
                  exhaustive_ms);
      for (size_t e = 0; e < efs.size(); ++e) {
        int64_t evaluations = 0;
        start = Clock::now();
        const auto found = indexes[e]->Search(embedding, k, is_valid, &evaluations);
        totals[e].ms += sparsetune::MsSince(start);
        int hits = 0;
        for (const auto& r : found) hits += truth.count(r.index) > 0;
        const double overlap = truth.empty() ? 1.0 : double(hits) / double(truth.size());
        const double scored = double(evaluations) / double(set.size());
        totals[e].overlap += overlap;
        totals[e].evaluated += scored;
        ++totals[e].matrices;
        std::printf("   %13.0f%% %6.1f%%", 100 * overlap, 100 * scored);
      }
      std::printf("\n");
    }
    std::printf("%-28s %7s %8.1fms", "mean", "", exhaustive.ms / std::max(1, exhaustive.matrices));
    for (const Totals& t : totals) {
      const double n = std::max(1, t.matrices);
      std::printf("   %13.1f%% %6.1f%%", 100 * t.overlap / n, 100 * t.evaluated / n);
    }
    std::printf("\n%-28s %7s %10s", "search ms (mean)", "", "");
    for (const Totals& t : totals) std::printf("   %20.2f", t.ms / std::max(1, t.matrices));
    std::printf("\n");
  } catch (const InputError& e) {
    std::fprintf(stderr, "search_vs_exhaustive: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "search_vs_exhaustive: %s\n", e.what());
    return 3;
  }
  return 0;
}
