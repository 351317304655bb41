// The vector register file the generated kernels are compiled for (-march=native: this
// machine's), for choices that must fit a tile in registers.
#pragma once

#include <cstdint>

namespace sparsetune {

struct VectorRegisters {
  int count = 16;      // architectural vector registers
  int64_t bytes = 16;  // bytes each
};

// AVX-512: 32 of 64 bytes; AVX and AVX2: 16 of 32; SSE: 16 of 16; AArch64 (NEON): 32 of 16.
const VectorRegisters& MachineVectorRegisters();

}  // namespace sparsetune
