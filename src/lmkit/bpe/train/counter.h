// BPE training, phase 1: counting pre-tokens. Input is read in blocks of options.block_bytes. A block is cut at a
// point that is a boundary for both the special-token split and the GPT-2 pre-tokenizer, and the tail after it is
// carried into the next block:
//   - the end of a special-token match whose start is at least max_special_len before the block end (so the
//     longest-match decision there cannot depend on bytes not read yet), or
//   - a letter-space cut x after that (IsLetterSpaceCut, pretokenize/cut_rules.h): text[x-1] is an ASCII letter and
//   text[x] is ' ' or '\n'. Every GPT-2
//     pre-token containing text[x-1] ends at x (letter runs and contractions stop at a non-letter), and the scanner
//     only looks forward, so cutting there changes no pre-token.
// Ordinary spans of a block are cut again at letter-space cuts into ~1 MiB work items, counted on the thread pool into
// one open-addressing table per worker (key bytes in a per-worker arena). Tables are merged at the end; counts are
// sums, so the result does not depend on which worker counted what.
//
// The public entry points (CountPretokens, RangeCounter) are declared in trainer.h; this header is the trainer's own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/pretokenize/special_tokens.h"
#include "lmkit/bpe/train/counts_view.h"
#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/huge_pages.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/corpus.h"

namespace lmkit::bpe {
namespace train {

// Counting state shared by the streamed and in-memory entry points: one table per pool worker. Not thread-safe (it
// runs its own pool).
class Counter {
 public:
  Counter(const SpecialTokenSplitter& splitter, unsigned threads)
      : splitter_(splitter), pool_(std::max(1u, threads)), tables_(pool_.size()) {}

  // Counts text[0, cut): the caller guarantees cut is a boundary (see the file comment).
  void CountBlock(std::string_view text);

  // The counts of all tables as one view (the tables stay here until view.Release()). Tables beyond the second are
  // first absorbed into the second; then the second's keys are looked up in the first on all threads.
  CountsView ReduceView();

  // All counts in one table (tables_[0]).
  PretokenTable& Reduce();

 private:
  static constexpr size_t kItemBytes = size_t{1} << 20;
  const SpecialTokenSplitter& splitter_;
  ThreadPool pool_;
  std::vector<PretokenTable> tables_;
  std::vector<std::string_view> items_;
};

// Where a block may be cut (see the file comment); 0 when nowhere.
size_t BlockCut(std::string_view text, const SpecialTokenSplitter& splitter);

}  // namespace train

struct RangeCounter::Impl {
  Impl(const BpeCountOptions& o, std::vector<std::string> sp, io::Corpus c)
      : options(o), specials(std::move(sp)), corpus(std::move(c)), splitter(specials), counter(splitter, o.threads) {}
  BpeCountOptions options;
  std::vector<std::string> specials;
  io::Corpus corpus;
  SpecialTokenSplitter splitter;
  train::Counter counter;
  // Left uninitialised (no zero-fill of a block that a small input never touches) and kept between ranges. It holds
  // the carried tail of the previous block followed by newly read bytes, and doubles when a block has no boundary.
  HugeBuffer buf;
  size_t cap = 0;
  HugeBuffer buf2;  // the next block, read on a second thread while `buf` is counted
  size_t cap2 = 0;

  // After the last range: the read buffers go before the tables are merged.
  void FreeBuffers() {
    buf = HugeBuffer();
    buf2 = HugeBuffer();
  }
};

}  // namespace lmkit::bpe
