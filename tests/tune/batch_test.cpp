// sparsetune batch: the SuiteSparse catalogue and its layouts, shards, and whole batches as a
// user runs them: a bad file reported without ending the batch, reruns that resume, and
// several processes (one killed) sharing one database.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/cli_support.hpp"
#include "db/database.hpp"
#include "tune/batch.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;
using testing::TempDir;

const std::string kShared = SPARSETUNE_SHARED_DIR;
const std::string kCatalog = kShared + "/datasets/catalog/ssstats.csv";
const std::string kMatrices = kShared + "/datasets/matrices";

// Small real matrices (85 to 1,033 stored nonzeros): each tunes in well under a second.
const std::vector<std::string> kSmall = {"bcspwr01", "bcspwr02", "bcspwr03",    "bcspwr04",
                                         "bcspwr05", "ash219",   "bcsstk01",    "d_dyn",
                                         "west0067", "cage5",    "lp_adlittle", "impcol_a"};

// Few, fast candidates: FixedCSR, the heuristic ones and two samples.
const std::vector<std::string> kFastTune = {"--kernel", "spmv", "--samples", "2", "--no-model"};

bool HaveSharedData() {
  return fs::exists(kCatalog) && fs::exists(kMatrices + "/bcspwr01.mtx");
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Copies the named shared matrices into dir/name.mtx.
void CopyMatrices(const std::string& dir, const std::vector<std::string>& names) {
  fs::create_directories(dir);
  for (const auto& name : names)
    fs::copy_file(kMatrices + "/" + name + ".mtx", dir + "/" + name + ".mtx");
}

CatalogEntry EntryNamed(const std::vector<CatalogEntry>& entries, const std::string& group,
                        const std::string& name) {
  for (const auto& e : entries) {
    if (e.group == group && e.name == name) return e;
  }
  ADD_FAILURE() << group << "/" << name << " is not in the catalogue";
  return {};
}

nlohmann::json DbStats(const std::string& db) {
  const auto r = RunCli({"db", "stats", "--db", db, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// The batch's JSON rows by matrix name.
std::map<std::string, nlohmann::json> RowsByName(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : report["matrices"]) rows[row["name"].get<std::string>()] = row;
  return rows;
}

// --- The catalogue ----------------------------------------------------------------------------

TEST(Catalog, ReadsTheRealCatalogue) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  const std::vector<CatalogEntry> entries = ReadCatalog(kCatalog);
  ASSERT_EQ(entries.size(), 2893u);
  const CatalogEntry& first = entries.front();
  EXPECT_EQ(first.group, "HB");
  EXPECT_EQ(first.name, "1138_bus");
  EXPECT_EQ(first.rows, 1138);
  EXPECT_EQ(first.cols, 1138);
  EXPECT_EQ(first.nnz, 4054);
  EXPECT_TRUE(first.is_real);
  EXPECT_EQ(first.kind, "power network problem");
  EXPECT_EQ(first.nnz_with_zeros, 4054);
  EXPECT_EQ(first.line, 3);
  const CatalogEntry bcsstk01 = EntryNamed(entries, "HB", "bcsstk01");
  EXPECT_EQ(bcsstk01.nnz, 400);
  EXPECT_EQ(bcsstk01.kind, "structural problem");
}

TEST(Catalog, FiltersByGroupKindAndSize) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  const std::vector<CatalogEntry> entries = ReadCatalog(kCatalog);
  CatalogFilter group;
  group.group = "HB";
  const auto hb = FilterCatalog(entries, group);
  EXPECT_GT(hb.size(), 100u);
  EXPECT_LT(hb.size(), entries.size());
  for (const auto& e : hb) EXPECT_EQ(e.group, "HB");

  CatalogFilter kind;
  kind.kind = "power network";
  const auto power = FilterCatalog(entries, kind);
  EXPECT_FALSE(power.empty());
  for (const auto& e : power) EXPECT_NE(e.kind.find("power network"), std::string::npos) << e.kind;

  CatalogFilter all;
  all.group = "HB";
  all.kind = "structural";
  all.max_nnz = 1000;
  const auto small = FilterCatalog(entries, all);
  EXPECT_FALSE(small.empty());
  bool has_bcsstk01 = false;
  for (const auto& e : small) {
    EXPECT_EQ(e.group, "HB");
    EXPECT_NE(e.kind.find("structural"), std::string::npos);
    EXPECT_LE(e.nnz, 1000);
    has_bcsstk01 |= e.name == "bcsstk01";
  }
  EXPECT_TRUE(has_bcsstk01);
  // Every entry of the whole catalogue that passes is in the result.
  int64_t expected = 0;
  for (const auto& e : entries)
    expected += e.group == "HB" && e.kind.find("structural") != std::string::npos && e.nnz <= 1000;
  EXPECT_EQ(static_cast<int64_t>(small.size()), expected);
}

TEST(Catalog, BadFilesNameTheLine) {
  TempDir dir;
  const std::string header = "2\n08-Oct-2020 17:09:58\n";
  const std::string good = "HB,a,2,2,3,1,0,0,1,1,1,structural problem,3\n";
  const std::string cut = dir.File("cut.csv", header + good);
  try {
    ReadCatalog(cut);
    ADD_FAILURE() << "a catalogue cut short was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), cut);
    EXPECT_NE(e.cause().find("declares 2"), std::string::npos) << e.what();
  }
  const std::string bad =
      dir.File("bad.csv", header + good + "HB,b,2,2,many,1,0,0,1,1,1,structural problem,3\n");
  try {
    ReadCatalog(bad);
    ADD_FAILURE() << "a non-numeric nnz was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bad);
    EXPECT_EQ(e.line(), 4);
    EXPECT_NE(e.cause().find("nnz"), std::string::npos) << e.what();
  }
  const std::string short_line = dir.File("short.csv", header + good + "HB,b,2,2\n");
  EXPECT_THROW(ReadCatalog(short_line), InputError);
  EXPECT_THROW(ReadCatalog(dir.File("nocount.csv", "date\n" + good)), InputError);
  EXPECT_THROW(ReadCatalog(dir.path() + "/absent.csv"), InputError);
  // A kind holding a comma stays one field.
  const std::string comma =
      dir.File("comma.csv", "1\ndate\nG,c,2,2,3,1,0,0,1,1,1,graph, directed,3\n");
  const auto entries = ReadCatalog(comma);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].kind, "graph, directed");
  EXPECT_EQ(entries[0].nnz_with_zeros, 3);
}

