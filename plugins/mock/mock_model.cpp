#include "mock_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include <boost/json.hpp>

#include "llaisys/model/plugin_export.hpp"

namespace llaisys::mock {
namespace json = boost::json;

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from the hash of (h, i).
float unit(uint64_t h, uint64_t i) {
  return static_cast<float>(splitmix64(h ^ (i * 0xD6E8FEB86659FD93ull)) >> 40) / 16777216.0f;
}

Result<json::value> read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot open {}", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  json::value value = json::parse(text.str(), ec);
  if (ec) return make_error(ErrorCode::parse_error, "{}: invalid JSON: {}", path.string(), ec.message());
  return value;
}

Status read_int(const json::object& object, std::string_view key, int64_t& out) {
  const json::value* v = object.if_contains(key);
  if (v == nullptr) return Status();
  if (!v->is_int64() && !v->is_uint64()) {
    return make_error(ErrorCode::invalid_argument, "'{}' must be an integer", key);
  }
  out = v->is_int64() ? v->as_int64() : static_cast<int64_t>(v->as_uint64());
  return Status();
}

Status read_mock_options(const json::object& object, MockConfig& config) {
  int64_t value = 0;
  value = config.delay_ms_per_step;
  LLAISYS_RETURN_IF_ERROR(read_int(object, "delay_ms_per_step", value));
  config.delay_ms_per_step = value;
  value = config.delay_us_per_token;
  LLAISYS_RETURN_IF_ERROR(read_int(object, "delay_us_per_token", value));
  config.delay_us_per_token = value;
  value = config.load_delay_ms;
  LLAISYS_RETURN_IF_ERROR(read_int(object, "load_delay_ms", value));
  config.load_delay_ms = value;
  value = config.eos_period;
  LLAISYS_RETURN_IF_ERROR(read_int(object, "eos_period", value));
  config.eos_period = value;
  value = config.text_vocab_size;
  LLAISYS_RETURN_IF_ERROR(read_int(object, "text_vocab_size", value));
  config.text_vocab_size = static_cast<int32_t>(std::clamp<int64_t>(value, 1, config.vocab_size));
  value = static_cast<int64_t>(config.seed);
  LLAISYS_RETURN_IF_ERROR(read_int(object, "seed", value));
  config.seed = static_cast<uint64_t>(value);
  value = config.sliding_window;
  LLAISYS_RETURN_IF_ERROR(read_int(object, "sliding_window", value));
  if (value < 0 || value > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::invalid_argument, "mock 'sliding_window' must be in [0, 2^31), got {}", value);
  }
  config.sliding_window = static_cast<int32_t>(value);
  if (const json::value* replies = object.if_contains("replies"); replies != nullptr && !replies->is_null()) {
    if (!replies->is_array()) return Status(ErrorCode::invalid_argument, "mock 'replies' must be a list");
    config.replies.clear();
    for (const json::value& item : replies->as_array()) {
      const json::object* r = item.if_object();
      if (r == nullptr) return Status(ErrorCode::invalid_argument, "mock 'replies' holds objects");
      ScriptedReply reply;
      for (const auto& [key, out] : {std::pair<std::string_view, std::vector<TokenId>*>{"when_prompt_contains",
                                                                                         &reply.when_prompt_contains},
                                     std::pair<std::string_view, std::vector<TokenId>*>{"ids", &reply.ids}}) {
        const json::value* list = r->if_contains(key);
        if (list == nullptr) continue;
        if (!list->is_array()) return make_error(ErrorCode::invalid_argument, "mock reply '{}' must be a list of ids", key);
        for (const json::value& id : list->as_array()) {
          if (!id.is_int64() || id.as_int64() < 0 || id.as_int64() >= config.vocab_size) {
            return make_error(ErrorCode::invalid_argument, "mock reply '{}' holds an id outside the vocabulary", key);
          }
          out->push_back(static_cast<TokenId>(id.as_int64()));
        }
      }
      // KMP failure function.
      const auto& w = reply.when_prompt_contains;
      reply.failure.assign(w.size(), 0);
      for (std::size_t i = 1, k = 0; i < w.size(); ++i) {
        while (k > 0 && w[i] != w[k]) k = static_cast<std::size_t>(reply.failure[k - 1]);
        if (w[i] == w[k]) ++k;
        reply.failure[i] = static_cast<int32_t>(k);
      }
      config.replies.push_back(std::move(reply));
    }
  }
  if (config.delay_ms_per_step < 0 || config.delay_us_per_token < 0 || config.load_delay_ms < 0 ||
      config.eos_period < 0) {
    return Status(ErrorCode::invalid_argument, "mock delays and eos_period must be >= 0");
  }
  return Status();
}

