// Latency of `sparsetune query`, the call build scripts make at configure time, against a
// database the size of a tuned collection: 10,000 winners (distinct fingerprints, schedules
// sampled from the WACO templates of spmv, spmm, sddmm and mttkrp).
//
// Times, each as median / p90 / max over its runs:
//   the real binary exec'd (posix_spawn, stdout read through a pipe, waited for):
//     query --help (process start and argument parsing only, for scale),
//     query --fingerprint H --kernel spmv --db F --json for stored and absent fingerprints,
//     query FILE --kernel spmv --db F --json on a small matrix (reads and fingerprints it);
//   in process: sparsetune::Query() for the same three requests, and the parts of a lookup
//   (machine detection, opening the database, the winner's row).
//
// Usage: query_latency [--binary PATH] [--matrix FILE] [--winners N] [--runs N] [--db PATH]
//   --binary   the sparsetune executable (default: apps/sparsetune/sparsetune beside bench/)
//   --matrix   the file for `query FILE` (default: datasets/examples/cavity24.mtx)
//   --winners  winners stored (default 10000)
//   --runs     exec'd queries per row (default 200; in process 10 times as many)
//   --db       where the database is built (default: a temporary file, removed at the end)

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/elapsed.hpp"
#include "db/database.hpp"
#include "db/machine.hpp"
#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "jit/jit.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/fingerprint.hpp"
#include "tune/query.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sparsetune::Database;
using sparsetune::MsSince;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "query_latency: %s\n", message.c_str());
  std::exit(1);
}

struct Row {
  std::string name;
  std::vector<double> ms;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t at = std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5));
  return v[at];
}

void PrintTable(const std::string& title, const std::vector<Row>& rows) {
  std::printf("\n%s\n", title.c_str());
  std::printf("  %-52s %6s %10s %10s %10s\n", "", "runs", "median ms", "p90 ms", "max ms");
  for (const Row& r : rows) {
    if (r.ms.empty()) continue;
    std::printf("  %-52s %6zu %10.3f %10.3f %10.3f\n", r.name.c_str(), r.ms.size(),
                Percentile(r.ms, 0.5), Percentile(r.ms, 0.9),
                *std::max_element(r.ms.begin(), r.ms.end()));
  }
}

// Runs the binary as a build script would: its stdout read to the end through a pipe, stderr
// discarded. Returns the exit code; the time covers spawn to reaped.
int Exec(const std::vector<std::string>& args, double* ms, std::string* out) {
  std::vector<std::string> all = args;
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) Fail("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) Fail("cannot run " + args[0]);
  out->clear();
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) out->append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  *ms = MsSince(start);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string RandomFingerprint(std::mt19937_64& rng) {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", (unsigned long long)rng(),
                (unsigned long long)rng());
  return text;
}

std::string DefaultBinary() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return (self.parent_path().parent_path() / "apps" / "sparsetune" / "sparsetune").string();
}

// Sizes of the dense-only indices, as the database keys a winner (the kernel's defaults).
sparsetune::DenseSizes DenseKey(const std::string& kernel) {
  const auto* def = sparsetune::FindKernel(kernel);
  sparsetune::DenseSizes dense;
  for (const auto& index : sparsetune::KernelExpression(kernel).DenseOnlyIndices())
    dense[index] = def->dense_defaults.at(index);
  return dense;
}

struct Options {
  std::string binary = DefaultBinary();
  std::string matrix = std::string(SPARSETUNE_SOURCE_DIR) + "/datasets/examples/cavity24.mtx";
  std::string db_path;
  int winners = 10000, runs = 200;
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (a + 1 >= argc)
      Fail(
          "usage: query_latency [--binary PATH] [--matrix FILE] [--winners N] "
          "[--runs N] [--db PATH]");
    const std::string value = argv[++a];
    if (arg == "--binary")
      o.binary = value;
    else if (arg == "--matrix")
      o.matrix = value;
    else if (arg == "--winners")
      o.winners = std::stoi(value);
    else if (arg == "--runs")
      o.runs = std::stoi(value);
    else if (arg == "--db")
      o.db_path = value;
    else
      Fail("unknown option " + arg);
  }
  if (!fs::exists(o.binary)) Fail(o.binary + " does not exist (give --binary PATH)");
  if (o.winners < 1 || o.runs < 1) Fail("--winners and --runs must be positive");
  return o;
}

// What a tuned collection leaves behind: `winners` stored winners, the example matrix among the
// spmv ones, so that `query FILE` hits.
struct StoredWinners {
  sparsetune::MachineInfo machine;
  int64_t matrix_nnz = 0;
  std::vector<std::string> spmv_hits;
  std::map<std::string, int> stored;  // winners per kernel
};

