#include "costmodel/training_data.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "base/errors.hpp"
#include "db/database.hpp"
#include "io/read.hpp"
#include "tensor/fingerprint.hpp"

namespace sparsetune {

namespace fs = std::filesystem;

namespace {

// Validation files (relative to the shared folder), one per line; '#' starts a comment.
std::vector<std::string> ReadValidationList(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  std::ifstream in(list);
  if (!in) throw InputError(list, 0, "cannot open the validation list");
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    line = line.substr(0, line.find('\t'));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string ResolvePattern(const MatrixRecord& m, const TrainOptions& o) {
  const std::string& source = m.source_path;
  if (source.rfind("shared:", 0) == 0) return (fs::path(o.shared_dir) / source.substr(7)).string();
  if (source.rfind("gen ", 0) == 0) {
    const bool tensor = source.find("tensor3") != std::string::npos;
    return (fs::path(o.corpus_cache) / "files" / (m.name + (tensor ? ".tns" : ".mtx"))).string();
  }
  return source;
}

}  // namespace

TrainingSet LoadTrainingSet(const TrainOptions& o, const WacoTemplate& waco) {
  auto db = Database::Open(o.db_path, OpenMode::kReadOnly);
  MeasurementFilter filter;
  filter.kernel = o.kernel;
  const std::vector<MeasurementRow> rows = db->Measurements(filter);
  if (rows.empty())
    throw InputError(o.db_path, 0, "no measurements of " + o.kernel + " to train on");

  // Validation: the held-out files' patterns, and any source that names one of them.
  const std::vector<std::string> held_out = ReadValidationList(o.validation_list);
  std::set<std::string> validation_prints;
  for (const auto& relative : held_out) {
    const std::string path = (fs::path(o.shared_dir) / relative).string();
    if (fs::exists(path)) validation_prints.insert(PatternFingerprint(ReadTensorFile(path)));
  }
  auto mentions_held_out = [&](const std::string& source) {
    for (const auto& relative : held_out) {
      if (source.find(relative) != std::string::npos) return true;
    }
    return false;
  };

  TrainingSet set;
  std::map<std::string, TrainingMatrix> by_print;
  for (const MeasurementRow& row : rows) {
    if (row.median_ms >= o.max_ms) {
      ++set.dropped_rows;
      continue;
    }
    TrainingMatrix& m = by_print[row.fingerprint];
    m.fingerprint = row.fingerprint;
    if (row.source == "fixed_csr") m.fixed_csr_ms = row.median_ms;
    std::string error;
    const auto point = waco.FromSchedule(
        Schedule::FromJson(nlohmann::json::parse(row.schedule.canonical_json), "database"), &error);
    if (!point) {
      ++set.dropped_rows;
      continue;
    }
    m.points.push_back(*point);
    m.schedules.push_back(waco.Encode(*point));
    m.times.push_back(row.median_ms);
  }
  for (auto& [print, m] : by_print) {
    if (m.times.size() < 2) continue;
    const auto record = db->FindMatrix(print);
    if (!record) continue;
    m.name = record->name;
    m.path = ResolvePattern(*record, o);
    if (!fs::exists(m.path))
      throw InputError(m.path, 0,
                       "the pattern of " + m.name +
                           " is missing (materialize the corpus with "
                           "scripts/collect_training_data.sh --materialize-only)");
    const bool validation = validation_prints.count(print) > 0;
    if (!validation && mentions_held_out(record->source_path)) continue;  // a held-out resize
    (validation ? set.validation : set.train).push_back(std::move(m));
  }
  if (o.max_matrices > 0 && static_cast<int>(set.train.size()) > o.max_matrices)
    set.train.resize(o.max_matrices);
  if (set.train.empty())
    throw InputError(o.db_path, 0, "no training matrices with at least two measurements");
  return set;
}

}  // namespace sparsetune
