#include "tune/batch.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <thread>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "db/database.hpp"
#include "io/inputs.hpp"
#include "io/read.hpp"
#include "tune/measuring.hpp"

namespace sparsetune {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> SplitCommas(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma - start));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

std::optional<int64_t> ParseInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvNumber(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

bool HasWinner(BatchStatus status) {
  return status == BatchStatus::kTuned || status == BatchStatus::kFromDb;
}

// One attempt at tuning item into row; a failure is recorded in row, except MachineBusyError
// (the times stayed disturbed), which the caller may answer by trying again.
void TuneItem(const BatchRequest& request, const BatchItem& item, const BatchProgress& progress,
              Database& db, BatchRow* row) {
  try {
    TuneRequest tune = request.tune;
    tune.path = item.path;
    tune.emit_dir.clear();
    TuneProgress tune_progress;
    tune_progress.stage = progress.stage;
    const TuneReport result = Tune(tune, tune_progress);
    row->status = result.from_db ? BatchStatus::kFromDb : BatchStatus::kTuned;
    row->winner_ms = result.winner_ms;
    row->fixed_csr_ms = result.fixed_csr_ms;
    row->speedup = result.speedup_vs_fixed_csr();
    row->message.clear();
    for (const auto& warning : result.input_warnings)
      row->message += (row->message.empty() ? "" : "; ") + warning;
    if (const auto matrix = db.FindMatrix(result.fingerprint)) row->nnz = matrix->nnz;
  } catch (const MachineBusyError&) {
    throw;
  } catch (const InputError& e) {
    row->status = BatchStatus::kFailed;
    row->message = e.what();
  } catch (const std::bad_alloc&) {
    row->status = BatchStatus::kFailed;
    row->message = "out of memory";
    row->internal_error = true;
  } catch (const std::exception& e) {
    row->status = BatchStatus::kFailed;
    row->message = e.what();
    row->internal_error = true;
  }
}

}  // namespace

