// Facts about this process and machine, for reports (`lmkit env`, --json summaries).
// All functions are cheap, thread-safe and never fail: unknown values come back as 0 or "".
#pragma once

#include <cstdint>
#include <string>

namespace lmkit {

uint64_t PeakRssBytes();      // high-water resident set size of this process (VmHWM, else getrusage)
uint64_t CurrentRssBytes();   // from /proc/self/statm
std::string CpuModelName();   // /proc/cpuinfo "model name"
uint64_t TotalMemoryBytes();  // /proc/meminfo MemTotal
double MonotonicSeconds();    // steady clock, for timing phases
double ProcessCpuSeconds();   // CPU time of all threads of this process so far (CLOCK_PROCESS_CPUTIME_ID)
std::string ExecutableDir();  // the directory of this program (/proc/self/exe), "" when unknown

}  // namespace lmkit
