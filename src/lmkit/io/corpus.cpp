// The corpus as one text stream (corpus.h). Documents are pulled one at a time from a JsonlReader or a
// ParquetTextReader and copied once, into the consumer's buffer, between separators; text files are read straight
// into it.
#include "lmkit/io/corpus.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>

#include "lmkit/io/decompressing_reader.h"
#include "lmkit/io/jsonl_reader.h"
#include "lmkit/io/parquet_reader.h"

namespace lmkit::io {

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// JSONL boundaries are judged from at most this far before the target (a longer line is passed over).
constexpr uint64_t kLookBehind = uint64_t{64} << 10;

}  // namespace

Result<CorpusFormat> CorpusFormatFromName(std::string_view name) {
  if (name == "text") return CorpusFormat::kText;
  if (name == "jsonl") return CorpusFormat::kJsonl;
  if (name == "parquet") return CorpusFormat::kParquet;
  return Status::InvalidArgument(Field("input_format") + " '" + std::string(name) +
                                 "': expected text, jsonl or parquet");
}

std::string_view CorpusFormatName(CorpusFormat f) {
  switch (f) {
    case CorpusFormat::kJsonl:
      return "jsonl";
    case CorpusFormat::kParquet:
      return "parquet";
    case CorpusFormat::kText:
      break;
  }
  return "text";
}

CorpusFormat CorpusFormatFromPath(std::string_view path) {
  for (std::string_view z : {".gz", ".zst", ".zstd"})
    if (EndsWith(path, z)) {
      path.remove_suffix(z.size());
      break;
    }
  if (EndsWith(path, ".jsonl") || EndsWith(path, ".ndjson") || EndsWith(path, ".json")) return CorpusFormat::kJsonl;
  if (EndsWith(path, ".parquet")) return CorpusFormat::kParquet;
  return CorpusFormat::kText;
}

bool HasDocuments(const CorpusOptions& options) {
  for (const auto& p : options.inputs)
    if (options.format.value_or(CorpusFormatFromPath(p)) != CorpusFormat::kText) return true;
  return false;
}

// ---- sizes (units) of the inputs ----

struct Corpus::Sizes {
  std::vector<uint64_t> base;                      // units before each input
  std::vector<std::vector<uint64_t>> group_start;  // Parquet inputs: units of each row group within the file
  uint64_t total = 0;
};

namespace {

// Units of each row group of a Parquet file, within the file: at least 1 per group, so that group starts increase.
std::vector<uint64_t> GroupStarts(const ParquetTextReader& r, uint64_t* file_units) {
  std::vector<uint64_t> starts;
  uint64_t u = 0;
  for (int g = 0; g < r.row_groups(); ++g) {
    starts.push_back(u);
    u += std::max<uint64_t>(r.column_bytes(g), 1);
  }
  *file_units = u;
  return starts;
}

// ---- documents across files ----

// The documents of the inputs from a position on, with their unit positions (meaningful when `base` is given).
class DocStream {
 public:
  DocStream(std::vector<std::string> paths, std::vector<CorpusFormat> formats, std::string field)
      : paths_(std::move(paths)), formats_(std::move(formats)), field_(std::move(field)) {}

  // Positions at the documents whose unit is >= `unit` (file `file`, `offset` units into it).
  Status Start(size_t file, uint64_t offset, std::vector<uint64_t> base) {
    base_ = std::move(base);
    file_ = file;
    return OpenFile(offset);
  }

  Result<bool> Next(std::string_view* doc, uint64_t* unit) {
    while (file_ < paths_.size()) {
      uint64_t pos = 0;
      bool more = false;
      if (jsonl_) {
        LMKIT_ASSIGN_OR_RETURN(more, jsonl_->Next(doc, &pos));
      } else if (parquet_) {
        int g = 0;
        LMKIT_ASSIGN_OR_RETURN(more, parquet_->Next(doc, &g));
        if (more) pos = group_start_[static_cast<size_t>(g)];
      }
      if (more) {
        *unit = (file_ < base_.size() ? base_[file_] : 0) + pos;
        return true;
      }
      ++file_;
      if (file_ < paths_.size()) LMKIT_RETURN_IF_ERROR(OpenFile(0));
    }
    return false;
  }

