// Decoding token ids back into the exact bytes they stand for, and the `lmkit bpe decode` entry point.
//
// Contract:
// - DecodeIds appends the bytes of each id (ordinary or special token) to *out. Errors: kInvalidInput
//   "token id N at index I is not in the tokenizer (...)" with an empty subject (callers add the file); `first_index`
//   numbers the first id so messages point into a whole file. Thread-safe (reads the immutable Tokenizer).
// - DecodeFile reads ids from `input` ("-" = stdin) as a flat little-endian .bin (dtype given, or auto: uint16 when the
//   tokenizer's ids fit, else uint32), a .npy (dtype from its header) or a JSON array of integers, and writes the
//   bytes to `output` through AtomicFile (nothing is written on error), or to `stdout_fd` when output is empty.
//   Streams: memory does not grow with the file. Errors name the input file: unknown ids, values that are not
//   token ids (negative, fractional, too large), a .bin whose size is not a multiple of the id size.
//   A rank file that needs a pattern only for encoding loads with any when tokenizer_options has none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lmkit/bpe/files/id_format.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

// What decoding one block of a longer sequence needs from the blocks before it.
struct DecodeState {
  bool sp_at_start = true;  // SentencePiece: the next piece may lose its leading metaspace (DecodeRules)
};
// state: carried from block to block; null means a fresh one when first_index is 0 (else one past the start).
Status DecodeIds(const Tokenizer& tokenizer, const uint32_t* ids, size_t count, uint64_t first_index, std::string* out,
                 DecodeState* state = nullptr);

struct DecodeRequest {
  std::string tokenizer;
  TokenizerOptions tokenizer_options;
  std::string input = "-";
  std::string output;  // empty: write to stdout_fd
  int stdout_fd = 1;
  std::optional<IdFormat> format;  // default: from the input's extension (.npy, .json), else bin
  io::TokenDtype dtype = io::TokenDtype::kAuto;
};

struct DecodeResult {
  std::string tokenizer;
  std::string input;
  std::string output;
  IdFormat format = IdFormat::kBin;
  uint64_t tokens = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  uint64_t peak_rss_bytes = 0;
};

Result<DecodeResult> DecodeFile(const DecodeRequest& request);

}  // namespace lmkit::bpe
