// Performance notes (shared 2-core machine, debmix.txt 130 MB, vocab 30,000, 2 threads; docs/benchmarks/bpe.md; the
// merger's are in merger.cpp):
//  - whole run 4.9 s CPU, 165 MB peak RSS, against HF tokenizers' 50.6 s CPU, 548 MB in the same session.
//  - the scanner pre-tokenizer instead of PCRE2-JIT (5-7x faster per byte, pretokenizer.cpp) moved counting from
//    regex-bound to hash-table-bound; perf then showed ~70% of the table's time on the first slot load (a cache miss).
//    16-byte slots with the key's first 8 bytes inline (was 32-byte slots comparing keys in an arena) and dense
//    counts removed most memcmp calls (10% -> 4% of samples).
//  - look-ups run 8 pre-tokens behind the scanner with the slot prefetched (CountSpan): counting-only CPU time
//    2.19 s -> 1.62 s (debmix, 1 thread, A/B alternated twice); 16 behind measured no better.
//  - tried: a 4096-entry direct-mapped cache of short pre-tokens in front of the table; no measurable gain on this
//    (heavily loaded) machine, so it was left out.
//  - the large arrays (pre-token tables, read buffers, word records, pair map, heap) on transparent huge pages
//    (common/huge_pages.h): page faults 79 k -> 20 k, CPU 3.22 s -> 2.88 s, wall 2.41 s -> 2.13 s (perf stat -r 3,
//    2-vCPU AMD EPYC VM, where a 4 KiB fault costs microseconds).
//  - training no longer builds the union of the per-thread tables (0.16-0.27 s on one thread: a rehash, then an
//    insert per new key): the second table's keys are looked up in the first on all threads and the merger reads the
//    first table plus the second's missing keys (CountsView). 2-thread run, median of 6 alternated: 2.49 s -> 2.33 s.
//    Tried first, no gain: building the union on all threads, each filling one stretch of its slots (every thread
//    must hash every entry to find its stretch, and those reads miss the cache).
#include "lmkit/bpe/train/counter.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "lmkit/bpe/pretokenize/cut_rules.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_start.h"

