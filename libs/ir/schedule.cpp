#include "ir/schedule.hpp"

#include <algorithm>
#include <cctype>
#include <functional>

#include "base/errors.hpp"

namespace sparsetune {

std::unique_ptr<ScheduleNode> ScheduleNode::Clone() const {
  auto node = std::make_unique<ScheduleNode>();
  node->loops = loops;
  node->compute = compute;
  node->temp = temp;
  if (producer) node->producer = producer->Clone();
  if (consumer) node->consumer = consumer->Clone();
  return node;
}

Schedule& Schedule::operator=(const Schedule& other) {
  if (this == &other) return *this;
  splits = other.splits;
  root.loops = other.root.loops;
  root.compute = other.root.compute;
  root.temp = other.root.temp;
  root.producer = other.root.producer ? other.root.producer->Clone() : nullptr;
  root.consumer = other.root.consumer ? other.root.consumer->Clone() : nullptr;
  format = other.format;
  groups = other.groups;
  parallel = other.parallel;
  chunk = other.chunk;
  threads = other.threads;
  partition = other.partition;
  unroll = other.unroll;
  prefetch = other.prefetch;
  ordering = other.ordering;
  narrow_coordinates = other.narrow_coordinates;
  transposed = other.transposed;
  return *this;
}

const char* PartitionName(Partition partition) {
  return partition == Partition::kBalanced ? "balanced" : "dynamic";
}

std::string SplitVarName(const std::string& index, SplitPart part) {
  switch (part) {
    case SplitPart::kWhole:
      return index;
    case SplitPart::kOuter:
      return index + "1";
    case SplitPart::kInner:
      return index + "0";
  }
  return index;
}

namespace {

void ForEachNode(ScheduleNode& node, const std::function<void(ScheduleNode&)>& visit) {
  visit(node);
  if (node.producer) ForEachNode(*node.producer, visit);
  if (node.consumer) ForEachNode(*node.consumer, visit);
}

nlohmann::json NodeToJson(const ScheduleNode& node) {
  nlohmann::json j;
  j["loops"] = node.loops;
  if (!node.compute.empty()) j["compute"] = node.compute;
  if (node.is_where()) {
    j["where"] = {{"temp", node.temp},
                  {"producer", NodeToJson(*node.producer)},
                  {"consumer", NodeToJson(*node.consumer)}};
  }
  return j;
}

void NodeFromJson(const nlohmann::json& j, ScheduleNode& node, const std::string& what,
                  const std::string& path) {
  auto fail = [&](const std::string& cause) {
    throw InputError(what + ": " + path + ": " + cause);
  };
  if (!j.is_object()) fail("expected an object with \"loops\"");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "loops" && it.key() != "compute" && it.key() != "where") {
      fail("unknown key \"" + it.key() + "\"");
    }
  }
  if (j.contains("loops")) {
    if (!j["loops"].is_array()) fail("\"loops\" must be an array of loop variable names");
    for (const auto& v : j["loops"]) {
      if (!v.is_string()) fail("\"loops\" must hold strings");
      node.loops.push_back(v.get<std::string>());
    }
  }
  if (j.contains("compute")) {
    if (!j["compute"].is_string()) fail("\"compute\" must be a string such as \"t += B(i,j)\"");
    node.compute = j["compute"].get<std::string>();
  }
  if (j.contains("where")) {
    const auto& w = j["where"];
    if (!w.is_object() || !w.contains("temp") || !w.contains("producer") ||
        !w.contains("consumer")) {
      fail("\"where\" needs \"temp\", \"producer\" and \"consumer\"");
    }
    if (!w["temp"].is_string()) fail("\"temp\" must be a string such as \"t\" or \"T(l)\"");
    if (!node.compute.empty()) fail("a section has either \"compute\" or \"where\", not both");
    node.temp = w["temp"].get<std::string>();
    node.producer = std::make_unique<ScheduleNode>();
    node.consumer = std::make_unique<ScheduleNode>();
    NodeFromJson(w["producer"], *node.producer, what, path + ".where.producer");
    NodeFromJson(w["consumer"], *node.consumer, what, path + ".where.consumer");
  }
}

