// libFuzzer target: the token-id readers -- io::TokenFile (.bin uint16/uint32, .npy), dataload's OpenTokenShards and
// `bpe decode`'s input side (.bin, .npy and JSON id arrays, through DecodeFile with a 256-token tokenizer) -- on
// arbitrary bytes must never crash, hang or read out of bounds, must explain every rejection in one line, and what
// they accept must agree: the id count times the id size is the data size, and a decoded file gives one byte per id.
// The first input byte picks the reader; the rest is the file.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/dataload/token_shards.h"
#include "lmkit/io/token_file.h"
#include "scratch_dir.h"

using namespace lmkit;

namespace {

// A tokenizer of the 256 bytes and no merges, written once: every id below 256 decodes to one byte.
const std::string& ByteTokenizer() {
  static const std::string dir = [] {
    const std::string d = FuzzScratchDir() + "/bytes-tokenizer";
    std::string cmd = "mkdir -p " + d;
    if (std::system(cmd.c_str()) != 0) std::abort();
    std::string vocab = "{";
    for (int b = 0; b < 256; ++b) {
      const std::string tok = bpe::BytesToPrintable(std::string(1, static_cast<char>(b)));
      std::string quoted = "\"";
      for (char c : tok) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
      }
      vocab += (b ? ", " : "") + quoted + "\": " + std::to_string(b);
    }
    vocab += "}";
    std::ofstream(d + "/vocab.json") << vocab;
    std::ofstream(d + "/merges.txt") << "#version: 0.2\n";
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 6;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  const char* ext = mode == 2 || mode == 4 ? ".npy" : (mode == 5 ? ".json" : ".bin");
  const std::string path = FuzzScratchDir() + "/ids" + ext;
  WriteScratchFile(path, body, n);
  switch (mode) {
    case 0:
    case 1:
    case 2: {
      auto f = io::TokenFile::Open(path, mode == 1 ? io::TokenDtype::kU32 : io::TokenDtype::kU16);
      if (!f.ok()) {
        CheckError(f.status());
        break;
      }
      if (f->bytes().size() != f->size() * io::TokenDtypeBytes(f->dtype())) std::abort();
      if (f->format() == io::TokenFormat::kBin && f->bytes().size() != n) std::abort();
      uint64_t sum = 0;
      for (uint64_t i = 0; i < f->size(); ++i) sum += (*f)[i];
      (void)sum;
      auto shards = dataload::OpenTokenShards({path}, io::TokenDtype::kAuto, 0);
      if (!shards.ok()) {
        CheckError(shards.status());
        break;
      }
      const auto& s = (*shards)[0];
      if (s.data_offset + s.tokens * s.token_bytes > s.file_bytes || s.file_bytes != n) std::abort();
      break;
    }
    default: {
      bpe::DecodeRequest req;
      req.tokenizer = ByteTokenizer();
      req.input = path;
      req.output = FuzzScratchDir() + "/decoded.txt";
      auto rep = bpe::DecodeFile(req);
      if (!rep.ok()) {
        CheckError(rep.status());
        break;
      }
      if (rep->bytes != rep->tokens) std::abort();
      break;
    }
  }
  return 0;
}
