// simdjson's DOM parser validates the whole line (a malformed line is an error even where the field was already
// found) at several GB/s, far above the BPE counter's ~0.1 GB/s per thread; each line is parsed in place in the read
// buffer, which keeps simdjson's padding allocated past the end of the data.
#include "lmkit/io/jsonl_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace lmkit::io {

namespace {

constexpr size_t kInitialBuffer = size_t{1} << 20;

std::string_view TypeName(simdjson::dom::element_type t) {
  using T = simdjson::dom::element_type;
  switch (t) {
    case T::ARRAY:
      return "an array";
    case T::OBJECT:
      return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
      return "a number";
    case T::STRING:
      return "a string";
    case T::BOOL:
      return "a boolean";
    case T::NULL_VALUE:
      return "null";
  }
  return "a value";
}

bool Blank(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
  return true;
}

}  // namespace

struct JsonlReader::Parser {
  simdjson::dom::parser parser;
};

JsonlReader::JsonlReader(std::unique_ptr<ByteSource> source, std::string subject, std::string field, uint64_t start,
                         bool skip_partial, size_t max_line)
    : source_(std::move(source)),
      subject_(std::move(subject)),
      field_(std::move(field)),
      parser_(std::make_unique<Parser>()),
      buf_(new char[kInitialBuffer + simdjson::SIMDJSON_PADDING]),
      cap_(kInitialBuffer),
      max_line_(max_line),
      base_(start),
      skip_partial_(skip_partial && start > 0),
      line_numbers_(start == 0) {}

JsonlReader::~JsonlReader() = default;

Status JsonlReader::ReadMore() {
  if (pos_ > 0) {
    std::memmove(buf_.get(), buf_.get() + pos_, len_ - pos_);
    base_ += pos_;
    len_ -= pos_;
    scan_ -= pos_;
    pos_ = 0;
  }
  if (len_ > max_line_) {
    const std::string where =
        line_numbers_ ? "line " + std::to_string(line_ + 1) : "the line at byte " + std::to_string(base_);
    return Status::InvalidInput(subject_,
                                where + ": longer than " + std::to_string(max_line_) + " bytes (is this JSONL?)");
  }
  if (len_ == cap_) {  // one line fills the buffer: grow it
    std::unique_ptr<char[]> bigger(new char[2 * cap_ + simdjson::SIMDJSON_PADDING]);
    std::memcpy(bigger.get(), buf_.get(), len_);
    buf_ = std::move(bigger);
    cap_ *= 2;
  }
  LMKIT_ASSIGN_OR_RETURN(size_t n, source_->Read(buf_.get() + len_, cap_ - len_));
  if (n == 0) eof_ = true;
  len_ += n;
  return Status::Ok();
}

Status JsonlReader::LineError(uint64_t offset, const std::string& what) const {
  const std::string where =
      line_numbers_ ? "line " + std::to_string(line_) : "the line at byte " + std::to_string(offset);
  return Status::InvalidInput(subject_, where + ": " + what);
}

Result<bool> JsonlReader::Next(std::string_view* doc, uint64_t* line_offset) {
  for (;;) {
    const char* nl =
        scan_ < len_ ? static_cast<const char*>(std::memchr(buf_.get() + scan_, '\n', len_ - scan_)) : nullptr;
    size_t end;
    if (nl != nullptr) {
      end = static_cast<size_t>(nl - buf_.get());
    } else if (!eof_) {
      scan_ = len_;
      LMKIT_RETURN_IF_ERROR(ReadMore());
      continue;
    } else if (pos_ < len_) {
      end = len_;  // a last line without a newline
    } else {
      return false;
    }
    const size_t begin = pos_;
    pos_ = scan_ = std::min(end + 1, len_);
    if (skip_partial_) {  // the tail of a line that began before this reader's start
      skip_partial_ = false;
      continue;
    }
    ++line_;
    const char* p = buf_.get() + begin;
    const size_t n = end - begin;
    if (Blank(p, n)) continue;
    const uint64_t offset = base_ + begin;
    simdjson::dom::element root;
    simdjson::error_code err = parser_->parser.parse(reinterpret_cast<const uint8_t*>(p), n, false).get(root);
    if (err) return LineError(offset, std::string("malformed JSON (") + simdjson::error_message(err) + ")");
    simdjson::dom::object obj;
    if (root.get_object().get(obj))
      return LineError(offset, "expected a JSON object, got " + std::string(TypeName(root.type())));
    simdjson::dom::element value;
    if (obj.at_key(field_).get(value)) return LineError(offset, "no field \"" + field_ + "\"");
    std::string_view text;
    if (value.get_string().get(text))
      return LineError(offset,
                       "field \"" + field_ + "\" is " + std::string(TypeName(value.type())) + ", expected a string");
    *doc = text;
    *line_offset = offset;
    return true;
  }
}

}  // namespace lmkit::io
