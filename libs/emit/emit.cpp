#include "emit/emit.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "base/errors.hpp"
#include "base/paths.hpp"
#include "codegen/codegen.hpp"
#include "emit/runtime_sources.hpp"
#include "ir/loop_nest.hpp"
#include "ordering/ordering.hpp"
#include "tensor/pack.hpp"

namespace sparsetune {

namespace {

template <class T>
std::string List(const std::vector<T>& items) {
  std::ostringstream out;
  for (size_t k = 0; k < items.size(); ++k) out << (k ? ", " : "") << items[k];
  return out.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw InternalError("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::string Identifier(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return out;
}

// `text` in lines of at most `width` columns (longer words stand alone), each after `indent`.
std::string Wrapped(const std::string& text, const std::string& indent, size_t width) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

const char* OrderingDescription(OrderingKind kind) {
  switch (kind) {
    case OrderingKind::kRcm:
      return "reverse Cuthill-McKee";
    case OrderingKind::kDegree:
      return "rows by decreasing nonzeros";
    case OrderingKind::kRowDegree:
      return "rows by decreasing nonzeros, columns as given";
    case OrderingKind::kPartition:
      return "METIS k-way parts of 4096 rows";
    case OrderingKind::kCommunity:
      return "Louvain communities, via igraph";
    case OrderingKind::kNone:
      break;
  }
  return "none";
}

// What the emitted files are written from.
struct EmittedKernel {
  EmittedKernel(const Expression& e, const std::map<std::string, int64_t>& sizes,
                const Schedule& schedule, const LoopNest& nest)
      : e(e), sizes(sizes), schedule(schedule), nest(nest) {}
  const Expression& e;
  const std::map<std::string, int64_t>& sizes;
  const Schedule& schedule;
  const LoopNest& nest;
  // schedule.uniform_values: the same schedule with a value per nonzero, which an operand whose
  // values differ runs.
  std::unique_ptr<LoopNest> values_nest;
  std::vector<CoordinateEncoding> encodings;  // per level, those of the tuned pattern
  bool wide_variant = false;  // a second kernel for 32-bit coordinates, when they differ
  std::string name;
  DType dtype = DType::kF64;
  std::string value;              // the values' C type
  std::string value_type;         // its typedef in the header
  int order = 0;                  // of the sparse operand
  int output_levels = 0;          // levels over the sparse output's modes
  std::vector<int> dense_inputs;  // the dense inputs the caller passes, in the expression's order
  std::vector<std::string> dense_indices;  // their sizes are arguments of the calls
  std::vector<int> convertible;            // dense tensors indexed by a mode of the sparse operand
  std::vector<std::string> tensor_names;   // per convertible tensor, as a C identifier
  // partition and community need METIS and igraph: libsparsetune_orderings computes them.
  bool external_ordering = false;
  int64_t calls = 0;         // the call count the schedule was chosen for (0: the fastest call)
  bool tuned_order = false;  // chosen for calls in the tuned order (tune --tuned-order)

  OrderingKind ordering() const { return schedule.ordering; }
  bool ordered() const { return ordering() != OrderingKind::kNone; }
  int SparseMode(const std::string& index) const {
    const auto& modes = e.sparse_input().indices;
    const auto it = std::find(modes.begin(), modes.end(), index);
    return it == modes.end() ? -1 : static_cast<int>(it - modes.begin());
  }
  // The parameter that carries a dense size: the index's own name unless another parameter
  // has it.
  std::string SizeName(const std::string& index) const {
    static const std::set<std::string> taken = {"a",      "inputs", "output",
                                                "values", "given",  "tuned"};
    const std::string id = Identifier(index);
    return taken.count(id) ? "size_" + id : id;
  }
  // The dense sizes tensor t (-1: every tensor) takes, as ", int64_t j" and as "j".
  std::vector<std::string> SizesOf(int t) const {
    std::vector<std::string> out;
    for (const auto& index : dense_indices) {
      const auto& indices = e.tensors[t < 0 ? 0 : t].indices;
      if (t < 0 || std::find(indices.begin(), indices.end(), index) != indices.end())
        out.push_back(index);
    }
    return out;
  }
  std::string SizeParameters(int t) const {
    std::string out;
    for (const auto& index : SizesOf(t)) out += ", int64_t " + SizeName(index);
    return out;
  }
  std::string SizeArguments(int t) const {
    std::string out;
    for (const auto& index : SizesOf(t)) out += ", " + SizeName(index);
    return out;
  }
  std::string TensorText(int t) const {
    return e.tensors[t].name + "(" + List(e.tensors[t].indices) + ")";
  }
};

// The dense sizes of `indices` that a call checks, as C statements refusing a size below 1.
std::string SizeChecks(const EmittedKernel& k, const std::vector<std::string>& indices,
                       const std::string& entry, const std::string& refusal_value) {
  std::string out;
  for (const auto& index : indices) {
    const std::string size = k.SizeName(index);
    out += "  if (" + size + " < 1)\n    return st_refuse(\"" + entry + ": " + size + " is \" + " +
           "std::to_string(" + size + ") + \"; dense sizes are at least 1\"" +
           (refusal_value.empty() ? "" : ", " + refusal_value) + ");\n";
  }
  return out;
}

// The header's paragraph on coordinate widths.
std::string CoordinatesParagraph(const EmittedKernel& k) {
  if (!k.wide_variant) return "Coordinates are stored in 32 bits: every matrix of this kind fits.";
  std::string narrow;
  for (size_t l = 0; l < k.encodings.size(); ++l) {
    const LevelSpec& spec = k.nest.storage.levels[l];
    if (spec.kind == LevelKind::kDense) continue;
    narrow += (narrow.empty() ? "" : ", ") + std::string("level ") + std::to_string(l) + " (" +
              k.nest.level_vars[l].name + ":" + LevelKindLetter(spec.kind) + ") " +
              k.encodings[l].Describe();
  }
  return "Coordinates. Tuned on a pattern whose coordinates fit " + narrow +
         " (u: unsigned bits; +base: relative to each segment's first). A matrix whose "
         "coordinates do not fit them is packed with 32-bit coordinates and runs a "
         "second variant of the kernel, compiled for those; " +
         k.name + "_wide_coordinates(a) says which variant an operand runs.";
}

// The header's paragraph on the tuned row and column order.
std::string OrderingParagraph(const EmittedKernel& k) {
  const std::string& name = k.name;
  std::string ordering;
  if (k.ordered()) {
    const bool rows_only = k.ordering() == OrderingKind::kRowDegree;
    ordering =
        "Ordering. The tuned schedule renumbers the rows" +
        std::string(rows_only ? " (the columns keep the caller's numbering)"
                    : k.ordering() == OrderingKind::kDegree
                        ? " (and, of a square matrix, the columns alike)"
                        : " and columns alike") +
        " by " + OrderingName(k.ordering()) + " (" + OrderingDescription(k.ordering()) +
        "), computed by the packer from the given pattern as tune computed it for the one it was "
        "tuned on" +
        (k.ordering() == OrderingKind::kDegree || rows_only
             ? std::string()
             : " (a rectangular matrix keeps its order: this ordering is for square ones)") +
        ". " + name +
        "_compute takes and returns operands in the caller's numbering and permutes inside. An "
        "iterative method can stay in the tuned order instead: convert once with " +
        name + "_to_tuned_order_<operand>, call " + name +
        "_compute_tuned_order with the dense operands in the tuned order as often as needed, "
        "and convert the result back with " +
        name + "_from_tuned_order_<operand>.";
  } else {
    ordering =
        "Ordering. This schedule keeps the caller's numbering: the tuned order is the given one, "
        "and the _tuned_order calls copy (code written for a kernel whose schedule renumbers rows "
        "builds against this one too).";
  }
  if (k.e.sparse_output_prefix > 0)
    ordering += " The sparse output is in the caller's order on either path.";
  return ordering;
}

// The header's prose, a paragraph per string (wrapped by HeaderText).
std::vector<std::string> HeaderProse(const EmittedKernel& k) {
  const std::string& name = k.name;
  const std::string& value_type = k.value_type;
  const std::string sparse_text = k.TensorText(k.e.sparse);
  std::vector<std::string> prose;
  prose.push_back("Build: c++ -std=c++17 -O3 -fopenmp -c " + name +
                  ".cpp (tune timed it with -march=native too)" +
                  (k.external_ordering
                       ? "; link with -lsparsetune_orderings (CMake: sparsetune::orderings, which "
                         "sparsetune_add_kernel links), sparsetune's METIS and igraph orderings."
                       : "."));
  prose.push_back("The C ABI. Values are " + k.value + " (" + value_type +
                  (IsComplex(k.dtype) ? std::string(", float _Complex or double _Complex in C: "
                                                    "the same (real, imaginary) pairs")
                                      : std::string()) +
                  "); dense operands and outputs are row-major arrays that the caller owns and "
                  "that a call uses only while it runs. Allocate them on 64-byte boundaries "
                  "(aligned_alloc(64, bytes)), as tune timed them: with malloc's 16-byte "
                  "alignment every vector load of a wide dense row spans two cache lines, which "
                  "made SpMM with 256 columns take about 1.2x as long.");
  prose.push_back("Operands. " + name + "_pack_coo" +
                  (k.order == 2 ? " and " + name + "_pack_csr copy" : std::string(" copies")) +
                  " the sparse operand " + sparse_text +
                  " into the tuned format; the operand returned owns that copy until " + name +
                  "_free, so the caller's arrays may go at once. Entries may come in any order "
                  "but must be distinct.");
  prose.push_back("Value order. " + name +
                  "_update_values gives an operand new values for the same entries, one per "
                  "entry in the order they were given to pack (" +
                  (k.order == 2 ? "_pack_coo: its order; _pack_csr: row by row, as col_idx lists "
                                  "them"
                                : "_pack_coo's order") +
                  "). The packing is kept: no sorting, ordering or allocation; padding stays "
                  "zero.");
  if (k.schedule.uniform_values)
    prose.push_back(
        "One value. Tuned on a matrix whose values are all equal (a pattern matrix's "
        "1): an operand whose values are all equal keeps one value and runs the "
        "kernel compiled for it, which reads no value per nonzero (as tune timed it); "
        "an operand whose values differ keeps a value per entry and runs a second "
        "variant compiled for those, untimed (tune a matrix with such values for "
        "its own kernel). " +
        name +
        "_update_values with values that differ moves an operand to that "
        "variant, allocating its values once; " +
        name + "_one_value(a) says which variant an operand runs.");
  prose.push_back(CoordinatesParagraph(k));
  if (!k.dense_indices.empty()) {
    std::string tuned;
    for (const auto& index : k.dense_indices)
      tuned += (tuned.empty() ? "" : ", ") + index + " = " + std::to_string(k.sizes.at(index));
    prose.push_back("Dense sizes. Tuned for " + tuned + " (" + name +
                    "_DENSE_<index>); every call takes the sizes as arguments, any from 1 "
                    "(register tiles are compiled for the tuned split; other sizes take the "
                    "general loop where a tile does not fill).");
  }
  prose.push_back(OrderingParagraph(k));
  if (k.tuned_order) {
    prose.push_back("Chosen for the tuned order. tune timed " + name +
                    "_compute_tuned_order, the dense operands converted once (--tuned-order), "
                    "as an iterative method that stays in the tuned order calls it; " +
                    name +
                    "_compute permutes on every call, and a caller that uses it gets a faster "
                    "call from the schedule tuned without --tuned-order.");
  }
  if (k.calls > 0) {
    const std::string count = std::to_string(k.calls) + (k.calls == 1 ? " call" : " calls");
    prose.push_back("Chosen for " + count +
                    ". tune chose this schedule for the least preparation (" + name +
                    "_pack_* with its ordering) plus " + count +
                    " on one packed operand (--calls), not for the fastest call: a "
                    "caller that calls one operand far more often gets a faster call from the "
                    "schedule tuned without --calls.");
  }
  prose.push_back(
      "Threads. Calls run on the threads OpenMP gives the calling thread (omp_get_max_threads(): "
      "OMP_NUM_THREADS, omp_set_num_threads)" +
      std::string(k.schedule.threads == 1
                      ? ", except that this schedule was tuned to run on one thread (a small "
                        "operand) and keeps one until asked otherwise"
                      : "") +
      ". " + name + "_set_threads(n) fixes n threads for every later call (0: OpenMP's count); " +
      name + "_threads() says how many the next call uses.");
  prose.push_back(
      "Thread safety. Packing, computing and converting may run concurrently, on one "
      "operand too; " +
      name + "_update_values and _free must not overlap another call on the same operand.");
  prose.push_back(
      "Errors. On refusal (a null or negative argument, a coordinate outside dims, duplicate "
      "entries, an operand the format cannot hold) a call returning a pointer returns NULL and one "
      "returning int or int64_t returns -1, and changes nothing; " +
      name + "_last_error() (per thread) says why. 0 is success.");
  return prose;
}

// The declarations of packing: from COO and CSR, new values, the variant, freeing.
void DeclarePacking(const EmittedKernel& k, std::ostringstream& h) {
  const std::string& name = k.name;
  const std::string& value_type = k.value_type;
  const std::string sparse_text = k.TensorText(k.e.sparse);
  h << "/* Packs " << sparse_text
    << " from coordinates (0-based, one array per mode, nnz entries) and one value\n"
       "   per entry. */\n"
    << name << "_operand* " << name << "_pack_coo(const int64_t* dims, int64_t nnz, "
    << "const int32_t* const* coords, const " << value_type << "* values);\n";
  if (k.order == 2) {
    h << "/* The same from CSR: row_ptr has rows + 1 entries, row_ptr[rows] of col_idx and "
         "values. */\n"
      << name << "_operand* " << name << "_pack_csr(int64_t rows, int64_t cols, "
      << "const int64_t* row_ptr, const int32_t* col_idx, const " << value_type << "* values);\n";
  }
  h << "/* New values for the operand's entries, in the order pack was given them. */\n"
    << "int " << name << "_update_values(" << name << "_operand* a, const " << value_type
    << "* values);\n"
    << "/* 1 when the operand holds 32-bit coordinates where the kernel was tuned with narrower "
       "ones. */\n"
    << "int " << name << "_wide_coordinates(const " << name << "_operand* a);\n"
    << "/* 1 when the operand keeps one value for all its entries (they are all equal), as the "
       "kernel\n   was tuned with. */\n"
    << "int " << name << "_one_value(const " << name << "_operand* a);\n"
    << "void " << name << "_free(" << name << "_operand* a);\n\n";
}

// The declarations of computing, in the caller's order and in the tuned one, and of the
// conversions between the two.
void DeclareComputing(const EmittedKernel& k, std::ostringstream& h) {
  const Expression& e = k.e;
  const std::string& name = k.name;
  const std::string& value_type = k.value_type;
  const TensorInfo& sparse = e.sparse_input();
  std::string inputs_doc;
  for (int t : k.dense_inputs) inputs_doc += (inputs_doc.empty() ? "" : ", ") + k.TensorText(t);
  const std::string sizes_doc =
      k.dense_indices.empty() ? std::string()
                              : "\n   " + List(k.SizesOf(-1)) + ": the dense size" +
                                    (k.dense_indices.size() > 1 ? "s" : "") + " of this call.";
  h << "/* " << e.text << sizes_doc
    << "\n   inputs: the dense operands in this order: " << inputs_doc << ".\n   output: " << name
    << "_output_size(a" << k.SizeArguments(-1) << ") values"
    << (e.sparse_output_prefix > 0
            ? ", one row per distinct coordinate prefix of the entries in sorted order"
            : ", row-major, overwritten")
    << ". */\n"
    << "int " << name << "_compute(const " << name << "_operand* a" << k.SizeParameters(-1)
    << ", const " << value_type << "* const* inputs, " << value_type << "* output);\n"
    << "int64_t " << name << "_output_size(const " << name << "_operand* a" << k.SizeParameters(-1)
    << ");\n\n";

  // The tuned order.
  std::string tuned_operands;
  for (int t : k.convertible)
    tuned_operands += (tuned_operands.empty() ? "" : ", ") + k.TensorText(t);
  h << "/* _compute with the dense operands indexed by a mode of " << sparse.name
    << " in the tuned order\n   (" << tuned_operands << "): no permutation per call. */\n"
    << "int " << name << "_compute_tuned_order(const " << name << "_operand* a"
    << k.SizeParameters(-1) << ", const " << value_type << "* const* inputs, " << value_type
    << "* output);\n";
  for (int t : k.convertible) {
    const std::string& T = k.tensor_names[t];
    h << "/* " << k.TensorText(t)
      << " between the caller's order and the tuned one (arrays must not overlap). */\n"
      << "int " << name << "_to_tuned_order_" << T << "(const " << name << "_operand* a"
      << k.SizeParameters(t) << ", const " << value_type << "* " << T << ", " << value_type << "* "
      << T << "_tuned);\n"
      << "int " << name << "_from_tuned_order_" << T << "(const " << name << "_operand* a"
      << k.SizeParameters(t) << ", const " << value_type << "* " << T << "_tuned, " << value_type
      << "* " << T << ");\n";
  }
}

std::string HeaderText(const EmittedKernel& k) {
  const Expression& e = k.e;
  const std::string& name = k.name;
  const std::string& value_type = k.value_type;
  const std::vector<std::string> prose = HeaderProse(k);
  std::ostringstream h;
  h << "/* Generated by sparsetune for " << e.text << "\n"
    << "   Schedule: " << k.schedule.CanonicalJson() << "\n";
  for (const auto& paragraph : prose) h << "\n" << Wrapped(paragraph, "   ", 96);
  h << "*/\n"
    << "#pragma once\n#include <stdint.h>\n";
  if (IsComplex(k.dtype)) {
    // One layout in both languages: (real, imaginary) pairs.
    const std::string part = DTypeScalarCName(k.dtype);
    h << "#ifdef __cplusplus\n#include <complex>\ntypedef std::complex<" << part << "> "
      << value_type << ";  /* the values' type */\n#else\n#include <complex.h>\ntypedef " << part
      << " _Complex " << value_type << ";  /* the values' type */\n#endif\n";
  }
  h << "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "typedef struct " << name << "_operand " << name << "_operand;\n";
  if (!IsComplex(k.dtype))
    h << "typedef " << k.value << " " << value_type << ";  /* the values' type */\n";
  h << "\n";
  for (const auto& index : k.dense_indices) {
    h << "#define " << name << "_DENSE_" << index << " " << k.sizes.at(index)
      << "  /* the size tuned for */\n";
  }
  if (!k.dense_indices.empty()) h << "\n";

  DeclarePacking(k, h);
  DeclareComputing(k, h);
  h << "\n/* Threads for every later call: n > 0, or 0 for OpenMP's count. */\n"
    << "int " << name << "_set_threads(int n);\n"
    << "/* The threads the next call on this thread uses. */\n"
    << "int " << name << "_threads(void);\n"
    << "/* Why the last refused call on this thread refused. */\n"
    << "const char* " << name << "_last_error(void);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n";
  return h.str();
}

// The packer (sparsetune's own, verbatim), threads and errors, the tuned format and the
// operand.
std::string PackerPreambleText(const EmittedKernel& k) {
  const StorageFormat& format = k.nest.storage;
  const TensorInfo& sparse = k.e.sparse_input();
  const std::string& name = k.name;
  const std::string order = std::to_string(k.order);
  std::vector<int64_t> split_per_mode;
  for (const auto& index : sparse.indices) split_per_mode.push_back(k.nest.splits.at(index));
  std::vector<std::string> levels;
  for (size_t l = 0; l < format.levels.size(); ++l) {
    const LevelSpec& spec = format.levels[l];
    levels.push_back("{" +
                     List(std::vector<int>{spec.mode, static_cast<int>(spec.part),
                                           static_cast<int>(spec.kind), spec.group}) +
                     "}");
  }
  std::ostringstream c;
  c << "// sparsetune's packer, as sparsetune packs while tuning.\n"
    << EmbeddedRuntimeSource("level_packer.hpp") << "\n";
  if (k.ordered()) {
    c << "// sparsetune's orderings, as tune computed the tuned one.\n"
      << EmbeddedRuntimeSource("pattern_ordering.hpp") << "\n";
  }
  c << "#include <atomic>\n#include <cstring>\n#include <memory>\n\n";
  if (k.external_ordering) {
    c << "// libsparsetune_orderings: sparsetune's METIS and igraph orderings of a graph.\n"
      << "extern \"C\" int sparsetune_order_graph(int kind, int64_t n, const int32_t* start,\n"
      << "                                      const int32_t* neighbours, int32_t* new_of_old,\n"
      << "                                      char* error, int64_t error_size);\n\n";
  }
  c << "namespace {\n\n"
    << "thread_local std::string st_last_error;\n"
    << "// Arrays the packer writes right after sizing them are not cleared first.\n"
    << "template <class T>\nusing st_array = std::vector<T, "
       "sparsetune::packer::DefaultInitAllocator<T>>;\n"
    << "using st_level_packer =\n"
    << "    sparsetune::packer::LevelPacker<sparsetune::packer::DefaultInitAllocator>;\n\n"
    << "// Refuses a call: -1 (or `refused`), and the reason for " << name << "_last_error.\n"
    << "template <class T = int>\nT st_refuse(const std::string& reason, T refused = T(-1)) {\n"
    << "  st_last_error = reason;\n  return refused;\n}\n\n"
    << "std::atomic<int> st_threads_asked{-1};  // " << name << "_set_threads's; -1: none asked\n"
    << "constexpr int st_tuned_threads = " << k.schedule.threads
    << ";  // the schedule's (0: all)\n\n"
    << "int st_threads() {\n"
    << "  const int asked = st_threads_asked.load(std::memory_order_relaxed);\n"
    << "  if (asked > 0) return asked;\n"
    << "  // A schedule tuned for one thread (a small operand) keeps one unless asked.\n"
    << "  if (asked < 0 && st_tuned_threads == 1) return 1;\n"
    << "  return omp_get_max_threads();\n}\n\n";
  if (k.schedule.uniform_values) {
    c << "// Whether every value equals the first: then one value serves the operand.\n"
      << "bool st_all_equal(const " << k.value << "* values, int64_t nnz) {\n"
      << "  for (int64_t e = 1; e < nnz; ++e) {\n"
      << "    if (values[e] != values[0]) return false;\n"
      << "  }\n  return true;\n}\n\n";
  }
  c << "// The tuned format: per mode its split; per level its mode, part (0 whole, 1 outer, 2 "
       "inner),\n// kind (0 U, 1 C, 2 S, 3 Q) and group (1: not grouped).\n"
    << "sparsetune::packer::Layout st_layout(const int64_t* dims) {\n"
    << "  sparsetune::packer::Layout layout;\n"
    << "  layout.dims.assign(dims, dims + " << order << ");\n"
    << "  layout.split = {" << List(split_per_mode) << "};\n"
    << "  layout.levels = {" << List(levels) << "};\n"
    << "  return layout;\n}\n\n"
    << "}  // namespace\n\n"
    << "struct " << name << "_operand {\n"
    << "  int64_t dims[" << std::max(k.order, 1) << "];\n"
    << "  int64_t nnz = 0;\n"
    << "  bool wide = false;  // 32-bit coordinates: the kernel variant compiled for them runs\n"
    << "  bool one_value = false;  // values all equal: one kept, and the kernel for it runs\n"
    << "  std::vector<st_level_packer::Level> levels;\n"
    << "  st_array<value_t> values;\n"
    << "  // Per entry as given, its position in values (empty: entry e is at e).\n"
    << "  st_array<int32_t> value_positions;\n"
    << "  // Per mode: the given index of each renumbered one (empty: not renumbered).\n"
    << "  std::vector<int32_t> old_of_new[" << std::max(k.order, 1) << "];\n"
    << "  // Per mode: the renumbered index of each given one (the inverse).\n"
    << "  std::vector<int32_t> new_of_old[" << std::max(k.order, 1) << "];\n"
    << "  // Sparse outputs: the position, at the last output level, of each distinct coordinate\n"
    << "  // prefix of the input entries (in sorted order), as the caller's output rows.\n"
    << "  std::vector<int64_t> output_rows;\n};\n\n";

  return c.str();
}

// The tuned ordering, computed by the packer from the caller's pattern (ordered schedules).
std::string RenumberText(const EmittedKernel& k) {
  if (!k.ordered()) return "";
  const std::string& name = k.name;
  std::ostringstream c;
  c << "namespace {\n\n"
    << "constexpr int st_ordering = " << static_cast<int>(k.ordering()) << ";  // "
    << OrderingName(k.ordering()) << "\n\n";
  if (k.external_ordering) {
    c << "bool st_order_graph(int kind, const sparsetune::pattern_ordering::Adjacency& g,\n"
      << "                    std::vector<int32_t>* new_of_old, std::string* refusal) {\n"
      << "  new_of_old->resize(g.n);\n"
      << "  char error[512] = \"\";\n"
      << "  if (sparsetune_order_graph(kind, g.n, g.start.data(), g.neighbours.data(),\n"
      << "                             new_of_old->data(), error, sizeof error) == 0)\n"
      << "    return true;\n"
      << "  *refusal = error;\n  return false;\n}\n\n";
  } else {
    c << "bool st_order_graph(int, const sparsetune::pattern_ordering::Adjacency&,\n"
      << "                    std::vector<int32_t>*, std::string* refusal) {\n"
      << "  *refusal = \"this kernel computes its own ordering only\";\n  return false;\n}\n\n";
  }
  c << "// Renumbers the pattern by the tuned ordering, computed from it; a matrix the ordering\n"
    << "// is not for (a rectangular one, for a symmetric ordering) keeps its order. When only "
       "the\n"
    << "// rows are renumbered and the entries come in canonical order, `*rows_in_order` says so\n"
    << "// (if `rows_may_stay`) and the coordinates are left for RenumberRowEntries to copy.\n"
    << "bool st_renumber(" << name << "_operand* a, const int32_t* const* coords,\n"
    << "                 std::vector<int32_t>* renumbered, const int32_t** renumbered_coords,\n"
    << "                 bool rows_may_stay, bool* rows_in_order) {\n"
    << "  namespace ordering = sparsetune::pattern_ordering;\n"
    << "  *rows_in_order = false;\n"
    << "  if (!ordering::Applies(st_ordering, a->dims[0], a->dims[1])) return true;\n"
    << "  std::vector<int32_t> new_of_old[2];\n"
    << "  std::string refusal;\n"
    << "  if (!ordering::OrderMatrix(st_ordering, a->dims[0], a->dims[1], a->nnz, coords[0],\n"
    << "                             coords[1], st_order_graph, &new_of_old[0], &new_of_old[1],\n"
    << "                             &refusal))\n"
    << "    return st_refuse(refusal, false);\n"
    << "  *rows_in_order = rows_may_stay && !new_of_old[0].empty() && new_of_old[1].empty() &&\n"
    << "                   sparsetune::packer::InCanonicalOrder(2, a->nnz, coords);\n"
    << "  for (int m = 0; m < 2; ++m) {\n"
    << "    if (new_of_old[m].empty()) continue;\n"
    << "    a->old_of_new[m] = ordering::Inverse(new_of_old[m]);\n"
    << "    a->new_of_old[m] = new_of_old[m];\n"
    << "    if (*rows_in_order) continue;\n"
    << "    renumbered[m].resize(a->nnz);\n"
    << "    const int32_t* new_of = new_of_old[m].data();\n"
    << "    int32_t* out = renumbered[m].data();\n"
    << "#pragma omp parallel for schedule(static)\n"
    << "    for (int64_t e = 0; e < a->nnz; ++e) out[e] = new_of[coords[m][e]];\n"
    << "    renumbered_coords[m] = out;\n"
    << "  }\n  return true;\n}\n\n"
    << "}  // namespace\n\n";
  return c.str();
}

// The entry point that packs from coordinates: checks, the ordering, the tuned widths (and
// 32-bit ones when they do not fit), the values and the sparse output's rows.
std::string PackCooText(const EmittedKernel& k) {
  const std::string& name = k.name;
  const int prefix = k.e.sparse_output_prefix;
  const std::string order = std::to_string(k.order);
  std::vector<std::string> encodings;
  for (const auto& encoding : k.encodings)
    encodings.push_back("{" + std::to_string(encoding.bits) + ", " +
                        (encoding.relative ? "true" : "false") + "}");
  std::ostringstream c;
  const std::string pack_coo = name + "_pack_coo";
  c << "extern \"C\" " << name << "_operand* " << pack_coo
    << "(const int64_t* dims, int64_t nnz, const int32_t* const* coords, const " << k.value
    << "* values) try {\n"
    << "  using st_operand = " << name << "_operand;\n"
    << "  if (!dims || nnz < 0 || (nnz > 0 && (!coords || !values)))\n"
    << "    return st_refuse<st_operand*>(\"" << pack_coo
    << ": dims, coords and values must not be null, nor nnz negative\", nullptr);\n"
    << "  for (int m = 0; m < " << order << "; ++m) {\n"
    << "    if (dims[m] < 0 || dims[m] > (int64_t(1) << 31))\n"
    << "      return st_refuse<st_operand*>(\"" << pack_coo
    << ": dims[\" + std::to_string(m) + \"] is \" + std::to_string(dims[m]) +\n"
    << "                                    \"; dimensions are from 0 to 2^31\", nullptr);\n"
    << "    if (nnz > 0 && !coords[m])\n"
    << "      return st_refuse<st_operand*>(\"" << pack_coo
    << ": coords[\" + std::to_string(m) + \"] is null\", nullptr);\n"
    << "  }\n"
    << "  const std::vector<int64_t> dim_list(dims, dims + " << order << ");\n"
    << "  std::string refusal = sparsetune::packer::EntriesRefusal(dim_list, nnz, coords);\n"
    << "  if (!refusal.empty()) return st_refuse<st_operand*>(refusal, nullptr);\n"
    << "  auto a = std::make_unique<st_operand>();\n"
    << "  std::copy(dims, dims + " << order << ", a->dims);\n"
    << "  a->nnz = nnz;\n"
    << "  const int32_t* const* packed_coords = coords;\n";
  if (k.ordered()) {
    c << "  std::vector<int32_t> renumbered[2];\n"
      << "  const int32_t* renumbered_coords[2] = {coords[0], coords[1]};\n"
      << "  bool rows_in_order = false;\n"
      << "  if (!st_renumber(a.get(), coords, renumbered, renumbered_coords, "
      << (prefix == 0 ? "true" : "false") << ", &rows_in_order))\n"
      << "    return nullptr;\n"
      << "  packed_coords = renumbered_coords;\n";
  }
  c << "  // Empty when the entries come in canonical order (from CSR, say): packed in place.\n"
    << "  std::vector<int32_t, sparsetune::packer::DefaultInitAllocator<int32_t>> canonical;\n"
    << "  const int32_t* source_entry = nullptr;  // set when the entries were copied in order\n";
  const bool rows_copied = k.ordered() && prefix == 0;
  if (rows_copied) {
    c << "  // Rows renumbered, columns kept, entries given in order: SELL takes each row where "
         "it\n"
      << "  // is, in the new order; other formats copy them row by row into the renumbered order\n"
      << "  // (no sort), the values read where they are.\n"
      << "  const bool rows_taken = rows_in_order && "
         "st_level_packer::PacksRowsInOrder(st_layout(dims));\n"
      << "  sparsetune::packer::RowRenumberedEntries<sparsetune::packer::DefaultInitAllocator> "
         "in_order;\n"
      << "  const int32_t* in_order_coords[2] = {nullptr, nullptr};\n"
      << "  if (rows_taken) {\n"
      << "    packed_coords = coords;\n"
      << "  } else if (rows_in_order) {\n"
      << "    in_order = sparsetune::packer::RenumberRowEntries<"
         "sparsetune::packer::DefaultInitAllocator>(\n"
      << "        dims[0], nnz, coords[0], coords[1], a->old_of_new[0].data());\n"
      << "    in_order_coords[0] = in_order.rows.data();\n"
      << "    in_order_coords[1] = in_order.cols.data();\n"
      << "    packed_coords = in_order_coords;\n"
      << "    source_entry = in_order.entry.data();\n"
      << "  } else {\n  ";
  }
  c << "  canonical = sparsetune::packer::RankEntries<sparsetune::packer::DefaultInitAllocator>(\n"
    << "      dim_list, nnz, packed_coords, &refusal);\n";
  if (rows_copied) c << "  }\n";
  c << "  if (!refusal.empty()) return st_refuse<st_operand*>(refusal, nullptr);\n"
    << "  const int32_t* ranked = canonical.empty() ? nullptr : canonical.data();\n"
    << "  const sparsetune::packer::Layout layout = st_layout(dims);\n"
    << "  sparsetune::packer::Options options;\n"
    << "  options.encodings = {" << List(encodings)
    << "};  // the widths the kernel was tuned with\n";
  if (prefix > 0) c << "  options.record_after_levels = " << k.output_levels << ";\n";
  const std::string take_rows =
      rows_copied ? "  if (rows_taken) packer->TakeRowsInOrder(a->old_of_new[0].data());\n" : "";
  c << "  auto packer =\n"
    << "      std::make_unique<st_level_packer>(layout, options, nnz, packed_coords, ranked);\n"
    << take_rows << "  bool packed = packer->Run();\n";
  if (k.wide_variant) {
    c << "  sparsetune::packer::Options wide = options;\n"
      << "  wide.encodings.clear();  // 32-bit absolute coordinates at every level\n"
      << "  if (!packed && packer->RefusedForWidth()) {\n"
      << "    // Coordinates past the tuned widths: 32-bit ones, and the kernel compiled for "
         "them.\n"
      << "    packer =\n"
      << "        std::make_unique<st_level_packer>(layout, wide, nnz, packed_coords, ranked);\n"
      << (take_rows.empty() ? "" : "  " + take_rows) << "    packed = packer->Run();\n"
      << "    a->wide = true;\n"
      << "  }\n";
  }
  c << "  if (!packed) return st_refuse<st_operand*>(packer->Refusal(), nullptr);\n";
  if (k.schedule.uniform_values) {
    c << "  a->value_positions = packer->EntryPositions(source_entry);\n"
      << "  if (st_all_equal(values, nnz)) {\n"
      << "    // One value for every entry: the kernel compiled for one value runs.\n"
      << "    a->one_value = true;\n"
      << "    a->values.assign(1, nnz > 0 ? values[0] : " << k.value << "());\n"
      << "  } else {\n"
      << "    packer->ScatterValues(a->values, values, source_entry);\n"
      << "  }\n";
  } else {
    c << "  packer->ScatterValues(a->values, values, source_entry);\n"
      << "  a->value_positions = packer->EntryPositions(source_entry);\n";
  }
  if (prefix > 0) {
    if (k.ordered()) {
      // Output rows follow the given coordinates, whatever the renumbering.
      c << "  const auto given_order = sparsetune::packer::RankEntries(dim_list, nnz, coords, "
           "&refusal);\n"
        << "  a->output_rows = sparsetune::packer::PrefixPositions(*packer, given_order, nnz, "
           "coords, "
        << prefix << ");\n";
    } else {
      c << "  a->output_rows = sparsetune::packer::PrefixPositions(*packer, canonical, nnz, "
           "coords, "
        << prefix << ");\n";
    }
  }
  c << "  a->levels = std::move(packer->Levels());\n  return a.release();\n"
    << "} catch (const std::exception& error) {\n"
    << "  return st_refuse<" << name << "_operand*>(std::string(\"" << pack_coo
    << ": \") + error.what(), nullptr);\n}\n\n";
  return c.str();
}

// The entry point that packs from CSR (matrices), through the COO one.
std::string PackCsrText(const EmittedKernel& k) {
  if (k.order != 2) return "";
  const std::string& name = k.name;
  const std::string pack_coo = name + "_pack_coo";
  std::ostringstream c;
  const std::string pack_csr = name + "_pack_csr";
  c << "extern \"C\" " << name << "_operand* " << pack_csr << "(int64_t rows, int64_t cols, "
    << "const int64_t* row_ptr, const int32_t* col_idx, const " << k.value << "* values) try {\n"
    << "  if (!row_ptr || rows < 0 || rows > (int64_t(1) << 31))\n"
    << "    return st_refuse<" << name << "_operand*>(\"" << pack_csr
    << ": row_ptr must not be null, and rows from 0 to 2^31\", nullptr);\n"
    << "  const int64_t nnz = row_ptr[rows];\n"
    << "  for (int64_t r = 0; r < rows; ++r) {\n"
    << "    if (row_ptr[r] < 0 || row_ptr[r] > row_ptr[r + 1] || row_ptr[r + 1] > nnz)\n"
    << "      return st_refuse<" << name << "_operand*>(\"" << pack_csr
    << ": row_ptr must rise from 0 to row_ptr[rows]\", nullptr);\n"
    << "  }\n"
    << "  std::vector<int32_t> row(nnz);\n"
    << "  for (int64_t r = 0; r < rows; ++r)\n"
    << "    for (int64_t p = row_ptr[r]; p < row_ptr[r + 1]; ++p) row[p] = "
       "static_cast<int32_t>(r);\n"
    << "  const int32_t* coords[2] = {row.data(), col_idx};\n"
    << "  const int64_t dims[2] = {rows, cols};\n"
    << "  return " << pack_coo << "(dims, nnz, coords, values);\n"
    << "} catch (const std::exception& error) {\n"
    << "  return st_refuse<" << name << "_operand*>(std::string(\"" << pack_csr
    << ": \") + error.what(), nullptr);\n}\n\n";
  return c.str();
}

// New values, the coordinate variant and freeing.
std::string ValueEntryPointsText(const EmittedKernel& k) {
  const std::string& name = k.name;
  std::ostringstream c;
  c << "extern \"C\" int " << name << "_update_values(" << name << "_operand* a, const " << k.value
    << "* values) {\n"
    << "  if (!a || (a->nnz > 0 && !values))\n"
    << "    return st_refuse(\"" << name
    << "_update_values: the operand and the values must not be null\");\n";
  if (k.schedule.uniform_values) {
    c << "  if (a->one_value && st_all_equal(values, a->nnz)) {\n"
      << "    if (a->nnz > 0) a->values[0] = values[0];\n"
      << "    return 0;\n"
      << "  }\n"
      << "  if (a->one_value) {\n"
      << "    // Values that differ: a value per entry (the format stores no padding), and the "
         "kernel\n    // compiled for those.\n"
      << "    a->values.assign(a->nnz, " << k.value << "());\n"
      << "    a->one_value = false;\n"
      << "  }\n";
  }
  c << "  sparsetune::packer::UpdateValues(a->values.data(), a->value_positions, a->nnz, "
       "values);\n"
    << "  return 0;\n}\n\n"
    << "extern \"C\" int " << name << "_wide_coordinates(const " << name << "_operand* a) {\n"
    << "  if (!a) return st_refuse(\"" << name << "_wide_coordinates: the operand is null\");\n"
    << "  return a->wide ? 1 : 0;\n}\n\n"
    << "extern \"C\" int " << name << "_one_value(const " << name << "_operand* a) {\n"
    << "  if (!a) return st_refuse(\"" << name << "_one_value: the operand is null\");\n"
    << "  return a->one_value ? 1 : 0;\n}\n\n"
    << "extern \"C\" void " << name << "_free(" << name << "_operand* a) { delete a; }\n\n";
  return c.str();
}

// The packer, the tuned format, the operand, threads and errors, and the pack entry points.
std::string PackerText(const EmittedKernel& k) {
  return PackerPreambleText(k) + RenumberText(k) + PackCooText(k) + PackCsrText(k) +
         ValueEntryPointsText(k);
}

// The size of an index in emitted code: a mode of the operand, or a dense size given to the call.
std::string DimOf(const EmittedKernel& k, const std::string& index) {
  const int mode = k.SparseMode(index);
  return mode >= 0 ? "a->dims[" + std::to_string(mode) + "]" : k.SizeName(index);
}

// The output's values per output row (per value of the sparse output's coordinate prefix), as
// an emitted expression.
std::string TrailingSize(const EmittedKernel& k) {
  const Expression& e = k.e;
  std::string trailing = "1";
  for (size_t i = e.sparse_output_prefix; i < e.tensors[0].indices.size(); ++i)
    trailing += " * " + DimOf(k, e.tensors[0].indices[i]);
  return trailing;
}

// st_compute, the one body of both compute entry points: checks, the kernel's arguments,
// the call, and a sparse output's rows put back in order.
std::string ComputeBodyText(const EmittedKernel& k) {
  const Expression& e = k.e;
  const TensorInfo& sparse = e.sparse_input();
  const std::string& name = k.name;
  const std::string& value = k.value;
  const std::string trailing = TrailingSize(k);
  std::ostringstream c;
  // One body for both entry points: tuned_order says whether dense operands indexed by a mode
  // of the operand come in the tuned order.
  c << "namespace {\n\n"
    << "int st_compute(const char* entry, const " << name << "_operand* a" << k.SizeParameters(-1)
    << ", const " << value << "* const* inputs, " << value << "* output, int tuned_order) {\n"
    << "  if (!a || !output" << (k.dense_inputs.empty() ? "" : " || !inputs") << ")\n"
    << "    return st_refuse(std::string(entry) + \": the operand, inputs and output must not be "
       "null\");\n";
  for (size_t i = 0; i < k.dense_inputs.size(); ++i) {
    c << "  if (!inputs[" << i << "])\n    return st_refuse(std::string(entry) + \": inputs[" << i
      << "] (" << e.tensors[k.dense_inputs[i]].name << ") is null\");\n";
  }
  for (const auto& index : k.dense_indices) {
    const std::string size = k.SizeName(index);
    c << "  if (" << size << " < 1)\n    return st_refuse(std::string(entry) + \": " << size
      << " is \" + std::to_string(" << size << ") + \"; dense sizes are at least 1\");\n";
  }
  c << "  st_args args;\n  std::memset(&args, 0, sizeof(args));\n";
  for (size_t i = 0; i < e.indices.size(); ++i) {
    const std::string& index = e.indices[i];
    c << "  args.dims[" << i << "] = " << DimOf(k, index) << ";\n  args.splits[" << i
      << "] = " << k.nest.splits.at(index) << ";\n";
  }
  c << "  for (size_t l = 0; l < a->levels.size(); ++l) {\n"
    << "    const st_level_packer::Level& L = a->levels[l];\n"
    << "    args.levels[l].extent = L.extent;\n    args.levels[l].positions = L.positions;\n"
    << "    args.levels[l].pos = L.pos.empty() ? nullptr : L.pos.data();\n"
    << "    args.levels[l].crd = L.crd.empty() ? nullptr : L.crd.data();\n"
    << "    args.levels[l].base = L.base.empty() ? nullptr : L.base.data();\n  }\n"
    << "  args.sparse_values = a->values.data();\n";
  for (size_t i = 0; i < k.dense_inputs.size(); ++i)
    c << "  args.inputs[" << k.dense_inputs[i] << "] = inputs[" << i << "];\n";
  c << "  args.chunk = " << k.schedule.chunk << ";\n  args.threads = st_threads();\n";
  for (size_t m = 0; m < sparse.indices.size(); ++m) {
    c << "  if (!a->old_of_new[" << m << "].empty()) {\n"
      << "    args.old_of_new[" << e.IndexId(sparse.indices[m]) << "] = a->old_of_new[" << m
      << "].data();\n"
      << "    args.new_of_old[" << e.IndexId(sparse.indices[m]) << "] = a->new_of_old[" << m
      << "].data();\n  }\n";
  }
  c << "  args.tuned_order = tuned_order;\n";
  auto narrow_or_wide = [&](const std::string& entry) {
    return k.wide_variant ? "(a->wide ? " + entry + "_wide : " + entry + ")" : entry;
  };
  const std::string kernel_call =
      (k.values_nest ? "(a->one_value ? " + narrow_or_wide(name + "_kernel") + " : " +
                           narrow_or_wide(name + "_kernel_values") + ")"
                     : narrow_or_wide(name + "_kernel")) +
      "(&args)";
  if (e.sparse_output_prefix > 0) {
    c << "  // The kernel writes the output at the format's positions; rows go back in order.\n"
      << "  const int64_t trailing = " << trailing << ";\n"
      << "  const int64_t positions = "
      << (k.output_levels > 0 ? "a->levels[" + std::to_string(k.output_levels - 1) + "].positions"
                              : std::string("1"))
      << ";\n"
      << "  std::vector<" << value << "> packed(positions * trailing);\n"
      << "  args.output = packed.data();\n"
      << "  const int status = " << kernel_call << ";\n"
      << "  for (size_t r = 0; r < a->output_rows.size(); ++r)\n"
      << "    for (int64_t t = 0; t < trailing; ++t)\n"
      << "      output[r * trailing + t] = packed[a->output_rows[r] * trailing + t];\n"
      << "  return status;\n}\n\n";
  } else {
    c << "  args.output = output;\n  return " << kernel_call << ";\n}\n\n";
  }

  return c.str();
}

// st_permute: dense operands between the caller's order and the tuned one; it closes the
// anonymous namespace ComputeBodyText opened.
std::string PermuteText() {
  std::ostringstream c;
  c << "// Row-major dims[0] x ... x dims[rank - 1]: tuned[n0][n1]... = given[o0][o1]... (or the\n"
    << "// other way), o_d = old_of_new[d][n_d] where dimension d is renumbered.\n"
    << "[[maybe_unused]] void st_permute(const value_t* from, value_t* to, int rank,\n"
    << "                                 const int64_t* dims,\n"
    << "                                 const std::vector<int32_t>* const* old_of_new,\n"
    << "                                 int to_tuned) {\n"
    << "  auto renumbered = [&](int d) { return old_of_new[d] && !old_of_new[d]->empty(); };\n"
    << "  bool rows_only = true;\n"
    << "  int64_t inner = 1;\n"
    << "  for (int d = 1; d < rank; ++d) {\n"
    << "    inner *= dims[d];\n"
    << "    rows_only = rows_only && !renumbered(d);\n"
    << "  }\n"
    << "  const int64_t rows = rank > 0 ? dims[0] : 1;\n"
    << "  const int32_t* first = rank > 0 && renumbered(0) ? old_of_new[0]->data() : nullptr;\n"
    << "#pragma omp parallel for schedule(static) num_threads(st_threads())\n"
    << "  for (int64_t n0 = 0; n0 < rows; ++n0) {\n"
    << "    const int64_t o0 = first ? first[n0] : n0;\n"
    << "    const value_t* src = from + (to_tuned ? o0 : n0) * inner;\n"
    << "    value_t* dst = to + (to_tuned ? n0 : o0) * inner;\n"
    << "    if (rows_only) {\n"
    << "      std::memcpy(dst, src, sizeof(value_t) * inner);\n"
    << "      continue;\n"
    << "    }\n"
    << "    for (int64_t q = 0; q < inner; ++q) {\n"
    << "      int64_t rest = q, given = 0, stride = 1;  // q's offset in the given row\n"
    << "      for (int d = rank - 1; d >= 1; --d) {\n"
    << "        const int64_t n = rest % dims[d];\n"
    << "        rest /= dims[d];\n"
    << "        given += (renumbered(d) ? (*old_of_new[d])[n] : n) * stride;\n"
    << "        stride *= dims[d];\n"
    << "      }\n"
    << "      if (to_tuned) {\n        dst[q] = src[given];\n      } else {\n"
    << "        dst[given] = src[q];\n      }\n"
    << "    }\n  }\n}\n\n"
    << "}  // namespace\n\n";

  return c.str();
}

// The compute entry points (caller's order and tuned order) and the output's size.
std::string ComputeEntryPointsText(const EmittedKernel& k) {
  const std::string& name = k.name;
  const std::string& value = k.value;
  const std::string trailing = TrailingSize(k);
  std::ostringstream c;
  c << "extern \"C\" int " << name << "_compute(const " << name << "_operand* a"
    << k.SizeParameters(-1) << ", const " << value << "* const* inputs, " << value
    << "* output) {\n"
    << "  return st_compute(\"" << name << "_compute\", a" << k.SizeArguments(-1)
    << ", inputs, output, 0);\n}\n\n"
    << "extern \"C\" int " << name << "_compute_tuned_order(const " << name << "_operand* a"
    << k.SizeParameters(-1) << ", const " << value << "* const* inputs, " << value
    << "* output) {\n"
    << "  return st_compute(\"" << name << "_compute_tuned_order\", a" << k.SizeArguments(-1)
    << ", inputs, output, 1);\n}\n\n";

  const std::string output_size = name + "_output_size";
  c << "extern \"C\" int64_t " << output_size << "(const " << name << "_operand* a"
    << k.SizeParameters(-1) << ") {\n"
    << "  if (!a) return st_refuse<int64_t>(\"" << output_size << ": the operand is null\");\n"
    << SizeChecks(k, k.SizesOf(-1), output_size, "int64_t(-1)");
  if (k.e.sparse_output_prefix > 0) {
    c << "  return static_cast<int64_t>(a->output_rows.size()) * (" << trailing << ");\n}\n\n";
  } else {
    c << "  return " << trailing << ";\n}\n\n";
  }

  return c.str();
}

// The conversions of each dense operand between the caller's order and the tuned one.
std::string ConversionEntryPointsText(const EmittedKernel& k) {
  const Expression& e = k.e;
  const std::string& name = k.name;
  const std::string& value = k.value;
  std::ostringstream c;
  for (int t : k.convertible) {
    const std::string& T = k.tensor_names[t];
    const auto& indices = e.tensors[t].indices;
    std::vector<std::string> dims, perms;
    for (const auto& index : indices) {
      const int mode = k.SparseMode(index);
      dims.push_back(DimOf(k, index));
      perms.push_back(mode >= 0 ? "&a->old_of_new[" + std::to_string(mode) + "]" : "nullptr");
    }
    for (int to_tuned : {1, 0}) {
      const std::string entry = name + (to_tuned ? "_to_tuned_order_" : "_from_tuned_order_") + T;
      const std::string from = to_tuned ? T : T + "_tuned", to = to_tuned ? T + "_tuned" : T;
      c << "extern \"C\" int " << entry << "(const " << name << "_operand* a" << k.SizeParameters(t)
        << ", const " << value << "* " << from << ", " << value << "* " << to << ") {\n"
        << "  if (!a || !" << from << " || !" << to << ")\n"
        << "    return st_refuse(\"" << entry
        << ": the operand and the arrays must not be null\");\n"
        << SizeChecks(k, k.SizesOf(t), entry, "") << "  const int64_t dims[] = {" << List(dims)
        << "};\n"
        << "  const std::vector<int32_t>* old_of_new[] = {" << List(perms) << "};\n"
        << "  st_permute(" << from << ", " << to << ", " << indices.size() << ", dims, old_of_new, "
        << to_tuned << ");\n"
        << "  return 0;\n}\n\n";
    }
  }

  return c.str();
}

// Threads and errors.
std::string ThreadEntryPointsText(const EmittedKernel& k) {
  const std::string& name = k.name;
  std::ostringstream c;
  c << "extern \"C\" int " << name << "_set_threads(int n) {\n"
    << "  if (n < 0)\n    return st_refuse(\"" << name
    << "_set_threads: \" + std::to_string(n) + \" threads; give n > 0, or 0 for OpenMP's "
       "count\");\n"
    << "  st_threads_asked.store(n, std::memory_order_relaxed);\n  return 0;\n}\n\n"
    << "extern \"C\" int " << name << "_threads(void) { return st_threads(); }\n\n"
    << "extern \"C\" const char* " << name
    << "_last_error(void) { return st_last_error.c_str(); }\n";
  return c.str();
}

// The computation over the packed operand, the tuned order, threads and errors.
std::string ComputeText(const EmittedKernel& k) {
  return ComputeBodyText(k) + PermuteText() + ComputeEntryPointsText(k) +
         ConversionEntryPointsText(k) + ThreadEntryPointsText(k);
}

// The kernel for the tuned coordinates, and, when they are narrower than 32 bits, a second one
// for 32-bit coordinates; a schedule that keeps one value adds both again with a value per
// nonzero. The variants share their text up to the kernel function, so only that is added.
std::string KernelText(const EmittedKernel& k) {
  struct Variant {
    const LoopNest* nest;
    bool wide;
    std::string entry, comment;
  };
  std::vector<Variant> variants = {{&k.nest, false, k.name + "_kernel", ""}};
  if (k.wide_variant)
    variants.push_back(
        {&k.nest, true, k.name + "_kernel_wide",
         "The same for 32-bit coordinates (operands whose coordinates do not fit)."});
  if (k.values_nest) {
    variants.push_back({k.values_nest.get(), false, k.name + "_kernel_values",
                        "With a value per nonzero (operands whose values differ)."});
    if (k.wide_variant)
      variants.push_back({k.values_nest.get(), true, k.name + "_kernel_values_wide",
                          "With a value per nonzero and 32-bit coordinates."});
  }
  // The prefix up to the kernel function, but for the line that names the schedule (the values
  // variant's keeps a value per nonzero).
  auto shared_part = [](const std::string& source, size_t at) {
    std::string prefix = source.substr(0, at);
    const size_t line = prefix.find("// Schedule: ");
    if (line != std::string::npos) prefix.erase(line, prefix.find('\n', line) - line);
    return prefix;
  };
  std::string text, shared;
  for (const Variant& v : variants) {
    const std::string source =
        GenerateKernelSource(*v.nest, k.dtype, CodegenMode::kBaked,
                             v.wide ? std::vector<CoordinateEncoding>{} : k.encodings, v.entry);
    const size_t at = source.find("static int " + v.entry + "(");
    if (at == std::string::npos) throw InternalError("no kernel function in a kernel variant");
    if (text.empty()) {
      shared = shared_part(source, at);
      text = source;
      continue;
    }
    if (shared_part(source, at) != shared)
      throw InternalError("the kernel variants differ outside their kernel functions");
    text += "\n// " + v.comment + "\n" + source.substr(at);
  }
  return text;
}

// The coordinate encodings of `pattern` as tune packed it (renumbered first when ordered).
std::vector<CoordinateEncoding> TunedEncodings(const CooTensor& pattern,
                                               const StorageFormat& format, DType dtype) {
  std::unique_ptr<CooTensor> ordered;
  if (format.ordering != OrderingKind::kNone && OrderingRefusal(pattern, format.ordering).empty())
    ordered = std::make_unique<CooTensor>(
        PermuteMatrix(pattern, ComputeOrdering(pattern, format.ordering)));
  PackOptions options;
  options.padding_cap = 1e18;
  PackOutcome packed = Pack(ordered ? *ordered : pattern, format, dtype, options);
  if (!packed.packed) throw InputError("cannot emit the schedule: " + packed.refusal);
  return packed.packed->encodings();
}

}  // namespace

EmittedInterface DescribeEmittedInterface(const std::string& kernel, const Expression& e) {
  EmittedInterface out;
  out.name = EmittedName(kernel);
  out.dense_indices = e.DenseOnlyIndices();
  std::set<std::string> names;
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    std::string name = Identifier(e.tensors[t].name);
    if (!names.insert(name).second) name += "_" + std::to_string(t);
    if (static_cast<int>(t) == e.sparse || (t == 0 && e.sparse_output_prefix > 0)) continue;
    const auto& indices = e.tensors[t].indices;
    const bool renumbered = std::any_of(indices.begin(), indices.end(),
                                        [&](const auto& index) { return e.IsSparseIndex(index); });
    if (!renumbered) continue;
    EmittedInterface::Conversion conversion;
    conversion.tensor = static_cast<int>(t);
    conversion.name = name;
    for (const auto& index : out.dense_indices) {
      if (std::find(indices.begin(), indices.end(), index) != indices.end())
        conversion.dense_indices.push_back(index);
    }
    out.conversions.push_back(conversion);
  }
  return out;
}

std::string EmittedName(const std::string& kernel) {
  return Identifier("sparsetune_" + (kernel.empty() ? std::string("expr") : kernel));
}

void PrepareEmitDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status) && !fs::is_directory(status))
    throw InputError(dir, 0, "--emit needs a directory, and this exists and is not one");
  if (!fs::exists(status)) {
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir, 0, "cannot create the --emit directory: " + ec.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(dir, 0, "cannot write into the --emit directory");
}

