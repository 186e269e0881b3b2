// Weight tables of safetensors (through inspect.h), GGUF and ONNX files. GGUF (ggml's docs/gguf.md): "GGUF", u32
// version, u64 tensor count, u64 key/value count, the key/values (u64-length strings, u32 value types, arrays as u32
// type + u64 count), then per tensor: name, u32 n_dims, u64 dims (ne[0] first), u32 ggml type, u64 offset into the
// data section (aligned to general.alignment, default 32). ONNX (onnx.proto3): protobuf wire format; ModelProto field 7
// is the graph, GraphProto field 5 the initializers, TensorProto fields 1 dims, 2 data_type, 8 name, 9 raw_data.
#include "lmkit/io/weights_file.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "lmkit/common/mapped_file.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/inspect.h"

namespace lmkit::io {
namespace {

bool WfEndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool WfIsDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool WfIsFile(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// ---- GGUF ----------------------------------------------------------------------------------------------------------

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  uint32_t block;  // elements per block
  uint32_t bytes;  // bytes per block
};
// ggml's type table (ggml.c type_traits: blck_size, type_size) for the types GGUF files carry.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},       {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},    {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},    {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},    {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
    {26, "I32", 1, 4},      {27, "I64", 1, 8},      {28, "F64", 1, 8},      {30, "BF16", 1, 2},
};

class GgufReader {
 public:
  GgufReader(std::span<const uint8_t> d, const std::string& subject) : d_(d), subject_(subject) {}
  size_t pos() const { return pos_; }
  size_t left() const { return d_.size() - pos_; }
  Status Truncated(const char* what) const {
    return Status::InvalidInput(subject_, std::string("truncated GGUF header: ") + what + " at byte " +
                                              std::to_string(pos_) + " runs past the end");
  }
  Status Bytes(size_t n, const char* what) {
    if (n > left()) return Truncated(what);
    pos_ += n;
    return Status::Ok();
  }
  template <typename T>
  Status Int(T* v, const char* what) {
    if (sizeof(T) > left()) return Truncated(what);
    std::memcpy(v, d_.data() + pos_, sizeof(T));  // little-endian hosts only (as every lmkit reader)
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status Str(std::string* s, const char* what) {
    uint64_t n = 0;
    LMKIT_RETURN_IF_ERROR(Int(&n, what));
    if (n > left()) return Truncated(what);
    if (s) s->assign(reinterpret_cast<const char*>(d_.data() + pos_), n);
    pos_ += n;
    return Status::Ok();
  }

 private:
  std::span<const uint8_t> d_;
  const std::string& subject_;
  size_t pos_ = 0;
};

// Bytes of a fixed-size GGUF value type; 0 for string (8) and array (9); -1 for an unknown type.
int GgufValueSize(uint32_t t) {
  switch (t) {
    case 0:
    case 1:
    case 7:
      return 1;
    case 2:
    case 3:
      return 2;
    case 4:
    case 5:
    case 6:
      return 4;
    case 10:
    case 11:
    case 12:
      return 8;
    case 8:
    case 9:
      return 0;
    default:
      return -1;
  }
}

Status SkipGgufValue(GgufReader& r, uint32_t type, int depth, const std::string& key, const std::string& subject) {
  const int size = GgufValueSize(type);
  if (size < 0)
    return Status::InvalidInput(subject, "key '" + key + "': unknown GGUF value type " + std::to_string(type));
  if (size > 0) return r.Bytes(static_cast<size_t>(size), "a value");
  if (type == 8) return r.Str(nullptr, "a string value");
  if (depth > 2) return Status::InvalidInput(subject, "key '" + key + "': arrays nested more than 3 deep");
  uint32_t et = 0;
  uint64_t n = 0;
  LMKIT_RETURN_IF_ERROR(r.Int(&et, "an array type"));
  LMKIT_RETURN_IF_ERROR(r.Int(&n, "an array length"));
  const int es = GgufValueSize(et);
  if (es < 0) return Status::InvalidInput(subject, "key '" + key + "': unknown GGUF array type " + std::to_string(et));
  if (es > 0) {
    uint64_t total = 0;
    if (MulOverflows(n, static_cast<uint64_t>(es), &total) || total > r.left()) return r.Truncated("an array");
    return r.Bytes(static_cast<size_t>(total), "an array");
  }
  if (n > r.left() / 8) return r.Truncated("an array");  // every string or array element takes 8 bytes or more
  for (uint64_t i = 0; i < n; ++i) LMKIT_RETURN_IF_ERROR(SkipGgufValue(r, et, depth + 1, key, subject));
  return Status::Ok();
}

// ---- protobuf wire format ------------------------------------------------------------------------------------------

class ProtoWire {
 public:
  ProtoWire(std::span<const uint8_t> d) : p_(d.data()), end_(d.data() + d.size()), begin_(d.data()) {}
  bool done() const { return p_ == end_; }
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  bool Varint(uint64_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t b = *p_++;
      x |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = x;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }
  // The next field's number and wire type; false at a malformed key.
  bool Key(uint64_t* field, uint32_t* wire) {
    uint64_t k = 0;
    if (!Varint(&k) || (k >> 3) == 0) return false;
    *field = k >> 3;
    *wire = static_cast<uint32_t>(k & 7);
    return true;
  }
  bool Len(std::span<const uint8_t>* out) {
    uint64_t n = 0;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *out = {p_, static_cast<size_t>(n)};
    p_ += n;
    return true;
  }
  bool Skip(uint32_t wire) {
    uint64_t v = 0;
    std::span<const uint8_t> s;
    switch (wire) {
      case 0:
        return Varint(&v);
      case 1:
        return Advance(8);
      case 2:
        return Len(&s);
      case 5:
        return Advance(4);
      default:
        return false;  // groups (3, 4) are not used by ONNX; 6 and 7 do not exist
    }
  }

