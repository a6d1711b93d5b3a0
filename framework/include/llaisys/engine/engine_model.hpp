#pragma once
// EngineModel: owns any llaisys::Model (AnyModel from a plugin, an in-process model, a test double)
// behind one type, so the engine is compiled once and takes whatever satisfies the concept.
//
//   EngineModel model(std::move(any_model));   // AnyModel from PluginRegistry::open_model
//
// The engine thread is the only user (the Model contract: one thread at a time).

#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "llaisys/model/model.hpp"

namespace llaisys {

class EngineModel {
 public:
  template <Model M>
    requires(!std::is_same_v<std::remove_cvref_t<M>, EngineModel>)
  explicit EngineModel(M model) : impl_(std::make_unique<Holder<M>>(std::move(model))) {}

  const ModelInfo& info() const { return impl_->info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return impl_->init_kv_cache(config); }
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
    if (out.wait_for_masks != nullptr && !impl_->waits_for_masks()) {  // this model reads masks up front
      LLAISYS_RETURN_IF_ERROR((*out.wait_for_masks)());
      StepOutput ready = out;
      ready.wait_for_masks = nullptr;
      return impl_->step(batch, sampling, ready);
    }
    return impl_->step(batch, sampling, out);
  }
  Status forward(const ForwardBatch& batch, std::span<float> rows) { return step(batch, {}, StepOutput{.rows = rows}); }
  Status copy_blocks(std::span<const BlockCopy> copies) { return impl_->copy_blocks(copies); }
  // The model calls StepOutput::wait_for_masks before it reads masks (Model contract).
  bool waits_for_masks() const { return impl_->waits_for_masks(); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual const ModelInfo& info() const = 0;
    virtual Status init_kv_cache(const KvCacheConfig& config) = 0;
    virtual Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) = 0;
    virtual Status copy_blocks(std::span<const BlockCopy> copies) = 0;
    virtual bool waits_for_masks() const = 0;
  };
  template <class M>
  struct Holder final : Concept {
    explicit Holder(M m) : model(std::move(m)) {}
    const ModelInfo& info() const override { return model.info(); }
    Status init_kv_cache(const KvCacheConfig& config) override { return model.init_kv_cache(config); }
    Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) override {
      return model.step(batch, sampling, out);
    }
    Status copy_blocks(std::span<const BlockCopy> copies) override { return model.copy_blocks(copies); }
    bool waits_for_masks() const override {
      if constexpr (requires(const M& m) { { m.waits_for_masks() } -> std::same_as<bool>; }) {
        return model.waits_for_masks();  // decided at run time (AnyModel: the plugin's table)
      } else {
        return llaisys::waits_for_masks<M>();
      }
    }
    M model;
  };
  std::unique_ptr<Concept> impl_;
};

static_assert(Model<EngineModel>);

}  // namespace llaisys
