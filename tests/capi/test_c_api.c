/* The C API from a C program, using llaisys.h only (compiled as C11).
 *
 * usage: test_c_api TINY_QWEN2_DIR CASES_FILE
 *
 * TINY_QWEN2_DIR is llaisys-mkmodel's tiny Qwen2; CASES_FILE holds the cases of
 * tests/data/tiny-qwen2/reference.json (llama.cpp's greedy tokens) as tests/capi/CMakeLists.txt
 * writes them. Checks: every case's rendered prompt, prompt ids and greedy tokens equal the
 * reference's (messages, text and token-id prompts; polling and callbacks); bad options, a missing
 * model and bad requests are refused with a code and a message naming what is wrong; n, seeds,
 * logprobs and stop strings reach the engine; an aborted
 * request finishes with ABORT and the engine's stats show its KV freed; 32 requests submitted at once
 * each equal the same request run alone, in fewer engine steps than one at a time would take.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llaisys/llaisys.h"
#include "test_common.h"

static void sleep_ms(long ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- one request's outputs, gathered ------------------------------------------------------------ */

typedef struct {
  int32_t* ids;
  int num_ids;
  char* text;
  size_t text_len;
  int32_t* prompt_ids;
  int num_prompt_ids;
  int num_outputs_with_prompt;  /* must be exactly 1 */
  int finish_reason;
  int finished;
  int outputs_after_finish;     /* must stay 0 */
  llaisys_request_id id_seen;
} result;

static void result_add(result* r, const llaisys_output* out) {
  if (r->finished) ++r->outputs_after_finish;
  r->id_seen = out->request_id;
  if (out->prompt_token_ids != NULL) {
    ++r->num_outputs_with_prompt;
    free(r->prompt_ids);
    r->prompt_ids = checked_malloc((size_t)out->num_prompt_token_ids * sizeof(int32_t));
    memcpy(r->prompt_ids, out->prompt_token_ids, (size_t)out->num_prompt_token_ids * sizeof(int32_t));
    r->num_prompt_ids = out->num_prompt_token_ids;
  }
  for (int c = 0; c < out->num_choices; ++c) {
    const llaisys_choice* choice = &out->choices[c];
    if (choice->index != 0) continue;  /* n = 1 throughout */
    int32_t* ids = realloc(r->ids, (size_t)(r->num_ids + choice->num_tokens + 1) * sizeof(int32_t));
    char* text = realloc(r->text, r->text_len + choice->text_len + 1);
    if (ids == NULL || text == NULL) exit(1);
    r->ids = ids;
    r->text = text;
    if (choice->num_tokens > 0) memcpy(r->ids + r->num_ids, choice->token_ids, (size_t)choice->num_tokens * sizeof(int32_t));
    r->num_ids += choice->num_tokens;
    memcpy(r->text + r->text_len, choice->text, choice->text_len);
    r->text_len += choice->text_len;
    r->text[r->text_len] = '\0';
    if (choice->finish_reason != LLAISYS_FINISH_NONE) r->finish_reason = choice->finish_reason;
  }
  if (out->finished) r->finished = 1;
}

static void result_free(result* r) {
  free(r->ids);
  free(r->text);
  free(r->prompt_ids);
  memset(r, 0, sizeof *r);
}

/* Polls `id` until its last output (at most 300 s). */
static void collect_polled(llaisys_engine* engine, llaisys_request_id id, result* r) {
  const double deadline = now_s() + 300.0;
  while (!r->finished && now_s() < deadline) {
    llaisys_output* out = NULL;
    REQUIRE_OK(llaisys_engine_poll(engine, id, 1000, &out));
    if (out == NULL) continue;
    CHECK(out->request_id == id, "output of request %lld polled for %lld", (long long)out->request_id, (long long)id);
    result_add(r, out);
    llaisys_output_free(out);
  }
  CHECK(r->finished, "request %lld did not finish in 300 s", (long long)id);
}

/* Callback delivery: the engine thread fills `r`, then publishes `done`. */
typedef struct {
  result r;
  atomic_int done;
} callback_result;

static void on_output(void* user, llaisys_output* output) {
  callback_result* cr = user;
  result_add(&cr->r, output);
  const int finished = output->finished != 0;
  llaisys_output_free(output);
  if (finished) atomic_store_explicit(&cr->done, 1, memory_order_release);
}

