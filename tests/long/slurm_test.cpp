// The Slurm scripts on a real one-node Slurm (scripts/slurm/local_cluster.sh: munged,
// slurmctld and slurmd started without systemd, in a private network and PID namespace), used
// as on a cluster: a 4-task tuning array over a small SuiteSparse-layout collection (real
// shared matrices and their catalogue lines), one task stopped midway with scancel, the run
// resubmitted, and the merged database compared with one `sparsetune batch` process over the
// same matrices; then a 2-task collect array against one `sparsetune collect` process.
//
// Winners are chosen by measured times, which differ from one run to the next, so the
// comparison asserts what does not depend on them: the same matrices, one winner for each
// (none missing, none twice), the same candidates measured for each, every winner the fastest
// of its matrix's stored measurements and exactly as its shard stored it. How many winners are
// the same schedule as the single process's is printed.
//
// Needs Slurm and munge (scripts/setup.sh --slurm) and root (slurmd runs jobs as their users);
// skipped without them. The jobs run at the lowest CPU priority (nice 19).
#include <gtest/gtest.h>

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::CommandResult;
using testing::ReadText;
using testing::RunCommand;

const std::string kSource = SPARSETUNE_SOURCE_DIR;
const std::string kShared = std::string(SPARSETUNE_SHARED_DIR) + "/datasets";
const std::string kSlurm = kSource + "/scripts/slurm";
const std::string kBinary = SPARSETUNE_BINARY;
constexpr int kTasks = 4;
// Sampled candidates per matrix, without a cost model, so that the candidates do not depend
// on which models are shipped.
const std::vector<std::string> kTuneOptions = {"--samples", "16", "--no-model"};

// Small real matrices; the last two are laid out as Group/Name.mtx, the others as
// Group/Name/Name.mtx (both are layouts of the collection that batch resolves).
const std::vector<std::string> kNames = {"cage5",    "bcsstk01", "ash219",   "west0497",
                                         "Erdos971", "1138_bus", "bcspwr06", "dwt_992"};

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> fields;
  std::stringstream s(text);
  for (std::string field; std::getline(s, field, separator);) fields.push_back(field);
  return fields;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (const auto& line : Split(text, '\n'))
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// Runs a program found on PATH (no shell) at nice 19, its output into `log`.
CommandResult Execute(std::vector<std::string> args, const std::string& log,
                      const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), {"nice", "-n", "19"});
  return RunCommand(args, log, env);
}

bool OnPath(const std::string& program) {
  for (const auto& dir : Split(std::getenv("PATH") ? std::getenv("PATH") : "", ':')) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Rows of a query on a database file, each column as text ("" for NULL).
std::vector<std::vector<std::string>> Query(const std::string& db, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* handle = nullptr;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << db << ": " << sqlite3_errmsg(handle);
    sqlite3_close(handle);
    return rows;
  }
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << db << ": " << sqlite3_errmsg(handle) << " in " << sql;
  } else {
    while (sqlite3_step(statement) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(statement); ++c) {
        const unsigned char* text = sqlite3_column_text(statement, c);
        row.push_back(text ? reinterpret_cast<const char*>(text) : "");
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(statement);
  sqlite3_close(handle);
  return rows;
}

int64_t Count(const std::string& db, const std::string& sql) {
  const auto rows = Query(db, sql);
  return rows.empty() || rows[0].empty() ? -1 : std::stoll(rows[0][0]);
}

// Waits up to `seconds` for done() to hold, checking every `step`.
bool WaitFor(const std::function<bool()>& done, double seconds,
             std::chrono::milliseconds step = std::chrono::milliseconds(500)) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(step);
  }
  return done();
}

// The catalogue's line of a matrix, from the shared catalogue.
std::string CatalogLine(const std::string& catalog_text, const std::string& name) {
  for (const auto& line : Split(catalog_text, '\n')) {
    const auto fields = Split(line, ',');
    if (fields.size() >= 13 && fields[1] == name) return line;
  }
  return "";
}

