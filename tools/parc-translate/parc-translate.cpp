//===- parc-translate.cpp - parc's mlir-translate -------------------------===//
//
// Translates between parc IR and the formats around it: Hugging Face
// config.json in (--import-hf-config), plan.bin out and back
// (--export-plan, --import-plan).
//
//===----------------------------------------------------------------------===//

#include "parc/Export/PlanExport.h"
#include "parc/Import/HFConfig.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::parc::registerImportHFConfigTranslation();
  mlir::parc::registerPlanTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "parc translation driver\n"));
}
