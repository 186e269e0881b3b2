// Tokenizers in Python: the core of lmkit.Encoding (tiktoken's surface) and lmkit.Tokenizer / train_bpe (CS336's).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>

#include "ext.h"
#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encode_file.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/encode/special_policy.h"
#include "lmkit/bpe/files/id_format.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/bpe/files/tokenizer_from_model.h"
#include "lmkit/bpe/files/tokenizer_writer.h"
#include "lmkit/bpe/pretokenize/cut_rules.h"
#include "lmkit/bpe/pretokenize/special_tokens.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/bpe/train/train_files.h"
#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/present/bpe_json.h"

namespace lmkit::py {
namespace {

// The last cut of `text` where encoding the two parts apart gives the ids of the whole, by the tokenizer's own rule
// (tokenizer.h cut_rule), as lmkit's streaming encoder cuts its chunks (encode_stream.cpp); 0 when there is none
// (a pipeline no rule covers: its text stays one piece). `watched`: the specials that may not be split.
size_t LastSafeCut(const bpe::Tokenizer& tok, std::string_view text, const std::vector<bpe::SpecialToken>& watched) {
  const bpe::Tokenizer::CutRule rule = tok.cut_rule();
  if (rule == bpe::Tokenizer::CutRule::kWordStart) return bpe::LastWordStartCutOutsideSpecials(text, 0, watched);
  if (rule == bpe::Tokenizer::CutRule::kNone) return 0;
  // Added tokens a part may end with: no lstrip, rstrip or single_word, and a last byte that is printable
  // non-alphanumeric ASCII (the streaming encoder's "enders").
  std::vector<bpe::SpecialToken> enders;
  for (const bpe::SpecialToken& s : watched) {
    const bpe::Tokenizer::AddedFlags f = tok.added_flags(s.id);
    const unsigned char last = s.text.empty() ? 0 : static_cast<unsigned char>(s.text.back());
    if (!f.lstrip && !f.rstrip && !f.single_word && last >= 0x21 && last <= 0x7E && !std::isalnum(last))
      enders.push_back(s);
  }
  if (rule == bpe::Tokenizer::CutRule::kSpecialEnd && enders.empty()) return 0;
  for (size_t c = text.size(); c-- > 1;) {
    if (rule == bpe::Tokenizer::CutRule::kNewlineLetter && bpe::IsNewlineLetterCutOutsideSpecials(text, c, watched))
      return c;
    if (!enders.empty() && bpe::IsSpecialEndCut(text, c, enders, watched)) return c;
  }
  return 0;
}

using bpe::Encoder;
using bpe::Tokenizer;

// A loaded tokenizer shared by the Python objects that wrap it, with a pool of encoders: an Encoder carries
// ~640 KB of caches, so making one per call would cost more than encoding a short string.
class CoreBpe {
 public:
  explicit CoreBpe(std::unique_ptr<Tokenizer> tok) : tok_(std::move(tok)) {}

  const Tokenizer& tokenizer() const { return *tok_; }

  // An encoder for the duration of one call (returned to the pool by the handle's destructor).
  class Lease {
   public:
    Lease(CoreBpe* owner, std::unique_ptr<Encoder> e) : owner_(owner), e_(std::move(e)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (e_) owner_->Return(std::move(e_));
    }
    Encoder& operator*() { return *e_; }
    Encoder* operator->() { return e_.get(); }

   private:
    CoreBpe* owner_;
    std::unique_ptr<Encoder> e_;
  };
  Lease Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        auto e = std::move(free_.back());
        free_.pop_back();
        return Lease(this, std::move(e));
      }
    }
    return Lease(this, std::make_unique<Encoder>(*tok_));
  }

  // The core's special-token rules for `policy` (special_policy.h), resolved once per distinct policy. Errors:
  // SpecialRules::Resolve's (a listed token that is not a special of this tokenizer), naming the keyword.
  const bpe::SpecialRules& RulesFor(const bpe::SpecialPolicy& policy) {
    std::string key;
    for (const bpe::SpecialSet* set : {&policy.allowed, &policy.disallowed}) {
      key += static_cast<char>('0' + static_cast<int>(set->kind));
      for (const auto& t : set->tokens) key += '\0' + t;
      key += '\1';
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rules_.find(key);
    if (it == rules_.end()) {
      auto rules = std::make_unique<bpe::SpecialRules>(Take(bpe::SpecialRules::Resolve(*tok_, policy)));
      it = rules_.emplace(std::move(key), std::move(rules)).first;
    }
    return *it->second;
  }

 private:
  void Return(std::unique_ptr<Encoder> e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < 64) free_.push_back(std::move(e));
  }

  std::unique_ptr<Tokenizer> tok_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Encoder>> free_;
  std::map<std::string, std::unique_ptr<bpe::SpecialRules>> rules_;
};

