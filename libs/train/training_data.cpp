#include "train/training_data.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "db/database.hpp"
#include "io/inputs.hpp"
#include "io/read.hpp"
#include "tensor/fingerprint.hpp"

namespace sparsetune {

namespace fs = std::filesystem;

namespace {

// Validation entries, one per line: files relative to the shared folder (or absolute), or
// corpus:NAME for an entry of the corpus; '#' starts a comment, a tab ends the entry.
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

// Whether a matrix's source is a held-out file or is made from one (a resize names it).
bool NamesFile(const std::string& source, const std::string& shared_relative,
               const std::string& absolute) {
  for (const std::string& name : {"shared:" + shared_relative, absolute}) {
    for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
      const size_t end = at + name.size();
      const bool starts = at == 0 || source[at - 1] == ' ';
      if (starts && (end == source.size() || source[end] == ' ')) return true;
    }
  }
  return false;
}

// The files of the patterns in the database, by the source the database keeps: corpus entries
// as libs/io/inputs.hpp resolves them (read only when a source is a gen command), shared:PATH under
// the shared folder, and paths as they are.
class PatternFiles {
 public:
  explicit PatternFiles(const TrainingDataOptions& o) : options_(o) {}
  std::string Resolve(const MatrixRecord& m) {
    const std::string& source = m.source_path;
    if (source.rfind("gen ", 0) == 0) {
      if (!manifest_read_) {
        for (const InputFile& f : CorpusManifestEntries(options_.corpus_manifest, options_.kernel))
          by_origin_[f.origin] = f.path;
        manifest_read_ = true;
      }
      auto it = by_origin_.find(source);
      if (it == by_origin_.end())
        throw InputError(options_.db_path, 0,
                         "the pattern of " + m.name + " comes from `" + source + "`, which " +
                             options_.corpus_manifest + " does not list");
      return it->second;
    }
    if (source.rfind("shared:", 0) == 0)
      return (fs::path(options_.shared_dir) / source.substr(7)).string();
    return source;
  }

 private:
  const TrainingDataOptions& options_;
  bool manifest_read_ = false;
  std::map<std::string, std::string> by_origin_;
};

// Moves round(fraction * n) of the n training patterns into the selection set: those whose
// fingerprints hash lowest, so the same patterns whatever the data's order, and a fixed count
// (a hash threshold gave MTTKRP's 21 patterns a selection of 2).
void DrawSelection(double fraction, std::vector<TrainingMatrix>& train,
                   std::vector<TrainingMatrix>& selection) {
  const auto count = static_cast<size_t>(std::llround(std::max(0.0, fraction) * train.size()));
  if (count == 0) return;
  auto rank = [](const TrainingMatrix& m) {
    StableHasher hasher;
    hasher.UpdateString(m.fingerprint);
    return std::make_pair(hasher.Digest64(), m.fingerprint);
  };
  std::vector<std::pair<std::pair<uint64_t, std::string>, size_t>> ranked;
  for (size_t k = 0; k < train.size(); ++k) ranked.push_back({rank(train[k]), k});
  std::sort(ranked.begin(), ranked.end());
  std::vector<bool> chosen(train.size(), false);
  for (size_t k = 0; k < count && k < ranked.size(); ++k) chosen[ranked[k].second] = true;
  std::vector<TrainingMatrix> kept;
  for (size_t k = 0; k < train.size(); ++k)
    (chosen[k] ? selection : kept).push_back(std::move(train[k]));
  train = std::move(kept);
}

// What the model sees of each pattern, from its file.
void FeaturizePatterns(std::vector<TrainingMatrix>& matrices, const TrainingDataOptions& o) {
  for (TrainingMatrix& m : matrices) {
    const CooTensor pattern = ReadTensorFile(m.path);
    m.grid = Featurize(pattern, o.grid);
    m.side = SideInputValues(pattern, o.side_inputs);
    m.summary_tiles = SummaryAndTileFeatures(pattern);
  }
}

}  // namespace