StoredWinners BuildDatabase(const Options& o, std::mt19937_64& rng) {
  const std::string& matrix = o.matrix;
  const std::string& db_path = o.db_path;
  const int winners = o.winners;
  StoredWinners out;
  const auto build_start = Clock::now();
  out.machine =
      sparsetune::DetectMachine(sparsetune::Jit::DefaultCompiler(), sparsetune::Jit::Flags());
  const sparsetune::CooTensor tensor = sparsetune::ReadTensorFile(matrix);
  const std::string file_fingerprint = sparsetune::PatternFingerprint(tensor);
  // Kernel shares of the winners: half spmv, as a solver-heavy collection.
  const std::vector<std::pair<std::string, int>> kernels = {
      {"spmv", 10}, {"spmm", 4}, {"sddmm", 3}, {"mttkrp", 3}};
  std::map<std::string, std::vector<std::string>> pools;  // canonical schedule JSON per kernel
  for (const auto& [kernel, share] : kernels) {
    const auto waco = sparsetune::WacoTemplate::ForKernel(kernel);
    const std::vector<int64_t> dims(waco->expression().sparse_input().indices.size(), 4096);
    const auto sizes = sparsetune::ResolveIndexSizes(
        waco->expression(), dims, sparsetune::FindKernel(kernel)->dense_defaults);
    for (const auto& s : waco->SampleDistinct(sizes, 300, rng))
      pools[kernel].push_back(waco->ToSchedule(s).CanonicalJson());
  }
  {
    auto db = Database::Open(db_path, sparsetune::OpenMode::kReadWrite);
    const int64_t machine_id = db->UpsertMachine(out.machine);
    int total_share = 0;
    for (const auto& k : kernels) total_share += k.second;
    std::uniform_int_distribution<int> share(0, total_share - 1);
    std::uniform_int_distribution<int64_t> side(1000, 2000000);
    std::lognormal_distribution<double> time_ms(-1.0, 1.5);
    for (int w = 0; w < winners; ++w) {
      // The example matrix is one of the spmv winners, so `query FILE` hits.
      std::string kernel = "spmv";
      if (w > 0) {
        int pick = share(rng);
        for (const auto& [name, s] : kernels) {
          if (pick < s) {
            kernel = name;
            break;
          }
          pick -= s;
        }
      }
      sparsetune::MatrixRecord matrix_record;
      matrix_record.fingerprint = w == 0 ? file_fingerprint : RandomFingerprint(rng);
      matrix_record.name = w == 0 ? fs::path(matrix).stem().string() : "m" + std::to_string(w);
      const size_t order = kernel == "mttkrp" ? 3 : 2;
      for (size_t m = 0; m < order; ++m) matrix_record.dims.push_back(side(rng));
      matrix_record.nnz = matrix_record.dims[0] * 12;
      db->UpsertMatrix(matrix_record);
      sparsetune::MeasurementRecord measurement;
      measurement.key = {matrix_record.fingerprint, kernel, machine_id, DenseKey(kernel),
                         sparsetune::DType::kF32};
      measurement.expression = sparsetune::FindKernel(kernel)->expression;
      const auto& pool = pools[kernel];
      measurement.schedule_json = pool[rng() % pool.size()];
      measurement.median_ms = measurement.min_ms = measurement.max_ms = time_ms(rng);
      measurement.reps = 20;
      measurement.verified = true;
      measurement.source = "sampled";
      const int64_t schedule_id = db->RecordMeasurement(measurement);
      db->SetWinner(measurement.key, schedule_id, measurement.median_ms,
                    measurement.median_ms * 1.5);
      ++out.stored[kernel];
      if (kernel == "spmv") out.spmv_hits.push_back(matrix_record.fingerprint);
    }
  }
  const double build_ms = MsSince(build_start);
  std::printf("database %s: %d winners (", db_path.c_str(), winners);
  for (const auto& [kernel, count] : out.stored) std::printf(" %s %d", kernel.c_str(), count);
  std::printf(" ), %.1f MB, built in %.1f s\n", fs::file_size(db_path) / 1e6, build_ms / 1000);

  out.matrix_nnz = tensor.nnz();
  return out;
}