namespace lmkit::bpe {
namespace train {
namespace {

// Cuts [begin, end) of `t` (an ordinary span) into pieces of about `target` bytes at letter-space cuts.
void CutSpan(std::string_view t, size_t begin, size_t end, size_t target, std::vector<std::string_view>* items) {
  while (end - begin > target + target / 2) {
    size_t x = LastLetterSpaceCut(t.substr(0, end), begin + target / 2, begin + target);
    if (x == 0) {
      for (size_t y = begin + target + 1; y < end; ++y)
        if (IsLetterSpaceCut(t.substr(0, end), y)) {
          x = y;
          break;
        }
      if (x == 0) break;
    }
    items->push_back(t.substr(begin, x - begin));
    begin = x;
  }
  if (end > begin) items->push_back(t.substr(begin, end - begin));
}

}  // namespace

void Counter::CountBlock(std::string_view text) {
  items_.clear();
  splitter_.Split(text, [&](const SpecialTokenSplitter::Piece& p) {
    if (p.special_index >= 0) return;
    const size_t b = static_cast<size_t>(p.text.data() - text.data());
    CutSpan(text, b, b + p.text.size(), kItemBytes, &items_);
  });
  if (pool_.size() == 1) {
    for (auto item : items_) tables_[0].CountSpan(item);
    return;
  }
  pool_.ParallelFor(items_.size(), [&](size_t i, unsigned w) { tables_[w].CountSpan(items_[i]); });
}

CountsView Counter::ReduceView() {
  CountsView view;
  view.table = &tables_[0];
  if (tables_.size() == 1) return view;
  for (size_t i = 2; i < tables_.size(); ++i) {
    tables_[1].Absorb(tables_[i]);
    tables_[i] = PretokenTable();
  }
  const PretokenTable& rest = tables_[1];
  const size_t parts = pool_.size(), n = rest.slot_count();
  std::vector<std::vector<uint64_t>> missing(parts);
  pool_.ParallelFor(
      parts, [&](size_t p, unsigned) { tables_[0].AddFound(rest, n * p / parts, n * (p + 1) / parts, &missing[p]); });
  view.rest = &tables_[1];
  for (const auto& m : missing) view.rest_slots.insert(view.rest_slots.end(), m.begin(), m.end());
  return view;
}

PretokenTable& Counter::Reduce() {
  CountsView view = ReduceView();
  if (view.rest != nullptr) {
    PretokenTable& all = *view.table;
    all.Reserve(view.size());
    for (uint64_t slot : view.rest_slots) all.AddFrom(*view.rest, slot);
    *view.rest = PretokenTable();
  }
  return tables_[0];
}

size_t BlockCut(std::string_view text, const SpecialTokenSplitter& splitter) {
  const size_t max_len = splitter.max_length();
  if (text.size() <= max_len) return 0;
  const size_t limit = text.size() - max_len;  // matches starting at or before this are final
  size_t last_end = 0;
  SpecialTokenSplitter::Match m;
  size_t pos = 0;
  while (splitter.FindNext(text, pos, &m) && m.begin <= limit) {
    last_end = m.begin + m.length;
    pos = last_end;
  }
  const size_t x = LastLetterSpaceCut(text, last_end, limit);
  return std::max(x, last_end);
}

}  // namespace train

Result<io::Corpus> OpenBpeCorpus(const io::CorpusOptions& corpus, const std::vector<std::string>& specials) {
  if (specials.empty() && corpus.doc_separator.empty() && io::HasDocuments(corpus))
    return Status::InvalidArgument("JSONL and Parquet documents are joined by a separator: give " +
                                   Field("special_tokens") + " (the first one joins them) or " +
                                   Field("doc_separator"));
  return io::Corpus::Create(corpus, specials.empty() ? std::string_view() : std::string_view(specials.front()));
}

Result<std::unique_ptr<RangeCounter>> RangeCounter::Create(const BpeCountOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, NormalizeSpecialTokens(options.special_tokens));
  LMKIT_ASSIGN_OR_RETURN(io::Corpus corpus, OpenBpeCorpus(options.corpus, specials));
  std::unique_ptr<RangeCounter> rc(new RangeCounter());
  rc->impl_ = std::make_unique<Impl>(options, std::move(specials), std::move(corpus));
  return rc;
}

RangeCounter::RangeCounter() = default;
RangeCounter::~RangeCounter() = default;

io::Corpus& RangeCounter::corpus() { return impl_->corpus; }
const std::vector<std::string>& RangeCounter::specials() const { return impl_->specials; }

namespace {

// Reads `src` into dst until `cap` bytes or its end (a source may return less than asked before its end).
Status Fill(io::ByteSource& src, char* dst, size_t cap, size_t* got, bool* eof) {
  *got = 0;
  while (*got < cap) {
    LMKIT_ASSIGN_OR_RETURN(size_t n, src.Read(dst + *got, cap - *got));
    if (n == 0) {
      *eof = true;
      break;
    }
    *got += n;
  }
  return Status::Ok();
}

// Grows a block buffer to `cap` bytes, keeping its first `keep`.
void Grow(HugeBuffer* buf, size_t* cap, size_t want, size_t keep) {
  if (*cap >= want && *buf) return;
  HugeBuffer bigger(want);
  if (keep > 0) std::memcpy(bigger.get(), buf->get(), keep);
  *buf = std::move(bigger);
  *cap = want;
}

}  // namespace

