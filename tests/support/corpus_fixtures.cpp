#include "support/corpus_fixtures.h"

#include <zlib.h>
#include <zstd.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "lmkit/io/parquet_reader.h"
#include "support/run_lmkit.h"

namespace lmkit::test {

std::vector<std::string> CorpusEnDocs() {
  std::istringstream in(ReadAll(TestData("bpe/corpus.en")));
  std::vector<std::string> docs;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (n++ % 20 == 0) docs.emplace_back();
    docs.back() += line + "\n";
  }
  return docs;
}

std::string Join(const std::vector<std::string>& docs, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) out += (i ? separator : "") + docs[i];
  return out;
}

std::string Jsonl(const std::vector<std::string>& docs, const std::string& key) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) {
    nlohmann::json j;
    j["id"] = i;
    j[key] = docs[i];
    out += j.dump(-1, ' ', /*ensure_ascii=*/true) + "\n";
  }
  return out;
}

std::string Gzip(const std::string& bytes) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(const std::string& bytes) {
  // With a content checksum, as the zstd command line writes frames.
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), bytes.data(), bytes.size());
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) throw std::runtime_error("ZSTD_compress2");
  out.resize(n);
  return out;
}

std::vector<std::string> WriteCorpusForms(const std::string& dir) {
  const auto docs = CorpusEnDocs();
  const std::string jsonl = Jsonl(docs);
  WriteAll(dir + "/joined.txt", Join(docs, "<|endoftext|>"));
  WriteAll(dir + "/c.jsonl", jsonl);
  WriteAll(dir + "/c.jsonl.gz", Gzip(jsonl));
  WriteAll(dir + "/c.jsonl.zst", Zstd(jsonl));
  std::vector<std::string> paths = {dir + "/c.jsonl", dir + "/c.jsonl.gz", dir + "/c.jsonl.zst"};
  if (io::ParquetBuilt()) paths.push_back(TestData("corpora/docs.parquet"));
  return paths;
}

}  // namespace lmkit::test
