//===- parc-opt.cpp - parc's mlir-opt -------------------------------------===//
//
// Runs parc passes over parc IR, like mlir-opt: the parc, shard, func and
// arith dialects are registered, and so is every parc pass.
//
//===----------------------------------------------------------------------===//

#include "Parc/IR/ParcDialect.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::parc::ParcDialect, mlir::shard::ShardDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  mlir::parc::registerParcPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "parc optimizer driver\n", registry));
}
