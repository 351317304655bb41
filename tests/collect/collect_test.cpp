// `sparsetune collect` and `sparsetune db` as a user drives them: measurements land in the
// database, reruns resume instead of repeating, a collection killed with SIGKILL resumes
// without duplicate or torn rows, runaway kernels are abandoned, and bad input exits 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "../cli/cli_support.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::RunCli;
using testing::TempDir;

// Compiled kernels are shared by every test (and kept between runs) next to the binary: the
// cache is content-addressed, so sharing it changes no result, only the time.
std::vector<std::string> Env(const TempDir& dir) {
  const std::string cache = (fs::path(SPARSETUNE_BINARY).parent_path() / "test-jit-cache").string();
  return {"SPARSETUNE_CACHE=" + cache, "XDG_DATA_HOME=" + dir.path() + "/data", "SPARSETUNE_DB="};
}

std::string Generate(const TempDir& dir, const std::string& name, int rows, int nnz, int seed) {
  const std::string path = dir.path() + "/" + name + ".mtx";
  CliResult r = RunCli({"gen", "uniform", "--rows", std::to_string(rows), "--nnz",
                        std::to_string(nnz), "--seed", std::to_string(seed), "-o", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

nlohmann::json Json(const CliResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << r.out << "\nstderr: " << r.err;
    return nlohmann::json::object();
  }
}

// Rows of a query's first column, as text. `quiet`: errors (a database still being created)
// give no rows instead of a failure.
std::vector<std::string> Query(const std::string& db_path, const std::string& sql,
                               bool quiet = false) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    if (!quiet) ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return out;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    if (!quiet) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      out.push_back(text ? reinterpret_cast<const char*>(text) : "");
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

int64_t Count(const std::string& db_path, const std::string& sql) {
  auto rows = Query(db_path, sql);
  return rows.empty() ? -1 : std::stoll(rows[0]);
}

// Integrity of a database after whatever happened to the writer.
void ExpectSound(const std::string& db) {
  EXPECT_EQ(Query(db, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  EXPECT_TRUE(Query(db, "PRAGMA foreign_key_check").empty());
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM (SELECT 1 FROM measurements GROUP BY matrix_id, "
                  "schedule_id, machine_id, dense, dtype HAVING count(*) > 1)"),
            0);
  // A schedule is either measured or failed for a key, never both.
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM measurements m JOIN failures f ON m.matrix_id = "
                  "f.matrix_id AND m.schedule_id = f.schedule_id AND m.machine_id = f.machine_id "
                  "AND m.dense = f.dense AND m.dtype = f.dtype"),
            0);
  // Every measurement is complete: verified, timed over at least 5 runs.
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM measurements WHERE verified != 1 OR reps < 5 OR "
                  "median_ms <= 0 OR min_ms > median_ms OR median_ms > max_ms"),
            0);
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM schedules WHERE id NOT IN (SELECT schedule_id FROM "
                  "measurements UNION SELECT schedule_id FROM failures)"),
            0);
}