 private:
  bool Advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
};

struct OnnxType {
  uint64_t id;
  const char* name;
  uint32_t bits;  // per element
};
// onnx.proto TensorProto.DataType.
constexpr OnnxType kOnnxTypes[] = {
    {1, "FLOAT", 32},
    {2, "UINT8", 8},
    {3, "INT8", 8},
    {4, "UINT16", 16},
    {5, "INT16", 16},
    {6, "INT32", 32},
    {7, "INT64", 64},
    {9, "BOOL", 8},
    {10, "FLOAT16", 16},
    {11, "DOUBLE", 64},
    {12, "UINT32", 32},
    {13, "UINT64", 64},
    {14, "COMPLEX64", 64},
    {15, "COMPLEX128", 128},
    {16, "BFLOAT16", 16},
    {17, "FLOAT8E4M3FN", 8},
    {18, "FLOAT8E4M3FNUZ", 8},
    {19, "FLOAT8E5M2", 8},
    {20, "FLOAT8E5M2FNUZ", 8},
    {21, "UINT4", 4},
    {22, "INT4", 4},
    {23, "FLOAT4E2M1", 4},
};

Status OnnxTensor(std::span<const uint8_t> bytes, size_t index, const std::string& subject, WeightTensor* t) {
  ProtoWire w(bytes);
  const std::string where = "initializer " + std::to_string(index);
  auto bad = [&](const std::string& what) {
    return Status::InvalidInput(subject, where + (t->name.empty() ? "" : " '" + t->name + "'") + ": " + what);
  };
  uint64_t type = 0;
  bool has_raw = false;
  uint64_t raw = 0;
  while (!w.done()) {
    uint64_t f = 0;
    uint32_t wt = 0;
    if (!w.Key(&f, &wt)) return bad("malformed protobuf field at byte " + std::to_string(w.offset()));
    if (f == 1 && wt == 0) {
      uint64_t d = 0;
      if (!w.Varint(&d)) return bad("malformed dims");
      t->shape.push_back(d);
    } else if (f == 1 && wt == 2) {
      std::span<const uint8_t> packed;
      if (!w.Len(&packed)) return bad("malformed dims");
      ProtoWire pw(packed);
      while (!pw.done()) {
        uint64_t d = 0;
        if (!pw.Varint(&d)) return bad("malformed dims");
        t->shape.push_back(d);
      }
    } else if (f == 2 && wt == 0) {
      if (!w.Varint(&type)) return bad("malformed data_type");
    } else if (f == 8 && wt == 2) {
      std::span<const uint8_t> s;
      if (!w.Len(&s)) return bad("malformed name");
      t->name.assign(reinterpret_cast<const char*>(s.data()), s.size());
    } else if (f == 9 && wt == 2) {
      std::span<const uint8_t> s;
      if (!w.Len(&s)) return bad("malformed raw_data");
      has_raw = true;
      raw = s.size();
    } else if (!w.Skip(wt)) {
      return bad("malformed protobuf field " + std::to_string(f) + " at byte " + std::to_string(w.offset()));
    }
  }
  const OnnxType* ty = nullptr;
  for (const auto& o : kOnnxTypes)
    if (o.id == type) ty = &o;
  if (!ty) return bad(type == 8 ? "string tensors have no fixed size" : "unknown data_type " + std::to_string(type));
  t->dtype = ty->name;
  uint64_t n = 1;
  for (uint64_t d : t->shape)
    if (static_cast<int64_t>(d) < 0 || MulOverflows(n, d, &n)) return bad("dims overflow or are negative");
  t->elements = n;
  uint64_t bits = 0;
  if (MulOverflows(n, ty->bits, &bits)) return bad("dims overflow");
  t->bytes = bits / 8 + (bits % 8 != 0);
  if (has_raw && raw != t->bytes)
    return bad("raw_data holds " + std::to_string(raw) + " bytes; dims x " + ty->name + " need " +
               std::to_string(t->bytes));
  return Status::Ok();
}

void SumTensors(WeightsSummary* s) {
  for (const auto& t : s->tensors) s->parameters += t.elements, s->bytes += t.bytes;
}

Result<WeightsSummary> ReadMapped(const std::string& path, bool gguf) {
  LMKIT_ASSIGN_OR_RETURN(MappedFile f, MappedFile::Open(path));
  auto r = gguf ? ParseGguf({f.data(), f.size()}, path) : ParseOnnx({f.data(), f.size()}, path);
  if (r.ok()) r->path = path;
  return r;
}

// The one .gguf or .onnx file of a directory; "" when there is none or more than one.
std::string OnlyFileWith(const std::string& dir, const char* ext) {
  std::string found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string p = e.path().string();
    if (!WfEndsWith(p, ext) || !WfIsFile(p)) continue;
    if (!found.empty()) return "";
    found = p;
  }
  return found;
}

}  // namespace

