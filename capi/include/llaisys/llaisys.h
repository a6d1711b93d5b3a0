/* llaisys C API, version 1.1: the continuous-batching engine over a model directory or GGUF file,
 * for programs in C and for language bindings (the Python package builds on it), and (since 1.1) a
 * model-level API for tests and research: one model opened through the plugin registry, forward
 * passes over batches whose KV blocks the caller manages, logits or hidden-state rows, KV block
 * copies.
 *
 * C99, no C++ types. Link with -lllaisys (pkg-config llaisys, or CMake's llaisys::capi).
 *
 * Versions. LLAISYS_API_VERSION_MAJOR changes when something here changes incompatibly; MINOR when
 * something is added. llaisys_version() says which version the loaded library implements: a program
 * built against this header needs the same major and at least this minor. Structs the caller fills
 * or passes start with `struct_size` (set it to sizeof the struct, or use the _init function) so they
 * can grow at their end, as the plugin ABI's do.
 *
 * Errors. Every fallible function returns 0 (LLAISYS_OK) or a status code (the values of
 * llaisys::ErrorCode, also the plugin ABI's `llaisys_error.code`), and on failure records a
 * NUL-terminated, human-readable message that llaisys_last_error() returns. The message is per
 * thread: it belongs to the latest failed call on the calling thread and stays valid until that
 * thread's next call into the library. A failed call leaves its out-parameters untouched, and no
 * function aborts the process or lets a C++ exception escape.
 *
 * Memory. Every pointer the library returns through an out-parameter is the caller's to free, with
 * llaisys_free (ids, text) or llaisys_output_free (outputs); pointers inside an llaisys_output live
 * as long as the output. Pointers the caller passes in are only read during the call (the library
 * copies what it keeps). Handles are freed by their _close function.
 *
 * Threading. Every function may be called from any thread, concurrently, on the same engine, except
 * that llaisys_engine_close must be the last call on its engine (no call on that engine may be in
 * progress or follow). The engine runs its model on a thread of its own; submit, poll, abort and
 * stats only exchange messages with it. A model handle (llaisys_model_handle) is meant for one thread
 * at a time: calls on it from several threads are serialized (they take turns, never run at once),
 * llaisys_model_close must be its last call, and different handles are independent.
 */
#ifndef LLAISYS_LLAISYS_H_
#define LLAISYS_LLAISYS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LLAISYS_API
#else
#define LLAISYS_API __attribute__((visibility("default")))
#endif

/* ---- versions and errors ---------------------------------------------------------------------- */

#define LLAISYS_API_VERSION_MAJOR 1
#define LLAISYS_API_VERSION_MINOR 1
/* (major << 16) | minor, what llaisys_version() returns */
#define LLAISYS_API_VERSION ((LLAISYS_API_VERSION_MAJOR << 16) | LLAISYS_API_VERSION_MINOR)

/* The API version of the loaded library: (major << 16) | minor. */
LLAISYS_API uint32_t llaisys_version(void);

/* llaisys/model/plugin_abi.h defines the same two names with the same meaning. */
#ifndef LLAISYS_MODEL_PLUGIN_ABI_H_
typedef int32_t llaisys_status;
#define LLAISYS_OK 0
#endif
#define LLAISYS_ERR_INVALID_ARGUMENT 1   /* the caller's input is wrong (option, request field) */
#define LLAISYS_ERR_NOT_FOUND 2          /* a model path, request id, plugin or file that is not there */
#define LLAISYS_ERR_UNSUPPORTED 3        /* valid input this build cannot handle (dtype, device) */
#define LLAISYS_ERR_OUT_OF_MEMORY 4
#define LLAISYS_ERR_IO 5
#define LLAISYS_ERR_PARSE 6              /* malformed JSON, model files, tokenizer or template */
#define LLAISYS_ERR_PLUGIN 7             /* no usable plugin for the model */
#define LLAISYS_ERR_INTERNAL 8           /* a bug in llaisys */
#define LLAISYS_ERR_CANCELLED 9          /* the engine is closing */
#define LLAISYS_ERR_RESOURCE_EXHAUSTED 10 /* a limit was reached (requests in flight) */

