#include "reference_cases.hpp"

namespace llaisys::test {

const std::vector<ReferenceCase>& reference_cases() {
  return reference_cases(std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "tiny-qwen2" / "reference.json");
}

void for_each_teacher_forced_row(AnyModel& model, int32_t chunk, const TeacherForcedCheck& check) {
  for_each_teacher_forced_row(model, reference_cases(), chunk, check);
}

}  // namespace llaisys::test
