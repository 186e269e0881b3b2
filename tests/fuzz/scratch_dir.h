// What the fuzz targets share: a scratch directory for readers that take a path, made once per process under /tmp
// (mkdtemp), reused for every input, never cleaned (libFuzzer ends with _exit); writing an input there; and the check
// every rejection must pass (a one-line message).
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "lmkit/common/status.h"

inline const std::string& FuzzScratchDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/lmkit-fuzz.XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    return std::string(d);
  }();
  return dir;
}

// Replaces `path` with the bytes [data, data + size).
inline void WriteScratchFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// A rejection must say what is wrong, on one line (the CLI prints Status::ToString(), which keeps an error on one line
// even when a message quotes a value holding a newline).
inline void CheckError(const lmkit::Status& st) {
  if (st.ok() || st.message().empty() || st.ToString().find('\n') != std::string::npos) std::abort();
}
