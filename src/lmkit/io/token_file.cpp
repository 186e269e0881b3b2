#include "lmkit/io/token_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "lmkit/common/atomic_file.h"

namespace lmkit::io {

TokenFormat TokenFormatFromPath(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0 ? TokenFormat::kNpy : TokenFormat::kBin;
}

Result<TokenFile> TokenFile::Open(const std::string& path, TokenDtype bin_dtype) {
  TokenFile f;
  f.path_ = path;
  f.format_ = TokenFormatFromPath(path);
  if (f.format_ == TokenFormat::kBin) {
    if (bin_dtype == TokenDtype::kAuto) {
      return Status::InvalidArgument("token files hold uint16 or uint32 ids, not auto");
    }
    LMKIT_ASSIGN_OR_RETURN(f.map_, MappedFile::Open(path));
    size_t elem = TokenDtypeBytes(bin_dtype);
    if (f.map_.size() % elem != 0) {
      return Status::InvalidInput(path, fmt::format("size {} bytes is not a multiple of {} ({} token ids)",
                                                    f.map_.size(), elem, TokenDtypeName(bin_dtype)));
    }
    f.dtype_ = bin_dtype;
    f.data_ = f.map_.data();
    f.count_ = f.map_.size() / elem;
    return f;
  }
  LMKIT_ASSIGN_OR_RETURN(f.map_, MappedFile::Open(path));
  LMKIT_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader({f.map_.data(), f.map_.size()}, path));
  if (h.dtype != DType::kU16 && h.dtype != DType::kU32) {
    return Status::InvalidInput(path, fmt::format("token .npy must be uint16 or uint32, got '{}'", h.descr));
  }
  if (h.shape.size() != 1 && h.shape.size() != 2) {
    return Status::InvalidInput(
        path, fmt::format("token .npy must be 1-D (or 2-D, read flat), got {} dimensions", h.shape.size()));
  }
  f.dtype_ = h.dtype == DType::kU16 ? TokenDtype::kU16 : TokenDtype::kU32;
  f.count_ = h.num_elements();
  const uint8_t* p = f.map_.data() + h.data_offset;
  if (h.data_offset % DTypeSize(h.dtype) != 0) {
    f.copy_.assign(p, p + f.count_ * DTypeSize(h.dtype));
    p = f.copy_.data();  // new[] storage is aligned for any scalar type
  }
  f.data_ = p;
  return f;
}

std::span<const uint16_t> TokenFile::u16() const {
  if (dtype_ != TokenDtype::kU16) return {};
  return {reinterpret_cast<const uint16_t*>(data_), static_cast<size_t>(count_)};
}

std::span<const uint32_t> TokenFile::u32() const {
  if (dtype_ != TokenDtype::kU32) return {};
  return {reinterpret_cast<const uint32_t*>(data_), static_cast<size_t>(count_)};
}

struct TokenWriter::Impl {
  TokenFormat format = TokenFormat::kBin;
  AtomicFile bin;
  NpyStreamWriter npy;
};

TokenWriter::TokenWriter() = default;
TokenWriter::TokenWriter(TokenWriter&&) noexcept = default;
TokenWriter& TokenWriter::operator=(TokenWriter&&) noexcept = default;
TokenWriter::~TokenWriter() = default;

Result<TokenWriter> TokenWriter::Create(const std::string& path, TokenFormat format, TokenDtype dtype) {
  if (dtype == TokenDtype::kAuto) {
    return Status::InvalidArgument("token files hold uint16 or uint32 ids, not auto");
  }
  TokenWriter w;
  w.impl_ = std::make_unique<Impl>();
  w.impl_->format = format;
  w.dtype_ = dtype;
  if (format == TokenFormat::kBin) {
    LMKIT_ASSIGN_OR_RETURN(w.impl_->bin, AtomicFile::Create(path));
  } else {
    LMKIT_ASSIGN_OR_RETURN(w.impl_->npy,
                           NpyStreamWriter::Create(path, dtype == TokenDtype::kU16 ? DType::kU16 : DType::kU32));
  }
  return w;
}

Status TokenWriter::Append(std::span<const uint32_t> ids) {
  if (!impl_) return Status::Internal("TokenWriter used before Create");
  if (ids.empty()) return Status::Ok();
  const void* data = ids.data();
  size_t bytes = ids.size() * sizeof(uint32_t);
  if (dtype_ == TokenDtype::kU16) {
    narrow_.resize(ids.size());
    // Narrow everything and check once (the loop vectorises); find the offending id only on failure.
    uint32_t all = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      all |= ids[i];
      narrow_[i] = static_cast<uint16_t>(ids[i]);
    }
    if (all > 0xffffu) {
      const uint32_t bad = *std::find_if(ids.begin(), ids.end(), [](uint32_t id) { return id > 0xffffu; });
      return Status::InvalidInput(Path(), fmt::format("token id {} does not fit uint16", bad));
    }
    data = narrow_.data();
    bytes = ids.size() * sizeof(uint16_t);
  }
  return WriteRaw(data, bytes, ids.size());
}

Status TokenWriter::Append16(std::span<const uint16_t> ids) {
  if (!impl_) return Status::Internal("TokenWriter used before Create");
  if (ids.empty()) return Status::Ok();
  if (dtype_ == TokenDtype::kU16) return WriteRaw(ids.data(), ids.size() * sizeof(uint16_t), ids.size());
  wide_.assign(ids.begin(), ids.end());
  return WriteRaw(wide_.data(), wide_.size() * sizeof(uint32_t), ids.size());
}

Status TokenWriter::WriteRaw(const void* data, size_t bytes, size_t ids) {
  if (impl_->format == TokenFormat::kBin) {
    LMKIT_RETURN_IF_ERROR(impl_->bin.Write(data, bytes));
  } else {
    LMKIT_RETURN_IF_ERROR(impl_->npy.Write(data, bytes));
  }
  count_ += ids;
  return Status::Ok();
}

const std::string& TokenWriter::Path() const {
  return impl_->format == TokenFormat::kBin ? impl_->bin.path() : impl_->npy.path();
}

Status TokenWriter::Commit() {
  if (!impl_) return Status::Internal("TokenWriter used before Create");
  return impl_->format == TokenFormat::kBin ? impl_->bin.Commit() : impl_->npy.Commit();
}

}  // namespace lmkit::io
