// `sparsetune bench` as a user reads it: the stored winner runs with the thread count it was
// tuned with unless --threads says otherwise (and then the output says so), --csv starts with
// its header, and the human table reads in adaptive time units.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace sparsetune {
namespace {

using testing::CliResult;
using testing::RunCli;
using testing::TempDir;

const std::string kExample = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";

// Tunes the example into `db` quickly and makes the stored winner name `threads` threads, as
// a winner tuned with that many would.
void StoreWinnerWithThreads(const std::string& db, int threads) {
  const CliResult tune = RunCli({"tune", kExample, "--kernel", "spmv", "--db", db, "--no-model",
                                 "--samples", "0", "--orderings", "none", "--json"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  const std::string sql =
      "UPDATE schedules SET canonical_json = json_set(canonical_json, '$.parallel.threads', " +
      std::to_string(threads) + ") WHERE id IN (SELECT schedule_id FROM winners)";
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  EXPECT_EQ(sqlite3_changes(handle), 1);
  sqlite3_close(handle);
}

const nlohmann::json& Result(const nlohmann::json& bench, const std::string& name) {
  for (const auto& r : bench["results"])
    if (r["name"] == name) return r;
  static const nlohmann::json none;
  ADD_FAILURE() << "no contender " << name;
  return none;
}

TEST(BenchOutput, TheStoredWinnerRunsWithItsOwnThreadCount) {
  TempDir dir;
  const std::string db = dir.File("t.db");
  StoreWinnerWithThreads(db, 2);
  const std::vector<std::string> bench = {"bench", kExample,   "--kernel", "spmv",          "--db",
                                          db,      "--min-ms", "1",        "--no-libraries"};

  std::vector<std::string> as_stored = bench;
  as_stored.push_back("--json");
  CliResult r = RunCli(as_stored);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(Result(out, "tuned")["threads"], 2);
  EXPECT_EQ(Result(out, "tuned")["stored_threads"], 2);
  // The others run on the bench's threads and name none.
  EXPECT_FALSE(Result(out, "fixed_csr").contains("stored_threads"));
  // Each of sparsetune's contenders says what it ran, in the form --schedule takes back.
  EXPECT_EQ(Result(out, "tuned")["schedule"]["parallel"]["threads"], 2);
  for (const auto& c : out["results"]) {
    ASSERT_TRUE(c.contains("schedule") && c["schedule"].is_object()) << c.dump();
    EXPECT_FALSE(c["schedule"]["format"].empty()) << c.dump();
  }
  {
    std::ofstream file(dir.File("rule.json"));
    file << Result(out, "heuristic_1")["schedule"].dump();
  }
  std::vector<std::string> again = bench;
  again.insert(again.end(), {"--schedule", dir.File("rule.json"), "--contests", "1", "--json"});
  r = RunCli(again);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json with_file = nlohmann::json::parse(r.out);
  const nlohmann::json& given = Result(with_file, dir.File("rule.json"));
  EXPECT_TRUE(given["verified"].get<bool>()) << given.dump();
  EXPECT_EQ(given["schedule"], Result(out, "heuristic_1")["schedule"]);

  std::vector<std::string> overridden = bench;
  overridden.insert(overridden.end(), {"--threads", "1", "--json"});
  r = RunCli(overridden);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  out = nlohmann::json::parse(r.out);
  EXPECT_EQ(Result(out, "tuned")["threads"], 1);
  EXPECT_EQ(Result(out, "tuned")["stored_threads"], 2);

  // The table says which it was.
  r = RunCli(bench);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tuned runs as its schedule says: 2 threads (--threads N overrides it)"),
            std::string::npos)
      << r.out;
  std::vector<std::string> told = bench;
  told.insert(told.end(), {"--threads", "1"});
  r = RunCli(told);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tuned runs on 1 thread (--threads); its schedule names 2 threads"),
            std::string::npos)
      << r.out;
}

// bench holds every contender until they are timed together: its own kernels, called one after
// another, write one output between them, so an SpMM whose output is large (260 MB) still fits
// where one output per contender would not; with less memory than that, bench times what fits
// and lists the rest as left out, instead of being killed.
class BenchMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(
        RunCli({"gen", "uniform", "--rows", "2000", "--nnz", "4000", "-o", matrix_}).exit_code, 0);
  }
  nlohmann::json Bench(int64_t limit_mb) {
    const CliResult r = RunCli({"bench", matrix_, "--kernel", "spmm", "--dense", "j=32768", "--db",
                                dir_.File("b.db"), "--min-ms", "1", "--no-libraries", "--json"},
                               {}, limit_mb);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }
  TempDir dir_;
  const std::string matrix_ = dir_.File("wide.mtx");
};