/* "ok", "invalid_argument", ...; "unknown" for other values. Static storage. */
LLAISYS_API const char* llaisys_status_name(llaisys_status status);
/* The message of this thread's latest failed call ("" when there is none). */
LLAISYS_API const char* llaisys_last_error(void);

/* Frees a buffer the library returned (ids, text). NULL is ignored. */
LLAISYS_API void llaisys_free(void* buffer);

/* ---- logging (process-wide) ------------------------------------------------------------------- */

/* Levels: 0 trace, 1 debug, 2 info, 3 warn, 4 error. Called from any thread, the engine's included;
 * must not call into the library. */
typedef void (*llaisys_log_callback)(void* user, int32_t level, const char* message);
/* "trace", "debug", "info" (the default), "warn", "error" or "off". */
LLAISYS_API llaisys_status llaisys_set_log_level(const char* level);
/* Where messages at or above the level go; NULL: standard error (the default). A plugin filters
 * its own messages (a model's one-line load summary comes at info). */
LLAISYS_API void llaisys_set_log_callback(llaisys_log_callback callback, void* user);

/* ---- engine ----------------------------------------------------------------------------------- */

typedef struct llaisys_engine llaisys_engine;
typedef int64_t llaisys_request_id;

/* Opens a Hugging Face model directory or a GGUF file and starts its engine.
 *
 * options_json: NULL or a JSON object with any of these keys (the apps' engine flags; an unknown key
 * is refused with a message naming it):
 *   "max_num_seqs"        sequences decoding at once, [1, 4096], default 64
 *   "max_batched_tokens"  tokens per forward pass, [1, 2^20], default 2048
 *   "kv_cache_mb"         KV cache budget in MiB, [1, 2^24], default 1024
 *   "block_size"          tokens per KV block, [1, 1024], default 16
 *   "max_context"         context limit in tokens, [0, 2^24], 0: the model's; default 4096
 *   "no_prefix_cache"     true: never reuse KV across requests; default false
 *   "seed"                seed (>= 0) of requests without their own; default: random
 *   "threads"             compute threads, [0, 4096], 0: all cores (default)
 *   "device"              "cpu" (default) or "cuda:N"
 *   "model_options"       the plugin's options, an object, e.g. {"matmul": "f32"}
 *   "chat_template_file"  a Jinja file used instead of the model's chat template
 *   "plugin_dir"          where the model plugins are; default: llaisys/plugins beside this
 *                         library (<prefix>/lib/llaisys/plugins)
 *   "max_in_flight"       unfinished requests at most, [1, 2^20], default 4096; more are refused
 *                         with LLAISYS_ERR_RESOURCE_EXHAUSTED
 * Errors: INVALID_ARGUMENT (options), NOT_FOUND (no such model path), PLUGIN (no plugin serves the
 * model), PARSE / IO / UNSUPPORTED (the model's files). Opening takes as long as loading the weights. */
LLAISYS_API llaisys_status llaisys_engine_open(const char* model_path, const char* options_json,
                                               llaisys_engine** engine);

/* Aborts what is unfinished (callbacks receive their final output, finish reason ABORT, before this
 * returns), stops the engine thread and frees the engine. Outputs already returned stay valid.
 * NULL is ignored. Must not be called from an output callback. */
LLAISYS_API void llaisys_engine_close(llaisys_engine* engine);

typedef struct llaisys_engine_info {
  uint32_t struct_size;          /* in: sizeof(llaisys_engine_info); out: the bytes filled */
  char architecture[64];         /* e.g. "Qwen2ForCausalLM" */
  int32_t vocab_size;
  int32_t max_context;           /* positions the model supports */
  int32_t max_sequence_tokens;   /* prompt + output of one request: the context or the KV cache */
  int32_t bos_token_id;          /* -1 when none */
  int32_t num_eos_token_ids;
  int32_t eos_token_ids[8];
  int32_t has_tokenizer;         /* 0: token ids only (no text prompts, text outputs or stop strings) */
  /* which template messages go through: "model", "file", "fallback: chatml", or "none" */
  char chat_template_source[32];
} llaisys_engine_info;