static void wait_callback(callback_result* cr) {
  const double deadline = now_s() + 300.0;
  while (!atomic_load_explicit(&cr->done, memory_order_acquire) && now_s() < deadline) sleep_ms(1);
  CHECK(atomic_load_explicit(&cr->done, memory_order_acquire), "callback request did not finish in 300 s");
}

static llaisys_sampling_params greedy_params(int max_tokens) {
  llaisys_sampling_params p;
  llaisys_sampling_params_init(&p);
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = 1;
  return p;
}

static llaisys_stats get_stats(const llaisys_engine* engine) {
  llaisys_stats stats = {.struct_size = sizeof(llaisys_stats)};
  REQUIRE_OK(llaisys_engine_stats(engine, &stats));
  return stats;
}

/* Stats are a snapshot after the engine's latest step: wait (at most 10 s) for an idle one. */
static llaisys_stats wait_idle_stats(const llaisys_engine* engine) {
  const double deadline = now_s() + 10.0;
  llaisys_stats stats = get_stats(engine);
  while ((stats.num_unfinished_requests != 0 || stats.num_in_flight != 0 || stats.kv_num_used_blocks != 0) &&
         now_s() < deadline) {
    sleep_ms(5);
    stats = get_stats(engine);
  }
  return stats;
}

/* ---- the checks --------------------------------------------------------------------------------- */

static void test_version(void) {
  const uint32_t version = llaisys_version();
  CHECK(version >> 16 == LLAISYS_API_VERSION_MAJOR, "library major %u, header %d", version >> 16,
        LLAISYS_API_VERSION_MAJOR);
  /* The same major and at least this minor: (major << 16 | minor) compares as a whole. */
  CHECK(version >= (uint32_t)LLAISYS_API_VERSION, "library %u.%u older than header %d.%d", version >> 16,
        version & 0xffffu, LLAISYS_API_VERSION_MAJOR, LLAISYS_API_VERSION_MINOR);
  CHECK(strcmp(llaisys_status_name(LLAISYS_ERR_NOT_FOUND), "not_found") == 0, "status name %s",
        llaisys_status_name(LLAISYS_ERR_NOT_FOUND));
  CHECK(strcmp(llaisys_finish_reason_name(LLAISYS_FINISH_ABORT), "abort") == 0, "finish name %s",
        llaisys_finish_reason_name(LLAISYS_FINISH_ABORT));
}

/* An open that must fail with `code` and a message containing `needle`; the handle stays untouched. */
static void expect_open_error(const char* model, const char* options, llaisys_status code, const char* needle) {
  llaisys_engine* engine = (llaisys_engine*)&g_failures;  /* a sentinel that must survive */
  const llaisys_status status = llaisys_engine_open(model, options, &engine);
  CHECK(status == code, "open(%s, %s): %s, want %s (%s)", model, options ? options : "NULL",
        llaisys_status_name(status), llaisys_status_name(code), llaisys_last_error());
  CHECK(strstr(llaisys_last_error(), needle) != NULL, "open(%s): message '%s' does not name '%s'",
        options ? options : "NULL", llaisys_last_error(), needle);
  CHECK(engine == (llaisys_engine*)&g_failures, "a failed open wrote the handle");
}

static void test_open_errors(const char* model) {
  expect_open_error(model, "{\"max_num_seqs\": 4, \"bogus_option\": 1}", LLAISYS_ERR_INVALID_ARGUMENT,
                    "bogus_option");
  expect_open_error(model, "{\"max_num_seqs\": 0}", LLAISYS_ERR_INVALID_ARGUMENT, "max_num_seqs");
  expect_open_error(model, "{\"no_prefix_cache\": 1}", LLAISYS_ERR_INVALID_ARGUMENT, "no_prefix_cache");
  expect_open_error(model, "{\"max_num_seqs\": ", LLAISYS_ERR_INVALID_ARGUMENT, "JSON");
  expect_open_error("/nonexistent/llaisys-capi-test/model", NULL, LLAISYS_ERR_NOT_FOUND,
                    "/nonexistent/llaisys-capi-test/model");
}

static void test_info(const llaisys_engine* engine) {
  llaisys_engine_info info = {.struct_size = sizeof(llaisys_engine_info)};
  REQUIRE_OK(llaisys_engine_get_info(engine, &info));
  CHECK(strcmp(info.architecture, "Qwen2ForCausalLM") == 0, "architecture %s", info.architecture);
  CHECK(info.vocab_size == 151936, "vocab %d", info.vocab_size);
  CHECK(info.has_tokenizer == 1, "no tokenizer");
  CHECK(strcmp(info.chat_template_source, "model") == 0, "chat template source %s", info.chat_template_source);
  CHECK(info.num_eos_token_ids >= 1, "no EOS ids");
}