// Reading costs CPU: decompression and JSON parsing (about a third of counting's instructions for .jsonl.zst), the
// copy out of a pipe that waits for the writer (2-3 s of a 2 GB run through stdin), and even a regular file's copy
// from the page cache (0.13-0.2 s of 130 MB, serial, on the 2-vCPU benchmark VM). So the next block is always read
// on a second thread while the current one is counted, in two buffers of half the block size each: the memory stays
// that of one block, and a one-thread count of debmix went from 2.1-2.3 s to 1.8-2.1 s wall.
Status RangeCounter::Count(uint64_t begin, uint64_t end, BpeTrainStats* stats, ProgressSink* progress) {
  Impl& m = *impl_;
  if (begin > end) return Status::InvalidArgument("byte range ends before it begins");
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<io::ByteSource> in, m.corpus.Open(begin, end));
  // The size to show: the range, or what the source knows (regular text files; 0 for stdin and documents).
  if (progress) progress->Begin("counting", end != UINT64_MAX ? end - begin : in->SizeHint(), "B");
  const size_t block = std::max<size_t>(m.options.block_bytes / 2, 4096);
  Grow(&m.buf, &m.cap, block, 0);
  Grow(&m.buf2, &m.cap2, block, 0);
  size_t len = 0;
  uint64_t read_total = 0;
  const double t_start = MonotonicSeconds();
  double read_seconds = 0;
  bool eof = false;
  auto read_more = [&]() -> Status {  // into the current buffer, after its `len` bytes, on this thread
    if (len == m.cap) Grow(&m.buf, &m.cap, m.cap * 2, len);
    const double tr = MonotonicSeconds();
    size_t got = 0;
    LMKIT_RETURN_IF_ERROR(Fill(*in, m.buf.get() + len, m.cap - len, &got, &eof));
    read_seconds += MonotonicSeconds() - tr;
    len += got;
    read_total += got;
    return Status::Ok();
  };
  LMKIT_RETURN_IF_ERROR(read_more());
  while (len > 0) {
    const std::string_view text(m.buf.get(), len);
    const size_t cut = eof ? len : train::BlockCut(text, m.splitter);
    if (cut == 0) {  // no boundary yet: read more into the same buffer
      LMKIT_RETURN_IF_ERROR(read_more());
      continue;
    }
    const size_t tail = len - cut;
    if (!eof) {
      Grow(&m.buf2, &m.cap2, m.cap, 0);
      std::memcpy(m.buf2.get(), m.buf.get() + cut, tail);
      size_t got = 0;
      bool next_eof = false;
      Status read = Status::Ok();
      SideThread reader([&] { read = Fill(*in, m.buf2.get() + tail, m.cap2 - tail, &got, &next_eof); });
      m.counter.CountBlock(text.substr(0, cut));
      const double tr = MonotonicSeconds();
      reader.Join();
      read_seconds += MonotonicSeconds() - tr;
      LMKIT_RETURN_IF_ERROR(read);
      std::swap(m.buf, m.buf2);
      std::swap(m.cap, m.cap2);
      len = tail + got;
      read_total += got;
      eof = next_eof;
    } else {
      m.counter.CountBlock(text.substr(0, cut));
      len = tail;  // 0: at the end of the input the cut is the whole buffer
    }
    if (progress) progress->Update(read_total - len);
  }
  if (progress) progress->Finish();
  stats->input_bytes += read_total;
  stats->read_seconds += read_seconds;
  stats->count_seconds += MonotonicSeconds() - t_start - read_seconds;
  return Status::Ok();
}

void RangeCounter::Finish(PretokenTable* table) {
  impl_->FreeBuffers();
  PretokenTable& counted = impl_->counter.Reduce();
  if (table->size() == 0)
    *table = std::move(counted);
  else
    table->Absorb(counted);
}

Status CountPretokens(const BpeCountOptions& options, PretokenTable* table, BpeTrainStats* stats,
                      ProgressSink* progress) {
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<RangeCounter> rc, RangeCounter::Create(options));
  LMKIT_RETURN_IF_ERROR(rc->Count(options.begin, options.end, stats, progress));
  // The reduction of the per-thread tables is part of counting.
  const double t_reduce = MonotonicSeconds();
  rc->Finish(table);
  stats->count_seconds += MonotonicSeconds() - t_reduce;
  return Status::Ok();
}

}  // namespace lmkit::bpe
