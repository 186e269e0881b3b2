// Pre-token counts files: the output of `lmkit bpe count --shard K/N` and the input of `lmkit bpe train --counts`
// (docs/distributed.md documents the byte layout).
//
// Contract: SerializeCounts writes a self-describing, versioned, checksummed byte string with the header (shard K/N,
// corpus size, byte range, pre-tokenizer pattern, special tokens) and every entry of a PretokenTable, sorted by bytes,
// so the same counts give the same bytes for any thread count. ParseCounts validates everything before it trusts
// anything (magic, version, length, CRC-32, bounds of every field, strictly increasing non-empty keys, non-zero
// counts, entry and total counts) and adds the entries to `table` when it is not null. Errors are kInvalidInput with
// `subject` (the path) and one line saying what is wrong ("truncated: ...", "checksum mismatch ..."), never a crash
// on any input (fuzzed by tests/fuzz/fuzz_counts.cpp). CheckCountsSet checks that parsed headers belong together
// (same pattern and specials, one complete split of one corpus). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::bpe {

class PretokenTable;

inline constexpr uint32_t kCountsVersion = 1;

struct CountsHeader {
  uint64_t shard_k = 0;
  uint64_t shard_n = 1;
  uint64_t corpus_bytes = 0;  // all inputs together
  uint64_t range_begin = 0;   // the counted bytes [range_begin, range_end)
  uint64_t range_end = 0;
  uint64_t entries = 0;  // unique pre-tokens
  uint64_t total = 0;    // sum of counts
  std::string pattern = "gpt2";
  std::vector<std::string> specials;
};

// `header.entries` and `header.total` are filled in from the table.
std::string SerializeCounts(const CountsHeader& header, const PretokenTable& table);

// Writes SerializeCounts' bytes through AtomicFile.
Status WriteCountsFile(const std::string& path, const CountsHeader& header, const PretokenTable& table);

Result<CountsHeader> ParseCounts(std::string_view bytes, const std::string& subject, PretokenTable* table);

// Maps and parses a file (subject = path).
Result<CountsHeader> ReadCountsFile(const std::string& path, PretokenTable* table);

// headers[i] came from paths[i]. kInvalidInput naming the first file that does not fit.
Status CheckCountsSet(const std::vector<CountsHeader>& headers, const std::vector<std::string>& paths);

// CRC-32 (IEEE 802.3, as zlib's crc32) of `bytes`, continuing from `crc` (0 to start).
uint32_t Crc32(std::string_view bytes, uint32_t crc = 0);

}  // namespace lmkit::bpe
