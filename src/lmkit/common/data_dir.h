// Where lmkit finds the files it ships (data/: tokenizers, presets, tables) at run time.
//
// Contract: the data directory is the first of these that exists as a directory:
//   1. $LMKIT_DATA_DIR (when set and non-empty; if it is set but missing, the search fails: an explicit setting that
//      points nowhere is a mistake to report, not to paper over),
//   1b. the host's data directory (SetHostDataDir: a front end that embeds the core, e.g. the Python package),
//   2. <exe dir>/../share/lmkit   (installed: `cmake --install` copies data/ there),
//   3. <exe dir>/../data          (a build directory next to data/),
//   4. <exe dir>/../../data       (build/<config>/lmkit),
//   5. LMKIT_SOURCE_DATA_DIR      (the source tree this binary was built from, a compile-time constant).
// FindDataFile(rel) returns the first candidate directory that holds `rel` (so a partial LMKIT_DATA_DIR does not hide
// the shipped files, except under rule 1's "set but missing"). Errors: kNotFound naming `rel` and listing where it
// looked. Thread-safe; no caching (a lookup is a few stat calls).
#pragma once

#include <string>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit {

// Names the data directory of the program embedding the core (the Python package's copy of data/). Call once, before
// any lookup; not thread-safe against concurrent lookups.
void SetHostDataDir(std::string dir);

// The candidate data directories in search order (existing or not), after applying the environment.
std::vector<std::string> DataDirCandidates();

// The path of `relative` (e.g. "tokenizers/gpt2.tiktoken") inside the first data directory that holds it.
Result<std::string> FindDataFile(const std::string& relative);

}  // namespace lmkit
