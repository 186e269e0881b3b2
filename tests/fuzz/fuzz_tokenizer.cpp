// libFuzzer target: the tokenizer file readers (tiktoken ranks, vocab.json + merges.txt, tokenizer.json) on arbitrary
// bytes must never crash, throw, hang or allocate without bound, and must explain every rejection in one line naming
// the file. The first input byte picks the format; for vocab.json + merges.txt the rest is split at the first "\n@@\n"
// (vocab before, merges after). An accepted tokenizer must be lossless: decoding the encoding of a fixed text and of
// the input's own bytes gives those bytes back, with and without its special tokens (tokenizer.json pipelines that are
// not lossless: encoding and decoding terminate without crashing).
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "scratch_dir.h"

using namespace lmkit::bpe;

namespace {

void Put(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) std::abort();
}

void RoundTrip(const Tokenizer& tok, std::string_view text) {
  Encoder enc(tok, 64);
  std::vector<uint32_t> ids;
  enc.Encode(text, &ids);
  std::string back;
  if (!DecodeIds(tok, ids.data(), ids.size(), 0, &back).ok() || back != text) std::abort();
  ids.clear();
  enc.EncodeOrdinary(text, &ids);
  back.clear();
  if (!DecodeIds(tok, ids.data(), ids.size(), 0, &back).ok() || back != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  TokenizerOptions options;
  options.pattern = PretokPattern::kGpt2;  // a tiktoken file named x.tiktoken says nothing about its pattern
  lmkit::Result<std::unique_ptr<Tokenizer>> tok = lmkit::Status::Internal("unset");
  std::string subject;
  switch (data[0] % 3) {
    case 0:
      subject = FuzzScratchDir() + "/ranks.tiktoken";
      Put(subject, body);
      tok = ReadTiktoken(subject, options);
      break;
    case 1: {
      const size_t cut = body.find("\n@@\n");
      subject = FuzzScratchDir() + "/vocab.json";
      Put(subject, body.substr(0, cut));
      Put(FuzzScratchDir() + "/merges.txt", cut == std::string_view::npos ? std::string_view() : body.substr(cut + 4));
      tok = ReadVocabMerges(subject, FuzzScratchDir() + "/merges.txt", options);
      break;
    }
    default:
      subject = FuzzScratchDir() + "/tokenizer.json";
      Put(subject, body);
      tok = ReadHfTokenizerJson(subject, options);
      break;
  }
  if (!tok.ok()) {
    const lmkit::Status& st = tok.status();
    if (st.message().empty() || st.ToString().find('\n') != std::string::npos) std::abort();
    // The file is named, in the subject or (for errors about one special token) in the message.
    const std::string& dir = FuzzScratchDir();
    if (st.subject().find(dir) == std::string::npos && st.message().find(dir) == std::string::npos) std::abort();
    return 0;
  }
  // A tokenizer.json pipeline may normalize, drop or rewrite text (tokenizer.h lossless()): then encoding must still
  // terminate, without crashing, and decoding its ids must succeed or fail with a one-line message.
  const std::string_view raw(reinterpret_cast<const char*>(data), std::min<size_t>(size, 512));
  // A byte-level vocabulary may lack bytes (Falcon's control bytes): they are dropped, as Hugging Face does.
  bool every_byte = true;
  for (int b = 0; b < 256; ++b) every_byte = every_byte && (*tok)->ByteId(static_cast<uint8_t>(b)) != kNoId;
  if (!(*tok)->lossless() || !every_byte) {
    for (std::string_view text :
         {std::string_view("Hello, world! It's 2026 -- naïve café\n\t  x<|endoftext|>y"), raw}) {
      Encoder enc(**tok, 64);
      std::vector<uint32_t> ids;
      enc.Encode(text, &ids);
      std::string back;
      lmkit::Status st = DecodeIds(**tok, ids.data(), ids.size(), 0, &back);
      if (!st.ok() && st.ToString().find('\n') != std::string::npos) std::abort();
    }
    return 0;
  }
  RoundTrip(**tok, "Hello, world! It's 2026 -- naïve café\n\t  x<|endoftext|>y");
  RoundTrip(**tok, raw);
  return 0;
}
