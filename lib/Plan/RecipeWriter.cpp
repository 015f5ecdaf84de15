//===- RecipeWriter.cpp - a request written back as a recipe --------------===//
//
// parc-plan --auto --emit-recipe writes the winner with this: every key
// resolved (no default left to the reader, no framework left to infer), so
// that `parc-plan FILE` plans it to the numbers the search reported
// wherever the file is moved.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/Recipe.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

/// A YAML double-quoted scalar: read back as the same string whatever it
/// holds.
std::string quote(StringRef text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

std::string quoteList(ArrayRef<std::string> items) {
  std::string text = "[";
  for (auto [index, item] : llvm::enumerate(items))
    text += (index ? ", " : "") + quote(item);
  return text + "]";
}

/// The shortest decimal that reads back as `value` ("0.05", not
/// "0.050000000000000003").
std::string formatDouble(double value) {
  for (int digits = 1; digits < 17; ++digits) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.*g", digits, value);
    double back;
    if (!StringRef(text).getAsDouble(back) && back == value)
      return text;
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.17g", value);
  return text;
}

std::string absolutePath(StringRef path) {
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  return std::string(absolute);
}

} // namespace

void mlir::parc::writeRecipe(const PlanRequest &request,
                             llvm::raw_ostream &os) {
  auto boolText = [](bool value) { return value ? "true" : "false"; };
  os << "# Written by parc-plan: every key resolved.\n";
  os << "model:\n";
  if (!request.mlirPath.empty())
    os << "  mlir: " << quote(absolutePath(request.mlirPath)) << "\n";
  else
    os << "  hf_config: " << quote(absolutePath(request.hfConfigPath)) << "\n";
  os << "train:\n";
  os << "  seq_len: " << request.seqLen << "\n";
  os << "  image_tokens: " << request.imageTokens << "\n";
  os << "  micro_batch_size: " << request.microBatchSize << "\n";
  os << "  global_batch_size: " << request.globalBatchSize << "\n";
  os << "  compute_dtype: " << getRecipeDtypeName(request.computeDtype) << "\n";
  os << "  master_dtype: " << getRecipeDtypeName(request.masterDtype) << "\n";
  os << "  grad_reduce_dtype: " << getRecipeDtypeName(request.gradReduceDtype)
     << "\n";
  os << "  optim_dtype: " << getRecipeDtypeName(request.optimDtype) << "\n";
  os << "  optimizer: " << quote(request.optimizer) << "\n";
  os << "  optimizer_impl: " << request.optimizerImpl << "\n";
  os << "  max_norm: " << formatDouble(request.maxNorm) << "\n";
  os << "  frozen: " << quoteList(request.frozen) << "\n";
  os << "  attention_kernel: " << request.attentionKernel << "\n";
  os << "  norm_kernel: " << request.normKernel << "\n";
  os << "  loss_kernel: " << request.lossKernel << "\n";
  os << "  allocator: " << request.allocator << "\n";
  os << "cluster:\n";
  os << "  hardware: " << quote(request.hardware) << "\n";
  os << "  nodes: " << request.nodes << "\n";
  os << "  gpus_per_node: " << request.gpusPerNode << "\n";
  os << "parallel:\n";
  os << "  dp: " << request.dp << "\n";
  os << "  fsdp: " << request.fsdp << "\n";
  os << "  tp: " << request.tp << "\n";
  os << "  pp: " << request.pp << "\n";
  os << "  pp_schedule: " << request.ppSchedule << "\n";
  os << "  pp_chunks: " << request.ppChunks << "\n";
  if (!request.ppSplit.empty()) {
    os << "  pp_split: [";
    for (auto [index, layers] : llvm::enumerate(request.ppSplit))
      os << (index ? ", " : "") << layers;
    os << "]\n";
  }
  os << "  fsdp_prefetch: " << request.fsdpPrefetch << "\n";
  os << "  fsdp_reshard_after_forward: "
     << boolText(request.reshardAfterForward) << "\n";
  os << "  fsdp_reshard_last_layer: " << boolText(request.reshardLastLayer)
     << "\n";
  os << "  fsdp_grad_sync: " << request.fsdpGradSync << "\n";
  os << "  sequence_parallel: " << boolText(request.sequenceParallel) << "\n";
  os << "  loss_parallel: " << boolText(request.lossParallel) << "\n";
  os << "  remat: " << quote(request.remat) << "\n";
  os << "  remat_scope: " << request.rematScope << "\n";
  os << "  remat_margin: " << formatDouble(request.rematMargin) << "\n";
  os << "  stacks: " << quoteList(request.stacks) << "\n";
}