TEST(Catalog, FindsTheCollectionsLayoutsUnderARoot) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  const std::vector<CatalogEntry> all = ReadCatalog(kCatalog);
  TempDir dir;
  const std::string root = dir.path() + "/root";
  CopyMatrices(root + "/HB/bcspwr01", {"bcspwr01"});  // Group/Name/Name.mtx
  CopyMatrices(root + "/HB", {"bcspwr02"});           // Group/Name.mtx
  CopyMatrices(root, {"ash219"});                     // Name.mtx
  // Group/Name.tar.gz, as the collection ships it: Name/Name.mtx inside.
  CopyMatrices(dir.path() + "/west0067", {"west0067"});
  ASSERT_EQ(std::system(("tar -C " + dir.path() + " -czf " + root +
                         "/HB/west0067.tar.gz west0067/west0067.mtx")
                            .c_str()),
            0);
  std::vector<CatalogEntry> entries;
  for (const char* name : {"bcspwr01", "bcspwr02", "bcspwr03", "ash219", "west0067"})
    entries.push_back(EntryNamed(all, "HB", name));

  EXPECT_EQ(FindCatalogFile(root, entries[0]), root + "/HB/bcspwr01/bcspwr01.mtx");
  EXPECT_EQ(FindCatalogFile(root, entries[1]), root + "/HB/bcspwr02.mtx");
  EXPECT_EQ(FindCatalogFile(root, entries[2]), "");
  EXPECT_EQ(FindCatalogFile(root, entries[3]), root + "/ash219.mtx");
  EXPECT_EQ(FindCatalogFile(root, entries[4]), root + "/HB/west0067.tar.gz");

  const std::vector<BatchItem> items = ItemsFromCatalog(entries, root);
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0].name, "HB/bcspwr01");
  EXPECT_EQ(items[0].nnz, entries[0].nnz);
  EXPECT_EQ(items[0].cost, entries[0].nnz);
  EXPECT_TRUE(items[0].missing.empty());
  EXPECT_TRUE(items[2].path.empty());
  EXPECT_NE(items[2].missing.find("HB/bcspwr03"), std::string::npos) << items[2].missing;

  // The whole batch over a catalogue of these five: four tuned (the archive read as it is),
  // one missing, which is reported but is no failure.
  std::string catalog = "5\n08-Oct-2020 17:09:58\n";
  const std::vector<std::string> lines = [&] {
    std::vector<std::string> out;
    std::ifstream in(kCatalog);
    std::string line;
    while (std::getline(in, line)) out.push_back(line);
    return out;
  }();
  for (const auto& e : entries) catalog += lines[static_cast<size_t>(e.line - 1)] + "\n";
  const std::string csv = dir.File("five.csv", catalog);
  const std::string summary = dir.path() + "/summary.csv";
  const auto r = RunCli(Concat({"batch", "--catalog", csv, "--root", root, "--db",
                                dir.path() + "/t.db", "--summary", summary, "--json"},
                               kFastTune));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["total"], 5);
  EXPECT_EQ(report["tuned"].get<int>() + report["from_db"].get<int>(), 4);
  EXPECT_EQ(report["missing"], 1);
  EXPECT_EQ(report["failed"], 0);
  auto rows = RowsByName(report);
  EXPECT_EQ(rows["HB/bcspwr03"]["status"], "missing");
  EXPECT_EQ(rows["HB/west0067"]["path"], root + "/HB/west0067.tar.gz");
  EXPECT_EQ(rows["HB/west0067"]["nnz"], 294);
  const std::string text = Slurp(summary);
  EXPECT_EQ(text.rfind("name,path,status,nnz,winner_ms,fixed_csr_ms,speedup,tune_ms,message\n", 0),
            0u)
      << text;
  EXPECT_NE(text.find("HB/bcspwr03,,missing,"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);

  // The filters apply before the layouts: one group of one.
  const auto one = RunCli(Concat({"batch", "--catalog", csv, "--root", root, "--db",
                                  dir.path() + "/t.db", "--max-nnz", "200", "--json"},
                                 kFastTune));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto small = nlohmann::json::parse(one.out);
  EXPECT_EQ(small["total"], 2);  // bcspwr01 (131) and bcspwr02 (167)
  EXPECT_EQ(small["from_db"], 2);
}

