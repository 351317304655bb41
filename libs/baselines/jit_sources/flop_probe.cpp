// The machine's peak fused multiply-add rate on all threads, for one value type: every thread
// runs twelve independent FMA chains held in vector registers of the native width (AVX-512,
// else AVX2 with FMA, else SSE2 multiply and add). Compiled at first use by sparsetune's JIT
// with the generated kernels' flags, so "native" means what those kernels may use. The host
// prepends `#define ST_VALUE double` for double values.
//
//   double st_flop_probe(int threads, char* isa, int isa_size, int* lanes)
//     GFLOP/s (an FMA counts two), the best of several timed runs of at least 40 ms each; the
//     instruction set's name and the lanes per vector are written to isa and lanes.
#include <immintrin.h>
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#ifndef ST_VALUE
#define ST_VALUE float
#endif

namespace {

constexpr bool kDouble = sizeof(ST_VALUE) == 8;

#if defined(__AVX512F__)
constexpr const char* kIsa = "avx512";
struct Ops {
  using Vec = typename std::conditional<kDouble, __m512d, __m512>::type;
};
inline __m512 Fma(__m512 a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline __m512d Fma(__m512d a, __m512d b, __m512d c) {
  return _mm512_fmadd_pd(a, b, c);
}
inline void Set(__m512& v, double x) {
  v = _mm512_set1_ps(float(x));
}
inline void Set(__m512d& v, double x) {
  v = _mm512_set1_pd(x);
}
inline void Store(ST_VALUE* out, __m512 v) {
  _mm512_storeu_ps(reinterpret_cast<float*>(out), v);
}
inline void Store(ST_VALUE* out, __m512d v) {
  _mm512_storeu_pd(reinterpret_cast<double*>(out), v);
}
#elif defined(__AVX__) && defined(__FMA__)
constexpr const char* kIsa = "avx2-fma";
struct Ops {
  using Vec = typename std::conditional<kDouble, __m256d, __m256>::type;
};
inline __m256 Fma(__m256 a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline __m256d Fma(__m256d a, __m256d b, __m256d c) {
  return _mm256_fmadd_pd(a, b, c);
}
inline void Set(__m256& v, double x) {
  v = _mm256_set1_ps(float(x));
}
inline void Set(__m256d& v, double x) {
  v = _mm256_set1_pd(x);
}
inline void Store(ST_VALUE* out, __m256 v) {
  _mm256_storeu_ps(reinterpret_cast<float*>(out), v);
}
inline void Store(ST_VALUE* out, __m256d v) {
  _mm256_storeu_pd(reinterpret_cast<double*>(out), v);
}
#else
constexpr const char* kIsa = "sse2";
struct Ops {
  using Vec = typename std::conditional<kDouble, __m128d, __m128>::type;
};
inline __m128 Fma(__m128 a, __m128 b, __m128 c) {
  return _mm_add_ps(_mm_mul_ps(a, b), c);
}
inline __m128d Fma(__m128d a, __m128d b, __m128d c) {
  return _mm_add_pd(_mm_mul_pd(a, b), c);
}
inline void Set(__m128& v, double x) {
  v = _mm_set1_ps(float(x));
}
inline void Set(__m128d& v, double x) {
  v = _mm_set1_pd(x);
}
inline void Store(ST_VALUE* out, __m128 v) {
  _mm_storeu_ps(reinterpret_cast<float*>(out), v);
}
inline void Store(ST_VALUE* out, __m128d v) {
  _mm_storeu_pd(reinterpret_cast<double*>(out), v);
}
#endif

using Vec = Ops::Vec;
constexpr int kLanes = sizeof(Vec) / sizeof(ST_VALUE);
constexpr int kChains = 12;

// Each chain runs acc = acc * m + a, which converges to a / (1 - m): the values stay normal.
// Returns the sum of all lanes so that nothing is optimized away.
__attribute__((noinline)) double Chains(int64_t iterations, double seed) {
  Vec m, a, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
  Set(m, 0.999);
  Set(a, 1e-3);
  Set(c0, seed);
  Set(c1, seed + 1);
  Set(c2, seed + 2);
  Set(c3, seed + 3);
  Set(c4, seed + 4);
  Set(c5, seed + 5);
  Set(c6, seed + 6);
  Set(c7, seed + 7);
  Set(c8, seed + 8);
  Set(c9, seed + 9);
  Set(c10, seed + 10);
  Set(c11, seed + 11);
  for (int64_t it = 0; it < iterations; ++it) {
    c0 = Fma(c0, m, a);
    c1 = Fma(c1, m, a);
    c2 = Fma(c2, m, a);
    c3 = Fma(c3, m, a);
    c4 = Fma(c4, m, a);
    c5 = Fma(c5, m, a);
    c6 = Fma(c6, m, a);
    c7 = Fma(c7, m, a);
    c8 = Fma(c8, m, a);
    c9 = Fma(c9, m, a);
    c10 = Fma(c10, m, a);
    c11 = Fma(c11, m, a);
    // Keeps the compiler from reordering or collapsing the chains.
    __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
    __asm__ volatile("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
  }
  const Vec all[kChains] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  double sum = 0;
  for (const Vec& v : all) {
    ST_VALUE lanes[kLanes];
    Store(lanes, v);
    for (int l = 0; l < kLanes; ++l) sum += double(lanes[l]);
  }
  return sum;
}

// Seconds for every thread to run `iterations`.
double TimeAll(int threads, int64_t iterations, double* sink) {
  double total = 0;
  const double start = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : total)
  total += Chains(iterations, 1.0 + omp_get_thread_num());
  const double seconds = omp_get_wtime() - start;
  *sink += total;
  return seconds;
}

}  // namespace

extern "C" double st_flop_probe(int threads, char* isa, int isa_size, int* lanes) {
  double sink = 0;
  int64_t iterations = 1 << 16;
  // Grows the run to at least 40 ms (this also warms up the cores' vector units).
  while (TimeAll(threads, iterations, &sink) < 0.04 && iterations < (int64_t(1) << 34))
    iterations *= 2;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const double seconds = TimeAll(threads, iterations, &sink);
    if (seconds < best) best = seconds;
  }
  std::snprintf(isa, static_cast<size_t>(isa_size), "%s", kIsa);
  *lanes = kLanes;
  const double flops = 2.0 * kChains * kLanes * double(iterations) * threads;
  // The sink is finite unless something went wrong; a NaN probe would show it.
  return sink == sink ? flops / best / 1e9 : sink;
}
