//===- PlanFormat.h - the plan.bin format the runtime owns ------*- C++ -*-===//
//
// The runtime owns plan.bin: the FlatBuffers schema (schema/plan.fbs), its
// format version, and the verification every reader runs before touching a
// byte. No MLIR here: the compiler includes this header, never the reverse.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_PLANFORMAT_H
#define PARC_RUNTIME_PLANFORMAT_H

#include "plan_generated.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace parc::plan {

/// Incremented on every incompatible change of schema/plan.fbs.
constexpr uint32_t kFormatVersion = 1;

/// Verifies `size` bytes as a plan.bin of this format version; on failure
/// returns null and says why in `error`.
inline const Plan *verifyPlan(const void *data, size_t size,
                              std::string &error) {
  if (size < 8 || !flatbuffers::BufferHasIdentifier(data, PlanIdentifier())) {
    error = "not a plan.bin file (missing the 'PARC' identifier)";
    return nullptr;
  }
  flatbuffers::Verifier verifier(static_cast<const uint8_t *>(data), size);
  if (!VerifyPlanBuffer(verifier)) {
    error = "plan.bin is truncated or corrupted (FlatBuffers verification "
            "failed)";
    return nullptr;
  }
  const Plan *plan = GetPlan(data);
  if (plan->format_version() != kFormatVersion) {
    error = "plan.bin has format version " +
            std::to_string(plan->format_version()) + ", this build reads " +
            std::to_string(kFormatVersion);
    return nullptr;
  }
  return plan;
}

} // namespace parc::plan

#endif // PARC_RUNTIME_PLANFORMAT_H
