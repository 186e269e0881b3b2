// Performance notes (measured on debmix.txt, 130 MB, GPT-2, one thread; see docs/benchmarks/bpe-encode.md):
// - Most pre-tokens of English text are whole tokens: one hash lookup (BytesIdMap, a short-string hash and one
//   memcmp) settles them, as in tiktoken.
// - The rest merge over two small flat arrays (ids, packed rank|result per adjacent pair); a linear min-scan beats a
//   heap for the short pieces that reach it. Pieces over kFlatMaxBytes (long runs of spaces or symbols) switch to a
//   heap so that a pathological input stays O(n log n).
// - Merge rules are looked up by id pair in an open-addressing table with a multiplicative hash (no byte hashing in
//   the inner loop).
// - A small direct-mapped cache per thread remembers recent pieces that needed merging.
#include "lmkit/bpe/encoder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <functional>

#include "lmkit/common/ordered_pipeline.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_start.h"
#include "lmkit/io/token_file.h"

namespace lmkit::bpe {

Encoder::Encoder(const Tokenizer& tokenizer, size_t cache_slots)
    : tok_(tokenizer), pattern_(tokenizer.pattern()), shortcut_(tokenizer.whole_piece_shortcut()) {
  size_t slots = 1;
  while (slots < cache_slots) slots *= 2;
  cache_mask_ = slots - 1;
  cache_.resize(slots);
  hot_.resize(kHotSlots);
}

void Encoder::Encode(std::string_view text, std::vector<uint32_t>* out) {
  const SpecialTokenSplitter& splitter = tok_.splitter();
  if (splitter.empty()) {
    EncodeOrdinary(text, out);
    return;
  }
  size_t pos = 0;
  SpecialTokenSplitter::Match m;
  while (pos < text.size() && splitter.FindNext(text, pos, &m)) {
    if (m.begin > pos) EncodeOrdinary(text.substr(pos, m.begin - pos), out);
    out->push_back(tok_.enabled_specials()[static_cast<size_t>(m.index)].id);
    pos = m.begin + m.length;
  }
  if (pos < text.size()) EncodeOrdinary(text.substr(pos), out);
}

void Encoder::EncodeOrdinary(std::string_view text, std::vector<uint32_t>* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = NextPretokenEnd(pattern_, text, pos);
    EncodePiece(text.substr(pos, end - pos), out);
    pos = end;
  }
}

void Encoder::EncodePiece(std::string_view piece, std::vector<uint32_t>* out) {
  if (piece.size() == 1) {
    out->push_back(tok_.ByteId(static_cast<uint8_t>(piece[0])));
    return;
  }
  if (shortcut_) {
    // Hot path: pieces of up to 8 bytes (most of them) are first looked up in a small per-thread table that stays
    // in L1/L2, keyed by their bytes packed in a word; the tokenizer's table (megabytes) is a cache miss away.
    if (piece.size() <= 8) {
      const uint64_t key = detail::LoadUpTo8(piece.data(), piece.size());
      HotEntry& e = hot_[(((key + piece.size()) * 0x9E3779B97F4A7C15ull) >> 40) & (kHotSlots - 1)];
      if (e.key == key && e.len == piece.size()) {
        out->push_back(e.id);
        return;
      }
      uint32_t id = tok_.TokenId(piece);
      if (id != kNoId) {
        e.key = key;
        e.len = static_cast<uint32_t>(piece.size());
        e.id = id;
        out->push_back(id);
        return;
      }
    } else {
      uint32_t id = tok_.TokenId(piece);
      if (id != kNoId) {
        out->push_back(id);
        return;
      }
    }
  }
  if (piece.size() > kFlatMaxBytes) {
    MergeHeap(piece, out);
    return;
  }
  const bool cacheable = piece.size() <= kCacheKeyBytes;
  uint64_t hash = 0;
  if (cacheable) {
    hash = detail::HashBytes(piece.data(), piece.size());
    if (CacheLookup(piece, hash, out)) return;
  }
  size_t before = out->size();
  MergeFlat(piece, out);
  if (cacheable) CacheStore(piece, hash, out->data() + before, out->size() - before);
}

