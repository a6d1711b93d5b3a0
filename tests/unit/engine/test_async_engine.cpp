// AsyncEngine: concurrent submitters, streams (blocking, non-blocking with a notifier), aborts from
// any thread or by dropping the stream, admission limits, and both shutdown modes.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine_test_support.hpp"
#include "llaisys/engine/async_engine.hpp"

using namespace llaisys;
using namespace llaisys::test;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<AsyncEngine> start(const MockModels& models, EngineConfig config = {.num_kv_blocks = 512},
                                   const std::string& options = "{}", AsyncEngineConfig async = {}) {
  auto engine = AsyncEngine::start(models.engine(config, nullptr, options), async);
  REQUIRE(engine.ok());
  return std::move(engine).value();
}

// Pops to the end, merging deltas.
Collected drain(RequestStream& stream) {
  std::map<RequestId, Collected> merged;
  while (auto output = stream.pop()) collect({*output}, merged);
  REQUIRE(merged.size() == 1);
  return merged.begin()->second;
}

GenerateRequest endless(std::vector<TokenId> prompt) {
  GenerateRequest request = greedy_request(std::move(prompt), 100000);
  request.stop.ignore_eos = true;
  return request;
}

}  // namespace

TEST_CASE("requests from many threads each get their own, correct stream") {
  MockModels models;
  auto engine = start(models);
  std::vector<std::thread> threads;
  std::vector<std::vector<std::vector<TokenId>>> outputs(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<RequestStream> streams;
      for (int i = 0; i < 12; ++i) {
        auto stream = engine->submit(greedy_request(make_prompt(static_cast<uint64_t>(t * 100 + i), 5 + i), 16));
        if (stream.ok()) streams.push_back(std::move(stream).value());
      }
      for (RequestStream& stream : streams) outputs[static_cast<std::size_t>(t)].push_back(drain(stream).choices[0].tokens);
    });
  }
  for (std::thread& thread : threads) thread.join();
  AnyModel reference_model = models.open();
  for (int t = 0; t < 4; ++t) {
    REQUIRE(outputs[static_cast<std::size_t>(t)].size() == 12);
    for (int i = 0; i < 12; ++i) {
      CHECK(outputs[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)] ==
            reference_greedy(reference_model, make_prompt(static_cast<uint64_t>(t * 100 + i), 5 + i), 16, 4096));
    }
  }
  CHECK(engine->num_in_flight() == 0);
}

TEST_CASE("a notifier lets an event loop consume with try_pop only") {
  MockModels models;
  auto engine = start(models);
  std::mutex mutex;
  std::condition_variable wake;
  int notifications = 0;
  GenerateRequest request = greedy_request(make_prompt(3, 10), 20);
  request.stop.ignore_eos = true;
  auto stream = engine->submit(request, [&] {
    {
      std::lock_guard lock(mutex);
      ++notifications;
    }
    wake.notify_one();
  });
  REQUIRE(stream.ok());
  std::map<RequestId, Collected> merged;
  bool done = false;
  int seen = 0;
  while (!done) {
    std::unique_lock lock(mutex);
    REQUIRE(wake.wait_for(lock, 10s, [&] { return notifications > seen; }));
    seen = notifications;
    lock.unlock();
    while (auto output = stream->try_pop()) {  // never blocks
      done = output->finished;
      collect({*output}, merged);
    }
  }
  CHECK(merged.begin()->second.choices[0].tokens.size() == 20);
  // One notification per output. The engine notifies after it pushes, so the consumer may pop an
  // output before its notification has arrived: wait for the count to catch up, then compare.
  const int outputs = merged.begin()->second.num_outputs;
  {
    std::unique_lock lock(mutex);
    CHECK(wake.wait_for(lock, 10s, [&] { return notifications >= outputs; }));
    CHECK(notifications == outputs);
  }
  CHECK_FALSE(stream->try_pop().has_value());
  CHECK(stream->finished());
}