/* Every case: template, tokenizer and greedy generation against llama.cpp's reference. */
static void test_reference(llaisys_engine* engine, const ref_case* cases, int num_cases) {
  for (int i = 0; i < num_cases; ++i) {
    const ref_case* c = &cases[i];
    int32_t* ids = NULL;
    int32_t num_ids = 0;
    if (c->is_messages) {
      char* rendered = NULL;
      REQUIRE_OK(llaisys_engine_apply_chat_template(engine, c->source, NULL, &rendered));
      CHECK(strcmp(rendered, c->rendered) == 0, "%s: rendered prompt differs:\n%s\n--- want ---\n%s", c->name, rendered,
            c->rendered);
      llaisys_free(rendered);
      REQUIRE_OK(llaisys_engine_encode(engine, c->rendered, 0, &ids, &num_ids));
    } else {
      REQUIRE_OK(llaisys_engine_encode(engine, c->source, 1, &ids, &num_ids));
    }
    CHECK(ids_equal(ids, num_ids, c->prompt_ids, c->num_prompt_ids), "%s: encoded prompt differs", c->name);
    llaisys_free(ids);

    llaisys_prompt prompt = {.struct_size = sizeof(llaisys_prompt)};
    if (c->is_messages) {
      prompt.messages_json = c->source;
    } else {
      prompt.text = c->source;
    }
    const llaisys_sampling_params params = greedy_params(c->num_greedy);
    llaisys_request_id id = 0;
    REQUIRE_OK(llaisys_engine_submit(engine, &prompt, &params, NULL, NULL, &id));
    result r = {0};
    collect_polled(engine, id, &r);
    CHECK(r.num_outputs_with_prompt == 1, "%s: %d outputs carried the prompt", c->name, r.num_outputs_with_prompt);
    CHECK(ids_equal(r.prompt_ids, r.num_prompt_ids, c->prompt_ids, c->num_prompt_ids), "%s: prompt ids differ",
          c->name);
    CHECK(ids_equal(r.ids, r.num_ids, c->greedy, c->num_greedy), "%s: greedy tokens differ from the reference",
          c->name);
    if (!ids_equal(r.ids, r.num_ids, c->greedy, c->num_greedy)) {
      print_ids("got", r.ids, r.num_ids);
      print_ids("want", c->greedy, c->num_greedy);
    }
    CHECK(r.finish_reason == LLAISYS_FINISH_LENGTH, "%s: finish %s", c->name,
          llaisys_finish_reason_name(r.finish_reason));
    /* The streamed text is the decoded tokens. */
    char* decoded = NULL;
    size_t decoded_len = 0;
    REQUIRE_OK(llaisys_engine_decode(engine, r.ids, r.num_ids, 1, &decoded, &decoded_len));
    CHECK(decoded_len == r.text_len && memcmp(decoded, r.text, r.text_len) == 0,
          "%s: streamed text differs from decode(ids)", c->name);
    llaisys_free(decoded);
    /* Polling it again: its last output was returned. */
    llaisys_output* again = NULL;
    CHECK(llaisys_engine_poll(engine, id, 0, &again) == LLAISYS_ERR_NOT_FOUND, "%s: finished request still polled",
          c->name);
    result_free(&r);

    /* The same prompt as token ids, delivered to a callback. */
    llaisys_prompt by_ids = {.struct_size = sizeof(llaisys_prompt), .token_ids = c->prompt_ids,
                             .num_token_ids = c->num_prompt_ids};
    callback_result cr = {.r = {0}};
    atomic_init(&cr.done, 0);
    REQUIRE_OK(llaisys_engine_submit(engine, &by_ids, &params, on_output, &cr, &id));
    wait_callback(&cr);
    CHECK(cr.r.id_seen == id, "%s: callback got request %lld, submitted %lld", c->name, (long long)cr.r.id_seen,
          (long long)id);
    CHECK(ids_equal(cr.r.ids, cr.r.num_ids, c->greedy, c->num_greedy), "%s: greedy tokens from ids differ", c->name);
    CHECK(cr.r.outputs_after_finish == 0, "%s: outputs after the last one", c->name);
    CHECK(llaisys_engine_poll(engine, id, 0, &again) == LLAISYS_ERR_NOT_FOUND, "%s: a callback request was pollable",
          c->name);
    result_free(&cr.r);
  }
}

