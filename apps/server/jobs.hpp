#pragma once
// The Jobs behind generation and embedding requests (see server_app.hpp).

#include <memory>
#include <vector>

#include "llaisys/engine/request_stream.hpp"
#include "model_router.hpp"
#include "openai/response.hpp"
#include "server_app.hpp"

namespace llaisys::server {

// `streams`: one per prompt, in the order of the response's prompts.
std::unique_ptr<Job> make_generation_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                         std::vector<RequestStream> streams, std::unique_ptr<GenerationWriter> response,
                                         bool streaming);

// Submits the first inputs (the rest follow as they finish); the engine's refusal of those is the
// error. `notify` is the engine's notifier for every input's stream.
Result<std::unique_ptr<Job>> start_embedding_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                                 ParsedEmbed parsed, OutputNotifier notify);

}  // namespace llaisys::server