Result<WeightsSummary> ParseGguf(std::span<const uint8_t> file, const std::string& subject) {
  if (file.size() < 4 || std::memcmp(file.data(), "GGUF", 4) != 0)
    return Status::InvalidInput(subject, "not a GGUF file (missing the GGUF magic)");
  GgufReader r(file.subspan(4), subject);
  uint32_t version = 0;
  uint64_t n_tensors = 0, n_kv = 0;
  LMKIT_RETURN_IF_ERROR(r.Int(&version, "the version"));
  if (version != 2 && version != 3)
    return Status::InvalidInput(subject, "GGUF version " + std::to_string(version) + " is not supported (2 or 3)");
  LMKIT_RETURN_IF_ERROR(r.Int(&n_tensors, "the tensor count"));
  LMKIT_RETURN_IF_ERROR(r.Int(&n_kv, "the key/value count"));
  if (n_kv > r.left() / 12 || n_tensors > r.left() / 24)
    return Status::InvalidInput(subject, "GGUF counts (" + std::to_string(n_tensors) + " tensors, " +
                                             std::to_string(n_kv) + " keys) exceed what the file can hold");
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    uint32_t type = 0;
    LMKIT_RETURN_IF_ERROR(r.Str(&key, "a key"));
    LMKIT_RETURN_IF_ERROR(r.Int(&type, "a value type"));
    if (key == "general.alignment" && type == 4) {
      uint32_t a = 0;
      LMKIT_RETURN_IF_ERROR(r.Int(&a, "general.alignment"));
      if (a == 0 || (a & (a - 1)) != 0)
        return Status::InvalidInput(subject, "general.alignment " + std::to_string(a) + " is not a power of two");
      alignment = a;
      continue;
    }
    LMKIT_RETURN_IF_ERROR(SkipGgufValue(r, type, 0, key, subject));
  }
  WeightsSummary s;
  s.format = "gguf";
  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    WeightTensor t;
    uint32_t n_dims = 0, type = 0;
    uint64_t offset = 0;
    LMKIT_RETURN_IF_ERROR(r.Str(&t.name, "a tensor name"));
    LMKIT_RETURN_IF_ERROR(r.Int(&n_dims, "a tensor's dimension count"));
    auto bad = [&](const std::string& what) {
      return Status::InvalidInput(subject, "tensor '" + t.name + "': " + what);
    };
    if (n_dims == 0 || n_dims > 4) return bad(std::to_string(n_dims) + " dimensions (GGUF has 1 to 4)");
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      LMKIT_RETURN_IF_ERROR(r.Int(&ne, "a tensor dimension"));
      if (MulOverflows(n, ne, &n)) return bad("dimensions overflow");
      t.shape.push_back(ne);
    }
    LMKIT_RETURN_IF_ERROR(r.Int(&type, "a tensor type"));
    LMKIT_RETURN_IF_ERROR(r.Int(&offset, "a tensor offset"));
    const GgmlTypeInfo* ty = nullptr;
    for (const auto& g : kGgmlTypes)
      if (g.id == type) ty = &g;
    if (!ty) return bad("ggml type " + std::to_string(type) + " is not one lmkit knows the size of");
    if (t.shape[0] % ty->block != 0)
      return bad("row length " + std::to_string(t.shape[0]) + " is not a multiple of " + ty->name + "'s block of " +
                 std::to_string(ty->block));
    if (offset % alignment != 0) return bad("offset " + std::to_string(offset) + " is not aligned");
    t.dtype = ty->name;
    t.elements = n;
    if (MulOverflows(n / ty->block, ty->bytes, &t.bytes)) return bad("size overflows");
    offsets.push_back(offset);
    s.tensors.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment; every tensor must lie inside the file.
  const uint64_t header = 4 + r.pos();
  const uint64_t data_start = (header + alignment - 1) / alignment * alignment;
  const uint64_t data_bytes = file.size() > data_start ? file.size() - data_start : 0;
  for (size_t i = 0; i < s.tensors.size(); ++i)
    if (offsets[i] > data_bytes || s.tensors[i].bytes > data_bytes - offsets[i])
      return Status::InvalidInput(subject, "tensor '" + s.tensors[i].name + "' (" + std::to_string(s.tensors[i].bytes) +
                                               " bytes at offset " + std::to_string(offsets[i]) +
                                               ") runs past the end of the file");
  SumTensors(&s);
  return s;
}