/* A submit that must fail with INVALID_ARGUMENT and a message containing `needle`. */
static void expect_submit_error(llaisys_engine* engine, const llaisys_prompt* prompt,
                                const llaisys_sampling_params* params, const char* needle) {
  llaisys_request_id id = -7;
  const llaisys_status status = llaisys_engine_submit(engine, prompt, params, NULL, NULL, &id);
  CHECK(status == LLAISYS_ERR_INVALID_ARGUMENT, "submit (%s): %s, want invalid_argument", needle,
        llaisys_status_name(status));
  CHECK(strstr(llaisys_last_error(), needle) != NULL, "submit: message '%s' does not name '%s'",
        llaisys_last_error(), needle);
  CHECK(id == -7, "a refused submit wrote the request id");
}

static void test_bad_requests(llaisys_engine* engine) {
  const llaisys_prompt text = {.struct_size = sizeof(llaisys_prompt), .text = "Hello"};
  llaisys_sampling_params params = greedy_params(-1);
  expect_submit_error(engine, &text, &params, "max_tokens");
  params = greedy_params(4);
  params.temperature = 3.0f;
  expect_submit_error(engine, &text, &params, "temperature");
  params = greedy_params(4);
  const int32_t outside[] = {1, 151936};
  const llaisys_prompt bad_ids = {.struct_size = sizeof(llaisys_prompt), .token_ids = outside, .num_token_ids = 2};
  expect_submit_error(engine, &bad_ids, &params, "prompt token 151936");
  const llaisys_prompt two = {.struct_size = sizeof(llaisys_prompt), .text = "Hi", .messages_json = "[]"};
  expect_submit_error(engine, &two, &params, "exactly one");
  const llaisys_prompt bad_json = {.struct_size = sizeof(llaisys_prompt), .messages_json = "[{\"role\": "};
  expect_submit_error(engine, &bad_json, &params, "messages_json");
  const llaisys_prompt no_size = {.text = "Hi"};
  expect_submit_error(engine, &no_size, &params, "struct_size");

  llaisys_output* out = NULL;
  CHECK(llaisys_engine_poll(engine, 987654321, 0, &out) == LLAISYS_ERR_NOT_FOUND && out == NULL,
        "an unknown request id was pollable");
  CHECK(strstr(llaisys_last_error(), "987654321") != NULL, "poll message '%s' does not name the id",
        llaisys_last_error());
  int32_t* ids = NULL;
  int32_t num_ids = 0;
  CHECK(llaisys_engine_encode(engine, NULL, 0, &ids, &num_ids) == LLAISYS_ERR_INVALID_ARGUMENT, "encode(NULL)");
}

/* One request to the end by polling, all of its choices kept: results[index]. */
static void run_choices(llaisys_engine* engine, const llaisys_prompt* prompt, const llaisys_sampling_params* params,
                        result* results, int num_choices, int check_logprobs) {
  llaisys_request_id id = 0;
  REQUIRE_OK(llaisys_engine_submit(engine, prompt, params, NULL, NULL, &id));
  int finished = 0;
  const double deadline = now_s() + 120.0;
  while (!finished && now_s() < deadline) {
    llaisys_output* out = NULL;
    REQUIRE_OK(llaisys_engine_poll(engine, id, 1000, &out));
    if (out == NULL) continue;
    for (int c = 0; c < out->num_choices; ++c) {
      const llaisys_choice* choice = &out->choices[c];
      CHECK(choice->index >= 0 && choice->index < num_choices, "choice index %d", choice->index);
      if (choice->index < 0 || choice->index >= num_choices) continue;
      if (check_logprobs) {
        const int k = choice->num_top_logprobs;
        CHECK(k == params->logprobs && choice->logprobs != NULL, "choice %d: %d top logprobs", choice->index, k);
        for (int t = 0; k > 0 && t < choice->num_tokens; ++t) {
          const float chosen = choice->logprobs[t];
          CHECK(chosen <= 0.0f && chosen > -1e30f, "logprob %g", (double)chosen);
          CHECK(choice->top_ids[t * k] >= 0 && choice->top_logprobs[t * k] >= chosen,
                "token %d: top id %d logprob %g below the chosen %g", t, choice->top_ids[t * k],
                (double)choice->top_logprobs[t * k], (double)chosen);
          if (params->temperature == 0.0f) {  /* greedy picks the most likely token */
            CHECK(choice->top_ids[t * k] == choice->token_ids[t], "greedy token %d is not the top one", t);
          }
        }
      }
      /* result_add reads choice 0 only: hand it a one-choice output. */
      llaisys_choice alone = *choice;
      alone.index = 0;
      llaisys_output one = *out;
      one.choices = &alone;
      one.num_choices = 1;
      one.finished = 0;
      result_add(&results[choice->index], &one);
    }
    finished = out->finished != 0;
    llaisys_output_free(out);
  }
  CHECK(finished, "request %lld did not finish", (long long)id);
}

