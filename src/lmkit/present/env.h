// `lmkit env`'s result (what this machine offers lmkit) and its JSON document; the command gathers it, the text
// stays with the command.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/json.h"
#include "lmkit/cuda/device.h"

namespace lmkit::present {

struct EnvResult {
  std::string lmkit_version;
  std::string cpu_model;
  unsigned cores = 0;  // usable by this process
  uint64_t memory_bytes = 0;
  bool built_with_cuda = false;
  cuda::DeviceList cuda;
};

// lmkit_version, cpu {model, cores}, memory_bytes, cuda {built_with_cuda, versions, devices, why_none when none}.
Json EnvJson(const EnvResult& env);

}  // namespace lmkit::present
