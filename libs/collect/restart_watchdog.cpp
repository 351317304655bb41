#include "collect/restart_watchdog.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace sparsetune {

RestartWatchdog::RestartWatchdog(std::string db_path, std::vector<std::string> argv,
                                 std::string state_variable)
    : db_path_(std::move(db_path)),
      argv_(std::move(argv)),
      state_variable_(std::move(state_variable)),
      thread_([this] { Loop(); }) {}

RestartWatchdog::~RestartWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RestartWatchdog::Arm(double seconds, FailureRecord failure, std::string state) {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = true;
  limit_seconds_ = seconds;
  deadline_ = Clock::now() + std::chrono::microseconds(int64_t(seconds * 1e6));
  failure_ = std::move(failure);
  state_ = std::move(state);
  cv_.notify_all();
}

void RestartWatchdog::Disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

std::vector<std::string> RestartWatchdog::OwnCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

void RestartWatchdog::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
        Clock::now() >= deadline_) {
      Fire();
    }
  }
}

void RestartWatchdog::Fire() {
  std::fprintf(stderr,
               "\nsparsetune: a kernel is still running after %g s; recording it as timed out "
               "and restarting to continue\n",
               limit_seconds_);
  try {
    auto db = Database::Open(db_path_, OpenMode::kReadWrite);
    db->RecordFailure(failure_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsetune: internal error: cannot record the timeout: %s\n", e.what());
    std::fflush(stderr);
    _exit(3);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  setenv(state_variable_.c_str(), state_.c_str(), 1);
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  std::fprintf(stderr, "sparsetune: internal error: cannot restart the command\n");
  _exit(3);
}

}  // namespace sparsetune
