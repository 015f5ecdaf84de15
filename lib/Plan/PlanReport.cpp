//===- PlanReport.cpp - parc-plan's report and JSON document --------------===//

#include "PlanReport.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::parc;

/// 31273342464 -> "31,273,342,464".
std::string mlir::parc::formatCount(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      grouped += ',';
    grouped += digits[i];
  }
  return count < 0 ? "-" + grouped : grouped;
}

void mlir::parc::printText(const PlanOutcome &outcome, llvm::raw_ostream &out) {
  if (!outcome.model)
    return;
  const ModelSummary &model = *outcome.model;
  const PlanRequest &request = *outcome.request;
  out << "model: @" << model.name << " (" << model.className;
  if (!model.source.empty())
    out << ", " << model.source;
  out << ") from " << model.file << "\n";
  out << "parameters: " << formatCount(model.parameters) << " total, "
      << formatCount(model.trainableParameters) << " trainable\n";
  if (model.stacks) {
    out << "stacks:\n";
    if (model.stacks->empty())
      out << "  (none)\n";
    for (const LayerStack &stack : *model.stacks)
      out << "  " << llvm::left_justify(stack.name, 12) << " "
          << llvm::left_justify(stack.path, 40) << " " << stack.layers.size()
          << (stack.layers.size() == 1 ? " layer\n" : " layers\n");
  }
  out << "plan: " << request.getWorldSize() << " x " << request.hardware << " ("
      << request.nodes << (request.nodes == 1 ? " node" : " nodes") << " x "
      << request.gpusPerNode << ")\n";
  out << "  parallel: ";
  if (request.dp > 1)
    out << "dp " << request.dp << ", ";
  out << "fsdp " << request.fsdp << ", tp " << request.tp << ", pp "
      << request.pp;
  if (request.pp > 1) {
    out << " (" << request.ppSchedule;
    if (request.ppChunks > 1)
      out << ", " << request.ppChunks << " chunks";
    out << ", " << request.microbatches << " micro-batches)";
  }
  if (request.tp > 1 && (request.sequenceParallel || request.lossParallel))
    out << (request.sequenceParallel ? ", sequence parallel" : "")
        << (request.lossParallel ? ", loss parallel" : "");
  out << "\n";
  out << "  remat: " << request.remat;
  if (request.remat != "none") {
    out << " (scope " << request.rematScope;
    if (request.remat == "budget")
      out << ", " << formatFixed(request.rematMargin * 100, 1)
          << " % of the device left free";
    out << ")";
  }
  out << "\n";
  out << "  batch: seq " << request.seqLen;
  if (request.imageTokens > 0)
    out << " + " << request.imageTokens << " image tokens";
  out << ", micro-batch " << request.microBatchSize << ", global batch "
      << request.globalBatchSize << ", grad accumulation "
      << request.gradAccumulation;
  if (request.gradAccumulation > 1 && request.fsdp * request.dp > 1)
    out << " (gradients reduce-scattered "
        << (request.fsdpGradSync == "last-micro-batch"
                ? "after the last micro-batch"
                : "every micro-batch")
        << ")";
  out << "\n";
  out << "  dtypes: compute " << getRecipeDtypeName(request.computeDtype)
      << ", master " << getRecipeDtypeName(request.masterDtype)
      << ", grad reduce " << getRecipeDtypeName(request.gradReduceDtype)
      << ", optim " << getRecipeDtypeName(request.optimDtype) << " ("
      << request.optimizer
      << (request.optimizerImpl == "foreach" ? ""
                                             : ", " + request.optimizerImpl)
      << ")\n";
  out << "  frozen: "
      << (request.frozen.empty() ? std::string("(none)")
                                 : llvm::join(request.frozen, ", "))
      << "\n";
  // Only the kernels a recipe chose over the hardware profile's.
  SmallVector<std::string> kernels;
  for (auto [what, name] :
       {std::pair<StringRef, StringRef>("attention", request.attentionKernel),
        {"norm", request.normKernel},
        {"loss", request.lossKernel}})
    if (name != "profile")
      kernels.push_back((what + " " + name).str());
  if (!kernels.empty())
    out << "  kernels: " << llvm::join(kernels, ", ")
        << " (over the hardware profile's)\n";
  if (request.allocator != "profile")
    out << "  allocator: " << request.allocator
        << " (over the hardware profile's)\n";
  if (request.framework != RecipeFramework::Parc) {
    out << "  recipe: " << getRecipeFrameworkName(request.framework)
        << " job, its policies: ";
    // The FSDP policies say nothing where nothing is sharded and the
    // forward runs on the parameters themselves (DDP); one shard in another
    // compute dtype still gathers a compute copy.
    if (request.fsdp == 1 && request.computeDtype == request.masterDtype)
      out << "no FSDP sharding (parameters replicated)";
    else
      out << (request.reshardAfterForward ? "" : "no ")
          << "reshard after forward"
          << (request.reshardAfterForward && !request.reshardLastLayer
                  ? " but of the last layer"
                  : "")
          << ", gradients reduce-scattered "
          << (request.fsdpGradSync == "last-micro-batch"
                  ? "after the last micro-batch"
                  : "every micro-batch");
    out << "\n";
    out << "  ignored (no effect on memory or step time): "
        << (request.ignoredKeys.empty() ? std::string("(none)")
                                        : llvm::join(request.ignoredKeys, ", "))
        << "\n";
  }
  out << "  pipeline: " << outcome.pipeline << "\n";
  if (outcome.memory)
    outcome.memory->print(out);
  if (outcome.cost)
    outcome.cost->print(out);
  if (outcome.exitCode == kPlanDoesNotFit && outcome.cost)
    printAdvice(outcome.advice, outcome.cost->stepSeconds, out);
}

