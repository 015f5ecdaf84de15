//===- PlanExport.h - plan.bin writer and reader ----------------*- C++ -*-===//
//
// Writes a planned parc.model as plan.bin through the runtime's schema
// (runtime/schema/plan.fbs) and reads one back into IR for round trips.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_EXPORT_PLANEXPORT_H
#define PARC_EXPORT_PLANEXPORT_H

#include "Parc/IR/ParcOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::parc {

/// Serialises `model` and its plan (stacks, remat, FSDP units, grids,
/// predictions) into `os`.
LogicalResult exportPlan(ModelOp model, llvm::raw_ostream &os);

/// Rebuilds the module tree, parameters, ties and plan of a plan.bin; a
/// buffer the FlatBuffers verifier refuses is an error naming `filename`.
OwningOpRef<mlir::ModuleOp> importPlan(llvm::StringRef buffer,
                                       llvm::StringRef filename,
                                       MLIRContext *context);

/// Registers --export-plan and --import-plan with mlir-translate.
void registerPlanTranslations();

} // namespace mlir::parc

#endif // PARC_EXPORT_PLANEXPORT_H