bool Encoder::CacheLookup(std::string_view piece, uint64_t hash, std::vector<uint32_t>* out) const {
  const CacheEntry& e = cache_[hash & cache_mask_];
  if (e.len != piece.size() || e.hash != hash || std::memcmp(e.key, piece.data(), piece.size()) != 0) return false;
  out->insert(out->end(), e.ids, e.ids + e.nids);
  return true;
}

void Encoder::CacheStore(std::string_view piece, uint64_t hash, const uint32_t* ids, size_t n) {
  if (n > kCacheIds) return;
  CacheEntry& e = cache_[hash & cache_mask_];
  e.hash = hash;
  e.len = static_cast<uint8_t>(piece.size());
  e.nids = static_cast<uint8_t>(n);
  std::memcpy(e.key, piece.data(), piece.size());
  std::memcpy(e.ids, ids, n * sizeof(uint32_t));
}

void Encoder::MergeFlat(std::string_view piece, std::vector<uint32_t>* out) {
  size_t m = piece.size();
  ids_.resize(m);
  ranks_.resize(m);
  uint32_t* ids = ids_.data();
  uint64_t* ranks = ranks_.data();
  for (size_t i = 0; i < m; ++i) ids[i] = tok_.ByteId(static_cast<uint8_t>(piece[i]));
  for (size_t i = 0; i + 1 < m; ++i) ranks[i] = tok_.Merge(ids[i], ids[i + 1]);
  while (m > 1) {
    uint64_t best = kNoPair;
    size_t at = 0;
    for (size_t i = 0; i + 1 < m; ++i) {
      if (ranks[i] < best) {
        best = ranks[i];
        at = i;
      }
    }
    if (best == kNoPair) break;
    ids[at] = static_cast<uint32_t>(best);
    // Remove ids[at + 1] and the pair (at + 1, at + 2); the pairs touching `at` are recomputed.
    // Plain loops: the arrays are a few elements long and a libc call costs more than the copy.
    for (size_t i = at + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
    for (size_t i = at + 1; i + 2 < m; ++i) ranks[i] = ranks[i + 1];
    --m;
    if (at + 1 < m) ranks[at] = tok_.Merge(ids[at], ids[at + 1]);
    if (at > 0) ranks[at - 1] = tok_.Merge(ids[at - 1], ids[at]);
  }
  out->insert(out->end(), ids, ids + m);
}

void Encoder::MergeHeap(std::string_view piece, std::vector<uint32_t>* out) {
  const size_t n = piece.size();
  constexpr uint32_t kEnd = 0xFFFFFFFFu;
  ids_.resize(n);
  next_.resize(n);
  prev_.resize(n);
  heap_.clear();
  for (size_t i = 0; i < n; ++i) {
    ids_[i] = tok_.ByteId(static_cast<uint8_t>(piece[i]));
    next_[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kEnd;
    prev_[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kEnd;
  }
  // Min-heap on (packed rank|result, position): the lowest rank, leftmost first, exactly as the flat scan.
  auto greater = [](const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) { return a > b; };
  auto push = [&](uint32_t pos) {
    uint32_t nx = next_[pos];
    if (nx == kEnd) return;
    uint64_t r = tok_.Merge(ids_[pos], ids_[nx]);
    if (r == kNoPair) return;
    heap_.emplace_back(r, pos);
    std::push_heap(heap_.begin(), heap_.end(), greater);
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<uint32_t>(i));
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), greater);
    auto [r, pos] = heap_.back();
    heap_.pop_back();
    // Stale entries: the left part was absorbed, or the pair at pos changed since the push.
    if (ids_[pos] == kNoId) continue;
    uint32_t nx = next_[pos];
    if (nx == kEnd || tok_.Merge(ids_[pos], ids_[nx]) != r) continue;
    ids_[pos] = static_cast<uint32_t>(r);
    ids_[nx] = kNoId;
    next_[pos] = next_[nx];
    if (next_[nx] != kEnd) prev_[next_[nx]] = pos;
    push(pos);
    if (prev_[pos] != kEnd) push(prev_[pos]);
  }
  for (uint32_t i = 0; i != kEnd && n > 0; i = next_[i]) out->push_back(ids_[i]);
}