TEST(Collect, StoresMeasurementsAndResumes) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 40, 200, 1);
  const std::string b = Generate(dir, "b", 64, 300, 2);
  const std::string db = dir.path() + "/t.db";
  CliResult r = RunCli(
      {"collect", "--no-rules", "--kernel", "spmv", a, b, "--samples", "5", "--db", db, "--json"},
      Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["kernel"], "spmv");
  const int64_t measured = j["measured"], failed = j["failed"];
  EXPECT_EQ(measured + failed, 12) << r.err;  // FixedCSR + 5 samples, two matrices
  EXPECT_GE(measured, 6);
  EXPECT_EQ(j["skipped"], 0);
  EXPECT_GT(j["schedules_per_minute"].get<double>(), 0);
  EXPECT_TRUE(j.contains("busy_matrices"));
  EXPECT_NE(r.err.find("schedules/min"), std::string::npos) << r.err;
  EXPECT_EQ(Count(db, "SELECT count(*) FROM measurements"), measured);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM failures"), failed);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM measurements WHERE source = 'fixed_csr'"), 2);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM matrices"), 2);
  EXPECT_EQ(Query(db, "SELECT name FROM matrices ORDER BY name"),
            (std::vector<std::string>{"a", "b"}));
  ExpectSound(db);

  // A rerun finds everything stored and measures nothing.
  r = RunCli(
      {"collect", "--no-rules", "--kernel", "spmv", a, b, "--samples", "5", "--db", db, "--json"},
      Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = Json(r);
  EXPECT_EQ(j["measured"], 0);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["skipped"], 12);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM measurements"), measured);

  // More samples with the same seed extend the same sequence: only the new ones run.
  r = RunCli(
      {"collect", "--no-rules", "--kernel", "spmv", a, "--samples", "7", "--db", db, "--json"},
      Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = Json(r);
  EXPECT_EQ(j["skipped"], 6);
  EXPECT_EQ(j["measured"].get<int64_t>() + j["failed"].get<int64_t>(), 2);

  // db stats reports the same counts.
  r = RunCli({"db", "stats", "--db", db, "--json"}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = Json(r);
  for (const char* field : {"matrices", "schedules", "measurements", "winners"})
    EXPECT_TRUE(j.contains(field)) << field;
  EXPECT_EQ(j["matrices"], 2);
  EXPECT_EQ(j["measurements"], Count(db, "SELECT count(*) FROM measurements"));
  EXPECT_EQ(j["winners"], 0);
  // ...and per kernel, the failures grouped by reason.
  ASSERT_EQ(j["kernels"].size(), 1u) << j.dump();
  const auto& spmv = j["kernels"][0];
  EXPECT_EQ(spmv["kernel"], "spmv");
  EXPECT_EQ(spmv["matrices"], 2);
  EXPECT_EQ(spmv["measurements"], j["measurements"]);
  int64_t failures = 0;
  for (const auto& [reason, count] : spmv["failures"].items()) {
    EXPECT_EQ(reason.find(':'), std::string::npos) << reason;
    failures += count.get<int64_t>();
  }
  EXPECT_EQ(failures, Count(db, "SELECT count(*) FROM failures"));
  r = RunCli({"db", "stats", "--db", db}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("spmv"), std::string::npos) << r.out;
}

TEST(Collect, OtherKernelsDirectoriesAndTensors) {
  TempDir dir;
  fs::create_directories(dir.path() + "/m");
  Generate(dir, "m/x", 48, 250, 3);
  Generate(dir, "m/y", 30, 90, 4);
  const std::string tensor = dir.path() + "/t.tns";
  ASSERT_EQ(
      RunCli({"gen", "tensor3", "uniform", "--dims", "20,16,12", "--nnz", "300", "-o", tensor})
          .exit_code,
      0);
  const std::string db = dir.path() + "/t.db";
  struct Case {
    std::string kernel, path, dense;
  };
  for (const Case& c : {Case{"spmm", dir.path() + "/m", "j=8"},
                        Case{"sddmm", dir.path() + "/m", "k=8"}, Case{"mttkrp", tensor, "j=4"}}) {
    CliResult r = RunCli({"collect", "--no-rules", "--kernel", c.kernel, c.path, "--samples", "3",
                          "--dense", c.dense, "--db", db, "--json"},
                         Env(dir));
    ASSERT_EQ(r.exit_code, 0) << c.kernel << ": " << r.err;
    nlohmann::json j = Json(r);
    const int files = c.kernel == "mttkrp" ? 1 : 2;
    EXPECT_EQ(j["files"], files);
    EXPECT_EQ(j["measured"].get<int64_t>() + j["failed"].get<int64_t>(), 4 * files) << r.err;
    EXPECT_GE(j["measured"].get<int64_t>(), files) << r.err;
    EXPECT_EQ(Count(db,
                    "SELECT count(*) FROM measurements m JOIN schedules s ON s.id = "
                    "m.schedule_id WHERE s.kernel = '" +
                        c.kernel + "' AND m.dense = '{\"" + c.dense.substr(0, 1) +
                        "\":" + c.dense.substr(2) + "}'"),
              j["measured"].get<int64_t>());
  }
  ExpectSound(db);
}

TEST(Collect, ListFilesAndManifestsRecordWhereMatricesComeFrom) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 40, 200, 1);
  fs::create_directories(dir.path() + "/cache/files");
  fs::create_directories(dir.path() + "/shared/matrices");
  const std::string b = Generate(dir, "cache/files/g1", 30, 100, 2);
  const std::string c = Generate(dir, "shared/matrices/real", 30, 120, 3);
  const std::string list = dir.File("batch.list", "# a batch\n" + a + "\tgen uniform --seed 1\n");
  const std::string manifest =
      dir.File("corpus.tsv",
               "# comment\nname\tkernels\tnnz\tsource\n"
               "g1\tspmv,spmm\t100\tgen uniform --rows 30 --nnz 100 --seed 2\n"
               "real\tspmv\t120\tshared:matrices/real.mtx\n"
               "t1\tmttkrp\t5\tgen tensor3 uniform --dims 5,5,5 --nnz 5 --seed 1\n");
  const std::string db = dir.path() + "/t.db";
  std::vector<std::string> env = Env(dir);
  env.push_back("SPARSETUNE_CORPUS_CACHE=" + dir.path() + "/cache");
  env.push_back("SPARSETUNE_SHARED_DATASETS=" + dir.path() + "/shared");
  CliResult r = RunCli({"collect", "--no-rules", "--kernel", "spmv", list, manifest, "--samples",
                        "1", "--db", db, "--json"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["files"], 3);
  EXPECT_EQ(Query(db, "SELECT name || ' ' || source_path FROM matrices ORDER BY name"),
            (std::vector<std::string>{"a gen uniform --seed 1",
                                      "g1 gen uniform --rows 30 --nnz 100 --seed 2",
                                      "real shared:matrices/real.mtx"}));
  // A generated entry that was never materialized is named with the way to make it.
  r = RunCli({"collect", "--kernel", "mttkrp", manifest, "--db", db}, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("t1.tns does not exist"), std::string::npos) << r.err;
}

