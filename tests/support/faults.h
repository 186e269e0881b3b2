// Fault injection for tests: run code in a forked child under resource limits, and know when a limit cannot work.
#pragma once

#include <cstdint>
#include <functional>

#include "support/run_lmkit.h"

namespace lmkit::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif
#else
constexpr bool kSanitizerBuild = false;
#endif

// Runs `body` in a forked child with `limits` set first; returns the child's exit status (body's return value,
// 128+signal when killed, 125 when a limit could not be set).
int RunForked(const std::function<int()>& body, const ChildLimits& limits = {});

// Bytes of address space this process has mapped now (VmSize in /proc/self/status), 0 when unknown.
uint64_t MappedBytes();

}  // namespace lmkit::test
