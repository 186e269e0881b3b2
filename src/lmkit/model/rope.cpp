#include "lmkit/model/rope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>

namespace lmkit::model {
namespace {

// The keys a rope dict may hold, per rope_type (besides rope_type/type, rope_theta, partial_rotary_factor).
const std::set<std::string>& KnownKeys(const std::string& type) {
  static const std::set<std::string> kDefault = {}, kScaled = {"factor"},
                                     kLlama3 = {"factor", "low_freq_factor", "high_freq_factor",
                                                "original_max_position_embeddings"},
                                     kYarn = {"factor",           "original_max_position_embeddings",
                                              "attention_factor", "beta_fast",
                                              "beta_slow",        "mscale",
                                              "mscale_all_dim",   "truncate"},
                                     // short_mscale / long_mscale: older Phi-3 configs; transformers 5 reads neither.
      kLong = {"factor",           "original_max_position_embeddings",
               "attention_factor", "long_factor",
               "short_factor",     "short_mscale",
               "long_mscale"};
  if (type == "linear" || type == "dynamic") return kScaled;
  if (type == "llama3") return kLlama3;
  if (type == "yarn") return kYarn;
  if (type == "longrope") return kLong;
  return kDefault;
}

std::vector<double> BaseInvFreq(double theta, uint32_t dim) {
  std::vector<double> f(dim / 2);
  for (uint32_t i = 0; i < dim / 2; ++i) f[i] = 1.0 / std::pow(theta, 2.0 * i / dim);
  return f;
}

}  // namespace

Result<RopeSchedule> RopeSchedule::Make(const io::RopeSpec& spec, uint32_t head_dim, uint32_t max_positions,
                                        const std::string& subject) {
  static const std::set<std::string> kTypes = {"default", "linear", "dynamic", "llama3", "yarn", "longrope"};
  if (!kTypes.count(spec.type))
    return Status::Unsupported(subject, "field 'rope_parameters.rope_type' '" + spec.type +
                                            "' is not implemented (default, linear, dynamic, llama3, yarn, longrope)");
  const Json& p = spec.params;
  const auto& known = KnownKeys(spec.type);
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string& k = it.key();
    if (k == "rope_type" || k == "type" || k == "rope_theta" || k == "partial_rotary_factor" || known.count(k))
      continue;
    if (it.value().is_null()) continue;
    return Status::Unsupported(
        subject, "field 'rope_parameters." + k + "' is not implemented for rope_type '" + spec.type + "'");
  }
  auto num = [&](const char* k, bool required, double fallback) -> Result<double> {
    if (!p.contains(k) || p[k].is_null()) {
      if (required)
        return Status::InvalidInput(subject,
                                    fmt::format("rope_type '{}' needs field 'rope_parameters.{}'", spec.type, k));
      return fallback;
    }
    if (!p[k].is_number() || !std::isfinite(p[k].get<double>()))
      return Status::InvalidInput(subject, fmt::format("field 'rope_parameters.{}' is not a number", k));
    return p[k].get<double>();
  };
  RopeSchedule s;
  s.type_ = spec.type;
  s.theta_ = spec.theta;
  s.max_positions_ = max_positions;
  s.original_max_ = static_cast<uint32_t>(std::clamp<int64_t>(spec.original_max, 0, UINT32_MAX));
  const uint32_t dim = static_cast<uint32_t>(head_dim * spec.partial);  // int(head_dim * partial_rotary_factor)
  if (spec.partial > 1.0 || dim < 2 || dim % 2 != 0)
    return Status::InvalidInput(subject, fmt::format("partial_rotary_factor {} gives {} rotary dimensions of head_dim "
                                                     "{} (needs an even number >= 2)",
                                                     spec.partial, dim, head_dim));
  s.dim_ = dim;
  if ((spec.type == "llama3" || spec.type == "yarn" || spec.type == "longrope") && s.original_max_ < 2)
    return Status::InvalidInput(
        subject,
        fmt::format("rope_type '{}' needs original_max_position_embeddings >= 2 (got {})", spec.type, s.original_max_));
  if (spec.type == "dynamic" && dim < 4)
    return Status::InvalidInput(subject, "rope_type 'dynamic' needs at least 4 rotary dimensions");
  s.fixed_.rot_dim = dim;
  s.fixed_.inv_freq = BaseInvFreq(spec.theta, dim);
  std::vector<double>& f = s.fixed_.inv_freq;
  if (spec.type == "linear" || spec.type == "dynamic") {
    LMKIT_ASSIGN_OR_RETURN(s.factor_, num("factor", true, 1));
    if (!(s.factor_ > 0)) return Status::InvalidInput(subject, "field 'rope_parameters.factor' must be positive");
    if (spec.type == "linear")
      for (double& x : f) x /= s.factor_;
  } else if (spec.type == "llama3") {
    LMKIT_ASSIGN_OR_RETURN(double factor, num("factor", true, 1));
    LMKIT_ASSIGN_OR_RETURN(double lo, num("low_freq_factor", true, 1));
    LMKIT_ASSIGN_OR_RETURN(double hi, num("high_freq_factor", true, 4));
    if (!(factor > 0) || !(hi > lo) || !(lo > 0))
      return Status::InvalidInput(subject,
                                  "llama3 rope_parameters need factor > 0 and high_freq_factor > "
                                  "low_freq_factor > 0");
    const double old = s.original_max_, lo_wl = old / lo, hi_wl = old / hi;
    for (double& x : f) {
      const double wl = 2 * std::numbers::pi / x;
      if (wl > lo_wl) {
        x /= factor;
      } else if (!(wl < hi_wl)) {
        const double smooth = (old / wl - lo) / (hi - lo);
        x = (1 - smooth) * x / factor + smooth * x;
      }
    }
  } else if (spec.type == "yarn") {
    LMKIT_ASSIGN_OR_RETURN(double factor, num("factor", false, 0));
    if (factor == 0) factor = static_cast<double>(max_positions) / s.original_max_;
    LMKIT_ASSIGN_OR_RETURN(double attn, num("attention_factor", false, 0));
    LMKIT_ASSIGN_OR_RETURN(double mscale, num("mscale", false, 0));
    LMKIT_ASSIGN_OR_RETURN(double mscale_all, num("mscale_all_dim", false, 0));
    // `x or 32`: 0 and absence both take the default.
    LMKIT_ASSIGN_OR_RETURN(double beta_fast, num("beta_fast", false, 32));
    LMKIT_ASSIGN_OR_RETURN(double beta_slow, num("beta_slow", false, 1));
    if (beta_fast == 0) beta_fast = 32;
    if (beta_slow == 0) beta_slow = 1;
    bool truncate = true;
    if (p.contains("truncate") && !p["truncate"].is_null()) {
      if (!p["truncate"].is_boolean())
        return Status::InvalidInput(subject, "field 'rope_parameters.truncate' is not true or false");
      truncate = p["truncate"].get<bool>();
    }
    auto get_mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    if (attn == 0)
      attn = mscale != 0 && mscale_all != 0 ? get_mscale(factor, mscale) / get_mscale(factor, mscale_all)
                                            : get_mscale(factor, 1);
    s.fixed_.attention_factor = attn;
    auto corr_dim = [&](double rot) {
      return dim * std::log(s.original_max_ / (rot * 2 * std::numbers::pi)) / (2 * std::log(spec.theta));
    };
    double low = corr_dim(beta_fast), high = corr_dim(beta_slow);
    if (truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim - 1.0);
    if (low == high) high += 0.001;
    for (uint32_t i = 0; i < dim / 2; ++i) {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0), extra = 1 - ramp;
      f[i] = f[i] / factor * (1 - extra) + f[i] * extra;
    }
  } else if (spec.type == "longrope") {
    for (const char* k : {"long_factor", "short_factor"}) {
      if (!p.contains(k) || !p[k].is_array() || p[k].size() != dim / 2)
        return Status::InvalidInput(subject, fmt::format("field 'rope_parameters.{}' must be a list of {} numbers "
                                                         "(rotary dimensions / 2)",
                                                         k, dim / 2));
      std::vector<double>& out = std::string(k) == "long_factor" ? s.long_factor_ : s.short_factor_;
      for (const Json& v : p[k]) {
        if (!v.is_number() || !(v.get<double>() > 0))
          return Status::InvalidInput(subject, fmt::format("field 'rope_parameters.{}' holds a non-positive value", k));
        out.push_back(v.get<double>());
      }
    }
    LMKIT_ASSIGN_OR_RETURN(double factor, num("factor", false, 0));
    if (factor == 0) factor = static_cast<double>(max_positions) / s.original_max_;
    LMKIT_ASSIGN_OR_RETURN(double attn, num("attention_factor", false, 0));
    if (attn == 0)
      attn = factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(s.original_max_)));
    s.fixed_.attention_factor = attn;
    for (uint32_t i = 0; i < dim / 2; ++i) f[i] /= s.short_factor_[i];
  }
  return s;
}