// ---- sources ----

Result<size_t> StringSource::Read(char* dst, size_t capacity) {
  size_t n = std::min({capacity, s_.size() - pos_, max_read_});
  std::memcpy(dst, s_.data() + pos_, n);
  pos_ += n;
  return n;
}

Result<size_t> FdSource::Read(char* dst, size_t capacity) {
  size_t got = 0;
  while (got < capacity) {
    ssize_t r = ::read(fd_, dst + got, capacity - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(subject_, "cannot read", errno);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

// ---- safe cuts ----

namespace {

inline bool AsciiLetter(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
inline bool AsciiAlnum(unsigned char c) { return AsciiLetter(c) || (c >= '0' && c <= '9'); }
inline bool AsciiGraph(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

}  // namespace

bool IsPatternSafeCut(std::string_view text, size_t c) {
  if (c < 2 || c + 1 >= text.size()) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char a = p[c - 1], b = p[c];
  return (a == '\n' && AsciiGraph(p[c - 2]) && AsciiAlnum(b)) || (b == ' ' && AsciiLetter(a) && AsciiLetter(p[c + 1]));
}

namespace {

// Requires 2 <= c and c + 1 < text.size().
bool IsSafeCut(std::string_view text, size_t c, const std::vector<SpecialToken>& specials) {
  const bool ok = IsPatternSafeCut(text, c);
  if (!ok) return false;
  for (const auto& s : specials) {
    const size_t len = s.text.size();
    if (len < 2) continue;
    for (size_t start = c >= len - 1 ? c - (len - 1) : 0; start < c; ++start) {
      if (start + len > text.size()) return false;  // cannot tell yet: not safe
      if (std::memcmp(text.data() + start, s.text.data(), len) == 0) return false;
    }
  }
  return true;
}

}  // namespace

size_t LastSafeCut(std::string_view text, size_t from, const std::vector<SpecialToken>& specials) {
  if (text.size() < 3) return 0;
  from = std::max<size_t>(from, 2);
  for (size_t c = text.size() - 2; c >= from; --c) {
    if (IsSafeCut(text, c, specials)) return c;
    if (c == from) break;
  }
  return 0;
}

// ---- streaming ----

namespace {

// Cuts the input into chunks. Each chunk owns its bytes: the reader fills a chunk's buffer with the carry-over of
// the previous cut plus fresh input, cuts it at the last safe point within `chunk` bytes (else the first one after),
// and moves the bytes past the cut into the next buffer. Only that short tail is copied twice.
class Chunker {
 public:
  // `carry` is a buffer the caller keeps (its contents are discarded here).
  Chunker(ByteSource& source, size_t chunk, const std::vector<SpecialToken>& specials, std::string& carry)
      : source_(source),
        chunk_(chunk),
        read_block_(std::clamp<size_t>(chunk, 4096, size_t{1} << 20)),
        specials_(specials),
        carry_(carry) {
    for (const auto& s : specials) look_ = std::max(look_, s.text.size());
    carry_.clear();
  }

  // Fills *out with the next chunk (reusing its capacity); false at the end of the input.
  Result<bool> Next(std::string* out) {
    out->swap(carry_);
    carry_.clear();
    std::string& buf = *out;
    LMKIT_RETURN_IF_ERROR(Fill(&buf, chunk_ + look_ + 1));
    if (buf.empty()) return false;
    size_t c = 0;
    if (buf.size() > chunk_ + look_) {
      for (size_t k = chunk_; k >= 2 && c == 0; --k)
        if (IsSafeCut(buf, k, specials_)) c = k;
      for (size_t pos = chunk_ + 1; c == 0; ++pos) {
        LMKIT_RETURN_IF_ERROR(Fill(&buf, pos + look_ + 1));
        if (buf.size() <= pos + look_) break;
        if (IsSafeCut(buf, pos, specials_)) c = pos;
      }
    }
    if (c != 0) {
      carry_.assign(buf, c, std::string::npos);
      buf.resize(c);
    }
    return true;
  }

 private:
  Status Fill(std::string* buf, size_t want) {
    while (!eof_ && buf->size() < want) {
      const size_t old = buf->size();
      const size_t block = std::max(read_block_, want - old);
      buf->resize(old + block);
      auto got = source_.Read(buf->data() + old, block);
      if (!got.ok()) {
        buf->resize(old);
        return got.status();
      }
      buf->resize(old + *got);
      if (*got == 0) eof_ = true;
    }
    return Status::Ok();
  }

  ByteSource& source_;
  size_t chunk_;
  size_t read_block_;
  const std::vector<SpecialToken>& specials_;
  size_t look_ = 2;  // bytes a cut decision needs beyond the cut
  std::string& carry_;
  bool eof_ = false;
};

}  // namespace

// Performance notes (2 threads, debmix; docs/benchmarks/bpe-encode.md): an earlier version read a window of chunks,
// encoded them with a parallel-for and wrote them, all in lock step, and two threads gave only 1.4-1.5x one. Most of
// that was false sharing, not the lock step: the workers' id vectors and encoders sat next to each other and their
// headers (written on every push) shared cache lines, so two threads spent a third more CPU than one. With slots and
// encoders cache-line aligned they spend the same CPU as one thread (1.79-2.19x wall in three idle runs, where two
// independent processes reach 1.87-2.00x). The calling thread only reads and writes; `threads` workers take chunks as
// soon as they are read, and results are written in input order as soon as the oldest one is done
// (RunOrderedPipeline).
Encoder& EncoderPool::Get(size_t i, size_t cache_slots) {
  while (encoders_.size() <= i) encoders_.emplace_back(*tokenizer_, cache_slots);
  return encoders_[i].encoder;
}

Result<StreamStats> EncodeStream(const Tokenizer& tokenizer, ByteSource& source, TokenSink& sink,
                                 const StreamOptions& options, ProgressSink* progress) {
  const unsigned threads = std::clamp(options.threads, 1u, kMaxThreads);
  size_t chunk = options.chunk_bytes;
  // Input in flight stays under 16 MiB (its ids add ~1.5 bytes per input byte): 1 MiB chunks up to 8 threads.
  if (chunk == 0) chunk = std::clamp<size_t>((size_t{16} << 20) / (2 * threads), size_t{64} << 10, size_t{1} << 20);
  StreamStats stats;
  if (progress != nullptr) progress->Begin("encoding", source.SizeHint(), "B");

  // Encoders come from options.encoders when given (their caches stay warm from call to call), else are made here.
  EncoderPool local_pool(tokenizer);
  EncoderPool& pool = options.encoders ? *options.encoders : local_pool;
  if (&pool.tokenizer() != &tokenizer) return Status::Internal("EncodeStream: encoder pool of another tokenizer");
  Chunker chunker(source, chunk, tokenizer.enabled_specials(), pool.Carry());

  // One thread: the calling thread reads, encodes and writes. More: `threads` workers encode.
  PipelineOptions po;
  po.workers = threads == 1 ? 0 : threads;
  // Per-thread caches shrink with many threads so that memory stays bounded at any thread count.
  const size_t cache_slots = threads <= 16 ? Encoder::kCacheSlots : Encoder::kCacheSlots / 4;
  std::vector<EncoderPool::Slot>& slots = pool.Slots(PipelineRing(po));
  // Encoders are made on this thread, before their worker starts, for the same reason as the id buffers below.
  std::vector<Encoder*> encoders(std::max(1u, po.workers), nullptr);
  if (po.workers == 0) encoders[0] = &pool.Get(0, cache_slots);
  PipelineStages stages;
  stages.prepare_worker = [&](unsigned w) { encoders[w] = &pool.Get(w, cache_slots); };
  stages.produce = [&](size_t i) -> Result<bool> {
    EncoderPool::Slot& slot = slots[i];
    LMKIT_ASSIGN_OR_RETURN(bool more, chunker.Next(&slot.text));
    // Reserved on this thread, so id vectors do not grow in per-thread malloc arenas (which would inflate the
    // resident set with every thread added).
    if (more && po.workers > 0) slot.ids.reserve(slot.text.size() / 2 + 16);
    return more;
  };
  stages.work = [&](size_t i, unsigned w) {
    EncoderPool::Slot& slot = slots[i];
    slot.ids.clear();
    encoders[w]->Encode(slot.text, &slot.ids);
    return Status::Ok();
  };
  stages.consume = [&](size_t i) -> Result<bool> {
    const EncoderPool::Slot& slot = slots[i];
    LMKIT_RETURN_IF_ERROR(sink.Write(slot.ids.data(), slot.ids.size()));
    stats.bytes += slot.text.size();
    stats.tokens += slot.ids.size();
    stats.largest_chunk = std::max<uint64_t>(stats.largest_chunk, slot.text.size());
    ++stats.chunks;
    if (progress != nullptr) progress->Update(stats.bytes);
    return true;
  };
  LMKIT_RETURN_IF_ERROR(RunOrderedPipeline(po, stages).status());
  if (progress != nullptr) progress->Finish();
  return stats;
}

// ---- formats and outputs ----

Status TokenSink::Write16(const uint16_t* ids, size_t count) {
  uint32_t wide[4096];
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(count - done, std::size(wide));
    std::copy(ids + done, ids + done + n, wide);
    LMKIT_RETURN_IF_ERROR(Write(wide, n));
    done += n;
  }
  return Status::Ok();
}

Result<IdFormat> IdFormatFromName(std::string_view name) {
  if (name == "bin") return IdFormat::kBin;
  if (name == "npy") return IdFormat::kNpy;
  if (name == "json") return IdFormat::kJson;
  if (name == "text") return IdFormat::kText;
  return Status::InvalidArgument("unknown format '" + std::string(name) + "' (expected bin, npy, json or text)");
}

std::string_view IdFormatName(IdFormat f) {
  switch (f) {
    case IdFormat::kBin:
      return "bin";
    case IdFormat::kNpy:
      return "npy";
    case IdFormat::kJson:
      return "json";
    case IdFormat::kText:
      return "text";
  }
  return "bin";
}

IdFormat IdFormatFromPath(const std::string& path) {
  auto ends = [&](std::string_view suf) {
    return path.size() >= suf.size() && path.compare(path.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (ends(".npy")) return IdFormat::kNpy;
  if (ends(".json")) return IdFormat::kJson;
  if (ends(".txt")) return IdFormat::kText;
  return IdFormat::kBin;
}

Result<io::TokenDtype> ResolveDtype(io::TokenDtype requested, const Tokenizer& tokenizer) {
  const bool fits16 = tokenizer.id_limit() <= 65536;
  if (requested == io::TokenDtype::kAuto) return io::ResolveAuto(requested, tokenizer.id_limit());
  if (requested == io::TokenDtype::kU16 && !fits16)
    return Status::InvalidArgument("--dtype uint16 cannot hold this tokenizer's ids (up to " +
                                   std::to_string(tokenizer.id_limit() - 1) + "); use uint32 or auto");
  return requested;
}

std::string QuoteTokenBytes(std::string_view b) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < b.size();) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A complete, well-formed UTF-8 sequence is kept; anything else is one \xNN.
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = len > 0 && i + len <= b.size();
    uint32_t cp = 0;
    if (ok) {
      cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (size_t k = 1; k < len && ok; ++k) {
        const auto d = static_cast<unsigned char>(b[i + k]);
        ok = (d & 0xC0) == 0x80;
        cp = (cp << 6) | (d & 0x3F);
      }
      ok = ok && !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) &&
           !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
    }
    if (ok) {
      out.append(b.substr(i, len));
      i += len;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  out += '"';
  return out;
}

Result<ByteOutput> ByteOutput::ToFile(const std::string& path) {
  ByteOutput o;
  LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path));
  o.file_.emplace(std::move(f));
  o.name_ = path;
  return o;
}

ByteOutput ByteOutput::ToFd(int fd, std::string name) {
  ByteOutput o;
  o.fd_ = fd;
  o.name_ = std::move(name);
  return o;
}

Status ByteOutput::Write(std::string_view bytes) {
  if (file_) return file_->Write(bytes);
  buffer_.append(bytes);
  if (buffer_.size() < (size_t{1} << 20)) return Status::Ok();
  return Commit();
}

Status ByteOutput::Commit() {
  if (file_) return file_->Commit();
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(name_, "write failed", errno);  // docs/cli.md: "<command>: stdout: write failed: ..."
    }
    done += static_cast<size_t>(w);
  }
  buffer_.clear();
  return Status::Ok();
}

