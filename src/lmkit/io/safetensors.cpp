#include "lmkit/io/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "lmkit/common/json.h"

namespace lmkit::io {
namespace {

// Thrown out of the nlohmann parse callback to abort parsing with our own message; caught in ParseHeaderJson.
struct HeaderDefect {
  std::string message;
};

constexpr int kMaxJsonDepth = 16;  // a valid header nests 3 deep; deeper input is rejected before it costs anything

std::string Quote(std::string_view s) {
  // Names go into one-line messages: keep them readable and on one line.
  std::string out = "'";
  for (unsigned char c : s.substr(0, 200)) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 200) out += "...";
  return out + "'";
}

std::string ShapeString(const std::vector<uint64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Product of the shape times `elem`, or false on 64-bit overflow.
bool CheckedBytes(const std::vector<uint64_t>& shape, uint64_t elem, uint64_t* elements, uint64_t* bytes) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) {
      // A zero dimension later would make the product 0; the spec still calls such a shape invalid, and so do we.
      return false;
    }
    n *= d;
  }
  if (n > UINT64_MAX / elem) return false;
  *elements = n;
  *bytes = n * elem;
  return true;
}

Result<Json> ParseHeaderJson(std::string_view text, const std::string& subject) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto cb = [&](int depth, Json::parse_event_t ev, Json& parsed) -> bool {
    if (depth > kMaxJsonDepth)
      throw HeaderDefect{fmt::format("header JSON nests deeper than {} levels", kMaxJsonDepth)};
    switch (ev) {
      case Json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::key: {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (!keys.empty() && !keys.back().insert(k).second) {
          if (depth == 1) throw HeaderDefect{"duplicate tensor name " + Quote(k)};
          throw HeaderDefect{"duplicate key " + Quote(k) + " in the header"};
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const HeaderDefect& d) {
    return Status::InvalidInput(subject, d.message);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::InvalidInput(subject,
                                fmt::format("header is not valid JSON (error at byte {} of the header)", e.byte));
  } catch (const std::exception& e) {
    return Status::InvalidInput(subject, "header is not valid JSON");
  }
}

Status ParseTensorEntry(const std::string& name, const Json& v, const std::string& subject, TensorInfo* t) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidInput(subject, "tensor " + Quote(name) + ": " + what);
  };
  if (!v.is_object()) return bad("entry is not a JSON object");
  const Json* dtype = nullptr;
  const Json* shape = nullptr;
  const Json* offsets = nullptr;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() == "dtype") {
      dtype = &it.value();
    } else if (it.key() == "shape") {
      shape = &it.value();
    } else if (it.key() == "data_offsets") {
      offsets = &it.value();
    } else {
      return bad("unexpected key " + Quote(it.key()));
    }
  }
  if (!dtype) return bad("missing \"dtype\"");
  if (!shape) return bad("missing \"shape\"");
  if (!offsets) return bad("missing \"data_offsets\"");
  if (!dtype->is_string()) return bad("dtype is not a string");
  auto dt = ParseDType(dtype->get_ref<const std::string&>());
  if (!dt) return bad("unknown dtype " + Quote(dtype->get_ref<const std::string&>()));
  t->name = name;
  t->dtype = *dt;
  if (!shape->is_array()) return bad("shape is not an array");
  t->shape.clear();
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned()) return bad("shape entries must be non-negative integers");
    t->shape.push_back(d.get<uint64_t>());
  }
  if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    return bad("data_offsets must be two non-negative integers");
  }
  t->begin = (*offsets)[0].get<uint64_t>();
  t->end = (*offsets)[1].get<uint64_t>();
  if (t->begin > t->end) return bad(fmt::format("data_offsets [{}, {}) end before they begin", t->begin, t->end));
  uint64_t elements = 0, bytes = 0;
  if (!CheckedBytes(t->shape, DTypeSize(t->dtype), &elements, &bytes)) {
    return bad(fmt::format("shape {} overflows a 64-bit byte count", ShapeString(t->shape)));
  }
  if (bytes != t->end - t->begin) {
    return bad(fmt::format("data_offsets [{}, {}) hold {} bytes but {} {} needs {}", t->begin, t->end,
                           t->end - t->begin, DTypeName(t->dtype), ShapeString(t->shape), bytes));
  }
  return Status::Ok();
}

}  // namespace

uint64_t TensorInfo::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

