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

#include "PlanReport.h"

#include "parc/Export/PlanExport.h"
#include "parc/Export/Trace.h"

#include "Parc/IR/ParcDialect.h"
#include "parc/Analysis/CostModel.h"
#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Analysis/ModelStats.h"
#include "parc/Import/HFConfig.h"
#include "parc/Transforms/Passes.h"
#include "parc/runtime/PlanFile.h"

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

/// The recipe's spelling of a kernel ("profile", "flash", "fused",
/// "eager"), which the reader accepted, as the passes' option.
static KernelChoice getKernelChoice(StringRef name) {
  if (name == "eager")
    return KernelChoice::Eager;
  return name == "profile" ? KernelChoice::Profile : KernelChoice::Fused;
}

void mlir::parc::buildPlanPipeline(OpPassManager &modulePm,
                                   const PlanRequest &request,
                                   StringRef hardwareDir,
                                   int64_t rematBudgetBytes) {
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
    // The recipe reader accepted only the modes and scopes these name.
    (void)setRematMode(remat, request.remat);
    remat.scope = request.rematScope == "language" ? RematScope::Language
                  : request.rematScope == "vision" ? RematScope::Vision
                                                   : RematScope::All;
    if (request.remat == "budget") {
      remat.attentionKernel = getKernelChoice(request.attentionKernel);
      remat.normKernel = getKernelChoice(request.normKernel);
      remat.lossKernel = getKernelChoice(request.lossKernel);
      remat.budget = rematBudgetBytes;
      remat.seqLen = request.seqLen;
      remat.microBatch = request.microBatchSize;
      remat.imageTokens = request.imageTokens;
      remat.computeDtype = request.computeDtype;
      remat.hardware = request.hardware;
      remat.hardwareDir = hardwareDir.str();
    }
    pm.addPass(createApplyRemat(remat));
  }
  if (request.pp > 1) {
    ApplyPpOptions pp;
    pp.stages = request.pp;
    // The recipe reader accepted only the schedules the enum names.
    pp.schedule =
        symbolizePpSchedule(request.ppSchedule).value_or(PpSchedule::OneFOneB);
    pp.chunks = request.ppChunks;
    pp.split.assign(request.ppSplit.begin(), request.ppSplit.end());
    pp.microbatches = request.microbatches;
    pp.seq = request.seqLen;
    pp.mbs = request.microBatchSize;
    pp.imageTokens = request.imageTokens;
    pm.addPass(createApplyPp(pp));
  }

  ApplyFsdpOptions fsdp;
  fsdp.shards = request.fsdp;
  fsdp.replicas = request.dp;
  fsdp.computeDtype = request.computeDtype;
  fsdp.masterDtype = request.masterDtype;
  fsdp.reduceDtype = request.gradReduceDtype;
  fsdp.optimDtype = request.optimDtype;
  fsdp.prefetch = request.fsdpPrefetch;
  fsdp.reshardAfterForward = request.reshardAfterForward;
  fsdp.reshardLastLayer = request.reshardLastLayer;
  fsdp.gradSync = request.fsdpGradSync == "last-micro-batch"
                      ? GradSync::LastMicroBatch
                      : GradSync::EveryMicroBatch;
  pm.addPass(createApplyFsdp(fsdp));

  // The per-rank programs plan.bin carries; planning a 405B model for 16k
  // GPUs spends about a tenth of a second here.
  LowerToScheduleOptions lower;
  lower.seqLen = request.seqLen;
  lower.microBatch = request.microBatchSize;
  lower.imageTokens = request.imageTokens;
  // With a pipeline the micro-batches are the schedule's.
  lower.gradAccumulation = request.pp > 1 ? 1 : request.gradAccumulation;
  lower.hardware = request.hardware;
  lower.hardwareDir = hardwareDir.str();
  lower.maxNorm = request.maxNorm;
  lower.attentionKernel = getKernelChoice(request.attentionKernel);
  lower.normKernel = getKernelChoice(request.normKernel);
  lower.lossKernel = getKernelChoice(request.lossKernel);
  pm.addPass(createLowerToSchedule(lower));
}

