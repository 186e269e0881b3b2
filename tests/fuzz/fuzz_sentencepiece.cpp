// libFuzzer target: the SentencePiece .model reader (a protobuf ModelProto) on arbitrary bytes must never crash,
// throw, hang or allocate without bound, and must explain every rejection in one line naming the file. An accepted
// model must encode a fixed text and the input's own bytes, and decode those ids, without crashing (decoding may fail
// with a one-line message: a model may lack byte fallback).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "scratch_dir.h"

using namespace lmkit::bpe;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = FuzzScratchDir() + "/tokenizer.model";
  WriteScratchFile(path, data, size);
  auto tok = ReadSentencePieceModel(path, {});
  if (!tok.ok()) {
    CheckError(tok.status());
    if (tok.status().subject().find(path) == std::string::npos &&
        tok.status().message().find(path) == std::string::npos)
      std::abort();
    return 0;
  }
  const std::string_view raw(reinterpret_cast<const char*>(data), std::min<size_t>(size, 512));
  for (std::string_view text :
       {std::string_view("Hello,  world! It's 2026 -- naïve café\n\t  x<s> \xE2\x96\x81y"), raw}) {
    Encoder enc(**tok, 64);
    std::vector<uint32_t> ids;
    enc.Encode(text, &ids);
    for (uint32_t id : ids)
      if (id >= (*tok)->id_limit()) std::abort();
    std::string back;
    lmkit::Status st = DecodeIds(**tok, ids.data(), ids.size(), 0, &back);
    if (!st.ok()) CheckError(st);
  }
  return 0;
}
