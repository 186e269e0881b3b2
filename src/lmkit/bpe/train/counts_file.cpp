// Counts files (see counts_file.h; layout in docs/distributed.md).
#include "lmkit/bpe/train/counts_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/common/mapped_file.h"

namespace lmkit::bpe {

namespace {

constexpr char kMagic[8] = {'L', 'M', 'K', 'I', 'T', 'C', 'N', 'T'};
constexpr char kEndMagic[4] = {'L', 'K', 'C', 'E'};
constexpr size_t kPrefixBytes = 16;   // magic, version, header length
constexpr size_t kTrailerBytes = 16;  // file length, CRC-32, end magic
constexpr size_t kFixedHeaderBytes = 7 * 8;

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutString(std::string* out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

uint64_t GetLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// A bounds-checked reader over [pos, end) of the file.
class Cursor {
 public:
  Cursor(std::string_view b, size_t pos, size_t end) : b_(b), pos_(pos), end_(end) {}
  bool U32(uint32_t* v) {
    if (end_ - pos_ < 4) return false;
    *v = static_cast<uint32_t>(GetLE(b_.data() + pos_, 4));
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (end_ - pos_ < 8) return false;
    *v = GetLE(b_.data() + pos_, 8);
    pos_ += 8;
    return true;
  }
  bool Bytes(size_t n, std::string_view* s) {
    if (end_ - pos_ < n) return false;
    *s = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool String(std::string* s) {
    uint32_t n;
    std::string_view v;
    if (!U32(&n) || !Bytes(n, &v)) return false;
    s->assign(v);
    return true;
  }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end_) return false;
      const auto c = static_cast<unsigned char>(b_[pos_++]);
      if (shift == 63 && c > 1) return false;  // more than 64 bits
      *v |= uint64_t{c & 0x7Fu} << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  }
  size_t pos() const { return pos_; }
  bool done() const { return pos_ == end_; }

 private:
  std::string_view b_;
  size_t pos_, end_;
};

Status Bad(const std::string& subject, std::string msg) { return Status::InvalidInput(subject, std::move(msg)); }

}  // namespace

uint32_t Crc32(std::string_view bytes, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  crc = ~crc;
  for (unsigned char c : bytes) crc = table[(crc ^ c) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string SerializeCounts(const CountsHeader& header, const PretokenTable& table) {
  // Entries sorted by bytes: the table's own order depends on which thread counted what.
  struct Entry {
    uint64_t off;
    uint32_t len;
    uint64_t count;
  };
  std::string arena;
  std::vector<Entry> entries;
  entries.reserve(table.size());
  uint64_t total = 0;
  table.ForEach([&](std::string_view key, uint64_t count) {
    entries.push_back({arena.size(), static_cast<uint32_t>(key.size()), count});
    arena.append(key);
    total += count;
  });
  auto key = [&](const Entry& e) { return std::string_view(arena).substr(e.off, e.len); };
  std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) { return key(a) < key(b); });

  std::string head;
  PutU64(&head, header.shard_k);
  PutU64(&head, header.shard_n);
  PutU64(&head, header.corpus_bytes);
  PutU64(&head, header.range_begin);
  PutU64(&head, header.range_end);
  PutU64(&head, entries.size());
  PutU64(&head, total);
  PutString(&head, header.pattern);
  PutU32(&head, static_cast<uint32_t>(header.specials.size()));
  for (const auto& s : header.specials) PutString(&head, s);

  std::string out(kMagic, sizeof(kMagic));
  PutU32(&out, kCountsVersion);
  PutU32(&out, static_cast<uint32_t>(head.size()));
  out += head;
  out.reserve(out.size() + arena.size() + entries.size() * 3 + kTrailerBytes);
  for (const auto& e : entries) {
    PutVarint(&out, e.len);
    out.append(key(e));
    PutVarint(&out, e.count);
  }
  PutU64(&out, out.size() + kTrailerBytes);
  PutU32(&out, Crc32(out));
  out.append(kEndMagic, sizeof(kEndMagic));
  return out;
}

Status WriteCountsFile(const std::string& path, const CountsHeader& header, const PretokenTable& table) {
  const std::string bytes = SerializeCounts(header, table);
  LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path));
  LMKIT_RETURN_IF_ERROR(f.Write(bytes));
  return f.Commit();
}

