// One tune, end to end: read the operand, answer from the database when a winner is stored,
// else gather candidates (candidate_sources.hpp), measure them (measuring.hpp), store every
// result and the winner (storing.hpp), report and emit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "ir/expression.hpp"
#include "tensor/permutation.hpp"
#include "tune/measuring.hpp"
#include "tune/storing.hpp"  // KernelKey: the report's kernel

namespace sparsetune {

struct TuneRequest {
  std::string path;    // the sparse matrix or tensor file
  std::string kernel;  // a named kernel, or "" for an expression
  Expression expression;
  std::map<std::string, int64_t> dense;  // sizes of the dense-only indices (defaults applied)
  DType dtype = DType::kF32;
  std::string db_path;
  int samples = -1;  // sampled SuperSchedules; -1: 16 without a cost model, none with one
  // The cost model: "" uses the shipped models/<kernel> when it is there; a folder must load.
  std::string model_dir;
  bool use_model = true;
  // Kernels without a template sample from the generic sampler only when asked: its random
  // loop trees of fused kernels are often thousands of times slower than SparseAuto's.
  bool sample_generic = false;
  // A run slower than this (and than 20 times FixedCSR's first run) stops that candidate.
  double max_ms = 1000;
  // Cost-model candidates, when a model is available; 0: as many as the model's manifest says
  // (ModelTopK: SDDMM's 30, else 10).
  int top_k = 0;
  // Schedules of each step of the second round (refinement.hpp): one move from the fastest
  // measured so far, drawn at random; 0: no second round.
  int refine = 8;
  // Steps of the second round: each starts from the fastest after the step before, so a
  // split size two moves from the first round's best is reached (hill climbing). One by
  // default: in ablation run 14 a second step won 4 of 11 no-model tunes but 1 of 11 with
  // the model (by 1%), for 8 more candidates each.
  int refine_steps = 1;
  // Schedules one move from the final round's winner, timed beside it in a last round
  // (measuring.hpp's leader round); 0: none. In seven SDDMM tunes it changed two winners, each
  // 4.5-5% faster in a later bench and none slower, for 22% more tune time (docs/ablation.md).
  int leader_round = 8;
  int search_ef = 100;  // the search's beam width (hnswlib's ef)
  int sparseauto_limit = 8;
  // Orderings tried on the best schedules of the first round (measuring.hpp).
  std::vector<OrderingKind> orderings = DefaultOrderings();
  static std::vector<OrderingKind> DefaultOrderings() { return sparsetune::DefaultOrderings(); }
  // 0: the winner is the fastest a call; N: the one of least preparation plus N calls on the
  // prepared operand, stored apart from the winner per call (for callers who know their count).
  int64_t calls = 0;
  // The winner for callers that stay in the tuned order (the emitted _compute_tuned_order):
  // candidates timed without the permutations of every call, stored apart
  // (TunedOrderKernelKey).
  bool tuned_order = false;
  bool force = false;  // measure again even when a winner is stored
  uint64_t seed = 1;
  std::string emit_dir;  // non-empty: write the winner's standalone kernel there
  BusyPolicy on_busy = BusyPolicyFromEnvironment();
};

struct TuneReport {
  std::string kernel;  // the database's kernel key ("spmv", or "expr:" + expression)
  std::string expression;
  std::string fingerprint;
  bool from_db = false;
  std::string winner_json;
  std::string winner_source;
  double winner_ms = 0;
  double fixed_csr_ms = 0;
  double pack_ms = 0;             // preparing the winner's operand: ordering and packing
  double ordering_ms = 0;         // of which renumbering rows and columns
  double fixed_csr_pack_ms = 0;   // packing CSR
  int64_t break_even_calls = -1;  // -1: the winner saves nothing per call
  int64_t calls = 0;              // TuneRequest::calls: what the winner was chosen for
  bool tuned_order = false;       // TuneRequest::tuned_order: what it was timed for
  double noise = 0;               // relative spread of two timings of identical FixedCSR code
  // The largest correction for the machine's drift between groups of candidates timed one
  // after another, and between the first and final rounds (LargestDriftCorrection): how far
  // the host's speed moved during the tune.
  double drift_correction = 0;
  // The measurements were still disturbed after measuring again (stored only under
  // BusyPolicy::kStore), why, and how many times the candidates were measured.
  bool disturbed = false;
  std::string disturbance;
  int measure_attempts = 1;
  // A cache line's round trip between two of the threads while the winner was timed (0: one
  // thread, or from the database): where the threads ran, which can rank schedules that share
  // data between threads differently from another placement.
  double thread_round_trip_ns = 0;
  // How much slower the slowest thread ran a fixed piece of work than the fastest meanwhile
  // (ThreadSpeedSkew: about 1 on a quiet machine; 0: one thread, or from the database).
  double thread_skew = 0;
  // The timing rounds of this tune whose threads shared a last-level cache (near) and whose
  // threads did not (far; PlacementTally), and the weight a timing that saw both gave each
  // candidate's far time (TimingResult::far_weight). 0: from the database, or one thread.
  int64_t near_rounds = 0;
  int64_t far_rounds = 0;
  double far_share = 0;
  double tune_ms = 0;
  std::vector<TuneCandidateResult> candidates;
  std::map<std::string, double> stage_ms;
  std::vector<std::string> sources_used;
  int64_t model_evaluations = 0;  // head evaluations of the search
  int model_top_k = 0;            // the model's picks asked for (0: no model)
  bool refine_weighted = false;   // the second round drew with the model's move weights
  std::string model_dir;          // the cost model's folder ("": none)
  bool model_calibrated = false;  // it is the one `sparsetune calibrate` made for this machine
  // Why the shipped (or calibrated) model was not consulted: its schedules have nothing to gain
  // over FixedCSR (NothingToRank); then only the rule candidates are measured.
  std::string model_skipped;
  std::vector<std::string> emitted_files;
  // Why a stored winner was not answered but the operand tuned again ("": none was passed
  // over): one kept for an operand of this pattern whose values were all equal, say.
  std::string stored_winner_passed_over;
  // About the input, for stderr: values the kernel leaves out.
  std::vector<std::string> input_warnings;

  double speedup_vs_fixed_csr() const { return winner_ms > 0 ? fixed_csr_ms / winner_ms : 0; }
  // For `calls` calls on one prepared operand: preparation plus the calls (0 without a count).
  double end_to_end_ms() const { return calls > 0 ? pack_ms + calls * winner_ms : 0; }
  double fixed_csr_end_to_end_ms() const {
    return calls > 0 ? fixed_csr_pack_ms + calls * fixed_csr_ms : 0;
  }
  // `tune --json`: the fields schemas/tune.schema.json documents.
  nlohmann::json ToJson() const;
};

// Tunes, stores and reports. Bad input (unreadable matrix, bad sizes, unreadable database)
// throws InputError before anything is stored.
TuneReport Tune(const TuneRequest& request, const TuneProgress& progress = {});

}  // namespace sparsetune
