#pragma once
// Post-processors (tokenizer.json "post_processor") for add_special_tokens: TemplateProcessing's
// "single" template (e.g. BOS + text), ByteLevel (ids unchanged), and Sequence of those.

#include <memory>
#include <optional>
#include <vector>

#include <boost/json/value.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<TokenId>& ids) const = 0;
};

Result<std::unique_ptr<PostProcessor>> make_post_processor(const boost::json::value& config);

// [bos] $A [eos]: what transformers puts in place of tokenizer.json's post-processor when
// tokenizer_config.json sets add_bos_token or add_eos_token (a nullopt side adds nothing).
std::unique_ptr<PostProcessor> make_bos_eos_processor(std::optional<TokenId> bos, std::optional<TokenId> eos);

}  // namespace llaisys::text