// --- Shards -----------------------------------------------------------------------------------

TEST(Shards, ParsesIOverN) {
  const Shard shard = ParseShard("2/5");
  EXPECT_EQ(shard.index, 2);
  EXPECT_EQ(shard.count, 5);
  for (const char* bad : {"5/5", "-1/4", "1", "a/b", "0/0", "1/2/3", ""})
    EXPECT_THROW(ParseShard(bad), InputError) << bad;
}

TEST(Shards, BalancesByCostNotByCount) {
  // One large matrix against seven small ones: the large one is a shard of its own.
  const std::vector<int64_t> costs = {1, 1, 1, 100, 1, 1, 1, 1};
  const std::vector<int> shards = AssignShards(costs, 2);
  ASSERT_EQ(shards.size(), costs.size());
  for (size_t k = 0; k < costs.size(); ++k) {
    if (k == 3) continue;
    EXPECT_NE(shards[k], shards[3]) << k;
  }
  // Equal costs alternate, the first to shard 0.
  EXPECT_EQ(AssignShards({5, 5, 5, 5, 5}, 2), (std::vector<int>{0, 1, 0, 1, 0}));
  // More shards than items: the extra shards are empty.
  EXPECT_EQ(AssignShards({3, 7}, 4), (std::vector<int>{1, 0}));
}

