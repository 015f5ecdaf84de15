//===- Planner.cpp - parc-plan: a recipe in, a checked plan out -----------===//
//
// The story of one plan, in order: read the request, import the model, mark
// what is frozen, run discover-layers -> apply-remat -> apply-fsdp, estimate
// memory, render. Each step stops the run on error; what the earlier steps
// learnt is still rendered, so a JSON consumer sees how far planning got.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/Planner.h"

#include "parc/Plan/AutoPlanner.h"
#include "parc/Plan/PlanAdvice.h"

#include "parc/Export/PlanExport.h"
#include "parc/Export/Trace.h"

#include "Parc/IR/ParcDialect.h"
#include "parc/Analysis/CostModel.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Analysis/ModelStats.h"
#include "parc/Import/HFConfig.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <optional>

using namespace mlir;
using namespace mlir::parc;

void mlir::parc::buildPlanPipeline(OpPassManager &modulePm,
                                   const PlanRequest &request,
                                   StringRef hardwareDir) {
  // Every pass plans one parc.model (IsolatedFromAbove).
  OpPassManager &pm = modulePm.nest<ModelOp>();
  DiscoverLayersOptions discover;
  discover.stackPaths.assign(request.stacks.begin(), request.stacks.end());
  pm.addPass(createDiscoverLayers(discover));

  // TP, then remat, then the stage split (which weighs recompute), then
  // FSDP over each stage's units.
  if (request.tp > 1) {
    ApplyTpOptions tp;
    tp.size = request.tp;
    tp.sequenceParallel = request.sequenceParallel;
    tp.lossParallel = request.lossParallel;
    pm.addPass(createApplyTp(tp));
  }
  if (request.remat != "none") {
    ApplyRematOptions remat;
    remat.mode = request.remat;
    remat.scope = request.rematScope;
    pm.addPass(createApplyRemat(remat));
  }
  if (request.pp > 1) {
    ApplyPpOptions pp;
    pp.stages = request.pp;
    // The recipe reader accepted only the schedules the enum names.
    pp.schedule = symbolizePpSchedule(request.ppSchedule)
                      .value_or(PpSchedule::OneFOneB);
    pp.chunks = request.ppChunks;
    pp.split.assign(request.ppSplit.begin(), request.ppSplit.end());
    pp.microbatches = request.microbatches;
    pp.seq = request.seqLen;
    pp.mbs = request.microBatchSize;
    pm.addPass(createApplyPp(pp));
  }

  ApplyFsdpOptions fsdp;
  fsdp.shards = request.fsdp;
  fsdp.replicas = request.dp;
  fsdp.computeDtype = getMlirDtypeName(request.computeDtype).str();
  fsdp.masterDtype = getMlirDtypeName(request.masterDtype).str();
  fsdp.reduceDtype = getMlirDtypeName(request.gradReduceDtype).str();
  fsdp.optimDtype = getMlirDtypeName(request.optimDtype).str();
  fsdp.prefetch = request.fsdpPrefetch;
  fsdp.reshardAfterForward = request.reshardAfterForward;
  fsdp.gradSync = request.fsdpGradSync == "last-micro-batch"
                      ? GradSync::LastMicroBatch
                      : GradSync::EveryMicroBatch;
  pm.addPass(createApplyFsdp(fsdp));

  // The per-rank programs plan.bin carries; planning a 405B model for 16k
  // GPUs spends about a tenth of a second here.
  LowerToScheduleOptions lower;
  lower.seqLen = request.seqLen;
  lower.microBatch = request.microBatchSize;
  // With a pipeline the micro-batches are the schedule's.
  lower.gradAccumulation = request.pp > 1 ? 1 : request.gradAccumulation;
  lower.hardware = request.hardware;
  lower.hardwareDir = hardwareDir.str();
  lower.maxNorm = request.maxNorm;
  pm.addPass(createLowerToSchedule(lower));
}

namespace {

/// One diagnostic as the JSON document and the text report show it.
struct PlanDiagnostic {
  std::string severity;
  std::string message;
  /// "file:line:col", a --set or flag, or empty when there is none.
  std::string location;
  /// The dotted path of the module or parameter the diagnostic is on, or
  /// empty.
  std::string path;
};

StringRef getSeverityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  llvm_unreachable("unknown severity");
}