TEST_F(BenchMemory, ItsKernelsShareOneOutputSoALargeOneFitsInMemory) {
  const nlohmann::json out = Bench(3500);  // an output per contender would need about 4 GB
  ASSERT_GE(out["results"].size(), 6u);
  for (const auto& c : out["results"]) EXPECT_TRUE(c["verified"].get<bool>()) << c.dump();
}

TEST_F(BenchMemory, WhatDoesNotFitIsLeftOutAndSaysSo) {
  // The operand, its reference and FixedCSR fit; another kernel's own output and the margin
  // kept free do not.
  const nlohmann::json out = Bench(2150);
  ASSERT_GE(out["results"].size(), 6u);
  EXPECT_TRUE(Result(out, "fixed_csr")["verified"].get<bool>());
  for (const auto& c : out["results"]) {
    if (c["name"] == "fixed_csr") continue;
    EXPECT_FALSE(c["verified"].get<bool>()) << c.dump();
    EXPECT_EQ(c["message"].get<std::string>().rfind("left out for memory: it would hold about ", 0),
              0u)
        << c.dump();
  }
}

// --tuned-order calls the given renumbered schedule in its tuned order, and hands the baselines
// the matrix renumbered by the same ordering: the fair contenders of a kernel that stays there.
TEST(BenchOutput, InTheTunedOrderTheBaselinesGetTheMatrixRenumberedAlike) {
  TempDir dir;
  const auto plain = RunCli({"bench", kExample, "--kernel", "spmv", "--db", dir.File("b.db"),
                             "--min-ms", "1", "--contests", "1", "--no-libraries", "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  nlohmann::json ordered = Result(nlohmann::json::parse(plain.out), "fixed_csr")["schedule"];
  ordered["ordering"] = "degree";
  const std::string file = dir.File("degree.json", ordered.dump());
  const auto r =
      RunCli({"bench", kExample, "--kernel", "spmv", "--db", dir.File("b.db"), "--min-ms", "1",
              "--contests", "1", "--tuned-order", "--schedule", file, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  const nlohmann::json& tuned = Result(out, file + "@tuned-order");
  EXPECT_TRUE(tuned["verified"].get<bool>()) << tuned.dump();
  EXPECT_TRUE(tuned["tuned_order"].get<bool>());
  int renumbered = 0;
  for (const auto& c : out["results"]) {
    const std::string name = c["name"];
    if (c["kind"] == "sparsetune" || name.find("@degree") == std::string::npos) continue;
    ++renumbered;
    EXPECT_TRUE(c.value("tuned_order", false)) << c.dump();
    EXPECT_TRUE(c["verified"].get<bool>()) << c.dump();
  }
  EXPECT_GE(renumbered, 2);
  EXPECT_EQ(out["best_sparsetune_in_tuned_order"], file + "@tuned-order");
  const std::string best = out["best_renumbered_baseline"];
  EXPECT_NE(best.find("@degree"), std::string::npos) << best;
  EXPECT_GT(out["speedup_in_tuned_order_vs_best_renumbered_baseline"].get<double>(), 0);
  // The caller's-order comparison stays among the caller's-order contenders.
  EXPECT_EQ(out["best_baseline"].get<std::string>().find('@'), std::string::npos);
  EXPECT_EQ(out["best_sparsetune"].get<std::string>().find("@tuned-order"), std::string::npos);
}

// A library or textbook kernel whose verifying call passes --time-once-over is timed by that
// call alone, in the first contest: the bench's other contenders are still timed in full, and
// the table says which were timed once.
TEST(BenchOutput, ALibraryOverTheCallCapIsTimedOnceByItsVerifyingCall) {
  TempDir dir;
  const std::vector<std::string> bench = {
      "bench",          kExample,   "--kernel", "spmv",       "--db",
      dir.File("b.db"), "--min-ms", "1",        "--contests", "2"};
  std::vector<std::string> capped = bench;
  capped.insert(capped.end(), {"--time-once-over", "0.000001", "--json"});
  CliResult r = RunCli(capped);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int once = 0;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  for (const auto& c : out["results"]) {
    if (!c["verified"].get<bool>()) continue;
    const bool library = c["kind"] != "sparsetune";
    EXPECT_EQ(c.value("timed_once", false), library) << c.dump();
    EXPECT_EQ(c["contest_ms"].size(), library ? 1u : 2u) << c.dump();
    if (!library) continue;
    ++once;
    EXPECT_EQ(c["reps"], 1) << c.dump();
    EXPECT_GT(c["time_ms"].get<double>(), 0) << c.dump();
  }
  EXPECT_GE(once, 2);  // the textbook kernel and Eigen at least

  std::vector<std::string> table = bench;
  table.insert(table.end(), {"--time-once-over", "0.000001"});
  r = RunCli(table);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on its verifying call, over --time-once-over"), std::string::npos) << r.out;

  std::vector<std::string> uncapped = bench;
  uncapped.insert(uncapped.end(), {"--time-once-over", "0", "--json"});
  r = RunCli(uncapped);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json full = nlohmann::json::parse(r.out);
  for (const auto& c : full["results"]) {
    EXPECT_FALSE(c.value("timed_once", false)) << c.dump();
    if (c["verified"].get<bool>()) EXPECT_EQ(c["contest_ms"].size(), 2u) << c.dump();
  }
}

TEST(BenchOutput, CsvStartsWithItsHeaderAndTheTableReadsInUnits) {
  TempDir dir;
  const std::vector<std::string> bench = {"bench",    kExample, "--kernel",
                                          "spmv",     "--db",   dir.File("b.db"),
                                          "--min-ms", "1",      "--no-libraries"};
  std::vector<std::string> csv_args = bench;
  csv_args.push_back("--csv");
  CliResult r = RunCli(csv_args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream csv(r.out);
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "file,kernel,nnz,contender,kind,verified,time_ms,effective_gbs,prepare_ms,probe_gbs,"
            "gflops,flop_probe_gflops,flop_share,version,flags,threads,disturbed,contest_ms");
  const auto fields = [](const std::string& line) {
    return std::count(line.begin(), line.end(), ',') + 1;
  };
  std::string line;
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_EQ(fields(line), fields(header)) << line;
    EXPECT_EQ(line.rfind(kExample + ",spmv,", 0), 0u) << line;
  }
  EXPECT_GT(rows, 1);
  // Progress went to stderr: which contender was prepared, then the timing.
  EXPECT_NE(r.err.find("bench: preparing fixed_csr"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bench: timing"), std::string::npos) << r.err;

  r = RunCli(bench);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Times carry their unit; none is a fraction of a millisecond written in milliseconds.
  const std::regex fixed_row("\n  fixed_csr +sparsetune +[0-9.]+ (us|ms|s) ");
  EXPECT_TRUE(std::regex_search(r.out, fixed_row)) << r.out;
  EXPECT_FALSE(std::regex_search(r.out, std::regex(" 0\\.[0-9]+ ms"))) << r.out;
  EXPECT_NE(r.out.find("probes      memory bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s is effective bandwidth: the least bytes a call must move"),
            std::string::npos)
      << r.out;
}

// One packing or thread placement can be lucky: each contest prepares every contender afresh and
// times them together. A contender reports its median contest, or, when the contests together saw
// both thread placements often enough, the two placements' medians weighed by how often each
// occurs.
TEST(BenchOutput, EachContenderReportsItsMedianContest) {
  TempDir dir;
  const std::vector<std::string> bench = {"bench",          kExample,         "--kernel", "spmv",
                                          "--db",           dir.File("b.db"), "--min-ms", "1",
                                          "--no-libraries", "--json"};
  std::vector<std::string> three = bench;
  three.insert(three.end(), {"--contests", "3"});
  CliResult r = RunCli(three);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["contests"], 3);
  EXPECT_EQ(out["contest_round_trip_ns"].size(), 3u);
  // The bandwidth probe read after each contest; its median is the one the shares divide by.
  std::vector<double> probes = out["bandwidth_probe_gbs_by_contest"].get<std::vector<double>>();
  ASSERT_EQ(probes.size(), 3u);
  std::sort(probes.begin(), probes.end());
  EXPECT_GT(probes.front(), 0);
  EXPECT_EQ(out["bandwidth_probe_gbs"].get<double>(), probes[1]);
  // Its arrays pass the last-level cache: each at least 128 MiB and the cache (up to 2 GiB).
  const int64_t array_bytes = out["bandwidth_probe_array_bytes"].get<int64_t>();
  const int64_t llc_bytes = out["llc_bytes"].get<int64_t>();
  EXPECT_GE(array_bytes, int64_t(128) << 20);
  EXPECT_GE(array_bytes, std::min(llc_bytes, int64_t(2) << 30));
  int verified = 0;
  for (const auto& c : out["results"]) {
    if (!c["verified"].get<bool>()) continue;
    ++verified;
    std::vector<double> each = c["contest_ms"].get<std::vector<double>>();
    ASSERT_EQ(each.size(), 3u) << c.dump();
    std::sort(each.begin(), each.end());
    if (c.contains("far_weight")) {
      const double w = c["far_weight"].get<double>();
      EXPECT_GT(w, 0) << c.dump();
      EXPECT_LT(w, 1) << c.dump();
      EXPECT_DOUBLE_EQ(c["time_ms"].get<double>(),
                       (1 - w) * c["near_ms"].get<double>() + w * c["far_ms"].get<double>())
          << c.dump();
    } else {
      EXPECT_DOUBLE_EQ(c["time_ms"].get<double>(), each[1]) << c.dump();
    }
  }
  EXPECT_GT(verified, 1);
  // Every contest prepared and timed every contender.
  size_t timings = 0;
  for (size_t at = r.err.find("bench: timing"); at != std::string::npos;
       at = r.err.find("bench: timing", at + 1))
    ++timings;
  EXPECT_EQ(timings, 3u) << r.err;

  std::vector<std::string> none = bench;
  none.insert(none.end(), {"--contests", "0"});
  r = RunCli(none);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--contests"), std::string::npos) << r.err;
}

// A rule is often the stored winner or a given schedule: the one kernel is timed once and the
// other name shares its times, so the table never shows two draws of noise as two kernels.
TEST(BenchOutput, AKernelListedTwiceIsTimedOnce) {
  TempDir dir;
  const std::vector<std::string> bench = {"bench",          kExample,         "--kernel", "spmv",
                                          "--db",           dir.File("b.db"), "--min-ms", "1",
                                          "--no-libraries", "--contests",     "1",        "--json"};
  CliResult r = RunCli(bench);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  auto without_threads = [](nlohmann::json schedule) {
    schedule["parallel"].erase("threads");
    return schedule;
  };
  // A rule that is not FixedCSR's kernel, given again as a file.
  std::string rule;
  for (const auto& c : out["results"]) {
    const std::string name = c["name"];
    if (name.rfind("heuristic_", 0) == 0 && !c.contains("same_as") &&
        without_threads(c["schedule"]) != without_threads(Result(out, "fixed_csr")["schedule"])) {
      rule = name;
      break;
    }
  }
  ASSERT_FALSE(rule.empty()) << r.out;
  const std::string file = dir.File("rule.json");
  std::ofstream(file) << Result(out, rule)["schedule"].dump();

  std::vector<std::string> again = bench;
  again.insert(again.end(), {"--schedule", file});
  r = RunCli(again);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  out = nlohmann::json::parse(r.out);
  // The given file comes first (it runs as stored); the rule is its repeat.
  const nlohmann::json& given = Result(out, file);
  const nlohmann::json& repeat = Result(out, rule);
  EXPECT_FALSE(given.contains("same_as")) << given.dump();
  EXPECT_EQ(repeat["same_as"], file) << repeat.dump();
  EXPECT_TRUE(repeat["verified"].get<bool>());
  EXPECT_EQ(repeat["time_ms"], given["time_ms"]);
  EXPECT_EQ(repeat["contest_ms"], given["contest_ms"]);
  EXPECT_NE(out["best_sparsetune"], rule);
  // Every repeat names a contender with the same schedule, timed on as many threads.
  for (const auto& c : out["results"]) {
    if (!c.contains("same_as")) continue;
    const nlohmann::json& timed = Result(out, c["same_as"]);
    EXPECT_FALSE(timed.contains("same_as"));
    EXPECT_EQ(without_threads(c["schedule"]), without_threads(timed["schedule"]));
    EXPECT_EQ(c["threads"], timed["threads"]);
  }
  // The progress says so instead of preparing it.
  EXPECT_NE(r.err.find(rule + " is the kernel of " + file + ": timed once"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("preparing " + rule + " ("), std::string::npos) << r.err;

  // With --threads 1 the file and the rule run on one thread alike: still one kernel.
  again.insert(again.end(), {"--threads", "1"});
  r = RunCli(again);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Result(nlohmann::json::parse(r.out), rule)["same_as"], file);
}

}  // namespace
}  // namespace sparsetune
