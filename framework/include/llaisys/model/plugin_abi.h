/* llaisys plugin ABI, version 2.
 *
 * A plugin is a shared library that exports exactly one symbol:
 *
 *     const llaisys_plugin* llaisys_plugin_entry(void);
 *
 * returning a table that lives as long as the library stays loaded. The host checks `abi_version`
 * before touching anything else, then `struct_size` to know which trailing members exist, so the
 * table can grow at its end without breaking older plugins. Nothing C++ crosses this boundary: no
 * exceptions, no STL types, no ownership of host memory. C++ plugins should not fill this table by
 * hand: llaisys/model/plugin_export.hpp builds it from a class satisfying llaisys::Model.
 *
 * Threading: a model handle is used by one thread at a time (the engine thread). `create` may be
 * called concurrently for different models.
 *
 * Errors: every fallible call returns 0 (LLAISYS_OK) or an llaisys_error_code, and on failure fills
 * `error->message` with a NUL-terminated, human-readable explanation. After a failed `step`, the
 * model's KV contents for the tokens of that batch and the sequence slots its rows name are
 * unspecified (the host resets a slot before using it again); everything else is unchanged.
 *
 * Version 2 (this one) samples inside the model's step: the host sends per output row how to pick
 * the token (llaisys_sample_row) and gets back token ids (and logprobs when asked), not rows of
 * vocab_size floats. A version 1 plugin is refused by name and version.
 */
#ifndef LLAISYS_MODEL_PLUGIN_ABI_H_
#define LLAISYS_MODEL_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLAISYS_PLUGIN_ABI_VERSION 2
#define LLAISYS_PLUGIN_ENTRY_SYMBOL "llaisys_plugin_entry"

/* Values mirror llaisys::ErrorCode. */
typedef int32_t llaisys_status;
#define LLAISYS_OK 0

typedef struct llaisys_error {
  int32_t code;
  char message[1024];
} llaisys_error;

/* Log levels mirror llaisys::log::Level (0 trace .. 4 error). */
typedef void (*llaisys_log_fn)(void* user, int32_t level, const char* message);

typedef struct llaisys_model_params {
  uint32_t struct_size;     /* sizeof(llaisys_model_params) as the host compiled it */
  const char* model_dir;    /* Hugging Face model directory (config.json, *.safetensors, ...) */
  const char* device;       /* "cpu" or "cuda:N" */
  int32_t num_threads;      /* worker threads for CPU compute; 0 = plugin's choice */
  const char* options_json; /* plugin-specific options as a JSON object, never NULL ("{}") */
  llaisys_log_fn log;       /* may be NULL */
  void* log_user;
} llaisys_model_params;

typedef struct llaisys_model_info {
  uint32_t struct_size;
  char architecture[64];    /* the HF architecture served, e.g. "Qwen2ForCausalLM" */
  int32_t vocab_size;       /* rows of the logits */
  int32_t hidden_size;      /* width of LLAISYS_OUTPUT_HIDDEN rows */
  int32_t num_layers;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t max_context;      /* positions the model supports */
  int32_t bos_token_id;     /* -1 when none */
  int32_t num_eos_token_ids;
  int32_t eos_token_ids[8];
  int32_t kv_dtype;         /* llaisys::DType of the KV cache */
  uint64_t weight_bytes;    /* bytes of weights read for one decode step (for efficiency figures) */
  uint64_t kv_bytes_per_token; /* K and V of one token, all layers */
  /* Appended after version 1 first shipped: the host reads it only when struct_size covers it
   * (an older plugin's struct ends before it and reports 0). > 0: every layer attends at most the
   * last sliding_window positions (see llaisys_forward_batch); 0: no window, or not every layer
   * has one. Negative values are refused. */
  int32_t sliding_window;
} llaisys_model_info;

/* What the model allocates on its device before the first step: the paged KV pool (num_blocks blocks
 * of block_size tokens) and num_seq_slots sequence slots, the per-sequence sampling state that
 * llaisys_sample_row.seq_slot names (the token counts penalties read). */
typedef struct llaisys_kv_cache_config {
  int32_t num_blocks;
  int32_t block_size;
  int32_t num_seq_slots;
} llaisys_kv_cache_config;

