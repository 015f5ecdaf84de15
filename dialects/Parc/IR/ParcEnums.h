//===- ParcEnums.h - the parc dialect's enums -------------------*- C++ -*-===//
//
// The generated enums on their own, so that the op interfaces' types (which
// speak TP shards and roles) can name them before the ops are declared.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCENUMS_H
#define PARC_DIALECT_PARC_IR_PARCENUMS_H

#include "mlir/IR/DialectImplementation.h"

#include "Parc/IR/ParcEnums.h.inc"

#endif // PARC_DIALECT_PARC_IR_PARCENUMS_H
