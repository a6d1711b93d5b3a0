#include "model_router.hpp"

#include <chrono>

#include "llaisys/core/log.hpp"
#include "served_model.hpp"

namespace llaisys::server {

ModelRouter::ModelRouter(const std::vector<ModelSpec>& specs) {
  for (const ModelSpec& spec : specs) models_.push_back(std::make_unique<ModelEntry>(spec));
}

ModelRouter::~ModelRouter() { shutdown(); }

void ModelRouter::start_loading(std::string plugin_dir, std::string device_name,
                                std::function<void(const Status&)> on_failure) {
  loader_ = std::thread([this, plugin_dir = std::move(plugin_dir), device_name = std::move(device_name),
                         on_failure = std::move(on_failure)] {
    PluginRegistry registry;
    registry.load_directory(plugin_dir.empty() ? default_plugin_dir() : std::filesystem::path(plugin_dir));
    for (const PluginLoadError& e : registry.load_errors()) log::warn("plugin: {}", e.status.message());
    auto device = parse_device(device_name);
    if (!device.ok()) {
      on_failure(device.status());
      return;
    }
    for (auto& entry : models_) {
      if (stopping_.load()) return;
      const ModelSpec& spec = entry->spec;
      const auto start = std::chrono::steady_clock::now();
      auto served = app::load_served_model(registry, {.model_dir = spec.path,
                                                      .device = device.value(),
                                                      .num_threads = spec.threads,
                                                      .plugin_options_json = spec.options_json,
                                                      .chat_template_file = spec.chat_template_file,
                                                      .engine = spec.engine,
                                                      .cache_namespace = spec.name});
      if (!served.ok()) {
        on_failure(Status(served.status()).with_context(fmt::format("model '{}' ({})", spec.name, spec.path.string())));
        return;
      }
      entry->tokenizer = served->tokenizer;
      entry->chat_template = std::move(served->chat_template);
      entry->chat_template_source = served->chat_template_source;
      entry->text.vocab_size = served->info.vocab_size;
      entry->text.hidden_size = served->info.hidden_size;
      entry->text.max_model_len = served->engine->max_sequence_tokens();
      entry->text.tokenizer = served->tokenizer;
      entry->text.chat_template_status = served->chat_template_status;
      entry->text.grammars = served->grammars;
      if (served->chat_template_source == "fallback: chatml") entry->text.default_stop = {"<|im_end|>"};
      auto engine = AsyncEngine::start(std::move(served->engine),
                                       {.max_in_flight = std::max(entry->admission.capacity() * kMaxEngineRequestsPerJob,
                                                                  4096)});
      if (!engine.ok()) {
        on_failure(Status(engine.status()).with_context(fmt::format("model '{}'", spec.name)));
        return;
      }
      entry->engine = std::move(engine).value();
      entry->text.chat_template = entry->chat_template ? &*entry->chat_template : nullptr;
      entry->text.chat_template_renders_tools = entry->chat_template && renders_tools(*entry->chat_template);
      // The value was checked with the configuration (validate_server_config).
      entry->text.reasoning_format = app::resolve_reasoning_format(spec.reasoning_format, "reasoning_format",
                                                                   entry->text.chat_template, entry->tokenizer.get())
                                         .value_or(app::ReasoningFormat::none);
      if (entry->chat_template && !entry->text.chat_template_renders_tools) {
        log::info("model '{}': its chat template ({}) does not render tools; requests with tools are refused",
                  spec.name, entry->chat_template_source);
      }
      entry->created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
      entry->ready.store(true, std::memory_order_release);
      log::info("model '{}' ready ({}, context {}, chat template: {}, reasoning: {}) in {:.1f}s", spec.name,
                spec.path.string(), entry->text.max_model_len, entry->chat_template_source,
                app::to_string(entry->text.reasoning_format),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  });
}

bool ModelRouter::all_ready() const {
  for (const auto& m : models_) {
    if (!m->ready.load(std::memory_order_acquire)) return false;
  }
  return true;
}

ModelEntry* ModelRouter::find(std::string_view name) const {
  for (const auto& m : models_) {
    if (m->spec.name == name) return m.get();
  }
  return nullptr;
}

std::string ModelRouter::available() const {
  std::string out;
  for (const auto& m : models_) {
    if (!out.empty()) out += ", ";
    out += m->spec.name;
  }
  return out;
}

void ModelRouter::shutdown() {
  stopping_.store(true);
  if (loader_.joinable()) loader_.join();
  for (auto& m : models_) {
    if (m->ready.load() && m->engine) m->engine->shutdown(ShutdownMode::abort);
  }
}

}  // namespace llaisys::server
