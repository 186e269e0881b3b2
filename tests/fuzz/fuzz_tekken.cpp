// libFuzzer target: the tekken.json reader on arbitrary bytes must never crash, throw, hang or allocate without bound,
// and must explain every rejection in one line naming the file. An accepted file is tiktoken-style byte-level BPE:
// decoding the encoding of a fixed text and of the input's own bytes (as far as the pattern's matches cover them)
// must not crash, and every id must be a token.
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
  const std::string path = FuzzScratchDir() + "/tekken.json";
  WriteScratchFile(path, data, size);
  auto tok = ReadTekkenJson(path, {});
  if (!tok.ok()) {
    CheckError(tok.status());
    if (tok.status().subject().find(path) == std::string::npos &&
        tok.status().message().find(path) == std::string::npos)
      std::abort();
    return 0;
  }
  const std::string_view raw(reinterpret_cast<const char*>(data), std::min<size_t>(size, 512));
  for (std::string_view text : {std::string_view("Hello, world! It's 2026 -- naïve café\n\t  x<s>y 12345"), raw}) {
    Encoder enc(**tok, 64);
    std::vector<uint32_t> ids;
    enc.Encode(text, &ids);
    std::string back;
    lmkit::Status st = DecodeIds(**tok, ids.data(), ids.size(), 0, &back);
    if (!st.ok()) std::abort();  // every id the encoder gives is a token
    if (back.size() > text.size()) std::abort();
  }
  return 0;
}
