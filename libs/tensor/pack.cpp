#include "tensor/pack.hpp"

#include <chrono>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "tensor/level_packer.hpp"

namespace sparsetune {

namespace {

static_assert(packer::kDenseLevel == static_cast<int>(LevelKind::kDense) &&
                  packer::kCompressedLevel == static_cast<int>(LevelKind::kCompressed) &&
                  packer::kSlicedLevel == static_cast<int>(LevelKind::kSliced) &&
                  packer::kSingletonLevel == static_cast<int>(LevelKind::kSingleton),
              "the packer numbers level kinds as LevelKind does");
static_assert(packer::kWholeMode == static_cast<int>(SplitPart::kWhole) &&
                  packer::kOuterPart == static_cast<int>(SplitPart::kOuter) &&
                  packer::kInnerPart == static_cast<int>(SplitPart::kInner),
              "the packer numbers split parts as SplitPart does");

packer::Layout PackerLayout(const StorageFormat& f, const std::vector<int64_t>& dims) {
  packer::Layout layout;
  layout.dims = dims;
  layout.split = f.split;
  for (const LevelSpec& spec : f.levels) {
    layout.levels.push_back(
        {spec.mode, static_cast<int>(spec.part), static_cast<int>(spec.kind), spec.group});
  }
  return layout;
}

}  // namespace

std::vector<CoordinateEncoding> PackedTensor::encodings() const {
  std::vector<CoordinateEncoding> out;
  for (const PackedLevel& l : levels) out.push_back(l.encoding);
  return out;
}

int64_t PackedTensor::bytes() const {
  int64_t total = static_cast<int64_t>(values_f32.size() * 4 + values_f64.size() * 8 +
                                       values_c64.size() * 8 + values_c128.size() * 16);
  for (const PackedLevel& l : levels)
    total += static_cast<int64_t>(l.pos.size() * 4 + l.crd_bytes.size() + l.base.size() * 4);
  return total;
}

RenumberedRows RenumberRows(const CooTensor& matrix, const MatrixOrdering& ordering) {
  auto entries = packer::RenumberRowEntries<ScratchAllocator>(
      matrix.dims[0], matrix.nnz(), matrix.coords[0].data(), matrix.coords[1].data(),
      ordering.old_rows.data());
  RenumberedRows out;
  out.rows = std::move(entries.rows);
  out.cols = std::move(entries.cols);
  out.entry = std::move(entries.entry);
  return out;
}

namespace {

// Packs the entries (coords, values at source[source_entry[e]] or source[e]) into the format;
// with `old_of_new`, the rows taken in that order (LevelPacker::TakeRowsInOrder).
PackOutcome PackEntries(const CooTensor& t, const StorageFormat& f, DType dtype,
                        const PackOptions& options, std::vector<const int32_t*> coords,
                        const int32_t* source_entry, const int32_t* old_of_new) {
  const auto start = std::chrono::steady_clock::now();
  PackOutcome outcome;
  if (std::string reason = f.Check(t.dims); !reason.empty()) {
    outcome.refusal = reason;
    return outcome;
  }
  if (f.uniform_values) {
    if (const int64_t e = FirstDifferingValue(t, IsComplex(dtype)); e >= 0) {
      outcome.refusal = "the format stores one value for every entry, but entry " +
                        std::to_string(e) + "'s value differs from entry 0's";
      return outcome;
    }
  }
  const packer::Layout layout = PackerLayout(f, t.dims);
  packer::Options packer_options;
  packer_options.padding_cap = options.padding_cap;
  packer_options.choose_encodings = options.narrow_coordinates;
  packer::LevelPacker<BulkAllocator, ScratchAllocator> levels(layout, packer_options, t.nnz(),
                                                              coords.data());
  if (old_of_new) levels.TakeRowsInOrder(old_of_new);
  if (!levels.Run()) {
    outcome.refusal = levels.Refusal();
    return outcome;
  }

  auto packed = std::make_unique<PackedTensor>();
  packed->dims = t.dims;
  packed->format = f;
  packed->dtype = dtype;
  packed->nnz = t.nnz();
  for (auto& arrays : levels.Levels()) {
    PackedLevel& level = packed->levels.emplace_back();
    level.kind = static_cast<LevelKind>(arrays.kind);
    level.extent = arrays.extent;
    level.positions = arrays.positions;
    level.pos = std::move(arrays.pos);
    level.encoding = {arrays.encoding.bits, arrays.encoding.relative};
    level.crd_bytes = std::move(arrays.crd);
    level.base = std::move(arrays.base);
  }
  if (f.uniform_values) {
    // One value, also for a tensor without entries: the kernel reads it once on entry.
    const double real = t.nnz() > 0 ? t.values[0] : 0.0, imag = t.nnz() > 0 ? t.Imag(0) : 0.0;
    switch (dtype) {
      case DType::kF32:
        packed->values_f32.assign(1, float(real));
        break;
      case DType::kF64:
        packed->values_f64.assign(1, real);
        break;
      case DType::kC64:
        packed->values_c64.assign(1, std::complex<float>(float(real), float(imag)));
        break;
      case DType::kC128:
        packed->values_c128.assign(1, std::complex<double>(real, imag));
        break;
    }
  } else if (IsComplex(dtype)) {
    // A real tensor packed for a complex kernel has zero imaginary parts.
    std::vector<std::complex<double>> source(t.nnz());
    for (int64_t e = 0; e < t.nnz(); ++e) source[e] = {t.values[e], t.Imag(e)};
    if (dtype == DType::kC64) {
      levels.ScatterValues(packed->values_c64, source.data(), source_entry);
    } else {
      levels.ScatterValues(packed->values_c128, source.data(), source_entry);
    }
  } else if (dtype == DType::kF32) {
    levels.ScatterValues(packed->values_f32, t.values.data(), source_entry);
  } else {
    levels.ScatterValues(packed->values_f64, t.values.data(), source_entry);
  }
  packed->pack_ms = MsSince(start);
  outcome.packed = std::move(packed);
  return outcome;
}

}  // namespace

PackOutcome Pack(const CooTensor& t, const StorageFormat& f, DType dtype,
                 const PackOptions& options, const RenumberedRows* renumbered) {
  std::vector<const int32_t*> coords;
  for (const auto& mode : t.coords) coords.push_back(mode.data());
  if (renumbered) coords = {renumbered->rows.data(), renumbered->cols.data()};
  return PackEntries(t, f, dtype, options, coords, renumbered ? renumbered->entry.data() : nullptr,
                     nullptr);
}

bool PacksRowsInOrder(const StorageFormat& f) {
  return packer::LevelPacker<>::PacksRowsInOrder(PackerLayout(f, {0, 0}));
}

PackOutcome PackRowsInOrder(const CooTensor& matrix, const StorageFormat& f, DType dtype,
                            const PackOptions& options, const MatrixOrdering& ordering) {
  if (!PacksRowsInOrder(f) || matrix.order() != 2 || !ordering.cols.empty()) {
    throw InternalError("PackRowsInOrder: a rows-only ordering of a matrix, into SELL");
  }
  if (ordering.old_rows.empty()) return Pack(matrix, f, dtype, options);  // the identity
  return PackEntries(matrix, f, dtype, options, {matrix.coords[0].data(), matrix.coords[1].data()},
                     nullptr, ordering.old_rows.data());
}

namespace {
void VisitLevel(const PackedTensor& p, int level, int depth, int64_t parent,
                std::vector<int64_t>& modes,
                const std::function<void(int64_t, const std::vector<int64_t>&)>& visit) {
  if (level == depth) {
    for (size_t m = 0; m < p.dims.size(); ++m) {
      if (modes[m] >= p.dims[m]) return;  // padding outside the tensor
    }
    visit(parent, modes);
    return;
  }
  const PackedLevel& l = p.levels[level];
  const LevelSpec& spec = p.format.levels[level];
  const int64_t s = p.format.split[spec.mode];
  auto descend = [&](int64_t coord, int64_t position) {
    const int64_t saved = modes[spec.mode];
    if (spec.part == SplitPart::kWhole) modes[spec.mode] = coord;
    if (spec.part == SplitPart::kOuter) modes[spec.mode] = saved % s + coord * s;
    if (spec.part == SplitPart::kInner) modes[spec.mode] = (saved / s) * s + coord;
    VisitLevel(p, level + 1, depth, position, modes, visit);
    modes[spec.mode] = saved;
  };
  if (l.kind == LevelKind::kSliced) {
    // Each slot holds one coordinate per lane of the next level.
    const PackedLevel& lanes = p.levels[level + 1];
    const LevelSpec& lane_spec = p.format.levels[level + 1];
    const int64_t lane_split = p.format.split[lane_spec.mode];
    if (depth == level + 1) {
      for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q)
        VisitLevel(p, depth, depth, q, modes, visit);
      return;
    }
    const int64_t saved_mode = modes[spec.mode], saved_lane = modes[lane_spec.mode];
    for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q) {
      for (int64_t c = 0; c < lanes.extent; ++c) {
        const int64_t leaf = q * lanes.extent + c;
        const int64_t coord = l.Coordinate(parent, leaf);
        if (spec.part == SplitPart::kWhole) modes[spec.mode] = coord;
        if (spec.part == SplitPart::kOuter) modes[spec.mode] = saved_mode % s + coord * s;
        if (spec.part == SplitPart::kInner) modes[spec.mode] = (saved_mode / s) * s + coord;
        modes[lane_spec.mode] = (saved_lane / lane_split) * lane_split + c;
        VisitLevel(p, level + 2, depth, leaf, modes, visit);
      }
    }
    modes[spec.mode] = saved_mode;
    modes[lane_spec.mode] = saved_lane;
    return;
  }
  if (l.kind == LevelKind::kDense) {
    for (int64_t c = 0; c < l.extent; ++c) descend(c, parent * l.extent + c);
  } else if (l.kind == LevelKind::kSingleton) {
    descend(l.Coordinate(parent, parent), parent);
  } else {
    for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q) descend(l.Coordinate(parent, q), q);
  }
}
}  // namespace

void ForEachPosition(const PackedTensor& p, int depth,
                     const std::function<void(int64_t, const std::vector<int64_t>&)>& visit) {
  std::vector<int64_t> modes(p.dims.size(), 0);
  VisitLevel(p, 0, depth, 0, modes, visit);
}

CooTensor Unpack(const PackedTensor& p) {
  CooTensor out;
  out.Reset(p.dims, p.stored());
  std::vector<int32_t> coordinate(p.dims.size());
  ForEachPosition(p, static_cast<int>(p.levels.size()),
                  [&](int64_t position, const std::vector<int64_t>& modes) {
                    for (size_t m = 0; m < modes.size(); ++m)
                      coordinate[m] = static_cast<int32_t>(modes[m]);
                    out.Append(coordinate.data(), p.value(position));
                  });
  out.Canonicalize();
  return out;
}

}  // namespace sparsetune
