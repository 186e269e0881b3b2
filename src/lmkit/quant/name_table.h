// The one way quant/ turns its enum name tables (schemes, formats, calibration methods and flavours) into parsing,
// lookups and the "a, b or c" lists of help texts and errors. Header-only; `Table` is a range of structs with a
// `name` (std::string_view) member.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::quant {

// "a, b or c" over `names`.
std::string JoinChoices(const std::vector<std::string_view>& names);

// The names of every entry of `table`, as JoinChoices lists them.
template <typename Table>
std::string ChoicesOf(const Table& table) {
  std::vector<std::string_view> names;
  for (const auto& e : table) names.push_back(e.name);
  return JoinChoices(names);
}

// The value (member `value`) of the entry named `name`; kInvalidArgument naming Field(field) otherwise.
template <typename Table, typename Entry, typename E>
Result<E> ParseByName(const Table& table, E Entry::*value, std::string_view name, std::string_view field) {
  for (const Entry& e : table)
    if (e.name == name) return e.*value;
  return Status::InvalidArgument(Field(field) + " must be " + ChoicesOf(table) + ", not '" + std::string(name) + "'");
}

// The entry whose `value` is v (the first entry when none is, which a complete table never leaves).
template <typename Table, typename Entry, typename E>
const Entry& EntryOf(const Table& table, E Entry::*value, E v) {
  for (const Entry& e : table)
    if (e.*value == v) return e;
  return *std::begin(table);
}

}  // namespace lmkit::quant