// The process running `sparsetune batch ... --shard index/count --summary <work>/...`.
pid_t FindBatchProcess(const std::string& work, int index, int count) {
  const std::string shard = std::to_string(index) + "/" + std::to_string(count);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto args = Split(ReadText(entry.path() / "cmdline"), '\0');
    bool batch = false, in_shard = false, in_run = false;
    for (size_t k = 0; k < args.size(); ++k) {
      batch |= args[k] == "batch";
      if (args[k] == "--shard" && k + 1 < args.size()) in_shard = args[k + 1] == shard;
      if (args[k] == "--summary" && k + 1 < args.size())
        in_run = args[k + 1].rfind(work + "/summaries/", 0) == 0;
    }
    if (!args.empty() && args[0] == kBinary && batch && in_shard && in_run)
      return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

// Summary files of one task (one per attempt), oldest first, and their data rows.
std::vector<fs::path> Summaries(const std::string& work, int index) {
  std::vector<std::pair<fs::file_time_type, fs::path>> found;
  const std::string prefix = "spmv." + std::to_string(index) + ".";
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(work + "/summaries", error)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0)
      found.emplace_back(fs::last_write_time(entry.path()), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (const auto& [time, path] : found) paths.push_back(path);
  return paths;
}

std::vector<std::vector<std::string>> SummaryRows(const fs::path& summary) {
  std::vector<std::vector<std::string>> rows;
  const auto lines = Lines(ReadText(summary));
  for (size_t k = 1; k < lines.size(); ++k) rows.push_back(Split(lines[k], ','));
  return rows;  // name, path, status, nnz, winner_ms, fixed_csr_ms, speedup, tune_ms, message
}

// A one-node Slurm under `dir`, stopped (every daemon and job process) when this goes away.
class LocalCluster {
 public:
  explicit LocalCluster(std::string dir) : dir_(std::move(dir)) {}
  ~LocalCluster() {
    if (started_) Execute({"bash", kSlurm + "/local_cluster.sh", "stop", dir_}, dir_ + ".stop.log");
  }
  CommandResult Start() {
    auto result =
        Execute({"bash", kSlurm + "/local_cluster.sh", "start", dir_}, dir_ + ".start.log");
    started_ = result.exit_code == 0;
    return result;
  }
  // A command where the cluster is reachable.
  CommandResult Do(const std::vector<std::string>& command, const std::string& log) const {
    std::vector<std::string> args = {"bash", kSlurm + "/local_cluster.sh", "run", dir_};
    args.insert(args.end(), command.begin(), command.end());
    return Execute(args, log);
  }
  // Whether Slurm still lists the job (queued, running or completing).
  bool InQueue(const std::string& job, const std::string& log) const {
    const auto result = Do({"squeue", "-h", "-j", job, "-o", "%i"}, log);
    return result.exit_code == 0 && !Lines(result.output).empty();
  }

 private:
  std::string dir_;
  bool started_ = false;
};

// The job ids submit.sh recorded for a run: the last array and merge jobs.
std::map<std::string, std::string> LastJobs(const std::string& work) {
  std::map<std::string, std::string> jobs;
  for (const auto& line : Lines(ReadText(work + "/jobs"))) {
    const auto fields = Split(line, ' ');
    if (fields.size() >= 2) jobs[fields[0]] = fields[1];
  }
  return jobs;
}

std::string Logs(const std::string& work) {
  std::string text;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(work + "/logs", error))
    text += "--- " + entry.path().filename().string() + "\n" + ReadText(entry.path());
  return text;
}

class SlurmRun : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* program : {"munged", "slurmctld", "slurmd", "sbatch", "unshare", "nsenter"}) {
      if (!OnPath(program))
        GTEST_SKIP() << program << " not found: install Slurm with scripts/setup.sh --slurm";
    }
    if (geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs jobs as their users";
    if (!fs::exists(kShared + "/catalog/ssstats.csv")) GTEST_SKIP() << "no shared datasets";
    // Short: the munge socket's path must fit a Unix socket address.
    char pattern[] = "/tmp/sparsetune-slurm-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // munged wants every folder above its socket searchable by all.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    catalog_ = dir_ + "/ssstats.csv";
    root_ = dir_ + "/suitesparse";
    cache_ = dir_ + "/cache";
    const std::string full = ReadText(kShared + "/catalog/ssstats.csv");
    std::ofstream catalog(catalog_);
    catalog << kNames.size() << "\n" << Split(full, '\n').at(1) << "\n";
    for (size_t k = 0; k < kNames.size(); ++k) {
      const std::string line = CatalogLine(full, kNames[k]);
      ASSERT_FALSE(line.empty()) << kNames[k] << " is not in the catalogue";
      catalog << line << "\n";
      const std::string group = Split(line, ',')[0];
      const fs::path folder = k < 6 ? fs::path(root_) / group / kNames[k] : fs::path(root_) / group;
      fs::create_directories(folder);
      fs::create_symlink(kShared + "/matrices/" + kNames[k] + ".mtx",
                         folder / (kNames[k] + ".mtx"));
    }
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
    if (HasFailure()) std::cerr << "kept " << dir_ << " for inspection\n";
  }

  // shards.sh's assignment: the names of each shard.
  std::vector<std::vector<std::string>> Assignment(int shards) {
    const auto result = Execute({"bash", kSlurm + "/shards.sh", "--shards", std::to_string(shards),
                                 "--catalog", catalog_, "--root", root_},
                                dir_ + "/shards.log");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::vector<std::vector<std::string>> names(shards);
    const auto lines = Lines(result.output);
    for (size_t k = 1; k < lines.size(); ++k) {
      const auto fields = Split(lines[k], '\t');
      if (fields.size() >= 3) names.at(std::stoi(fields[0])).push_back(fields[2]);
    }
    return names;
  }

  // submit.sh's command line; `options` go to every sparsetune batch or collect.
  std::vector<std::string> Submit(const std::string& mode, const std::string& work, int tasks,
                                  const std::vector<std::string>& options) {
    std::vector<std::string> args = {"bash", kSlurm + "/submit.sh", mode, "--work", work};
    const std::vector<std::string> common = {
        "--kernel",  "spmv",   "--tasks",      std::to_string(tasks),
        "--catalog", catalog_, "--root",       root_,
        "--bin",     kBinary,  "--cache",      cache_,
        "--nice",    "19",     "--checkpoint", "2",
        "--"};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), options.begin(), options.end());
    return args;
  }

  std::string dir_, catalog_, root_, cache_;
};

