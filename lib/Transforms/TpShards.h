//===- TpShards.h - record how every op runs under TP -----------*- C++ -*-===//
//
// apply-tp's last step: with the parameter roles written, ask every forward
// op its TP sharding rule and record the answer as #parc.tp_shards; and the
// TP traffic that record means, which apply-tp reports and the lowering
// writes into the programs.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_TRANSFORMS_TPSHARDS_H
#define PARC_LIB_TRANSFORMS_TPSHARDS_H

#include "Parc/IR/ParcOps.h"

namespace mlir::parc {

/// Walks the model's forward from the root, each module's forward once (for
/// the shards its call passes), and sets parc.tp_shards on every op and
/// forward. Fails with a diagnostic on the first op whose rule refuses what
/// it is given, or on a module whose calls disagree; then nothing is kept.
LogicalResult recordTpShards(ModelOp model, bool sequenceParallel,
                             bool lossParallel);

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter };

/// One TP collective a compute step issues: the whole (unsharded) tensor
/// has `elementsPerToken` elements of `element` per token.
struct TpCollective {
  CollectiveKind kind;
  int64_t elementsPerToken;
  Type element;
};

struct TpTraffic {
  SmallVector<TpCollective> forward, backward;
};

/// The TP collectives `forward` issues per token, read from the
/// parc.tp_shards records of its ops (calls followed; into discovered
/// layers only when not `stopAtLayers`): backward in the order backward
/// runs. Those after the call of `lastLayer` are in `tail`, the rest in
/// `head`. Elements are of `compute`, or of the IR's tensor where `compute`
/// is null; statistics of the vocab-parallel loss are fp32.
struct TpTrafficSplit {
  TpTraffic head, tail;
};
TpTrafficSplit getTpTraffic(func::FuncOp forward, int64_t tpSize,
                            Type compute, bool stopAtLayers,
                            NNModuleOp lastLayer = {});

} // namespace mlir::parc

#endif // PARC_LIB_TRANSFORMS_TPSHARDS_H
