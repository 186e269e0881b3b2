// Name tables for enums: one table per enum drives parsing, the choices listed in help and errors, and printing.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
  bool alias = false;  // accepted when parsing ("bfloat16", "train"); never printed or listed
};

// The value spelled `name` (exactly, aliases included), if any.
template <typename E>
std::optional<E> FindEnum(std::span<const EnumName<E>> table, std::string_view name) {
  for (const auto& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

// The printed name of `v` (its first non-alias entry); "" when the table lacks it.
template <typename E>
std::string_view EnumNameOf(std::span<const EnumName<E>> table, E v) {
  for (const auto& e : table)
    if (!e.alias && e.value == v) return e.name;
  return "";
}

// The non-alias names as prose: "a, b or c" (`last` joins the final pair: " or ", " and ", ", ").
template <typename E>
std::string EnumChoices(std::span<const EnumName<E>> table, std::string_view last = " or ") {
  std::string out;
  size_t n = 0, total = 0;
  for (const auto& e : table) total += e.alias ? 0 : 1;
  for (const auto& e : table) {
    if (e.alias) continue;
    if (n > 0) out += n + 1 == total ? std::string(last) : std::string(", ");
    out += e.name;
    ++n;
  }
  return out;
}

// FindEnum, or kInvalidArgument "<field> must be a, b or c (got 'x')" naming the request field with Field().
template <typename E>
Result<E> ParseEnum(std::span<const EnumName<E>> table, std::string_view name, std::string_view field) {
  if (auto v = FindEnum(table, name)) return *v;
  return Status::InvalidArgument(Field(field) + " must be " + EnumChoices(table) + " (got '" + std::string(name) +
                                 "')");
}

}  // namespace lmkit