// The merged database of an array against one process's over the same matrices: the same
// matrices, winner keys and candidates; each winner the fastest stored measurement of its
// matrix; the merged winners the shards' winners, unchanged.
void ExpectMergedEqualsOneProcess(const std::string& merged, const std::string& single,
                                  const std::string& work) {
  const std::string matrices_sql =
      "SELECT fingerprint, name, nnz, source_path FROM matrices ORDER BY fingerprint";
  const std::string keys_sql =
      "SELECT x.fingerprint, w.kernel, w.dense, w.dtype, c.machine_key FROM winners w "
      "JOIN matrices x ON x.id = w.matrix_id JOIN machines c ON c.id = w.machine_id "
      "ORDER BY 1, 2, 3, 4, 5";
  const std::string candidates_sql =
      "SELECT x.fingerprint, s.hash FROM (SELECT matrix_id, schedule_id FROM measurements "
      "UNION SELECT matrix_id, schedule_id FROM failures) r JOIN matrices x ON x.id = r.matrix_id "
      "JOIN schedules s ON s.id = r.schedule_id ORDER BY 1, 2";
  const auto keys = Query(merged, keys_sql);
  EXPECT_EQ(keys.size(), kNames.size()) << "one winner per matrix, none missing";
  EXPECT_EQ(keys, Query(single, keys_sql));
  EXPECT_EQ(Query(merged, matrices_sql), Query(single, matrices_sql));
  EXPECT_EQ(Count(merged,
                  "SELECT COUNT(*) FROM matrices WHERE id NOT IN "
                  "(SELECT matrix_id FROM winners)"),
            0);
  EXPECT_EQ(Query(merged, candidates_sql), Query(single, candidates_sql))
      << "the same candidates measured for every matrix";
  // Each winner is the fastest stored measurement of its matrix, as a single process picks it.
  for (const std::string& db : {merged, single}) {
    EXPECT_EQ(Count(db,
                    "SELECT COUNT(*) FROM winners w WHERE NOT EXISTS (SELECT 1 FROM "
                    "measurements m WHERE m.matrix_id = w.matrix_id AND m.schedule_id = "
                    "w.schedule_id AND m.machine_id = w.machine_id AND m.dense = w.dense AND "
                    "m.dtype = w.dtype AND m.verified = 1 AND m.median_ms = w.time_ms)"),
              0)
        << db;
    EXPECT_EQ(Count(db,
                    "SELECT COUNT(*) FROM winners w WHERE w.time_ms > (SELECT "
                    "MIN(m.median_ms) FROM measurements m WHERE m.matrix_id = w.matrix_id "
                    "AND m.machine_id = w.machine_id AND m.dense = w.dense AND m.dtype = "
                    "w.dtype AND m.verified = 1)"),
              0)
        << db;
  }
  // The merged winners are the shards' winners, unchanged.
  const std::string winners_sql =
      "SELECT x.fingerprint, s.canonical_json, w.time_ms, w.fixed_csr_ms, w.updated_at "
      "FROM winners w JOIN matrices x ON x.id = w.matrix_id JOIN schedules s ON "
      "s.id = w.schedule_id ORDER BY 1";
  std::vector<std::vector<std::string>> from_shards;
  for (int t = 0; t < kTasks; ++t) {
    for (auto& row : Query(work + "/shards/" + std::to_string(t) + ".db", winners_sql))
      from_shards.push_back(std::move(row));
  }
  std::sort(from_shards.begin(), from_shards.end());
  EXPECT_EQ(Query(merged, winners_sql), from_shards);
}

