/* One source, several deliberately broken plugins (BROKEN_KIND_* selects which). */
#include <string.h>

#include "llaisys/model/plugin_abi.h"

static llaisys_status fail(llaisys_error* error) {
  if (error) {
    error->code = 3;
    strcpy(error->message, "test plugin cannot load models");
  }
  return 3;
}
static llaisys_status create(const llaisys_model_params* p, llaisys_model** out, llaisys_error* e) {
  (void)p;
  (void)out;
  return fail(e);
}
static void destroy(llaisys_model* m) { (void)m; }
static llaisys_status get_info(const llaisys_model* m, llaisys_model_info* i, llaisys_error* e) {
  (void)m;
  (void)i;
  return fail(e);
}
static llaisys_status init_kv(llaisys_model* m, const llaisys_kv_cache_config* c, llaisys_error* e) {
  (void)m;
  (void)c;
  return fail(e);
}
static llaisys_status step(llaisys_model* m, const llaisys_forward_batch* b, const llaisys_sample_row* s,
                           const llaisys_step_output* o, llaisys_error* e) {
  (void)m;
  (void)b;
  (void)s;
  (void)o;
  return fail(e);
}
static llaisys_status copy_blocks(llaisys_model* m, const llaisys_block_copy* c, int32_t n,
                                  llaisys_error* e) {
  (void)m;
  (void)c;
  (void)n;
  return fail(e);
}

#if defined(BROKEN_KIND_no_architectures)
static const char* const kArchitectures[] = {NULL};
#elif defined(BROKEN_KIND_dup_arch)
static const char* const kArchitectures[] = {"LlaisysMockForCausalLM", NULL};
#else
static const char* const kArchitectures[] = {"BrokenForCausalLM", NULL};
#endif

static llaisys_plugin kTable = {
#if defined(BROKEN_KIND_bad_abi)
    .abi_version = LLAISYS_PLUGIN_ABI_VERSION + 40,
#elif defined(BROKEN_KIND_abi_v1)
    .abi_version = 1, /* a plugin built before sampling moved into the step */
#else
    .abi_version = LLAISYS_PLUGIN_ABI_VERSION,
#endif
    .struct_size = sizeof(llaisys_plugin),
#if defined(BROKEN_KIND_dup_arch)
    .name = "dup-mock",
#else
    .name = "broken",
#endif
    .version = "0",
    .architectures = kArchitectures,
    .create = create,
    .destroy = destroy,
    .get_info = get_info,
    .init_kv_cache = init_kv,
#if defined(BROKEN_KIND_missing_step)
    .step = NULL,
#else
    .step = step,
#endif
    .copy_blocks = copy_blocks,
};

#if defined(BROKEN_KIND_no_entry)
__attribute__((visibility("default"))) const llaisys_plugin* llaisys_plugin_entry_v0(void) {
  return &kTable;
}
#else
__attribute__((visibility("default"))) const llaisys_plugin* llaisys_plugin_entry(void) {
#if defined(BROKEN_KIND_null_table)
  return NULL;
#else
  return &kTable;
#endif
}
#endif