namespace {

void writeBreakdown(llvm::json::OStream &j, const MemoryBreakdown &b) {
  j.attributeObject("breakdown", [&] {
    j.attribute("sharded_parameters", b.shardedParameters);
    j.attribute("unsharded_parameters", b.unshardedParameters);
    j.attribute("gradients", b.gradients);
    j.attribute("optimizer_state", b.optimizerState);
    j.attribute("saved_activations", b.savedActivations);
    j.attribute("recompute_working_set", b.recomputeWorkingSet);
    j.attribute("logits_and_loss", b.logitsAndLoss);
    j.attribute("fixed_overhead", b.fixedOverhead);
  });
}

} // namespace

/// A string, or null where it is empty.
llvm::json::Value mlir::parc::stringOrNull(StringRef text) {
  return text.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(text);
}

namespace {

void writeModel(llvm::json::OStream &j, const ModelSummary &model) {
  j.attribute("name", model.name);
  j.attribute("class", model.className);
  j.attribute("source", stringOrNull(model.source));
  j.attribute("file", model.file);
  j.attribute("parameters", model.parameters);
  j.attribute("trainable_parameters", model.trainableParameters);
  if (!model.stacks) {
    j.attribute("stacks", nullptr);
    return;
  }
  j.attributeArray("stacks", [&] {
    for (const LayerStack &stack : *model.stacks)
      j.object([&] {
        j.attribute("name", stack.name);
        j.attribute("path", stack.path);
        j.attribute("layers", static_cast<int64_t>(stack.layers.size()));
      });
  });
}

void writePlan(llvm::json::OStream &j, const PlanRequest &request,
               StringRef pipeline) {
  j.attribute("world_size", request.getWorldSize());
  j.attribute("nodes", request.nodes);
  j.attribute("gpus_per_node", request.gpusPerNode);
  j.attribute("hardware", request.hardware);
  j.attribute("dp", request.dp);
  j.attribute("fsdp", request.fsdp);
  j.attribute("tp", request.tp);
  j.attribute("pp", request.pp);
  j.attribute("data_parallel", request.getDataParallelRanks());
  j.attribute("remat", request.remat);
  j.attribute("remat_scope", request.rematScope);
  j.attribute("remat_margin", request.rematMargin);
  j.attribute("seq_len", request.seqLen);
  j.attribute("micro_batch_size", request.microBatchSize);
  j.attribute("global_batch_size", request.globalBatchSize);
  j.attribute("grad_accum", request.gradAccumulation);
  j.attributeObject("dtypes", [&] {
    j.attribute("compute", getRecipeDtypeName(request.computeDtype));
    j.attribute("master", getRecipeDtypeName(request.masterDtype));
    j.attribute("grad_reduce", getRecipeDtypeName(request.gradReduceDtype));
    j.attribute("optim", getRecipeDtypeName(request.optimDtype));
  });
  j.attribute("optimizer", request.optimizer);
  j.attribute("optimizer_impl", request.optimizerImpl);
  j.attribute("framework", getRecipeFrameworkName(request.framework));
  j.attribute("sequence_parallel", request.sequenceParallel);
  j.attribute("loss_parallel", request.lossParallel);
  j.attribute("fsdp_reshard_after_forward", request.reshardAfterForward);
  j.attribute("fsdp_reshard_last_layer", request.reshardLastLayer);
  j.attribute("fsdp_grad_sync", request.fsdpGradSync);
  j.attribute("image_tokens", request.imageTokens);
  j.attribute("attention_kernel", request.attentionKernel);
  j.attribute("norm_kernel", request.normKernel);
  j.attribute("loss_kernel", request.lossKernel);
  j.attribute("allocator", request.allocator);
  j.attributeArray("ignored_keys", [&] {
    for (const std::string &key : request.ignoredKeys)
      j.value(key);
  });
  j.attributeArray("frozen", [&] {
    for (const std::string &path : request.frozen)
      j.value(path);
  });
  j.attributeArray("stacks_override", [&] {
    for (const std::string &path : request.stacks)
      j.value(path);
  });
  j.attribute("pipeline", pipeline);
}

void writeMemory(llvm::json::OStream &j, const MemoryReport &memory) {
  j.attribute("hardware", memory.hardware.name);
  j.attribute("capacity_bytes", memory.hardware.memoryBytes);
  j.attribute("peak_bytes", memory.peakBytes());
  const RankMemory *peak =
      memory.ranks.empty() ? nullptr : &memory.ranks[memory.peakRank];
  j.attribute("peak_rank", peak ? llvm::json::Value(peak->rankKind) : nullptr);
  j.attribute("peak_phase",
              peak ? llvm::json::Value(peak->peakPhase) : nullptr);
  j.attribute("allocator", getAllocatorName(memory.allocator));
  j.attribute("device_peak_bytes", memory.devicePeakBytes());
  j.attribute("fits", memory.fits());
  j.attribute("headroom_bytes", memory.headroomBytes());
  writeBreakdown(j, peak ? peak->atPeak : MemoryBreakdown());
  j.attributeArray("ranks", [&] {
    for (const RankMemory &rank : memory.ranks)
      j.object([&] {
        j.attribute("kind", rank.rankKind);
        j.attribute("count", rank.rankCount);
        j.attribute("peak_bytes", rank.peakBytes);
        j.attribute("peak_phase", rank.peakPhase);
        j.attribute("reserved_bytes", rank.reservedBytes);
        j.attribute("reserved_phase", rank.reservedPhase);
        j.attribute("device_peak_bytes", rank.devicePeakBytes());
        if (rank.allocatorOutOfMemory)
          j.attributeObject("out_of_memory", [&] {
            j.attribute("phase", rank.outOfMemoryPhase);
            j.attribute("request_bytes", rank.outOfMemoryRequest);
          });
        j.attribute("layers", rank.layers);
        writeBreakdown(j, rank.atPeak);
      });
  });
}

void writeCost(llvm::json::OStream &j, const CostReport &cost) {
  j.attribute("step_time_s", cost.stepSeconds);
  j.attribute("tokens_per_s_per_gpu", cost.tokensPerSecondPerGpu());
  j.attribute("mfu", cost.mfu());
  j.attribute("flops_per_step", cost.flops.total());
  j.attribute("model_flops_per_token", cost.modelFlopsPerToken);
  j.attributeObject("flops", [&] {
    j.attribute("forward", cost.flops.forward);
    j.attribute("backward", cost.flops.backward);
    j.attribute("recompute", cost.flops.recompute);
  });
  j.attribute("tokens_per_step", cost.tokensPerStep);
  j.attribute("compute_s", cost.computeSeconds);
  j.attribute("communication_s", cost.communicationSeconds);
  j.attribute("exposed_communication_s", cost.exposedCommunicationSeconds);
  j.attribute("optimizer_s", cost.optimizerSeconds);
  j.attribute("all_gather_bytes", cost.allGatherBytes);
  j.attribute("reduce_scatter_bytes", cost.reduceScatterBytes);
  j.attribute("optimizer_bytes", cost.optimizerBytes);
  j.attributeObject("dp", [&] {
    j.attribute("replicas", cost.dpReplicas);
    j.attribute("bytes", cost.dpBytes);
    j.attribute("seconds", cost.dpSeconds);
    j.attribute("link", cost.dpLink);
  });
  j.attributeObject("tp", [&] {
    j.attribute("size", cost.tpSize);
    j.attribute("bytes", cost.tpBytes);
    j.attribute("seconds", cost.tpSeconds);
    j.attribute("link", cost.tpLink);
  });
  j.attributeObject("pp", [&] {
    j.attribute("stages", cost.ppStages);
    j.attribute("schedule", cost.ppSchedule);
    j.attribute("chunks", cost.ppChunks);
    j.attribute("microbatches", cost.microBatches);
    j.attribute("slowest_stage", cost.slowestStage);
    j.attribute("seconds", cost.pipelineSeconds);
    j.attribute("bubble", cost.bubbleFraction);
    j.attribute("closed_form_bubble", cost.closedFormBubble);
    j.attribute("p2p_bytes_per_microbatch", cost.p2pBytes);
    j.attribute("tied_bytes", cost.tiedBytes);
    j.attribute("tied_seconds", cost.tiedSeconds);
  });
  j.attributeObject("assumptions", [&] {
    j.attribute("peak_flops", cost.peakFlops);
    j.attribute("compute_efficiency", cost.options.computeEfficiency);
    j.attribute("overlap", cost.options.overlap.str());
    j.attribute("link", cost.link);
    j.attribute("link_bandwidth_bytes_per_s", cost.bandwidth);
    j.attribute("memory_bandwidth_bytes_per_s", cost.hardware.memoryBandwidth);
    j.attribute("collective", "ring");
    j.attribute("attention", "causal pairs s(s+1)/2, window-limited");
    j.attribute("backward", "2x forward");
  });
}

} // namespace

