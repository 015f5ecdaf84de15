//===- StorageDtype.cpp - the precisions a plan stores and computes in ----===//

#include "parc/Transforms/StorageDtype.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::parc;

Type mlir::parc::getStorageType(MLIRContext *context, StorageDtype dtype) {
  Builder b(context);
  switch (dtype) {
  case StorageDtype::BF16:
    return b.getBF16Type();
  case StorageDtype::FP16:
    return b.getF16Type();
  case StorageDtype::FP32:
    return b.getF32Type();
  }
  llvm_unreachable("unknown dtype");
}

int64_t mlir::parc::getStorageDtypeBytes(StorageDtype dtype) {
  return dtype == StorageDtype::FP32 ? 4 : 2;
}

StringRef mlir::parc::getRecipeDtypeName(StorageDtype dtype) {
  switch (dtype) {
  case StorageDtype::BF16:
    return "bf16";
  case StorageDtype::FP16:
    return "fp16";
  case StorageDtype::FP32:
    return "fp32";
  }
  llvm_unreachable("unknown dtype");
}
