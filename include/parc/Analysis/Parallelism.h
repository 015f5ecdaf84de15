//===- Parallelism.h - how TP and PP partitioned a model --------*- C++ -*-===//
//
// --apply-tp and --apply-pp record their plans as attributes; the memory
// replay, the cost model, FSDP and the schedule lowering read them through
// this header, so the encoding and its derived facts (a parameter's local
// shape on one TP rank, the stage that holds it) live in one place.
//
//   parc.model  parc.tp_size = 4, parc.tp_sequence_parallel, parc.tp_loss_parallel
//               parc.pp = #parc.pp<stages, schedule, chunks, microbatches, ...>
//               parc.pp_schedule = [#parc.pp_steps<stage, steps = [F0, B0, ...]>, ...]
//   parc.param  parc.tp = #parc.tp<colwise | rowwise | vocab | replicated>,
//               parc.tp_padded_dim0 (vocab)
//   layer       parc.pp_stage, parc.pp_chunk (interleaved)
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_PARALLELISM_H
#define PARC_ANALYSIS_PARALLELISM_H

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::parc {

constexpr llvm::StringLiteral kTpGridName = "tp";
constexpr llvm::StringLiteral kPpGridName = "pp";
constexpr llvm::StringLiteral kTpSequenceParallelAttrName =
    "parc.tp_sequence_parallel";
constexpr llvm::StringLiteral kTpLossParallelAttrName = "parc.tp_loss_parallel";
constexpr llvm::StringLiteral kDpGridName = "dp";
/// [{params = [@embed, @lm_head], stages = [0, 3]}]: tie groups split over
/// stages, one copy per stage, their gradients all-reduced between them.

/// The axes of the rank layout, outermost first: a rank's TP peers are
/// adjacent (one node), its pipeline peers furthest apart (torchtitan's mesh
/// order). plan.bin's Parallelism table lists them in this order.
constexpr llvm::StringLiteral kRankAxesOutermostFirst[] = {
    kPpGridName, kDpGridName, "fsdp", kTpGridName};

/// The tensor-parallel plan of a model; size 1 when --apply-tp has not run.
struct TpPlan {
  int64_t size = 1;
  bool sequenceParallel = false;
  bool lossParallel = false;
};
TpPlan getTpPlan(ModelOp model);

/// The shape of the slice of `param` one TP rank holds: dim 0 divided for
/// column-parallel (and a vocab table padded to its recorded size), dim 1
/// for row-parallel, the whole shape when replicated.
SmallVector<int64_t> getTpLocalShape(ParamOp param, int64_t tpSize);

// PipelineStep, one step of a stage's schedule, is the dialect's
// (ParcDialect.h).

/// The pipeline plan; one stage running F0, B0 when --apply-pp has not run.
struct PpPlan {
  int64_t stages = 1;
  std::string schedule = "none";
  int64_t chunks = 1;
  int64_t microbatches = 1;
  double bubble = 0;
  /// Per stage: its steps in order.
  SmallVector<SmallVector<PipelineStep>> steps;
  bool isPipelined() const { return stages > 1; }
};
PpPlan getPpPlan(ModelOp model);

/// Where each discovered layer and each parameter lives in the pipeline.
/// A layer's parameters live on its stage; the root's embedding tables on
/// the first stage and its other parameters (final norm, lm_head) on the
/// last. A tie group whose members live on different stages is one copy per
/// stage.
class PipelinePlacement {
public:
  explicit PipelinePlacement(ModelOp model);

  /// The stage and chunk of `layer` (0, 0 without a pipeline).
  int64_t getStage(NNModuleOp layer) const;
  int64_t getChunk(NNModuleOp layer) const;
  /// The stage that holds `param` itself (not its tied aliases).
  int64_t getStage(ParamOp param) const;
  /// The stages holding a copy of `param`'s storage: its own, then those of
  /// its `tied` aliases (FSDP's record of the tie group) on other stages.
  SmallVector<int64_t> getHolderStages(ModelOp model, ParamOp param,
                                       ArrayAttr tied,
                                       SymbolTableCollection &tables) const;
  /// The virtual stage (chunk x stages + stage) of `layer`.
  int64_t getVirtualStage(NNModuleOp layer) const;
  int64_t getStageCount() const { return stages; }

private:
  int64_t stages = 1;
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> layerPlace;
  llvm::DenseSet<Operation *> embeddingTables;
};

} // namespace mlir::parc

#endif // PARC_ANALYSIS_PARALLELISM_H