/// The location as compilers print it: file:line:col (file:line where the
/// column is unknown), or the name of a setting ("--set train.seq_len=0").
std::string formatLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    std::string text =
        (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine()))
            .str();
    if (file.getColumn())
      text += ":" + std::to_string(file.getColumn());
    return text;
  }
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (isa<UnknownLoc>(name.getChildLoc()))
      return name.getName().str();
    return formatLocation(name.getChildLoc());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    return fused.getLocations().empty()
               ? std::string()
               : formatLocation(fused.getLocations().front());
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return formatLocation(callSite.getCallee());
  if (isa<UnknownLoc>(loc))
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

/// The dotted path an imported op's location names (a NameLoc over the
/// config file's location), or empty.
std::string getLocationPath(Location loc) {
  auto name = dyn_cast<NameLoc>(loc);
  if (!name || isa<UnknownLoc>(name.getChildLoc()))
    return "";
  return name.getName().str();
}

/// Collects every diagnostic of the run; in text mode also prints it as it
/// comes, in the form MLIR tools use.
class DiagnosticCapture {
public:
  DiagnosticCapture(MLIRContext *context, bool print, llvm::raw_ostream &err)
      : handler(context, [this, print, &err](Diagnostic &diag) {
          record(diag.getSeverity(), diag.str(), diag.getLocation(), print,
                 err);
          for (Diagnostic &note : diag.getNotes())
            record(note.getSeverity(), note.str(), note.getLocation(), print,
                   err);
          return success();
        }) {}

  const std::vector<PlanDiagnostic> &getDiagnostics() const {
    return diagnostics;
  }

private:
  void record(DiagnosticSeverity severity, std::string message, Location loc,
              bool print, llvm::raw_ostream &err) {
    PlanDiagnostic diag{getSeverityName(severity).str(), std::move(message),
                        formatLocation(loc), getLocationPath(loc)};
    if (print) {
      if (!diag.location.empty())
        err << diag.location << ": ";
      err << diag.severity << ": ";
      if (!diag.path.empty())
        err << diag.path << ": ";
      err << diag.message << "\n";
    }
    diagnostics.push_back(std::move(diag));
  }

  std::vector<PlanDiagnostic> diagnostics;
  ScopedDiagnosticHandler handler;
};

/// What the report says about the model.
struct ModelSummary {
  std::string name;
  std::string className;
  std::string source;
  std::string file;
  int64_t parameters = 0;
  int64_t trainableParameters = 0;
  /// Empty until discover-layers has run.
  std::optional<SmallVector<LayerStack>> stacks;
};

/// How far planning got; rendered whatever the outcome.
struct PlanOutcome {
  std::optional<PlanRequest> request;
  std::optional<ModelSummary> model;
  std::string pipeline;
  std::optional<MemoryReport> memory;
  std::optional<CostReport> cost;
  /// Whether planning got as far as writing --trace.
  bool traceAttempted = false;
  int exitCode = kPlanError;
  /// Under kPlanDoesNotFit: the single changes tried, planned.
  std::vector<PlanAdvice> advice;
};

/// Parameters that get gradients, counted as ModelStats counts: a tied
/// tensor once. requires_grad belongs to the tensor, so freezing any module
/// that holds a tied tensor freezes it for all of them, as
/// `module.requires_grad_(False)` does in PyTorch.
int64_t countTrainableParameters(ModelOp model, const ModelStats &stats) {
  llvm::DenseSet<Operation *> aliases, frozenStorage;
  for (TieOp tie : model.getBody()->getOps<TieOp>()) {
    SmallVector<Operation *> members;
    for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>())
      if (Operation *param = SymbolTable::lookupSymbolIn(model, ref))
        members.push_back(param);
    if (members.empty())
      continue;
    aliases.insert(std::next(members.begin()), members.end());
    if (llvm::any_of(members, [](Operation *op) { return isFrozen(op); }))
      frozenStorage.insert(members.front());
  }
  int64_t frozen = 0;
  model.walk([&](ParamOp param) {
    if (!aliases.contains(param) &&
        (isFrozen(param) || frozenStorage.contains(param)))
      frozen += param.getNumElements();
  });
  return stats.totalParameters - frozen;
}