std::vector<CatalogEntry> ReadCatalog(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open the catalogue");
  std::string line;
  int64_t number = 0;
  auto next = [&] {
    if (!std::getline(in, line)) return false;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  if (!next()) throw InputError(path, 0, "empty file (expected the number of matrices)");
  const std::optional<int64_t> declared = ParseInteger(line);
  if (!declared || *declared < 0)
    throw InputError(path, number, "the first line is not the number of matrices: '" + line + "'");
  if (!next()) throw InputError(path, 1, "no date line after the count");

  std::vector<CatalogEntry> entries;
  while (next()) {
    if (line.empty()) continue;
    std::vector<std::string> fields = SplitCommas(line);
    // The kind is free text between fixed columns: rejoin it should it hold commas.
    if (fields.size() < 13)
      throw InputError(path, number,
                       "expected 13 comma-separated fields "
                       "(group,name,nrows,ncols,nnz,isReal,isBinary,isND,posdef,psym,nsym,kind,"
                       "nnz_with_zeros), found " +
                           std::to_string(fields.size()));
    std::string kind = fields[11];
    for (size_t k = 12; k + 1 < fields.size(); ++k) kind += "," + fields[k];
    auto integer = [&](size_t column, const char* what) {
      const std::optional<int64_t> value = ParseInteger(fields[column]);
      if (!value || *value < 0)
        throw InputError(
            path, number,
            std::string(what) + " is not a non-negative integer: '" + fields[column] + "'");
      return *value;
    };
    CatalogEntry entry;
    entry.group = fields[0];
    entry.name = fields[1];
    if (entry.group.empty() || entry.name.empty())
      throw InputError(path, number, "empty group or name");
    entry.rows = integer(2, "nrows");
    entry.cols = integer(3, "ncols");
    entry.nnz = integer(4, "nnz");
    entry.is_real = integer(5, "isReal") != 0;
    entry.is_binary = integer(6, "isBinary") != 0;
    entry.kind = kind;
    entry.nnz_with_zeros = integer(fields.size() - 1, "nnz_with_zeros");
    entry.line = number;
    entries.push_back(std::move(entry));
  }
  if (static_cast<int64_t>(entries.size()) != *declared)
    throw InputError(path, number,
                     "the first line declares " + std::to_string(*declared) +
                         " matrices but the file lists " + std::to_string(entries.size()) +
                         " (cut short?)");
  return entries;
}

std::vector<CatalogEntry> FilterCatalog(const std::vector<CatalogEntry>& entries,
                                        const CatalogFilter& filter) {
  std::vector<CatalogEntry> kept;
  for (const auto& entry : entries) {
    if (!filter.group.empty() && entry.group != filter.group) continue;
    if (!filter.kind.empty() && entry.kind.find(filter.kind) == std::string::npos) continue;
    if (filter.max_nnz && entry.nnz > *filter.max_nnz) continue;
    kept.push_back(entry);
  }
  return kept;
}

std::string FindCatalogFile(const std::string& root, const CatalogEntry& entry) {
  const fs::path base(root);
  const fs::path group = base / entry.group;
  // Extracted files first: they read faster than the archive.
  for (const fs::path& candidate :
       {group / entry.name / (entry.name + ".mtx"), group / (entry.name + ".mtx"),
        group / (entry.name + ".mtx.gz"), group / (entry.name + ".tar.gz"),
        base / (entry.name + ".mtx"), base / (entry.name + ".mtx.gz")}) {
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return candidate.string();
  }
  return "";
}

std::vector<BatchItem> ItemsFromPaths(const std::vector<std::string>& paths) {
  std::vector<BatchItem> items;
  std::set<std::string> seen;
  auto add = [&](const fs::path& path) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(path, error);
    if (!seen.insert(error ? path.string() : canonical.string()).second) return;
    BatchItem item;
    item.path = path.string();
    item.name = MatrixNameOf(item.path);
    const auto size = fs::file_size(path, error);
    item.cost = error ? 0 : static_cast<int64_t>(size);
    items.push_back(std::move(item));
  };
  for (const auto& path : paths) {
    std::error_code error;
    if (!fs::is_directory(path, error)) {
      add(path);
      continue;
    }
    std::vector<fs::path> found;
    for (fs::recursive_directory_iterator
             it(path, fs::directory_options::skip_permission_denied, error),
         end;
         !error && it != end; it.increment(error)) {
      if (it->is_regular_file(error) && HasTensorFileExtension(it->path().filename().string()))
        found.push_back(it->path());
    }
    if (error) throw InputError(path, 0, "cannot list the folder (" + error.message() + ")");
    std::sort(found.begin(), found.end());
    for (const auto& file : found) add(file);
  }
  return items;
}

std::vector<BatchItem> ItemsFromCatalog(const std::vector<CatalogEntry>& entries,
                                        const std::string& root) {
  std::vector<BatchItem> items;
  for (const auto& entry : entries) {
    BatchItem item;
    item.name = entry.group + "/" + entry.name;
    item.path = FindCatalogFile(root, entry);
    item.nnz = entry.nnz;
    item.cost = entry.nnz;
    if (item.path.empty()) item.missing = "no file for " + item.name + " under " + root;
    items.push_back(std::move(item));
  }
  return items;
}

Shard ParseShard(const std::string& text) {
  const size_t slash = text.find('/');
  const std::optional<int64_t> index =
      slash == std::string::npos ? std::nullopt : ParseInteger(text.substr(0, slash));
  const std::optional<int64_t> count =
      slash == std::string::npos ? std::nullopt : ParseInteger(text.substr(slash + 1));
  if (!index || !count || *count < 1 || *index < 0 || *index >= *count || *count > 1000000)
    throw InputError("--shard '" + text + "': expected I/N with 0 <= I < N, e.g. 0/4");
  return {static_cast<int>(*index), static_cast<int>(*count)};
}

