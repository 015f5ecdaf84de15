//===- fuzz-plan-import.cpp - plan.bin into IR ----------------------------===//
//
// What `parc-translate --import-plan` does: importPlan (lib/Export), which
// runs the runtime's verifyPlan first, then verify and print the result.

#include "FuzzSupport.h"

#include "Parc/IR/ParcDialect.h"
#include "parc/Export/PlanExport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"

#include <vector>

using namespace mlir;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  parc_fuzz::silenceStdout();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The registry registerPlanTranslations gives --import-plan.
  parc_fuzz::FuzzContext<mlir::parc::ParcDialect, func::FuncDialect,
                         shard::ShardDialect>
      context;
  // mlir-translate hands the translation a MemoryBuffer, which is aligned;
  // so is this copy (FlatBuffers checks alignment relative to the start).
  std::vector<uint8_t> bytes(data, data + size);
  OwningOpRef<ModuleOp> module = mlir::parc::importPlan(
      llvm::StringRef(reinterpret_cast<const char *>(bytes.data()),
                      bytes.size()),
      "plan.bin", context.get());
  parc_fuzz::verifyAndPrint(module);
  return 0;
}