namespace {

class TokenWriterSink final : public TokenSink {
 public:
  explicit TokenWriterSink(io::TokenWriter w) : w_(std::move(w)) {}
  Status Write(const uint32_t* ids, size_t count) override { return w_.Append({ids, count}); }
  Status Write16(const uint16_t* ids, size_t count) override { return w_.Append16({ids, count}); }
  Status Commit() { return w_.Commit(); }

 private:
  io::TokenWriter w_;
};

// bin, json or text into a ByteOutput.
class FormattedSink final : public TokenSink {
 public:
  FormattedSink(ByteOutput out, IdFormat format, io::TokenDtype dtype, const Tokenizer& tok)
      : out_(std::move(out)), format_(format), dtype_(dtype), tok_(tok) {}
  Status Write(const uint32_t* ids, size_t count) override {
    buf_.clear();
    char num[16];
    for (size_t i = 0; i < count; ++i) {
      const uint32_t id = ids[i];
      switch (format_) {
        case IdFormat::kBin:
          if (dtype_ == io::TokenDtype::kU16) {
            const uint16_t v = static_cast<uint16_t>(id);
            buf_.append(reinterpret_cast<const char*>(&v), 2);
          } else {
            buf_.append(reinterpret_cast<const char*>(&id), 4);
          }
          break;
        case IdFormat::kJson: {
          buf_ += first_ ? '[' : ',';
          int n = std::snprintf(num, sizeof(num), "%u", id);
          buf_.append(num, static_cast<size_t>(n));
          break;
        }
        default: {
          int n = std::snprintf(num, sizeof(num), "%u\t", id);
          buf_.append(num, static_cast<size_t>(n));
          std::string_view bytes;
          if (!tok_.TokenBytes(id, &bytes)) bytes = {};
          buf_ += QuoteTokenBytes(bytes);
          buf_ += '\n';
        }
      }
      first_ = false;
    }
    return out_.Write(buf_);
  }
  Status Commit() {
    if (format_ == IdFormat::kJson) LMKIT_RETURN_IF_ERROR(out_.Write(first_ ? "[]\n" : "]\n"));
    return out_.Commit();
  }