Result<MockConfig> load_config(const ModelCreateParams& params) {
  LLAISYS_ASSIGN_OR_RETURN(json::value root, read_json_file(params.model_dir / "config.json"));
  const json::object* object = root.if_object();
  if (object == nullptr) return Status(ErrorCode::parse_error, "config.json is not an object");
  MockConfig config;
  int64_t value = config.vocab_size;
  LLAISYS_RETURN_IF_ERROR(read_int(*object, "vocab_size", value));
  if (value <= 1 || value > (1 << 24)) {
    return make_error(ErrorCode::invalid_argument, "vocab_size {} outside [2, 2^24]", value);
  }
  config.vocab_size = static_cast<int32_t>(value);
  config.text_vocab_size = config.vocab_size;
  value = config.hidden_size;
  LLAISYS_RETURN_IF_ERROR(read_int(*object, "hidden_size", value));
  if (value <= 0 || value > 65536) return make_error(ErrorCode::invalid_argument, "bad hidden_size {}", value);
  config.hidden_size = static_cast<int32_t>(value);
  value = config.max_context;
  LLAISYS_RETURN_IF_ERROR(read_int(*object, "max_position_embeddings", value));
  // Any int32 context: only the engine sizes anything by it (tests of that sizing use 2^31 - 1).
  if (value <= 0 || value > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::invalid_argument, "bad max_position_embeddings {}", value);
  }
  config.max_context = static_cast<int32_t>(value);
  value = config.bos_token_id;
  LLAISYS_RETURN_IF_ERROR(read_int(*object, "bos_token_id", value));
  config.bos_token_id = static_cast<TokenId>(value);
  if (const json::value* eos = object->if_contains("eos_token_id")) {
    auto add = [&](const json::value& v) -> Status {
      if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() >= config.vocab_size) {
        return Status(ErrorCode::invalid_argument, "eos_token_id must be ids inside the vocabulary");
      }
      config.eos_token_ids.push_back(static_cast<TokenId>(v.as_int64()));
      return Status();
    };
    if (eos->is_array()) {
      for (const json::value& v : eos->as_array()) LLAISYS_RETURN_IF_ERROR(add(v));
    } else {
      LLAISYS_RETURN_IF_ERROR(add(*eos));
    }
  }
  if (config.eos_token_ids.size() > 8) return Status(ErrorCode::invalid_argument, "at most 8 eos ids");
  if (const json::value* mock = object->if_contains("mock"); mock && mock->is_object()) {
    LLAISYS_RETURN_IF_ERROR(read_mock_options(mock->as_object(), config));
  }
  boost::system::error_code ec;
  json::value options = json::parse(params.options_json, ec);
  if (ec || !options.is_object()) return Status(ErrorCode::invalid_argument, "options must be a JSON object");
  LLAISYS_RETURN_IF_ERROR(read_mock_options(options.as_object(), config));
  if (config.sliding_window == 1 && !config.replies.empty()) {
    // The script follows a sequence through position p - 1, outside a window of one.
    return Status(ErrorCode::invalid_argument, "mock 'replies' need a sliding_window of 0 or >= 2");
  }
  return config;
}

}  // namespace

Result<std::unique_ptr<MockModel>> MockModel::create(const ModelCreateParams& params) {
  if (!params.device.is_cpu()) {
    return make_error(ErrorCode::unsupported, "the mock model runs on the CPU only, not {}",
                      params.device.to_string());
  }
  LLAISYS_ASSIGN_OR_RETURN(MockConfig config, load_config(params));
  if (config.load_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(config.load_delay_ms));
  return std::make_unique<MockModel>(std::move(config));
}

MockModel::MockModel(MockConfig config) : config_(std::move(config)), sampler_(config_.vocab_size) {
  info_.architecture = "LlaisysMockForCausalLM";
  info_.vocab_size = config_.vocab_size;
  info_.hidden_size = config_.hidden_size;
  info_.num_layers = 1;
  info_.num_kv_heads = 1;
  info_.head_dim = 1;
  info_.max_context = config_.max_context;
  info_.bos_token_id = config_.bos_token_id;
  info_.eos_token_ids = config_.eos_token_ids;
  info_.kv_dtype = DType::i64;
  info_.weight_bytes = 0;
  info_.kv_bytes_per_token = sizeof(uint64_t);
  info_.sliding_window = config_.sliding_window;
}

Status MockModel::init_kv_cache(const KvCacheConfig& config) {
  kv_config_ = config;
  sampler_.init_slots(config.num_seq_slots);
  slots_.assign(static_cast<std::size_t>(config.num_blocks) * static_cast<std::size_t>(config.block_size), 0);
  if (config_.sliding_window > 0) slot_tokens_.assign(slots_.size(), -1);
  if (!config_.replies.empty()) {
    script_.assign(slots_.size(), ScriptState{});
    triggers_.assign(slots_.size() * config_.replies.size(), 0);
  }
  return Status();
}