ModelSummary summarizeModel(ModelOp model, StringRef file) {
  ModelStats stats = ModelStats::compute(model);
  ModelSummary summary;
  summary.name = model.getSymName().str();
  summary.className = model.getClassName().str();
  auto configs = model.getBody()->getOps<HFConfigOp>();
  if (!configs.empty())
    summary.source = (*configs.begin()).getSource().str();
  else if (auto source = model->getAttrOfType<StringAttr>("parc.source"))
    summary.source = source.getValue().str(); // hand-written IR
  summary.file = file.str();
  summary.parameters = stats.totalParameters;
  summary.trainableParameters = countTrainableParameters(model, stats);
  return summary;
}

OwningOpRef<ModuleOp> loadModel(const PlanRequest &request,
                                MLIRContext *context) {
  if (!request.mlirPath.empty())
    return parseSourceFile<ModuleOp>(request.mlirPath, ParserConfig(context));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(request.hfConfigPath, /*IsText=*/true);
  if (!buffer) {
    emitError(request.getLocation("model.hf_config"))
        << "cannot read '" << request.hfConfigPath
        << "': " << buffer.getError().message();
    return nullptr;
  }
  return importHFConfig((*buffer)->getBuffer(), request.hfConfigPath, context);
}

/// The one parc.model of `module`.
FailureOr<ModelOp> getModel(ModuleOp module, StringRef file) {
  auto models = llvm::to_vector(module.getOps<ModelOp>());
  if (models.size() != 1)
    return emitError(module.getLoc()) << "expected one parc.model in '" << file
                                      << "', found " << models.size();
  return models.front();
}

/// Checks the frozen paths where the recipe gave them, then marks them.
LogicalResult freezeModules(ModelOp model, const PlanRequest &request) {
  bool allFound = true;
  for (const std::string &path : request.frozen)
    if (!isa_and_nonnull<NNModuleOp>(lookupDottedPath(model, path))) {
      emitError(request.getLocation("train.frozen"))
          << "frozen path '" << path << "' names no module of @"
          << model.getSymName();
      allFound = false;
    }
  if (!allFound)
    return failure();
  return markFrozen(model, request.frozen);
}

LogicalResult writeMlir(ModuleOp module, StringRef path) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
  if (!file)
    return emitError(module.getLoc())
           << "cannot write --emit-mlir file '" << path << "': " << message;
  module.print(file->os());
  file->os() << "\n";
  file->keep();
  return success();
}

LogicalResult writePlan(ModelOp model, StringRef path) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
  if (!file)
    return emitError(model.getLoc())
           << "cannot write --emit-plan file '" << path << "': " << message;
  if (failed(exportPlan(model, file->os())))
    return failure();
  file->keep();
  return success();
}

LogicalResult writeTraceFile(ModelOp model, const MemoryReport &memory,
                             const CostReport &cost, StringRef path) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
  if (!file)
    return emitError(model.getLoc())
           << "cannot write --trace file '" << path << "': " << message;
  writeTrace(file->os(), memory, cost);
  file->os().flush();
  if (file->os().has_error())
    return emitError(model.getLoc()) << "cannot write --trace file '" << path
                                     << "': " << file->os().error().message();
  file->keep();
  return success();
}

} // namespace

FailureOr<PlanRequest>
mlir::parc::readPlanRequest(const PlanInvocation &invocation,
                            ArrayRef<RecipeSetting> extra,
                            MLIRContext *context) {
  if (invocation.recipePath.empty() && invocation.setOptions.empty() &&
      invocation.flagSettings.empty())
    return emitError(UnknownLoc::get(context))
           << "nothing to plan: give a recipe (parc-plan RECIPE.yaml) or the "
              "model, hardware and batch as flags (parc-plan --model "
              "config.json --hardware h100-80gb --gpus 8 --seq 4096); see "
              "--help";
  std::vector<RecipeSetting> settings;
  for (const std::string &text : invocation.setOptions) {
    FailureOr<RecipeSetting> setting = parseSetOption(text, context);
    if (failed(setting))
      return failure();
    settings.push_back(std::move(*setting));
  }
  llvm::append_range(settings, invocation.flagSettings);
  llvm::append_range(settings, extra);
  return invocation.recipePath.empty()
             ? buildPlanRequest(settings, context)
             : readRecipeFile(invocation.recipePath, settings, context);
}

