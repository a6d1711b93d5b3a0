#pragma once
// AnyModel: a loaded plugin model behind the C ABI, presented to the framework as a Model.

#include <memory>
#include <span>

#include "llaisys/model/model.hpp"
#include "llaisys/model/plugin_abi.h"

namespace llaisys {

class LoadedPlugin;

class AnyModel {
 public:
  // Creates a model through `plugin`'s table.
  static Result<AnyModel> create(std::shared_ptr<const LoadedPlugin> plugin,
                                 const ModelCreateParams& params);

  AnyModel(AnyModel&& other) noexcept;
  AnyModel& operator=(AnyModel&& other) noexcept;
  AnyModel(const AnyModel&) = delete;
  AnyModel& operator=(const AnyModel&) = delete;
  ~AnyModel();

  const ModelInfo& info() const { return info_; }
  Status init_kv_cache(const KvCacheConfig& config);
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out);
  // The plugin has step_pending_masks: StepOutput::wait_for_masks is honoured.
  bool waits_for_masks() const;
  // A step without sampling: every output row into `rows`.
  Status forward(const ForwardBatch& batch, std::span<float> rows) { return step(batch, {}, StepOutput{.rows = rows}); }
  Status copy_blocks(std::span<const BlockCopy> copies);

  const std::string& plugin_name() const;

 private:
  AnyModel(std::shared_ptr<const LoadedPlugin> plugin, llaisys_model* handle, ModelInfo info);
  void reset() noexcept;

  std::shared_ptr<const LoadedPlugin> plugin_;
  llaisys_model* handle_ = nullptr;
  ModelInfo info_;
  std::vector<llaisys_sample_row> c_rows_;  // the step's rows in C form, kept between steps
};

static_assert(Model<AnyModel>);

// A plugin table plus the library that holds it.
class LoadedPlugin {
 public:
  LoadedPlugin(const llaisys_plugin* table, std::shared_ptr<void> library, std::string origin);
  const llaisys_plugin& table() const { return *table_; }
  const std::string& name() const { return name_; }
  const std::string& origin() const { return origin_; }
  const std::vector<std::string>& architectures() const { return architectures_; }

 private:
  const llaisys_plugin* table_;
  std::shared_ptr<void> library_;  // dlclose()s when the last user goes
  std::string name_;
  std::string origin_;
  std::vector<std::string> architectures_;
};

}  // namespace llaisys