LLAISYS_API llaisys_status llaisys_engine_get_info(const llaisys_engine* engine, llaisys_engine_info* info);

/* ---- requests --------------------------------------------------------------------------------- */

/* What to generate from: exactly one of text, token_ids or messages_json. */
typedef struct llaisys_prompt {
  uint32_t struct_size;           /* sizeof(llaisys_prompt) */
  const char* text;               /* UTF-8, encoded with the model's special tokens (BOS) added */
  const int32_t* token_ids;       /* [num_token_ids], each in [0, vocab_size) */
  int32_t num_token_ids;
  /* A JSON array of chat messages ({"role", "content"}, OpenAI's form), rendered with the model's
   * chat template with the generation prompt added, then encoded (the template writes the special
   * tokens). */
  const char* messages_json;
  const char* chat_template_kwargs_json; /* NULL, or a JSON object of extra template variables */
} llaisys_prompt;

/* How to generate: the fields of vLLM's SamplingParams / the OpenAI API, with their defaults.
 * A C struct rather than JSON: typed, checked by the compiler, and no parsing per request; the
 * struct_size lets it grow. */
typedef struct llaisys_sampling_params {
  uint32_t struct_size;           /* sizeof(llaisys_sampling_params) */
  int32_t max_tokens;             /* generated tokens per choice, >= 0 (16); the context's end stops
                                     earlier (finish reason LENGTH), so INT32_MAX means "until then" */
  int32_t min_tokens;             /* no EOS or stop token before this many, [0, max_tokens] (0) */
  int32_t n;                      /* choices sharing the prompt, [1, 64] (1) */
  float temperature;              /* [0, 2], 0: greedy (1) */
  float top_p;                    /* (0, 1], 1: off (1) */
  int32_t top_k;                  /* >= 0, 0: off (0) */
  float min_p;                    /* [0, 1], 0: off (0) */
  float repetition_penalty;       /* > 0, 1: off (1) */
  float presence_penalty;         /* [-2, 2] (0) */
  float frequency_penalty;        /* [-2, 2] (0) */
  int64_t seed;                   /* >= 0: reproducible sampling; -1: the engine's seed (-1) */
  const char* const* stop;        /* [num_stop] stop strings, never part of the text (NULL) */
  int32_t num_stop;
  const int32_t* stop_token_ids;  /* [num_stop_token_ids] (NULL) */
  int32_t num_stop_token_ids;
  int32_t ignore_eos;             /* nonzero: keep going past the model's EOS (0) */
  int32_t logprobs;               /* -1: none; k in [0, 20]: each token's logprob and the top k (-1) */
  int32_t skip_special_tokens;    /* nonzero: special tokens are left out of the text (1) */
} llaisys_sampling_params;

/* Sets struct_size and every default above. */
LLAISYS_API void llaisys_sampling_params_init(llaisys_sampling_params* params);

/* finish reasons */
#define LLAISYS_FINISH_NONE 0      /* the choice is still running */
#define LLAISYS_FINISH_STOP 1      /* EOS, a stop token or a stop string */
#define LLAISYS_FINISH_LENGTH 2    /* max_tokens, or the end of the context or KV cache */
#define LLAISYS_FINISH_ABORT 3     /* llaisys_engine_abort, or the engine closed */
#define LLAISYS_FINISH_ERROR 4     /* a failed model pass (finish_detail says what) */
#define LLAISYS_FINISH_IGNORED 5   /* the request could never run, e.g. a prompt longer than the context */

/* "running", "stop", "length", "abort", "error", "ignored"; "unknown" otherwise. Static storage. */
LLAISYS_API const char* llaisys_finish_reason_name(int32_t reason);

