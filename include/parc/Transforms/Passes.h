//===- Passes.h - parc passes -----------------------------------*- C++ -*-===//

#ifndef PARC_TRANSFORMS_PASSES_H
#define PARC_TRANSFORMS_PASSES_H

#include "Parc/IR/ParcOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"
#include "parc/Analysis/CommOverlap.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Transforms/StorageDtype.h"

namespace mlir::parc {

/// What apply-remat decides for the layers in scope.
enum class RematMode { None, Full, Selective, Every, Budget, Op };
/// The stacks apply-remat decides for.
enum class RematScope { All, Language, Vision };

#define GEN_PASS_DECL
#include "parc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "parc/Transforms/Passes.h.inc"

/// Sets apply-remat's mode (and `every`) from a recipe's spelling: "none",
/// "full", "selective", "budget" or "every:N" with N > 0; false for
/// anything else.
bool setRematMode(ApplyRematOptions &options, StringRef text);

/// The recipe's spelling of apply-remat's mode ("every:3", ...).
std::string getRematModeName(RematMode mode, int64_t every);

/// Runs --discover-layers' structural discovery on `model` unless its layers
/// were discovered already, so that a pass that needs layers works on freshly
/// imported IR in any order (`parc-opt --apply-fsdp --apply-remat model.mlir`
/// plans what `--discover-layers --apply-remat --apply-fsdp` plans).
LogicalResult ensureLayersDiscovered(ModelOp model);

/// Runs --lower-to-schedule on `model` with `options` unless it has
/// parc.program ops already: the analyses replay programs, and a model
/// planned under parc-opt without the lowering gets one for the batch the
/// analysis was asked about.
LogicalResult ensureLowered(ModelOp model,
                            const LowerToScheduleOptions &options);

/// --lower-to-schedule's options from the batch and hardware options it
/// shares with --estimate-memory and --estimate-cost (which lower on demand
/// with them); clipping keeps its default.
inline LowerToScheduleOptions
getOnDemandLowering(int64_t seqLen, int64_t microBatch,
                    int64_t gradAccumulation, int64_t imageTokens,
                    StringRef hardware, StringRef hardwareDir) {
  LowerToScheduleOptions lower;
  lower.seqLen = seqLen;
  lower.microBatch = microBatch;
  lower.gradAccumulation = gradAccumulation;
  lower.imageTokens = imageTokens;
  lower.hardware = hardware.str();
  lower.hardwareDir = hardwareDir.str();
  return lower;
}

/// An analysis option given on the command line, or 0 (the programs' own).
template <typename Option>
int64_t getExplicit(const Option &option) {
  return option.hasValue() ? int64_t(option) : 0;
}

} // namespace mlir::parc

#endif // PARC_TRANSFORMS_PASSES_H
