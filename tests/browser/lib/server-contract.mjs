// What the specs assume about llaisys-server beyond the OpenAI API itself.
// ============================================================================================
// TO CONFIRM WHEN THE SERVER EXISTS (issue 6): the metric names and the /tokenize shape below
// are this file's guesses; set them to what apps/server really exposes.
// ============================================================================================

// Prometheus gauge: requests being generated right now (summed over all label sets).
export const METRIC_RUNNING_REQUESTS = "llaisys_requests_running";
// Prometheus gauge: requests admitted but waiting for their turn (summed over all label sets).
export const METRIC_WAITING_REQUESTS = "llaisys_requests_waiting";
// Prometheus gauge: KV-cache blocks held by running requests (summed over all label sets).
// After a stopped request is freed it returns to what it was before the request.
export const METRIC_KV_BLOCKS_USED = "llaisys_kv_blocks_used";

// POST /tokenize: body for a text, and where the token ids are in the answer.
export function tokenizeRequest(model, text) {
  return { model, prompt: text, add_special_tokens: false };
}
export function tokenIdsFrom(json) {
  return json.tokens;
}
