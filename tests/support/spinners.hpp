#pragma once

// Threads that spin until the object goes away: a busy machine made on purpose, beside a
// timing in this process or in a command it runs.

#include <atomic>
#include <thread>
#include <vector>

namespace sparsetune::testing {

class Spinners {
 public:
  explicit Spinners(int count) {
    for (int k = 0; k < count; ++k) {
      threads_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      });
    }
  }
  ~Spinners() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  Spinners(const Spinners&) = delete;
  Spinners& operator=(const Spinners&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace sparsetune::testing