TEST_CASE("abort from the stream, from the engine, or by dropping the stream frees the request") {
  MockModels models;
  auto engine = start(models, {.num_kv_blocks = 512}, R"({"delay_ms_per_step": 1})");
  auto wait_for_no_sequences = [&] {
    for (int i = 0; i < 2000 && (engine->stats().kv.num_sequences != 0 || engine->num_in_flight() != 0); ++i) {
      std::this_thread::sleep_for(1ms);
    }
    return engine->stats().kv.num_sequences == 0 && engine->num_in_flight() == 0;
  };
  SECTION("stream.abort()") {
    auto stream = engine->submit(endless(make_prompt(1, 30)));
    REQUIRE(stream.ok());
    REQUIRE(stream->pop().has_value());  // it is running
    stream->abort();
    const Collected result = drain(*stream);
    CHECK(result.choices[0].finish_reason == FinishReason::abort);
    CHECK(wait_for_no_sequences());
  }
  SECTION("engine.abort(id) of a queued request") {
    auto running = engine->submit(endless(make_prompt(2, 30)));
    auto other = engine->submit(endless(make_prompt(3, 30)));
    REQUIRE(running.ok());
    REQUIRE(other.ok());
    engine->abort(other->id());
    engine->abort(running->id());
    engine->abort(running->id());
    CHECK(drain(*other).choices[0].finish_reason == FinishReason::abort);
    CHECK(drain(*running).choices[0].finish_reason == FinishReason::abort);
    CHECK(wait_for_no_sequences());
  }
  SECTION("dropping the stream") {
    {
      auto stream = engine->submit(endless(make_prompt(4, 30)));
      REQUIRE(stream.ok());
      REQUIRE(stream->pop().has_value());
    }
    CHECK(wait_for_no_sequences());
    CHECK(engine->stats().num_finished[static_cast<int>(FinishReason::abort)] == 1);
  }
}

TEST_CASE("validation and admission errors come back from submit at once") {
  MockModels models;
  auto engine = start(models, {.num_kv_blocks = 512}, R"({"delay_ms_per_step": 1})", {.max_in_flight = 2});
  CHECK(engine->submit(greedy_request({700}, 4)).status().code() == ErrorCode::invalid_argument);
  auto a = engine->submit(endless({5}));
  auto b = engine->submit(endless({6}));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto c = engine->submit(endless({7}));
  CHECK(c.status().code() == ErrorCode::resource_exhausted);
  a->abort();
  drain(*a);
  CHECK(engine->submit(greedy_request({7}, 2)).ok());
}

TEST_CASE("shutdown: drain finishes everything, abort stops everything, later submits are refused") {
  MockModels models;
  SECTION("drain") {
    auto engine = start(models);
    std::vector<RequestStream> streams;
    for (int i = 0; i < 8; ++i) streams.push_back(std::move(engine->submit(greedy_request(make_prompt(static_cast<uint64_t>(i), 8), 12))).value());
    engine->shutdown(ShutdownMode::drain);
    for (RequestStream& stream : streams) {
      REQUIRE(stream.finished());
      const Collected result = drain(stream);
      CHECK(result.choices[0].finish_reason != FinishReason::abort);
    }
    CHECK(engine->submit(greedy_request({5}, 2)).status().code() == ErrorCode::cancelled);
  }
  SECTION("abort") {
    auto engine = start(models, {.num_kv_blocks = 512}, R"({"delay_ms_per_step": 1})");
    std::vector<RequestStream> streams;
    for (int i = 0; i < 4; ++i) streams.push_back(std::move(engine->submit(endless(make_prompt(static_cast<uint64_t>(i), 8)))).value());
    engine->shutdown(ShutdownMode::abort);
    for (RequestStream& stream : streams) CHECK(drain(stream).choices[0].finish_reason == FinishReason::abort);
    CHECK(engine->stats().kv.num_sequences == 0);
  }
  SECTION("destruction aborts") {
    std::vector<RequestStream> streams;
    {
      auto engine = start(models, {.num_kv_blocks = 512}, R"({"delay_ms_per_step": 1})");
      for (int i = 0; i < 3; ++i) streams.push_back(std::move(engine->submit(endless({5, 6}))).value());
    }
    for (RequestStream& stream : streams) CHECK(drain(stream).choices[0].finish_reason == FinishReason::abort);
  }
}