 private:
  ByteOutput out_;
  IdFormat format_;
  io::TokenDtype dtype_;
  const Tokenizer& tok_;
  std::string buf_;
  bool first_ = true;
};

}  // namespace

Result<EncodeReport> EncodeFile(const EncodeRequest& req, ProgressSink* progress) {
  EncodeReport rep;
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(auto tok, LoadTokenizer(req.tokenizer, req.tokenizer_options));
  rep.load_seconds = MonotonicSeconds() - t0;
  rep.tokenizer = tok->description();
  rep.input = req.input;
  rep.output = req.output.empty() ? "-" : req.output;
  rep.format = req.format.value_or(req.output.empty() ? IdFormat::kJson : IdFormatFromPath(req.output));
  LMKIT_ASSIGN_OR_RETURN(rep.dtype, ResolveDtype(req.dtype, *tok));
  rep.threads = std::max(1u, req.threads);
  if (rep.format == IdFormat::kNpy && req.output.empty())
    return Status::InvalidArgument("--format npy needs an output file (-o): its header holds the token count");

  int fd = 0;
  uint64_t size_hint = 0;
  if (req.input != "-") {
    fd = ::open(req.input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound(req.input, "no such file");
      return Status::FromErrno(req.input, "cannot open", errno);
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return Status::InvalidInput(req.input, "is a directory, expected a text file");
      }
      size_hint = static_cast<uint64_t>(st.st_size);
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd > 0) ::close(fd);
    }
  } closer{fd};
  FdSource source(fd, req.input == "-" ? "<stdin>" : req.input, size_hint);
  StreamOptions opts;
  opts.threads = rep.threads;
  opts.chunk_bytes = req.chunk_bytes;

  auto cpu_now = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  const double t1 = MonotonicSeconds();
  const double c1 = cpu_now();
  StreamStats stats;
  if ((rep.format == IdFormat::kBin || rep.format == IdFormat::kNpy) && !req.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(
        io::TokenWriter w,
        io::TokenWriter::Create(
            req.output, rep.format == IdFormat::kNpy ? io::TokenFormat::kNpy : io::TokenFormat::kBin, rep.dtype));
    TokenWriterSink sink(std::move(w));
    LMKIT_ASSIGN_OR_RETURN(stats, EncodeStream(*tok, source, sink, opts, progress));
    LMKIT_RETURN_IF_ERROR(sink.Commit());
  } else {
    ByteOutput out = ByteOutput::ToFd(req.stdout_fd, "stdout");
    if (!req.output.empty()) {
      LMKIT_ASSIGN_OR_RETURN(out, ByteOutput::ToFile(req.output));
    }
    FormattedSink sink(std::move(out), rep.format, rep.dtype, *tok);
    LMKIT_ASSIGN_OR_RETURN(stats, EncodeStream(*tok, source, sink, opts, progress));
    LMKIT_RETURN_IF_ERROR(sink.Commit());
  }
  rep.encode_seconds = MonotonicSeconds() - t1;
  rep.encode_cpu_seconds = cpu_now() - c1;
  rep.bytes = stats.bytes;
  rep.tokens = stats.tokens;
  rep.chunks = stats.chunks;
  rep.largest_chunk = stats.largest_chunk;
  rep.peak_rss_bytes = PeakRssBytes();
  return rep;
}