// Encodes `text` under `rules` (the encoder's own rules are restored before it goes back to the pool).
void EncodeWith(Encoder& enc, const bpe::SpecialRules& rules, std::string_view text, std::vector<uint32_t>* out) {
  enc.set_special_rules(&rules);
  enc.Encode(text, out);
  enc.set_special_rules(nullptr);
}

// A SpecialSet from tiktoken's argument: "all", or a collection of special-token texts.
bpe::SpecialSet SetOf(nb::handle arg, const char* keyword) {
  if (nb::isinstance<nb::str>(arg)) {
    if (nb::cast<std::string>(arg) == "all") return bpe::SpecialSet::All();
    PyErr_Format(PyExc_TypeError, "%s must be \"all\" or a collection of special tokens, not a str", keyword);
    throw nb::python_error();
  }
  std::vector<std::string> tokens;
  for (nb::handle t : nb::iter(arg)) tokens.push_back(nb::cast<std::string>(t));
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  return bpe::SpecialSet::Listed(std::move(tokens));
}

// The rules of encode(allowed_special=..., disallowed_special=...), and the ValueError tiktoken raises when `text`
// spells a disallowed special (the core finds it; the wording is tiktoken's).
const bpe::SpecialRules& RulesOf(CoreBpe& c, nb::handle allowed, nb::handle disallowed) {
  return c.RulesFor({SetOf(allowed, "allowed_special"), SetOf(disallowed, "disallowed_special")});
}
void RefuseDisallowed(const bpe::SpecialRules& rules, std::string_view text) {
  if (!rules.has_disallowed()) return;
  std::optional<bpe::DisallowedSpecial> hit = rules.FindDisallowed(text);
  if (!hit) return;
  const std::string msg = "disallowed special token " + nb::cast<std::string>(nb::repr(nb::str(hit->token.c_str()))) +
                          " at byte offset " + std::to_string(hit->offset) +
                          " of the text: pass it in allowed_special to encode it as a special token, or leave it out "
                          "of disallowed_special (disallowed_special=() turns the check off) to encode it as ordinary "
                          "text";
  throw nb::value_error(msg.c_str());
}

// Texts copied out of Python objects, so the GIL can be released while they are encoded.
std::vector<std::string> CopyTexts(const nb::sequence& texts) {
  std::vector<std::string> out;
  out.reserve(nb::len(texts));
  for (nb::handle t : texts) out.emplace_back(Utf8Text(t).view);
  return out;
}

std::vector<uint32_t> IdsFrom(const nb::handle& seq) {
  std::vector<uint32_t> ids;
  const size_t n = nb::len(seq);
  ids.reserve(n);
  for (nb::handle v : seq) {
    const long long x = nb::cast<long long>(v);
    if (x < 0 || x > static_cast<long long>(UINT32_MAX)) {
      PyErr_SetObject(PyExc_KeyError, v.ptr());
      throw nb::python_error();
    }
    ids.push_back(static_cast<uint32_t>(x));
  }
  return ids;
}

// The bytes of a `bytes` object (CS336's vocabularies and merges are bytes); a TypeError otherwise.
std::string BytesOf(nb::handle h, const char* what) {
  if (!PyBytes_Check(h.ptr())) {
    PyErr_Format(PyExc_TypeError, "%s must be bytes, not %s", what, Py_TYPE(h.ptr())->tp_name);
    throw nb::python_error();
  }
  return std::string(PyBytes_AS_STRING(h.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(h.ptr())));
}

