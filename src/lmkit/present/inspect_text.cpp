#include "lmkit/present/inspect_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "lmkit/common/progress.h"
#include "lmkit/common/units.h"

namespace lmkit::present {
namespace {

std::string Shape(const std::vector<uint64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

Json InspectJson(const io::InspectReport& r) {
  Json j;
  j["path"] = r.path;
  j["format"] = r.format;
  j["files"] = r.files;
  j["tensor_count"] = r.tensors.size();
  j["parameter_count"] = r.parameter_count;
  j["tensor_bytes"] = r.tensor_bytes;
  Json meta = Json::object();
  for (const auto& [k, v] : r.metadata) meta[k] = v;
  j["metadata"] = meta;
  if (r.config) j["config"] = *r.config;
  Json ts = Json::array();
  for (const auto& t : r.tensors) {
    Json e;
    e["name"] = t.name;
    e["dtype"] = io::DTypeName(t.dtype);
    e["shape"] = t.shape;
    e["elements"] = t.elements;
    e["bytes"] = t.bytes;
    if (r.files.size() > 1) e["file"] = t.file;
    if (t.stats) {
      const auto& s = *t.stats;
      e["stats"] = {{"min", s.min},       {"max", s.max},      {"mean", s.mean},     {"std", s.std},
                    {"absmax", s.absmax}, {"finite", s.count}, {"nan", s.nan_count}, {"inf", s.inf_count}};
    }
    ts.push_back(std::move(e));
  }
  j["tensors"] = std::move(ts);
  return j;
}

std::string InspectText(const io::InspectReport& r) {
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