/* What one choice produced since the previous output of its request. */
typedef struct llaisys_choice {
  int32_t index;                  /* 0..n-1 */
  const char* text;               /* new UTF-8 text, NUL-terminated ("" without a tokenizer) */
  size_t text_len;                /* its bytes (text may hold a NUL from a byte token) */
  const int32_t* token_ids;       /* [num_tokens] new tokens */
  int32_t num_tokens;
  const float* logprobs;          /* [num_tokens], or NULL when logprobs were not asked for */
  int32_t num_top_logprobs;       /* k: the request's logprobs (0 when not asked for) */
  const int32_t* top_ids;         /* [num_tokens * k], most likely first; -1 pads a short row */
  const float* top_logprobs;      /* [num_tokens * k] */
  int32_t finish_reason;          /* LLAISYS_FINISH_*, NONE until the choice's last output */
  const char* finish_detail;      /* the stop string or token, or the error; "" when none */
} llaisys_choice;

/* Everything new for one request: the outputs the engine made since the previous delivery, merged.
 * Every accepted request delivers outputs until one with finished != 0, then nothing more. */
typedef struct llaisys_output {
  uint32_t struct_size;           /* sizeof(llaisys_output) as the library knows it */
  llaisys_request_id request_id;
  int32_t finished;               /* nonzero: the request's last output (every choice has finished) */
  int32_t num_choices;            /* the choices with news, in index order */
  const llaisys_choice* choices;
  /* The prompt as the model saw it (rendered and encoded), in the request's first output only;
   * NULL with 0 afterwards. */
  const int32_t* prompt_token_ids;
  int32_t num_prompt_token_ids;
  int32_t prompt_tokens;          /* usage so far (final in the last output) */
  int32_t completion_tokens;      /* over all choices */
  int32_t cached_tokens;          /* prompt tokens served from the prefix cache */
} llaisys_output;

LLAISYS_API void llaisys_output_free(llaisys_output* output);

/* Receives a request's outputs, in order, on the engine's thread. The callee owns `output` (free it
 * with llaisys_output_free, from any thread, whenever it likes). It must return quickly and must not
 * block on the engine: it may call submit, abort, stats and the text functions, not close, and not
 * poll with a timeout. */
typedef void (*llaisys_output_callback)(void* user, llaisys_output* output);

/* Validates and queues a request; returns at once with its id (> 0, unique in this engine).
 * params: NULL for the defaults. on_output: NULL to receive the outputs with llaisys_engine_poll,
 * else they all go to on_output(user, ...).
 * Errors: INVALID_ARGUMENT with the field named (negative max_tokens, ids outside the vocabulary,
 * a bad messages array, text without a tokenizer, ...), RESOURCE_EXHAUSTED (max_in_flight), CANCELLED
 * (closing). A prompt too long for the context is accepted and finishes as IGNORED. */
LLAISYS_API llaisys_status llaisys_engine_submit(llaisys_engine* engine, const llaisys_prompt* prompt,
                                                 const llaisys_sampling_params* params,
                                                 llaisys_output_callback on_output, void* user,
                                                 llaisys_request_id* request_id);

/* The outputs of a polled request since the previous poll, merged into one. timeout_ms: 0 returns at
 * once, > 0 waits at most that long, < 0 waits for an output. *output is NULL when nothing came in
 * time. After the finished output the request is forgotten: polling it again is NOT_FOUND, as is an
 * id that was never submitted or delivers through a callback. Poll a request from one thread at a
 * time (concurrent polls of one request take turns). */
LLAISYS_API llaisys_status llaisys_engine_poll(llaisys_engine* engine, llaisys_request_id request_id,
                                               int32_t timeout_ms, llaisys_output** output);

/* Asks the engine to stop a request: before its next step the request's KV is freed and its final
 * output (finish reason ABORT) is delivered. Idempotent; ids that are finished or unknown are
 * ignored. */
LLAISYS_API llaisys_status llaisys_engine_abort(llaisys_engine* engine, llaisys_request_id request_id);

