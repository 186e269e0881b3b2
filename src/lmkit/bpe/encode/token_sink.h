// Where EncodeStream writes its output: a TokenSink receives the ids in input order, on one thread.
//
// Contract: Write(ids, count) takes `count` ids; its errors are the sink's and stop the stream. Write16 takes ids
// that fit uint16 (MPI pieces of a uint16 output); the default widens them for Write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::bpe {

class TokenSink {
 public:
  virtual ~TokenSink() = default;
  virtual Status Write(const uint32_t* ids, size_t count) = 0;
  virtual Status Write16(const uint16_t* ids, size_t count);
};

// Collects the ids in memory.
class VectorSink final : public TokenSink {
 public:
  Status Write(const uint32_t* ids, size_t count) override {
    ids_.insert(ids_.end(), ids, ids + count);
    return Status::Ok();
  }
  std::vector<uint32_t>& ids() { return ids_; }

 private:
  std::vector<uint32_t> ids_;
};

}  // namespace lmkit::bpe
