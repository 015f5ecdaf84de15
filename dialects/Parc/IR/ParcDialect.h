//===- ParcDialect.h - parc dialect -----------------------------*- C++ -*-===//

#ifndef PARC_DIALECT_PARC_IR_PARCDIALECT_H
#define PARC_DIALECT_PARC_IR_PARCDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "Parc/IR/ParcDialect.h.inc"

#endif // PARC_DIALECT_PARC_IR_PARCDIALECT_H
