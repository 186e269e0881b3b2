// Name tables: constexpr arrays of {name, value} entries that an enum's parser, its printer and a front end's help
// text all read, so the three cannot disagree. An entry type has a `std::string_view name` and one value member;
// several names may share a value (aliases), the first being the value's name. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lmkit {

// The entry named `name`, or nullptr.
template <typename Entry, size_t N>
const Entry* FindByName(const Entry (&table)[N], std::string_view name) {
  for (const Entry& e : table)
    if (e.name == name) return &e;
  return nullptr;
}

// The first name of `value` (member `value_of` of the entries), or `fallback`.
template <typename Entry, size_t N, typename V>
std::string_view NameOf(const Entry (&table)[N], V Entry::*value_of, V value, std::string_view fallback) {
  for (const Entry& e : table)
    if (e.*value_of == value) return e.name;
  return fallback;
}

// "a | b | c": the first name of each value, in table order (for help texts).
template <typename Entry, size_t N, typename V>
std::string NameList(const Entry (&table)[N], V Entry::*value_of, std::string_view separator = " | ") {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    bool alias = false;
    for (size_t j = 0; j < i; ++j) alias = alias || table[j].*value_of == table[i].*value_of;
    if (alias) continue;
    if (!out.empty()) out += separator;
    out += table[i].name;
  }
  return out;
}

}  // namespace lmkit
