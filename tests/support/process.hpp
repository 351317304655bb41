// Programs started from tests: no shell, stdin closed, output into files.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace sparsetune::testing {

// This process's environment with `env` entries ("NAME=value") replacing those of their name.
inline std::vector<std::string> EnvironmentWith(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& given : env) replaced |= given.rfind(name, 0) == 0;
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), env.begin(), env.end());
  return out;
}

// Starts `args` (a path, or a program found on PATH) with stdin closed, stdout into out_path and
// stderr into err_path (both into one file when the paths are equal); -1 when it cannot start.
inline pid_t StartProcess(std::vector<std::string> args, const std::string& out_path,
                          const std::string& err_path, const std::vector<std::string>& env = {}) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = EnvironmentWith(env);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  if (err_path == out_path) {
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
  }
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// The exit code of a started process (128 + the signal that ended it; -1 for no process).
inline int WaitForExit(pid_t pid) {
  if (pid < 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `args` to its end, its output into `log`.
inline CommandResult RunCommand(const std::vector<std::string>& args, const std::string& log,
                                const std::vector<std::string>& env = {}) {
  CommandResult result;
  result.exit_code = WaitForExit(StartProcess(args, log, log, env));
  result.output = ReadText(log);
  return result;
}

}  // namespace sparsetune::testing