 private:
  Status OpenFile(uint64_t offset) {
    jsonl_.reset();
    parquet_.reset();
    if (file_ >= paths_.size()) return Status::Ok();
    const std::string& path = paths_[file_];
    if (formats_[file_] == CorpusFormat::kParquet) {
      LMKIT_ASSIGN_OR_RETURN(parquet_, OpenParquetText(path, field_));
      uint64_t units = 0;
      group_start_ = GroupStarts(*parquet_, &units);
      const auto first = std::lower_bound(group_start_.begin(), group_start_.end(), offset);
      return parquet_->Seek(static_cast<int>(first - group_start_.begin()));
    }
    LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<DecompressingReader> r, DecompressingReader::Open(path));
    // From offset - 1, skipping through the first newline: the first line that starts at or after `offset`.
    const uint64_t from = offset > 0 ? offset - 1 : 0;
    LMKIT_RETURN_IF_ERROR(r->Seek(from));
    const std::string subject = path == "-" ? "<stdin>" : path;
    jsonl_ = std::make_unique<JsonlReader>(std::move(r), subject, field_, from, offset > 0);
    return Status::Ok();
  }

  std::vector<std::string> paths_;
  std::vector<CorpusFormat> formats_;
  std::string field_;
  std::vector<uint64_t> base_;
  size_t file_ = 0;
  std::unique_ptr<JsonlReader> jsonl_;
  std::unique_ptr<ParquetTextReader> parquet_;
  std::vector<uint64_t> group_start_;
};

// The documents that start in [.., end) joined by the separator, plus the separator after the last one when another
// document follows.
class JoinSource final : public ByteSource {
 public:
  JoinSource(std::unique_ptr<DocStream> docs, std::string separator, uint64_t end)
      : docs_(std::move(docs)), sep_(std::move(separator)), end_(end) {}

  Result<size_t> Read(char* dst, size_t capacity) override {
    size_t got = 0;
    while (got < capacity) {
      if (!pending_.empty()) {
        const size_t n = std::min(capacity - got, pending_.size());
        std::memcpy(dst + got, pending_.data(), n);
        pending_.remove_prefix(n);
        got += n;
        continue;
      }
      if (state_ == kDone) break;
      if (state_ == kAfterSeparator) {  // the document after the separator, fetched before it
        if (next_unit_ >= end_) {
          state_ = kDone;
        } else {
          pending_ = next_;
          state_ = kAfterDocument;
        }
        continue;
      }
      std::string_view doc;
      uint64_t unit = 0;
      LMKIT_ASSIGN_OR_RETURN(bool more, docs_->Next(&doc, &unit));
      if (!more) {
        state_ = kDone;
      } else if (state_ == kStart) {
        if (unit >= end_) {
          state_ = kDone;
        } else {
          pending_ = doc;
          state_ = kAfterDocument;
        }
      } else {  // kAfterDocument: a document follows, so a separator comes first
        next_ = doc;
        next_unit_ = unit;
        pending_ = sep_;
        state_ = kAfterSeparator;
      }
    }
    return got;
  }

 private:
  enum State { kStart, kAfterDocument, kAfterSeparator, kDone };
  std::unique_ptr<DocStream> docs_;
  std::string sep_;
  uint64_t end_;
  State state_ = kStart;
  std::string_view pending_;  // bytes still to copy out
  std::string_view next_;
  uint64_t next_unit_ = 0;
};

// Bytes [begin, end) of the text inputs concatenated (`base` needed when begin > 0).
class TextSource final : public ByteSource {
 public:
  TextSource(std::vector<std::string> paths, std::vector<uint64_t> base, uint64_t begin, uint64_t end,
             uint64_t size_hint)
      : paths_(std::move(paths)), base_(std::move(base)), pos_(begin), end_(end), size_hint_(size_hint) {
    if (begin > 0)
      while (file_ + 1 < base_.size() && base_[file_ + 1] <= begin) ++file_;
  }

  Result<size_t> Read(char* dst, size_t capacity) override {
    size_t got = 0;
    while (got < capacity && pos_ < end_ && file_ < paths_.size()) {
      if (!reader_) {
        LMKIT_ASSIGN_OR_RETURN(reader_, DecompressingReader::Open(paths_[file_]));
        const uint64_t start = file_ < base_.size() && pos_ > base_[file_] ? pos_ - base_[file_] : 0;
        if (start > 0) LMKIT_RETURN_IF_ERROR(reader_->Seek(start));
      }
      const size_t want = static_cast<size_t>(std::min<uint64_t>(capacity - got, end_ - pos_));
      LMKIT_ASSIGN_OR_RETURN(size_t n, reader_->Read(dst + got, want));
      if (n == 0) {
        reader_.reset();
        ++file_;
        continue;
      }
      got += n;
      pos_ += n;
    }
    return got;
  }
  uint64_t SizeHint() const override { return size_hint_; }

 private:
  std::vector<std::string> paths_;
  std::vector<uint64_t> base_;
  size_t file_ = 0;
  uint64_t pos_, end_;
  uint64_t size_hint_;
  std::unique_ptr<DecompressingReader> reader_;
};