TEST(Collect, KilledMidwayResumesWithoutDuplicates) {
  TempDir dir;
  std::vector<std::string> files;
  for (int m = 0; m < 3; ++m)
    files.push_back(Generate(dir, "k" + std::to_string(m), 50 + 10 * m, 250, 10 + m));
  const std::string db = dir.path() + "/kill.db";
  std::vector<std::string> args = {"collect", "--no-rules", "--kernel", "spmv",  "--samples",
                                   "6",       "--db",       db,         "--json"};
  args.insert(args.end(), files.begin(), files.end());

  // Warm the compiled-kernel cache so that the killed run spends its time measuring.
  const std::string warm_db = dir.path() + "/warm.db";
  std::vector<std::string> warm = args;
  warm[7] = warm_db;  // the value of --db
  ASSERT_EQ(RunCli(warm, Env(dir)).exit_code, 0);
  const int64_t total = Count(warm_db,
                              "SELECT (SELECT count(*) FROM measurements) + "
                              "(SELECT count(*) FROM failures)");
  ASSERT_EQ(total, 21);

  // Start the collection and kill it once a few rows are in.
  std::vector<std::string> all = {SPARSETUNE_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = testing::StartProcess(all, "/dev/null", "/dev/null", Env(dir));
  ASSERT_GE(pid, 0);
  int64_t seen = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    if (fs::exists(db)) {
      auto rows = Query(db, "SELECT count(*) FROM measurements", /*quiet=*/true);
      seen = rows.empty() ? 0 : std::stoll(rows[0]);
      if (seen >= 6) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "collect finished before it could be killed";
  ASSERT_GE(seen, 6);
  ExpectSound(db);
  const int64_t before = Count(db,
                               "SELECT (SELECT count(*) FROM measurements) + "
                               "(SELECT count(*) FROM failures)");
  EXPECT_LT(before, total);

  // The rerun skips what was stored and finishes the rest.
  CliResult r = RunCli(args, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["skipped"], before);
  EXPECT_EQ(j["measured"].get<int64_t>() + j["failed"].get<int64_t>(), total - before);
  EXPECT_EQ(Count(db,
                  "SELECT (SELECT count(*) FROM measurements) + "
                  "(SELECT count(*) FROM failures)"),
            total);
  // The same schedules as the uninterrupted run.
  EXPECT_EQ(Query(db, "SELECT hash FROM schedules ORDER BY hash"),
            Query(warm_db, "SELECT hash FROM schedules ORDER BY hash"));
  ExpectSound(db);
}

TEST(Collect, RunawayKernelIsAbandonedAndTheCollectionGoesOn) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 40, 200, 1);
  const std::string db = dir.path() + "/t.db";
  // With a limit far below one verification and timing (several milliseconds even for the
  // fastest kernel), schedules are abandoned: each is recorded as timed out and the command
  // restarts itself to go on with the next.
  CliResult r = RunCli({"collect", "--no-rules", "--kernel", "spmv", a, "--samples", "2", "--db",
                        db, "--hard-limit", "0.001", "--json"},
                       Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = Json(r);
  const int64_t restarts = j["restarts"];
  EXPECT_GE(restarts, 2) << r.err;
  EXPECT_EQ(j["failed_by_reason"].value("timed_out", int64_t(0)), restarts);
  EXPECT_EQ(j["measured"].get<int64_t>() + restarts, 3);
  EXPECT_EQ(j["skipped"], 0);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM failures WHERE reason LIKE 'timed_out:%'"), restarts);
  ExpectSound(db);
}

TEST(Collect, SlowRunsAreRecordedAsTimeouts) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 300, 3000, 1);
  const std::string db = dir.path() + "/t.db";
  CliResult r = RunCli({"collect", "--no-rules", "--kernel", "spmm", a, "--samples", "0", "--db",
                        db, "--max-ms", "0.000001", "--json"},
                       Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["measured"], 0);
  EXPECT_EQ(j["failed_by_reason"]["timed_out"], 1);
  ExpectSound(db);
}

