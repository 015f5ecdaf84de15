//===- HFConfig.h - Hugging Face config.json importer -----------*- C++ -*-===//

#ifndef PARC_IMPORT_HFCONFIG_H
#define PARC_IMPORT_HFCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::parc {

/// Builds the parc.model a Hugging Face `config.json` describes: the module
/// tree transformers instantiates for it, with parameters, ties and forwards.
/// Keys the config omits take the defaults of its transformers config class
/// and are listed in the model's `parc.defaulted_keys`. Errors are emitted as
/// diagnostics located in `filename` (line and column where the input has
/// one) and yield a null result.
OwningOpRef<mlir::ModuleOp> importHFConfig(llvm::StringRef text,
                                           llvm::StringRef filename,
                                           MLIRContext *context);

/// The `model_type` values the importer understands.
llvm::ArrayRef<llvm::StringRef> getSupportedModelTypes();

/// Registers `--import-hf-config` with mlir-translate's registry.
void registerImportHFConfigTranslation();

} // namespace mlir::parc

#endif // PARC_IMPORT_HFCONFIG_H
