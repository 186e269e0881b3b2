// Reading a report function's keyword arguments into a core request: each keyword is read once, by its name (the
// request field's name), and a keyword nobody read is a TypeError, as for a Python function.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lmkit::py {

namespace nb = nanobind;

class Kwargs {
 public:
  // `function` names the Python function in errors ("flops").
  Kwargs(std::string function, nb::kwargs kwargs) : function_(std::move(function)), kwargs_(std::move(kwargs)) {}

  // True when `name` was passed and is not None (None means "not given", the default).
  bool Given(const char* name) const { return kwargs_.contains(name) && !kwargs_[name].is_none(); }

  // Stores the keyword's value in *out when it was given; a value of another type is a TypeError naming the keyword.
  template <typename T>
  bool Get(const char* name, T* out) {
    used_.insert(name);
    if (!Given(name)) return false;
    nb::handle v = kwargs_[name];
    if (!nb::try_cast(v, *out)) TypeMismatch(name, v);
    return true;
  }
  template <typename T>
  std::optional<T> Opt(const char* name) {
    T v{};
    return Get(name, &v) ? std::optional<T>(v) : std::nullopt;
  }
  // The raw object (None when not given), for keywords that take more than one type (svg: True or a path).
  nb::object Raw(const char* name) {
    used_.insert(name);
    return Given(name) ? nb::borrow<nb::object>(kwargs_[name]) : nb::none();
  }
  // Marks a keyword read without reading it (it only selects a mode).
  void Touch(const char* name) { used_.insert(name); }

  // TypeError for the first keyword no Get/Raw/Touch read: "flops() got an unexpected keyword argument 'x'".
  void Finish() const;

  const std::string& function() const { return function_; }

 private:
  [[noreturn]] void TypeMismatch(const char* name, nb::handle value) const;

  std::string function_;
  nb::kwargs kwargs_;
  std::set<std::string, std::less<>> used_;
};

}  // namespace lmkit::py
