#include "lmkit/dataload/knobs.h"

#include <array>

namespace lmkit::dataload {
namespace {

constexpr std::array<EnumName<Access>, 3> kAccess = {
    {{Access::kMmap, "mmap"}, {Access::kPread, "pread"}, {Access::kDirect, "direct"}}};
constexpr std::array<EnumName<Advice>, 2> kAdvice = {{{Advice::kNormal, "normal"}, {Advice::kRandom, "random"}}};
constexpr std::array<EnumName<CacheMode>, 4> kCache = {{{CacheMode::kAsIs, "as-is"},
                                                        {CacheMode::kWarm, "warm"},
                                                        {CacheMode::kCold, "cold"},
                                                        {CacheMode::kColdEach, "cold-each"}}};
constexpr std::array<EnumName<OutDtype>, 3> kOut = {
    {{OutDtype::kInt64, "int64"}, {OutDtype::kInt32, "int32"}, {OutDtype::kUint16, "uint16"}}};
constexpr std::array<const char*, 9> kKnobs = {"threads",    "prefetch",       "access",    "advice", "cache",
                                               "batch-size", "context-length", "out-dtype", "memory"};

// A whole number in [1, 10^12] (more digits than any real batch or context).
bool PositiveNumber(const std::string& value, uint64_t* out) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 12) return false;
  *out = std::stoull(value);
  return *out > 0;
}

template <typename E, size_t N>
bool Assign(const std::array<EnumName<E>, N>& table, const std::string& value, E* out) {
  auto v = FindEnum<E>(table, value);
  if (v) *out = *v;
  return v.has_value();
}

}  // namespace

std::span<const EnumName<Access>> AccessValues() { return kAccess; }
std::span<const EnumName<Advice>> AdviceValues() { return kAdvice; }
std::span<const EnumName<CacheMode>> CacheModeValues() { return kCache; }
std::span<const EnumName<OutDtype>> OutDtypeValues() { return kOut; }
std::span<const char* const> SweepKnobs() { return kKnobs; }

const char* AccessName(Access a) { return EnumNameOf<Access>(kAccess, a).data(); }
const char* AdviceName(Advice a) { return EnumNameOf<Advice>(kAdvice, a).data(); }
const char* CacheModeName(CacheMode c) { return EnumNameOf<CacheMode>(kCache, c).data(); }
const char* OutDtypeName(OutDtype d) { return EnumNameOf<OutDtype>(kOut, d).data(); }

std::string ConfigValue(const LoaderConfig& c, const std::string& knob) {
  if (knob == "threads") return "threads=" + std::to_string(c.threads);
  if (knob == "prefetch") return "prefetch=" + std::to_string(c.prefetch);
  if (knob == "access") return std::string("access=") + AccessName(c.access);
  if (knob == "advice") return std::string("advice=") + AdviceName(c.advice);
  if (knob == "cache") return std::string("cache=") + CacheModeName(c.cache);
  if (knob == "batch-size") return "batch-size=" + std::to_string(c.batch_size);
  if (knob == "context-length") return "context-length=" + std::to_string(c.context_length);
  if (knob == "out-dtype") return std::string("out-dtype=") + OutDtypeName(c.out);
  if (knob == "memory") return std::string("memory=") + (c.pinned ? "pinned" : "pageable");
  return knob;
}

Result<SweepAxis> ParseSweepAxis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return Status::InvalidArgument(Field("sweep") + " takes NAME=V1,V2,... (got '" + text + "')");
  }
  SweepAxis a;
  a.name = text.substr(0, eq);
  if (a.name == "b" || a.name == "batch") a.name = "batch-size";
  if (a.name == "t" || a.name == "context") a.name = "context-length";
  bool known = false;
  std::string list;
  for (const char* n : kKnobs) {
    known = known || a.name == n;
    list += list.empty() ? n : std::string(", ") + n;
  }
  if (!known) return Status::InvalidArgument(Field("sweep") + ": unknown knob '" + a.name + "' (knobs: " + list + ")");
  const std::string rest = text.substr(eq + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string::npos) comma = rest.size();
    std::string v = rest.substr(pos, comma - pos);
    if (v.empty()) return Status::InvalidArgument(Field("sweep") + " " + a.name + ": empty value in '" + rest + "'");
    LoaderConfig probe;
    LMKIT_RETURN_IF_ERROR(ApplyAxisValue(a.name, v, &probe));
    a.values.push_back(v);
    pos = comma + 1;
  }
  return a;
}

Status ApplyAxisValue(const std::string& name, const std::string& value, LoaderConfig* c) {
  const Status bad = Status::InvalidArgument(Field("sweep") + " " + name + ": invalid value '" + value + "'");
  uint64_t n = 0;
  if (name == "threads" || name == "prefetch") {
    if (!PositiveNumber(value, &n) || n > 4096) return bad;
    (name == "threads" ? c->threads : c->prefetch) = static_cast<unsigned>(n);
  } else if (name == "batch-size" || name == "context-length") {
    if (!PositiveNumber(value, &n)) return bad;
    (name == "batch-size" ? c->batch_size : c->context_length) = n;
  } else if (name == "access") {
    if (!Assign(kAccess, value, &c->access)) return bad;
  } else if (name == "advice") {
    if (!Assign(kAdvice, value, &c->advice)) return bad;
  } else if (name == "cache") {
    if (!Assign(kCache, value, &c->cache)) return bad;
  } else if (name == "out-dtype") {
    if (!Assign(kOut, value, &c->out)) return bad;
  } else if (name == "memory") {
    if (value != "pinned" && value != "pageable") return bad;
    c->pinned = value == "pinned";
  } else {
    return Status::InvalidArgument(Field("sweep") + ": unknown knob '" + name + "'");
  }
  return Status::Ok();
}

}  // namespace lmkit::dataload