Result<WeightsSummary> ParseOnnx(std::span<const uint8_t> file, const std::string& subject) {
  ProtoWire w(file);
  WeightsSummary s;
  s.format = "onnx";
  bool graph = false;
  while (!w.done()) {
    uint64_t f = 0;
    uint32_t wt = 0;
    if (!w.Key(&f, &wt))
      return Status::InvalidInput(subject,
                                  "not an ONNX model: malformed protobuf at byte " + std::to_string(w.offset()));
    if (f != 7 || wt != 2) {
      if (!w.Skip(wt))
        return Status::InvalidInput(subject, "not an ONNX model: malformed protobuf field " + std::to_string(f) +
                                                 " at byte " + std::to_string(w.offset()));
      continue;
    }
    std::span<const uint8_t> g;
    if (!w.Len(&g)) return Status::InvalidInput(subject, "ONNX graph runs past the end of the file");
    graph = true;
    ProtoWire gw(g);
    while (!gw.done()) {
      uint64_t gf = 0;
      uint32_t gwt = 0;
      if (!gw.Key(&gf, &gwt))
        return Status::InvalidInput(subject, "ONNX graph: malformed protobuf at byte " + std::to_string(gw.offset()));
      if (gf == 5 && gwt == 2) {
        std::span<const uint8_t> tb;
        if (!gw.Len(&tb)) return Status::InvalidInput(subject, "ONNX graph: an initializer runs past its graph");
        WeightTensor t;
        LMKIT_RETURN_IF_ERROR(OnnxTensor(tb, s.tensors.size(), subject, &t));
        s.tensors.push_back(std::move(t));
      } else if (!gw.Skip(gwt)) {
        return Status::InvalidInput(subject, "ONNX graph: malformed protobuf field " + std::to_string(gf));
      }
    }
  }
  if (!graph) return Status::InvalidInput(subject, "not an ONNX model: no graph (ModelProto field 7)");
  SumTensors(&s);
  return s;
}