uint64_t MockModel::mix(uint64_t prefix_hash, TokenId token) {
  const uint64_t h = splitmix64(prefix_hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) *
                                              0x9E3779B97F4A7C15ull));
  return h == 0 ? 1 : h;  // 0 marks an unwritten slot
}

uint64_t MockModel::initial_hash() const { return splitmix64(config_.seed ^ 0x6C6C61697379736Bull); }

void MockModel::fill_logits(uint64_t hash, std::span<float> row) const {
  const auto text_vocab = static_cast<std::size_t>(config_.text_vocab_size);
  for (std::size_t v = 0; v < row.size(); ++v) {
    row[v] = v < text_vocab ? 8.0f * unit(hash, v) - 4.0f : -30.0f;
  }
  if (config_.eos_period > 0 && !config_.eos_token_ids.empty() &&
      (splitmix64(hash ^ 0xE05) % static_cast<uint64_t>(config_.eos_period)) == 0) {
    row[static_cast<std::size_t>(config_.eos_token_ids.front())] = 5.0f;  // above every text logit
  }
}

void MockModel::fill_hidden(uint64_t hash, std::span<float> row) const {
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = 2.0f * unit(hash ^ 0xB1D, i) - 1.0f;
}

std::size_t MockModel::slot_of(std::span<const BlockId> table, int32_t position) const {
  const auto block = table[static_cast<std::size_t>(position / kv_config_.block_size)];
  return static_cast<std::size_t>(block) * static_cast<std::size_t>(kv_config_.block_size) +
         static_cast<std::size_t>(position % kv_config_.block_size);
}

Result<uint64_t> MockModel::hash_at(std::span<const BlockId> table, int32_t seq, int32_t pos,
                                    TokenId token) const {
  const int32_t window = config_.sliding_window;
  if (window <= 0) {  // the chain: the whole prefix through slot(pos - 1)
    uint64_t prefix = initial_hash();
    if (pos > 0) {
      prefix = slots_[slot_of(table, pos - 1)];
      if (prefix == 0) {
        return make_error(ErrorCode::invalid_argument,
                          "sequence {}: position {} is not in the KV cache (needed by position {})",
                          seq, pos - 1, pos);
      }
    }
    return mix(prefix, token);
  }
  // The window: the tokens at max(0, pos - W + 1)..pos, read back through the block table.
  uint64_t hash = initial_hash();
  for (int32_t j = std::max(0, pos - window + 1); j < pos; ++j) {
    const BlockId block = table[static_cast<std::size_t>(j / kv_config_.block_size)];
    if (block < 0 || block >= kv_config_.num_blocks) {
      return make_error(ErrorCode::invalid_argument,
                        "sequence {}: position {} (in the window of position {}) is in block {}, not a block "
                        "of the pool",
                        seq, j, pos, block);
    }
    const TokenId held = slot_tokens_[slot_of(table, j)];
    if (held < 0) {
      return make_error(ErrorCode::invalid_argument,
                        "sequence {}: position {} is not in the KV cache (needed by position {})", seq, j, pos);
    }
    hash = mix(hash, held);
  }
  return mix(hash, token);
}

Status MockModel::step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
  // The adapter validated the step: ids, positions, block tables, rows and output sizes are in range.
  if (sampling.empty()) return compute_rows(batch, out.rows);
  logits_.resize(static_cast<std::size_t>(batch.num_outputs()) * static_cast<std::size_t>(info_.vocab_size));
  LLAISYS_RETURN_IF_ERROR(compute_rows(batch, logits_));
  if (out.wait_for_masks != nullptr) LLAISYS_RETURN_IF_ERROR((*out.wait_for_masks)());
  sampler_.sample(logits_, sampling, out);
  return Status();
}

