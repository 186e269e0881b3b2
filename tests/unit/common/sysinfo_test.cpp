// Facts about this process and machine: checked against what Linux says directly, or by their properties.
#include "lmkit/common/sysinfo.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

TEST_CASE("sysinfo: machine facts agree with /proc", "[common][sysinfo]") {
  // MemTotal in kB, read here by line rather than by token.
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  uint64_t kb = 0;
  while (std::getline(meminfo, line))
    if (line.rfind("MemTotal:", 0) == 0) kb = std::stoull(line.substr(9));
  REQUIRE(kb > 0);
  CHECK(lmkit::TotalMemoryBytes() == kb * 1024);

  const std::string cpu = lmkit::CpuModelName();
  CHECK((cpu.empty() || (cpu.front() != ' ' && cpu.find('\n') == std::string::npos)));
}

TEST_CASE("sysinfo: the executable's directory holds this test binary", "[common][sysinfo]") {
  const std::string dir = lmkit::ExecutableDir();
  REQUIRE_FALSE(dir.empty());
  CHECK(dir.back() != '/');
  CHECK(std::filesystem::equivalent(dir + "/" + std::filesystem::read_symlink("/proc/self/exe").filename().string(),
                                    "/proc/self/exe"));
}

TEST_CASE("sysinfo: clocks never run backwards", "[common][sysinfo]") {
  const double t0 = lmkit::MonotonicSeconds(), c0 = lmkit::ProcessCpuSeconds();
  volatile uint64_t sink = 0;
  for (uint64_t i = 0; i < 2000000; ++i) sink = sink + i;
  CHECK(lmkit::MonotonicSeconds() >= t0);
  CHECK(lmkit::ProcessCpuSeconds() >= c0);
  CHECK(c0 >= 0);
}
