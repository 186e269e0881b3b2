#include "lmkit/io/npy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

namespace lmkit::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;

// Text from the file, made safe for a one-line message: control bytes are escaped, long text is cut.
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 100)) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (s.size() > 100) out += "...";
  return out;
}

// The header dict is a Python literal. numpy reads it with ast.literal_eval; we accept the subset numpy (and other
// writers we know of) produce: a dict with string keys; string, bool, None, int (optionally with Python 2's 'L'
// suffix), tuple and list values; any whitespace between tokens; trailing commas.
struct PyValue {
  enum Kind { kStr, kBool, kNone, kInt, kTuple, kList, kDict } kind = kNone;
  std::string str;
  bool boolean = false;
  uint64_t integer = 0;
  bool negative = false;
  std::vector<PyValue> items;     // tuple / list elements, or dict values
  std::vector<std::string> keys;  // dict keys (strings only), parallel to items
};

class PyLiteralParser {
 public:
  explicit PyLiteralParser(std::string_view s) : s_(s) {}

  // Parses the whole text as one dict followed only by whitespace.
  bool ParseDict(PyValue* out) {
    SkipWs();
    if (!Value(out, 0)) return false;
    if (out->kind != PyValue::kDict) return Fail("header is not a Python dict");
    SkipWs();
    if (pos_ != s_.size()) return Fail(fmt::format("unexpected text after the header dict at byte {}", pos_));
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
    return false;
  }
  bool FailAt(const char* what) { return Fail(fmt::format("malformed header dict: {} at byte {}", what, pos_)); }
  void SkipWs() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool Eat(char c) {
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    pos_ = end;
    return true;
  }

