// The generator of the Unicode class table (unicode_classes_table.cpp), kept in the library so that a unit test can
// prove the committed table equal to PCRE2's Unicode database, and so that regenerating it needs no extra tool.
//
// Contract: GenerateCharClasses() asks PCRE2 (UTF + UCP) for the class of every code point 0..0x10FFFF (surrogates are
// kClassOther) and returns 0x110000 CharClass values; errors only if PCRE2 cannot compile the probe pattern.
// RenderCharClassTableSource() turns them into the C++ source of the two-stage table. Thread-safe; slow (~0.5 s).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/bpe/unicode_classes.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

Result<std::vector<uint8_t>> GenerateCharClasses();
std::string RenderCharClassTableSource(const std::vector<uint8_t>& classes);

}  // namespace lmkit::bpe
