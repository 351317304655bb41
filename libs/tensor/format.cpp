#include "tensor/format.hpp"

namespace sparsetune {

const char* LevelKindLetter(LevelKind kind) {
  switch (kind) {
    case LevelKind::kDense:
      return "U";
    case LevelKind::kCompressed:
      return "C";
    case LevelKind::kSliced:
      return "S";
    case LevelKind::kSingleton:
      return "Q";
  }
  return "?";
}

std::string CoordinateEncoding::Describe() const {
  const std::string type = bits == 32 ? "i32" : "u" + std::to_string(bits);
  return relative ? type + "+base" : type;
}

StorageFormat StorageFormat::Csr() {
  StorageFormat f;
  f.split = {1, 1};
  f.levels = {{0, SplitPart::kWhole, LevelKind::kDense},
              {1, SplitPart::kWhole, LevelKind::kCompressed}};
  return f;
}

StorageFormat StorageFormat::Csf(int order) {
  StorageFormat f;
  f.split.assign(order, 1);
  for (int m = 0; m < order; ++m)
    f.levels.push_back({m, SplitPart::kWhole, LevelKind::kCompressed});
  return f;
}

int64_t StorageFormat::LevelExtent(int level, const std::vector<int64_t>& dims) const {
  const LevelSpec& spec = levels[level];
  const int64_t dim = dims[spec.mode];
  const int64_t s = split[spec.mode];
  switch (spec.part) {
    case SplitPart::kWhole:
      return dim;
    case SplitPart::kOuter:
      return (dim + s - 1) / s;
    case SplitPart::kInner:
      return s;
  }
  return dim;
}

std::string StorageFormat::Check(const std::vector<int64_t>& dims) const {
  const int order = static_cast<int>(dims.size());
  if (static_cast<int>(split.size()) != order) {
    return "the format has " + std::to_string(split.size()) +
           " split sizes for a tensor of order " + std::to_string(order);
  }
  std::vector<int> whole(order, 0), outer(order, 0), inner(order, 0);
  for (const LevelSpec& l : levels) {
    if (l.mode < 0 || l.mode >= order)
      return "a level names mode " + std::to_string(l.mode) + " of an order-" +
             std::to_string(order) + " tensor";
    (l.part == SplitPart::kWhole ? whole : l.part == SplitPart::kOuter ? outer : inner)[l.mode]++;
  }
  if (ordering != OrderingKind::kNone && order != 2)
    return std::string("the ") + OrderingName(ordering) +
           " ordering renumbers a matrix's rows and " + "columns; this tensor has " +
           std::to_string(order) + " modes";
  if (std::string refusal = UniformValuesRefusal(); !refusal.empty()) return refusal;
  for (size_t l = 0; l < levels.size(); ++l) {
    if (levels[l].group != 1 && (levels[l].kind != LevelKind::kCompressed || levels[l].group < 1 ||
                                 levels[l].group > kMaxGroup))
      return "level " + std::to_string(l) + ": only compressed levels are grouped, by 2 to " +
             std::to_string(kMaxGroup);
  }
  for (size_t l = 0; l < levels.size(); ++l) {
    if (levels[l].kind != LevelKind::kSliced) continue;
    const bool lanes = l + 1 < levels.size() && levels[l + 1].kind == LevelKind::kDense &&
                       levels[l + 1].part == SplitPart::kInner &&
                       levels[l + 1].mode != levels[l].mode;
    if (!lanes)
      return "sliced level " + std::to_string(l) +
             " must be followed by a U level over the inner part of another, split mode (its "
             "lanes)";
  }
  for (size_t l = 0; l < levels.size(); ++l) {
    if (levels[l].kind != LevelKind::kSingleton) continue;
    const LevelKind above = l > 0 ? levels[l - 1].kind : LevelKind::kDense;
    if (above != LevelKind::kCompressed && above != LevelKind::kSingleton)
      return "singleton level " + std::to_string(l) +
             " must follow a compressed level (which then lists each entry) or another singleton";
    if (levels[l - 1].group > 1)
      return "singleton level " + std::to_string(l) + " cannot follow a grouped level";
    if (l + 1 < levels.size() && levels[l + 1].kind != LevelKind::kSingleton)
      return "singleton level " + std::to_string(l) + " can only be followed by singletons";
  }
  for (int m = 0; m < order; ++m) {
    if (split[m] < 1)
      return "split size " + std::to_string(split[m]) + " of mode " + std::to_string(m) +
             " is not positive";
    const bool split_mode = split[m] > 1;
    const bool ok = split_mode ? (whole[m] == 0 && outer[m] == 1 && inner[m] == 1)
                               : (whole[m] == 1 && outer[m] == 0 && inner[m] == 0);
    if (!ok) {
      return "mode " + std::to_string(m) +
             (split_mode ? " is split, so it needs exactly one outer and one inner level"
                         : " is not split, so it needs exactly one level");
    }
  }
  return "";
}

std::string StorageFormat::UniformValuesRefusal() const {
  if (!uniform_values || !StoresPadding()) return "";
  return "one value for every entry needs a format without padding zeros, which it would fill "
         "(no S or grouped level, no U level below a compressed one)";
}

bool LevelsStorePadding(const std::vector<LevelSpec>& levels) {
  bool below_compressed = false;
  for (const LevelSpec& l : levels) {
    if (l.kind == LevelKind::kSliced || l.group > 1) return true;
    if (l.kind == LevelKind::kDense && below_compressed) return true;
    if (l.kind != LevelKind::kDense) below_compressed = true;
  }
  return !below_compressed;  // only U levels: every cell is stored
}

std::string StorageFormat::Describe(const std::vector<std::string>& names) const {
  std::string out;
  for (const LevelSpec& l : levels) {
    if (!out.empty()) out += ' ';
    out += l.mode < static_cast<int>(names.size()) ? names[l.mode] : "m" + std::to_string(l.mode);
    if (l.part == SplitPart::kOuter) out += '1';
    if (l.part == SplitPart::kInner) out += '0';
    out +=
        l.group > 1 ? ":G" + std::to_string(l.group) : std::string(":") + LevelKindLetter(l.kind);
  }
  if (ordering != OrderingKind::kNone) out += std::string(" ordered ") + OrderingName(ordering);
  if (uniform_values) out += " one value";
  return out;
}

}  // namespace sparsetune