  bool String(std::string* out) {
    char q = s_[pos_++];
    out->clear();
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == q) return true;
      if (c == '\n') break;
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        char e = s_[pos_++];
        switch (e) {
          case '\\':
          case '\'':
          case '"':
            out->push_back(e);
            break;
          case 'n':
            out->push_back('\n');
            break;
          case 't':
            out->push_back('\t');
            break;
          default:
            return FailAt("unsupported escape in a string");
        }
        continue;
      }
      out->push_back(c);
    }
    return FailAt("unterminated string");
  }

  bool Int(PyValue* out) {
    out->kind = PyValue::kInt;
    if (s_[pos_] == '-' || s_[pos_] == '+') {
      out->negative = s_[pos_] == '-';
      ++pos_;
    }
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (UINT64_MAX - d) / 10) return FailAt("integer too large");
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ == start) return FailAt("expected a digit");
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long
    if (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' || s_[pos_] == '_'))
      return FailAt("malformed number");
    out->integer = v;
    return true;
  }

  // Comma-separated values up to `close`. As in Python, "(x)" is x itself, not a one-item tuple: that takes "(x,)".
  bool Sequence(char close, PyValue* out, int depth) {
    while (true) {
      if (Eat(close)) return true;
      PyValue item;
      if (!Value(&item, depth + 1)) return false;
      out->items.push_back(std::move(item));
      if (Eat(',')) continue;
      if (Eat(close)) {
        if (close == ')' && out->items.size() == 1) {
          PyValue inner = std::move(out->items[0]);
          *out = std::move(inner);
        }
        return true;
      }
      return FailAt(close == ')' ? "expected ',' or ')'" : "expected ',' or ']'");
    }
  }

  bool Value(PyValue* out, int depth) {
    if (depth > 8) return FailAt("nesting too deep");
    SkipWs();
    if (pos_ >= s_.size()) return FailAt("unexpected end of header");
    char c = s_[pos_];
    if (c == '\'' || c == '"') {
      out->kind = PyValue::kStr;
      return String(&out->str);
    }
    if (c == '(') {
      ++pos_;
      out->kind = PyValue::kTuple;
      return Sequence(')', out, depth);
    }
    if (c == '[') {
      ++pos_;
      out->kind = PyValue::kList;
      return Sequence(']', out, depth);
    }
    if (c == '{') {
      ++pos_;
      out->kind = PyValue::kDict;
      while (true) {
        if (Eat('}')) return true;
        SkipWs();
        if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return FailAt("expected a string key");
        std::string key;
        if (!String(&key)) return false;
        for (const auto& k : out->keys)
          if (k == key) return Fail(fmt::format("duplicate key '{}' in the header dict", Printable(key)));
        if (!Eat(':')) return FailAt("expected ':'");
        PyValue v;
        if (!Value(&v, depth + 1)) return false;
        out->keys.push_back(std::move(key));
        out->items.push_back(std::move(v));
        if (Eat(',')) continue;
        if (Eat('}')) return true;
        return FailAt("expected ',' or '}'");
      }
    }
    if (Word("True")) {
      out->kind = PyValue::kBool;
      out->boolean = true;
      return true;
    }
    if (Word("False")) {
      out->kind = PyValue::kBool;
      return true;
    }
    if (Word("None")) {
      out->kind = PyValue::kNone;
      return true;
    }
    if ((c >= '0' && c <= '9') || c == '-' || c == '+') return Int(out);
    return FailAt("unexpected character");
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

struct DescrRow {
  DType type;
  char kind;
  int size;
};
constexpr DescrRow kDescr[] = {
    {DType::kBool, 'b', 1}, {DType::kU8, 'u', 1},  {DType::kI8, 'i', 1},  {DType::kI16, 'i', 2},
    {DType::kU16, 'u', 2},  {DType::kF16, 'f', 2}, {DType::kI32, 'i', 4}, {DType::kU32, 'u', 4},
    {DType::kF32, 'f', 4},  {DType::kI64, 'i', 8}, {DType::kU64, 'u', 8}, {DType::kF64, 'f', 8},
};

// Parses a descr string such as '<f4' into a DType.
Status ParseDescr(const std::string& descr, const std::string& subject, DType* out) {
  const std::string d = Printable(descr);  // for messages
  auto unsupported = [&](const std::string& why) {
    return Status::Unsupported(subject, fmt::format("dtype '{}': {}", d, why));
  };
  if (descr.size() < 2) return Status::InvalidInput(subject, fmt::format("malformed dtype descr '{}'", d));
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return Status::InvalidInput(subject, fmt::format("malformed dtype descr '{}' (no byte-order character)", d));
  }
  char kind = descr[1];
  std::string_view size_text = std::string_view(descr).substr(2);
  int size = 0;
  for (char c : size_text) {
    if (c < '0' || c > '9' || size > 1000) return unsupported("not a plain numeric dtype");
    size = size * 10 + (c - '0');
  }
  for (const auto& r : kDescr) {
    if (r.kind != kind || r.size != size) continue;
    if (order == '>' && size > 1)
      return unsupported(
          "big-endian arrays are not supported; convert with "
          "arr.astype(arr.dtype.newbyteorder('<'))");
    if (order == '|' && size > 1) {
      return Status::InvalidInput(subject, fmt::format("dtype '{}': '|' byte order on a multi-byte type", d));
    }
    *out = r.type;
    return Status::Ok();
  }
  return unsupported("only bool, int8-64, uint8-64 and float16/32/64 arrays are supported");
}

