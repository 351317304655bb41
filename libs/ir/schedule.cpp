#include "ir/schedule.hpp"

#include <algorithm>
#include <cctype>
#include <functional>

#include "base/errors.hpp"

namespace sparsetune {

namespace {

// Copies the tree below `from` into `to` (whose children are replaced), without recursion.
void CopyTree(const ScheduleNode& from, ScheduleNode& to) {
  std::vector<std::pair<const ScheduleNode*, ScheduleNode*>> pending{{&from, &to}};
  while (!pending.empty()) {
    const auto [source, target] = pending.back();
    pending.pop_back();
    target->loops = source->loops;
    target->compute = source->compute;
    target->temp = source->temp;
    target->producer.reset();
    target->consumer.reset();
    if (source->producer) {
      target->producer = std::make_unique<ScheduleNode>();
      pending.emplace_back(source->producer.get(), target->producer.get());
    }
    if (source->consumer) {
      target->consumer = std::make_unique<ScheduleNode>();
      pending.emplace_back(source->consumer.get(), target->consumer.get());
    }
  }
}

}  // namespace

ScheduleNode::~ScheduleNode() {
  // Children are detached before they are destroyed, so no destructor recurses.
  std::vector<std::unique_ptr<ScheduleNode>> pending;
  if (producer) pending.push_back(std::move(producer));
  if (consumer) pending.push_back(std::move(consumer));
  while (!pending.empty()) {
    std::unique_ptr<ScheduleNode> node = std::move(pending.back());
    pending.pop_back();
    if (node->producer) pending.push_back(std::move(node->producer));
    if (node->consumer) pending.push_back(std::move(node->consumer));
  }
}

std::unique_ptr<ScheduleNode> ScheduleNode::Clone() const {
  auto node = std::make_unique<ScheduleNode>();
  CopyTree(*this, *node);
  return node;
}

Schedule& Schedule::operator=(const Schedule& other) {
  if (this == &other) return *this;
  splits = other.splits;
  CopyTree(other.root, root);
  format = other.format;
  groups = other.groups;
  parallel = other.parallel;
  chunk = other.chunk;
  threads = other.threads;
  partition = other.partition;
  unroll = other.unroll;
  prefetch = other.prefetch;
  merge_runs = other.merge_runs;
  uniform_values = other.uniform_values;
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

void ForEachNode(ScheduleNode& root, const std::function<void(ScheduleNode&)>& visit) {
  std::vector<ScheduleNode*> pending{&root};
  while (!pending.empty()) {
    ScheduleNode* node = pending.back();
    pending.pop_back();
    visit(*node);
    if (node->consumer) pending.push_back(node->consumer.get());
    if (node->producer) pending.push_back(node->producer.get());
  }
}

using Json = nlohmann::json;

// Input text in a message: cut short, with control characters and broken UTF-8 escaped so
// the message stays one line.
std::string Quoted(const std::string& text) {
  constexpr size_t kShown = 40;
  const std::string shown = text.size() > kShown ? text.substr(0, kShown) + "..." : text;
  return Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The JSON value as an integer in [lo, hi], or a message naming `field` and the range.
bool IntegerIn(const Json& v, int64_t lo, int64_t hi, int64_t* out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) return false;
  *out = v.get<int64_t>();
  return *out >= lo && *out <= hi;
}

std::string RangeMessage(const std::string& field, const Json& v, int64_t lo, int64_t hi,
                         const std::string& why = "") {
  std::string shown = v.is_number() ? v.dump() : std::string("not a number");
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  return field + " is " + shown + "; it must be an integer from " + std::to_string(lo) + " to " +
         std::to_string(hi) + (why.empty() ? "" : " (" + why + ")");
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

// Counts of the tree read so far, against ScheduleLimits.
struct TreeCounts {
  int sections = 0;
  int loops = 0;
};

void NodeFromJson(const Json& j, ScheduleNode& node, const std::string& what,
                  const std::string& path, int depth, TreeCounts& counts) {
  auto fail = [&](const std::string& cause) {
    throw InputError(what + ": " + path + ": " + cause);
  };
  using L = ScheduleLimits;
  if (depth > L::kMaxWhereDepth)
    fail("where nodes nest deeper than " + std::to_string(L::kMaxWhereDepth) + " levels");
  if (++counts.sections > L::kMaxSections)
    fail("the tree has more than " + std::to_string(L::kMaxSections) + " sections");
  if (!j.is_object()) fail("expected an object with \"loops\"");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "loops" && it.key() != "compute" && it.key() != "where") {
      fail("unknown key " + Quoted(it.key()));
    }
  }
  if (j.contains("loops")) {
    const Json& loops = j["loops"];
    if (!loops.is_array()) fail("\"loops\" must be an array of loop variable names");
    if (loops.size() > size_t(L::kMaxLoopsPerSection))
      fail("\"loops\" has " + std::to_string(loops.size()) + " entries; the limit is " +
           std::to_string(L::kMaxLoopsPerSection));
    counts.loops += static_cast<int>(loops.size());
    if (counts.loops > L::kMaxLoops)
      fail("the tree has more than " + std::to_string(L::kMaxLoops) + " loops");
    for (const auto& v : loops) {
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
    NodeFromJson(w["producer"], *node.producer, what, path + ".where.producer", depth + 1, counts);
    NodeFromJson(w["consumer"], *node.consumer, what, path + ".where.consumer", depth + 1, counts);
  }
}

LevelKind ParseLevelKind(const std::string& text, const std::string& what) {
  if (text == "U" || text == "u") return LevelKind::kDense;
  if (text == "C" || text == "c") return LevelKind::kCompressed;
  if (text == "S" || text == "s") return LevelKind::kSliced;
  if (text == "Q" || text == "q") return LevelKind::kSingleton;
  throw InputError(what + ": level format " + Quoted(text) + " is not U, C, S, Q or G<size>");
}

}  // namespace

void Schedule::Canonicalize() {
  if (parallel.empty()) partition = Partition::kDynamic;
  if (partition == Partition::kBalanced) chunk = 1;  // unused
  if (unroll != 4) merge_runs = false;               // only batches of four merge
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
  if (merge_runs) j["merge_runs"] = true;
  if (uniform_values) j["uniform_values"] = true;
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

namespace {

// Refuses a schedule: an InputError naming where it came from.
struct Refusal {
  const std::string& what;
  [[noreturn]] void operator()(const std::string& cause) const {
    throw InputError(what + ": " + cause);
  }
};

// The format's levels ("k:C", "k:G4") into s.format and s.groups.
void FormatFromJson(const Json& format, Schedule& s, const Refusal& fail) {
  if (format.size() > size_t(ScheduleLimits::kMaxEntries))
    fail("\"format\" has " + std::to_string(format.size()) + " entries; the limit is " +
         std::to_string(ScheduleLimits::kMaxEntries));
  for (const auto& level : format) {
    if (!level.is_string()) fail("\"format\" entries are strings such as \"k:C\"");
    const std::string text = level.get<std::string>();
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      fail("format level " + Quoted(text) + " is not VAR:U or VAR:C");
    const std::string var = text.substr(0, colon), kind = text.substr(colon + 1);
    if (kind.size() > 1 && (kind[0] == 'G' || kind[0] == 'g')) {
      int group = 0;
      for (size_t c = 1; c < kind.size() && group <= kMaxGroup; ++c) {
        if (!std::isdigit(static_cast<unsigned char>(kind[c]))) group = kMaxGroup + 1;
        group = group * 10 + (kind[c] - '0');
      }
      if (group < 2 || group > kMaxGroup)
        fail("format level " + Quoted(text) + ": a grouped level is G2 to G" +
             std::to_string(kMaxGroup));
      s.format.emplace_back(var, LevelKind::kCompressed);
      s.groups[var] = group;
      continue;
    }
    s.format.emplace_back(var, ParseLevelKind(kind, fail.what));
  }
}

// "parallel": a loop variable, or {"index", "chunk", "threads", "partition"}.
void ParallelFromJson(const Json& p, Schedule& s, const Refusal& fail) {
  using L = ScheduleLimits;
  if (p.is_string()) {
    s.parallel = p.get<std::string>();
  } else if (p.is_object() && p.contains("index") && p["index"].is_string()) {
    s.parallel = p["index"].get<std::string>();
    if (p.contains("chunk")) {
      if (!IntegerIn(p["chunk"], 1, L::kMaxChunk, &s.chunk))
        fail(RangeMessage("parallel chunk", p["chunk"], 1, L::kMaxChunk,
                          "the generated code's int"));
    }
    if (p.contains("threads")) {
      int64_t threads = 0;
      if (!IntegerIn(p["threads"], 0, L::kMaxThreads, &threads))
        fail(RangeMessage("parallel threads", p["threads"], 0, L::kMaxThreads, "0: all"));
      s.threads = static_cast<int>(threads);
    }
    if (p.contains("partition")) {
      const std::string name = p["partition"].is_string() ? p["partition"].get<std::string>() : "";
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
        fail("unknown key " + Quoted(it.key()) + " in \"parallel\"");
    }
  } else {
    fail(
        "\"parallel\" must be null, a loop variable, or {\"index\", \"chunk\", \"threads\", "
        "\"partition\"}");
  }
}

}  // namespace

Schedule Schedule::FromJson(const nlohmann::json& j, const std::string& what) {
  using L = ScheduleLimits;
  const Refusal fail{what};
  auto count_limit = [&](const Json& array, const std::string& field) {
    if (array.size() > size_t(L::kMaxEntries))
      fail(field + " has " + std::to_string(array.size()) + " entries; the limit is " +
           std::to_string(L::kMaxEntries));
  };
  if (!j.is_object()) fail("a schedule is a JSON object");
  Schedule s;
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const char* known[] = {
        "splits",     "tree",     "loop_order", "format",     "parallel",      "kernel",
        "expression", "notation", "source",     "comment",    "unroll",        "narrow_coordinates",
        "transpose",  "prefetch", "ordering",   "merge_runs", "uniform_values"};
    if (std::find_if(std::begin(known), std::end(known),
                     [&](const char* k) { return it.key() == k; }) == std::end(known)) {
      fail("unknown key " + Quoted(it.key()));
    }
  }
  if (j.contains("splits")) {
    if (!j["splits"].is_object()) fail("\"splits\" must map index names to split sizes");
    count_limit(j["splits"], "\"splits\"");
    for (auto it = j["splits"].begin(); it != j["splits"].end(); ++it) {
      const std::string field = "split of " + it.key();
      if (!it.value().is_number_integer()) fail(field + " must be an integer");
      int64_t size = 0;
      if (!IntegerIn(it.value(), 1, L::kMaxSplit, &size))
        fail(RangeMessage(field, it.value(), 1, L::kMaxSplit, "32-bit coordinates"));
      s.splits[it.key()] = size;
    }
  }
  if (j.contains("tree") && j.contains("loop_order"))
    fail("give either \"tree\" or \"loop_order\"");
  if (j.contains("tree")) {
    TreeCounts counts;
    NodeFromJson(j["tree"], s.root, what, "tree", 0, counts);
  } else if (j.contains("loop_order")) {
    const Json& order = j["loop_order"];
    if (!order.is_array()) fail("\"loop_order\" must be an array of loop variables");
    if (order.size() > size_t(L::kMaxLoopsPerSection))
      fail("\"loop_order\" has " + std::to_string(order.size()) + " entries; the limit is " +
           std::to_string(L::kMaxLoopsPerSection));
    for (const auto& v : order) {
      if (!v.is_string()) fail("\"loop_order\" must hold strings");
      s.root.loops.push_back(v.get<std::string>());
    }
  } else {
    fail("missing \"tree\" (or \"loop_order\")");
  }
  if (!j.contains("format") || !j["format"].is_array()) {
    fail("missing \"format\": the sparse operand's levels, such as [\"i:U\", \"k:C\"]");
  }
  FormatFromJson(j["format"], s, fail);
  if (j.contains("parallel") && !j["parallel"].is_null()) ParallelFromJson(j["parallel"], s, fail);
  if (j.contains("unroll")) {
    int64_t unroll = 0;
    if (!IntegerIn(j["unroll"], 1, L::kMaxUnroll, &unroll))
      fail("\"unroll\" must be an integer from 1 to " + std::to_string(L::kMaxUnroll));
    s.unroll = static_cast<int>(unroll);
  }
  if (j.contains("prefetch")) {
    if (!j["prefetch"].is_number_integer() || j["prefetch"].get<int64_t>() < 0 ||
        j["prefetch"].get<int64_t>() > kMaxPrefetchDistance)
      fail("\"prefetch\" must be an integer from 0 to " + std::to_string(kMaxPrefetchDistance));
    s.prefetch = j["prefetch"].get<int>();
  }
  if (j.contains("merge_runs")) {
    if (!j["merge_runs"].is_boolean()) fail("\"merge_runs\" must be true or false");
    s.merge_runs = j["merge_runs"].get<bool>();
  }
  if (j.contains("uniform_values")) {
    if (!j["uniform_values"].is_boolean()) fail("\"uniform_values\" must be true or false");
    s.uniform_values = j["uniform_values"].get<bool>();
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
    count_limit(j["transpose"], "\"transpose\"");
    for (const auto& name : j["transpose"]) {
      if (!name.is_string()) fail("\"transpose\" must hold tensor names");
      s.transposed.push_back(name.get<std::string>());
    }
    std::sort(s.transposed.begin(), s.transposed.end());
    if (std::adjacent_find(s.transposed.begin(), s.transposed.end()) != s.transposed.end())
      fail("\"transpose\" names a tensor twice");
  }
  if (std::string violation = s.LimitViolation(); !violation.empty()) fail(violation);
  return s;
}

std::string Schedule::LimitViolation() const {
  using L = ScheduleLimits;
  auto range = [](const std::string& field, int64_t value, int64_t lo, int64_t hi,
                  const char* why) {
    return field + " is " + std::to_string(value) + "; it must be from " + std::to_string(lo) +
           " to " + std::to_string(hi) + " (" + why + ")";
  };
  auto name_ok = [](const std::string& name) {
    return !name.empty() && name.size() <= L::kMaxNameBytes;
  };
  auto bad_name = [](const std::string& field, const std::string& name) {
    return field + " " + Quoted(name) + " is not a name of 1 to " +
           std::to_string(L::kMaxNameBytes) + " bytes";
  };
  if (splits.size() > size_t(L::kMaxEntries))
    return "more than " + std::to_string(L::kMaxEntries) + " splits";
  for (const auto& [index, size] : splits) {
    if (!name_ok(index)) return bad_name("split index", index);
    if (size < 1 || size > L::kMaxSplit)
      return range("split of " + index, size, 1, L::kMaxSplit, "32-bit coordinates");
  }
  if (format.size() > size_t(L::kMaxEntries))
    return "more than " + std::to_string(L::kMaxEntries) + " format levels";
  for (const auto& [var, kind] : format) {
    if (!name_ok(var)) return bad_name("format level", var);
  }
  for (const auto& [var, group] : groups) {
    if (group < 2 || group > kMaxGroup)
      return range("group of " + var, group, 2, kMaxGroup, "grouped levels");
  }
  if (!parallel.empty() && !name_ok(parallel)) return bad_name("parallel index", parallel);
  if (!parallel.empty() && (chunk < 1 || chunk > L::kMaxChunk))
    return range("parallel chunk", chunk, 1, L::kMaxChunk, "the generated code's int");
  if (threads < 0 || threads > L::kMaxThreads)
    return range("parallel threads", threads, 0, L::kMaxThreads, "0: all");
  if (unroll < 1 || unroll > L::kMaxUnroll)
    return range("unroll", unroll, 1, L::kMaxUnroll, "partial sums");
  if (transposed.size() > size_t(L::kMaxEntries))
    return "more than " + std::to_string(L::kMaxEntries) + " transposed inputs";
  for (const auto& name : transposed) {
    if (!name_ok(name)) return bad_name("transposed input", name);
  }
  // The tree, without recursion.
  int sections = 0, loops = 0;
  std::vector<std::pair<const ScheduleNode*, int>> pending{{&root, 0}};
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    if (depth > L::kMaxWhereDepth)
      return "where nodes nest deeper than " + std::to_string(L::kMaxWhereDepth) + " levels";
    if (++sections > L::kMaxSections)
      return "the tree has more than " + std::to_string(L::kMaxSections) + " sections";
    if (node->loops.size() > size_t(L::kMaxLoopsPerSection))
      return "a section has " + std::to_string(node->loops.size()) + " loops; the limit is " +
             std::to_string(L::kMaxLoopsPerSection);
    loops += static_cast<int>(node->loops.size());
    if (loops > L::kMaxLoops)
      return "the tree has more than " + std::to_string(L::kMaxLoops) + " loops";
    for (const auto& var : node->loops) {
      if (!name_ok(var)) return bad_name("loop variable", var);
    }
    if (node->compute.size() > L::kMaxTextBytes || node->temp.size() > L::kMaxTextBytes)
      return "a compute or temporary is longer than " + std::to_string(L::kMaxTextBytes) + " bytes";
    if (node->producer) pending.emplace_back(node->producer.get(), depth + 1);
    if (node->consumer) pending.emplace_back(node->consumer.get(), depth + 1);
    if (!node->producer != !node->consumer) return "a where node needs a producer and a consumer";
  }
  return "";
}

