//===- fuzz-parc-ir.cpp - parc IR: parse, verify, plan --------------------===//
//
// What `parc-opt --discover-layers --apply-remat --apply-fsdp=shards=8
// --estimate-memory` does: parse with the dialects parc-opt registers
// (parc, shard, func, arith), verify, run the pipeline (the pass manager
// verifies after each pass, as parc-opt's does), print the result.

#include "FuzzSupport.h"

#include "Parc/IR/ParcDialect.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

static const char *const kPipeline =
    "builtin.module(parc.model(discover-layers,apply-remat,"
    "apply-fsdp{shards=8},estimate-memory))";

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  parc_fuzz::silenceStdout();
  mlir::parc::registerParcPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  parc_fuzz::FuzzContext<mlir::parc::ParcDialect, shard::ShardDialect,
                         func::FuncDialect, arith::ArithDialect>
      context;
  ParserConfig config(context.get()); // verifies after parsing, as parc-opt does
  // MLIR's lexer reads up to the NUL that ends every MemoryBuffer parc-opt
  // reads a file into; libFuzzer's buffer has none, so parse a copy that
  // has one (without it the lexer's one-byte overread is all ASan sees).
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, "input.mlir");
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(context.get());
  if (failed(parsePassPipeline(kPipeline, pm)))
    __builtin_trap(); // the pipeline text is ours: a typo is a bug here
  if (succeeded(pm.run(*module)))
    module->print(llvm::nulls());
  return 0;
}
