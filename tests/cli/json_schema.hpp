// A validator for the part of JSON Schema (draft 2020-12) that schemas/ uses: type, enum,
// const, required, properties, additionalProperties, items, minItems, maxItems, minimum,
// maximum, exclusiveMinimum, minLength, pattern, uniqueItems, allOf, anyOf, oneOf, not, and
// $ref to "#/$defs/NAME" or to a sibling file ("schedule.schema.json"). A schema using any other
// validation keyword is refused, so that no schema passes by being misread.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparsetune::testing {

class JsonSchemaValidator {
 public:
  // `directory` holds the schema files that $ref names.
  explicit JsonSchemaValidator(std::string directory) : directory_(std::move(directory)) {}

  // The problems of `instance` against the schema file `name`, one per line, each with the
  // JSON pointer of the value; empty when it is valid.
  std::vector<std::string> Validate(const nlohmann::json& instance, const std::string& name) {
    std::vector<std::string> errors;
    const nlohmann::json& schema = Load(name);
    Check(instance, schema, schema, "", errors);
    return errors;
  }

  const nlohmann::json& Load(const std::string& name) {
    auto it = files_.find(name);
    if (it != files_.end()) return it->second;
    std::ifstream in(std::filesystem::path(directory_) / name);
    if (!in) throw std::runtime_error("no schema " + name + " in " + directory_);
    return files_[name] = nlohmann::json::parse(in);
  }

