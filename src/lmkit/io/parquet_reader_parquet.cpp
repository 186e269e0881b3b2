// The Parquet plugin (liblmkit_parquet.so; parquet_reader.h): Arrow C++ from pip's pyarrow behind the
// ParquetTextReader interface. Built only with -DLMKIT_PARQUET=AUTO|ON when pyarrow is found, and linked against
// nothing of lmkit's core (it uses only header-only parts of Status), so the binary and the plugin can load apart.
// Arrow allocates from the system allocator (malloc), not its bundled jemalloc/mimalloc: no allocator threads in a
// short-lived CLI process, and the sanitizer build sees every allocation.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>

#include <exception>
#include <string>
#include <vector>

#include "lmkit/io/parquet_reader.h"

namespace lmkit::io {
namespace {

constexpr int64_t kBatchRows = 1024;

class ArrowParquetText final : public ParquetTextReader {
 public:
  ArrowParquetText(std::string path, std::unique_ptr<parquet::arrow::FileReader> reader, int leaf)
      : path_(std::move(path)), reader_(std::move(reader)), meta_(reader_->parquet_reader()->metadata()), leaf_(leaf) {}

  int row_groups() const override { return meta_->num_row_groups(); }
  uint64_t rows(int g) const override { return static_cast<uint64_t>(meta_->RowGroup(g)->num_rows()); }
  uint64_t column_bytes(int g) const override {
    return static_cast<uint64_t>(meta_->RowGroup(g)->ColumnChunk(leaf_)->total_uncompressed_size());
  }

  Status Seek(int g) override {
    group_ = g;
    batches_.reset();
    batch_.reset();
    row_ = 0;
    rows_in_group_ = 0;
    return Status::Ok();
  }

  Result<bool> Next(std::string_view* value, int* row_group) override {
    try {
      while (!batch_ || row_ >= batch_->length()) {
        if (!batches_) {
          if (group_ >= row_groups()) return false;
          auto r = reader_->GetRecordBatchReader({group_}, {leaf_});
          if (!r.ok()) return GroupError(r.status().ToString());
          batches_ = std::move(*r);
          rows_in_group_ = 0;
        }
        std::shared_ptr<arrow::RecordBatch> batch;
        arrow::Status st = batches_->ReadNext(&batch);
        if (!st.ok()) return GroupError(st.ToString());
        if (!batch) {  // this row group is done
          batches_.reset();
          batch_.reset();
          ++group_;
          continue;
        }
        batch_ = batch->column(0);
        row_ = 0;
      }
      const int64_t i = row_++;
      if (batch_->IsNull(i))
        return GroupError("row " + std::to_string(rows_in_group_ + static_cast<uint64_t>(i)) + " is null");
      if (row_ == batch_->length()) rows_in_group_ += static_cast<uint64_t>(batch_->length());
      switch (batch_->type_id()) {
        case arrow::Type::STRING:
          *value = static_cast<const arrow::StringArray&>(*batch_).GetView(i);
          break;
        case arrow::Type::LARGE_STRING:
          *value = static_cast<const arrow::LargeStringArray&>(*batch_).GetView(i);
          break;
        case arrow::Type::STRING_VIEW:
          *value = static_cast<const arrow::StringViewArray&>(*batch_).GetView(i);
          break;
        default:
          return GroupError("the column's values are " + batch_->type()->ToString() + ", expected strings");
      }
      *row_group = group_;
      return true;
    } catch (const std::exception& e) {
      return GroupError(e.what());
    }
  }

 private:
  Status GroupError(const std::string& what) const {
    return Status::InvalidInput(path_, "row group " + std::to_string(group_) + ": " + what);
  }

  std::string path_;
  std::unique_ptr<parquet::arrow::FileReader> reader_;
  std::shared_ptr<parquet::FileMetaData> meta_;
  int leaf_;
  int group_ = 0;
  std::unique_ptr<arrow::RecordBatchReader> batches_;
  std::shared_ptr<arrow::Array> batch_;
  int64_t row_ = 0;
  uint64_t rows_in_group_ = 0;  // rows of the group before batch_
};

Status Open(const std::string& path, const std::string& field, ParquetTextReader** out) {
  parquet::arrow::FileReaderBuilder builder;
  parquet::ReaderProperties props(arrow::system_memory_pool());
  arrow::Status st = builder.OpenFile(path, /*memory_map=*/false, props);
  if (!st.ok()) {
    if (st.IsIOError() && st.message().find("o such file") != std::string::npos)
      return Status::NotFound(path, "no such file");
    return Status::InvalidInput(path, "not a Parquet file (" + st.message() + ")");
  }
  parquet::ArrowReaderProperties arrow_props;
  arrow_props.set_batch_size(kBatchRows);
  arrow_props.set_pre_buffer(false);  // read pages as they are decoded, not whole column chunks
  builder.memory_pool(arrow::system_memory_pool())->properties(arrow_props);
  auto reader = builder.Build();
  if (!reader.ok())
    return Status::InvalidInput(path, "cannot read the Parquet footer (" + reader.status().message() + ")");
  std::shared_ptr<arrow::Schema> schema;
  st = (*reader)->GetSchema(&schema);
  if (!st.ok()) return Status::InvalidInput(path, "cannot read the Parquet schema (" + st.message() + ")");
  const int index = schema->GetFieldIndex(field);
  if (index < 0) {
    std::string names;
    for (const auto& f : schema->fields()) names += (names.empty() ? "" : ", ") + f->name();
    return Status::InvalidInput(path, "no column \"" + field + "\" (its columns: " + names + ")");
  }
  const auto type = schema->field(index)->type()->id();
  if (type != arrow::Type::STRING && type != arrow::Type::LARGE_STRING && type != arrow::Type::STRING_VIEW)
    return Status::InvalidInput(
        path, "column \"" + field + "\" is " + schema->field(index)->type()->ToString() + ", expected strings");
  const int leaf = (*reader)->parquet_reader()->metadata()->schema()->ColumnIndex(field);
  if (leaf < 0) return Status::InvalidInput(path, "column \"" + field + "\" is not a top-level column");
  *out = new ArrowParquetText(path, std::move(*reader), leaf);
  return Status::Ok();
}

}  // namespace
}  // namespace lmkit::io

extern "C" __attribute__((visibility("default"))) int lmkit_parquet_open(int abi, const char* path, const char* field,
                                                                         lmkit::io::ParquetTextReader** out,
                                                                         lmkit::Status* error) {
  if (abi != lmkit::io::kParquetPluginAbi) {
    *error = lmkit::Status::Unsupported(path, "the Parquet plugin belongs to another lmkit build");
    return 1;
  }
  try {
    lmkit::Status st = lmkit::io::Open(path, field, out);
    if (st.ok()) return 0;
    *error = std::move(st);
  } catch (const std::exception& e) {
    *error = lmkit::Status::InvalidInput(path, std::string("cannot read the Parquet file (") + e.what() + ")");
  }
  return 1;
}
