// libFuzzer target: the counts-file parser (ParseCounts) on arbitrary bytes must never crash, read out of bounds or
// hang, and must explain every rejection in one line. Random bytes rarely pass the CRC, so each input is tried twice:
// as is, and with a valid trailer (length, CRC-32, end marker) appended, which sends it on to the header and entry
// parsers. An accepted file re-serializes to one that parses back to the same header and counts.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "lmkit/bpe/train/counts_file.h"
#include "lmkit/bpe/train/pretoken_table.h"

using namespace lmkit::bpe;

namespace {

std::map<std::string, uint64_t> Contents(const PretokenTable& t) {
  std::map<std::string, uint64_t> m;
  t.ForEach([&](std::string_view k, uint64_t c) { m[std::string(k)] += c; });
  return m;
}

void Check(const std::string& bytes) {
  PretokenTable table;
  auto h = ParseCounts(bytes, "fuzz", &table);
  if (!h.ok()) {
    if (h.status().message().empty() || h.status().message().find('\n') != std::string::npos) std::abort();
    return;
  }
  if (table.size() != h->entries) std::abort();
  const std::string again = SerializeCounts(*h, table);
  PretokenTable table2;
  auto h2 = ParseCounts(again, "again", &table2);
  if (!h2.ok() || h2->entries != h->entries || h2->total != h->total || h2->specials != h->specials ||
      h2->pattern != h->pattern || h2->range_begin != h->range_begin || h2->range_end != h->range_end)
    std::abort();
  if (Contents(table) != Contents(table2)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  // With a valid trailer: file length (8), CRC-32 of everything before it (4), "LKCE".
  const uint64_t total = bytes.size() + 16;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((total >> (8 * i)) & 0xFF));
  const uint32_t crc = Crc32(bytes);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  bytes += "LKCE";
  Check(bytes);
  return 0;
}
