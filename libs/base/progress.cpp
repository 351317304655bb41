#include "base/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sparsetune {

std::string FormatDuration(double seconds) {
  char text[32];
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  if (seconds < 90) {
    std::snprintf(text, sizeof text, "%.0fs", seconds);
  } else if (seconds < 5400) {
    std::snprintf(text, sizeof text, "%.0fm", seconds / 60);
  } else {
    std::snprintf(text, sizeof text, "%.1fh", seconds / 3600);
  }
  return text;
}

ProgressBar::ProgressBar(std::string label, int64_t total, double line_seconds)
    : label_(std::move(label)),
      total_(total),
      line_seconds_(line_seconds),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_(Clock::now()) {}

double ProgressBar::ElapsedSeconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void ProgressBar::Update(int64_t done, const std::string& detail, bool force) {
  done_ = done;
  detail_ = detail;
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (!force && since < (tty_ ? 0.2 : line_seconds_)) return;
  last_ = now;
  const double elapsed = ElapsedSeconds();
  const double eta = done > 0 ? elapsed * double(total_ - done) / double(done) : -1;
  char line[512];
  std::snprintf(line, sizeof line, "%lld/%lld, ETA %s%s%s", (long long)done, (long long)total_,
                FormatDuration(eta).c_str(), detail.empty() ? "" : " | ", detail.c_str());
  if (tty_) {
    const int width = 24;
    const int filled =
        total_ > 0
            ? int(width * std::clamp<int64_t>(done, 0, total_) / std::max<int64_t>(total_, 1))
            : 0;
    std::fprintf(stderr, "\r\033[K%s [%s%s] %s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), line);
    drawn_ = true;
  } else {
    std::fprintf(stderr, "%s: %s\n", label_.c_str(), line);
  }
  std::fflush(stderr);
}

void ProgressBar::Message(const std::string& text) {
  if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
  if (tty_ && drawn_) Update(done_, detail_, true);
}

void ProgressBar::Finish() {
  if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
  std::fflush(stderr);
}

}  // namespace sparsetune