// ---- OpenIdOutput (for the MPI driver): the sinks above behind one interface ----

namespace {

template <typename S>
class OwnedIdOutput final : public IdOutput {
 public:
  explicit OwnedIdOutput(S sink) : sink_(std::move(sink)) {}
  Status Write(const uint32_t* ids, size_t count) override { return sink_.Write(ids, count); }
  Status Write16(const uint16_t* ids, size_t count) override { return sink_.Write16(ids, count); }
  Status Commit() override { return sink_.Commit(); }

 private:
  S sink_;
};

}  // namespace

Result<std::unique_ptr<IdOutput>> OpenIdOutput(const EncodeRequest& req, const Tokenizer& tok, IdFormat format,
                                               io::TokenDtype dtype) {
  if ((format == IdFormat::kBin || format == IdFormat::kNpy) && !req.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(
        io::TokenWriter w,
        io::TokenWriter::Create(req.output, format == IdFormat::kNpy ? io::TokenFormat::kNpy : io::TokenFormat::kBin,
                                dtype));
    return std::unique_ptr<IdOutput>(new OwnedIdOutput<TokenWriterSink>(TokenWriterSink(std::move(w))));
  }
  if (format == IdFormat::kNpy)
    return Status::InvalidArgument("--format npy needs an output file (-o): its header holds the token count");
  ByteOutput out = ByteOutput::ToFd(req.stdout_fd, "stdout");
  if (!req.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(out, ByteOutput::ToFile(req.output));
  }
  return std::unique_ptr<IdOutput>(new OwnedIdOutput<FormattedSink>(FormattedSink(std::move(out), format, dtype, tok)));
}

}  // namespace lmkit::bpe
