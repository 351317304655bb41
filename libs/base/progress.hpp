#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sparsetune {

// Progress of a long command on stderr: a bar with a count and an estimated time to go,
// redrawn in place when stderr is a terminal, else a plain line every few seconds (logs).
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, double line_seconds = 10);
  void SetTotal(int64_t total) { total_ = total; }
  // `done` of the total are finished; `detail` says what runs now.
  void Update(int64_t done, const std::string& detail, bool force = false);
  // A line of its own (the bar is redrawn after it).
  void Message(const std::string& text);
  void Finish();
  double ElapsedSeconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  double line_seconds_;
  bool tty_;
  bool drawn_ = false;
  Clock::time_point start_, last_;
  std::string detail_;
};

// "42s", "7m", "1.5h".
std::string FormatDuration(double seconds);

}  // namespace sparsetune