/* n, seeds, logprobs and stop strings travel through the C structs. */
static void test_sampling(llaisys_engine* engine) {
  const llaisys_prompt prompt = {.struct_size = sizeof(llaisys_prompt), .text = "The weather today is"};
  llaisys_sampling_params params = greedy_params(8);
  params.temperature = 0.9f;
  params.seed = 1234;
  params.n = 2;
  params.logprobs = 3;
  result first[2], second[2];
  memset(first, 0, sizeof first);
  memset(second, 0, sizeof second);
  run_choices(engine, &prompt, &params, first, 2, 1);
  run_choices(engine, &prompt, &params, second, 2, 1);
  for (int c = 0; c < 2; ++c) {
    CHECK(first[c].num_ids == 8, "choice %d: %d tokens", c, first[c].num_ids);
    CHECK(ids_equal(first[c].ids, first[c].num_ids, second[c].ids, second[c].num_ids),
          "choice %d: the same seed sampled different tokens", c);
  }
  CHECK(!ids_equal(first[0].ids, first[0].num_ids, first[1].ids, first[1].num_ids),
        "the two seeded choices sampled the same tokens");
  for (int c = 0; c < 2; ++c) {
    result_free(&first[c]);
    result_free(&second[c]);
  }

  /* Greedy logprobs: the chosen token is the top one. */
  params = greedy_params(16);
  params.logprobs = 2;
  result full[1] = {{0}};
  run_choices(engine, &prompt, &params, full, 1, 1);
  /* A stop string from the middle of that text ends the same request before it, excluded. */
  CHECK(full[0].num_ids == 16, "%d greedy tokens", full[0].num_ids);
  char* stop_text = NULL;
  REQUIRE_OK(llaisys_engine_decode(engine, full[0].ids + 6, 2, 1, &stop_text, NULL));
  const char* at = strstr(full[0].text, stop_text);
  if (stop_text[0] != '\0' && at != NULL) {
    const char* stops[] = {stop_text};
    params = greedy_params(16);
    params.stop = stops;
    params.num_stop = 1;
    llaisys_request_id id = 0;
    REQUIRE_OK(llaisys_engine_submit(engine, &prompt, &params, NULL, NULL, &id));
    result stopped = {0};
    collect_polled(engine, id, &stopped);
    CHECK(stopped.finish_reason == LLAISYS_FINISH_STOP, "stop string: finish %s",
          llaisys_finish_reason_name(stopped.finish_reason));
    const size_t before = (size_t)(at - full[0].text);
    CHECK(stopped.text_len == before && memcmp(stopped.text, full[0].text, before) == 0,
          "stop string '%s': text '%s', want the %zu bytes before it of '%s'", stop_text, stopped.text, before,
          full[0].text);
    result_free(&stopped);
  } else {
    CHECK(0, "no stop string to test in '%s'", full[0].text);
  }
  llaisys_free(stop_text);
  result_free(&full[0]);
}