ModelFileKind ClassifyModelFile(const std::string& path, std::string* why) {
  if (WfIsDir(path)) {
    if (WfIsFile(path + "/config.json")) return ModelFileKind::kConfig;
    if (WfIsFile(path + "/model.safetensors") || WfIsFile(path + "/model.safetensors.index.json") ||
        !OnlyFileWith(path, ".gguf").empty() || !OnlyFileWith(path, ".onnx").empty())
      return ModelFileKind::kWeights;
    *why =
        "a directory with no config.json, model.safetensors, model.safetensors.index.json, or single .gguf or "
        ".onnx file";
    return ModelFileKind::kNeither;
  }
  if (WfEndsWith(path, ".onnx") || WfEndsWith(path, ".gguf") || WfEndsWith(path, ".safetensors"))
    return ModelFileKind::kWeights;
  auto f = MappedFile::Open(path);
  if (!f.ok()) return ModelFileKind::kConfig;  // let the config reader report the opening error
  const uint8_t* d = f->data();
  const size_t n = f->size();
  if (n >= 4 && std::memcmp(d, "GGUF", 4) == 0) return ModelFileKind::kWeights;
  if (n >= 9) {
    uint64_t len = 0;
    std::memcpy(&len, d, 8);
    if (len <= n - 8 && d[8] == '{') return ModelFileKind::kWeights;  // safetensors: header length, then JSON
  }
  size_t i = 0;
  while (i < n && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t')) ++i;
  if (i < n && d[i] == '{') return ModelFileKind::kConfig;
  *why = "neither a model config (a JSON object) nor weights (safetensors, GGUF or .onnx)";
  return ModelFileKind::kNeither;
}

Result<WeightsSummary> ReadWeights(const std::string& path) {
  std::string file = path;
  if (WfIsDir(path) && !WfIsFile(path + "/model.safetensors") && !WfIsFile(path + "/model.safetensors.index.json")) {
    file = OnlyFileWith(path, ".gguf");
    if (file.empty()) file = OnlyFileWith(path, ".onnx");
    if (file.empty()) return Status::InvalidInput(path, "no weights found in this directory");
  }
  if (WfEndsWith(file, ".onnx")) return ReadMapped(file, false);
  {
    auto f = MappedFile::Open(file);
    if (!f.ok() && !WfIsDir(file)) return f.status();
    if (f.ok() && f->size() >= 4 && std::memcmp(f->data(), "GGUF", 4) == 0) return ReadMapped(file, true);
  }
  if (WfEndsWith(file, ".gguf")) return ReadMapped(file, true);
  InspectRequest o;
  o.path = file;
  LMKIT_ASSIGN_OR_RETURN(InspectResult rep, InspectTensors(o, nullptr));
  WeightsSummary s;
  s.path = path;
  s.format = rep.format;
  for (const auto& t : rep.tensors)
    s.tensors.push_back({t.name, std::string(DTypeName(t.dtype)), t.shape, t.elements, t.bytes});
  SumTensors(&s);
  return s;
}

}  // namespace lmkit::io