TrainingSet LoadTrainingSet(const TrainingDataOptions& o, const WacoTemplate& waco) {
  auto db = Database::Open(o.db_path, OpenMode::kReadOnly);
  MeasurementFilter filter;
  filter.kernel = o.kernel;
  if (o.machine_id > 0) filter.machine_id = o.machine_id;
  std::vector<MeasurementRow> rows = db->Measurements(filter);
  if (rows.empty())
    throw InputError(o.db_path, 0,
                     "no measurements of " + o.kernel +
                         (o.machine_id > 0 ? " on this machine" : "") + " to train on");

  // Times only rank schedules measured alike: one machine and one setting of the dense sizes,
  // the most common ones.
  std::map<std::pair<int64_t, std::string>, int64_t> settings;
  for (const MeasurementRow& row : rows) ++settings[{row.machine_id, DenseSizesToText(row.dense)}];
  const auto setting = std::max_element(settings.begin(), settings.end(), [](auto& a, auto& b) {
                         return a.second < b.second;
                       })->first;

  // Validation: the held-out files' patterns, any source made from one of them, and the
  // corpus entries held out by name.
  std::vector<std::string> held_out;
  std::set<std::string> held_out_names;
  for (const std::string& entry : o.validation_list.empty()
                                      ? std::vector<std::string>{}
                                      : ReadValidationList(o.validation_list)) {
    if (entry.rfind("corpus:", 0) == 0) {
      held_out_names.insert(entry.substr(7));
    } else {
      held_out.push_back(entry);
    }
  }
  std::set<std::string> validation_prints;
  for (const auto& relative : held_out) {
    const std::string path = (fs::path(o.shared_dir) / relative).string();
    if (!fs::exists(path) && !o.require_validation) continue;
    if (!fs::exists(path))
      throw InputError(o.validation_list, 0, "the held-out file " + path + " does not exist");
    validation_prints.insert(PatternFingerprint(ReadTensorFile(path)));
  }
  auto made_from_held_out = [&](const std::string& source) {
    for (const auto& relative : held_out) {
      if (NamesFile(source, relative, (fs::path(o.shared_dir) / relative).string())) return true;
    }
    return false;
  };

  TrainingSet set;
  std::map<std::string, TrainingMatrix> by_print;
  std::map<std::string, std::set<std::string>> seen_schedules;
  for (const MeasurementRow& row : rows) {
    if (std::make_pair(row.machine_id, DenseSizesToText(row.dense)) != setting) {
      ++set.other_setting_rows;
      continue;
    }
    if (row.median_ms >= o.max_ms) {
      ++set.dropped_rows;
      continue;
    }
    // A schedule measured twice on one pattern (a pattern under two names) counts once.
    if (!seen_schedules[row.fingerprint].insert(row.schedule.canonical_json).second) continue;
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
  PatternFiles files(o);
  for (auto& [print, m] : by_print) {
    if (m.times.size() < 2) continue;
    const auto record = db->FindMatrix(print);
    if (!record) continue;
    m.name = record->name;
    m.path = files.Resolve(*record);
    if (!fs::exists(m.path) && o.skip_missing_patterns) {
      ++set.missing_patterns;
      continue;
    }
    if (!fs::exists(m.path))
      throw InputError(m.path, 0,
                       "the pattern of " + m.name +
                           " is missing (materialize the corpus with "
                           "scripts/collect_training_data.sh --materialize-only)");
    const bool validation = validation_prints.count(print) > 0 ||
                            held_out_names.count(record->name) > 0 ||
                            made_from_held_out(record->source_path);
    (validation ? set.validation : set.train).push_back(std::move(m));
  }
  DrawSelection(o.selection_fraction, set.train, set.selection);
  if (o.max_matrices > 0 && static_cast<int>(set.train.size()) > o.max_matrices)
    set.train.resize(o.max_matrices);
  if (set.train.empty())
    throw InputError(o.db_path, 0, "no training patterns with at least two measurements");
  if (set.validation.empty() && !o.validation_list.empty() && o.require_validation)
    throw InputError(o.validation_list, 0,
                     "none of these held-out patterns (nor a resize of one) has measurements of " +
                         o.kernel + " in " + o.db_path + " to validate on");
  FeaturizePatterns(set.train, o);
  FeaturizePatterns(set.selection, o);
  FeaturizePatterns(set.validation, o);
  // Without a selection share (tiny data), the epoch is chosen on the training patterns.
  if (set.selection.empty()) set.selection = set.train;
  return set;
}

}  // namespace sparsetune