// Exec'd, as a build script runs it.
void TimeExecd(const Options& o, const std::vector<std::string>& hits,
               const std::vector<std::string>& misses) {
  const std::string& binary = o.binary;
  const std::string& matrix = o.matrix;
  const std::string& db_path = o.db_path;
  const int runs = o.runs;
  Row help{"sparsetune query --help (process start)", {}};
  Row exec_hit{"sparsetune query --fingerprint H --json, stored", {}};
  Row exec_miss{"sparsetune query --fingerprint H --json, absent", {}};
  Row exec_file{"sparsetune query FILE --json, stored", {}};
  std::string out;
  double ms = 0;
  // One untimed run of each warms the page cache for the binary and the database.
  Exec({binary, "query", "--help"}, &ms, &out);
  Exec({binary, "query", matrix, "--kernel", "spmv", "--db", db_path, "--json"}, &ms, &out);
  for (int r = 0; r < runs; ++r) {
    if (Exec({binary, "query", "--help"}, &ms, &out) != 0) Fail("query --help failed");
    help.ms.push_back(ms);
    const std::vector<std::string> base = {binary, "query", "--kernel", "spmv",
                                           "--db", db_path, "--json",   "--fingerprint"};
    auto args = base;
    args.push_back(hits[r]);
    int code = Exec(args, &ms, &out);
    if (code != 0 || out.find("\"hit\": true") == std::string::npos)
      Fail("a stored fingerprint was not found (exit " + std::to_string(code) + "): " + out);
    exec_hit.ms.push_back(ms);
    args = base;
    args.push_back(misses[r]);
    code = Exec(args, &ms, &out);
    if (code != 1) Fail("an absent fingerprint gave exit " + std::to_string(code));
    exec_miss.ms.push_back(ms);
    // Reading the file makes these slower; a quarter as many keeps the run short.
    if (r % 4 == 0) {
      code =
          Exec({binary, "query", matrix, "--kernel", "spmv", "--db", db_path, "--json"}, &ms, &out);
      if (code != 0) Fail("query FILE missed (exit " + std::to_string(code) + ")");
      exec_file.ms.push_back(ms);
    }
  }
  PrintTable("exec'd binary (spawn to exit, stdout read through a pipe)",
             {help, exec_hit, exec_miss, exec_file});
}

// In process: Query() and the parts of a lookup.
void TimeInProcess(const Options& o, const sparsetune::MachineInfo& machine,
                   const std::vector<std::string>& hits, const std::vector<std::string>& misses) {
  const std::string& matrix = o.matrix;
  const std::string& db_path = o.db_path;
  const int runs = o.runs;
  Row query_hit{"Query() by fingerprint, stored", {}};
  Row query_miss{"Query() by fingerprint, absent", {}};
  Row query_file{"Query() FILE, stored", {}};
  Row detect{"  part: DetectMachine (runs `c++ --version`)", {}};
  Row open{"  part: Database::Open read-only", {}};
  Row lookup{"  part: FindMachine + FindWinner on an open database", {}};
  sparsetune::QueryRequest request;
  request.kernel = "spmv";
  request.expression = sparsetune::KernelExpression("spmv");
  request.db_path = db_path;
  const int in_process_runs = runs * 10;
  auto db = Database::Open(db_path, sparsetune::OpenMode::kReadOnly);
  for (int r = 0; r < in_process_runs; ++r) {
    request.path.clear();
    request.fingerprint = hits[r % runs];
    auto start = Clock::now();
    if (!sparsetune::Query(request).hit) Fail("Query() missed a stored fingerprint");
    query_hit.ms.push_back(MsSince(start));
    request.fingerprint = misses[r % runs];
    start = Clock::now();
    if (sparsetune::Query(request).hit) Fail("Query() found an absent fingerprint");
    query_miss.ms.push_back(MsSince(start));
    if (r % 40 == 0) {
      request.fingerprint.clear();
      request.path = matrix;
      start = Clock::now();
      if (!sparsetune::Query(request).hit) Fail("Query() FILE missed");
      query_file.ms.push_back(MsSince(start));
    }
    if (r % 10 == 0) {
      start = Clock::now();
      sparsetune::DetectMachine(sparsetune::Jit::DefaultCompiler(), sparsetune::Jit::Flags());
      detect.ms.push_back(MsSince(start));
      start = Clock::now();
      Database::Open(db_path, sparsetune::OpenMode::kReadOnly);
      open.ms.push_back(MsSince(start));
    }
    const auto start_lookup = Clock::now();
    const auto machine_id = db->FindMachine(machine);
    sparsetune::TuningKey key{
        hits[r % runs], "spmv", machine_id.value_or(-1), {}, sparsetune::DType::kF32};
    if (!db->FindWinner(key)) Fail("FindWinner missed a stored fingerprint");
    lookup.ms.push_back(MsSince(start_lookup));
  }
  PrintTable("in process (sparsetune::Query opens the database and detects the machine each call)",
             {query_hit, query_miss, query_file, detect, open, lookup});
  db.reset();
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseOptions(argc, argv);
  const bool temporary_db = o.db_path.empty();
  if (temporary_db)
    o.db_path = (fs::temp_directory_path() / ("query-latency-" + std::to_string(getpid()) + ".db"))
                    .string();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(o.db_path + suffix);

  std::mt19937_64 rng(20240611);
  const StoredWinners database = BuildDatabase(o, rng);
  std::printf("binary %s\nmatrix %s (%lld nonzeros)\n", o.binary.c_str(), o.matrix.c_str(),
              (long long)database.matrix_nnz);

  // Requests alternate between stored and absent fingerprints in a fixed random order, so
  // neither kind gets the warmer page cache.
  std::vector<std::string> hits, misses;
  for (int r = 0; r < o.runs; ++r) {
    hits.push_back(database.spmv_hits[rng() % database.spmv_hits.size()]);
    misses.push_back(RandomFingerprint(rng));
  }

  TimeExecd(o, hits, misses);
  TimeInProcess(o, database.machine, hits, misses);
  if (temporary_db) {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(o.db_path + suffix);
  }
  return 0;
}
