#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace sparsetune::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `program` (a path, or a name found on PATH) with `args` (no shell), stdin closed,
// capturing both streams; `env` entries replace inherited ones of the same name. With
// limit_mb > 0 the program runs under that address-space limit (ulimit -v), through sh.
inline CliResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                            const std::vector<std::string>& env = {}, int64_t limit_mb = 0) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path() / ("sparsetune-cli-" + std::to_string(getpid()) +
                                                    "-" + std::to_string(counter++));
  fs::create_directories(dir);
  const std::string out_path = (dir / "out").string(), err_path = (dir / "err").string();
  std::vector<std::string> all = {program};
  if (limit_mb > 0)
    all = {"/bin/sh", "-c",
           "ulimit -v " + std::to_string(limit_mb * 1024) + " && exec \"$0\" \"$@\"", program};
  all.insert(all.end(), args.begin(), args.end());
  CliResult result;
  result.exit_code = WaitForExit(StartProcess(all, out_path, err_path, env));
  result.out = ReadText(out_path);
  result.err = ReadText(err_path);
  fs::remove_all(dir);
  return result;
}

// `env` for a sparsetune process of a test: its tunes store what they measure whatever else the
// machine runs (SPARSETUNE_ON_BUSY=ignore, as ctest sets for every test), also when a test
// binary is run by hand, unless the environment or `env` already says otherwise.
inline std::vector<std::string> TestEnvironment(std::vector<std::string> env) {
  const std::string busy = "SPARSETUNE_ON_BUSY=";
  bool given = std::getenv("SPARSETUNE_ON_BUSY") != nullptr;
  for (const std::string& entry : env) given = given || entry.rfind(busy, 0) == 0;
  if (!given) env.push_back(busy + "ignore");
  return env;
}

// Runs the real sparsetune binary of this build (see RunProgram, TestEnvironment).
inline CliResult RunCli(const std::vector<std::string>& args,
                        const std::vector<std::string>& env = {}, int64_t limit_mb = 0) {
  return RunProgram(SPARSETUNE_BINARY, args, TestEnvironment(env), limit_mb);
}

// A file under a fresh temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("sparsetune-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name, const std::string& contents = "") const {
    const std::string p = (path_ / name).string();
    if (!contents.empty()) std::ofstream(p) << contents;
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace sparsetune::testing
