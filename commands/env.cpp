// `lmkit env`: what this machine offers lmkit (CPU, memory, CUDA devices).
#include "lmkit/present/env.h"

#include <fmt/format.h>

#include "command.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/common/units.h"
#include "lmkit/cuda/device.h"
#include "lmkit/version.h"

namespace lmkit::cli {

RunFn SetupEnv(CLI::App& /*sub: no options*/, const GlobalOptions& g) {
  return [&g] {
    cuda::DeviceList devs = cuda::ListCudaDevices();
    if (g.json) {
      present::EnvResult env;
      env.lmkit_version = LMKIT_VERSION;
      env.cpu_model = CpuModelName();
      env.cores = DefaultThreadCount();
      env.memory_bytes = TotalMemoryBytes();
      env.built_with_cuda = cuda::CudaBuildEnabled();
      env.cuda = std::move(devs);
      PrintJson(present::EnvJson(env));
      return static_cast<int>(kExitOk);
    }
    std::string out;
    out += fmt::format("lmkit    {}\n", LMKIT_VERSION);
    out += fmt::format("cpu      {} ({} cores usable)\n", CpuModelName(), DefaultThreadCount());
    out += fmt::format("memory   {}\n", FormatBytes(static_cast<double>(TotalMemoryBytes())));
    out += fmt::format("cuda     {}\n", cuda::CudaBuildEnabled() ? "built in" : "not built in");
    if (devs.devices.empty()) {
      out += fmt::format("devices  {}\n", devs.why_none);
    } else {
      out += fmt::format("driver   {}.{}\n", devs.driver_version / 1000, devs.driver_version % 1000 / 10);
      for (const auto& d : devs.devices)
        out += fmt::format("device {} {}  {}  sm_{}{}  {} SMs\n", d.index, d.name,
                           FormatBytes(static_cast<double>(d.total_memory_bytes)), d.cc_major, d.cc_minor,
                           d.multiprocessors);
    }
    PrintText(out);
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
