// libFuzzer target: the tekken.json reader on arbitrary bytes, through the harness of native_reader_fuzz.h. An
// accepted file is tiktoken-style byte-level BPE: every id the encoder gives is a token, so decoding must succeed.
#include "native_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const NativeReaderFuzz kTarget{"tekken.json", &lmkit::bpe::ReadTekkenJson,
                                        "Hello, world! It's 2026 -- naïve café\n\t  x<s>y 12345", true};
  return FuzzNativeReader(kTarget, data, size);
}