/* A snapshot taken after the engine's latest step (it may lag a delivered output by one step). */
typedef struct llaisys_stats {
  uint32_t struct_size;           /* in: sizeof(llaisys_stats); out: the bytes filled */
  int32_t num_in_flight;          /* accepted requests whose last output has not been delivered */
  int32_t num_unfinished_requests;/* requests inside the engine (queued, running) */
  int32_t num_running_seqs;
  int32_t num_waiting_seqs;       /* queued or preempted */
  int32_t kv_block_size;
  int32_t kv_num_blocks;
  int32_t kv_num_used_blocks;     /* pinned by sequences */
  int32_t kv_num_free_blocks;
  int32_t kv_num_cached_blocks;   /* held by the prefix cache (reclaimable when unpinned) */
  double kv_usage;                /* kv_num_used_blocks / kv_num_blocks */
  int64_t prefix_query_tokens;    /* prompt tokens looked up in the prefix cache */
  int64_t prefix_hit_tokens;      /* of which found */
  int64_t num_preemptions;
  int64_t num_generated_tokens;
  int64_t num_steps;
} llaisys_stats;

LLAISYS_API llaisys_status llaisys_engine_stats(const llaisys_engine* engine, llaisys_stats* stats);

/* ---- the model's tokenizer and chat template -------------------------------------------------- */
/* NOT_FOUND / INVALID_ARGUMENT when the model has no tokenizer (or no usable template). */

/* *ids: [*num_ids] token ids, freed with llaisys_free. add_special_tokens: nonzero adds what the
 * tokenizer adds to plain text (BOS). */
LLAISYS_API llaisys_status llaisys_engine_encode(const llaisys_engine* engine, const char* text,
                                                 int32_t add_special_tokens, int32_t** ids, int32_t* num_ids);

/* *text: NUL-terminated UTF-8, freed with llaisys_free; *text_len (may be NULL) its bytes. */
LLAISYS_API llaisys_status llaisys_engine_decode(const llaisys_engine* engine, const int32_t* ids,
                                                 int32_t num_ids, int32_t skip_special_tokens, char** text,
                                                 size_t* text_len);

/* Renders a JSON array of messages with the engine's chat template (the one submit uses).
 * options_json: NULL or an object with "add_generation_prompt" (default true), "tools" (an array)
 * and "chat_template_kwargs" (an object of extra variables). *text: freed with llaisys_free. */
LLAISYS_API llaisys_status llaisys_engine_apply_chat_template(const llaisys_engine* engine,
                                                              const char* messages_json,
                                                              const char* options_json, char** text);

/* ---- model (since 1.1): one model, forward passes, KV blocks the caller manages ----------------- */
/* For tests and research: what the engine does per step, by hand. No tokenizer, no scheduler, no
 * sampling: token ids in, logits or final hidden-state rows out. The caller owns the KV layout: it
 * sizes the pool with llaisys_model_init_kv_cache, gives each sequence a table of block ids (block b
 * holds the K/V of positions [b * block_size, (b + 1) * block_size)), and a forward pass writes each
 * token's K/V into the block its position falls in, reading the earlier positions' K/V from the
 * blocks before. Which sequences share or own blocks is entirely the caller's business. */

typedef struct llaisys_model_handle llaisys_model_handle;

/* Opens a Hugging Face model directory or a GGUF file through the plugin registry, as
 * llaisys_engine_open does (same plugins, same loading), without an engine or tokenizer.
 * options_json: NULL or a JSON object with any of the engine options that concern the model:
 *   "threads" [0, 4096] (0: all cores), "device" ("cpu" or "cuda:N"), "model_options" (the plugin's,
 *   an object), "plugin_dir" (default: llaisys/plugins beside this library).
 * Another key (an engine option included) is refused with a message naming it.
 * Errors: as llaisys_engine_open. The model has no KV cache until llaisys_model_init_kv_cache. */
LLAISYS_API llaisys_status llaisys_model_open(const char* model_path, const char* options_json,
                                              llaisys_model_handle** model);

/* Frees the model and its KV cache. NULL is ignored. */
LLAISYS_API void llaisys_model_close(llaisys_model_handle* model);

typedef struct llaisys_model_props {
  uint32_t struct_size;          /* in: sizeof(llaisys_model_props); out: the bytes filled */
  char architecture[64];         /* e.g. "Qwen2ForCausalLM" (as the plugin names it) */
  int32_t vocab_size;            /* width of a logits row */
  int32_t hidden_size;           /* width of a hidden-state row */
  int32_t max_context;           /* positions the model supports: [0, max_context) */
  int32_t num_layers;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t bos_token_id;          /* -1 when none */
  int32_t num_eos_token_ids;
  int32_t eos_token_ids[8];
  int32_t sliding_window;        /* > 0: every layer attends the last sliding_window positions */
  uint64_t kv_bytes_per_token;   /* K + V, all layers */
  uint64_t weight_bytes;         /* weights read per forward pass */
} llaisys_model_props;

