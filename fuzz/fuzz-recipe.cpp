//===- fuzz-recipe.cpp - recipe YAML --------------------------------------===//
//
// What parc-plan does with a recipe file before planning: readRecipe
// (lib/Plan/Recipe.cpp, which readRecipeFile calls with the file's text).
// Relative model paths resolve against examples/llama-3.1-8b, so the seeds'
// `../models/*.json` exist and the path checks run both ways.

#include "FuzzSupport.h"

#include "parc/Plan/Recipe.h"

#include "mlir/IR/MLIRContext.h"

using namespace mlir;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  parc_fuzz::silenceStdout();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  parc_fuzz::DropDiagnostics drop(&context);
  (void)mlir::parc::readRecipe(parc_fuzz::asText(data, size), "recipe.yaml",
                               PARC_FUZZ_RECIPE_BASE_DIR, /*settings=*/{},
                               &context);
  return 0;
}
