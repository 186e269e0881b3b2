// LlamaModel's parts (llama.h "Parts"): a chain of one-layer models (Embed, then ForwardLayer of each layer loaded
// alone) must give every Linear exactly the input rows the whole model's Forward gives it, for every family of the
// fixtures (dense, sliding window and local RoPE, MoE, MLA); replaced tensors load instead of the file's.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/model/llama.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::model;
using lmkit::test::TestData;

namespace {

// Every Observe call's rows, in call order, by Linear name.
class Recorder : public ActivationObserver {
 public:
  explicit Recorder(std::vector<std::string> names) : names_(std::move(names)) {}
  Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) override {
    if (linear >= names_.size()) return Status::Internal("index out of range");
    seen.emplace_back(names_[linear], std::vector<float>(x, x + rows * cols));
    return Status::Ok();
  }
  std::vector<std::pair<std::string, std::vector<float>>> seen;

 private:
  std::vector<std::string> names_;
};

std::vector<uint32_t> Tokens(const std::string& dir) {
  auto f = io::NpyFile::Open(dir + "/tokens.npy");
  REQUIRE(f.ok());
  std::vector<uint32_t> t(f->header().num_elements());
  std::memcpy(t.data(), f->data().data(), t.size() * sizeof(uint32_t));
  return t;
}

}  // namespace

TEST_CASE("LlamaModel parts: one-layer models chained see what Forward sees, every family", "[model][parts]") {
  for (const char* family : {"llama3", "gemma3", "mixtral", "deepseek_v2", "qwen2_moe"}) {
    INFO(family);
    const std::string dir = TestData(std::string("model/") + family);
    auto whole = LlamaModel::Load(dir);
    INFO(whole.status().ToString());
    REQUIRE(whole.ok());
    const std::vector<uint32_t> ids = Tokens(dir);
    const uint32_t n = static_cast<uint32_t>(ids.size()), H = whole->config().hidden;
    ThreadPool pool(2);
    Recorder full(whole->LinearNames());
    KvCache c = whole->NewCache(n);
    std::vector<float> logits(whole->config().vocab);
    REQUIRE(whole->Forward(ids, c, &pool, logits.data(), false, &full).ok());

    ModelParts ep;
    ep.layer_count = 0;
    ep.head = false;
    auto emb = LlamaModel::Load(dir, ep);
    REQUIRE(emb.ok());
    CHECK(emb->layer_count() == 0);
    std::vector<float> x(size_t{n} * H);
    REQUIRE(emb->Embed(ids, x.data()).ok());
    CHECK_FALSE(emb->Forward(ids, c, &pool, logits.data(), false).ok());  // not the whole model
    std::vector<std::pair<std::string, std::vector<float>>> chained;
    for (uint32_t l = 0; l < whole->config().layers; ++l) {
      ModelParts lp;
      lp.embeddings = lp.head = false;
      lp.first_layer = l;
      lp.layer_count = 1;
      auto m = LlamaModel::Load(dir, lp);
      INFO(m.status().ToString());
      REQUIRE(m.ok());
      REQUIRE(m->first_layer() == l);
      REQUIRE(m->layer_count() == 1);
      Recorder rec(m->LinearNames());
      KvCache lc = m->NewCache(n);
      REQUIRE(m->ForwardLayer(l, x.data(), n, lc, &pool, &rec).ok());
      CHECK(m->ForwardLayer(l + 1, x.data(), n, lc, &pool).code() == ErrorCode::kInvalidArgument);
      chained.insert(chained.end(), rec.seen.begin(), rec.seen.end());
    }
    REQUIRE(chained.size() == full.seen.size());
    for (size_t i = 0; i < chained.size(); ++i) {
      INFO(chained[i].first);
      CHECK(chained[i].first == full.seen[i].first);
      CHECK(chained[i].second == full.seen[i].second);  // bit for bit
    }
  }
}

TEST_CASE("LlamaModel parts: replaced tensors load instead of the file's", "[model][parts]") {
  const std::string dir = TestData("model/stories260K");
  const std::vector<uint32_t> ids = {1, 5, 9, 33, 70, 2};
  const uint32_t n = static_cast<uint32_t>(ids.size());
  ModelParts ep;
  ep.layer_count = 0;
  ep.head = false;
  auto emb = LlamaModel::Load(dir, ep);
  REQUIRE(emb.ok());
  const uint32_t H = emb->config().hidden;
  std::vector<float> x0(size_t{n} * H);
  REQUIRE(emb->Embed(ids, x0.data()).ok());
  auto run = [&](const std::map<std::string, std::vector<float>>* replace) {
    ModelParts lp;
    lp.embeddings = lp.head = false;
    lp.first_layer = 1;
    lp.layer_count = 1;
    lp.replace = replace;
    auto m = LlamaModel::Load(dir, lp);
    REQUIRE(m.ok());
    std::vector<float> x = x0;
    KvCache c = m->NewCache(n);
    REQUIRE(m->ForwardLayer(1, x.data(), n, c, nullptr).ok());
    return x;
  };
  const std::vector<float> plain = run(nullptr);
  std::map<std::string, std::vector<float>> zero_o = {
      {"model.layers.1.self_attn.o_proj.weight", std::vector<float>(size_t{H} * H, 0.0f)}};
  CHECK(run(&zero_o) != plain);
  // The file's own values as a replacement: the same bytes.
  auto st = io::SafetensorsFile::Open(dir + "/model.safetensors");
  REQUIRE(st.ok());
  const io::TensorInfo* t = st->Find("model.layers.1.self_attn.o_proj.weight");
  REQUIRE(t != nullptr);
  REQUIRE(t->dtype == io::DType::kF32);
  std::map<std::string, std::vector<float>> same = {{t->name, std::vector<float>(t->num_elements())}};
  std::memcpy(same.begin()->second.data(), st->Data(*t).data(), t->num_bytes());
  CHECK(run(&same) == plain);
  std::map<std::string, std::vector<float>> bad = {{"model.layers.1.input_layernorm.weight", {1.0f, 2.0f}}};
  ModelParts lp;
  lp.embeddings = lp.head = false;
  lp.first_layer = 1;
  lp.layer_count = 1;
  lp.replace = &bad;
  auto m = LlamaModel::Load(dir, lp);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find("replacement for tensor 'model.layers.1.input_layernorm.weight'") !=
        std::string::npos);
}
