#pragma once

// Parallel regions that get fewer threads than they ask for, as under OMP_THREAD_LIMIT=1 or
// inside a caller's own parallel code.

#include <omp.h>

namespace sparsetune::testing {

// Runs `body` where a parallel region asking for four threads gets one: inside another
// region, with nested regions inactive.
template <class Body>
void WithTeamsCappedAtOne(Body body) {
  const int saved_levels = omp_get_max_active_levels(), saved_threads = omp_get_max_threads();
  omp_set_max_active_levels(1);
  omp_set_num_threads(4);
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    body();
  }
  omp_set_max_active_levels(saved_levels);
  omp_set_num_threads(saved_threads);
}

}  // namespace sparsetune::testing
