// Matrix Market parse throughput: sparsetune's reader against a naive std::ifstream >> reader,
// on a generated 10M-entry real general file (1M x 1M, random coordinates), in one run.
// Usage: parse_throughput [entries] [dimension]

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/read.hpp"
#include "io/read_internal.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Writes the file with to_chars into a large buffer: generation must not dominate the run.
void Generate(const std::string& path, int64_t entries, int64_t dimension) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%% generated\n");
  std::fprintf(f, "%lld %lld %lld\n", static_cast<long long>(dimension),
               static_cast<long long>(dimension), static_cast<long long>(entries));
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int64_t> index(1, dimension);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<char> buffer(size_t(1) << 22);
  size_t used = 0;
  for (int64_t e = 0; e < entries; ++e) {
    if (buffer.size() - used < 128) {
      std::fwrite(buffer.data(), 1, used, f);
      used = 0;
    }
    char* p = buffer.data() + used;
    char* end = buffer.data() + buffer.size();
    p = std::to_chars(p, end, index(rng)).ptr;
    *p++ = ' ';
    p = std::to_chars(p, end, index(rng)).ptr;
    *p++ = ' ';
    p = std::to_chars(p, end, value(rng)).ptr;  // shortest text that reads back exactly
    *p++ = '\n';
    used = static_cast<size_t>(p - buffer.data());
  }
  std::fwrite(buffer.data(), 1, used, f);
  std::fclose(f);
}

// The obvious reader: skip comments, read the size line, then >> three fields per entry.
size_t NaiveRead(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && !line.empty() && line[0] == '%') {
  }
  std::istringstream size_line(line);
  int64_t rows = 0, cols = 0, nnz = 0;
  size_line >> rows >> cols >> nnz;
  std::vector<int32_t> row, col;
  std::vector<double> val;
  row.reserve(static_cast<size_t>(nnz));
  col.reserve(static_cast<size_t>(nnz));
  val.reserve(static_cast<size_t>(nnz));
  int64_t i = 0, j = 0;
  double v = 0;
  for (int64_t e = 0; e < nnz && (in >> i >> j >> v); ++e) {
    row.push_back(static_cast<int32_t>(i - 1));
    col.push_back(static_cast<int32_t>(j - 1));
    val.push_back(v);
  }
  return val.size();
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct Timing {
  double wall = 0;  // median seconds
  double cpu = 0;   // median CPU seconds of this process (all threads)
};

Timing Median(int runs, const std::function<size_t()>& run, size_t expected, const char* what) {
  std::vector<double> walls, cpus;
  for (int r = 0; r < runs; ++r) {
    const double cpu_start = CpuSeconds();
    const auto start = Clock::now();
    const size_t n = run();
    walls.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    cpus.push_back(CpuSeconds() - cpu_start);
    if (n != expected) {
      std::fprintf(stderr, "%s read %zu entries, expected %zu\n", what, n, expected);
      std::exit(1);
    }
  }
  std::sort(walls.begin(), walls.end());
  std::sort(cpus.begin(), cpus.end());
  return {walls[walls.size() / 2], cpus[cpus.size() / 2]};
}

std::string LoadAverage() {
  std::string text;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    char buffer[128] = {};
    if (std::fgets(buffer, sizeof buffer, f)) text = buffer;
    std::fclose(f);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.empty() ? "unknown" : text;
}

void Report(const char* what, const Timing& t, double megabytes) {
  std::printf("%-46s %7.3f s %8.1f MB/s   cpu %7.3f s\n", what, t.wall, megabytes / t.wall, t.cpu);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t entries = argc > 1 ? std::atoll(argv[1]) : 10'000'000;
  const int64_t dimension = argc > 2 ? std::atoll(argv[2]) : 1'000'000;
  if (argc > 3 || entries <= 0 || dimension <= 0) {
    std::fprintf(stderr, "usage: parse_throughput [entries (default 10000000)] [dimension]\n");
    return 2;
  }
  char dir_pattern[] = "/tmp/parse_throughput_XXXXXX";
  if (!mkdtemp(dir_pattern)) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string path = std::string(dir_pattern) + "/random.mtx";
  const auto start = Clock::now();
  Generate(path, entries, dimension);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  const double megabytes = static_cast<double>(std::ftell(f)) / 1e6;
  std::fclose(f);
  std::printf("file: %lld entries, %lld x %lld, %.1f MB (generated in %.1f s)\n",
              static_cast<long long>(entries), static_cast<long long>(dimension),
              static_cast<long long>(dimension), megabytes,
              std::chrono::duration<double>(Clock::now() - start).count());
  std::printf("threads available: %u; median of 3 runs each; load average %s\n",
              std::thread::hardware_concurrency(), LoadAverage().c_str());

  const size_t expected = static_cast<size_t>(entries);
  // The parse alone: file to COO arrays, as the naive reader does (no sorting).
  const Timing parse = Median(
      3,
      [&] {
        sparsetune::io_internal::ParseOptions options;
        options.canonicalize = false;
        const auto bytes = sparsetune::io_internal::LoadFile(path);
        return static_cast<size_t>(
            sparsetune::io_internal::ParseMatrixMarket(bytes.view(), path, nullptr, options).nnz());
      },
      expected, "sparsetune parse");
  // The whole ReadTensorFile: also sorts and sums duplicates (random coordinates repeat).
  const Timing full = Median(
      3,
      [&] {
        const auto t = sparsetune::ReadTensorFile(path);
        return static_cast<size_t>(t.nnz() + t.duplicates_summed);
      },
      expected, "ReadTensorFile");
  const Timing naive = Median(
      3, [&] { return NaiveRead(path); }, expected, "naive");

  Report("sparsetune parse (file -> COO arrays)", parse, megabytes);
  Report("sparsetune ReadTensorFile (+ sort, sum dups)", full, megabytes);
  Report("naive std::ifstream >> reader", naive, megabytes);
  std::printf("ratio parse / naive:          %.1fx (cpu time %.1fx)\n", naive.wall / parse.wall,
              naive.cpu / parse.cpu);
  std::printf("ratio ReadTensorFile / naive: %.1fx (cpu time %.1fx)\n", naive.wall / full.wall,
              naive.cpu / full.cpu);
  std::printf("load average at the end: %s\n", LoadAverage().c_str());

  std::remove(path.c_str());
  rmdir(dir_pattern);
  return 0;
}
