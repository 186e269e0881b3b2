// What the _lmkit extension's files share: turning core Status values into Python exceptions, and the registration
// functions of each area. The extension only converts between Python objects and the core's request/result structs;
// every rule lives in the core.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/status.h"

namespace lmkit::py {

namespace nb = nanobind;

// Raises the Python exception for a non-OK status (the GIL must be held): ValueError for bad input and inconsistent
// requests, FileNotFoundError / OSError for files, KeyboardInterrupt when cancelled, RuntimeError for internal errors.
// The message is the core's one line, fields spelled as Python keywords (`keyword` renames those a function calls
// otherwise; by default a field is its keyword).
[[noreturn]] void Raise(const Status& status, const std::function<std::string(std::string_view)>& keyword = {});

// A JSON document from present/ as Python objects (the json module reads the same text the CLI prints), so a
// result's dict has the keys of its declaration.
nb::dict ToDict(const Json& doc);

inline void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}
template <typename T>
T Take(Result<T>&& result) {
  if (!result.ok()) Raise(result.status());
  return std::move(result).value();
}

// A Python list of ints from ids (one allocation, no per-item checks).
nb::list IdList(const uint32_t* ids, size_t count);
inline nb::list IdList(const std::vector<uint32_t>& ids) { return IdList(ids.data(), ids.size()); }

// The UTF-8 bytes of a str, without a copy (CPython caches them in the str object). A str with lone surrogates, which
// UTF-8 cannot hold, is read as tiktoken reads it: each surrogate replaced by U+FFFD (a new str that `owner` keeps).
// A TypeError for anything but a str.
struct Utf8Text {
  explicit Utf8Text(nb::handle str);
  nb::object owner;
  std::string_view view;
};

void RegisterBpe(nb::module_& m);
void RegisterReports(nb::module_& m);

}  // namespace lmkit::py