OwningOpRef<ModuleOp> mlir::parc::loadPlanModel(const PlanRequest &request,
                                                MLIRContext *context) {
  OwningOpRef<ModuleOp> module = loadModel(request, context);
  if (!module)
    return nullptr;
  FailureOr<ModelOp> model = getModel(*module, request.getModelFile());
  if (failed(model) || failed(freezeModules(*model, request)))
    return nullptr;
  return module;
}

LogicalResult mlir::parc::predictPlan(ModuleOp module,
                                      const PlanRequest &request,
                                      StringRef hardwareDir,
                                      PlanPrediction &prediction) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  buildPlanPipeline(pm, request, hardwareDir);
  if (failed(pm.run(module)))
    return failure();
  prediction.pipelineRan = true;
  ModelOp model = *module.getOps<ModelOp>().begin();

  MemoryOptions options;
  options.hardware = request.hardware;
  options.hardwareDir = hardwareDir.str();
  options.seqLen = request.seqLen;
  options.microBatch = request.microBatchSize;
  options.gradAccumulation = request.gradAccumulation;
  FailureOr<MemoryReport> memory = estimateMemory(model, options);
  if (failed(memory))
    return failure();
  prediction.memory = *memory;

  CostOptions costOptions;
  costOptions.hardware = request.hardware;
  costOptions.hardwareDir = hardwareDir.str();
  costOptions.seqLen = request.seqLen;
  costOptions.microBatch = request.microBatchSize;
  costOptions.gradAccumulation = request.gradAccumulation;
  costOptions.gpusPerNode = request.gpusPerNode;
  FailureOr<CostReport> cost = estimateCost(model, costOptions);
  if (failed(cost))
    return failure();
  prediction.cost = *cost;
  recordPrediction(model, *memory, options);
  return success();
}

namespace {

/// Plans `request` (read from `invocation`) and writes what the invocation
/// asks for, filling `outcome` as it goes.
void planRequest(const PlanInvocation &invocation, const PlanRequest &request,
                 MLIRContext *context, PlanOutcome &outcome) {
  StringRef hardwareDir = invocation.hardwareDir;
  if (failed(loadHardwareProfile(request.hardware,
                                 hardwareDir.empty() ? getDefaultHardwareDir()
                                                     : hardwareDir.str(),
                                 request.getLocation("cluster.hardware"))))
    return;

  OwningOpRef<ModuleOp> module = loadPlanModel(request, context);
  if (!module)
    return;
  ModelOp model = *module->getOps<ModelOp>().begin();
  outcome.model = summarizeModel(model, request.getModelFile());

  PassManager pm(context, ModuleOp::getOperationName());
  buildPlanPipeline(pm, request, hardwareDir);
  llvm::raw_string_ostream pipeline(outcome.pipeline);
  pm.printAsTextualPipeline(pipeline);

  // On failure --emit-mlir writes what the pipeline was given, so that the
  // failing pass can be rerun under parc-opt.
  OwningOpRef<ModuleOp> input;
  if (!invocation.emitMlirPath.empty())
    input = module->clone();
  PlanPrediction prediction;
  LogicalResult planned =
      predictPlan(*module, request, hardwareDir, prediction);
  if (!prediction.pipelineRan) {
    emitRemark(model.getLoc())
        << "planning stopped in the pipeline; rerun it on the IR that "
           "--emit-mlir writes with parc-opt --pass-pipeline='"
        << outcome.pipeline << "'";
    if (input)
      (void)writeMlir(*input, invocation.emitMlirPath);
    return;
  }
  if (!invocation.emitMlirPath.empty() &&
      failed(writeMlir(*module, invocation.emitMlirPath)))
    return;
  outcome.model->stacks = getLayerStacks(model);
  outcome.memory = prediction.memory;
  outcome.cost = prediction.cost;
  if (failed(planned))
    return;
  if (!invocation.emitPlanPath.empty() &&
      failed(writePlan(model, invocation.emitPlanPath)))
    return;
  outcome.traceAttempted = true;
  if (!invocation.tracePath.empty() &&
      failed(writeTraceFile(model, *prediction.memory, *prediction.cost,
                            invocation.tracePath)))
    return;
  outcome.exitCode =
      prediction.memory->fits() ? kPlanFits : kPlanDoesNotFit;
}

/// 31273342464 -> "31,273,342,464".
std::string formatCount(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      grouped += ',';
    grouped += digits[i];
  }
  return count < 0 ? "-" + grouped : grouped;
}