TEST(Shards, TheCatalogueSplitsDisjointCompleteAndBalanced) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  CatalogFilter filter;
  filter.group = "HB";
  const std::vector<BatchItem> items =
      ItemsFromCatalog(FilterCatalog(ReadCatalog(kCatalog), filter), "/nonexistent-root");
  ASSERT_GT(items.size(), 100u);
  int64_t largest = 0;
  for (const auto& item : items) largest = std::max(largest, item.cost);
  for (int count : {1, 3, 4, 7}) {
    std::multiset<std::string> seen;
    std::vector<int64_t> loads;
    for (int index = 0; index < count; ++index) {
      const std::vector<BatchItem> shard = SelectShard(items, {index, count});
      // Every process computes the same shard.
      const std::vector<BatchItem> again = SelectShard(items, {index, count});
      ASSERT_EQ(shard.size(), again.size());
      int64_t load = 0;
      for (size_t k = 0; k < shard.size(); ++k) {
        EXPECT_EQ(shard[k].name, again[k].name);
        seen.insert(shard[k].name);
        load += shard[k].cost;
      }
      loads.push_back(load);
    }
    // Disjoint and complete: every item exactly once.
    ASSERT_EQ(seen.size(), items.size()) << count;
    for (const auto& item : items) EXPECT_EQ(seen.count(item.name), 1u) << item.name;
    // Largest first onto the lightest shard: no shard is heavier than another by more than
    // one matrix.
    const auto [lightest, heaviest] = std::minmax_element(loads.begin(), loads.end());
    EXPECT_LE(*heaviest - *lightest, largest) << count;
  }
}

TEST(Shards, FilesBalanceByTheirSize) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  TempDir dir;
  CopyMatrices(dir.path() + "/m", kSmall);
  const std::vector<BatchItem> items = ItemsFromPaths({dir.path() + "/m"});
  ASSERT_EQ(items.size(), kSmall.size());
  for (const auto& item : items) {
    EXPECT_EQ(item.cost, static_cast<int64_t>(fs::file_size(item.path))) << item.path;
    EXPECT_EQ(item.nnz, -1);
  }
  // Sorted, each once even when named twice.
  const auto twice = ItemsFromPaths({dir.path() + "/m", dir.path() + "/m/cage5.mtx"});
  EXPECT_EQ(twice.size(), kSmall.size());
  EXPECT_TRUE(
      std::is_sorted(items.begin(), items.end(),
                     [](const BatchItem& a, const BatchItem& b) { return a.path < b.path; }));
}

// --- Whole batches ----------------------------------------------------------------------------

TEST(BatchCli, ABadFileIsReportedAndTheBatchGoesOn) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  TempDir dir;
  const std::string folder = dir.path() + "/m";
  CopyMatrices(folder, {"bcspwr01", "ash219"});
  CopyMatrices(folder + "/deeper", {"cage5"});
  std::ofstream(folder + "/bad.mtx") << "%%MatrixMarket matrix coordinate real general\n"
                                        "3 3 2\n1 1 x\n";
  std::ofstream(folder + "/notes.txt") << "not a matrix, and not read\n";
  const std::string db = dir.path() + "/t.db";
  const std::string summary = dir.path() + "/summary.csv";
  const auto r =
      RunCli(Concat({"batch", folder, "--db", db, "--summary", summary, "--json"}, kFastTune));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["total"], 4);
  EXPECT_EQ(report["tuned"], 3);
  EXPECT_EQ(report["failed"], 1);
  auto rows = RowsByName(report);
  ASSERT_EQ(rows.count("bad"), 1u);
  EXPECT_EQ(rows["bad"]["status"], "failed");
  EXPECT_EQ(rows["bad"]["error"], "input");
  EXPECT_NE(rows["bad"]["message"].get<std::string>().find("bad.mtx:3"), std::string::npos)
      << rows["bad"];
  EXPECT_EQ(rows["cage5"]["status"], "tuned");
  EXPECT_EQ(rows["cage5"]["nnz"], 233);
  EXPECT_GT(rows["cage5"]["winner_ms"].get<double>(), 0);
  EXPECT_GT(rows["cage5"]["speedup"].get<double>(), 0);
  EXPECT_NE(Slurp(summary).find("bad.mtx:3"), std::string::npos);
  EXPECT_NE(r.err.find("bad.mtx:3"), std::string::npos) << r.err;
  // The others are stored: query answers them from the database.
  for (const auto& name : {"bcspwr01", "ash219", "deeper/cage5"})
    EXPECT_EQ(
        RunCli({"query", folder + "/" + name + ".mtx", "--kernel", "spmv", "--db", db}).exit_code,
        0)
        << name;
  EXPECT_EQ(DbStats(db)["winners"], 3);

  // A rerun measures nothing new: every good matrix comes from the database.
  const nlohmann::json before = DbStats(db);
  const auto again = RunCli(Concat({"batch", folder, "--db", db, "--json"}, kFastTune));
  EXPECT_EQ(again.exit_code, 2) << again.err;
  const auto second = nlohmann::json::parse(again.out);
  EXPECT_EQ(second["tuned"], 0);
  EXPECT_EQ(second["from_db"], 3);
  EXPECT_EQ(second["failed"], 1);
  EXPECT_EQ(DbStats(db), before);
  // Without the bad file, all is well.
  const auto good = RunCli(Concat(
      {"batch", folder + "/bcspwr01.mtx", folder + "/deeper", "--db", db, "--json"}, kFastTune));
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(nlohmann::json::parse(good.out)["from_db"], 2);
}

