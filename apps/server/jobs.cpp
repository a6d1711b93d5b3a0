#include "jobs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace llaisys::server {
namespace json = boost::json;

namespace {

double seconds(RequestTimes::TimePoint from, RequestTimes::TimePoint to) {
  return std::chrono::duration<double>(to - from).count();
}

bool is_set(RequestTimes::TimePoint t) { return t.time_since_epoch().count() != 0; }

class GenerationJob final : public Job {
 public:
  GenerationJob(ModelEntry& model, std::unique_ptr<Reservation> reservation, RequestStream stream,
                std::unique_ptr<GenerationWriter> response, bool streaming)
      : model_(model), reservation_(std::move(reservation)), stream_(std::move(stream)),
        response_(std::move(response)), streaming_(streaming) {}

  bool streaming() const override { return streaming_; }
  bool done() const override { return done_; }
  void abort() override {
    aborted_ = true;
    stream_.abort();
  }

  std::string poll() override {
    std::string bytes;
    if (streaming_ && !started_) bytes += response_->stream_start();
    started_ = true;
    while (!done_) {
      std::optional<RequestOutput> out = stream_.try_pop();
      if (!out) break;
      times_ = out->times;
      gaps_.observe(*out, model_.metrics);
      if (streaming_) {
        bytes += response_->stream_events(*out);
      } else {
        response_->accumulate(*out);
      }
      if (out->finished) {
        done_ = true;
        reservation_.reset();  // capacity is free as soon as the engine is done with it
      }
    }
    return bytes;
  }

  int status() const override { return response_->error() ? response_->error()->status : 200; }
  std::string body() const override {
    return response_->error() ? error_body(*response_->error()) : response_->body();
  }

  void finish(int status, RequestLogEntry& log) override {
    const Usage& usage = response_->usage();
    ModelMetrics& m = model_.metrics;
    m.count_request(status);
    m.add_tokens(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens);
    if (is_set(times_.arrival) && is_set(times_.first_token)) {
      const double ttft = seconds(times_.arrival, times_.first_token);
      m.observe_ttft(ttft);
      log.ttft_ms = ttft * 1000.0;
    }  // inter-token gaps were observed as the deltas arrived (poll)
    if (is_set(times_.arrival) && is_set(times_.finished)) m.observe_e2e(seconds(times_.arrival, times_.finished));
    log.prompt_tokens = usage.prompt_tokens;
    log.completion_tokens = usage.completion_tokens;
    log.cached_tokens = usage.cached_tokens;
    log.finish = aborted_ && !done_ ? "client disconnected" : response_->finish_summary();
    if (aborted_ && done_) log.finish += " (client disconnected)";
  }

 private:
  ModelEntry& model_;
  std::unique_ptr<Reservation> reservation_;
  RequestStream stream_;
  std::unique_ptr<GenerationWriter> response_;
  bool streaming_;
  bool started_ = false;  // polled once: the stream's first events are out
  bool done_ = false;
  bool aborted_ = false;
  RequestTimes times_;
  TokenGapTracker gaps_;
};

std::string base64_floats(const std::vector<float>& values) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &values[i], sizeof bits);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<std::size_t>(b)] = static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) chunk |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) chunk |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
    out += kAlphabet[(chunk >> 18) & 63];
    out += kAlphabet[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

class EmbeddingJob final : public Job {
 public:
  EmbeddingJob(ModelEntry& model, std::unique_ptr<Reservation> reservation, std::vector<RequestStream> streams,
               bool base64, std::string model_name)
      : model_(model), reservation_(std::move(reservation)), streams_(std::move(streams)), base64_(base64),
        model_name_(std::move(model_name)), results_(streams_.size()), finished_(streams_.size(), false) {}

  bool streaming() const override { return false; }
  bool done() const override { return remaining_ == 0; }
  void abort() override {
    for (RequestStream& s : streams_) s.abort();
  }

  std::string poll() override {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      while (!finished_[i]) {
        std::optional<RequestOutput> out = streams_[i].try_pop();
        if (!out) break;
        if (!out->finished) continue;
        finished_[i] = true;
        --remaining_;
        prompt_tokens_ += out->usage.prompt_tokens;
        cached_tokens_ += out->usage.cached_tokens;
        for (const ChoiceDelta& c : out->choices) {
          if (c.finish_reason == FinishReason::error || c.finish_reason == FinishReason::ignored ||
              c.finish_reason == FinishReason::abort) {
            if (error_.empty()) error_ = fmt::format("embedding failed: {} {}", to_string(*c.finish_reason), c.finish_detail);
          }
        }
        if (out->embedding.empty() && error_.empty()) error_ = "embedding failed: the engine returned no vector";
        // JSON has no NaN or infinity: such a vector (broken weights) fails the request by name
        // rather than producing a reply no client can parse (also in base64, for consistency).
        if (error_.empty() && !std::ranges::all_of(out->embedding, [](float v) { return std::isfinite(v); })) {
          error_ = fmt::format("embedding failed: input {} gave a vector with NaN or infinite values (the model's "
                               "weights or activations are not finite)", i);
        }
        results_[i] = std::move(out->embedding);
      }
    }
    if (remaining_ == 0) reservation_.reset();
    return {};
  }

  int status() const override { return error_.empty() ? 200 : 500; }
  std::string body() const override {
    if (!error_.empty()) return error_body(internal_error(error_));
    json::array data;
    for (std::size_t i = 0; i < results_.size(); ++i) {
      json::object item{{"object", "embedding"}, {"index", static_cast<int64_t>(i)}};
      if (base64_) {
        item["embedding"] = base64_floats(results_[i]);
      } else {
        json::array values;
        values.reserve(results_[i].size());
        for (float v : results_[i]) values.push_back(static_cast<double>(v));
        item["embedding"] = std::move(values);
      }
      data.push_back(std::move(item));
    }
    return json::serialize(json::object{{"object", "list"},
                                        {"data", std::move(data)},
                                        {"model", model_name_},
                                        {"usage", json::object{{"prompt_tokens", prompt_tokens_},
                                                               {"total_tokens", prompt_tokens_}}}});
  }

  void finish(int status, RequestLogEntry& log) override {
    model_.metrics.count_request(status);
    model_.metrics.add_tokens(prompt_tokens_, 0, cached_tokens_);
    log.prompt_tokens = static_cast<int32_t>(prompt_tokens_);
    log.cached_tokens = static_cast<int32_t>(cached_tokens_);
    log.finish = error_.empty() ? fmt::format("{} embeddings", results_.size()) : error_;
  }

 private:
  ModelEntry& model_;
  std::unique_ptr<Reservation> reservation_;
  std::vector<RequestStream> streams_;
  bool base64_;
  std::string model_name_;
  std::vector<std::vector<float>> results_;
  std::vector<bool> finished_;
  std::size_t remaining_ = streams_.size();
  int64_t prompt_tokens_ = 0;
  int64_t cached_tokens_ = 0;
  std::string error_;
};

}  // namespace

std::unique_ptr<Job> make_generation_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                         RequestStream stream, std::unique_ptr<GenerationWriter> response,
                                         bool streaming) {
  return std::make_unique<GenerationJob>(model, std::move(reservation), std::move(stream), std::move(response),
                                         streaming);
}

std::unique_ptr<Job> make_embedding_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                        std::vector<RequestStream> streams, bool base64, std::string model_name) {
  return std::make_unique<EmbeddingJob>(model, std::move(reservation), std::move(streams), base64,
                                        std::move(model_name));
}

}  // namespace llaisys::server
