//===- DtypeOption.h - a pass option naming a dtype -------------*- C++ -*-===//
//
// The passes that take a dtype (apply-fsdp's mixed-precision policy,
// apply-remat's activation dtype under a budget) spell it the same way.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_TRANSFORMS_DTYPEOPTION_H
#define PARC_LIB_TRANSFORMS_DTYPEOPTION_H

#include "Parc/IR/ParcOps.h"

namespace mlir::parc {

/// bf16 / f16 / f32 (and their long names) as a type; anything else is an
/// error on `model` naming `option`.
FailureOr<Type> parseDtypeOption(StringRef name, StringRef option,
                                 ModelOp model);

} // namespace mlir::parc

#endif // PARC_LIB_TRANSFORMS_DTYPEOPTION_H
