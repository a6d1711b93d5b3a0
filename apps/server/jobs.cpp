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

constexpr std::string_view kCutAtShutdown = "the server is shutting down: the request was cut at its --drain-timeout";

// One engine request per prompt (a completions batch has several; chat one).
class GenerationJob final : public Job {
 public:
  GenerationJob(ModelEntry& model, std::unique_ptr<Reservation> reservation, std::vector<RequestStream> streams,
                std::unique_ptr<GenerationWriter> response, bool streaming)
      : model_(model), reservation_(std::move(reservation)), streams_(std::move(streams)),
        response_(std::move(response)), streaming_(streaming), finished_(streams_.size(), false),
        times_(streams_.size()), gaps_(streams_.size()) {}

  bool streaming() const override { return streaming_; }
  bool done() const override { return remaining_ == 0; }
  void abort() override {
    aborted_ = true;
    for (RequestStream& s : streams_) s.abort();
  }
  void shut_down() override {
    shut_down_ = true;
    for (RequestStream& s : streams_) s.abort();
  }

  std::string poll() override {
    std::string bytes;
    if (streaming_ && !started_) bytes += response_->stream_start();
    started_ = true;
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      while (!finished_[i]) {
        std::optional<RequestOutput> out = streams_[i].try_pop();
        if (!out) break;
        if (shut_down_) mark_cut(*out);
        times_[i] = out->times;
        gaps_[i].observe(*out, model_.metrics);
        if (streaming_) {
          bytes += response_->stream_events(*out, i);
        } else {
          response_->accumulate(*out, i);
        }
        if (out->finished) {
          finished_[i] = true;
          --remaining_;
        }
      }
    }
    if (remaining_ == 0) reservation_.reset();  // capacity is free as soon as the engine is done with it
    return bytes;
  }

  int status() const override {
    if (cut_) return 503;
    return response_->error() ? response_->error()->status : 200;
  }
  std::string body() const override {
    if (cut_) return error_body(unavailable_error(std::string(kCutAtShutdown)));
    return response_->error() ? error_body(*response_->error()) : response_->body();
  }

  void finish(int status, RequestLogEntry& log) override {
    const Usage usage = response_->usage();
    ModelMetrics& m = model_.metrics;
    m.count_request(status);
    m.add_tokens(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens);
    // A batch is timed as one request: from the first arrival to the first token of any prompt and
    // to the last finish.
    RequestTimes::TimePoint arrival{}, first_token{}, finished{};
    for (const RequestTimes& t : times_) {
      if (is_set(t.arrival) && (!is_set(arrival) || t.arrival < arrival)) arrival = t.arrival;
      if (is_set(t.first_token) && (!is_set(first_token) || t.first_token < first_token)) first_token = t.first_token;
      if (is_set(t.finished) && t.finished > finished) finished = t.finished;
    }
    if (is_set(arrival) && is_set(first_token)) {
      const double ttft = seconds(arrival, first_token);
      m.observe_ttft(ttft);
      log.ttft_ms = ttft * 1000.0;
    }  // inter-token gaps were observed as the deltas arrived (poll)
    if (is_set(arrival) && is_set(finished)) m.observe_e2e(seconds(arrival, finished));
    log.prompt_tokens = usage.prompt_tokens;
    log.completion_tokens = usage.completion_tokens;
    log.cached_tokens = usage.cached_tokens;
    log.finish = aborted_ && !done() ? "client disconnected" : response_->finish_summary();
    if (aborted_ && done()) log.finish += " (client disconnected)";
  }

 private:
  // The engine ends a request cut by shut_down() as aborted; the writer answers an error instead
  // (streams: the API's error event, then the end), which names the shutdown.
  void mark_cut(RequestOutput& out) {
    for (ChoiceDelta& c : out.choices) {
      if (c.finish_reason != FinishReason::abort) continue;
      c.finish_reason = FinishReason::error;
      c.finish_detail = std::string(kCutAtShutdown);
      cut_ = true;
    }
  }

  ModelEntry& model_;
  std::unique_ptr<Reservation> reservation_;
  std::vector<RequestStream> streams_;
  std::unique_ptr<GenerationWriter> response_;
  bool streaming_;
  bool started_ = false;  // polled once: the stream's first events are out
  std::vector<bool> finished_;
  std::size_t remaining_ = streams_.size();
  bool aborted_ = false;
  bool shut_down_ = false;  // shut_down() was called
  bool cut_ = false;        // ... and some choice was still running then
  std::vector<RequestTimes> times_;
  std::vector<TokenGapTracker> gaps_;
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

// Keeps the first `dimensions` components, L2-normalised again (the engine normalised the whole
// vector): what a Matryoshka-trained model's shorter embedding is.
void truncate_embedding(std::vector<float>& values, int32_t dimensions) {
  values.resize(std::min(values.size(), static_cast<std::size_t>(dimensions)));
  double norm = 0.0;
  for (float v : values) norm += static_cast<double>(v) * static_cast<double>(v);
  norm = std::sqrt(norm);
  if (norm == 0.0) return;
  for (float& v : values) v = static_cast<float>(static_cast<double>(v) / norm);
}

