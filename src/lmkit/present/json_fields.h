// One field list per result type, from which its JSON document is generated (the way HF tokenizers derives Serialize
// on its structs): the CLI's --json, --report files and the Python dicts all come from ToJson(result), so the keys
// cannot drift between front ends.
//
// A declaration lists (key, value) pairs in document order (lmkit's Json keeps insertion order, so the order is part
// of the bytes):
//
//   LMKIT_JSON_FIELDS(bpe::DecodeResult,                      // inside namespace lmkit::present
//                     Field("tokenizer", &T::tokenizer),      // a member under its key
//                     Field("format", &T::format),            // an enum: its name through JsonEnum<E>
//                     Optional("reduce", &T::reduce_seconds), // std::optional: left out when empty
//                     Computed("mb_per_s", [](const T& r) { return ...; }),     // derived from the result
//                     ComputedIf("note", [](const T& r) -> std::optional<X> {...}),  // derived, left out when empty
//                     Object("seconds", Field(...), ...),    // a nested object over the same result
//                     If([](const T& r) { return r.gptq; }, Field(...), ...));  // fields present when a test holds
//
// Values convert by type: a declared type nests its own document, std::optional<V> is V or null (Field) or absent
// (Optional), std::vector<V> an array, an enum with a JsonEnum<E> its name, anything else as nlohmann converts it.
// Pure functions of the value; thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lmkit/common/json.h"

namespace lmkit::present {

// Specialised (by LMKIT_JSON_FIELDS) with `static auto Fields()` returning a tuple of field descriptors.
template <typename T>
struct JsonFields;

// Specialised (by LMKIT_JSON_ENUM) with `static std::string Name(E)`: an enum's printed name from its name table.
template <typename E>
struct JsonEnum;

template <typename T>
concept JsonDeclared = requires {
  JsonFields<T>::Fields();
};

template <typename T>
Json ToJson(const T& value);

namespace json_detail {

template <typename V>
struct IsOptional : std::false_type {};
template <typename V>
struct IsOptional<std::optional<V>> : std::true_type {};
template <typename V>
struct IsVector : std::false_type {};
template <typename V, typename A>
struct IsVector<std::vector<V, A>> : std::true_type {};

template <typename F>
struct MemberField {
  std::string_view key;
  F member;  // pointer to member
  bool omit_if_absent;
};
template <typename F>
struct ComputedField {
  std::string_view key;
  F fn;  // const T& -> value
  bool omit_if_absent;
};
template <typename... Fs>
struct ObjectField {
  std::string_view key;
  std::tuple<Fs...> fields;
};
template <typename P, typename... Fs>
struct IfFields {
  P pred;  // const T& -> bool
  std::tuple<Fs...> fields;
};

}  // namespace json_detail

// One value as JSON (declared types, optionals, vectors, declared enums, then nlohmann's own conversions).
template <typename V>
Json ToJsonValue(const V& v) {
  if constexpr (JsonDeclared<V>) {
    return ToJson(v);
  } else if constexpr (json_detail::IsOptional<V>::value) {
    return v ? ToJsonValue(*v) : Json(nullptr);
  } else if constexpr (json_detail::IsVector<V>::value && !std::is_same_v<V, std::vector<bool>>) {
    Json a = Json::array();
    for (const auto& x : v) a.push_back(ToJsonValue(x));
    return a;
  } else if constexpr (std::is_enum_v<V>) {
    return Json(JsonEnum<V>::Name(v));
  } else {
    return Json(v);
  }
}

// The field descriptors, in their own namespace so that they never hide lmkit::Field (the request-field namer of
// common/status.h) in present/'s code; LMKIT_JSON_FIELDS brings them into scope for its list.
namespace fields {

template <typename M>
constexpr json_detail::MemberField<M> Field(std::string_view key, M member) {
  return {key, member, false};
}
// A std::optional member that is left out of the document when empty (Field writes null).
template <typename M>
constexpr json_detail::MemberField<M> Optional(std::string_view key, M member) {
  return {key, member, true};
}
template <typename F>
constexpr json_detail::ComputedField<F> Computed(std::string_view key, F fn) {
  return {key, fn, false};
}
// `fn` returns a std::optional: left out of the document when empty.
template <typename F>
constexpr json_detail::ComputedField<F> ComputedIf(std::string_view key, F fn) {
  return {key, fn, true};
}
template <typename... Fs>
constexpr json_detail::ObjectField<Fs...> Object(std::string_view key, Fs... fields) {
  return {key, std::tuple<Fs...>(fields...)};
}
// `fields` are written (in place, not nested) only when pred(value) holds.
template <typename P, typename... Fs>
constexpr json_detail::IfFields<P, Fs...> If(P pred, Fs... fields) {
  return {pred, std::tuple<Fs...>(fields...)};
}

}  // namespace fields

namespace json_detail {

template <typename T, typename V>
void Put(Json& j, std::string_view key, const V& v, bool omit_if_absent) {
  if constexpr (IsOptional<V>::value) {
    if (omit_if_absent && !v) return;
  }
  j[std::string(key)] = ToJsonValue(v);
}

template <typename T, typename F>
void Add(Json& j, const T& obj, const MemberField<F>& f) {
  Put<T>(j, f.key, obj.*(f.member), f.omit_if_absent);
}
template <typename T, typename F>
void Add(Json& j, const T& obj, const ComputedField<F>& f) {
  Put<T>(j, f.key, f.fn(obj), f.omit_if_absent);
}
template <typename T, typename... Fs>
void AddAll(Json& j, const T& obj, const std::tuple<Fs...>& fields);
template <typename T, typename... Fs>
void Add(Json& j, const T& obj, const ObjectField<Fs...>& f) {
  Json o = Json::object();
  AddAll(o, obj, f.fields);
  j[std::string(f.key)] = std::move(o);
}
template <typename T, typename P, typename... Fs>
void Add(Json& j, const T& obj, const IfFields<P, Fs...>& f) {
  if (f.pred(obj)) AddAll(j, obj, f.fields);
}
template <typename T, typename... Fs>
void AddAll(Json& j, const T& obj, const std::tuple<Fs...>& fields) {
  std::apply([&](const auto&... f) { (Add(j, obj, f), ...); }, fields);
}

}  // namespace json_detail

// The document of a declared type: its fields in declaration order.
template <typename T>
Json ToJson(const T& value) {
  static_assert(JsonDeclared<T>, "no LMKIT_JSON_FIELDS declaration for this type");
  Json j = Json::object();
  json_detail::AddAll(j, value, JsonFields<T>::Fields());
  return j;
}

}  // namespace lmkit::present

// Declares Type's JSON fields; use inside namespace lmkit::present. `T` names Type in the field list.
#define LMKIT_JSON_FIELDS(Type, ...)            \
  template <>                                   \
  struct JsonFields<Type> {                     \
    using T = Type;                             \
    static auto Fields() {                      \
      using namespace ::lmkit::present::fields; \
      return std::make_tuple(__VA_ARGS__);      \
    }                                           \
  }

// Declares how enum Type prints in JSON: `expr` is a string-like expression of `v`; inside namespace lmkit::present.
#define LMKIT_JSON_ENUM(Type, expr)                               \
  template <>                                                     \
  struct JsonEnum<Type> {                                         \
    static std::string Name(Type v) { return std::string(expr); } \
  }