/* A long request aborted mid-way frees its sequence and KV blocks. */
static void test_abort(llaisys_engine* engine) {
  const llaisys_stats idle = wait_idle_stats(engine);
  CHECK(idle.num_unfinished_requests == 0 && idle.kv_num_used_blocks == 0, "engine not idle before the abort test");
  const llaisys_prompt prompt = {.struct_size = sizeof(llaisys_prompt), .text = "Once upon a time"};
  const int max_tokens = 3000;
  const llaisys_sampling_params params = greedy_params(max_tokens);
  llaisys_request_id id = 0;
  REQUIRE_OK(llaisys_engine_submit(engine, &prompt, &params, NULL, NULL, &id));
  result r = {0};
  const double deadline = now_s() + 120.0;
  while (r.num_ids < 8 && !r.finished && now_s() < deadline) {
    llaisys_output* out = NULL;
    REQUIRE_OK(llaisys_engine_poll(engine, id, 1000, &out));
    if (out != NULL) {
      result_add(&r, out);
      llaisys_output_free(out);
    }
  }
  CHECK(r.num_ids >= 8 && !r.finished, "the long request made %d tokens (finished %d)", r.num_ids, r.finished);
  /* While it runs, the stats show it (so the check after the abort can fail). */
  const llaisys_stats running = get_stats(engine);
  CHECK(running.num_running_seqs == 1 && running.kv_num_used_blocks > 0 && running.num_in_flight == 1,
        "running: %d seqs, %d used blocks, %d in flight", running.num_running_seqs, running.kv_num_used_blocks,
        running.num_in_flight);

  REQUIRE_OK(llaisys_engine_abort(engine, id));
  collect_polled(engine, id, &r);
  CHECK(r.finish_reason == LLAISYS_FINISH_ABORT, "aborted request finished with %s",
        llaisys_finish_reason_name(r.finish_reason));
  CHECK(r.num_ids < max_tokens, "the aborted request ran to max_tokens");
  REQUIRE_OK(llaisys_engine_abort(engine, id));  /* idempotent */
  const llaisys_stats after = wait_idle_stats(engine);
  CHECK(after.num_unfinished_requests == 0 && after.num_running_seqs == 0 && after.num_waiting_seqs == 0,
        "after abort: %d unfinished, %d running, %d waiting", after.num_unfinished_requests, after.num_running_seqs,
        after.num_waiting_seqs);
  CHECK(after.kv_num_used_blocks == 0 && after.kv_usage == 0.0 && after.num_in_flight == 0,
        "after abort: %d KV blocks still used, %d in flight", after.kv_num_used_blocks, after.num_in_flight);
  CHECK(after.kv_num_free_blocks + after.kv_num_cached_blocks >= after.kv_num_blocks,
        "after abort: %d free + %d cached of %d blocks", after.kv_num_free_blocks, after.kv_num_cached_blocks,
        after.kv_num_blocks);
  result_free(&r);
}

/* 32 prompts in flight at once: each equals the same prompt run alone. */
enum { kNumConcurrent = 32, kConcurrentTokens = 12 };

