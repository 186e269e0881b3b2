// The pack-quantized layout (formats/pack_quantized.h) against compressed-tensors' own packer.
#include "lmkit/formats/pack_quantized.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

using namespace lmkit;

namespace {

// compressed_tensors.compressors.pack_quantized.helpers.pack_to_int32(codes, 8) (compressed-tensors 0.20.1), printed
// for codes[r][c] = ((r * cols + c) * 37 % 256) - 128 as int8:
//   /work/venvs/heavy/bin/python -c "import torch; from compressed_tensors.compressors.pack_quantized.helpers import
//   pack_to_int32; c = (torch.arange(R*C, dtype=torch.int32)*37 % 256 - 128).to(torch.int8).reshape(R, C);
//   print(pack_to_int32(c, 8).tolist())"
struct Golden {
  uint64_t rows, cols;
  std::vector<int32_t> words;
};
const Golden kGolden[] = {
    {2, 7, {1867130112, 14596500, 1917659139, 14793879}},
    {3, 9, {1867130112, 64928148, 40, -1130925491, 1344997089, 117, 165986202, -1653058770, 194}},
};

int8_t Code(uint64_t i) { return static_cast<int8_t>(static_cast<int>(i * 37 % 256) - 128); }

}  // namespace

TEST_CASE("formats: packed int8 rows equal compressed-tensors' pack_to_int32 and unpack back", "[formats]") {
  for (const Golden& g : kGolden) {
    INFO(g.rows << "x" << g.cols);
    REQUIRE(formats::PackedWords(g.cols) * g.rows == g.words.size());
    const uint64_t row_bytes = formats::PackedWords(g.cols) * 4;
    std::vector<uint8_t> packed(g.rows * row_bytes, 0xaa);
    std::vector<int8_t> codes(g.rows * g.cols);
    for (uint64_t i = 0; i < codes.size(); ++i) codes[i] = Code(i);
    for (uint64_t r = 0; r < g.rows; ++r)
      formats::PackRow8(codes.data() + r * g.cols, g.cols, packed.data() + r * row_bytes);
    std::vector<int32_t> words(g.words.size());
    std::memcpy(words.data(), packed.data(), packed.size());  // little-endian host, as the file
    CHECK(words == g.words);
    for (uint64_t r = 0; r < g.rows; ++r)
      for (uint64_t c = 0; c < g.cols; ++c)
        CHECK(formats::UnpackCode8(packed.data() + r * row_bytes, c) == codes[r * g.cols + c]);
  }
  CHECK(formats::PackedWords(0) == 0);
  CHECK(formats::PackedWords(4) == 1);
  CHECK(formats::PackedWords(5) == 2);
}

// pack_to_int32(codes, 4) (compressed-tensors 0.20.1) for codes[r][c] = ((r * cols + c) * 5 % 16) - 8:
//   python -c "import torch; from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32;
//   c = (torch.arange(R*C, dtype=torch.int32)*5 % 16 - 8).to(torch.int8).reshape(R, C); print(pack_to_int32(c, 4))"
TEST_CASE("formats: packed int4 rows equal compressed-tensors' pack_to_int32 and unpack back", "[formats]") {
  const Golden golden4[] = {
      {2, 7, {244644432, 29830531}},
      {3, 17, {1049950800, -1239649576, 0, -2081861723, 190957357, 5, -666987270, 1354112114, 10}},
  };
  for (const Golden& g : golden4) {
    INFO(g.rows << "x" << g.cols);
    REQUIRE(formats::PackedWords4(g.cols) * g.rows == g.words.size());
    const uint64_t row_bytes = formats::PackedWords4(g.cols) * 4;
    std::vector<uint8_t> packed(g.rows * row_bytes, 0xaa);
    std::vector<int8_t> codes(g.rows * g.cols);
    for (uint64_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<int8_t>(static_cast<int>(i * 5 % 16) - 8);
    for (uint64_t r = 0; r < g.rows; ++r)
      formats::PackRow4(codes.data() + r * g.cols, g.cols, packed.data() + r * row_bytes);
    std::vector<int32_t> words(g.words.size());
    std::memcpy(words.data(), packed.data(), packed.size());
    CHECK(words == g.words);
    for (uint64_t r = 0; r < g.rows; ++r)
      for (uint64_t c = 0; c < g.cols; ++c)
        CHECK(formats::UnpackCode4(packed.data() + r * row_bytes, c) == codes[r * g.cols + c]);
  }
  CHECK(formats::PackedWords4(8) == 1);
  CHECK(formats::PackedWords4(9) == 2);
}
