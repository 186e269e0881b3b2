#include "lmkit/accounting/request.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace lmkit::accounting {
namespace {

Result<int64_t> ParsePositive(const std::string& s, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  // ERANGE: strtoll clamps an out-of-range number to LLONG_MAX, which would pass as a valid (huge) value.
  if (s.empty() || end == nullptr || *end != '\0' || v <= 0 || errno == ERANGE)
    return Status::InvalidArgument(Field("sweep") + " " + what + ": '" + s + "' is not a positive integer");
  return static_cast<int64_t>(v);
}

}  // namespace

Result<ModelSpec> ResolveModelSource(const ModelSource& src) {
  if (!src.model.empty() && src.has_dims)
    return Status::InvalidArgument("give either " + Field("model") + " or explicit dimensions (" + Field("layers") +
                                   " ...), not both");
  if (!src.model.empty()) return ResolveModel(src.model);
  if (src.has_dims) return FromDimensions(src.dims);
  return Status::InvalidArgument("no model: give a config.json path, a preset name, or " + Field("layers") + "/" +
                                 Field("d_model") + "/" + Field("heads") + "/" + Field("vocab"));
}

std::vector<std::string> ModelSourceFiles(const ModelSource& src, const Sweep& sweep) {
  std::vector<std::string> models = {src.model};
  if (sweep.variable == "model") models.insert(models.end(), sweep.values.begin(), sweep.values.end());
  std::vector<std::string> files;
  std::error_code ec;
  for (const std::string& m : models) {
    if (m.empty()) continue;
    files.push_back(std::filesystem::is_directory(m, ec) ? (std::filesystem::path(m) / "config.json").string() : m);
  }
  return files;
}

Result<Sweep> ParseSweep(const std::string& spec) {
  Sweep s;
  if (spec.empty()) return s;
  auto eq = spec.find('=');
  if (eq == std::string::npos)
    return Status::InvalidArgument(Field("sweep") + " takes VAR=v1,v2,... (VAR: seq-len, batch, model)");
  s.variable = spec.substr(0, eq);
  if (s.variable == "seq_len" || s.variable == "seq") s.variable = "seq-len";
  if (s.variable != "seq-len" && s.variable != "batch" && s.variable != "model")
    return Status::InvalidArgument(Field("sweep") + " variable must be seq-len, batch or model (got '" + s.variable +
                                   "')");
  std::string rest = spec.substr(eq + 1);
  if (rest.empty()) return Status::InvalidArgument(Field("sweep") + " " + s.variable + " has no values");
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string v = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    // An empty value ("1,,2", "1,") is a typo, not something to skip: the table would silently lack a point.
    if (v.empty())
      return Status::InvalidArgument(Field("sweep") + " " + s.variable + ": empty value in '" + rest + "'");
    s.values.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (s.variable != "model")
    for (const auto& v : s.values) LMKIT_RETURN_IF_ERROR(ParsePositive(v, s.variable).status());
  return s;
}

Status CheckSweepSource(const Sweep& sweep, const ModelSource& src) {
  if (sweep.variable == "model" && (!src.model.empty() || src.has_dims))
    return Status::InvalidArgument(Field("sweep") + " model=... replaces " + Field("model") +
                                   "; give one or the other");
  return Status::Ok();
}

Status ApplySweepValue(const std::string& variable, const std::string& value, int64_t* seq_len, int64_t* batch,
                       ModelSpec* m) {
  if (variable == "seq-len") {
    LMKIT_ASSIGN_OR_RETURN(*seq_len, ParsePositive(value, "seq-len"));
  } else if (variable == "batch") {
    LMKIT_ASSIGN_OR_RETURN(*batch, ParsePositive(value, "batch"));
  } else {
    LMKIT_ASSIGN_OR_RETURN(*m, ResolveModel(value));
  }
  return Status::Ok();
}

}  // namespace lmkit::accounting