TEST_F(SlurmRun, ArrayStoppedMidwayResubmittedAndMergedEqualsOneProcess) {
  LocalCluster cluster(dir_ + "/cluster");
  const auto started = cluster.Start();
  ASSERT_EQ(started.exit_code, 0) << started.output;
  const std::string work = dir_ + "/tune";
  const std::string log = dir_ + "/commands.log";

  // The task stopped midway: the first shard with several matrices.
  const auto assignment = Assignment(kTasks);
  int target = -1;
  for (int t = 0; t < kTasks && target < 0; ++t)
    if (assignment[t].size() >= 2) target = t;
  ASSERT_GE(target, 0) << "no shard holds two matrices";
  const size_t target_size = assignment[target].size();

  const auto t0 = Clock::now();
  const auto submitted = cluster.Do(Submit("tune", work, kTasks, kTuneOptions), log);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  const std::string array = LastJobs(work)["array"];
  ASSERT_FALSE(array.empty()) << ReadText(work + "/jobs");

  // As soon as the task has stored its first winner: freeze its sparsetune (so the stop lands
  // between two matrices however fast they go), scancel the task, let the process go on to
  // receive the TERM.
  int rows_at_stop = 0;
  const bool first_row = WaitFor(
      [&] {
        const auto summaries = Summaries(work, target);
        if (summaries.empty()) return false;
        rows_at_stop = static_cast<int>(SummaryRows(summaries.back()).size());
        return rows_at_stop >= 1;
      },
      1200, std::chrono::milliseconds(20));
  ASSERT_TRUE(first_row) << "task " << target << " stored nothing\n" << Logs(work);
  const pid_t batch = FindBatchProcess(work, target, kTasks);
  if (batch > 0) kill(batch, SIGSTOP);  // the task's TERM handler sends CONT after TERM
  const auto cancelled =
      cluster.Do({"scancel", array + "_" + std::to_string(target)}, dir_ + "/scancel.log");
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.output;
  const double stop_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // The other tasks go on; the merge job, whose dependency can no longer be met, goes away.
  ASSERT_TRUE(WaitFor([&] { return !cluster.InQueue(array, dir_ + "/squeue.log"); }, 1800))
      << Logs(work);
  const double first_s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int t = 0; t < kTasks; ++t) {
    EXPECT_EQ(fs::exists(work + "/state/" + std::to_string(t) + ".done"), t != target)
        << "task " << t << "\n"
        << Logs(work);
  }
  EXPECT_FALSE(fs::exists(work + "/state/merged"));
  // Stopped midway: its copied database holds some winners of its shard, not all.
  const std::string stopped_db = work + "/shards/" + std::to_string(target) + ".db";
  ASSERT_TRUE(fs::exists(stopped_db)) << Logs(work);
  const int64_t kept = Count(stopped_db, "SELECT COUNT(*) FROM winners");
  EXPECT_GE(kept, 1) << Logs(work);
  EXPECT_LT(kept, static_cast<int64_t>(target_size))
      << "the task had finished its shard when the stop arrived\n"
      << Logs(work);

  // Resubmitted: only the stopped task runs again, from its copy, then the merge.
  const auto t1 = Clock::now();
  const auto resubmitted = cluster.Do(Submit("tune", work, kTasks, kTuneOptions), log);
  ASSERT_EQ(resubmitted.exit_code, 0) << resubmitted.output;
  EXPECT_NE(resubmitted.output.find("tasks " + std::to_string(target) + " of "), std::string::npos)
      << resubmitted.output;
  const std::string merge = LastJobs(work)["merge"];
  ASSERT_TRUE(WaitFor(
      [&] {
        return fs::exists(work + "/state/merged") && !cluster.InQueue(merge, dir_ + "/squeue.log");
      },
      1800))
      << Logs(work);
  const double second_s = std::chrono::duration<double>(Clock::now() - t1).count();

  // The resumed task took the stored winners from its database and tuned the rest.
  const auto summaries = Summaries(work, target);
  ASSERT_EQ(summaries.size(), 2u);
  std::map<std::string, int> statuses;
  for (const auto& row : SummaryRows(summaries.back())) ++statuses[row.at(2)];
  EXPECT_EQ(statuses["from_db"], static_cast<int>(kept));
  EXPECT_EQ(statuses["tuned"], static_cast<int>(target_size - kept));

  // Every task tuned exactly the matrices shards.sh gives its shard.
  for (int t = 0; t < kTasks; ++t) {
    std::set<std::string> tuned;
    for (const auto& summary : Summaries(work, t))
      for (const auto& row : SummaryRows(summary)) tuned.insert(row.at(0));
    EXPECT_EQ(tuned, std::set<std::string>(assignment[t].begin(), assignment[t].end()))
        << "shard " << t;
  }

  // One process over the same matrices.
  const std::string single = dir_ + "/single.db";
  const auto t2 = Clock::now();
  std::vector<std::string> batch_args = {kBinary, "batch",    "--catalog", catalog_, "--root",
                                         root_,   "--kernel", "spmv",      "--db",   single};
  batch_args.insert(batch_args.end(), kTuneOptions.begin(), kTuneOptions.end());
  const auto one = Execute(batch_args, dir_ + "/single.log", {"SPARSETUNE_CACHE=" + cache_});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const double single_s = std::chrono::duration<double>(Clock::now() - t2).count();

  const std::string merged = work + "/sparsetune.db";
  ExpectMergedEqualsOneProcess(merged, single, work);

  // Timing-dependent, so reported rather than asserted.
  const std::string schedules_sql =
      "SELECT x.fingerprint, s.hash FROM winners w JOIN matrices x ON x.id = w.matrix_id "
      "JOIN schedules s ON s.id = w.schedule_id ORDER BY 1";
  const auto ours = Query(merged, schedules_sql), theirs = Query(single, schedules_sql);
  size_t same = 0;
  for (size_t k = 0; k < std::min(ours.size(), theirs.size()); ++k) same += ours[k] == theirs[k];
  std::cout << "slurm: task " << target << " stopped after " << rows_at_stop << " of "
            << target_size << " matrices (" << kept << " stored) at " << stop_s
            << " s; first submission over after " << first_s << " s; resubmission and merge "
            << second_s << " s; one process " << single_s << " s; " << same << " of " << ours.size()
            << " winners the same schedule as the one process's\n";
}

