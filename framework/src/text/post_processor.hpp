#pragma once
// Post-processors (tokenizer.json "post_processor") for add_special_tokens: TemplateProcessing's
// "single" template (e.g. BOS + text), ByteLevel (ids unchanged), and Sequence of those.

#include <memory>
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

}  // namespace llaisys::text
