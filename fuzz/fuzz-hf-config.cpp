//===- fuzz-hf-config.cpp - config.json import ----------------------------===//
//
// What `parc-translate --import-hf-config` does with its input:
// importHFConfig (lib/Import), then, as mlir-translate does with a
// translation's result, verify and print.

#include "FuzzSupport.h"

#include "Parc/IR/ParcDialect.h"
#include "parc/Import/HFConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  parc_fuzz::silenceStdout();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The registry the translation registers (registerImportHFConfigTranslation).
  parc_fuzz::FuzzContext<mlir::parc::ParcDialect, func::FuncDialect> context;
  OwningOpRef<ModuleOp> module = mlir::parc::importHFConfig(
      parc_fuzz::asText(data, size), "config.json", context.get());
  parc_fuzz::verifyAndPrint(module);
  return 0;
}
