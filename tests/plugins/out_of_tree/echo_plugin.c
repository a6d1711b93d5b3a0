/* An out-of-tree plugin: plain C, built by a test with nothing but plugin_abi.h.
 * "EchoForCausalLM": vocabulary of 16; the logits after token t put 1.0 on (t + 1) % 16 and 0.0
 * elsewhere. Stateless, so the KV cache and block copies are no-ops. It samples greedily only (with
 * the allowed mask) and refuses other sampling rows by name: a plugin need not implement the whole
 * sampler, but must never ignore what it is asked. */
#include <stdlib.h>
#include <string.h>

#include "llaisys/model/plugin_abi.h"

#define ECHO_VOCAB 16

struct llaisys_model {
  int kv_blocks;
};

static llaisys_status create(const llaisys_model_params* params, llaisys_model** out,
                             llaisys_error* error) {
  (void)params;
  *out = calloc(1, sizeof(llaisys_model));
  if (*out == NULL) {
    error->code = 4;
    strcpy(error->message, "out of memory");
    return 4;
  }
  return LLAISYS_OK;
}
static void destroy(llaisys_model* model) { free(model); }
static llaisys_status get_info(const llaisys_model* model, llaisys_model_info* info,
                               llaisys_error* error) {
  (void)model;
  (void)error;
  memset(info, 0, sizeof(*info));
  info->struct_size = sizeof(*info);
  strcpy(info->architecture, "EchoForCausalLM");
  info->vocab_size = ECHO_VOCAB;
  info->hidden_size = 4;
  info->num_layers = 1;
  info->num_kv_heads = 1;
  info->head_dim = 1;
  info->max_context = 1024;
  info->bos_token_id = -1;
  info->num_eos_token_ids = 1;
  info->eos_token_ids[0] = 0;
  info->kv_dtype = 0;
  return LLAISYS_OK;
}
static llaisys_status init_kv(llaisys_model* model, const llaisys_kv_cache_config* config,
                              llaisys_error* error) {
  (void)error;
  model->kv_blocks = config->num_blocks;
  return LLAISYS_OK;
}
static llaisys_status refuse(llaisys_error* error, const char* message) {
  error->code = 1; /* invalid_argument */
  strncpy(error->message, message, sizeof(error->message) - 1);
  error->message[sizeof(error->message) - 1] = '\0';
  return 1;
}
static int allowed(const llaisys_sample_row* row, int32_t token) {
  return row->allowed == NULL || ((row->allowed[token / 32] >> (token % 32)) & 1u) != 0;
}
static llaisys_status step(llaisys_model* model, const llaisys_forward_batch* batch,
                           const llaisys_sample_row* sampling, const llaisys_step_output* out,
                           llaisys_error* error) {
  (void)model;
  for (int32_t r = 0; r < batch->num_outputs; ++r) {
    const int32_t next = (batch->token_ids[batch->output_token_indices[r]] + 1) % ECHO_VOCAB;
    if (sampling == NULL) {
      float* row = out->rows + (size_t)r * ECHO_VOCAB;
      for (int v = 0; v < ECHO_VOCAB; ++v) row[v] = 0.0f;
      row[next] = 1.0f;
      continue;
    }
    const llaisys_sample_row* s = &sampling[r];
    if (s->temperature > 0.0f || s->repetition_penalty != 1.0f || s->presence_penalty != 0.0f ||
        s->frequency_penalty != 0.0f || s->num_logit_bias > 0 || s->num_top_logprobs >= 0 ||
        s->logits_row >= 0) {
      return refuse(error, "echo: only greedy sampling (temperature 0, no penalties, bias or logprobs)");
    }
    int32_t token = next;
    for (int32_t v = 0; !allowed(s, token) && v < ECHO_VOCAB; ++v) token = v; /* lowest allowed id */
    out->tokens[r] = token;
  }
  return LLAISYS_OK;
}
static llaisys_status copy_blocks(llaisys_model* model, const llaisys_block_copy* copies,
                                  int32_t num_copies, llaisys_error* error) {
  (void)model;
  (void)copies;
  (void)num_copies;
  (void)error;
  return LLAISYS_OK;
}

static const char* const kArchitectures[] = {"EchoForCausalLM", NULL};
static const llaisys_plugin kTable = {
    .abi_version = LLAISYS_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(llaisys_plugin),
    .name = "echo",
    .version = "1.0",
    .architectures = kArchitectures,
    .create = create,
    .destroy = destroy,
    .get_info = get_info,
    .init_kv_cache = init_kv,
    .step = step,
    .copy_blocks = copy_blocks,
};

__attribute__((visibility("default"))) const llaisys_plugin* llaisys_plugin_entry(void) {
  return &kTable;
}
