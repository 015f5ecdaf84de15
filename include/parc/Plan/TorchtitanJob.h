//===- TorchtitanJob.h - a torchtitan job TOML as a parc recipe -*- C++ -*-===//
//
// parc-plan reads a torchtitan job file (`parc-plan llama3_8b.toml --hardware
// h100-80gb --gpus 8`) as torchtitan would run it: each key that changes
// memory or step time becomes the parc recipe key that plans it, a key left
// out takes torchtitan's JobConfig default, a key parc does not model is
// refused naming it, and a key that changes neither (logging, checkpoints,
// the learning rate) is listed as ignored. The cluster is not in the file
// (torchrun's world is): it comes from parc-plan's flags.
//
// The field names of torchtitan's releases through 2025 are read:
// `[training] batch_size` and `local_batch_size`; parallel degrees in
// `[training]` / `[experimental]` (2024) or `[parallelism]`;
// `pipeline_parallel_microbatches` and `pipeline_parallel_microbatch_size`;
// `enable_loss_parallel` and `disable_loss_parallel`.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_TORCHTITANJOB_H
#define PARC_PLAN_TORCHTITANJOB_H

#include "parc/Plan/Recipe.h"

namespace mlir::parc {

/// Translates the torchtitan job in `text` (read from `filename`) into parc
/// recipe entries; `modelsDir` holds the Hugging Face configs its model
/// flavours map to (getDefaultModelsDir()); `modelGiven`: the command line
/// names the model, and the file's is not looked up. Every problem is a
/// diagnostic at the key's line; failure once any was emitted.
FailureOr<TranslatedRecipe>
translateTorchtitanJob(StringRef text, StringRef filename, StringRef modelsDir,
                       bool modelGiven, MLIRContext *context);

} // namespace mlir::parc

#endif // PARC_PLAN_TORCHTITANJOB_H
