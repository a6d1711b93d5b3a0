/* An out-of-tree plugin: plain C, built by a test with nothing but plugin_abi.h.
 * "EchoForCausalLM": vocabulary of 16; the logits after token t put 1.0 on (t + 1) % 16 and 0.0
 * elsewhere. Stateless, so the KV cache and block copies are no-ops. */
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
static llaisys_status forward(llaisys_model* model, const llaisys_forward_batch* batch, float* out,
                              uint64_t out_len, llaisys_error* error) {
  (void)model;
  (void)error;
  (void)out_len;
  for (int32_t r = 0; r < batch->num_outputs; ++r) {
    const int32_t token = batch->token_ids[batch->output_token_indices[r]];
    float* row = out + (size_t)r * ECHO_VOCAB;
    for (int v = 0; v < ECHO_VOCAB; ++v) row[v] = 0.0f;
    row[(token + 1) % ECHO_VOCAB] = 1.0f;
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
    .forward = forward,
    .copy_blocks = copy_blocks,
};

__attribute__((visibility("default"))) const llaisys_plugin* llaisys_plugin_entry(void) {
  return &kTable;
}