// One engine request per input, at most kMaxEngineRequestsPerJob in flight: each finished one makes
// room for the next, so a request of 2048 inputs never queues more than that in the engine (and
// others' requests queue behind a window, not behind all of it).
class EmbeddingJob final : public Job {
 public:
  EmbeddingJob(ModelEntry& model, std::unique_ptr<Reservation> reservation, ParsedEmbed parsed, OutputNotifier notify)
      : model_(model), reservation_(std::move(reservation)), inputs_(std::move(parsed.inputs)), base64_(parsed.base64),
        dimensions_(parsed.dimensions), notify_(std::move(notify)), streams_(inputs_.size()),
        results_(inputs_.size()), finished_(inputs_.size(), false) {}

  // Submits the first window; a refusal there is the request's answer.
  Status start() {
    submit_more();
    return submit_error_;
  }

  bool streaming() const override { return false; }
  bool done() const override { return in_flight_ == 0 && (stopped_ || next_ == inputs_.size()); }
  void abort() override { stop(); }
  void shut_down() override {
    if (done()) return;
    shut_down_ = true;
    error_ = std::string(kCutAtShutdown);
    stop();
  }

  std::string poll() override {
    for (std::size_t i = first_open_; i < next_; ++i) {
      while (!finished_[i]) {
        std::optional<RequestOutput> out = streams_[i].try_pop();
        if (!out) break;
        if (out->finished) take_result(i, std::move(*out));
      }
    }
    while (first_open_ < next_ && finished_[first_open_]) streams_[first_open_++] = RequestStream();
    if (!error_.empty()) stop();
    submit_more();
    if (done()) reservation_.reset();
    return {};
  }

  int status() const override { return error_.empty() ? 200 : shut_down_ ? 503 : 500; }
  std::string body() const override {
    if (!error_.empty()) return error_body(shut_down_ ? unavailable_error(error_) : internal_error(error_));
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
                                        {"model", model_.spec.name},
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
  void submit_more() {
    while (!stopped_ && next_ < inputs_.size() && in_flight_ < static_cast<std::size_t>(kMaxEngineRequestsPerJob)) {
      EmbedRequest e{.prompt_ids = std::move(inputs_[next_]), .pooling = Pooling::last, .normalize = true};
      auto stream = model_.engine->submit(std::move(e), notify_);
      if (!stream.ok()) {
        submit_error_ = stream.status();
        if (error_.empty()) {
          error_ = fmt::format("embedding input {} could not be submitted: {}", next_, stream.status().message());
        }
        stop();
        return;
      }
      streams_[next_++] = std::move(stream).value();
      ++in_flight_;
    }
  }

  // No more submissions; the ones in flight are aborted (their last outputs still come).
  void stop() {
    stopped_ = true;
    for (std::size_t i = first_open_; i < next_; ++i) {
      if (!finished_[i]) streams_[i].abort();
    }
  }

  void take_result(std::size_t i, RequestOutput out) {
    finished_[i] = true;
    --in_flight_;
    prompt_tokens_ += out.usage.prompt_tokens;
    cached_tokens_ += out.usage.cached_tokens;
    for (const ChoiceDelta& c : out.choices) {
      if (c.finish_reason == FinishReason::error || c.finish_reason == FinishReason::ignored ||
          c.finish_reason == FinishReason::abort) {
        if (error_.empty()) error_ = fmt::format("embedding failed: {} {}", to_string(*c.finish_reason), c.finish_detail);
      }
    }
    if (out.embedding.empty() && error_.empty()) error_ = "embedding failed: the engine returned no vector";
    // JSON has no NaN or infinity: such a vector (broken weights) fails the request by name
    // rather than producing a reply no client can parse (also in base64, for consistency).
    if (error_.empty() && !std::ranges::all_of(out.embedding, [](float v) { return std::isfinite(v); })) {
      error_ = fmt::format("embedding failed: input {} gave a vector with NaN or infinite values (the model's "
                           "weights or activations are not finite)", i);
    }
    results_[i] = std::move(out.embedding);
    if (dimensions_ > 0) truncate_embedding(results_[i], dimensions_);
  }

  ModelEntry& model_;
  std::unique_ptr<Reservation> reservation_;
  std::vector<std::vector<TokenId>> inputs_;  // moved into the engine as they are submitted
  bool base64_;
  int32_t dimensions_;
  OutputNotifier notify_;
  std::vector<RequestStream> streams_;
  std::vector<std::vector<float>> results_;
  std::vector<bool> finished_;
  std::size_t next_ = 0;        // the next input to submit
  std::size_t first_open_ = 0;  // every input before it has finished
  std::size_t in_flight_ = 0;
  bool stopped_ = false;
  bool shut_down_ = false;  // cut at the drain timeout: 503 with kCutAtShutdown
  Status submit_error_;
  int64_t prompt_tokens_ = 0;
  int64_t cached_tokens_ = 0;
  std::string error_;
};

}  // namespace

std::unique_ptr<Job> make_generation_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                         std::vector<RequestStream> streams, std::unique_ptr<GenerationWriter> response,
                                         bool streaming) {
  return std::make_unique<GenerationJob>(model, std::move(reservation), std::move(streams), std::move(response),
                                         streaming);
}

Result<std::unique_ptr<Job>> start_embedding_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                                 ParsedEmbed parsed, OutputNotifier notify) {
  auto job = std::make_unique<EmbeddingJob>(model, std::move(reservation), std::move(parsed), std::move(notify));
  LLAISYS_RETURN_IF_ERROR(job->start());  // the streams submitted so far abort as the job drops
  return std::unique_ptr<Job>(std::move(job));
}

}  // namespace llaisys::server
