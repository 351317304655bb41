// Guards a collection against a kernel that never ends.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "db/database.hpp"

namespace sparsetune {

// A kernel cannot be stopped from outside its thread, so when a run outlives its limit the
// watchdog records the prepared failure through its own database connection and re-executes
// the command (argv, from /proc/self/exe) with `state` in the environment variable
// `state_variable`; the restarted command skips what is stored and goes on after it.
class RestartWatchdog {
 public:
  RestartWatchdog(std::string db_path, std::vector<std::string> argv, std::string state_variable);
  ~RestartWatchdog();
  RestartWatchdog(const RestartWatchdog&) = delete;
  RestartWatchdog& operator=(const RestartWatchdog&) = delete;

  void Arm(double seconds, FailureRecord failure, std::string state);
  void Disarm();

  // This process's command line, read before anything can change it, for the restart.
  static std::vector<std::string> OwnCommandLine();

 private:
  using Clock = std::chrono::steady_clock;
  void Loop();
  [[noreturn]] void Fire();

  std::string db_path_;
  std::vector<std::string> argv_;
  std::string state_variable_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  double limit_seconds_ = 0;
  Clock::time_point deadline_;
  FailureRecord failure_;
  std::string state_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace sparsetune