RopeFreqs RopeSchedule::At(uint64_t seq_len) const {
  if (type_ == "dynamic" && seq_len > max_positions_) {
    RopeFreqs r = fixed_;
    const double base = theta_ * std::pow(factor_ * static_cast<double>(seq_len) / max_positions_ - (factor_ - 1),
                                          static_cast<double>(dim_) / (dim_ - 2));
    r.inv_freq = BaseInvFreq(base, dim_);
    return r;
  }
  if (type_ == "longrope" && seq_len > original_max_) {
    RopeFreqs r = fixed_;
    r.inv_freq = BaseInvFreq(theta_, dim_);
    for (uint32_t i = 0; i < dim_ / 2; ++i) r.inv_freq[i] /= long_factor_[i];
    return r;
  }
  return fixed_;
}

void ApplyRope(float* v, uint32_t rot_dim, const float* cos, const float* sin) {
  const uint32_t h = rot_dim / 2;
  for (uint32_t i = 0; i < h; ++i) {
    const float x0 = v[i], x1 = v[i + h];
    v[i] = x0 * cos[i] - x1 * sin[i];
    v[i + h] = x1 * cos[i] + x0 * sin[i];
  }
}

void ApplyRopeInterleaved(float* v, uint32_t rot_dim, const float* cos, const float* sin) {
  for (uint32_t i = 0; i < rot_dim / 2; ++i) {
    const float x0 = v[2 * i], x1 = v[2 * i + 1];
    v[2 * i] = x0 * cos[i] - x1 * sin[i];
    v[2 * i + 1] = x1 * cos[i] + x0 * sin[i];
  }
}

}  // namespace lmkit::model
