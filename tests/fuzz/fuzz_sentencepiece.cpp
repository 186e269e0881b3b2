// libFuzzer target: the SentencePiece .model reader (a protobuf ModelProto) on arbitrary bytes, through the harness of
// native_reader_fuzz.h. Decoding may fail with a one-line message: a model may lack byte fallback.
#include "native_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const NativeReaderFuzz kTarget{"tokenizer.model", &lmkit::bpe::ReadSentencePieceModel,
                                        "Hello,  world! It's 2026 -- naïve café\n\t  x<s> \xE2\x96\x81y", false};
  return FuzzNativeReader(kTarget, data, size);
}
