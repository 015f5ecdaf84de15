//===- StorageDtype.h - the precisions a plan stores and computes in -*- C++
//-*-===//
//
// apply-fsdp's mixed-precision policy, apply-remat's activation dtype under
// a budget and the recipes' `train.*_dtype` keys choose among the same three
// precisions; this enum is the one list, and pass options take it as an enum
// option so the pipeline parser refuses anything else.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_TRANSFORMS_STORAGEDTYPE_H
#define PARC_TRANSFORMS_STORAGEDTYPE_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::parc {

/// A storage or compute precision.
enum class StorageDtype { BF16, FP16, FP32 };

/// The MLIR element type of `dtype` (bf16, f16, f32).
Type getStorageType(MLIRContext *context, StorageDtype dtype);
/// Bytes per element: 2 or 4.
int64_t getStorageDtypeBytes(StorageDtype dtype);
/// The recipes' spelling: "bf16", "fp16", "fp32".
llvm::StringRef getRecipeDtypeName(StorageDtype dtype);

} // namespace mlir::parc

#endif // PARC_TRANSFORMS_STORAGEDTYPE_H