std::shared_ptr<CoreBpe> Load(Result<std::unique_ptr<Tokenizer>> r) {
  return std::make_shared<CoreBpe>(Take(std::move(r)));
}

nb::tuple ModelToPython(const bpe::BpeModel& model) {
  nb::dict vocab;
  for (size_t i = 0; i < model.vocab.size(); ++i)
    vocab[nb::int_(i)] = nb::bytes(model.vocab[i].data(), model.vocab[i].size());
  nb::list merges;
  for (const auto& [a, b] : model.merges) {
    const std::string& l = model.vocab[a];
    const std::string& r = model.vocab[b];
    merges.append(nb::make_tuple(nb::bytes(l.data(), l.size()), nb::bytes(r.data(), r.size())));
  }
  return nb::make_tuple(vocab, merges);
}

}  // namespace

void RegisterBpe(nb::module_& m) {
  nb::class_<CoreBpe>(m, "CoreBpe", "A loaded byte-level BPE tokenizer (the core behind lmkit.Encoding).")
      .def_static(
          "load",
          [](const std::string& spec, std::vector<std::string> specials) {
            bpe::TokenizerOptions o;
            o.specials = std::move(specials);
            return Load(bpe::LoadTokenizer(spec, o));
          },
          nb::arg("spec"), nb::arg("special_tokens") = std::vector<std::string>{},
          "A built-in name (gpt2, cl100k_base, o200k_base), a tokenizer folder, tokenizer.json, vocab.json+merges.txt "
          "folder or .tiktoken file.")
      .def_static(
          "from_files",
          [](const std::string& vocab, const std::string& merges, std::vector<std::string> specials) {
            bpe::TokenizerOptions o;
            o.specials = std::move(specials);
            return Load(bpe::ReadVocabMerges(vocab, merges, o));
          },
          nb::arg("vocab"), nb::arg("merges"), nb::arg("special_tokens") = std::vector<std::string>{})
      .def_static(
          "from_model",
          [](nb::dict vocab, nb::sequence merges, std::vector<std::string> specials) {
            bpe::TokenizerModel model;
            model.vocab.reserve(vocab.size());
            for (auto [k, v] : vocab) model.vocab.emplace_back(nb::cast<uint32_t>(k), BytesOf(v, "a vocab value"));
            for (nb::handle pair : merges) {
              nb::sequence p = nb::cast<nb::sequence>(pair);
              if (nb::len(p) != 2) throw nb::value_error("each merge must be a pair (bytes, bytes)");
              model.merges.emplace_back(BytesOf(p[0], "a merge part"), BytesOf(p[1], "a merge part"));
            }
            model.special_tokens = std::move(specials);
            return Load(bpe::TokenizerFromModel(model));
          },
          nb::arg("vocab"), nb::arg("merges"), nb::arg("special_tokens") = std::vector<std::string>{})
      .def_prop_ro("n_vocab", [](const CoreBpe& c) { return c.tokenizer().id_limit(); })
      .def_prop_ro("description", [](const CoreBpe& c) { return c.tokenizer().description(); })
      .def_prop_ro("special_tokens",
                   [](const CoreBpe& c) {
                     nb::dict d;
                     for (const auto& s : c.tokenizer().known_specials()) d[nb::str(s.text.c_str())] = s.id;
                     for (const auto& s : c.tokenizer().enabled_specials()) d[nb::str(s.text.c_str())] = s.id;
                     return d;
                   })
      .def(
          "encode_ordinary",
          [](CoreBpe& c, nb::handle text) {
            const Utf8Text utf8(text);
            const std::string_view t = utf8.view;
            std::vector<uint32_t> ids;
            {
              nb::gil_scoped_release release;
              auto enc = c.Acquire();
              enc->EncodeOrdinary(t, &ids);
            }
            return IdList(ids);
          },
          nb::arg("text"))
      .def(
          "encode",
          [](CoreBpe& c, nb::handle text, nb::handle allowed, nb::handle disallowed) {
            const Utf8Text utf8(text);
            const std::string_view t = utf8.view;
            const bpe::SpecialRules& rules = RulesOf(c, allowed, disallowed);
            RefuseDisallowed(rules, t);
            std::vector<uint32_t> ids;
            {
              nb::gil_scoped_release release;
              auto enc = c.Acquire();
              EncodeWith(*enc, rules, t, &ids);
            }
            return IdList(ids);
          },
          nb::arg("text"), nb::arg("allowed_special"), nb::arg("disallowed_special"),
          "tiktoken's encode: the core's SpecialRules for the two arguments (\"all\" or collections of tokens).")
      .def(
          "encode_safe_prefix",
          [](CoreBpe& c, nb::handle text, nb::handle allowed, nb::handle disallowed) {
            const Utf8Text utf8(text);
            const std::string_view t = utf8.view;
            const bpe::SpecialRules& rules = RulesOf(c, allowed, disallowed);
            const size_t cut = LastSafeCut(c.tokenizer(), t, rules.watched());
            RefuseDisallowed(rules, t.substr(0, cut));
            std::vector<uint32_t> ids;
            size_t chars = 0;
            if (cut > 0) {
              nb::gil_scoped_release release;
              auto enc = c.Acquire();
              EncodeWith(*enc, rules, t.substr(0, cut), &ids);
              for (size_t i = 0; i < cut; ++i) chars += (static_cast<unsigned char>(t[i]) & 0xC0) != 0x80;
            }
            return nb::make_tuple(IdList(ids), chars);
          },
          nb::arg("text"), nb::arg("allowed_special"), nb::arg("disallowed_special"),
          "Ids of the text up to its last safe cut (where encoding the two parts apart gives the ids of the whole) "
          "and the number of characters they cover; ([], 0) when there is no safe cut.")
      .def(
          "encode_batch",
          [](CoreBpe& c, nb::sequence texts, nb::handle allowed, nb::handle disallowed, unsigned threads) {
            std::vector<std::string> copies = CopyTexts(texts);
            const bpe::SpecialRules& rules = RulesOf(c, allowed, disallowed);
            for (const std::string& t : copies) RefuseDisallowed(rules, t);
            std::vector<std::vector<uint32_t>> out(copies.size());
            {
              nb::gil_scoped_release release;
              ThreadPool pool(std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(copies.size()))));
              std::vector<std::optional<CoreBpe::Lease>> leases(pool.size());
              pool.ParallelFor(copies.size(), [&](size_t i, unsigned w) {
                if (!leases[w]) leases[w].emplace(c.Acquire());
                EncodeWith(**leases[w], rules, copies[i], &out[i]);
              });
            }
            nb::list result;
            for (const auto& ids : out) result.append(IdList(ids));
            return result;
          },
          nb::arg("texts"), nb::arg("allowed_special"), nb::arg("disallowed_special"), nb::arg("num_threads"))
      .def(
          "encode_to_array",
          [](CoreBpe& c, nb::handle text, nb::handle allowed, nb::handle disallowed, bool narrow) -> nb::object {
            const Utf8Text utf8(text);
            const std::string_view t = utf8.view;
            const bpe::SpecialRules& rules = RulesOf(c, allowed, disallowed);
            RefuseDisallowed(rules, t);
            auto* ids = new std::vector<uint32_t>();
            nb::capsule owner32(ids, [](void* p) noexcept { delete static_cast<std::vector<uint32_t>*>(p); });
            {
              nb::gil_scoped_release release;
              auto enc = c.Acquire();
              EncodeWith(*enc, rules, t, ids);
            }
            if (!narrow) {
              return nb::cast(nb::ndarray<nb::numpy, uint32_t, nb::ndim<1>>(ids->data(), {ids->size()}, owner32));
            }
            auto* small = new std::vector<uint16_t>(ids->begin(), ids->end());
            nb::capsule owner16(small, [](void* p) noexcept { delete static_cast<std::vector<uint16_t>*>(p); });
            return nb::cast(nb::ndarray<nb::numpy, uint16_t, nb::ndim<1>>(small->data(), {small->size()}, owner16));
          },
          nb::arg("text"), nb::arg("allowed_special"), nb::arg("disallowed_special"), nb::arg("narrow"))
      .def(
          "decode_bytes",
          [](CoreBpe& c, nb::handle ids_seq) {
            std::vector<uint32_t> ids = IdsFrom(ids_seq);
            std::string out;
            Status st;
            {
              nb::gil_scoped_release release;
              st = bpe::DecodeIds(c.tokenizer(), ids.data(), ids.size(), 0, &out);
            }
            if (!st.ok()) {
              // tiktoken raises KeyError naming the unknown token.
              for (uint32_t id : ids) {
                std::string_view b;
                if (!c.tokenizer().TokenBytes(id, &b)) {
                  PyErr_SetObject(PyExc_KeyError, nb::int_(id).ptr());
                  throw nb::python_error();
                }
              }
              Raise(st);
            }
            return nb::bytes(out.data(), out.size());
          },
          nb::arg("tokens"))
      .def(
          "token_bytes",
          [](CoreBpe& c, uint32_t id) {
            std::string_view b;
            if (!c.tokenizer().TokenBytes(id, &b)) {
              PyErr_SetObject(PyExc_KeyError, nb::int_(id).ptr());
              throw nb::python_error();
            }
            return nb::bytes(b.data(), b.size());
          },
          nb::arg("token"))
      .def(
          "token_id",
          [](CoreBpe& c, nb::bytes b) -> std::optional<uint32_t> {
            const uint32_t id = c.tokenizer().TokenId(std::string_view(b.c_str(), b.size()));
            if (id == bpe::kNoId) return std::nullopt;
            return id;
          },
          nb::arg("token_bytes"));

  m.def(
      "encode_file",
      [](const std::string& tokenizer, const std::string& input, const std::string& output,
         std::optional<std::string> format, const std::string& dtype, unsigned threads) {
        bpe::EncodeRequest req;
        req.tokenizer = tokenizer;
        req.corpus.inputs = {input};
        req.output = output;
        if (format) req.format = Take(bpe::IdFormatFromName(*format));
        req.dtype = Take(io::ParseTokenDtype(dtype));
        req.threads = threads;
        Result<bpe::EncodeResult> rep = Status::Internal("not encoded");
        {
          nb::gil_scoped_release release;
          rep = bpe::EncodeFile(req, nullptr);
        }
        if (!rep.ok())  // Encoding.encode_file(path, out, ...)
          Raise(rep.status(), [](std::string_view f) { return std::string(f == "output" ? "out" : f); });
        return ToDict(present::EncodeReportJson(*rep));
      },
      nb::arg("tokenizer"), nb::arg("input"), nb::arg("output"), nb::arg("format").none(), nb::arg("dtype"),
      nb::arg("threads"));

  m.def(
      "train_bpe",
      [](std::vector<std::string> inputs, size_t vocab_size, std::vector<std::string> specials, unsigned threads,
         std::optional<std::string> output_dir) {
        Result<bpe::BpeTrainResult> r = Status::Internal("not trained");
        if (output_dir) {
          // lmkit bpe train -o: the entry point that checks and writes the files.
          bpe::TrainFilesRequest req;
          req.corpus.inputs = std::move(inputs);
          req.vocab_size = vocab_size;
          req.special_tokens = std::move(specials);
          req.threads = threads;
          req.out_dir = *output_dir;
          nb::gil_scoped_release release;
          Result<bpe::TrainFilesResult> files = bpe::TrainFiles(req, nullptr);
          r = files.ok() ? Result<bpe::BpeTrainResult>(std::move(files->train)) : files.status();
        } else {
          bpe::BpeTrainOptions o;
          o.corpus.inputs = std::move(inputs);
          o.vocab_size = vocab_size;
          o.special_tokens = std::move(specials);
          o.threads = threads;
          nb::gil_scoped_release release;
          r = bpe::TrainBpe(o, nullptr);
        }
        if (!r.ok())  // train_bpe(input_path, ..., output_dir=...)
          Raise(r.status(), [](std::string_view f) {
            return std::string(f == "out_dir" ? "output_dir" : f == "inputs" ? "input_path" : f);
          });
        return ModelToPython(std::move(r).value().model);
      },
      nb::arg("inputs"), nb::arg("vocab_size"), nb::arg("special_tokens"), nb::arg("threads"),
      nb::arg("output_dir").none());
}

}  // namespace lmkit::py
