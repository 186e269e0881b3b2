// The compact wire forms that ranks exchange: LEB128 varints (7 bits a byte, low bits first).
//
// Contract: PutVarint appends v in 1-10 bytes. GetVarint reads one from [*p, end), advances *p past it and returns
// false (leaving *p) when the bytes end first or run past 10 bytes. Pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace lmkit::dist {

void PutVarint(std::string* out, uint64_t v);
bool GetVarint(const char** p, const char* end, uint64_t* v);

}  // namespace lmkit::dist
