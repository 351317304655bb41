#include "tensor/pack.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/errors.hpp"
#include "tensor/sort.hpp"

namespace sparsetune {

namespace {

constexpr int64_t kMaxPositions = 2147483647;  // pos and crd are int32

std::vector<int32_t> LevelCoordinates(const CooTensor& t, const StorageFormat& f, int level) {
  const LevelSpec& spec = f.levels[level];
  const int64_t s = f.split[spec.mode];
  const auto& c = t.coords[spec.mode];
  std::vector<int32_t> out(c.size());
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < static_cast<int64_t>(c.size()); ++e) {
    out[e] = static_cast<int32_t>(LevelCoordinate(c[e], spec.part, s));
  }
  return out;
}

}  // namespace

PackOutcome Pack(const CooTensor& t, const StorageFormat& f, DType dtype, double padding_cap) {
  const auto start = std::chrono::steady_clock::now();
  PackOutcome outcome;
  if (std::string reason = f.Check(t.dims); !reason.empty()) {
    outcome.refusal = reason;
    return outcome;
  }
  const int num_levels = static_cast<int>(f.levels.size());
  const int64_t n = t.nnz();
  int64_t dim_sum = 0;
  for (int64_t d : t.dims) dim_sum += d;
  const double cap = padding_cap * double(std::max<int64_t>({n, dim_sum, 1}));

  auto packed = std::make_unique<PackedTensor>();
  packed->dims = t.dims;
  packed->format = f;
  packed->dtype = dtype;
  packed->nnz = n;

  // Sort the entries by their level coordinates, outer level first.
  std::vector<std::vector<int32_t>> level_coords(num_levels);
  std::vector<const int32_t*> keys;
  std::vector<int64_t> extents;
  for (int l = 0; l < num_levels; ++l) {
    level_coords[l] = LevelCoordinates(t, f, l);
    keys.push_back(level_coords[l].data());
    extents.push_back(f.LevelExtent(l, t.dims));
  }
  std::vector<int64_t> order = SortedPermutation(keys, extents, n);

  // position[r]: the position of the r-th sorted entry at the current level.
  std::vector<int64_t> position(n, 0);
  int64_t parent_positions = 1;
  for (int l = 0; l < num_levels; ++l) {
    PackedLevel level;
    level.kind = f.levels[l].kind;
    level.extent = extents[l];
    const int32_t* c = level_coords[l].data();
    if (level.kind == LevelKind::kDense) {
      // U levels multiply positions: refuse before anything of this size is allocated.
      const double positions = double(parent_positions) * double(level.extent);
      if (positions > cap || positions > double(kMaxPositions)) {
        outcome.refusal = "level " + std::to_string(l) + " would hold " +
                          std::to_string(int64_t(positions)) +
                          " positions, over the padding cap of " +
                          std::to_string(int64_t(std::min(cap, double(kMaxPositions)))) + " (" +
                          std::to_string(int(padding_cap)) + " x max(nnz, sum of dims))";
        return outcome;
      }
      level.positions = parent_positions * level.extent;
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < n; ++r) position[r] = position[r] * level.extent + c[order[r]];
    } else {
      level.pos.assign(parent_positions + 1, 0);
      level.crd.reserve(n);
      int64_t prev_parent = -1, prev_coord = -1;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t parent = position[r];
        const int64_t coord = c[order[r]];
        if (parent != prev_parent || coord != prev_coord) {
          level.crd.push_back(static_cast<int32_t>(coord));
          ++level.pos[parent + 1];
          prev_parent = parent;
          prev_coord = coord;
        }
        position[r] = static_cast<int64_t>(level.crd.size()) - 1;
      }
      for (int64_t p = 0; p < parent_positions; ++p) level.pos[p + 1] += level.pos[p];
      level.positions = static_cast<int64_t>(level.crd.size());
      level.crd.shrink_to_fit();
    }
    parent_positions = level.positions;
    packed->levels.push_back(std::move(level));
  }

  const int64_t stored = packed->stored();
  if (dtype == DType::kF32) {
    packed->values_f32.assign(stored, 0.0f);
    for (int64_t r = 0; r < n; ++r) packed->values_f32[position[r]] += float(t.values[order[r]]);
  } else {
    packed->values_f64.assign(stored, 0.0);
    for (int64_t r = 0; r < n; ++r) packed->values_f64[position[r]] += t.values[order[r]];
  }
  packed->pack_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  outcome.packed = std::move(packed);
  return outcome;
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
  if (l.kind == LevelKind::kDense) {
    for (int64_t c = 0; c < l.extent; ++c) descend(c, parent * l.extent + c);
  } else {
    for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q) descend(l.crd[q], q);
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
