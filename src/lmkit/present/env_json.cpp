// Field lists of `lmkit env` (json_fields.h).
#include <fmt/format.h>

#include "lmkit/present/env.h"
#include "lmkit/present/json_fields.h"

namespace lmkit::present {

LMKIT_JSON_FIELDS(cuda::DeviceInfo,  //
                  Field("index", &T::index), Field("name", &T::name), Field("memory_bytes", &T::total_memory_bytes),
                  Computed("compute_capability",
                           [](const T& d) { return fmt::format("{}.{}", d.cc_major, d.cc_minor); }),
                  Field("multiprocessors", &T::multiprocessors),
                  Field("memory_bandwidth_gbs", &T::memory_bandwidth_gbs));

LMKIT_JSON_FIELDS(EnvResult,  //
                  Field("lmkit_version", &T::lmkit_version),
                  Object("cpu", Field("model", &T::cpu_model), Field("cores", &T::cores)),
                  Field("memory_bytes", &T::memory_bytes),
                  Object("cuda",  //
                         Field("built_with_cuda", &T::built_with_cuda),
                         Computed("driver_version", [](const T& e) { return e.cuda.driver_version; }),
                         Computed("runtime_version", [](const T& e) { return e.cuda.runtime_version; }),
                         Computed("devices", [](const T& e) { return ToJsonValue(e.cuda.devices); }),
                         ComputedIf("why_none", [](const T& e) -> std::optional<std::string> {
                           if (!e.cuda.devices.empty()) return std::nullopt;
                           return e.cuda.why_none;
                         })));

Json EnvJson(const EnvResult& env) { return ToJson(env); }

}  // namespace lmkit::present
