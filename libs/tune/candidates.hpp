// Schedules from rules: those taken from the fastest libraries, Insum's GroupCOO and
// SparseAuto's survivors. candidate_sources.hpp offers them, with the other sources, to tune,
// bench and collect.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"
#include "tensor/coo.hpp"

namespace sparsetune {

struct TuneCandidate {
  Schedule schedule;  // canonical
  std::string json;   // canonical JSON
  // The source's tag, stored with each measurement: fixed_csr, heuristic (the library rules),
  // scorch, groupcoo, model, sparseauto, sampled; ordered variants add "+" and the ordering.
  std::string source;
};

// A few schedules that are strong on most patterns, from what the fastest library kernels do:
// narrow coordinates, nonzero-balanced rows, several partial sums, sliced rows (SELL-C) for
// SpMV; register tiles of the output row for SpMM and MTTKRP; a transposed C for SDDMM; column
// segments sized to the last-level cache where SpMM's B or SDDMM's C does not fit in it
// (`value_bytes` per value); 2-D tiles for SpMM and SDDMM where the pattern (`nnz` entries) is
// dense enough that the gathered operand's slices are reused within a tile. Only those that
// lower for the kernel are returned; empty for kernels without such rules. Stored under the
// source tag "heuristic", as databases already hold them. Given the `matrix`, SpMM's block rows
// are left out where its rows share too few columns (kMaxUnionShare).
std::vector<TuneCandidate> LibraryRuleCandidates(const std::string& kernel,
                                                 const Expression& expression,
                                                 const std::map<std::string, int64_t>& sizes,
                                                 int64_t nnz, int64_t value_bytes = 4,
                                                 const CooTensor* matrix = nullptr);

// SpMM's block rows of R rows are offered while the union of each block's columns counts at
// most this share of its nonzeros (RowGroupPadding at most this times R).
constexpr double kMaxUnionShare = 0.9;

// Insum's fixed-length formats for spmv and spmm: GroupCOO(G) (each row's nonzeros in groups of
// G, the last padded) with G at sqrt(nnz / rows) rounded to a power of two and its two
// power-of-two neighbours, and one BlockGroupCOO (4 x 4 blocks grouped along block rows).
// Empty for other kernels.
std::vector<TuneCandidate> GroupCooCandidates(const std::string& kernel,
                                              const Expression& expression,
                                              const std::map<std::string, int64_t>& sizes,
                                              int64_t nnz);

// SparseAuto's survivors for a fused kernel or an expression (best first; at most `limit`).
std::vector<TuneCandidate> SparseAutoCandidates(const Expression& expression,
                                                const std::vector<int64_t>& dims,
                                                const std::vector<int64_t>& prefix_nnz,
                                                const std::map<std::string, int64_t>& dense,
                                                int limit);

// The canonical JSON of the kernel `schedule` runs on this machine: all threads written as their
// count (a rule's 0 and a drawn schedule's count of every hardware thread compile to the same
// code and run alike, as the thread count is a call's argument).
std::string KernelJsonHere(const Schedule& schedule);

// For an operand whose values are all equal (HasUniformValues): every candidate but FixedCSR
// (TACO's default, the baseline of every speedup) whose format stores no padding zeros reads
// one value instead of one per nonzero (Schedule::uniform_values).
void ApplyUniformValues(std::vector<TuneCandidate>& candidates);

// Appends `candidate` unless a schedule that runs the same kernel here (KernelJsonHere) is
// already there: measuring it twice would spend a place on a time already taken.
void AddDistinct(std::vector<TuneCandidate>& list, TuneCandidate candidate);

}  // namespace sparsetune
