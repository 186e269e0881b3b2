// The harness the native-format fuzz targets share (fuzz_sentencepiece.cpp, fuzz_tekken.cpp): a reader that takes a
// path, on arbitrary bytes, must never crash, throw, hang or allocate without bound, and must explain every rejection
// in one line naming the file. An accepted tokenizer must encode a fixed text and the input's own bytes to ids below
// its id_limit(), and decoding those ids must not crash.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "scratch_dir.h"

struct NativeReaderFuzz {
  const char* file_name;  // in the scratch directory; some readers look at the name
  lmkit::Result<std::unique_ptr<lmkit::bpe::Tokenizer>> (*read)(const std::string&,
                                                                const lmkit::bpe::TokenizerOptions&);
  std::string_view fixed_text;
  // True: every id the encoder gives is a token, so decoding succeeds and (byte-level, nothing added) gives at most
  // the text's bytes back. False: decoding may fail with a one-line message (e.g. a model without byte fallback).
  bool decode_must_succeed;
};

inline int FuzzNativeReader(const NativeReaderFuzz& f, const uint8_t* data, size_t size) {
  using namespace lmkit::bpe;
  const std::string path = FuzzScratchDir() + "/" + f.file_name;
  WriteScratchFile(path, data, size);
  auto tok = f.read(path, {});
  if (!tok.ok()) {
    CheckError(tok.status());
    if (tok.status().subject().find(path) == std::string::npos &&
        tok.status().message().find(path) == std::string::npos)
      std::abort();
    return 0;
  }
  const std::string_view raw(reinterpret_cast<const char*>(data), std::min<size_t>(size, 512));
  for (std::string_view text : {f.fixed_text, raw}) {
    Encoder enc(**tok, 64);
    std::vector<uint32_t> ids;
    enc.Encode(text, &ids);
    for (uint32_t id : ids)
      if (id >= (*tok)->id_limit()) std::abort();
    std::string back;
    const lmkit::Status st = DecodeIds(**tok, ids.data(), ids.size(), 0, &back);
    if (f.decode_must_succeed && (!st.ok() || back.size() > text.size())) std::abort();
    if (!st.ok()) CheckError(st);
  }
  return 0;
}
