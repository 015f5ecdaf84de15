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

namespace detail {
/// FlatBuffers' verifier checks a vector's length field for 4-byte
/// alignment but not its elements, so a crafted file can place an int64
/// vector at a 4-byte boundary; every read of it is then a misaligned load
/// (undefined behaviour). The builder always aligns them to 8, so a
/// misaligned one is refused (an empty one, which the builder does not
/// align and nothing reads, is not). Offsets are relative to the buffer's
/// start.
inline bool aligned(const uint8_t *base,
                    const flatbuffers::Vector<int64_t> *vec) {
  return !vec || vec->size() == 0 ||
         (reinterpret_cast<const uint8_t *>(vec->data()) - base) % 8 == 0;
}

template <typename T, typename Fn>
bool all(const flatbuffers::Vector<flatbuffers::Offset<T>> *vec, Fn fn) {
  if (vec)
    for (const T *entry : *vec)
      if (!fn(entry))
        return false;
  return true;
}

/// Every int64 vector of the plan (the schema's `[long]` fields) is
/// 8-byte aligned.
inline bool int64VectorsAligned(const uint8_t *base, const Plan &plan) {
  auto types = [&](const flatbuffers::Vector<flatbuffers::Offset<ValueType>>
                       *vec) {
    return all(vec, [&](const ValueType *t) { return aligned(base, t->shape()); });
  };
  return all(plan.params(),
             [&](const Param *p) { return aligned(base, p->shape()); }) &&
         all(plan.grids(),
             [&](const Grid *g) { return aligned(base, g->shape()); }) &&
         (!plan.prediction() ||
          aligned(base, plan.prediction()->stage_peak_bytes())) &&
         (!plan.parallelism() ||
          aligned(base, plan.parallelism()->sizes())) &&
         all(plan.forwards(),
             [&](const Forward *f) {
               return types(f->arg_types()) && types(f->result_types()) &&
                      all(f->ops(), [&](const ForwardOp *op) {
                        return types(op->result_types());
                      });
             }) &&
         all(plan.programs(), [&](const Program *program) {
           return all(program->steps(),
                      [&](const Step *step) {
                        return aligned(base, step->group());
                      }) &&
                  all(program->covers(), [&](const Coverage *c) {
                    return aligned(base, c->indices());
                  });
         });
}
/// Whether a TP record holds only cases of this schema's enums and gathers
/// only operands its op has (`operands` < 0: a forward's record, which
/// gathers none).
inline bool tpRecordValid(const TpShards *tp, int64_t operands) {
  if (!tp)
    return true;
  if (tp->values())
    for (TpShard value : *tp->values())
      if (value < TpShard::MIN || value > TpShard::MAX)
        return false;
  if (tp->comms())
    for (TpComm comm : *tp->comms())
      if (comm < TpComm::MIN || comm > TpComm::MAX)
        return false;
  if (tp->gather())
    for (int32_t operand : *tp->gather())
      if (operand < 0 || operand >= operands)
        return false;
  return true;
}

/// Every forward's and op's TP record is in range (tpRecordValid).
inline bool tpRecordsValid(const Plan &plan) {
  return all(plan.forwards(), [](const Forward *f) {
    return tpRecordValid(f->arg_tp(), -1) &&
           all(f->ops(), [](const ForwardOp *op) {
             return tpRecordValid(op->tp(), op->operands()
                                                ? op->operands()->size()
                                                : 0);
           });
  });
}
} // namespace detail

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
  if (!detail::int64VectorsAligned(static_cast<const uint8_t *>(data),
                                   *plan)) {
    error = "plan.bin is corrupted (an int64 vector is not 8-byte aligned)";
    return nullptr;
  }
  if (!detail::tpRecordsValid(*plan)) {
    error = "plan.bin is corrupted (a TP record names a shard or collective "
            "this build does not know, or gathers an operand its op does not "
            "have)";
    return nullptr;
  }
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