Result<SafetensorsFile> SafetensorsFile::Parse(std::span<const uint8_t> file, const std::string& subject) {
  if (file.size() < 8) {
    return Status::InvalidInput(subject,
                                fmt::format("file is {} bytes, too short for the 8-byte header length", file.size()));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[static_cast<size_t>(i)];
  if (n > kSafetensorsMaxHeaderBytes) {
    return Status::InvalidInput(
        subject, fmt::format("header length {} exceeds the limit of {} bytes", n, kSafetensorsMaxHeaderBytes));
  }
  if (n > file.size() - 8) {
    return Status::InvalidInput(
        subject, fmt::format("header length {} runs past the end of the file ({} bytes)", n, file.size()));
  }
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<size_t>(n));
  if (text.empty() || text.front() != '{') return Status::InvalidInput(subject, "header is not a JSON object");
  LMKIT_ASSIGN_OR_RETURN(Json header, ParseHeaderJson(text, subject));
  if (!header.is_object()) return Status::InvalidInput(subject, "header is not a JSON object");

  SafetensorsFile f;
  f.path_ = subject;
  f.header_bytes_ = n;
  f.file_bytes_ = file.size();
  f.data_ = file.data() + 8 + n;
  const uint64_t buffer = file.size() - 8 - n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) return Status::InvalidInput(subject, "__metadata__ is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) {
          return Status::InvalidInput(subject, "__metadata__ value of " + Quote(m.key()) + " is not a string");
        }
        f.metadata_.emplace_back(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    TensorInfo t;
    LMKIT_RETURN_IF_ERROR(ParseTensorEntry(it.key(), it.value(), subject, &t));
    f.tensors_.push_back(std::move(t));
  }
  std::stable_sort(f.tensors_.begin(), f.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : f.tensors_) {
    if (t.begin < pos) {
      return Status::InvalidInput(
          subject, fmt::format("tensor {}: data_offsets [{}, {}) overlap tensor {} [{}, {})", Quote(t.name), t.begin,
                               t.end, Quote(prev->name), prev->begin, prev->end));
    }
    if (t.begin > pos) {
      if (prev == nullptr) {
        return Status::InvalidInput(subject, fmt::format("tensor {}: data_offsets [{}, {}) leave a gap [0, {}) at the "
                                                         "start of the data buffer",
                                                         Quote(t.name), t.begin, t.end, t.begin));
      }
      return Status::InvalidInput(
          subject, fmt::format("gap [{}, {}) in the data buffer between tensor {} and tensor {}", pos, t.begin,
                               Quote(prev->name), Quote(t.name)));
    }
    if (t.end > buffer) {
      return Status::InvalidInput(subject, fmt::format("tensor {}: data_offsets [{}, {}) run past the end of the data "
                                                       "buffer ({} bytes)",
                                                       Quote(t.name), t.begin, t.end, buffer));
    }
    pos = t.end;
    prev = &t;
  }
  if (pos != buffer) {
    return Status::InvalidInput(
        subject,
        fmt::format("{} bytes at the end of the data buffer [{}, {}) belong to no tensor", buffer - pos, pos, buffer));
  }
  return f;
}

Result<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(MappedFile map, MappedFile::Open(path));
  LMKIT_ASSIGN_OR_RETURN(SafetensorsFile f, Parse({map.data(), map.size()}, path));
  f.map_ = std::move(map);  // moving a MappedFile keeps the mapping address, so data_ stays valid
  return f;
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

uint64_t SafetensorsFile::parameter_count() const {
  uint64_t n = 0;
  for (const auto& t : tensors_) n += t.num_elements();
  return n;
}

// ---- writer
// -----------------------------------------------------------------------------------------------------------