std::vector<int> AssignShards(const std::vector<int64_t>& costs, int shard_count) {
  if (shard_count < 1) throw InputError("the number of shards must be at least 1");
  std::vector<size_t> order(costs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<int64_t> load(static_cast<size_t>(shard_count), 0);
  std::vector<int> shard(costs.size(), 0);
  for (size_t item : order) {
    const size_t lightest =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard[item] = static_cast<int>(lightest);
    load[lightest] += std::max<int64_t>(costs[item], 0);
  }
  return shard;
}

std::vector<BatchItem> SelectShard(const std::vector<BatchItem>& items, const Shard& shard) {
  std::vector<int64_t> costs;
  for (const auto& item : items) costs.push_back(item.cost);
  const std::vector<int> assigned = AssignShards(costs, shard.count);
  std::vector<BatchItem> selected;
  for (size_t k = 0; k < items.size(); ++k) {
    if (assigned[k] == shard.index) selected.push_back(items[k]);
  }
  return selected;
}

const char* BatchStatusName(BatchStatus status) {
  switch (status) {
    case BatchStatus::kTuned:
      return "tuned";
    case BatchStatus::kFromDb:
      return "from_db";
    case BatchStatus::kFailed:
      return "failed";
    case BatchStatus::kMissing:
      return "missing";
    case BatchStatus::kBusy:
      return "busy";
  }
  return "?";
}

nlohmann::json BatchRow::ToJson() const {
  const bool has_winner = HasWinner(status);
  nlohmann::json out = {
      {"name", name},
      {"path", path},
      {"status", BatchStatusName(status)},
      {"nnz", nnz >= 0 ? nlohmann::json(nnz) : nlohmann::json()},
      {"winner_ms", has_winner ? nlohmann::json(winner_ms) : nlohmann::json()},
      {"fixed_csr_ms",
       has_winner && fixed_csr_ms > 0 ? nlohmann::json(fixed_csr_ms) : nlohmann::json()},
      {"speedup", has_winner && speedup > 0 ? nlohmann::json(speedup) : nlohmann::json()},
      {"tune_ms", tune_ms},
      {"message", message}};
  if (status == BatchStatus::kFailed) out["error"] = internal_error ? "internal" : "input";
  return out;
}

int64_t BatchReport::Count(BatchStatus status) const {
  return std::count_if(rows.begin(), rows.end(),
                       [&](const BatchRow& row) { return row.status == status; });
}

int BatchReport::ExitCode() const {
  int code = 0;
  for (const auto& row : rows) {
    if (row.status == BatchStatus::kBusy) code = 3;  // as tune: its environment failed it
    if (row.status != BatchStatus::kFailed) continue;
    code = std::max(code, row.internal_error ? 3 : 2);
  }
  return code;
}

nlohmann::json BatchReport::ToJson() const {
  nlohmann::json out = {{"total", total},
                        {"tuned", Count(BatchStatus::kTuned)},
                        {"from_db", Count(BatchStatus::kFromDb)},
                        {"failed", Count(BatchStatus::kFailed)},
                        {"missing", Count(BatchStatus::kMissing)},
                        {"busy", Count(BatchStatus::kBusy)},
                        {"batch_ms", batch_ms}};
  out["matrices"] = nlohmann::json::array();
  for (const auto& row : rows) out["matrices"].push_back(row.ToJson());
  return out;
}

std::string BatchCsvHeader() {
  return "name,path,status,nnz,winner_ms,fixed_csr_ms,speedup,tune_ms,message";
}

std::string BatchCsvRow(const BatchRow& row) {
  const bool has_winner = HasWinner(row.status);
  std::string line =
      CsvField(row.name) + "," + CsvField(row.path) + "," + BatchStatusName(row.status) + ",";
  if (row.nnz >= 0) line += std::to_string(row.nnz);
  line += ",";
  if (has_winner) line += CsvNumber(row.winner_ms);
  line += ",";
  if (has_winner && row.fixed_csr_ms > 0) line += CsvNumber(row.fixed_csr_ms);
  line += ",";
  if (has_winner && row.speedup > 0) line += CsvNumber(row.speedup);
  line += ",";
  if (row.status != BatchStatus::kMissing) line += CsvNumber(row.tune_ms);
  return line + "," + CsvField(row.message);
}

std::vector<BatchItem> ResolveBatchItems(const BatchRequest& request) {
  const bool catalog = !request.catalog_path.empty();
  if (catalog == !request.paths.empty())
    throw InputError("give matrix files or folders, or --catalog, not both");
  if (catalog && request.catalog_root.empty()) throw InputError("--catalog needs --root DIR");
  if (!catalog && (!request.catalog_root.empty() || !request.filter.group.empty() ||
                   !request.filter.kind.empty() || request.filter.max_nnz))
    throw InputError("--root, --group, --kind and --max-nnz go with --catalog");
  if (request.busy_retries < 0 || !(request.busy_wait_s >= 0))
    throw InputError("--busy-retries and --busy-wait must not be negative");
  if (request.shard.count < 1 || request.shard.index < 0 ||
      request.shard.index >= request.shard.count)
    throw InputError("the shard index must be in [0, " + std::to_string(request.shard.count) + ")");
  std::vector<BatchItem> items;
  if (catalog) {
    std::error_code error;
    if (!fs::is_directory(request.catalog_root, error))
      throw InputError(request.catalog_root, 0, "--root is not a folder");
    items = ItemsFromCatalog(FilterCatalog(ReadCatalog(request.catalog_path), request.filter),
                             request.catalog_root);
  } else {
    items = ItemsFromPaths(request.paths);
  }
  if (items.empty()) {
    throw InputError(catalog ? "no catalogue entry passes the filters"
                             : "no matrix or tensor files found in the given paths");
  }
  return SelectShard(items, request.shard);
}

BatchReport RunBatch(const BatchRequest& request, const BatchProgress& progress) {
  const auto start = Clock::now();
  const std::vector<BatchItem> items = ResolveBatchItems(request);
  // A database that cannot be used concerns every matrix: say so once, before any tune. This
  // handle also reads the nonzero counts that Tune stores.
  auto db = Database::Open(request.tune.db_path, OpenMode::kReadWrite);
  BatchReport report;
  report.total = static_cast<int64_t>(items.size());
  for (size_t index = 0; index < items.size(); ++index) {
    const BatchItem& item = items[index];
    if (progress.start) progress.start(index, items.size(), item);
    BatchRow row;
    row.name = item.name;
    row.path = item.path;
    row.nnz = item.nnz;
    if (!item.missing.empty()) {
      row.status = BatchStatus::kMissing;
      row.message = item.missing;
    } else {
      const auto tune_start = Clock::now();
      for (int attempt = 1;; ++attempt) {
        try {
          TuneItem(request, item, progress, *db, &row);
          if (attempt > 1 && HasWinner(row.status))
            row.message += std::string(row.message.empty() ? "" : "; ") + "tuned at attempt " +
                           std::to_string(attempt) + ", after the cores were busy";
        } catch (const MachineBusyError& e) {
          row.status = BatchStatus::kBusy;
          row.message = e.cause();
          if (attempt <= request.busy_retries) {
            if (progress.busy) progress.busy(e.cause(), request.busy_wait_s, attempt + 1);
            std::this_thread::sleep_for(std::chrono::duration<double>(request.busy_wait_s));
            continue;
          }
        }
        break;
      }
      row.tune_ms = MsSince(tune_start);
    }
    if (progress.done) progress.done(index, items.size(), row);
    report.rows.push_back(std::move(row));
  }
  report.batch_ms = MsSince(start);
  return report;
}

}  // namespace sparsetune