static void test_concurrent(llaisys_engine* engine) {
  char prompts[kNumConcurrent][96];
  for (int i = 0; i < kNumConcurrent; ++i) {
    snprintf(prompts[i], sizeof prompts[i], "Request %d of the batch:%.*s tell me about the number %d.", i, i % 7,
             "       ", i * 37 + 11);
  }
  const llaisys_sampling_params params = greedy_params(kConcurrentTokens);

  /* Alone, one after another (callbacks). */
  result alone[kNumConcurrent];
  for (int i = 0; i < kNumConcurrent; ++i) {
    const llaisys_prompt prompt = {.struct_size = sizeof(llaisys_prompt), .text = prompts[i]};
    callback_result cr = {.r = {0}};
    atomic_init(&cr.done, 0);
    llaisys_request_id id = 0;
    REQUIRE_OK(llaisys_engine_submit(engine, &prompt, &params, on_output, &cr, &id));
    wait_callback(&cr);
    alone[i] = cr.r;
    CHECK(alone[i].num_ids == kConcurrentTokens, "prompt %d alone: %d tokens", i, alone[i].num_ids);
  }

  /* All at once (polling). */
  const llaisys_stats before = wait_idle_stats(engine);
  llaisys_request_id ids[kNumConcurrent];
  result together[kNumConcurrent];
  memset(together, 0, sizeof together);
  for (int i = 0; i < kNumConcurrent; ++i) {
    const llaisys_prompt prompt = {.struct_size = sizeof(llaisys_prompt), .text = prompts[i]};
    REQUIRE_OK(llaisys_engine_submit(engine, &prompt, &params, NULL, NULL, &ids[i]));
    for (int j = 0; j < i; ++j) CHECK(ids[j] != ids[i], "requests %d and %d got the same id", j, i);
  }
  int unfinished = kNumConcurrent;
  const double deadline = now_s() + 300.0;
  while (unfinished > 0 && now_s() < deadline) {
    int progressed = 0;
    int first_unfinished = -1;
    for (int i = 0; i < kNumConcurrent; ++i) {
      if (together[i].finished) continue;
      if (first_unfinished < 0) first_unfinished = i;
      llaisys_output* out = NULL;
      REQUIRE_OK(llaisys_engine_poll(engine, ids[i], 0, &out));
      if (out == NULL) continue;
      CHECK(out->request_id == ids[i], "request %lld's output polled for %lld", (long long)out->request_id,
            (long long)ids[i]);
      result_add(&together[i], out);
      llaisys_output_free(out);
      progressed = 1;
      if (together[i].finished) --unfinished;
    }
    if (!progressed && first_unfinished >= 0) {  /* wait for news rather than spin */
      llaisys_output* out = NULL;
      REQUIRE_OK(llaisys_engine_poll(engine, ids[first_unfinished], 20, &out));
      if (out != NULL) {
        result_add(&together[first_unfinished], out);
        llaisys_output_free(out);
        if (together[first_unfinished].finished) --unfinished;
      }
    }
  }
  CHECK(unfinished == 0, "%d of the 32 requests did not finish", unfinished);
  const llaisys_stats after = wait_idle_stats(engine);
  for (int i = 0; i < kNumConcurrent; ++i) {
    CHECK(ids_equal(together[i].ids, together[i].num_ids, alone[i].ids, alone[i].num_ids),
          "prompt %d: batched tokens differ from alone", i);
    CHECK(together[i].text_len == alone[i].text_len &&
              memcmp(together[i].text, alone[i].text, alone[i].text_len) == 0,
          "prompt %d: batched text differs from alone", i);
    CHECK(together[i].finish_reason == LLAISYS_FINISH_LENGTH, "prompt %d: finish %s", i,
          llaisys_finish_reason_name(together[i].finish_reason));
    CHECK(ids_equal(together[i].prompt_ids, together[i].num_prompt_ids, alone[i].prompt_ids, alone[i].num_prompt_ids),
          "prompt %d: prompt ids differ", i);
    result_free(&together[i]);
    result_free(&alone[i]);
  }
  /* They ran together: one at a time would take at least 32 x 12 steps. */
  const long long steps = (long long)(after.num_steps - before.num_steps);
  CHECK(steps > 0 && steps < kNumConcurrent * kConcurrentTokens / 2, "the 32 requests took %lld engine steps", steps);
  CHECK(after.num_generated_tokens - before.num_generated_tokens == kNumConcurrent * kConcurrentTokens,
        "%lld tokens generated, want %d", (long long)(after.num_generated_tokens - before.num_generated_tokens),
        kNumConcurrent * kConcurrentTokens);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s TINY_QWEN2_DIR CASES_FILE\n", argv[0]);
    return 2;
  }
  const char* model = argv[1];
  enum { kMaxCases = 16 };
  ref_case cases[kMaxCases];
  memset(cases, 0, sizeof cases);
  const int num_cases = read_cases(argv[2], cases, kMaxCases);
  CHECK(num_cases >= 5, "only %d reference cases in %s", num_cases, argv[2]);
  REQUIRE_OK(llaisys_set_log_level("warn"));

  test_version();
  test_open_errors(model);
  llaisys_engine* engine = NULL;
  /* f32 products: the exact path the reference was made with (README, --model-options). */
  REQUIRE_OK(llaisys_engine_open(model, "{\"model_options\": {\"matmul\": \"f32\"}, \"kv_cache_mb\": 64}", &engine));
  test_info(engine);
  double t = now_s();
  test_reference(engine, cases, num_cases);
  fprintf(stderr, "reference: %d cases (%.1f s)\n", num_cases, now_s() - t);
  test_bad_requests(engine);
  test_sampling(engine);
  t = now_s();
  test_abort(engine);
  fprintf(stderr, "abort (%.1f s)\n", now_s() - t);
  t = now_s();
  test_concurrent(engine);
  fprintf(stderr, "32 concurrent requests (%.1f s)\n", now_s() - t);
  llaisys_engine_close(engine);
  llaisys_engine_close(NULL);

  for (int i = 0; i < num_cases; ++i) {
    free(cases[i].source);
    free(cases[i].rendered);
    free(cases[i].prompt_ids);
    free(cases[i].greedy);
  }
  if (g_failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  fprintf(stderr, "all checks passed\n");
  return 0;
}