Status ReadAll(ByteSource& src, std::string* out) {
  out->clear();
  char buf[1 << 16];
  for (;;) {
    LMKIT_ASSIGN_OR_RETURN(size_t n, src.Read(buf, sizeof buf));
    if (n == 0) return Status::Ok();
    out->append(buf, n);
  }
}

}  // namespace

// ---- Corpus ----

Result<Corpus> Corpus::Create(CorpusOptions options, std::string_view default_separator) {
  if (options.inputs.empty()) return Status::InvalidArgument("no input files");
  Corpus c;
  bool text = false;
  for (const auto& p : options.inputs) {
    const CorpusFormat f = options.format.value_or(CorpusFormatFromPath(p));
    c.formats_.push_back(f);
    (f == CorpusFormat::kText ? text : c.documents_) = true;
    if (f == CorpusFormat::kParquet && p == "-")
      return Status::InvalidArgument("a Parquet input cannot be read from stdin (it is read from its footer first)");
  }
  if (text && c.documents_)
    return Status::InvalidArgument(Field("inputs") + ": text files mixed with JSONL/Parquet files; give one kind (" +
                                   Field("input_format") + " sets the format of all)");
  if (!c.documents_ && !options.doc_separator.empty())
    return Status::InvalidArgument(Field("doc_separator") +
                                   " joins JSONL and Parquet documents; these inputs are text");
  if (c.documents_ && options.doc_separator.empty()) options.doc_separator = default_separator;
  if (c.documents_ && options.doc_separator.empty())
    return Status::InvalidArgument("JSONL and Parquet documents need a separator: give " + Field("doc_separator"));
  if (c.documents_ && options.text_field.empty())
    return Status::InvalidArgument(Field("text_field") + " must not be empty");
  c.options_ = std::move(options);
  return c;
}

Corpus::Corpus(Corpus&&) noexcept = default;
Corpus& Corpus::operator=(Corpus&&) noexcept = default;
Corpus::~Corpus() = default;

Status Corpus::ComputeSizes() {
  if (sizes_) return Status::Ok();
  auto s = std::make_unique<Sizes>();
  for (size_t i = 0; i < options_.inputs.size(); ++i) {
    const std::string& p = options_.inputs[i];
    if (p == "-") return Status::InvalidArgument("stdin cannot be split into shards; give files");
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(p, "no such file");
      return Status::FromErrno(p, "cannot stat", errno);
    }
    if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(p + ": shards need regular files");
    s->base.push_back(s->total);
    s->group_start.emplace_back();
    uint64_t units = 0;
    if (formats_[i] == CorpusFormat::kParquet) {
      LMKIT_ASSIGN_OR_RETURN(auto r, OpenParquetText(p, options_.text_field));
      s->group_start.back() = GroupStarts(*r, &units);
    } else {
      LMKIT_ASSIGN_OR_RETURN(auto r, DecompressingReader::Open(p));
      if (r->compression() == Compression::kNone) {
        units = static_cast<uint64_t>(st.st_size);
      } else {
        LMKIT_RETURN_IF_ERROR(r->Seek(UINT64_MAX));
        units = r->position();
      }
    }
    s->total += units;
  }
  sizes_ = std::move(s);
  return Status::Ok();
}

Result<uint64_t> Corpus::Total() {
  LMKIT_RETURN_IF_ERROR(ComputeSizes());
  return sizes_->total;
}

Result<std::unique_ptr<ByteSource>> Corpus::Open(uint64_t begin, uint64_t end) {
  const bool ranged = begin > 0 || end != UINT64_MAX;
  if (ranged) LMKIT_RETURN_IF_ERROR(ComputeSizes());
  if (begin > end) return Status::InvalidArgument("a range ends before it begins");
  std::vector<uint64_t> base = ranged ? sizes_->base : std::vector<uint64_t>();
  if (!documents_) {
    uint64_t hint = ranged && end != UINT64_MAX ? end - begin : 0;
    if (!ranged) {
      for (const auto& p : options_.inputs) {
        struct stat st {};
        if (p != "-" && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) hint += static_cast<uint64_t>(st.st_size);
      }
    }
    return std::unique_ptr<ByteSource>(new TextSource(options_.inputs, std::move(base), begin, end, hint));
  }
  size_t file = 0;
  uint64_t offset = 0;
  if (begin > 0) {
    while (file + 1 < base.size() && base[file + 1] <= begin) ++file;
    offset = begin - base[file];
  }
  auto docs = std::make_unique<DocStream>(options_.inputs, formats_, options_.text_field);
  LMKIT_RETURN_IF_ERROR(docs->Start(file, offset, std::move(base)));
  return std::unique_ptr<ByteSource>(new JoinSource(std::move(docs), options_.doc_separator, end));
}