LevelKind ParseLevelKind(const std::string& text, const std::string& what) {
  if (text == "U" || text == "u") return LevelKind::kDense;
  if (text == "C" || text == "c") return LevelKind::kCompressed;
  if (text == "S" || text == "s") return LevelKind::kSliced;
  throw InputError(what + ": level format \"" + text + "\" is not U, C or S");
}

}  // namespace

void Schedule::Canonicalize() {
  if (parallel.empty()) partition = Partition::kDynamic;
  if (partition == Partition::kBalanced) chunk = 1;  // unused
  std::map<std::string, std::string> rename;         // var -> new name ("" = drop)
  for (auto it = splits.begin(); it != splits.end();) {
    if (it->second == 1) {
      rename[it->first + "1"] = it->first;
      rename[it->first + "0"] = "";
      it = splits.erase(it);
    } else {
      ++it;
    }
  }
  if (rename.empty()) return;
  auto map_var = [&](const std::string& var, bool* drop) {
    auto r = rename.find(var);
    *drop = r != rename.end() && r->second.empty();
    return r == rename.end() ? var : r->second;
  };
  ForEachNode(root, [&](ScheduleNode& node) {
    std::vector<std::string> loops;
    for (const auto& v : node.loops) {
      bool drop = false;
      std::string name = map_var(v, &drop);
      if (!drop) loops.push_back(name);
    }
    node.loops = loops;
  });
  std::vector<std::pair<std::string, LevelKind>> levels;
  for (const auto& [v, kind] : format) {
    bool drop = false;
    std::string name = map_var(v, &drop);
    if (!drop) levels.emplace_back(name, kind);
  }
  format = levels;
  std::map<std::string, int> renamed_groups;
  for (const auto& [v, group] : groups) {
    bool drop = false;
    std::string name = map_var(v, &drop);
    if (!drop) renamed_groups[name] = group;
  }
  groups = renamed_groups;
  if (!parallel.empty()) {
    bool drop = false;
    std::string name = map_var(parallel, &drop);
    parallel = drop ? std::string() : name;
  }
}

nlohmann::json Schedule::ToJson() const {
  nlohmann::json j;
  j["splits"] = nlohmann::json::object();
  for (const auto& [index, size] : splits) j["splits"][index] = size;
  j["tree"] = NodeToJson(root);
  j["format"] = nlohmann::json::array();
  for (const auto& [var, kind] : format) {
    auto group = groups.find(var);
    j["format"].push_back(group != groups.end() && group->second > 1
                              ? var + ":G" + std::to_string(group->second)
                              : var + ":" + LevelKindLetter(kind));
  }
  if (parallel.empty()) {
    j["parallel"] = nullptr;
  } else {
    j["parallel"] = {{"index", parallel}, {"chunk", chunk}, {"threads", threads}};
    // Written only when not the default, so schedules stored before these fields existed keep
    // their canonical text (and hash).
    if (partition != Partition::kDynamic) j["parallel"]["partition"] = PartitionName(partition);
  }
  if (unroll != 1) j["unroll"] = unroll;
  if (prefetch != 0) j["prefetch"] = prefetch;
  if (ordering != OrderingKind::kNone) j["ordering"] = OrderingName(ordering);
  if (narrow_coordinates) j["narrow_coordinates"] = true;
  if (!transposed.empty()) j["transpose"] = transposed;
  return j;
}

std::string Schedule::CanonicalJson() const {
  Schedule copy = *this;
  copy.Canonicalize();
  return copy.ToJson().dump();
}

