//===- TpShards.h - record how every op runs under TP -----------*- C++ -*-===//
//
// apply-tp's last step: with the parameter roles written, ask every forward
// op its TP sharding rule and record the answer as #parc.tp_shards.
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

} // namespace mlir::parc

#endif // PARC_LIB_TRANSFORMS_TPSHARDS_H
