//===- Passes.h - parc passes -----------------------------------*- C++ -*-===//

#ifndef PARC_TRANSFORMS_PASSES_H
#define PARC_TRANSFORMS_PASSES_H

#include "Parc/IR/ParcOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::parc {

#define GEN_PASS_DECL
#include "parc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "parc/Transforms/Passes.h.inc"

} // namespace mlir::parc

#endif // PARC_TRANSFORMS_PASSES_H