Result<std::string> EncodeSafetensorsHeader(const std::vector<TensorSpec>& tensors, const Metadata& metadata,
                                            std::vector<TensorInfo>* infos) {
  Json j = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) {
      if (m.contains(k)) return Status::InvalidInput("", "duplicate __metadata__ key " + Quote(k));
      m[k] = v;
    }
    j["__metadata__"] = std::move(m);
  }
  std::vector<TensorInfo> out;
  uint64_t pos = 0;
  for (const auto& s : tensors) {
    if (s.name.empty()) return Status::InvalidInput("", "empty tensor name");
    if (s.name == "__metadata__") return Status::InvalidInput("", "a tensor may not be named '__metadata__'");
    if (j.contains(s.name)) return Status::InvalidInput("", "duplicate tensor name " + Quote(s.name));
    uint64_t elements = 0, bytes = 0;
    if (!CheckedBytes(s.shape, DTypeSize(s.dtype), &elements, &bytes) || pos > UINT64_MAX - bytes) {
      return Status::InvalidInput("", "tensor " + Quote(s.name) + ": size overflows 64 bits");
    }
    TensorInfo t{s.name, s.dtype, s.shape, pos, pos + bytes};
    pos += bytes;
    j[s.name] = {{"dtype", DTypeName(s.dtype)}, {"shape", s.shape}, {"data_offsets", {t.begin, t.end}}};
    out.push_back(std::move(t));
  }
  std::string text;
  try {
    text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const std::exception&) {
    return Status::InvalidInput("", "a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kSafetensorsMaxHeaderBytes) {
    return Status::InvalidInput(
        "", fmt::format("header would be {} bytes, over the {}-byte limit", text.size(), kSafetensorsMaxHeaderBytes));
  }
  std::string block(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) block[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  block += text;
  if (infos) *infos = std::move(out);
  return block;
}

Result<SafetensorsWriter> SafetensorsWriter::Create(const std::string& path, const std::vector<TensorSpec>& tensors,
                                                    const Metadata& metadata) {
  SafetensorsWriter w;
  auto header = EncodeSafetensorsHeader(tensors, metadata, &w.infos_);
  if (!header.ok()) return header.status().WithSubject(path);
  LMKIT_ASSIGN_OR_RETURN(w.out_, AtomicFile::Create(path));
  LMKIT_RETURN_IF_ERROR(w.out_.Write(*header));
  w.total_ = w.infos_.empty() ? 0 : w.infos_.back().end;
  return w;
}

Status SafetensorsWriter::Write(const void* data, size_t size) {
  if (size > total_ - written_) {
    return Status::InvalidInput(
        out_.path(), fmt::format("{} more bytes written than the {} declared", size - (total_ - written_), total_));
  }
  if (size == 0) return Status::Ok();  // empty tensors may come with a null pointer
  LMKIT_RETURN_IF_ERROR(out_.Write(data, size));
  written_ += size;
  return Status::Ok();
}

Result<SafetensorsWriter::Region> SafetensorsWriter::Reserve(uint64_t size) {
  if (size > total_ - written_) {
    return Status::InvalidInput(
        out_.path(), fmt::format("{} more bytes reserved than the {} declared", size - (total_ - written_), total_));
  }
  LMKIT_ASSIGN_OR_RETURN(uint64_t offset, out_.ReserveRegion(size));
  written_ += size;
  return Region{&out_, offset, size};
}

Status SafetensorsWriter::WriteRegion(const Region& region, uint64_t pos, const void* data, size_t size) {
  if (pos > region.size || size > region.size - pos)
    return Status::Internal(
        fmt::format("WriteRegion: [{}, {}) outside a region of {} bytes", pos, pos + size, region.size));
  return region.file->WriteRegion(region.offset + pos, data, size);
}

Status SafetensorsWriter::WriteTensor(size_t index, std::span<const uint8_t> bytes) {
  if (index >= infos_.size()) return Status::Internal(fmt::format("WriteTensor: no tensor {}", index));
  const TensorInfo& t = infos_[index];
  if (written_ != t.begin) {
    return Status::InvalidInput(out_.path(), "tensor " + Quote(t.name) + " written out of declaration order");
  }
  if (bytes.size() != t.num_bytes()) {
    return Status::InvalidInput(out_.path(),
                                fmt::format("tensor {}: {} bytes given, {} {} needs {}", Quote(t.name), bytes.size(),
                                            DTypeName(t.dtype), ShapeString(t.shape), t.num_bytes()));
  }
  return Write(bytes.data(), bytes.size());
}

size_t SafetensorsWriter::current_tensor() const {
  for (size_t i = 0; i < infos_.size(); ++i)
    if (written_ < infos_[i].end) return i;
  return infos_.size();
}

Status SafetensorsWriter::Commit() {
  if (written_ != total_) {
    return Status::InvalidInput(out_.path(), fmt::format("only {} of {} data bytes written (tensor {} incomplete)",
                                                         written_, total_, Quote(infos_[current_tensor()].name)));
  }
  return out_.Commit();
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorData>& tensors, const Metadata& metadata) {
  std::vector<TensorSpec> specs;
  specs.reserve(tensors.size());
  for (const auto& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
  LMKIT_ASSIGN_OR_RETURN(SafetensorsWriter w, SafetensorsWriter::Create(path, specs, metadata));
  for (size_t i = 0; i < tensors.size(); ++i) LMKIT_RETURN_IF_ERROR(w.WriteTensor(i, tensors[i].bytes));
  return w.Commit();
}

}  // namespace lmkit::io