Result<CountsHeader> ParseCounts(std::string_view b, const std::string& subject, PretokenTable* table) {
  const size_t n = b.size();
  if (n < sizeof(kMagic) || std::memcmp(b.data(), kMagic, sizeof(kMagic)) != 0)
    return Bad(subject, "not an lmkit counts file (it does not start with LMKITCNT)");
  if (n < kPrefixBytes + kTrailerBytes)
    return Bad(subject, fmt::format("truncated: {} bytes, shorter than the smallest counts file", n));
  const auto version = static_cast<uint32_t>(GetLE(b.data() + 8, 4));
  if (version != kCountsVersion)
    return Bad(subject, fmt::format("counts file version {}; this lmkit reads version {}", version, kCountsVersion));
  const uint64_t stated = GetLE(b.data() + n - kTrailerBytes, 8);
  if (std::memcmp(b.data() + n - 4, kEndMagic, 4) != 0 || stated != n) {
    if (stated > n || std::memcmp(b.data() + n - 4, kEndMagic, 4) != 0)
      return Bad(subject, fmt::format("truncated: no end marker after {} bytes (an interrupted copy or write?)", n));
    return Bad(subject, fmt::format("damaged: the end marker says {} bytes, the file has {}", stated, n));
  }
  const auto stored_crc = static_cast<uint32_t>(GetLE(b.data() + n - 8, 4));
  const uint32_t crc = Crc32(b.substr(0, n - 8));
  if (crc != stored_crc)
    return Bad(subject,
               fmt::format("checksum mismatch (stored {:08x}, computed {:08x}): the file is damaged", stored_crc, crc));
  const uint64_t head_len = GetLE(b.data() + 12, 4);
  const size_t body_end = n - kTrailerBytes;
  if (head_len > body_end - kPrefixBytes) return Bad(subject, "damaged: the header is longer than the file");
  CountsHeader h;
  Cursor head(b, kPrefixBytes, kPrefixBytes + head_len);
  uint32_t nspecials = 0;
  if (!head.U64(&h.shard_k) || !head.U64(&h.shard_n) || !head.U64(&h.corpus_bytes) || !head.U64(&h.range_begin) ||
      !head.U64(&h.range_end) || !head.U64(&h.entries) || !head.U64(&h.total) || !head.String(&h.pattern) ||
      !head.U32(&nspecials))
    return Bad(subject, "damaged: the header is cut short");
  for (uint32_t i = 0; i < nspecials; ++i) {
    std::string s;
    if (!head.String(&s)) return Bad(subject, "damaged: the header's special tokens are cut short");
    h.specials.push_back(std::move(s));
  }
  if (!head.done()) return Bad(subject, "damaged: unexpected bytes at the end of the header");
  if (h.shard_n == 0 || h.shard_k >= h.shard_n)
    return Bad(subject, fmt::format("damaged: shard {}/{} is not a valid shard", h.shard_k, h.shard_n));
  if (h.range_begin > h.range_end || h.range_end > h.corpus_bytes)
    return Bad(subject, fmt::format("damaged: byte range [{}, {}) does not fit a corpus of {} bytes", h.range_begin,
                                    h.range_end, h.corpus_bytes));
  Cursor body(b, kPrefixBytes + head_len, body_end);
  uint64_t count_entries = 0, sum = 0;
  std::string_view prev;
  while (!body.done()) {
    uint64_t len = 0, count = 0;
    std::string_view key;
    if (!body.Varint(&len) || !body.Bytes(static_cast<size_t>(std::min<uint64_t>(len, SIZE_MAX)), &key) ||
        !body.Varint(&count))
      return Bad(subject, fmt::format("damaged: entry {} is cut short", count_entries));
    if (len == 0 || len > UINT32_MAX)
      return Bad(subject, fmt::format("damaged: entry {} has length {}", count_entries, len));
    if (count == 0) return Bad(subject, fmt::format("damaged: entry {} has count 0", count_entries));
    if (count_entries > 0 && !(prev < key))
      return Bad(subject, fmt::format("damaged: entry {} is out of order or repeated", count_entries));
    if (sum + count < sum) return Bad(subject, "damaged: counts overflow 64 bits");
    sum += count;
    prev = key;
    ++count_entries;
    if (table != nullptr) table->Add(key, count);
  }
  if (count_entries != h.entries || sum != h.total)
    return Bad(subject, fmt::format("damaged: the header announces {} entries totalling {}, the file holds {} "
                                    "totalling {}",
                                    h.entries, h.total, count_entries, sum));
  return h;
}

Result<CountsHeader> ReadCountsFile(const std::string& path, PretokenTable* table) {
  LMKIT_ASSIGN_OR_RETURN(MappedFile f, MappedFile::Open(path));
  f.Advise(MappedFile::Advice::kSequential);
  return ParseCounts(f.view(), path, table);
}

Status CheckCountsSet(const std::vector<CountsHeader>& headers, const std::vector<std::string>& paths) {
  if (headers.empty()) return Status::InvalidArgument("no counts files");
  const CountsHeader& first = headers[0];
  std::map<uint64_t, size_t> by_k;
  for (size_t i = 0; i < headers.size(); ++i) {
    const CountsHeader& h = headers[i];
    if (h.pattern != first.pattern)
      return Bad(paths[i],
                 fmt::format("counted with pattern '{}', but {} with '{}'", h.pattern, paths[0], first.pattern));
    if (h.specials != first.specials)
      return Bad(paths[i], fmt::format("counted with special tokens [{}], but {} with [{}]",
                                       fmt::join(h.specials, ", "), paths[0], fmt::join(first.specials, ", ")));
    if (h.shard_n != first.shard_n || h.corpus_bytes != first.corpus_bytes)
      return Bad(paths[i],
                 fmt::format("is shard {}/{} of a {}-byte corpus, but {} is shard {}/{} of a {}-byte corpus", h.shard_k,
                             h.shard_n, h.corpus_bytes, paths[0], first.shard_k, first.shard_n, first.corpus_bytes));
    auto [it, inserted] = by_k.emplace(h.shard_k, i);
    if (!inserted)
      return Bad(paths[i], fmt::format("shard {}/{} is also in {}", h.shard_k, h.shard_n, paths[it->second]));
  }
  uint64_t expect = 0;
  for (uint64_t k = 0; k < first.shard_n; ++k) {
    auto it = by_k.find(k);
    if (it == by_k.end())
      return Status::InvalidArgument(
          fmt::format("shard {}/{} is missing: give the counts of all {} shards", k, first.shard_n, first.shard_n));
    const CountsHeader& h = headers[it->second];
    if (h.range_begin != expect)
      return Bad(paths[it->second], fmt::format("covers bytes [{}, {}), but the previous shard ends at {}: the "
                                                "shards were cut differently (different inputs or lmkit versions?)",
                                                h.range_begin, h.range_end, expect));
    expect = h.range_end;
  }
  if (expect != first.corpus_bytes)
    return Bad(paths[0], fmt::format("the shards end at byte {} of {}", expect, first.corpus_bytes));
  return Status::Ok();
}

}  // namespace lmkit::bpe
