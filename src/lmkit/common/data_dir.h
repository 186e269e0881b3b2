// Where lmkit's shipped data (data/: model presets, GPU table, tokenizer files) lives at run time.
//
// Contract: FindDataDir() tries, in order, $LMKIT_DATA_DIR, <exe dir>/../share/lmkit, <exe dir>/../data,
// <exe dir>/../../data and the source tree's data/ (compile-time LMKIT_SOURCE_DATA_DIR); it returns the first that is an
// existing directory, or "" when none is. DataPath(relative) joins it with `relative` and checks the file exists
// (kNotFound naming the relative path and the directories tried otherwise). Thread-safe; no caching.
#pragma once

#include <string>

#include "lmkit/common/status.h"

namespace lmkit {

std::string FindDataDir();
Result<std::string> DataPath(const std::string& relative);

}  // namespace lmkit