Status MockModel::compute_rows(const ForwardBatch& batch, std::span<float> out) {
  const auto delay = std::chrono::milliseconds(config_.delay_ms_per_step) +
                     std::chrono::microseconds(config_.delay_us_per_token * batch.num_tokens());
  if (delay.count() > 0) std::this_thread::sleep_for(delay);

  for (int32_t i = 0; i < batch.num_tokens(); ++i) {
    const auto index = static_cast<std::size_t>(i);
    const int32_t seq = batch.seq_indices[index];
    const int32_t pos = batch.positions[index];
    const auto table = batch.block_table(seq);
    LLAISYS_ASSIGN_OR_RETURN(const uint64_t hash, hash_at(table, seq, pos, batch.token_ids[index]));
    slots_[slot_of(table, pos)] = hash;
    if (!slot_tokens_.empty()) slot_tokens_[slot_of(table, pos)] = batch.token_ids[index];
    if (!script_.empty()) {
      script_step(pos > 0 ? slot_of(table, pos - 1) : 0, pos > 0, slot_of(table, pos), batch.token_ids[index]);
    }
  }
  const auto width = static_cast<std::size_t>(info_.output_width(batch.output_kind));
  for (int32_t r = 0; r < batch.num_outputs(); ++r) {
    const auto token = static_cast<std::size_t>(batch.output_token_indices[static_cast<std::size_t>(r)]);
    const uint64_t hash =
        slots_[slot_of(batch.block_table(batch.seq_indices[token]), batch.positions[token])];
    std::span<float> row = out.subspan(static_cast<std::size_t>(r) * width, width);
    if (batch.output_kind == OutputKind::logits) {
      fill_logits(hash, row);
      if (!script_.empty()) {
        script_logits(slot_of(batch.block_table(batch.seq_indices[token]), batch.positions[token]), row);
      }
    } else {
      fill_hidden(hash, row);
    }
  }
  return Status();
}

int32_t MockModel::first_triggered(std::size_t slot) const {
  const std::size_t n = config_.replies.size();
  for (std::size_t e = 0; e < n; ++e) {
    if (triggers_[slot * n + e] == static_cast<int32_t>(config_.replies[e].when_prompt_contains.size())) {
      return static_cast<int32_t>(e);
    }
  }
  return -1;
}

void MockModel::script_step(std::size_t prev_slot, bool has_prev, std::size_t slot, TokenId token) {
  const std::size_t n = config_.replies.size();
  ScriptState prev;
  if (has_prev) prev = script_[prev_slot];
  for (std::size_t e = 0; e < n; ++e) {
    const ScriptedReply& r = config_.replies[e];
    const auto len = static_cast<int32_t>(r.when_prompt_contains.size());
    int32_t k = has_prev ? triggers_[prev_slot * n + e] : 0;
    if (k < len) {
      while (k > 0 && r.when_prompt_contains[static_cast<std::size_t>(k)] != token) {
        k = r.failure[static_cast<std::size_t>(k - 1)];
      }
      if (r.when_prompt_contains[static_cast<std::size_t>(k)] == token) ++k;
    }
    triggers_[slot * n + e] = k;
  }
  ScriptState next;
  if (prev.follow >= 0) {
    const auto& ids = config_.replies[static_cast<std::size_t>(prev.follow)].ids;
    if (prev.progress < static_cast<int32_t>(ids.size()) && ids[static_cast<std::size_t>(prev.progress)] == token) {
      next = {prev.follow, prev.progress + 1};
    }
  } else if (has_prev) {
    const int32_t e = first_triggered(prev_slot);
    if (e >= 0) {
      const auto& ids = config_.replies[static_cast<std::size_t>(e)].ids;
      if (!ids.empty() && ids.front() == token) next = {e, 1};
    }
  }
  script_[slot] = next;
}

void MockModel::script_logits(std::size_t slot, std::span<float> row) const {
  const ScriptState& state = script_[slot];
  const int32_t e = state.follow >= 0 ? state.follow : first_triggered(slot);
  if (e < 0) return;
  const auto& ids = config_.replies[static_cast<std::size_t>(e)].ids;
  const auto k = static_cast<std::size_t>(state.follow >= 0 ? state.progress : 0);
  if (k < ids.size()) {
    row[static_cast<std::size_t>(ids[k])] = 40.0f;  // far above the text logits: the argmax at any temperature
  } else if (!config_.eos_token_ids.empty()) {
    row[static_cast<std::size_t>(config_.eos_token_ids.front())] = 40.0f;
  }
}

Status MockModel::copy_blocks(std::span<const BlockCopy> copies) {
  const auto bs = static_cast<std::size_t>(kv_config_.block_size);
  for (const BlockCopy& c : copies) {
    std::copy_n(slots_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.src) * bs), bs,
                slots_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.dst) * bs));
    if (!slot_tokens_.empty()) {
      std::copy_n(slot_tokens_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.src) * bs), bs,
                  slot_tokens_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.dst) * bs));
    }
    if (!script_.empty()) {
      const std::size_t n = config_.replies.size();
      std::copy_n(script_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.src) * bs), bs,
                  script_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.dst) * bs));
      std::copy_n(triggers_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.src) * bs * n), bs * n,
                  triggers_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c.dst) * bs * n));
    }
  }
  return Status();
}

}  // namespace llaisys::mock

LLAISYS_EXPORT_PLUGIN(llaisys::mock::MockModel, "mock", "0.1.0", "LlaisysMockForCausalLM")
