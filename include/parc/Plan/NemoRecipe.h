//===- NemoRecipe.h - a NeMo Automodel recipe as a parc recipe --*- C++ -*-===//
//
// parc-plan reads a NeMo Automodel recipe YAML (`parc-plan
// gemma4_31b.yaml --hardware h100-80gb --gpus 8`) as NeMo Automodel would
// run it: each key that changes memory or step time becomes the parc recipe
// key that plans it, a key left out takes NeMo's default (FSDP2Config,
// PipelineConfig, the VLM recipe's freeze_config), a key parc does not
// model is refused naming it, and a key that changes neither (checkpoints,
// logging, the learning rate, the dataset's source) is listed as ignored.
// The cluster is not in the file (torchrun's world is): it comes from
// parc-plan's flags.
//
// A YAML recipe is NeMo's when its top level has NeMo's own sections
// (`step_scheduler`, `distributed` or `dist_env`); parc's recipes have
// none of them.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_NEMORECIPE_H
#define PARC_PLAN_NEMORECIPE_H

#include "parc/Plan/Recipe.h"

namespace mlir::parc {

/// Whether the YAML `text` is a NeMo Automodel recipe (a mapping with one of
/// NeMo's top-level sections). Text that is not YAML is not.
bool isNemoRecipe(StringRef text);

/// Translates the NeMo Automodel recipe in `text` (read from `filename`,
/// whose relative model paths resolve against `baseDir`) into parc recipe
/// entries. `modelsDir` holds the Hugging Face configs the model ids map to
/// (getDefaultModelsDir()); `settings` are the values given on the command
/// line, which replace the file's (a model given there is the one whose
/// modules freeze_config selects). Every problem is a diagnostic at the
/// key's line; failure once any was emitted.
FailureOr<TranslatedRecipe>
translateNemoRecipe(StringRef text, StringRef filename, StringRef baseDir,
                    StringRef modelsDir, ArrayRef<RecipeSetting> settings,
                    MLIRContext *context);

} // namespace mlir::parc

#endif // PARC_PLAN_NEMORECIPE_H
