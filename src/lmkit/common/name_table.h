// Name tables: one constexpr table per enum drives its parsing, its printing and the choices a front end lists in help
// and errors, so the three cannot disagree. A table is any range (C array, std::array, span) of entries with a
// `name` (std::string_view or const char*) and one value member, passed as a member pointer; `EnumName<E>` is the
// entry for tables that hold nothing else. Several entries may share a value: the first names it, the later ones are
// aliases (parsed, never printed or listed). Pure functions, thread-safe.
#pragma once

#include <iterator>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The entry named `name` (exactly, aliases included), or nullptr.
template <typename Table>
const std::ranges::range_value_t<Table>* FindByName(const Table& table, std::string_view name) {
  for (const auto& e : table)
    if (std::string_view(e.name) == name) return &e;
  return nullptr;
}

// The first entry whose member `value_of` is `value` (the value's printed name), or nullptr.
template <typename Table, typename Entry, typename V>
const Entry* FindByValue(const Table& table, V Entry::*value_of, V value) {
  for (const Entry& e : table)
    if (e.*value_of == value) return &e;
  return nullptr;
}

// FindByValue for tables known to be complete (every value has an entry); the first entry otherwise.
template <typename Table, typename Entry, typename V>
const Entry& EntryOf(const Table& table, V Entry::*value_of, V value) {
  const Entry* e = FindByValue(table, value_of, value);
  return e ? *e : *std::begin(table);
}

// The printed name of `value`, or `fallback` when the table lacks it.
template <typename Table, typename Entry, typename V>
std::string_view NameOf(const Table& table, V Entry::*value_of, V value, std::string_view fallback = "") {
  const Entry* e = FindByValue(table, value_of, value);
  return e ? std::string_view(e->name) : fallback;
}

// The printed names in table order, aliases left out: "a, b or c" by default; `separator` joins all but the final
// pair, which `last` joins (" | " twice gives "a | b | c").
template <typename Table, typename Entry, typename V>
std::string NameList(const Table& table, V Entry::*value_of, std::string_view separator = ", ",
                     std::string_view last = " or ") {
  size_t total = 0;
  for (const Entry& e : table) total += FindByValue(table, value_of, e.*value_of) == &e ? 1 : 0;
  std::string out;
  size_t n = 0;
  for (const Entry& e : table) {
    if (FindByValue(table, value_of, e.*value_of) != &e) continue;
    if (n > 0) out += n + 1 == total ? last : separator;
    out += e.name;
    ++n;
  }
  return out;
}

// How a parse error quotes the name it did not find: "<field> must be a or b (got 'x')", or "..., not 'x'" (the
// form quant/ uses for all its option errors).
enum class UnknownName { kGot, kNot };

// The value named `name`, or kInvalidArgument naming the request field with Field(field) and listing the choices.
template <typename Table, typename Entry, typename V>
Result<V> ParseName(const Table& table, V Entry::*value_of, std::string_view name, std::string_view field,
                    UnknownName style = UnknownName::kGot) {
  if (const Entry* e = FindByName(table, name)) return e->*value_of;
  const std::string choices = Field(field) + " must be " + NameList(table, value_of);
  if (style == UnknownName::kNot) return Status::InvalidArgument(choices + ", not '" + std::string(name) + "'");
  return Status::InvalidArgument(choices + " (got '" + std::string(name) + "')");
}

// Shorthands for EnumName tables.
template <typename E>
std::optional<E> FindEnum(std::span<const EnumName<E>> table, std::string_view name) {
  if (const auto* e = FindByName(table, name)) return e->value;
  return std::nullopt;
}
template <typename E>
std::string_view EnumNameOf(std::span<const EnumName<E>> table, E value) {
  return NameOf(table, &EnumName<E>::value, value);
}
template <typename E>
std::string EnumChoices(std::span<const EnumName<E>> table, std::string_view last = " or ") {
  return NameList(table, &EnumName<E>::value, ", ", last);
}
template <typename E>
Result<E> ParseEnum(std::span<const EnumName<E>> table, std::string_view name, std::string_view field) {
  return ParseName(table, &EnumName<E>::value, name, field);
}

}  // namespace lmkit
