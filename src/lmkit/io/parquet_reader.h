// The documents of a Parquet file (FineWeb and most Hugging Face datasets): the values of one string column, row
// group by row group, read with Apache Arrow C++'s Parquet reader.
//
// Contract: OpenParquetText reads the footer and checks that `field` is a top-level string column (kInvalidInput
// naming the file otherwise: "not a Parquet file (...)", "no column \"text\" (its columns: id, content)", "column
// \"text\" is int64, expected strings"). Next returns the values in file order with their row group; a null value
// or a damaged page is kInvalidInput naming the file and the row group. Memory: one batch of rows and the pages being
// decoded, not the file. Not thread-safe; one reader per thread.
// Arrow is optional at configure time (-DLMKIT_PARQUET=AUTO|ON|OFF, found through pip's pyarrow): it lives in a
// plugin (liblmkit_parquet.so beside the binary, in ../lib/lmkit after install, or found from the Python
// extension's directory; LMKIT_PARQUET_PLUGIN overrides) that is loaded on the first Parquet input, so the binary
// starts without loading Arrow's 60 MB of libraries. Without it (ParquetBuilt() false, or the plugin cannot be loaded)
// OpenParquetText is kUnsupported with a one-line message saying how to enable it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::io {

// Header-only (the plugin implements it without linking the core).
class ParquetTextReader {
 public:
  virtual ~ParquetTextReader() = default;
  virtual int row_groups() const = 0;
  virtual uint64_t rows(int row_group) const = 0;
  // Uncompressed bytes of the column in the row group, from the footer (what shards are balanced by).
  virtual uint64_t column_bytes(int row_group) const = 0;
  // Positions the reader at the first row of `row_group` (row_groups() = the end).
  virtual Status Seek(int row_group) = 0;
  // The next value (valid until the next call) and its row group; false at the end.
  virtual Result<bool> Next(std::string_view* value, int* row_group) = 0;
};

// Whether this lmkit was configured with Parquet support.
bool ParquetBuilt();

Result<std::unique_ptr<ParquetTextReader>> OpenParquetText(const std::string& path, const std::string& field);

// The plugin's entry point: fills *out or *error. kParquetPluginAbi changes whenever ParquetTextReader does.
inline constexpr int kParquetPluginAbi = 1;
using ParquetOpenFn = int (*)(int abi, const char* path, const char* field, ParquetTextReader** out, Status* error);

}  // namespace lmkit::io
