#pragma once
// The Jobs behind generation and embedding requests (see server_app.hpp).

#include <memory>
#include <vector>

#include "llaisys/engine/request_stream.hpp"
#include "model_router.hpp"
#include "openai/response.hpp"
#include "server_app.hpp"

namespace llaisys::server {

std::unique_ptr<Job> make_generation_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                         RequestStream stream, std::unique_ptr<GenerationWriter> response,
                                         bool streaming);

std::unique_ptr<Job> make_embedding_job(ModelEntry& model, std::unique_ptr<Reservation> reservation,
                                        std::vector<RequestStream> streams, bool base64, std::string model_name);

}  // namespace llaisys::server