void mlir::parc::writeDiagnostics(llvm::json::OStream &j,
                                  ArrayRef<PlanDiagnostic> diagnostics) {
  j.attributeArray("diagnostics", [&] {
    for (const PlanDiagnostic &diag : diagnostics)
      j.object([&] {
        j.attribute("severity", diag.severity);
        j.attribute("message", diag.message);
        j.attribute("location", stringOrNull(diag.location));
        j.attribute("path", stringOrNull(diag.path));
      });
  });
}

StringRef mlir::parc::getStatusName(int exitCode) {
  switch (exitCode) {
  case kPlanFits:
    return "fits";
  case kPlanDoesNotFit:
    return "does_not_fit";
  default:
    return "error";
  }
}

void mlir::parc::printJson(const PlanInvocation &invocation,
                           const PlanOutcome &outcome,
                           ArrayRef<PlanDiagnostic> diagnostics,
                           llvm::raw_ostream &out) {
  llvm::json::OStream j(out, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("version", 1);
    j.attribute("status", getStatusName(outcome.exitCode));
    j.attribute("recipe", stringOrNull(invocation.recipePath));
    if (outcome.model)
      j.attributeObject("model", [&] { writeModel(j, *outcome.model); });
    else
      j.attribute("model", nullptr);
    if (outcome.request)
      j.attributeObject(
          "plan", [&] { writePlan(j, *outcome.request, outcome.pipeline); });
    else
      j.attribute("plan", nullptr);
    if (outcome.memory)
      j.attributeObject("memory", [&] { writeMemory(j, *outcome.memory); });
    else
      j.attribute("memory", nullptr);
    writeDiagnostics(j, diagnostics);
    // Last, after the keys of the first version of the document.
    if (outcome.cost)
      j.attributeObject("cost", [&] { writeCost(j, *outcome.cost); });
    else
      j.attribute("cost", nullptr);
    writeAdviceJson(j, outcome.advice,
                    outcome.cost ? outcome.cost->stepSeconds : 0);
  });
  out << "\n";
}
