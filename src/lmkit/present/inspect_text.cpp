#include "lmkit/present/inspect_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "lmkit/common/progress.h"
#include "lmkit/common/units.h"
#include "lmkit/present/json_fields.h"

namespace lmkit::present {
namespace {

std::string Shape(const std::vector<uint64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

namespace {

// A tensor row names its file only when the report read several.
struct TensorRow {
  const io::InspectedTensor& t;
  bool several_files;
};

}  // namespace

LMKIT_JSON_FIELDS(io::TensorStats,  //
                  Field("min", &T::min), Field("max", &T::max), Field("mean", &T::mean), Field("std", &T::std),
                  Field("absmax", &T::absmax), Field("finite", &T::count), Field("nan", &T::nan_count),
                  Field("inf", &T::inf_count));

LMKIT_JSON_FIELDS(TensorRow,  //
                  Computed("name", [](const T& r) { return r.t.name; }),
                  Computed("dtype", [](const T& r) { return io::DTypeName(r.t.dtype); }),
                  Computed("shape", [](const T& r) { return r.t.shape; }),
                  Computed("elements", [](const T& r) { return r.t.elements; }),
                  Computed("bytes", [](const T& r) { return r.t.bytes; }),
                  If([](const T& r) { return r.several_files; }, Computed("file", [](const T& r) { return r.t.file; })),
                  If([](const T& r) { return r.t.stats.has_value(); },
                     Computed("stats", [](const T& r) { return *r.t.stats; })));

LMKIT_JSON_FIELDS(io::InspectResult,  //
                  Field("path", &T::path), Field("format", &T::format), Field("files", &T::files),
                  Computed("tensor_count", [](const T& r) { return r.tensors.size(); }),
                  Field("parameter_count", &T::parameter_count), Field("tensor_bytes", &T::tensor_bytes),
                  Computed("metadata",
                           [](const T& r) {
                             Json meta = Json::object();
                             for (const auto& [k, v] : r.metadata) meta[k] = v;
                             return meta;
                           }),
                  Optional("config", &T::config), Computed("tensors", [](const T& r) {
                    std::vector<TensorRow> rows;
                    for (const auto& t : r.tensors) rows.push_back({t, r.files.size() > 1});
                    return ToJsonValue(rows);
                  }));

Json InspectJson(const io::InspectResult& r) { return ToJson(r); }

std::string InspectText(const io::InspectResult& r) {
  std::string out;
  out += fmt::format("path        {}\n", r.path);
  out += fmt::format("format      {}\n", r.format);
  if (r.files.size() > 1) out += fmt::format("files       {}\n", r.files.size());
  out += fmt::format("tensors     {}\n", r.tensors.size());
  out += fmt::format("parameters  {}\n", Grouped(r.parameter_count));
  out +=
      fmt::format("bytes       {} ({})\n", Grouped(r.tensor_bytes), FormatBytes(static_cast<double>(r.tensor_bytes)));
  for (const auto& [k, v] : r.metadata) out += fmt::format("metadata    {} = {}\n", PrintableText(k), PrintableText(v));
  if (r.config && r.config->contains("model_type") && (*r.config)["model_type"].is_string())
    out += fmt::format("config      model_type = {}\n", PrintableText((*r.config)["model_type"].get<std::string>()));
  size_t name_w = 4, shape_w = 5;
  for (const auto& t : r.tensors) {
    name_w = std::max(name_w, PrintableText(t.name).size());
    shape_w = std::max(shape_w, Shape(t.shape).size());
  }
  out += "\n";
  out += fmt::format("{:<{}}  {:<7}  {:<{}}  {:>12}", "name", name_w, "dtype", "shape", shape_w, "bytes");
  bool stats = !r.tensors.empty() && r.tensors.front().stats.has_value();
  if (stats) out += fmt::format("  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}", "min", "max", "mean", "std", "absmax");
  out += "\n";
  for (const auto& t : r.tensors) {
    out += fmt::format("{:<{}}  {:<7}  {:<{}}  {:>12}", PrintableText(t.name), name_w, io::DTypeName(t.dtype),
                       Shape(t.shape), shape_w, t.bytes);
    if (t.stats) {
      const auto& s = *t.stats;
      out +=
          fmt::format("  {:>12.5g}  {:>12.5g}  {:>12.5g}  {:>12.5g}  {:>12.5g}", s.min, s.max, s.mean, s.std, s.absmax);
      if (s.nan_count || s.inf_count) out += fmt::format("  ({} NaN, {} inf)", s.nan_count, s.inf_count);
    }
    out += "\n";
  }
  return out;
}

std::string PrintableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace lmkit::present
