//===- ParcDialect.h - parc dialect -----------------------------*- C++ -*-===//

#ifndef PARC_DIALECT_PARC_IR_PARCDIALECT_H
#define PARC_DIALECT_PARC_IR_PARCDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include <optional>
#include <tuple>

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
constexpr llvm::StringLiteral kTpPaddedDim0AttrName = "parc.tp_padded_dim0";
constexpr llvm::StringLiteral kPpPlanAttrName = "parc.pp";
constexpr llvm::StringLiteral kPpStageAttrName = "parc.pp_stage";
constexpr llvm::StringLiteral kPpChunkAttrName = "parc.pp_chunk";
constexpr llvm::StringLiteral kPpScheduleAttrName = "parc.pp_schedule";


/// "F3", "B0", "F3.c1", a step of parc.pp_schedule: the forward or backward
/// of micro-batch 3 (of chunk 1), as (forward, micro-batch, chunk); nothing
/// when the text is not one.
std::optional<std::tuple<bool, int64_t, int64_t>>
parsePipelineStep(llvm::StringRef text);

} // namespace mlir::parc

#endif // PARC_DIALECT_PARC_IR_PARCDIALECT_H