uint32_t LoadLe(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The dict exactly as numpy (>= 1.24) writes it: keys sorted, "'key': repr(value), " each, then room for the first
// axis to grow to 21 digits (numpy's GROWTH_AXIS_MAX_DIGITS, so a header can be patched in place).
std::string DictText(std::string_view descr, const std::vector<uint64_t>& shape) {
  std::string s;
  if (shape.size() == 1) {
    s = fmt::format("({},)", shape[0]);
  } else {
    s = fmt::format("({})", fmt::join(shape, ", "));
  }
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, s);
  if (!shape.empty()) {
    size_t digits = std::to_string(shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  return dict;
}

// magic + version + length + dict + padding spaces + '\n', as numpy's _wrap_header: the padding is
// 64 - (prefix + len(dict) + 1) % 64 (so 1..64 spaces) and the data starts 64-aligned. `min_total` (the streaming
// writer) pads further to keep a header length fixed when its count is patched in.
std::string HeaderBlock(const std::string& dict, size_t min_total = 0) {
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t total = prefix + dict.size() + 1 + (kAlign - (prefix + dict.size() + 1) % kAlign);
  if (total - prefix > 65535) {
    major = 2;
    prefix += 2;
    total = prefix + dict.size() + 1 + (kAlign - (prefix + dict.size() + 1) % kAlign);
  }
  total = std::max(total, min_total);
  uint64_t hlen = total - prefix;
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(static_cast<char>((hlen >> (8 * i)) & 0xff));
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out.push_back('\n');
  return out;
}

}  // namespace

std::optional<std::string_view> NpyDescr(DType t) {
  switch (t) {
    case DType::kBool:
      return "|b1";
    case DType::kU8:
      return "|u1";
    case DType::kI8:
      return "|i1";
    case DType::kI16:
      return "<i2";
    case DType::kU16:
      return "<u2";
    case DType::kF16:
      return "<f2";
    case DType::kI32:
      return "<i4";
    case DType::kU32:
      return "<u4";
    case DType::kF32:
      return "<f4";
    case DType::kI64:
      return "<i8";
    case DType::kU64:
      return "<u8";
    case DType::kF64:
      return "<f8";
    default:
      return std::nullopt;
  }
}

uint64_t NpyHeader::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

Result<NpyHeader> ParseNpyHeader(std::span<const uint8_t> file, const std::string& subject) {
  auto bad = [&](const std::string& m) { return Status::InvalidInput(subject, m); };
  if (file.size() < kMagicLen || std::memcmp(file.data(), kMagic, kMagicLen) != 0) {
    return bad("not a .npy file (missing the \\x93NUMPY magic)");
  }
  if (file.size() < kMagicLen + 2) return bad("truncated .npy header");
  NpyHeader h;
  h.major_version = file[6];
  if (h.major_version < 1 || h.major_version > 3 || file[7] != 0) {
    return Status::Unsupported(
        subject, fmt::format(".npy format version {}.{} (only 1.0, 2.0 and 3.0 are known)", file[6], file[7]));
  }
  int len_bytes = h.major_version == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + static_cast<size_t>(len_bytes);
  if (file.size() < prefix) return bad("truncated .npy header");
  uint64_t hlen = LoadLe(file.data() + 8, len_bytes);
  if (hlen > file.size() - prefix) {
    return bad(fmt::format("header length {} runs past the end of the file ({} bytes)", hlen, file.size()));
  }
  std::string_view text(reinterpret_cast<const char*>(file.data()) + prefix, static_cast<size_t>(hlen));
  if (h.major_version < 3) {
    for (char c : text)
      if (static_cast<unsigned char>(c) >= 0x80) return bad("header of a v1/v2 .npy file is not ASCII");
  }
  PyLiteralParser parser(text);
  PyValue dict;
  if (!parser.ParseDict(&dict)) return bad(parser.error());
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    const std::string& k = dict.keys[i];
    const PyValue& v = dict.items[i];
    if (k == "descr") {
      descr = &v;
    } else if (k == "fortran_order") {
      fortran = &v;
    } else if (k == "shape") {
      shape = &v;
    } else {
      return bad(fmt::format("unexpected key '{}' in the header dict", Printable(k)));
    }
  }
  if (!descr || !fortran || !shape) {
    return bad(fmt::format("header dict lacks '{}'", !descr ? "descr" : !fortran ? "fortran_order" : "shape"));
  }
  if (descr->kind == PyValue::kList)
    return Status::Unsupported(subject, "structured (record) arrays are not supported");
  if (descr->kind != PyValue::kStr) return bad("'descr' is not a string");
  if (fortran->kind != PyValue::kBool) return bad("'fortran_order' is not True or False");
  if (shape->kind != PyValue::kTuple) return bad("'shape' is not a tuple");
  h.descr = descr->str;
  LMKIT_RETURN_IF_ERROR(ParseDescr(h.descr, subject, &h.dtype));
  if (fortran->boolean) {
    return Status::Unsupported(subject, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  }
  uint64_t n = 1;
  for (const auto& d : shape->items) {
    if (d.kind != PyValue::kInt || (d.negative && d.integer != 0)) {
      return bad("'shape' entries must be non-negative integers");
    }
    h.shape.push_back(d.integer);
    if (d.integer != 0 && n > UINT64_MAX / d.integer) return bad("shape overflows a 64-bit element count");
    n *= d.integer;
  }
  if (n > UINT64_MAX / DTypeSize(h.dtype)) return bad("shape overflows a 64-bit byte count");
  h.data_offset = prefix + hlen;
  uint64_t need = n * DTypeSize(h.dtype);
  uint64_t have = file.size() - h.data_offset;
  if (have < need) {
    return bad(fmt::format("file is truncated: {} {} needs {} data bytes, {} present", h.descr,
                           fmt::format("({})", fmt::join(h.shape, ", ")), need, have));
  }
  if (have > need) return bad(fmt::format("{} unexpected bytes after the array data", have - need));
  return h;
}

Result<NpyFile> NpyFile::Parse(std::span<const uint8_t> file, const std::string& subject) {
  NpyFile f;
  LMKIT_ASSIGN_OR_RETURN(f.header_, ParseNpyHeader(file, subject));
  f.path_ = subject;
  f.data_ = file.subspan(f.header_.data_offset, f.header_.num_bytes());
  return f;
}

Result<NpyFile> NpyFile::Open(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(MappedFile map, MappedFile::Open(path));
  LMKIT_ASSIGN_OR_RETURN(NpyFile f, Parse({map.data(), map.size()}, path));
  f.map_ = std::move(map);  // the mapping address survives the move, so data_ stays valid
  return f;
}

Result<std::string> EncodeNpyHeader(DType dtype, const std::vector<uint64_t>& shape) {
  auto descr = NpyDescr(dtype);
  if (!descr) return Status::Unsupported("", fmt::format(".npy cannot hold {} arrays", DTypeName(dtype)));
  return HeaderBlock(DictText(*descr, shape));
}

Status WriteNpy(const std::string& path, DType dtype, const std::vector<uint64_t>& shape,
                std::span<const uint8_t> data) {
  auto header = EncodeNpyHeader(dtype, shape);
  if (!header.ok()) return header.status().WithSubject(path);
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return Status::InvalidInput(path, "shape overflows 64 bits");
    n *= d;
  }
  if (n > UINT64_MAX / DTypeSize(dtype) || n * DTypeSize(dtype) != data.size()) {
    return Status::InvalidInput(
        path, fmt::format("{} data bytes given for a {} array of {} elements", data.size(), DTypeName(dtype), n));
  }
  LMKIT_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path));
  LMKIT_RETURN_IF_ERROR(out.Write(*header));
  if (!data.empty()) LMKIT_RETURN_IF_ERROR(out.Write(data.data(), data.size()));
  return out.Commit();
}