Schedule Schedule::FromJson(const nlohmann::json& j, const std::string& what) {
  auto fail = [&](const std::string& cause) { throw InputError(what + ": " + cause); };
  if (!j.is_object()) fail("a schedule is a JSON object");
  Schedule s;
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const char* known[] = {"splits",    "tree",     "loop_order", "format",
                                  "parallel",  "kernel",   "expression", "notation",
                                  "source",    "comment",  "unroll",     "narrow_coordinates",
                                  "transpose", "prefetch", "ordering"};
    if (std::find_if(std::begin(known), std::end(known),
                     [&](const char* k) { return it.key() == k; }) == std::end(known)) {
      fail("unknown key \"" + it.key() + "\"");
    }
  }
  if (j.contains("splits")) {
    if (!j["splits"].is_object()) fail("\"splits\" must map index names to split sizes");
    for (auto it = j["splits"].begin(); it != j["splits"].end(); ++it) {
      if (!it.value().is_number_integer()) fail("split of " + it.key() + " must be an integer");
      const int64_t size = it.value().get<int64_t>();
      if (size < 1)
        fail("split of " + it.key() + " is " + std::to_string(size) + "; it must be at least 1");
      s.splits[it.key()] = size;
    }
  }
  if (j.contains("tree") && j.contains("loop_order"))
    fail("give either \"tree\" or \"loop_order\"");
  if (j.contains("tree")) {
    NodeFromJson(j["tree"], s.root, what, "tree");
  } else if (j.contains("loop_order")) {
    if (!j["loop_order"].is_array()) fail("\"loop_order\" must be an array of loop variables");
    for (const auto& v : j["loop_order"]) {
      if (!v.is_string()) fail("\"loop_order\" must hold strings");
      s.root.loops.push_back(v.get<std::string>());
    }
  } else {
    fail("missing \"tree\" (or \"loop_order\")");
  }
  if (!j.contains("format") || !j["format"].is_array()) {
    fail("missing \"format\": the sparse operand's levels, such as [\"i:U\", \"k:C\"]");
  }
  for (const auto& level : j["format"]) {
    if (!level.is_string()) fail("\"format\" entries are strings such as \"k:C\"");
    const std::string text = level.get<std::string>();
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      fail("format level \"" + text + "\" is not VAR:U or VAR:C");
    const std::string var = text.substr(0, colon), kind = text.substr(colon + 1);
    if (kind.size() > 1 && (kind[0] == 'G' || kind[0] == 'g')) {
      int group = 0;
      for (size_t c = 1; c < kind.size() && group <= kMaxGroup; ++c) {
        if (!std::isdigit(static_cast<unsigned char>(kind[c]))) group = kMaxGroup + 1;
        group = group * 10 + (kind[c] - '0');
      }
      if (group < 2 || group > kMaxGroup)
        fail("format level \"" + text + "\": a grouped level is G2 to G" +
             std::to_string(kMaxGroup));
      s.format.emplace_back(var, LevelKind::kCompressed);
      s.groups[var] = group;
      continue;
    }
    s.format.emplace_back(var, ParseLevelKind(kind, what));
  }
  if (j.contains("parallel") && !j["parallel"].is_null()) {
    const auto& p = j["parallel"];
    if (p.is_string()) {
      s.parallel = p.get<std::string>();
    } else if (p.is_object() && p.contains("index") && p["index"].is_string()) {
      s.parallel = p["index"].get<std::string>();
      if (p.contains("chunk")) {
        if (!p["chunk"].is_number_integer() || p["chunk"].get<int64_t>() < 1) {
          fail("parallel chunk must be a positive integer");
        }
        s.chunk = p["chunk"].get<int64_t>();
      }
      if (p.contains("threads")) {
        if (!p["threads"].is_number_integer() || p["threads"].get<int64_t>() < 0 ||
            p["threads"].get<int64_t>() > 4096) {
          fail("parallel threads must be an integer in [0, 4096] (0: all)");
        }
        s.threads = p["threads"].get<int>();
      }
      if (p.contains("partition")) {
        const std::string name =
            p["partition"].is_string() ? p["partition"].get<std::string>() : "";
        if (name == "dynamic") {
          s.partition = Partition::kDynamic;
        } else if (name == "balanced") {
          s.partition = Partition::kBalanced;
        } else {
          fail("parallel partition must be \"dynamic\" or \"balanced\"");
        }
      }
      for (auto it = p.begin(); it != p.end(); ++it) {
        if (it.key() != "index" && it.key() != "chunk" && it.key() != "threads" &&
            it.key() != "partition")
          fail("unknown key \"" + it.key() + "\" in \"parallel\"");
      }
    } else {
      fail(
          "\"parallel\" must be null, a loop variable, or {\"index\", \"chunk\", \"threads\", "
          "\"partition\"}");
    }
  }
  if (j.contains("unroll")) {
    if (!j["unroll"].is_number_integer() || j["unroll"].get<int64_t>() < 1 ||
        j["unroll"].get<int64_t>() > 16)
      fail("\"unroll\" must be an integer from 1 to 16");
    s.unroll = j["unroll"].get<int>();
  }
  if (j.contains("prefetch")) {
    if (!j["prefetch"].is_number_integer() || j["prefetch"].get<int64_t>() < 0 ||
        j["prefetch"].get<int64_t>() > kMaxPrefetchDistance)
      fail("\"prefetch\" must be an integer from 0 to " + std::to_string(kMaxPrefetchDistance));
    s.prefetch = j["prefetch"].get<int>();
  }
  if (j.contains("ordering")) {
    if (!j["ordering"].is_string() || !ParseOrdering(j["ordering"].get<std::string>(), &s.ordering))
      fail("\"ordering\" must be one of none, rcm, degree, partition, community");
  }
  if (j.contains("narrow_coordinates")) {
    if (!j["narrow_coordinates"].is_boolean()) fail("\"narrow_coordinates\" must be true or false");
    s.narrow_coordinates = j["narrow_coordinates"].get<bool>();
  }
  if (j.contains("transpose")) {
    if (!j["transpose"].is_array()) fail("\"transpose\" must be an array of tensor names");
    for (const auto& name : j["transpose"]) {
      if (!name.is_string()) fail("\"transpose\" must hold tensor names");
      s.transposed.push_back(name.get<std::string>());
    }
    std::sort(s.transposed.begin(), s.transposed.end());
    if (std::adjacent_find(s.transposed.begin(), s.transposed.end()) != s.transposed.end())
      fail("\"transpose\" names a tensor twice");
  }
  return s;
}