void printText(const PlanOutcome &outcome, llvm::raw_ostream &out) {
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
  if (request.remat != "none")
    out << " (scope " << request.rematScope << ")";
  out << "\n";
  out << "  batch: seq " << request.seqLen << ", micro-batch "
      << request.microBatchSize << ", global batch " << request.globalBatchSize
      << ", grad accumulation " << request.gradAccumulation;
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
      << request.optimizer << ")\n";
  out << "  frozen: "
      << (request.frozen.empty() ? std::string("(none)")
                                 : llvm::join(request.frozen, ", "))
      << "\n";
  if (request.framework != RecipeFramework::Parc) {
    out << "  recipe: " << getRecipeFrameworkName(request.framework)
        << " job, its policies: "
        << (request.reshardAfterForward ? "" : "no ")
        << "reshard after forward, gradients reduce-scattered "
        << (request.fsdpGradSync == "last-micro-batch"
                ? "after the last micro-batch"
                : "every micro-batch")
        << "\n";
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

/// A string, or null where it is empty.
llvm::json::Value stringOrNull(StringRef text) {
  return text.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(text);
}

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
  j.attribute("framework", getRecipeFrameworkName(request.framework));
  j.attribute("sequence_parallel", request.sequenceParallel);
  j.attribute("loss_parallel", request.lossParallel);
  j.attribute("fsdp_reshard_after_forward", request.reshardAfterForward);
  j.attribute("fsdp_grad_sync", request.fsdpGradSync);
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
    j.attribute("overlap", cost.options.overlap);
    j.attribute("link", cost.link);
    j.attribute("link_bandwidth_bytes_per_s", cost.bandwidth);
    j.attribute("memory_bandwidth_bytes_per_s", cost.hardware.memoryBandwidth);
    j.attribute("collective", "ring");
    j.attribute("attention", "causal pairs s(s+1)/2, window-limited");
    j.attribute("backward", "2x forward");
  });
}

