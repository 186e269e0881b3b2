// The token files a dataload run reads: where each one's tokens start, how wide they are and how many there are.
//
// Contract: OpenTokenShards describes every path without reading the token data (only .npy headers are read, through
// lmkit/io). A `.npy` file gives its dtype in the header (uint16 or uint32, 1-D, little-endian); any other file is a
// flat array whose dtype is `dtype` — kAuto means uint16 (nanoGPT's convention) unless `vocab_size` > 65,536, which
// needs uint32. All shards must share one dtype. Errors name the file: kNotFound, kIo, kInvalidInput (size not a
// multiple of the dtype, an .npy dtype other than uint16/uint32, a `dtype` that contradicts the .npy header),
// kInvalidArgument (vocab_size > 65,536 with uint16 tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/io/token_dtype.h"

namespace lmkit::dataload {

struct TokenShard {
  std::string path;
  unsigned token_bytes = 2;  // 2 (uint16) or 4 (uint32)
  uint64_t data_offset = 0;  // byte offset of token 0 (0 for .bin; after the header for .npy)
  uint64_t tokens = 0;
  uint64_t file_bytes = 0;
  bool npy = false;
};

Result<std::vector<TokenShard>> OpenTokenShards(const std::vector<std::string>& paths, io::TokenDtype dtype,
                                                uint64_t vocab_size);

}  // namespace lmkit::dataload