// --tuned-order tunes every matrix for calls in its tuned order and stores those winners apart:
// query --tuned-order answers them, a rerun finds them, and the caller's order is still to tune.
TEST(BatchCli, TheTunedOrderIsTunedAndStoredApart) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  TempDir dir;
  const std::string folder = dir.path() + "/m";
  CopyMatrices(folder, {"bcspwr01", "cage5"});
  const std::string db = dir.path() + "/t.db";
  const auto r =
      RunCli(Concat({"batch", folder, "--db", db, "--tuned-order", "--json"}, kFastTune));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report["tuned_order"].get<bool>());
  EXPECT_EQ(report["tuned"], 2);
  for (const auto& name : {"bcspwr01", "cage5"}) {
    const std::string file = folder + "/" + name + ".mtx";
    EXPECT_EQ(RunCli({"query", file, "--kernel", "spmv", "--db", db, "--tuned-order"}).exit_code, 0)
        << name;
    EXPECT_EQ(RunCli({"query", file, "--kernel", "spmv", "--db", db}).exit_code, 1) << name;
  }
  const auto again =
      RunCli(Concat({"batch", folder, "--db", db, "--tuned-order", "--json"}, kFastTune));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["from_db"], 2);
  const auto caller = RunCli(Concat({"batch", folder, "--db", db, "--json"}, kFastTune));
  ASSERT_EQ(caller.exit_code, 0) << caller.err;
  EXPECT_FALSE(nlohmann::json::parse(caller.out)["tuned_order"].get<bool>());
  EXPECT_EQ(nlohmann::json::parse(caller.out)["tuned"], 2);
}

TEST(BatchCli, UsageErrorsEndTheCommand) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  const std::string m = kMatrices + "/bcspwr01.mtx";
  EXPECT_EQ(RunCli(Concat({"batch", m, "--db", db, "--shard", "4/4"}, kFastTune)).exit_code, 2);
  EXPECT_EQ(RunCli(Concat({"batch", m, "--db", db, "--group", "HB"}, kFastTune)).exit_code, 2);
  EXPECT_EQ(
      RunCli(Concat({"batch", m, "--db", db, "--catalog", kCatalog, "--root", "."}, kFastTune))
          .exit_code,
      2);
  EXPECT_EQ(RunCli(Concat({"batch", "--catalog", kCatalog, "--db", db}, kFastTune)).exit_code, 2);
  const auto empty = RunCli(Concat({"batch", dir.path(), "--db", db}, kFastTune));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("no matrix"), std::string::npos) << empty.err;
  const std::string text = dir.File("text.db", "not a database");
  const auto bad_db = RunCli(Concat({"batch", m, "--db", text}, kFastTune));
  EXPECT_EQ(bad_db.exit_code, 2);
  EXPECT_NE(bad_db.err.find("text.db"), std::string::npos) << bad_db.err;
}

// A batch process started with its streams in files; the caller waits for it.
pid_t StartBatch(const std::vector<std::string>& args, const std::string& out_path,
                 const std::string& err_path) {
  std::vector<std::string> all = {SPARSETUNE_BINARY, "batch"};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = testing::StartProcess(all, out_path, err_path, testing::TestEnvironment({}));
  EXPECT_GE(pid, 0);
  return pid;
}

// Waits until err_path shows the first finished matrix; false if the process ended first.
bool WaitForFirstMatrix(pid_t pid, const std::string& err_path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Slurp(err_path).find("batch: 1/") != std::string::npos) return true;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Kills pid and says whether it was still running (so the kill landed mid-batch).
bool KillRunning(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) return false;
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