std::vector<std::string> EmitKernel(const std::string& dir, const std::string& kernel,
                                    const Expression& e,
                                    const std::map<std::string, int64_t>& sizes, DType dtype,
                                    const Schedule& input_schedule, const CooTensor* pattern,
                                    int64_t calls, bool tuned_order) {
  Schedule schedule = input_schedule;
  schedule.Canonicalize();
  LowerOutcome lowered = Lower(e, schedule);
  if (!lowered.nest) throw InputError("cannot emit the schedule: " + lowered.error);
  EmittedKernel k(e, sizes, schedule, *lowered.nest);
  if (schedule.uniform_values) {
    Schedule with_values = schedule;
    with_values.uniform_values = false;
    LowerOutcome values = Lower(e, with_values);
    if (!values.nest) throw InternalError("a value per nonzero does not lower: " + values.error);
    k.values_nest = std::move(values.nest);
  }
  const StorageFormat& format = k.nest.storage;
  // The interface first: names, value type, dense operands and their conversions.
  k.name = EmittedName(kernel);
  k.calls = calls;
  k.tuned_order = tuned_order;
  k.dtype = dtype;
  k.value = DTypeCName(dtype);
  k.value_type = k.name + "_value";  // lets callers write the type once
  k.order = static_cast<int>(e.sparse_input().indices.size());
  k.external_ordering =
      format.ordering == OrderingKind::kPartition || format.ordering == OrderingKind::kCommunity;
  while (k.output_levels < static_cast<int>(format.levels.size()) &&
         format.levels[k.output_levels].mode < e.sparse_output_prefix)
    ++k.output_levels;
  const EmittedInterface interface = DescribeEmittedInterface(kernel, e);
  k.dense_indices = interface.dense_indices;
  k.tensor_names.resize(e.tensors.size());
  for (const auto& conversion : interface.conversions) {
    k.convertible.push_back(conversion.tensor);
    k.tensor_names[conversion.tensor] = conversion.name;
  }
  for (size_t t = 1; t < e.tensors.size(); ++t) {
    if (static_cast<int>(t) != e.sparse) k.dense_inputs.push_back(static_cast<int>(t));
  }
  // Then the coordinate widths of the tuned pattern, which the kernel text depends on.
  k.encodings = pattern && schedule.narrow_coordinates
                    ? TunedEncodings(*pattern, format, dtype)
                    : std::vector<CoordinateEncoding>(format.levels.size());
  for (const CoordinateEncoding& encoding : k.encodings)
    k.wide_variant = k.wide_variant || encoding != CoordinateEncoding();
  const std::string source =
      "// Generated by sparsetune; compile with c++ -O3 -fopenmp (C++17).\n"
      "#include \"" +
      k.name + ".h\"\n\n" + KernelText(k) + "\n" + PackerText(k) + ComputeText(k);

  EnsureDirectory(dir);
  const std::string base = (std::filesystem::path(dir) / k.name).string();
  WriteFile(base + ".h", HeaderText(k));
  WriteFile(base + ".cpp", source);
  WriteFile(base + ".schedule.json", schedule.ToJson().dump(2) + "\n");
  return {base + ".h", base + ".cpp", base + ".schedule.json"};
}

}  // namespace sparsetune
