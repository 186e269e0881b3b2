// The declarations the accounting documents share (flops, memory, plan, training layouts): enum names through their
// tables, and the field lists of the model, its parameter counts and the GPU (json_fields.h).
#pragma once

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"
#include "lmkit/accounting/roofline.h"
#include "lmkit/present/json_fields.h"

namespace lmkit::present {

LMKIT_JSON_ENUM(accounting::FfnKind, EnumNameOf(accounting::FfnNames(), v));
LMKIT_JSON_ENUM(accounting::NormKind, EnumNameOf(accounting::NormNames(), v));
LMKIT_JSON_ENUM(accounting::Attention, EnumNameOf(accounting::AttentionNames(), v));
LMKIT_JSON_ENUM(accounting::QuantScope, EnumNameOf(accounting::QuantScopeNames(), v));
LMKIT_JSON_ENUM(accounting::Dtype, accounting::DtypeName(v));
LMKIT_JSON_ENUM(accounting::Component, accounting::ComponentName(v));
LMKIT_JSON_ENUM(accounting::Recompute, accounting::RecomputeName(v));
LMKIT_JSON_ENUM(accounting::Mode, accounting::ModeName(v));
LMKIT_JSON_ENUM(accounting::Optimizer, accounting::OptimizerName(v));
LMKIT_JSON_ENUM(accounting::ActivationModel, accounting::ActivationModelName(v));

LMKIT_JSON_FIELDS(accounting::LayerKind,  //
                  Field("name", &T::name), Field("count", &T::count), Field("moe", &T::moe),
                  Field("window", &T::window));
LMKIT_JSON_FIELDS(accounting::MlaSpec,  //
                  Field("q_lora_rank", &T::q_lora_rank), Field("kv_lora_rank", &T::kv_lora_rank),
                  Field("qk_nope_head_dim", &T::qk_nope_head_dim), Field("qk_rope_head_dim", &T::qk_rope_head_dim),
                  Field("v_head_dim", &T::v_head_dim));
LMKIT_JSON_FIELDS(accounting::MoeSpec,  //
                  Field("routed_experts", &T::routed_experts), Field("top_k", &T::top_k),
                  Field("expert_d_ff", &T::expert_d_ff), Field("shared_d_ff", &T::shared_d_ff));

LMKIT_JSON_FIELDS(accounting::ModelSpec,  //
                  Field("name", &T::name), Field("source", &T::source), Field("family", &T::family),
                  Field("layers", &T::layers), Field("d_model", &T::d_model), Field("heads", &T::heads),
                  Field("kv_heads", &T::kv_heads), Field("head_dim", &T::head_dim), Field("d_ff", &T::d_ff),
                  Field("vocab", &T::vocab), Field("ffn", &T::ffn), Field("norm", &T::norm), Field("tied", &T::tied),
                  If([](const T& m) { return !m.activation.empty(); }, Field("activation", &T::activation)),
                  If([](const T& m) { return m.norms_per_layer != 2; }, Field("norms_per_layer", &T::norms_per_layer)),
                  If([](const T& m) { return m.parallel_block; }, Field("parallel_block", &T::parallel_block)),
                  If([](const T& m) { return m.attn_softcap > 0; }, Field("attn_logit_softcap", &T::attn_softcap)),
                  If([](const T& m) { return m.final_softcap > 0; }, Field("final_logit_softcap", &T::final_softcap)),
                  If([](const T& m) { return m.mla; }, Field("mla", &T::mla_spec)),
                  If([](const T& m) { return m.is_moe(); }, Field("moe", &T::moe)), Field("layer_kinds", &T::kinds),
                  Field("notes", &T::notes));

LMKIT_JSON_FIELDS(accounting::ParameterCounts,  //
                  Field("total", &T::total), Field("embedding", &T::embedding), Field("lm_head", &T::lm_head),
                  Field("non_embedding", &T::non_embedding), Field("active", &T::active),
                  Field("attention", &T::attention), Field("ffn", &T::ffn), Field("router", &T::router),
                  Field("norms", &T::norms), Field("linear", &T::linear), Field("vision", &T::vision));

LMKIT_JSON_FIELDS(accounting::GpuSpec,  //
                  Field("name", &T::name), Field("memory_bytes", &T::memory_bytes),
                  Field("bandwidth_bytes_per_s", &T::bandwidth_bytes_per_s),
                  Field("interconnect_bytes_per_s", &T::interconnect_bytes_per_s), Field("source", &T::source));

}  // namespace lmkit::present
