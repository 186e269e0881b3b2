// Special-token splitting: cutting text into ordinary spans and special tokens before pre-tokenization.
// Performance: candidates are found with memchr when all specials share one first byte (the usual "<|...|>" case),
// else with a 256-entry first-byte table; only specials with that first byte, longest first, are compared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmkit::bpe {

// Matching is leftmost, then longest: scanning left to right, the first position where any special occurs is a match,
// and among the specials that occur there the longest wins ("<|endoftext|><|endoftext|>" beats "<|endoftext|>");
// scanning resumes at its end, so matches never overlap. Immutable after construction; thread-safe.
class SpecialTokenSplitter {
 public:
  struct Match {
    size_t begin = 0;
    size_t length = 0;
    int index = -1;  // position in the list given to the constructor
  };
  // A piece of the split: special_index < 0 for ordinary text, else the special token's index.
  struct Piece {
    std::string_view text;
    int special_index = -1;
  };

  SpecialTokenSplitter() = default;  // matches nothing
  // Empty strings are ignored and duplicates collapse to their first occurrence; Match::index refers to the list as
  // given.
  explicit SpecialTokenSplitter(const std::vector<std::string>& specials);

  bool empty() const { return specials_.empty(); }
  // Length of the longest special token (0 when none).
  size_t max_length() const { return max_len_; }
  const std::vector<std::string>& specials() const { return specials_; }

  // The first match starting at or after `pos`; false when there is none.
  bool FindNext(std::string_view text, size_t pos, Match* match) const;

  // Calls fn(Piece) for the pieces of `text` in order; empty ordinary pieces are skipped.
  template <typename Fn>
  void Split(std::string_view text, Fn&& fn) const {
    size_t pos = 0;
    Match m;
    while (pos < text.size() && FindNext(text, pos, &m)) {
      if (m.begin > pos) fn(Piece{text.substr(pos, m.begin - pos), -1});
      fn(Piece{text.substr(m.begin, m.length), m.index});
      pos = m.begin + m.length;
    }
    if (pos < text.size()) fn(Piece{text.substr(pos), -1});
  }
  std::vector<Piece> Split(std::string_view text) const;

 private:
  std::vector<std::string> specials_;       // as given (empties kept so indexes stay stable)
  std::vector<std::vector<int>> by_first_;  // first byte -> special indexes, longest first
  bool first_[256] = {};
  int single_first_ = -1;  // the one first byte all specials share, or -1
  size_t max_len_ = 0;
};

}  // namespace lmkit::bpe