namespace {

// Builds the document with nlohmann's own builder (its parser is iterative), refusing nesting
// past a depth and remembering where in the document it is, for messages.
class BoundedSax {
 public:
  BoundedSax(Json& result, int max_depth) : dom_(result, false), max_depth_(max_depth) {}

  bool null() { return Value() && dom_.null(); }
  bool boolean(bool v) { return Value() && dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return Value() && dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Value() && dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& text) {
    return Value() && dom_.number_float(v, text);
  }
  bool string(Json::string_t& v) { return Value() && dom_.string(v); }
  bool binary(Json::binary_t& v) { return Value() && dom_.binary(v); }
  bool start_object(std::size_t n) { return Value() && Open(true) && dom_.start_object(n); }
  bool key(Json::string_t& k) {
    path_.back().key = k;
    return dom_.key(k);
  }
  bool end_object() {
    path_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return Value() && Open(false) && dom_.start_array(n); }
  bool end_array() {
    path_.pop_back();
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_position_ = position;
    error_ = e.what();
    error_id_ = e.id;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  size_t error_position() const { return error_position_; }
  const std::string& error() const { return error_; }
  int error_id() const { return error_id_; }

  // Where the parser is: "splits.i", "tree.loops[3]" (shortened when long).
  std::string Path() const {
    std::string out;
    for (const Level& level : path_) {
      if (level.object) {
        if (level.key.empty()) break;
        out += (out.empty() ? "" : ".") + level.key;
      } else if (level.index >= 0) {
        out += "[" + std::to_string(level.index) + "]";
      }
      if (out.size() > 120) return out.substr(0, 120) + "...";
    }
    return out;
  }

 private:
  struct Level {
    bool object;
    std::string key;
    int64_t index = -1;
  };
  bool Value() {
    if (!path_.empty() && !path_.back().object) ++path_.back().index;
    return true;
  }
  bool Open(bool object) {
    if (static_cast<int>(path_.size()) >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    path_.push_back({object, "", -1});
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int max_depth_;
  std::vector<Level> path_;
  bool too_deep_ = false;
  size_t error_position_ = 0;
  std::string error_;
  int error_id_ = 0;
};

}  // namespace

nlohmann::json ParseBoundedJson(std::string_view text, const std::string& what, int max_depth,
                                size_t max_bytes) {
  if (text.size() > max_bytes)
    throw InputError(what, 0,
                     std::to_string(text.size()) + " bytes of JSON, over the limit of " +
                         std::to_string(max_bytes));
  Json result;
  BoundedSax sax(result, max_depth);
  if (Json::sax_parse(text.begin(), text.end(), &sax)) return result;
  const std::string path = sax.Path();
  const std::string at = path.empty() ? "" : path + ": ";
  if (sax.too_deep())
    throw InputError(what, 0,
                     at + "JSON nested deeper than " + std::to_string(max_depth) + " levels");
  const size_t position = std::min(sax.error_position(), text.size());
  const int64_t line = 1 + std::count(text.begin(), text.begin() + position, '\n');
  std::string cause = sax.error();
  if (sax.error_id() == 406) {
    // "number overflow parsing '1e400'"
    const size_t quote = cause.find('\'');
    const std::string number =
        quote == std::string::npos ? "" : cause.substr(quote, cause.rfind('\'') - quote + 1);
    throw InputError(what, line, at + "number " + number + " is out of range");
  }
  const size_t syntax = cause.find("syntax error");
  if (syntax != std::string::npos) cause = cause.substr(syntax);
  throw InputError(what, line, "invalid JSON: " + at + cause);
}

Schedule ParseScheduleText(std::string_view text, const std::string& what) {
  return Schedule::FromJson(
      ParseBoundedJson(text, what, ScheduleLimits::kMaxJsonDepth, ScheduleLimits::kMaxJsonBytes),
      what);
}

bool Schedule::StoresPadding() const {
  std::vector<LevelSpec> levels;
  for (const auto& [var, kind] : format) {
    LevelSpec level;
    level.kind = kind;
    if (auto group = groups.find(var); group != groups.end()) level.group = group->second;
    levels.push_back(level);
  }
  return LevelsStorePadding(levels);
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
  if (merge_runs) out += " | merged runs";
  if (uniform_values) out += " | one value";
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