Result<uint64_t> Corpus::FirstCut(uint64_t target, const CutRule& rule) {
  LMKIT_ASSIGN_OR_RETURN(const uint64_t total, Total());
  if (target == 0) return uint64_t{0};
  if (target >= total) return total;
  return documents_ ? FirstDocumentCut(target, rule) : FirstTextCut(target, rule);
}

Result<uint64_t> Corpus::FirstTextCut(uint64_t target, const CutRule& rule) {
  const uint64_t total = sizes_->total;
  // Windows grow from 4 KiB to 1 MiB: a cut is nearly always within a few bytes of the target, and a fresh 1 MiB
  // buffer for each of the 16 pieces per rank of an MPI run cost more page faults than the rest of a piece's reading.
  uint64_t step = uint64_t{4} << 10;
  std::string window;
  for (uint64_t pos = target; pos < total; pos += step, step = std::min(step * 2, uint64_t{1} << 20)) {
    const uint64_t lo = pos >= rule.before ? pos - rule.before : 0;
    const uint64_t hi = std::min(total, pos + step + rule.after);
    LMKIT_ASSIGN_OR_RETURN(auto src, Open(lo, hi));
    LMKIT_RETURN_IF_ERROR(ReadAll(*src, &window));
    if (window.size() != hi - lo) return Status::Io(options_.inputs.front(), "an input changed while being read");
    const uint64_t last = std::min(pos + step, total);
    // The window is clipped only at the corpus' real ends, so the rule sees all the context it needs.
    for (uint64_t c = pos; c < last; ++c)
      if (rule.is_cut(window, static_cast<size_t>(c - lo))) return c;
  }
  return total;
}

Result<uint64_t> Corpus::FirstDocumentCut(uint64_t target, const CutRule& rule) {
  const Sizes& s = *sizes_;
  // Where to start reading: a little before the target, so that the first boundary at or after it has text before
  // it (JSONL: 64 KiB earlier, then the next line; Parquet: the row group that starts last before the target).
  size_t file = 0;
  while (file + 1 < s.base.size() && s.base[file + 1] <= target - 1) ++file;
  uint64_t offset = 0;
  if (formats_[file] == CorpusFormat::kParquet) {
    const auto& starts = s.group_start[file];
    const uint64_t in = target - s.base[file];
    auto it = std::lower_bound(starts.begin(), starts.end(), in);  // first group starting at or after the target
    offset = it == starts.begin() ? 0 : *std::prev(it);
  } else {
    const uint64_t from = target > kLookBehind ? target - kLookBehind : 0;
    while (file > 0 && s.base[file] > from) --file;
    offset = from - s.base[file];
  }
  const bool from_start = s.base[file] + offset == 0;
  DocStream docs(options_.inputs, formats_, options_.text_field);
  LMKIT_RETURN_IF_ERROR(docs.Start(file, offset, s.base));

  // text: the joined text read so far (its first `dropped` bytes discarded); pending: boundaries not yet judged,
  // as (position in the joined text, unit).
  std::string text;
  uint64_t dropped = 0;
  std::deque<std::pair<uint64_t, uint64_t>> pending;
  bool first = true;
  uint64_t prev_unit = 0;
  for (;;) {
    std::string_view doc;
    uint64_t unit = 0;
    LMKIT_ASSIGN_OR_RETURN(bool more, docs.Next(&doc, &unit));
    if (more) {
      if (!first) text += options_.doc_separator;
      if (!first && unit != prev_unit && unit >= target) pending.emplace_back(dropped + text.size(), unit);
      text.append(doc);
      first = false;
      prev_unit = unit;
    }
    while (!pending.empty()) {
      const auto [c, u] = pending.front();
      const uint64_t end = dropped + text.size();
      if (more && end - c < rule.after) break;  // judged once enough text follows, or at the end
      if ((c >= rule.before || from_start) && rule.is_cut(text, static_cast<size_t>(c - dropped))) return u;
      pending.pop_front();
    }
    if (!more) return s.total;
    // Keep what the next boundaries can look back at.
    const uint64_t keep_from = pending.empty() ? dropped + text.size() : pending.front().first;
    const uint64_t cut = keep_from > rule.before ? keep_from - rule.before : 0;
    if (cut > dropped + (uint64_t{1} << 20)) {
      text.erase(0, static_cast<size_t>(cut - dropped));
      dropped = cut;
    }
  }
}

}  // namespace lmkit::io