LLAISYS_API llaisys_status llaisys_model_get_info(const llaisys_model_handle* model, llaisys_model_props* info);

/* Allocates the KV pool: num_blocks blocks of block_size token slots, all layers, on the model's
 * device, dropping any previous contents (every block table made before is void). num_blocks in
 * [1, 2^24], block_size in [1, 1024], num_seq_slots >= 0 (sampling state, unused by this API: 0 is
 * fine). Must precede the first forward pass. OUT_OF_MEMORY when the pool does not fit. */
LLAISYS_API llaisys_status llaisys_model_init_kv_cache(llaisys_model_handle* model, int32_t num_blocks,
                                                       int32_t block_size, int32_t num_seq_slots);

/* what a forward pass writes per output row */
#define LLAISYS_FORWARD_LOGITS 0 /* vocab_size floats: the next token's logits */
#define LLAISYS_FORWARD_HIDDEN 1 /* hidden_size floats: the final-norm hidden state (embeddings) */

/* One forward pass: tokens of several sequences, as a structure of arrays. Every pointer is read
 * during the call only. */
typedef struct llaisys_model_batch {
  uint32_t struct_size;                 /* sizeof(llaisys_model_batch) */
  int32_t num_tokens;                   /* >= 0 */
  const int32_t* token_ids;             /* [num_tokens], each in [0, vocab_size) */
  const int32_t* positions;             /* [num_tokens], in [0, max_context) */
  const int32_t* seq_indices;           /* [num_tokens], in [0, num_seqs) */
  int32_t num_seqs;
  const int32_t* const* block_tables;   /* [num_seqs] -> [block_table_lens[s]] block ids in [0, num_blocks) */
  const int32_t* block_table_lens;      /* [num_seqs] */
  int32_t num_outputs;                  /* rows written */
  const int32_t* output_token_indices;  /* [num_outputs], in [0, num_tokens); row r is token [r]'s */
  int32_t output_kind;                  /* LLAISYS_FORWARD_LOGITS or LLAISYS_FORWARD_HIDDEN */
} llaisys_model_batch;

/* Runs one forward pass over `batch` and writes its output rows, row r (of num_outputs) at
 * rows_out + r * width, width vocab_size (LOGITS) or hidden_size (HIDDEN).
 * Rules, each checked before anything runs (INVALID_ARGUMENT naming the token, sequence or block, and
 * nothing changes): a sequence's tokens in the batch have consecutive positions, in batch order;
 * its block table covers every position of its tokens (position / block_size < its length); every
 * block id is inside the pool (with a sliding window, leading entries wholly before the window may be
 * -1); positions inside the context; rows_capacity (in floats) at least num_outputs * width.
 * A token at position p attends the K/V written earlier at positions [0, p) of its sequence's blocks
 * (by this or earlier passes) and its own. The rows of a token depend only on its sequence's tokens,
 * never on the rest of the batch (bit-exact on the CPU). Needs llaisys_model_init_kv_cache first. */
LLAISYS_API llaisys_status llaisys_model_forward(llaisys_model_handle* model, const llaisys_model_batch* batch,
                                                 float* rows_out, size_t rows_capacity);

/* Copies the K/V of whole blocks, all layers, in array order (a later copy sees an earlier one's
 * result). Blocks in [0, num_blocks). count 0 does nothing (copies may then be NULL). */
typedef struct llaisys_kv_block_copy {
  int32_t src;
  int32_t dst;
} llaisys_kv_block_copy;

LLAISYS_API llaisys_status llaisys_model_copy_blocks(llaisys_model_handle* model,
                                                     const llaisys_kv_block_copy* copies, int32_t count);

#ifdef __cplusplus
}
#endif

#endif /* LLAISYS_LLAISYS_H_ */