std::string Schedule::Summary() const {
  std::string out;
  std::function<void(const ScheduleNode&)> walk = [&](const ScheduleNode& node) {
    for (size_t k = 0; k < node.loops.size(); ++k) out += (k ? "," : "") + node.loops[k];
    if (node.is_where()) {
      out += (node.loops.empty() ? "<" : " <") + node.temp + "; ";
      walk(*node.producer);
      out += " ; ";
      walk(*node.consumer);
      out += ">";
    }
  };
  walk(root);
  out += " |";
  for (const auto& [var, kind] : format) {
    auto group = groups.find(var);
    out += " " + var + ":" +
           (group != groups.end() ? "G" + std::to_string(group->second) : LevelKindLetter(kind));
  }
  for (const auto& [index, size] : splits) out += " " + index + "/" + std::to_string(size);
  out += parallel.empty() ? " | serial"
         : partition == Partition::kBalanced
             ? " | par " + parallel + " balanced"
             : " | par " + parallel + " chunk " + std::to_string(chunk);
  if (!parallel.empty() && threads) out += " threads " + std::to_string(threads);
  if (unroll > 1) out += " | unroll " + std::to_string(unroll);
  if (prefetch > 0) out += " | prefetch " + std::to_string(prefetch);
  if (ordering != OrderingKind::kNone) out += std::string(" | ordered ") + OrderingName(ordering);
  if (narrow_coordinates) out += " | narrow";
  for (const auto& name : transposed) out += " | " + name + " transposed";
  return out;
}

Schedule FixedCsrSchedule(const Expression& e) {
  Schedule s;
  const auto& modes = e.sparse_input().indices;
  for (size_t m = 0; m < modes.size(); ++m) {
    // TACO's CSR keeps the first level dense; CSF (order > 2) compresses every level.
    const bool dense_root = modes.size() == 2 && m == 0;
    s.format.emplace_back(modes[m], dense_root ? LevelKind::kDense : LevelKind::kCompressed);
    s.root.loops.push_back(modes[m]);
  }
  // Dense-only indices: output indices first (so that reductions stay innermost when they can).
  std::vector<std::string> dense = e.DenseOnlyIndices();
  std::stable_partition(dense.begin(), dense.end(),
                        [&](const std::string& index) { return e.IsOutputIndex(index); });
  for (const auto& index : dense) s.root.loops.push_back(index);
  s.parallel = modes[0];
  s.chunk = dense.empty() ? 128 : 32;
  s.threads = 0;
  return s;
}

}  // namespace sparsetune