Result<NpyStreamWriter> NpyStreamWriter::Create(const std::string& path, DType dtype) {
  auto descr = NpyDescr(dtype);
  if (!descr) return Status::Unsupported(path, fmt::format(".npy cannot hold {} arrays", DTypeName(dtype)));
  NpyStreamWriter w;
  w.dtype_ = dtype;
  // Reserve the header length the largest possible count needs, so patching the count in never moves the data.
  std::string header = HeaderBlock(DictText(*descr, {UINT64_MAX}));
  w.header_len_ = header.size();
  LMKIT_ASSIGN_OR_RETURN(w.out_, AtomicFile::Create(path));
  LMKIT_RETURN_IF_ERROR(w.out_.Write(header));
  return w;
}

Status NpyStreamWriter::Write(const void* data, size_t size) {
  size_t elem = DTypeSize(dtype_);
  if (size % elem != 0) {
    return Status::InvalidInput(out_.path(),
                                fmt::format("{} bytes is not a whole number of {} elements", size, DTypeName(dtype_)));
  }
  if (size == 0) return Status::Ok();
  LMKIT_RETURN_IF_ERROR(out_.Write(data, size));
  elements_ += size / elem;
  return Status::Ok();
}

Status NpyStreamWriter::Commit() {
  std::string header = HeaderBlock(DictText(*NpyDescr(dtype_), {elements_}), header_len_);
  if (header.size() != header_len_) return Status::Internal("npy stream header changed length");
  LMKIT_RETURN_IF_ERROR(out_.WriteAt(0, header.data(), header.size()));
  return out_.Commit();
}

}  // namespace lmkit::io
