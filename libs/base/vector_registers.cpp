#include "base/vector_registers.hpp"

namespace sparsetune {

const VectorRegisters& MachineVectorRegisters() {
  static const VectorRegisters registers = [] {
    VectorRegisters r;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
      r = {32, 64};
    } else if (__builtin_cpu_supports("avx")) {
      r = {16, 32};
    }
#elif defined(__aarch64__)
    r = {32, 16};
#endif
    return r;
  }();
  return registers;
}

}  // namespace sparsetune