TEST_F(SlurmRun, CollectArrayMeasuresWhatOneProcessMeasures) {
  LocalCluster cluster(dir_ + "/cluster");
  const auto started = cluster.Start();
  ASSERT_EQ(started.exit_code, 0) << started.output;
  const std::string work = dir_ + "/collect";
  const std::string samples = "2";
  const auto submitted =
      cluster.Do(Submit("collect", work, 2, {"--samples", samples}), dir_ + "/submit.log");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  const std::string merge = LastJobs(work)["merge"];
  ASSERT_TRUE(WaitFor(
      [&] {
        return fs::exists(work + "/state/merged") && !cluster.InQueue(merge, dir_ + "/squeue.log");
      },
      1800))
      << Logs(work);

  // Each task got its shard's files as a list, the shards disjoint and together complete.
  const auto assignment = Assignment(2);
  std::set<std::string> listed;
  for (int t = 0; t < 2; ++t) {
    const auto files = Lines(ReadText(work + "/lists/" + std::to_string(t) + ".list"));
    EXPECT_EQ(files.size(), assignment[t].size()) << "shard " << t;
    for (const auto& file : files) EXPECT_TRUE(listed.insert(file).second) << file << " twice";
  }
  EXPECT_EQ(listed.size(), kNames.size());

  const std::string single = dir_ + "/single-collect.db";
  const auto one =
      Execute({kBinary, "collect", "--kernel", "spmv", "--db", single, "--samples", samples, root_},
              dir_ + "/single-collect.log", {"SPARSETUNE_CACHE=" + cache_});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string merged = work + "/sparsetune.db";
  const std::string candidates_sql =
      "SELECT x.fingerprint, s.hash FROM (SELECT matrix_id, schedule_id FROM measurements "
      "UNION SELECT matrix_id, schedule_id FROM failures) r JOIN matrices x ON x.id = r.matrix_id "
      "JOIN schedules s ON s.id = r.schedule_id ORDER BY 1, 2";
  const auto measured = Query(merged, candidates_sql);
  EXPECT_EQ(measured, Query(single, candidates_sql));
  EXPECT_GE(measured.size(), kNames.size());
  EXPECT_EQ(Count(merged, "SELECT COUNT(*) FROM matrices"), static_cast<int64_t>(kNames.size()));
}

}  // namespace
}  // namespace sparsetune
