#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sparsetune {

inline bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The items with `separator` between each two.
inline std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) out += (k ? separator : "") + items[k];
  return out;
}

}  // namespace sparsetune
