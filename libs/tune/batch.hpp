// Batch tuning: many matrices (files, folders or the SuiteSparse catalogue) tuned one after the
// other into one database, resumable, split into shards that separate processes can run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/tune.hpp"

namespace sparsetune {

// One matrix of SuiteSparse's catalogue (ssstats.csv).
struct CatalogEntry {
  std::string group;
  std::string name;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t nnz = 0;  // after symmetric expansion, explicit zeros left out
  bool is_real = false;
  bool is_binary = false;
  std::string kind;  // e.g. "structural problem"
  int64_t nnz_with_zeros = 0;
  int64_t line = 0;  // in the catalogue file
};

// Reads ssstats.csv: a count, a date, then one line per matrix
// (group,name,nrows,ncols,nnz,isReal,isBinary,isND,posdef,psym,nsym,kind,nnz_with_zeros).
// Throws InputError naming the file, the line and the cause.
std::vector<CatalogEntry> ReadCatalog(const std::string& path);

struct CatalogFilter {
  std::string group;               // exact group name; "" matches all
  std::string kind;                // a substring of the kind column; "" matches all
  std::optional<int64_t> max_nnz;  // catalogue nnz at most this
};

std::vector<CatalogEntry> FilterCatalog(const std::vector<CatalogEntry>& entries,
                                        const CatalogFilter& filter);

// The entry's file under root in one of the collection's layouts, first found of
// Group/Name/Name.mtx, Group/Name.mtx, Group/Name.mtx.gz, Group/Name.tar.gz, Name.mtx,
// Name.mtx.gz; "" when none is there.
std::string FindCatalogFile(const std::string& root, const CatalogEntry& entry);

// One matrix of a batch.
struct BatchItem {
  std::string name;     // "Group/Name" for catalogue entries, the file's name without extensions
  std::string path;     // "" when a catalogue entry's file is absent
  int64_t nnz = -1;     // from the catalogue; -1 when unknown until the file is read
  int64_t cost = 0;     // what shards balance: catalogue nnz, else the file's size in bytes
  std::string missing;  // why there is nothing to tune ("" when there is)
};

// Files as given and every file below a folder that the readers take (HasTensorFileExtension),
// each once, folders' contents sorted. A path that does not exist stays an item: its tune fails
// as bad input, is reported, and the batch goes on.
std::vector<BatchItem> ItemsFromPaths(const std::vector<std::string>& paths);

// The entries resolved under root; absent files are items with `missing` set.
std::vector<BatchItem> ItemsFromCatalog(const std::vector<CatalogEntry>& entries,
                                        const std::string& root);

struct Shard {
  int index = 0;
  int count = 1;
};

// "I/N" with 0 <= I < N; throws InputError otherwise.
Shard ParseShard(const std::string& text);

// The shard of each cost, the same in every process: costs are taken largest first (ties by
// position) and each goes to the shard with the least total so far (ties by shard index).
std::vector<int> AssignShards(const std::vector<int64_t>& costs, int shard_count);

// The items of one shard, in their given order.
std::vector<BatchItem> SelectShard(const std::vector<BatchItem>& items, const Shard& shard);

struct BatchRequest {
  std::vector<std::string> paths;  // files and folders, or
  std::string catalog_path;        // the catalogue, resolved under
  std::string catalog_root;
  CatalogFilter filter;
  Shard shard;
  // Every setting of the tune; its path is set per matrix.
  TuneRequest tune;
  // A matrix whose times stayed disturbed (MachineBusyError: other work held the cores) is
  // tuned again after waiting busy_wait_s, up to busy_retries times; then it is left busy,
  // unstored, for a later run to resume.
  int busy_retries = 2;
  double busy_wait_s = 60;
};

// kBusy: not tuned because other work held the cores through every attempt; nothing stored.
enum class BatchStatus { kTuned, kFromDb, kFailed, kMissing, kBusy };
const char* BatchStatusName(BatchStatus status);

struct BatchRow {
  std::string name;
  std::string path;
  BatchStatus status = BatchStatus::kFailed;
  int64_t nnz = -1;  // -1: unknown
  double winner_ms = 0;
  double fixed_csr_ms = 0;
  double speedup = 0;
  double tune_ms = 0;
  std::string message;          // the failure's or the absence's cause; a tuned row's warnings
  bool internal_error = false;  // a failure of sparsetune rather than of the input

  nlohmann::json ToJson() const;
};

struct BatchReport {
  std::vector<BatchRow> rows;
  int64_t total = 0;  // matrices in this shard, missing ones included
  double batch_ms = 0;

  int64_t Count(BatchStatus status) const;
  // 0 when every present matrix was tuned or found, 3 after an internal failure or a matrix
  // left busy, else 2 after bad input. Missing catalogue entries do not count.
  int ExitCode() const;
  nlohmann::json ToJson() const;
};

// The summary file's header line and one row, as CSV (RFC 4180 quoting).
std::string BatchCsvHeader();
std::string BatchCsvRow(const BatchRow& row);

// What a batch tells its caller while it runs.
struct BatchProgress {
  std::function<void(size_t index, size_t total, const BatchItem& item)> start;
  std::function<void(const std::string& stage)> stage;
  std::function<void(size_t index, size_t total, const BatchRow& row)> done;
  // Before the wait that precedes attempt `next_attempt` (2 for the first retry) of a matrix
  // whose times were disturbed: why, and for how long it waits.
  std::function<void(const std::string& cause, double wait_s, int next_attempt)> busy;
};

// The matrices of request's shard, in order.
std::vector<BatchItem> ResolveBatchItems(const BatchRequest& request);

// Tunes every matrix of the shard with Tune. A stored winner counts as done (from_db), which
// makes a rerun resume; a matrix that fails is reported and the batch goes on. Throws
// InputError only for what concerns every matrix (the catalogue, the database, the settings).
BatchReport RunBatch(const BatchRequest& request, const BatchProgress& progress = {});

}  // namespace sparsetune