void writeDiagnostics(llvm::json::OStream &j,
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

StringRef getStatusName(int exitCode) {
  switch (exitCode) {
  case kPlanFits:
    return "fits";
  case kPlanDoesNotFit:
    return "does_not_fit";
  default:
    return "error";
  }
}

void printJson(const PlanInvocation &invocation, const PlanOutcome &outcome,
               ArrayRef<PlanDiagnostic> diagnostics, llvm::raw_ostream &out) {
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

} // namespace

namespace {

LogicalResult writeRecipeFile(const PlanRequest &request, StringRef path,
                              MLIRContext *context) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
  if (!file)
    return emitError(UnknownLoc::get(context))
           << "cannot write --emit-recipe file '" << path << "': " << message;
  writeRecipe(request, file->os());
  file->keep();
  return success();
}

/// parc-plan --auto: searches the layouts `base` leaves open, writes what
/// the invocation asks for of the winner (planned again as a recipe of its
/// own, so --emit-plan holds exactly what `parc-plan` of the emitted recipe
/// would write) and renders the search.
int search(const PlanInvocation &invocation, const PlanRequest &base,
           MLIRContext *context, const DiagnosticCapture &capture,
           llvm::raw_ostream &out) {
  FailureOr<SearchResult> result = searchLayouts(invocation, base, context);
  int exitCode = failed(result) ? kPlanError : getSearchExitCode(*result);
  bool emits = !invocation.emitRecipePath.empty() ||
               !invocation.emitPlanPath.empty() ||
               !invocation.emitMlirPath.empty() ||
               !invocation.tracePath.empty();
  if (succeeded(result) && result->ranked.empty()) {
    if (result->enumerated == 0)
      emitError(UnknownLoc::get(context))
          << "no layout of " << base.getWorldSize()
          << " GPUs satisfies the layout keys given ("
          << llvm::join(result->fixedKeys, ", ") << ")";
    else if (result->closest)
      emitRemark(UnknownLoc::get(context))
          << "no layout fits " << base.hardware << " (the closest peaks at "
          << formatGiB(result->closest->peakBytes) << " GiB)";
    else
      emitError(UnknownLoc::get(context))
          << "every layout was refused; the reasons are listed under "
             "'refused'";
    if (emits)
      emitError(UnknownLoc::get(context))
          << "nothing written for the winner: no layout fits";
  } else if (succeeded(result) && emits) {
    const PlanCandidate &winner = result->ranked.front();
    if (!invocation.emitRecipePath.empty() &&
        failed(writeRecipeFile(*winner.request, invocation.emitRecipePath,
                               context)))
      exitCode = kPlanError;
    if (!invocation.emitPlanPath.empty() || !invocation.emitMlirPath.empty() ||
        !invocation.tracePath.empty()) {
      PlanInvocation again = invocation;
      again.emitRecipePath.clear();
      SmallVector<RecipeSetting> settings(winner.settings.begin(),
                                          winner.settings.end());
      RecipeSetting noSearch;
      noSearch.key = "search.auto";
      noSearch.value = "false";
      noSearch.origin = "--auto";
      settings.push_back(noSearch);
      FailureOr<PlanRequest> request =
          readPlanRequest(again, settings, context);
      PlanOutcome outcome;
      if (succeeded(request))
        planRequest(again, *request, context, outcome);
      if (outcome.exitCode != kPlanFits)
        exitCode = kPlanError;
    }
  }

  // Nothing fits: what would make the closest plan fit.
  std::vector<PlanAdvice> advice;
  if (succeeded(result) && result->closest)
    advice = planAdvice(invocation, *result->closest->request,
                        result->closest->settings);

  if (invocation.json) {
    llvm::json::OStream j(out, /*IndentSize=*/2);
    j.object([&] {
      j.attribute("version", 1);
      j.attribute("status", getStatusName(exitCode));
      j.attribute("recipe", stringOrNull(invocation.recipePath));
      if (succeeded(result))
        j.attributeObject("search", [&] {
          writeSearchJson(j, *result, base.searchTop);
        });
      else
        j.attribute("search", nullptr);
      writeDiagnostics(j, capture.getDiagnostics());
      if (succeeded(result) && result->closest)
        writeAdviceJson(j, advice, result->closest->stepSeconds);
    });
    out << "\n";
  } else if (succeeded(result)) {
    printSearch(*result, base, base.searchTop, out);
    if (result->closest)
      printAdvice(advice, result->closest->stepSeconds, out);
  }
  out.flush();
  return exitCode;
}

} // namespace

int mlir::parc::runPlanner(const PlanInvocation &invocation,
                           llvm::raw_ostream &out, llvm::raw_ostream &err) {
  MLIRContext context;
  context.loadDialect<ParcDialect, func::FuncDialect, shard::ShardDialect,
                      arith::ArithDialect>();
  DiagnosticCapture capture(&context, /*print=*/!invocation.json, err);

  PlanOutcome outcome;
  FailureOr<PlanRequest> request = readPlanRequest(invocation, {}, &context);
  if (succeeded(request) && request->searchAuto)
    return search(invocation, *request, &context, capture, out);
  if (succeeded(request)) {
    outcome.request = *request;
    planRequest(invocation, *request, &context, outcome);
    if (outcome.exitCode == kPlanDoesNotFit)
      outcome.advice = planAdvice(invocation, *request);
  }
  if (outcome.exitCode == kPlanError && !outcome.traceAttempted &&
      !invocation.tracePath.empty())
    emitError(UnknownLoc::get(&context))
        << "no trace written to '" << invocation.tracePath
        << "': planning failed";

  if (invocation.json)
    printJson(invocation, outcome, capture.getDiagnostics(), out);
  else if (outcome.exitCode != kPlanError)
    printText(outcome, out);
  out.flush();
  return outcome.exitCode;
}