 private:
  static bool HasType(const nlohmann::json& value, const std::string& type) {
    if (type == "null") return value.is_null();
    if (type == "boolean") return value.is_boolean();
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "number") return value.is_number();
    if (type == "integer") {
      if (value.is_number_integer()) return true;
      return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
    }
    throw std::runtime_error("unknown type " + type);
  }

  // The schema a $ref names, and the file it is in (for references inside it).
  std::pair<const nlohmann::json*, const nlohmann::json*> Resolve(const std::string& ref,
                                                                  const nlohmann::json& root) {
    const size_t hash = ref.find('#');
    const std::string file = ref.substr(0, hash);
    const nlohmann::json& document = file.empty() ? root : Load(file);
    if (hash == std::string::npos || hash + 1 == ref.size()) return {&document, &document};
    const nlohmann::json::json_pointer pointer(ref.substr(hash + 1));
    if (!document.contains(pointer)) throw std::runtime_error("unresolved $ref " + ref);
    return {&document.at(pointer), &document};
  }

  void Check(const nlohmann::json& value, const nlohmann::json& schema, const nlohmann::json& root,
             const std::string& where, std::vector<std::string>& errors) {
    static const std::set<std::string> kKnown = {"$schema",     "$id",
                                                 "$comment",    "$defs",
                                                 "title",       "description",
                                                 "examples",    "default",
                                                 "type",        "enum",
                                                 "const",       "required",
                                                 "properties",  "additionalProperties",
                                                 "items",       "minItems",
                                                 "maxItems",    "minimum",
                                                 "maximum",     "exclusiveMinimum",
                                                 "minLength",   "pattern",
                                                 "uniqueItems", "allOf",
                                                 "anyOf",       "oneOf",
                                                 "not",         "$ref"};
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) errors.push_back(At(where) + "no value is allowed here");
      return;
    }
    for (const auto& [keyword, _] : schema.items()) {
      if (!kKnown.count(keyword))
        throw std::runtime_error("the validator does not know the keyword " + keyword);
    }
    auto fail = [&](const std::string& what) { errors.push_back(At(where) + what); };
    if (schema.contains("$ref")) {
      auto [target, document] = Resolve(schema["$ref"].get<std::string>(), root);
      Check(value, *target, *document, where, errors);
    }
    if (schema.contains("type")) {
      const nlohmann::json& type = schema["type"];
      bool ok = false;
      if (type.is_string()) {
        ok = HasType(value, type.get<std::string>());
      } else {
        for (const auto& t : type) ok = ok || HasType(value, t.get<std::string>());
      }
      if (!ok) {
        fail("is " + std::string(value.type_name()) + ", not " + type.dump());
        return;
      }
    }
    if (schema.contains("enum")) {
      bool found = false;
      for (const auto& option : schema["enum"]) found = found || option == value;
      if (!found) fail(value.dump() + " is not one of " + schema["enum"].dump());
    }
    if (schema.contains("const") && schema["const"] != value)
      fail(value.dump() + " is not " + schema["const"].dump());
    if (value.is_object()) {
      for (const auto& name : schema.value("required", nlohmann::json::array())) {
        if (!value.contains(name.get<std::string>()))
          fail("lacks the required field " + name.get<std::string>());
      }
      const nlohmann::json properties = schema.value("properties", nlohmann::json::object());
      for (const auto& [key, member] : value.items()) {
        const std::string path = where + "/" + key;
        if (properties.contains(key)) {
          Check(member, properties[key], root, path, errors);
        } else if (schema.contains("additionalProperties")) {
          Check(member, schema["additionalProperties"], root, path, errors);
        }
      }
    }
    if (value.is_array()) {
      if (schema.contains("items")) {
        for (size_t k = 0; k < value.size(); ++k)
          Check(value[k], schema["items"], root, where + "/" + std::to_string(k), errors);
      }
      if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>())
        fail("has " + std::to_string(value.size()) + " items, fewer than " +
             schema["minItems"].dump());
      if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>())
        fail("has " + std::to_string(value.size()) + " items, more than " +
             schema["maxItems"].dump());
      if (schema.value("uniqueItems", false)) {
        for (size_t a = 0; a < value.size(); ++a)
          for (size_t b = a + 1; b < value.size(); ++b)
            if (value[a] == value[b]) fail("repeats " + value[a].dump());
      }
    }
    if (value.is_number()) {
      const double v = value.get<double>();
      if (schema.contains("minimum") && v < schema["minimum"].get<double>())
        fail(value.dump() + " is below the minimum " + schema["minimum"].dump());
      if (schema.contains("maximum") && v > schema["maximum"].get<double>())
        fail(value.dump() + " is above the maximum " + schema["maximum"].dump());
      if (schema.contains("exclusiveMinimum") && v <= schema["exclusiveMinimum"].get<double>())
        fail(value.dump() + " is not above " + schema["exclusiveMinimum"].dump());
    }
    if (value.is_string()) {
      const std::string text = value.get<std::string>();
      if (schema.contains("minLength") && text.size() < schema["minLength"].get<size_t>())
        fail("is shorter than " + schema["minLength"].dump() + " characters");
      if (schema.contains("pattern") &&
          !std::regex_search(text, std::regex(schema["pattern"].get<std::string>())))
        fail(value.dump() + " does not match " + schema["pattern"].dump());
    }
    auto matches = [&](const nlohmann::json& sub) {
      std::vector<std::string> sub_errors;
      Check(value, sub, root, where, sub_errors);
      return sub_errors.empty();
    };
    if (schema.contains("allOf")) {
      for (const auto& sub : schema["allOf"]) Check(value, sub, root, where, errors);
    }
    if (schema.contains("anyOf")) {
      bool any = false;
      for (const auto& sub : schema["anyOf"]) any = any || matches(sub);
      if (!any) fail("matches none of anyOf");
    }
    if (schema.contains("oneOf")) {
      int count = 0;
      for (const auto& sub : schema["oneOf"]) count += matches(sub) ? 1 : 0;
      if (count != 1) fail("matches " + std::to_string(count) + " of oneOf, not exactly one");
    }
    if (schema.contains("not") && matches(schema["not"])) fail("matches what \"not\" excludes");
  }

  static std::string At(const std::string& where) {
    return (where.empty() ? std::string("(root)") : where) + ": ";
  }

  std::string directory_;
  std::map<std::string, nlohmann::json> files_;
};

}  // namespace sparsetune::testing
