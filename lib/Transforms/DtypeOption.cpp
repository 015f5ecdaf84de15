//===- DtypeOption.cpp - a pass option naming a dtype ---------------------===//

#include "DtypeOption.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::parc;

FailureOr<Type> mlir::parc::parseDtypeOption(StringRef name, StringRef option,
                                             ModelOp model) {
  Builder b(model.getContext());
  if (name == "bf16" || name == "bfloat16")
    return Type(b.getBF16Type());
  if (name == "f16" || name == "fp16" || name == "float16")
    return Type(b.getF16Type());
  if (name == "f32" || name == "fp32" || name == "float32")
    return Type(b.getF32Type());
  return mlir::emitError(model->getLoc())
         << "unknown " << option << " '" << name
         << "' (expected bf16, f16 or f32)";
}
