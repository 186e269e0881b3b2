// The documents of a JSONL file (one JSON object per line, as The Pile, RedPajama and Dolma ship them): each line's
// string field `field` (e.g. "text"), parsed with simdjson.
//
// Contract: Next returns the documents in file order, each with the offset of its line in the (decompressed) file;
// the view stays valid until the next call. Lines that are empty or only whitespace are skipped; every other line
// must be a JSON object whose `field` is a string (its value unescaped: "\n" in JSON is a newline byte). Errors are
// kInvalidInput with the file as subject and the line: "line 12: malformed JSON (...)", "line 12: no field \"text\"",
// "line 12: field \"text\" is a number, expected a string" (counted from the start of the file; a reader that
// started inside the file names the line by its byte offset instead). Memory: 1 MiB of buffer, or the longest line;
// a line longer than `max_line` bytes is an error (an input that is not JSONL, such as a device, never grows
// without bound). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"
#include "lmkit/io/byte_source.h"

namespace lmkit::io {

class JsonlReader {
 public:
  // Reads the lines of `source` (JSONL bytes), whose first byte is at offset `start` of the file named `subject`.
  // With start > 0 and `skip_partial`, the bytes up to the first newline are skipped (they end a line begun before
  // `start`).
  static constexpr size_t kMaxLine = size_t{1} << 30;
  JsonlReader(std::unique_ptr<ByteSource> source, std::string subject, std::string field, uint64_t start = 0,
              bool skip_partial = false, size_t max_line = kMaxLine);
  ~JsonlReader();

  // The next document and the file offset of its line; false at the end of the file.
  Result<bool> Next(std::string_view* doc, uint64_t* line_offset);

 private:
  Status ReadMore();
  Status LineError(uint64_t offset, const std::string& what) const;

  struct Parser;
  std::unique_ptr<ByteSource> source_;
  std::string subject_;
  std::string field_;
  std::unique_ptr<Parser> parser_;
  std::unique_ptr<char[]> buf_;  // [pos_, len_) unread; capacity cap_ plus simdjson's padding
  size_t cap_ = 0, pos_ = 0, len_ = 0, scan_ = 0;
  size_t max_line_;
  uint64_t base_ = 0;  // file offset of buf_[0]
  bool eof_ = false;
  bool skip_partial_ = false;
  bool line_numbers_ = true;  // started at the file's beginning
  uint64_t line_ = 0;         // lines read so far (counting blank ones)
};

}  // namespace lmkit::io