#define LLAISYS_OUTPUT_LOGITS 0 /* rows of vocab_size floats */
#define LLAISYS_OUTPUT_HIDDEN 1 /* rows of hidden_size floats: the final-norm hidden states */

/* One forward pass over tokens of several sequences (structure of arrays, as llama.cpp's batch).
 *
 * Token i belongs to sequence seq_indices[i] at position positions[i]. Its K/V is written to slot
 * positions[i] % block_size of block block_tables[s][positions[i] / block_size], and it attends to
 * positions 0..positions[i] of its sequence (earlier positions come from the cache or from earlier
 * tokens of this batch). Within a sequence, tokens appear in increasing, consecutive positions.
 * Prefill and decode differ only in shape; one batch may mix them.
 *
 * Sliding window (llaisys_model_info.sliding_window = W > 0): token i attends only to positions
 * max(0, positions[i] - W + 1)..positions[i]. The host may then have given back the blocks wholly
 * before the window of every token of a sequence in the batch: their block-table entries are -1
 * and must never be read. Every block a token reads or writes is a valid id.
 *
 * The output has num_outputs rows, row r for token output_token_indices[r]. An index may repeat
 * (several choices sampling from one token's logits). */
typedef struct llaisys_forward_batch {
  int32_t num_tokens;
  const int32_t* token_ids;    /* [num_tokens] */
  const int32_t* positions;    /* [num_tokens] */
  const int32_t* seq_indices;  /* [num_tokens] in [0, num_seqs) */
  int32_t num_seqs;
  const int32_t* const* block_tables; /* [num_seqs] -> [block_table_lens[s]] block ids */
  const int32_t* block_table_lens;    /* [num_seqs] */
  int32_t num_outputs;
  const int32_t* output_token_indices; /* [num_outputs] in [0, num_tokens) */
  int32_t output_kind;                 /* LLAISYS_OUTPUT_* */
} llaisys_forward_batch;

/* How to pick the token of one output row, in this order (vLLM's):
 *  1. repetition penalty over the slot's prompt and output tokens (a positive logit is divided by
 *     it, a negative one multiplied), then presence and frequency penalties over its output tokens
 *     (logit -= presence + frequency * count);
 *  2. logit_bias (added; -INFINITY forbids a token);
 *  3. the allowed mask: tokens whose bit is clear can never be chosen;
 *  4. greedy (temperature <= 0: the lowest id among the maximal logits), or temperature -> min_p
 *     -> top_k -> top_p -> one draw with u = llaisys counter random (seed, counter), ties broken by
 *     the lower id everywhere. (seed, counter) -> u is Philox4x32-10 (see sampling/philox.hpp), so
 *     the token depends only on the row and its (seed, counter), never on the rest of the batch.
 * Logprobs are those of the raw row (before steps 1-4), as vLLM reports them by default. */
typedef struct llaisys_sample_row {
  float temperature;          /* <= 0: greedy */
  int32_t top_k;              /* 0: off */
  float top_p;                /* 1: off */
  float min_p;                /* 0: off */
  float repetition_penalty;   /* 1: off */
  float presence_penalty;     /* 0: off */
  float frequency_penalty;    /* 0: off */
  uint64_t seed;
  uint64_t counter;
  /* -1: no sequence state (penalties must be off). Otherwise a slot in [0, num_seq_slots): the
   * penalties read its counts, and the sampled token is added to its output counts, so the host
   * sends a sequence's history once, not every step. */
  int32_t seq_slot;
  /* 1: before sampling, reset the slot to `history`: num_history tokens, the first
   * num_history_prompt of them prompt, the rest output. 0: use the slot as the last step left it. */
  int32_t reset_slot;
  const int32_t* history;
  int32_t num_history;
  int32_t num_history_prompt;
  int32_t num_logit_bias;
  const int32_t* logit_bias_ids;     /* [num_logit_bias] */
  const float* logit_bias_values;    /* [num_logit_bias] */
  /* NULL: every token allowed. Otherwise ceil(vocab_size / 32) words; token t is allowed when bit
   * (t % 32) of word t / 32 is set. At least one allowed token. */
  const uint32_t* allowed;
  /* -1: no logprobs. n >= 0: the chosen token's logprob and the n most likely tokens'
   * (llaisys_step_output.top_*). */
  int32_t num_top_logprobs;
  /* -1, or the row of llaisys_step_output.rows that receives this row's raw logits. */
  int32_t logits_row;
} llaisys_sample_row;

