/* llaisys plugin ABI, version 1.
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
 * `error->message` with a NUL-terminated, human-readable explanation. After a failed `forward`, the
 * model's KV contents for the tokens of that batch are unspecified; everything else is unchanged.
 */
#ifndef LLAISYS_MODEL_PLUGIN_ABI_H_
#define LLAISYS_MODEL_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLAISYS_PLUGIN_ABI_VERSION 1
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

/* The paged KV pool the model allocates (on its device): num_blocks blocks of block_size tokens. */
typedef struct llaisys_kv_cache_config {
  int32_t num_blocks;
  int32_t block_size;
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
 * The output has num_outputs rows, row r for token output_token_indices[r]. */
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

typedef struct llaisys_block_copy {
  int32_t src;
  int32_t dst;
} llaisys_block_copy;

typedef struct llaisys_model llaisys_model; /* opaque, owned by the plugin */

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
  /* Allocates (or re-allocates, dropping all contents) the paged KV pool. Before the first
   * forward(). */
  llaisys_status (*init_kv_cache)(llaisys_model* model, const llaisys_kv_cache_config* config,
                                  llaisys_error* error);
  /* `out` holds out_len floats; out_len must be num_outputs x row width. */
  llaisys_status (*forward)(llaisys_model* model, const llaisys_forward_batch* batch, float* out,
                            uint64_t out_len, llaisys_error* error);
  /* Copies whole KV blocks (all layers) src -> dst, in order. Used for copy-on-write of a shared
   * partially filled block. */
  llaisys_status (*copy_blocks)(llaisys_model* model, const llaisys_block_copy* copies,
                                int32_t num_copies, llaisys_error* error);
} llaisys_plugin;

typedef const llaisys_plugin* (*llaisys_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LLAISYS_MODEL_PLUGIN_ABI_H_ */