TEST(Db, ExportImportMergeRoundTrip) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 40, 200, 5);
  const std::string db = dir.path() + "/src.db";
  ASSERT_EQ(RunCli({"collect", "--no-rules", "--kernel", "spmv", a, "--samples", "4", "--db", db},
                   Env(dir))
                .exit_code,
            0);
  const std::string out = dir.path() + "/spmv.jsonl.gz";
  CliResult r = RunCli({"db", "export", "--db", db, "--measurements", out}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(out));
  EXPECT_NE(r.err.find("measurements"), std::string::npos) << r.err;

  const std::string fresh = dir.path() + "/fresh.db";
  r = RunCli({"db", "import", "--db", fresh, out}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto stats = [&](const std::string& path) {
    CliResult s = RunCli({"db", "stats", "--db", path, "--json"}, Env(dir));
    EXPECT_EQ(s.exit_code, 0) << s.err;
    nlohmann::json j = Json(s);
    j.erase("database");
    return j;
  };
  EXPECT_EQ(stats(fresh), stats(db));
  // Importing twice adds nothing.
  ASSERT_EQ(RunCli({"db", "import", "--db", fresh, out}, Env(dir)).exit_code, 0);
  EXPECT_EQ(stats(fresh), stats(db));
  // collect on the imported database resumes: nothing left to measure.
  r = RunCli(
      {"collect", "--no-rules", "--kernel", "spmv", a, "--samples", "4", "--db", fresh, "--json"},
      Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["skipped"], 5);

  const std::string merged = dir.path() + "/merged.db";
  r = RunCli({"db", "merge", "--db", merged, db}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(stats(merged), stats(db));

  // The default database lives under the XDG data home.
  r = RunCli({"db", "import", out}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir.path() + "/data/sparsetune/sparsetune.db"));
  r = RunCli({"db", "stats"}, Env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measurements"), std::string::npos);
}

TEST(Collect, BadInputExitsTwo) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 20, 50, 1);
  const std::string db = dir.path() + "/t.db";
  auto expect_2 = [&](std::vector<std::string> args, const std::string& message) {
    CliResult r = RunCli(args, Env(dir));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  expect_2({"collect", "--kernel", "nope", a, "--db", db}, "unknown kernel");
  expect_2({"collect", "--kernel", "spmv", dir.path() + "/missing.mtx", "--db", db}, "missing.mtx");
  expect_2({"collect", "--kernel", "spmv", a, "--samples", "-3", "--db", db}, "--samples");
  expect_2({"collect", "--kernel", "spmv", a, "--samples", "many", "--db", db}, "--samples");
  expect_2({"collect", "--kernel", "spmv", a, "--max-ms", "0", "--db", db}, "--max-ms");
  expect_2({"collect", "--kernel", "spmv", "--db", db}, "PATH");
  fs::create_directories(dir.path() + "/empty");
  expect_2({"collect", "--kernel", "spmv", dir.path() + "/empty", "--db", db}, "no matrix");
  expect_2({"collect", "--kernel", "mttkrp", a, "--db", db}, "order");
  expect_2({"collect", "--kernel", "spmm", a, "--dense", "q=3", "--db", db}, "no dense index q");
  expect_2({"db", "stats", "--db", dir.path() + "/none.db"}, "none.db");
  expect_2({"db", "import", "--db", db, dir.path() + "/none.jsonl.gz"}, "none.jsonl.gz");
  expect_2({"db", "export", "--db", db}, "--measurements");
  EXPECT_FALSE(fs::exists(dir.path() + "/none.db"));
}

TEST(RunRandom, SeedsGiveTheSameValidScheduleEachTime) {
  TempDir dir;
  const std::string a = Generate(dir, "a", 64, 400, 1);
  for (const char* kernel : {"spmv", "sddmm"}) {
    std::vector<std::string> args = {
        "run", a, "--kernel", kernel, "--dense", "k=8", "--schedule", "random:17", "--json"};
    if (std::string(kernel) == "spmv") args.erase(args.begin() + 4, args.begin() + 6);
    CliResult first = RunCli(args, Env(dir));
    ASSERT_EQ(first.exit_code, 0) << first.err;
    CliResult second = RunCli(args, Env(dir));
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(Json(first)["schedule"], Json(second)["schedule"]);
    EXPECT_TRUE(Json(first)["verified"].get<bool>());
    args[args.size() - 2] = "random:18";
    CliResult other = RunCli(args, Env(dir));
    ASSERT_EQ(other.exit_code, 0) << other.err;
    EXPECT_NE(Json(first)["schedule"], Json(other)["schedule"]);
  }
  CliResult r = RunCli({"run", a, "--kernel", "spmv", "--schedule", "random:-1"}, Env(dir));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("seed"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparsetune
