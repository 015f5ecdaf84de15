//===- ParcDialect.h - parc dialect -----------------------------*- C++ -*-===//

#ifndef PARC_DIALECT_PARC_IR_PARCDIALECT_H
#define PARC_DIALECT_PARC_IR_PARCDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

#include "Parc/IR/ParcDialect.h.inc"

namespace mlir::parc {

/// The plan attributes the passes set on parc.model, parc.module and
/// parc.param ops. The dialect verifies each (ParcDialect::
/// verifyOperationAttribute), so a pass never reads a plan it cannot use.
constexpr llvm::StringLiteral kTpSizeAttrName = "parc.tp_size";
constexpr llvm::StringLiteral kTpParamAttrName = "parc.tp";
/// How a forward op runs under TP, and what a rank holds of a forward's
/// arguments (#parc.tp_shards on the op or the func.func).
constexpr llvm::StringLiteral kTpShardsAttrName = "parc.tp_shards";
constexpr llvm::StringLiteral kRematAttrName = "parc.remat";
/// On an op of a layer with `#parc.remat<op>`: its outputs are kept from the
/// forward, and backward's rerun of the layer takes them instead of running
/// the op again.
constexpr llvm::StringLiteral kRematSaveAttrName = "parc.remat_save";
constexpr llvm::StringLiteral kTpPaddedDim0AttrName = "parc.tp_padded_dim0";
constexpr llvm::StringLiteral kPpPlanAttrName = "parc.pp";
constexpr llvm::StringLiteral kPpStageAttrName = "parc.pp_stage";
constexpr llvm::StringLiteral kPpChunkAttrName = "parc.pp_chunk";
constexpr llvm::StringLiteral kPpScheduleAttrName = "parc.pp_schedule";
/// Tie groups spanning stages (#parc.pp_tied), on the model.
constexpr llvm::StringLiteral kPpTiedCopiesAttrName = "parc.pp_tied_copies";
/// The model's layer stacks (#parc.stack, discover-layers) and each layer's
/// stack name and index in it.
constexpr llvm::StringLiteral kStacksAttrName = "parc.stacks";
constexpr llvm::StringLiteral kStackAttrName = "parc.stack";
constexpr llvm::StringLiteral kLayerIndexAttrName = "parc.layer_index";

/// One step of a stage's pipeline schedule (#parc.pp_steps): the forward or
/// backward of a micro-batch on one of the stage's model chunks, written
/// `F3`, `B0`, `B0.c1` (chunk 1; chunk 0 is left out).
struct PipelineStep {
  bool forward = true;
  int64_t microBatch = 0;
  int64_t chunk = 0;

  bool operator==(const PipelineStep &other) const {
    return forward == other.forward && microBatch == other.microBatch &&
           chunk == other.chunk;
  }
  /// `F3`, `B0.c1`: as the IR prints it and plan.bin stores it.
  std::string str() const;
};

inline llvm::hash_code hash_value(const PipelineStep &step) {
  return llvm::hash_combine(step.forward, step.microBatch, step.chunk);
}

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                                     const PipelineStep &step) {
  return os << step.str();
}

/// `F3`, `B0`, `F3.c1` as a step; nothing when the text is not one (a
/// negative micro-batch or chunk included).
std::optional<PipelineStep> parsePipelineStep(llvm::StringRef text);

} // namespace mlir::parc

#endif // PARC_DIALECT_PARC_IR_PARCDIALECT_H