namespace {

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
      // Names and values quoted from the user's files (a config's
      // model_type, a recipe's path) reach the terminal escaped, so that a
      // crafted file cannot send it control sequences; JSON escapes its own.
      using ::parc::runtime::printable;
      if (!diag.location.empty())
        err << printable(diag.location) << ": ";
      err << diag.severity << ": ";
      if (!diag.path.empty())
        err << printable(diag.path) << ": ";
      err << printable(diag.message, /*keepLineBreaks=*/true) << "\n";
    }
    diagnostics.push_back(std::move(diag));
  }

  std::vector<PlanDiagnostic> diagnostics;
  ScopedDiagnosticHandler handler;
};

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
  summary.trainableParameters =
      countTrainableParameters(model, stats.totalParameters);
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

MemoryOptions mlir::parc::getMemoryOptions(const PlanRequest &request,
                                           StringRef hardwareDir) {
  MemoryOptions options;
  options.hardware = request.hardware;
  options.hardwareDir = hardwareDir.str();
  options.seqLen = request.seqLen;
  options.microBatch = request.microBatchSize;
  options.gradAccumulation = request.gradAccumulation;
  options.imageTokens = request.imageTokens;
  if (request.allocator != "profile")
    options.allocator = parseAllocatorName(request.allocator);
  options.optimizerImpl =
      request.optimizerImpl == "fused"      ? OptimizerImpl::Fused
      : request.optimizerImpl == "for-loop" ? OptimizerImpl::ForLoop
                                            : OptimizerImpl::Foreach;
  return options;
}

LogicalResult mlir::parc::predictPlan(ModuleOp module,
                                      const PlanRequest &request,
                                      StringRef hardwareDir,
                                      PlanPrediction &prediction,
                                      bool costIfOom) {
  if (request.remat == "budget") {
    // A plan the trials could not make fails below with its own error.
    FailureOr<int64_t> budget = fitRematBudget(module, request, hardwareDir);
    prediction.rematBudgetBytes = succeeded(budget) ? *budget : 0;
  }
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  buildPlanPipeline(pm, request, hardwareDir, prediction.rematBudgetBytes);
  if (failed(pm.run(module)))
    return failure();
  prediction.pipelineRan = true;
  ModelOp model = *module.getOps<ModelOp>().begin();

  MemoryOptions options = getMemoryOptions(request, hardwareDir);
  FailureOr<MemoryReport> memory = estimateMemory(model, options);
  if (failed(memory))
    return failure();
  prediction.memory = *memory;
  if (!costIfOom && !memory->fits())
    return success();

  CostOptions costOptions;
  costOptions.hardware = request.hardware;
  costOptions.hardwareDir = hardwareDir.str();
  costOptions.seqLen = request.seqLen;
  costOptions.microBatch = request.microBatchSize;
  costOptions.gradAccumulation = request.gradAccumulation;
  costOptions.imageTokens = request.imageTokens;
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

  // On failure --emit-mlir writes what the pipeline was given, so that the
  // failing pass can be rerun under parc-opt.
  OwningOpRef<ModuleOp> input;
  if (!invocation.emitMlirPath.empty())
    input = module->clone();
  PlanPrediction prediction;
  LogicalResult planned =
      predictPlan(*module, request, hardwareDir, prediction);
  PassManager pm(context, ModuleOp::getOperationName());
  buildPlanPipeline(pm, request, hardwareDir, prediction.rematBudgetBytes);
  llvm::raw_string_ostream pipeline(outcome.pipeline);
  pm.printAsTextualPipeline(pipeline);
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
  outcome.exitCode = prediction.memory->fits() ? kPlanFits : kPlanDoesNotFit;
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
  bool emits =
      !invocation.emitRecipePath.empty() || !invocation.emitPlanPath.empty() ||
      !invocation.emitMlirPath.empty() || !invocation.tracePath.empty();
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
        j.attributeObject("search",
                          [&] { writeSearchJson(j, *result, base.searchTop); });
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
