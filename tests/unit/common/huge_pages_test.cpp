#include "lmkit/common/huge_pages.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

using lmkit::HugeAllocate;
using lmkit::HugeBuffer;
using lmkit::HugeFree;
using lmkit::HugeVector;
using lmkit::kHugeMinBytes;

namespace {

// The VmFlags line of the mapping that holds `p` in /proc/self/smaps ("" when there is none, e.g. not Linux).
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

}  // namespace

TEST_CASE("huge pages: large blocks start on a 2 MiB boundary, are advised huge and hold their bytes", "[common]") {
  const size_t bytes = kHugeMinBytes + 12345;  // not a multiple of a page
  auto* p = static_cast<unsigned char*>(HugeAllocate(bytes));
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p) % (size_t{2} << 20) == 0);
  for (size_t i = 0; i < bytes; i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
  p[bytes - 1] = 0xAB;
  bool intact = p[bytes - 1] == 0xAB;
  for (size_t i = 0; i < bytes; i += 4096) intact = intact && p[i] == static_cast<unsigned char>(i >> 12);
  CHECK(intact);
  const std::string flags = VmFlagsOf(p);
  if (!flags.empty()) CHECK(flags.find(" hg") != std::string::npos);  // MADV_HUGEPAGE recorded by the kernel
  HugeFree(p, bytes);
  if (!flags.empty()) CHECK(VmFlagsOf(p).find(" hg") == std::string::npos);  // unmapped
}

TEST_CASE("huge pages: small blocks come from operator new and work", "[common]") {
  auto* p = static_cast<char*>(HugeAllocate(100));
  std::memset(p, 'x', 100);
  CHECK(p[99] == 'x');
  HugeFree(p, 100);
  HugeFree(nullptr, kHugeMinBytes);  // no-op
}

TEST_CASE("huge pages: a HugeVector keeps its contents while it grows past the threshold", "[common]") {
  HugeVector<uint64_t> v;
  const size_t n = 2 * kHugeMinBytes / sizeof(uint64_t) + 7;
  for (size_t i = 0; i < n; ++i) v.push_back(i * 3);
  uint64_t sum = 0;
  for (uint64_t x : v) sum += x;
  CHECK(sum == 3 * (n * (n - 1) / 2));
  CHECK(reinterpret_cast<uintptr_t>(v.data()) % (size_t{2} << 20) == 0);
  HugeVector<uint64_t> w = v;  // copies allocate their own block
  CHECK(w == v);
  CHECK(w.data() != v.data());
}

TEST_CASE("huge pages: a HugeBuffer moves its block and frees it once", "[common]") {
  HugeBuffer a(kHugeMinBytes);
  REQUIRE(a);
  CHECK(a.size() == kHugeMinBytes);
  a.get()[kHugeMinBytes - 1] = 'z';
  char* const p = a.get();
  HugeBuffer b(std::move(a));
  CHECK_FALSE(a);
  CHECK(a.size() == 0);
  CHECK(b.get() == p);
  CHECK(b.get()[kHugeMinBytes - 1] == 'z');
  HugeBuffer c;
  CHECK_FALSE(c);
  c = std::move(b);
  CHECK(c.get() == p);
  CHECK_FALSE(b);
}