/* Where the step's time went, as the model's host thread saw it (0 where a model does not say). */
typedef struct llaisys_step_timings {
  uint64_t forward_ns;        /* the pass up to the output rows */
  uint64_t sample_ns;         /* sampling them, results on the host */
} llaisys_step_timings;

/* Where a step writes. With sampling rows: tokens (always), logprobs / top_* (for rows that ask),
 * rows (logits rows that ask, rows_len = rows asked x vocab_size). Without: only rows, every output
 * row of the batch (num_outputs x row width: logits or hidden states). Unused pointers may be NULL. */
typedef struct llaisys_step_output {
  int32_t* tokens;            /* [num_outputs] the sampled token of each row */
  float* logprobs;            /* [num_outputs] the chosen token's raw logprob */
  int32_t top_width;          /* columns of top_ids / top_logprobs: >= every row's num_top_logprobs */
  int32_t* top_ids;           /* [num_outputs x top_width], most likely first; unused entries -1 */
  float* top_logprobs;        /* [num_outputs x top_width] */
  float* rows;
  uint64_t rows_len;          /* floats in rows */
  llaisys_step_timings* timings; /* NULL, or filled by the step */
} llaisys_step_output;

typedef struct llaisys_block_copy {
  int32_t src;
  int32_t dst;
} llaisys_block_copy;

typedef struct llaisys_model llaisys_model; /* opaque, owned by the plugin */

/* abi_version, struct_size and name keep their places in every ABI version, so a host can name a
 * plugin built for another version when it refuses it. */
typedef struct llaisys_plugin {
  int32_t abi_version;                /* LLAISYS_PLUGIN_ABI_VERSION the plugin was built against */
  uint32_t struct_size;               /* sizeof(llaisys_plugin) as the plugin compiled it */
  const char* name;                   /* short unique name, e.g. "qwen2" */
  const char* version;                /* the plugin's own version text */
  const char* const* architectures;   /* NULL-terminated HF `architectures` it serves */

  /* Loads the model in params->model_dir. On success *out owns it until destroy(). */
  llaisys_status (*create)(const llaisys_model_params* params, llaisys_model** out,
                           llaisys_error* error);
  void (*destroy)(llaisys_model* model);
  llaisys_status (*get_info)(const llaisys_model* model, llaisys_model_info* info,
                             llaisys_error* error);
  /* Allocates (or re-allocates, dropping all contents) the paged KV pool and the sequence slots.
   * Before the first step(). */
  llaisys_status (*init_kv_cache)(llaisys_model* model, const llaisys_kv_cache_config* config,
                                  llaisys_error* error);
  /* One forward pass over `batch`. sampling: NULL, or [batch->num_outputs] rows (then the batch's
   * output kind is LLAISYS_OUTPUT_LOGITS): each output row is sampled as its llaisys_sample_row
   * says. See llaisys_step_output for what is written where. */
  llaisys_status (*step)(llaisys_model* model, const llaisys_forward_batch* batch,
                         const llaisys_sample_row* sampling, const llaisys_step_output* out,
                         llaisys_error* error);
  /* Copies whole KV blocks (all layers) src -> dst, in order. Used for copy-on-write of a shared
   * partially filled block. */
  llaisys_status (*copy_blocks)(llaisys_model* model, const llaisys_block_copy* copies,
                                int32_t num_copies, llaisys_error* error);
  /* Appended after version 2 first shipped: present when struct_size covers it, and may be NULL.
   * step, for a host that computes the rows' allowed masks while the forward pass runs (grammar masks
   * are CPU work): when called, the `allowed` words may not be written yet. The model calls
   * masks_ready(masks_user) once, after its forward pass and before it reads any `allowed` word; it
   * returns once they are all written (nonzero: the host could not make them; the step then fails). */
  llaisys_status (*step_pending_masks)(llaisys_model* model, const llaisys_forward_batch* batch,
                                       const llaisys_sample_row* sampling, const llaisys_step_output* out,
                                       int32_t (*masks_ready)(void* masks_user), void* masks_user,
                                       llaisys_error* error);
} llaisys_plugin;

typedef const llaisys_plugin* (*llaisys_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LLAISYS_MODEL_PLUGIN_ABI_H_ */