int WaitExit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(BatchCli, ConcurrentShardsAndAKillLoseAndDuplicateNothing) {
  if (!HaveSharedData()) GTEST_SKIP() << "no shared datasets under " << kShared;
  TempDir dir;
  const std::string folder = dir.path() + "/m";
  CopyMatrices(folder, kSmall);
  const std::string db = dir.path() + "/shared.db";
  auto out = [&](const std::string& name) { return dir.path() + "/" + name; };

  // Four shards and an unsharded run at once: the unsharded one tunes the same matrices as
  // the shards, at the same time.
  std::vector<pid_t> shards;
  for (int i = 0; i < 4; ++i) {
    const std::string tag = "shard" + std::to_string(i);
    shards.push_back(StartBatch(Concat({folder, "--db", db, "--shard", std::to_string(i) + "/4",
                                        "--summary", out(tag + ".csv")},
                                       kFastTune),
                                out(tag + ".out"), out(tag + ".err")));
  }
  const pid_t whole =
      StartBatch(Concat({folder, "--db", db}, kFastTune), out("whole.out"), out("whole.err"));
  // Shard 0 is killed after its first matrix, and so is the unsharded run (else it would
  // finish shard 0's share and leave the resume nothing to do).
  ASSERT_TRUE(WaitForFirstMatrix(shards[0], out("shard0.err"))) << Slurp(out("shard0.err"));
  EXPECT_TRUE(KillRunning(shards[0])) << "shard 0 ended before the kill";
  ASSERT_TRUE(WaitForFirstMatrix(whole, out("whole.err"))) << Slurp(out("whole.err"));
  EXPECT_TRUE(KillRunning(whole)) << "the unsharded run ended before the kill";
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(WaitExit(shards[i]), 0) << Slurp(out("shard" + std::to_string(i) + ".err"));
  }
  // The killed shard's summary holds the matrices it finished, and fewer than its share.
  const std::string killed_summary = Slurp(out("shard0.csv"));
  const auto killed_rows = std::count(killed_summary.begin(), killed_summary.end(), '\n') - 1;
  EXPECT_GE(killed_rows, 1);
  EXPECT_LT(killed_rows, static_cast<long>(SelectShard(ItemsFromPaths({folder}), {0, 4}).size()));

  // What is stored before the resume.
  std::set<std::string> stored;
  for (const auto& name : kSmall) {
    const int code =
        RunCli({"query", folder + "/" + name + ".mtx", "--kernel", "spmv", "--db", db}).exit_code;
    ASSERT_TRUE(code == 0 || code == 1) << name;
    if (code == 0) stored.insert(name);
  }

  // The resume redoes exactly the unfinished matrices.
  const auto r = RunCli(Concat({"batch", folder, "--db", db, "--json"}, kFastTune));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["total"], static_cast<int>(kSmall.size()));
  auto rows = RowsByName(report);
  for (const auto& name : kSmall) {
    ASSERT_EQ(rows.count(name), 1u) << name;
    EXPECT_EQ(rows[name]["status"], stored.count(name) ? "from_db" : "tuned") << name;
  }

  // Every matrix has exactly one winner; nothing is stored twice.
  const nlohmann::json stats = DbStats(db);
  EXPECT_EQ(stats["matrices"], static_cast<int>(kSmall.size()));
  EXPECT_EQ(stats["winners"], static_cast<int>(kSmall.size()));
  for (const auto& name : kSmall) {
    EXPECT_EQ(
        RunCli({"query", folder + "/" + name + ".mtx", "--kernel", "spmv", "--db", db}).exit_code,
        0)
        << name;
  }
  auto database = Database::Open(db, OpenMode::kReadOnly);
  MeasurementFilter all;
  all.verified_only = false;
  std::set<std::string> keys;
  for (const MeasurementRow& row : database->Measurements(all)) {
    const std::string key = row.fingerprint + "|" + std::to_string(row.machine_id) + "|" +
                            row.schedule.kernel + "|" + row.schedule.hash + "|" +
                            DenseSizesToText(row.dense);
    EXPECT_TRUE(keys.insert(key).second) << "measured twice: " << key;
  }
  EXPECT_EQ(static_cast<int64_t>(keys.size()), stats["measurements"].get<int64_t>());
}

}  // namespace
}  // namespace sparsetune
