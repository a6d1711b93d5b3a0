#pragma once
// An architecture plugin on the shared decoder is one function that describes the model from its
// config.json, and the export line (plugins/qwen3/qwen3.cpp is a complete example):
//
//   Result<decoder::DecoderSpec> describe(const ConfigReader& config);   // reads its keys, sets its pieces
//   LLAISYS_EXPORT_DECODER_PLUGIN(describe, "qwen3", "0.2.0", "Qwen3ForCausalLM")
//
// Loading a model then reads config.json once (ConfigReader), calls `describe`, refuses what no one
// read that would change the model (finish_config), checks the description, and opens the decoder on
// the device the options ask for (decoder.hpp, decoder_options.hpp).

#include <memory>
#include <span>

#include "decoder.hpp"
#include "decoder_config.hpp"
#include "llaisys/model/config_reader.hpp"
#include "llaisys/model/plugin_export.hpp"

namespace llaisys::decoder {

using DescribeFn = Result<DecoderSpec> (*)(const ConfigReader& config);

// config.json -> describe -> finish_config -> Decoder::open.
Result<std::unique_ptr<Decoder>> open_described(const ModelCreateParams& params, DescribeFn describe);

template <DescribeFn Describe>
class DecoderPlugin {
 public:
  // step() calls out.wait_for_masks after the forward pass (masks made while it runs).
  static constexpr bool kWaitsForMasks = true;
  static Result<std::unique_ptr<DecoderPlugin>> create(const ModelCreateParams& params) {
    LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, open_described(params, Describe));
    return std::make_unique<DecoderPlugin>(std::move(decoder));
  }
  explicit DecoderPlugin(std::unique_ptr<Decoder> decoder) : decoder_(std::move(decoder)) {}

  const ModelInfo& info() const { return decoder_->info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return decoder_->init_kv_cache(config); }
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
    return decoder_->step(batch, sampling, out);
  }
  Status copy_blocks(std::span<const BlockCopy> copies) { return decoder_->copy_blocks(copies); }

 private:
  std::unique_ptr<Decoder> decoder_;
};

}  // namespace llaisys::decoder

// Defines the plugin's entry point for a decoder described by `describe`. The trailing arguments are
// the HF architectures it serves.
#define LLAISYS_EXPORT_DECODER_PLUGIN(describe, plugin_name, plugin_version, ...)                          \
  static_assert(::llaisys::PluginModel<::llaisys::decoder::DecoderPlugin<describe>>);                       \
  LLAISYS_EXPORT_PLUGIN(::llaisys::decoder::DecoderPlugin<describe>, plugin_name, plugin_version, __VA_ARGS__)
