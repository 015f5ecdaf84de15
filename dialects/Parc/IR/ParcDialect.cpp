//===- ParcDialect.cpp - parc dialect registration ------------------------===//

#include "Parc/IR/ParcDialect.h"
#include "Parc/IR/ParcOps.h"

using namespace mlir;
using namespace mlir::parc;

#include "Parc/IR/ParcDialect.cpp.inc"

void ParcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Parc/IR/ParcOps.cpp.inc"
      >();
}
