// A scratch directory for fuzz targets whose readers take a path: made once per process under /tmp (mkdtemp), reused
// for every input, never cleaned (libFuzzer ends with _exit).
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <string>

inline const std::string& FuzzScratchDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/lmkit-fuzz.XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    return std::string(d);
  }();
  return dir;
}
