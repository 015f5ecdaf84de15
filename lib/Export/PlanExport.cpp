//===- PlanExport.cpp - plan.bin writer and reader ------------------------===//
//
// The compiler side of plan.bin: it builds the runtime's FlatBuffers tables
// from the planned IR and, for round trips, rebuilds IR from them. What a
// runtime needs to rebuild the model lives here (module paths, parameter
// shapes, dtypes, ties, initialisation), next to the plan and the predictions.
//
//===----------------------------------------------------------------------===//

#include "parc/Export/PlanExport.h"
#include "parc/Export/ForwardExport.h"
#include "parc/Export/ScheduleExport.h"

#include "PlanFields.h"
#include "PlanFormat.h"
#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/ModelGraph.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/runtime/PlanFile.h"
#include "parc/runtime/Program.h"

#include "Parc/IR/ParcDialect.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::parc;
namespace fb = flatbuffers;
namespace schema = ::parc::plan;

namespace {

FailureOr<schema::DType> toDType(Type type, Operation *where) {
  if (type.isF32())
    return schema::DType::F32;
  if (type.isBF16())
    return schema::DType::BF16;
  if (type.isF16())
    return schema::DType::F16;
  return mlir::emitError(where->getLoc())
         << "plan.bin has no dtype for " << type;
}

Type fromDType(schema::DType dtype, Builder &b) {
  switch (dtype) {
  case schema::DType::BF16:
    return b.getBF16Type();
  case schema::DType::F16:
    return b.getF16Type();
  default:
    return b.getF32Type();
  }
}

/// How the runtime initialises each parameter, deterministically and
/// independent of sharding: norm scales start at one (zero for Gemma's
/// (1 + w) norms), biases at zero, everything else from a normal(0, 0.02).
llvm::DenseMap<Operation *, std::string> initialisations(ModelOp model) {
  llvm::DenseMap<Operation *, std::string> init;
  SymbolTableCollection tables;
  auto mark = [&](Operation *user, SymbolRefAttr ref, StringRef how) {
    if (ref)
      if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(user, ref))
        init[param] = how.str();
  };
  walkModelGraph(model, [&](Operation *op) {
    if (auto norm = dyn_cast<RmsNormOp>(op))
      mark(op, norm.getWeight(), norm.getUnitOffset() ? "zeros" : "ones");
    else if (auto norm = dyn_cast<LayerNormOp>(op)) {
      mark(op, norm.getWeight(), "ones");
      mark(op, norm.getBiasAttr(), "zeros");
    } else if (auto linear = dyn_cast<LinearOp>(op))
      mark(op, linear.getBiasAttr(), "zeros");
    else if (auto patch = dyn_cast<PatchEmbeddingOp>(op))
      mark(op, patch.getBiasAttr(), "zeros");
  });
  return init;
}

std::vector<std::string> refsToPaths(ModelOp model, ArrayAttr refs) {
  std::vector<std::string> paths;
  if (refs)
    for (auto ref : refs.getAsRange<SymbolRefAttr>())
      if (Operation *param = SymbolTable::lookupSymbolIn(model, ref))
        paths.push_back(getDottedPath(param));
  return paths;
}

/// The rank layout: the grids named after the axes, outermost first; an axis
/// without a grid has size 1 and is left out.
fb::Offset<schema::Parallelism> exportParallelism(ModelOp model,
                                                  fb::FlatBufferBuilder &fbb) {
  std::vector<std::string> axes;
  std::vector<int64_t> sizes;
  int64_t world = 1;
  for (StringRef axis : kRankAxesOutermostFirst) {
    auto gridOp = dyn_cast_or_null<shard::GridOp>(
        SymbolTable::lookupSymbolIn(model, axis));
    if (!gridOp)
      continue;
    int64_t size = 1;
    for (int64_t extent : gridOp.getShape())
      size *= extent;
    axes.push_back(axis.str());
    sizes.push_back(size);
    world *= size;
  }
  TpPlan tp = getTpPlan(model);
  PpPlan pp = getPpPlan(model);
  std::vector<fb::Offset<schema::PipelineStage>> stages;
  if (auto schedules = model->getAttrOfType<ArrayAttr>(kPpScheduleAttrName))
    for (auto stage : schedules.getAsRange<PipelineStepsAttr>()) {
      std::vector<std::string> steps;
      for (const PipelineStep &step : stage.getSteps())
        steps.push_back(step.str());
      auto offsets = fbb.CreateVectorOfStrings(steps);
      stages.push_back(
          schema::CreatePipelineStage(fbb, stage.getStage(), offsets));
    }
  auto axisOffsets = fbb.CreateVectorOfStrings(axes);
  auto sizeOffsets = fbb.CreateVector(sizes);
  auto schedule = fbb.CreateString(pp.isPipelined() ? pp.schedule : "");
  auto stageOffsets = fbb.CreateVector(stages);
  return schema::CreateParallelism(
      fbb, world, axisOffsets, sizeOffsets, tp.sequenceParallel,
      tp.lossParallel, schedule, pp.chunks, pp.microbatches, stageOffsets);
}

} // namespace

LogicalResult mlir::parc::exportPlan(ModelOp model, llvm::raw_ostream &os) {
  fb::FlatBufferBuilder fbb;
  std::vector<fb::Offset<schema::Module>> modules;
  walkModelGraph(model, [&](Operation *op) {
    auto module = dyn_cast<NNModuleOp>(op);
    if (!module)
      return;
    auto tag = getLayerTag(module);
    std::optional<RematKind> remat = getRemat(module);
    auto stage = module->getAttrOfType<IntegerAttr>(kPpStageAttrName);
    auto chunk = module->getAttrOfType<IntegerAttr>(kPpChunkAttrName);
    modules.push_back(schema::CreateModuleDirect(
        fbb, getDottedPath(module).c_str(), module.getClassName().str().c_str(),
        static_cast<schema::ModuleKind>(module.getKind()),
        tag ? tag->first.str().c_str() : nullptr, tag ? tag->second : -1,
        remat ? stringifyRematKind(*remat).str().c_str() : nullptr,
        stage ? stage.getInt() : 0, chunk ? chunk.getInt() : 0));
  });

  std::vector<fb::Offset<schema::Stack>> stacks;
  for (const LayerStack &stack : getLayerStacks(model))
    stacks.push_back(schema::CreateStackDirect(
        fbb, stack.name.c_str(), stack.path.c_str(), stack.layers.size()));

  llvm::DenseMap<Operation *, std::string> init = initialisations(model);
  PipelinePlacement placement(model);
  std::vector<fb::Offset<schema::Param>> params;
  bool failedDtype = false;
  walkModelGraph(model, [&](Operation *op) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param)
      return;
    FailureOr<schema::DType> dtype =
        toDType(param.getTensorType().getElementType(), param);
    failedDtype |= failed(dtype);
    std::vector<int64_t> shape(param.getTensorType().getShape());
    // A plan read back from plan.bin has no forwards; it keeps the
    // initialisation it was given.
    std::string how = init.lookup(param);
    if (auto given = param->getAttrOfType<StringAttr>("parc.init"))
      how = given.getValue().str();
    std::optional<TpRole> tp = getTpRole(param);
    auto padded = param->getAttrOfType<IntegerAttr>(kTpPaddedDim0AttrName);
    params.push_back(schema::CreateParamDirect(
        fbb, getDottedPath(param).c_str(), &shape,
        succeeded(dtype) ? *dtype : schema::DType::F32,
        how.empty() ? "normal(0.02)" : how.c_str(), isFrozen(param),
        tp ? stringifyTpRole(*tp).str().c_str() : nullptr,
        padded ? padded.getInt() : 0, placement.getStage(param)));
  });
  if (failedDtype)
    return failure();

  std::vector<fb::Offset<schema::Tie>> ties;
  for (TieOp tie : model.getBody()->getOps<TieOp>()) {
    std::vector<std::string> paths = refsToPaths(model, tie.getParams());
    std::vector<fb::Offset<fb::String>> strings;
    for (const std::string &path : paths)
      strings.push_back(fbb.CreateString(path));
    ties.push_back(schema::CreateTieDirect(fbb, &strings));
  }

  std::vector<fb::Offset<schema::Grid>> grids;
  for (auto grid : model.getBody()->getOps<shard::GridOp>()) {
    std::vector<int64_t> shape(grid.getShape());
    std::vector<fb::Offset<fb::String>> axes{
        fbb.CreateString(grid.getSymName().str())};
    grids.push_back(schema::CreateGridDirect(
        fbb, grid.getSymName().str().c_str(), &shape, &axes));
  }

  std::vector<fb::Offset<schema::FsdpUnit>> units;
  for (FsdpUnitOp unit : model.getBody()->getOps<FsdpUnitOp>()) {
    std::vector<fb::Offset<schema::ShardedParam>> sharded;
    std::string grid;
    for (ShardParamOp shard : unit.getBody()->getOps<ShardParamOp>()) {
      if (auto sharding =
              shard.getSharding().getDefiningOp<shard::ShardingOp>())
        grid = sharding.getGrid().str();
      Operation *param = SymbolTable::lookupSymbolIn(model, shard.getParam());
      std::vector<std::string> tied =
          refsToPaths(model, shard->getAttrOfType<ArrayAttr>("tied"));
      std::vector<fb::Offset<fb::String>> tiedStrings;
      for (const std::string &path : tied)
        tiedStrings.push_back(fbb.CreateString(path));
      sharded.push_back(schema::CreateShardedParamDirect(
          fbb, getDottedPath(param).c_str(), shard.getPaddedDim0(),
          &tiedStrings));
    }
    FailureOr<schema::DType> compute = toDType(unit.getComputeDtype(), unit);
    FailureOr<schema::DType> master = toDType(unit.getMasterDtype(), unit);
    FailureOr<schema::DType> reduce = toDType(unit.getReduceDtype(), unit);
    FailureOr<schema::DType> optim = toDType(unit.getOptimDtype(), unit);
    if (failed(compute) || failed(master) || failed(reduce) || failed(optim))
      return failure();
    units.push_back(schema::CreateFsdpUnitDirect(
        fbb, unit.getSymName().str().c_str(), unit.getPath().str().c_str(),
        grid.c_str(), &sharded, *compute, *master, *reduce, *optim,
        unit.getReshardAfterForward(), unit.getPrefetch(),
        unit.getGradSync() == GradSync::LastMicroBatch));
  }

  fb::Offset<schema::Prediction> prediction;
  if (auto peak =
          model->getAttrOfType<IntegerAttr>("parc.predicted_peak_bytes")) {
    auto phase = model->getAttrOfType<StringAttr>("parc.predicted_peak_phase");
    auto fits = model->getAttrOfType<BoolAttr>("parc.predicted_fits");
    auto hardware = model->getAttrOfType<StringAttr>("parc.predicted_hardware");
    auto seq = model->getAttrOfType<IntegerAttr>("parc.predicted_seq_len");
    auto mbs = model->getAttrOfType<IntegerAttr>("parc.predicted_micro_batch");
    auto stagePeaks = model->getAttrOfType<DenseI64ArrayAttr>(
        "parc.predicted_stage_peak_bytes");
    std::vector<int64_t> stagePeakBytes;
    if (stagePeaks)
      stagePeakBytes.assign(stagePeaks.asArrayRef().begin(),
                            stagePeaks.asArrayRef().end());
    prediction = schema::CreatePredictionDirect(
        fbb, hardware ? hardware.getValue().str().c_str() : nullptr,
        seq ? seq.getInt() : 0, mbs ? mbs.getInt() : 0, peak.getInt(),
        phase ? phase.getValue().str().c_str() : nullptr,
        fits && fits.getValue(), stagePeaks ? &stagePeakBytes : nullptr);
  }

  auto forwards = exportForwards(model, fbb);
  if (failed(forwards))
    return failure();
  auto programs = exportPrograms(model, fbb);
  if (failed(programs))
    return failure();
  auto parallelism = exportParallelism(model, fbb);
  auto plan = schema::CreatePlanDirect(
      fbb, ::parc::plan::kFormatVersion, model.getSymName().str().c_str(),
      model.getClassName().str().c_str(), &modules, &stacks, &params, &ties,
      &grids, &units, prediction, &*forwards, &*programs, parallelism);
  schema::FinishPlanBuffer(fbb, plan);
  os.write(reinterpret_cast<const char *>(fbb.GetBufferPointer()),
           fbb.GetSize());
  return success();
}

//===----------------------------------------------------------------------===//
// Reading back
//===----------------------------------------------------------------------===//

namespace {

/// Splits "a.b.c" into ("a.b", "c").
std::pair<StringRef, StringRef> splitPath(StringRef path) {
  size_t dot = path.rfind('.');
  if (dot == StringRef::npos)
    return {"", path};
  return {path.take_front(dot), path.drop_front(dot + 1)};
}

Block *bodyOf(Operation *op) {
  if (auto model = dyn_cast<ModelOp>(op))
    return model.getBody();
  return cast<NNModuleOp>(op).getBody();
}

/// Restores the attributes --apply-tp and --apply-pp left on the model that
/// plan.bin keeps (the sizes come back with the grids).
LogicalResult importParallelism(const schema::Parallelism &parallelism,
                                ModelOp model) {
  Builder b(model.getContext());
  int64_t tpSize = 1;
  if (parallelism.axes() && parallelism.sizes())
    for (auto [axis, size] :
         llvm::zip(*parallelism.axes(), *parallelism.sizes()))
      if (str(axis) == kTpGridName)
        tpSize = size;
  if (tpSize > 1) {
    model->setAttr(kTpSizeAttrName, b.getI64IntegerAttr(tpSize));
    model->setAttr(kTpSequenceParallelAttrName,
                   b.getBoolAttr(parallelism.sequence_parallel()));
    model->setAttr(kTpLossParallelAttrName,
                   b.getBoolAttr(parallelism.loss_parallel()));
  }
  if (!parallelism.pp_schedule() || !parallelism.pp_schedule()->size())
    return success();
  SmallVector<Attribute> stages;
  if (parallelism.pp_steps())
    for (const schema::PipelineStage *stage : *parallelism.pp_steps()) {
      SmallVector<PipelineStep> steps;
      if (stage->steps())
        for (const fb::String *text : *stage->steps()) {
          std::optional<PipelineStep> step = parsePipelineStep(str(text));
          if (!step)
            return emitError(model->getLoc())
                   << "plan.bin pipeline stage " << stage->stage()
                   << " has step '" << str(text)
                   << "', not F<micro-batch> or B<micro-batch> with an "
                      "optional .c<chunk>";
          steps.push_back(*step);
        }
      auto attr = PipelineStepsAttr::getChecked(
          [&] { return emitError(model->getLoc()); }, b.getContext(),
          int64_t(stage->stage()), ArrayRef<PipelineStep>(steps));
      if (!attr)
        return failure();
      stages.push_back(attr);
    }
  FailureOr<PpSchedule> schedule =
      readEnumName<PpSchedule, getMaxEnumValForPpSchedule()>(
          str(parallelism.pp_schedule()), [&] {
            return emitError(model->getLoc())
                   << "plan.bin has pipeline schedule";
          });
  if (failed(schedule))
    return failure();
  auto plan = PipelinePlanAttr::getChecked(
      [&] { return emitError(model->getLoc()); }, b.getContext(),
      int64_t(stages.size()), *schedule, int64_t(parallelism.pp_chunks()),
      int64_t(parallelism.microbatches()), DenseI64ArrayAttr(),
      DenseF64ArrayAttr(), DenseI64ArrayAttr(), FloatAttr());
  if (!plan)
    return failure();
  model->setAttr(kPpPlanAttrName, plan);
  model->setAttr(kPpScheduleAttrName, b.getArrayAttr(stages));
  return success();
}

/// Rebuilds the model's tree, parameters and FSDP plan from plan.bin's
/// tables, in the order the tables refer to each other: modules before
/// their parameters, parameters before the ties and units that name them.
/// Errors are emitted at the file.
class PlanReader {
public:
  PlanReader(const schema::Plan &plan, ModelOp model, Location fileLoc)
      : plan(plan), model(model), fileLoc(fileLoc), b(model.getContext()) {
    byPath[""] = model;
  }

  /// Every module and parameter by its dotted path ("" is the model).
  llvm::StringMap<Operation *> byPath;

  LogicalResult readModules();
  LogicalResult readStacks();
  LogicalResult readParams();
  LogicalResult readTies();
  LogicalResult readGrids();
  LogicalResult readFsdpUnits();
  void readPrediction();

private:
  Operation *parentOf(StringRef path, StringRef what);
  SymbolRefAttr refTo(StringRef path);

  const schema::Plan &plan;
  ModelOp model;
  Location fileLoc;
  OpBuilder b;
};

Operation *PlanReader::parentOf(StringRef path, StringRef what) {
  Operation *parent = byPath.lookup(splitPath(path).first);
  if (!parent)
    emitError(fileLoc) << "plan.bin lists " << what << " '" << path
                       << "' before its parent module";
  return parent;
}

SymbolRefAttr PlanReader::refTo(StringRef path) {
  Operation *op = byPath.lookup(path);
  if (!op || !isa<ParamOp>(op)) {
    emitError(fileLoc) << "plan.bin refers to unknown parameter '" << path
                       << "'";
    return nullptr;
  }
  if (SymbolRefAttr ref = getRelativeRef(model, op))
    return ref;
  emitError(fileLoc) << "plan.bin refers to parameter '" << path
                     << "', which has no symbol path from the model";
  return nullptr;
}

LogicalResult PlanReader::readModules() {
  if (!plan.modules())
    return success();
  const schema::Parallelism *parallelism = plan.parallelism();
  bool isPipelined = parallelism && parallelism->pp_schedule() &&
                     parallelism->pp_schedule()->size();
  int64_t chunks = parallelism ? parallelism->pp_chunks() : 1;
  for (const schema::Module *entry : *plan.modules()) {
    StringRef path = str(entry->path());
    Operation *parent = parentOf(path, "module");
    if (!parent)
      return failure();
    b.setInsertionPointToEnd(bodyOf(parent));
    auto module = NNModuleOp::create(b, fileLoc, splitPath(path).second,
                                     str(entry->class_name()),
                                     static_cast<ModuleKind>(entry->kind()));
    if (entry->stack()) {
      module->setAttr(kStackAttrName, b.getStringAttr(str(entry->stack())));
      module->setAttr(kLayerIndexAttrName,
                      b.getI64IntegerAttr(entry->layer_index()));
    }
    if (entry->remat()) {
      FailureOr<RematKind> remat =
          readEnumName<RematKind, getMaxEnumValForRematKind()>(
              str(entry->remat()), [&] {
                return emitError(fileLoc)
                       << "plan.bin module '" << path << "' has remat";
              });
      if (failed(remat))
        return failure();
      module->setAttr(kRematAttrName,
                      RematKindAttr::get(b.getContext(), *remat));
    }
    if (entry->stack() && isPipelined) {
      module->setAttr(kPpStageAttrName, b.getI64IntegerAttr(entry->pp_stage()));
      if (chunks > 1)
        module->setAttr(kPpChunkAttrName,
                        b.getI64IntegerAttr(entry->pp_chunk()));
    }
    byPath[path] = module;
  }
  return success();
}

LogicalResult PlanReader::readStacks() {
  if (!plan.stacks())
    return success();
  SmallVector<Attribute> stacks;
  for (const schema::Stack *stack : *plan.stacks()) {
    auto attr = LayerStackAttr::getChecked(
        [&] { return emitError(model->getLoc()) << "plan.bin: "; },
        b.getContext(), str(stack->name()), str(stack->path()),
        int64_t(stack->layers()));
    if (!attr)
      return failure();
    stacks.push_back(attr);
  }
  model->setAttr(kStacksAttrName, b.getArrayAttr(stacks));
  return success();
}

LogicalResult PlanReader::readParams() {
  if (!plan.params())
    return success();
  for (const schema::Param *entry : *plan.params()) {
    StringRef path = str(entry->path());
    Operation *parent = parentOf(path, "parameter");
    if (!parent)
      return failure();
    b.setInsertionPointToEnd(bodyOf(parent));
    SmallVector<int64_t> shape;
    if (entry->shape())
      shape.assign(entry->shape()->begin(), entry->shape()->end());
    auto param = ParamOp::create(
        b, fileLoc, splitPath(path).second,
        RankedTensorType::get(shape, fromDType(entry->dtype(), b)));
    param->setAttr("parc.init", b.getStringAttr(str(entry->init())));
    if (entry->frozen())
      param->setAttr("parc.frozen", b.getUnitAttr());
    if (entry->tp() && entry->tp()->size()) {
      FailureOr<TpRole> role =
          readEnumName<TpRole, getMaxEnumValForTpRole()>(str(entry->tp()), [&] {
            return emitError(fileLoc)
                   << "plan.bin parameter '" << path << "' has TP role";
          });
      if (failed(role))
        return failure();
      param->setAttr(kTpParamAttrName, TpRoleAttr::get(b.getContext(), *role));
    }
    if (entry->tp_padded_dim0())
      param->setAttr(kTpPaddedDim0AttrName,
                     b.getI64IntegerAttr(entry->tp_padded_dim0()));
    byPath[path] = param;
  }
  return success();
}

LogicalResult PlanReader::readTies() {
  if (!plan.ties())
    return success();
  b.setInsertionPointToEnd(model.getBody());
  for (const schema::Tie *tie : *plan.ties()) {
    if (!tie->params() || tie->params()->size() < 2)
      return emitError(fileLoc) << "plan.bin: a tie group names "
                                << (tie->params() ? tie->params()->size() : 0)
                                << " parameters; a tie needs at least 2";
    SmallVector<Attribute> refs;
    for (const fb::String *path : *tie->params()) {
      SymbolRefAttr ref = refTo(str(path));
      if (!ref)
        return failure();
      refs.push_back(ref);
    }
    TieOp::create(b, fileLoc, b.getArrayAttr(refs));
  }
  return success();
}

LogicalResult PlanReader::readGrids() {
  if (!plan.grids())
    return success();
  b.setInsertionPointToEnd(model.getBody());
  for (const schema::Grid *grid : *plan.grids()) {
    if (!grid->shape() || !grid->shape()->size())
      return emitError(fileLoc)
             << "plan.bin: grid '" << str(grid->name()) << "' has no shape";
    SmallVector<int64_t> shape(grid->shape()->begin(), grid->shape()->end());
    shard::GridOp::create(b, fileLoc, str(grid->name()), shape);
  }
  return success();
}

LogicalResult PlanReader::readFsdpUnits() {
  if (!plan.fsdp_units())
    return success();
  for (const schema::FsdpUnit *entry : *plan.fsdp_units()) {
    b.setInsertionPointToEnd(model.getBody());
    auto unit = FsdpUnitOp::create(
        b, fileLoc, b.getStringAttr(str(entry->name())),
        b.getStringAttr(str(entry->path())),
        TypeAttr::get(fromDType(entry->compute_dtype(), b)),
        TypeAttr::get(fromDType(entry->master_dtype(), b)),
        TypeAttr::get(fromDType(entry->reduce_dtype(), b)),
        TypeAttr::get(fromDType(entry->optim_dtype(), b)),
        b.getBoolAttr(entry->reshard_after_forward()),
        b.getI64IntegerAttr(entry->prefetch()),
        GradSyncAttr::get(b.getContext(), entry->defer_grad_sync()
                                              ? GradSync::LastMicroBatch
                                              : GradSync::EveryMicroBatch));
    OpBuilder body =
        OpBuilder::atBlockEnd(&unit.getBodyRegion().emplaceBlock());
    auto sharding = shard::ShardingOp::create(
        body, fileLoc, str(entry->grid()),
        ArrayRef<shard::GridAxesAttr>{
            DenseI16ArrayAttr::get(b.getContext(), {0})});
    if (!entry->params())
      continue;
    for (const schema::ShardedParam *shardEntry : *entry->params()) {
      SymbolRefAttr ref = refTo(str(shardEntry->path()));
      if (!ref)
        return failure();
      auto shardOp = ShardParamOp::create(
          body, fileLoc, ref, sharding,
          body.getI64IntegerAttr(shardEntry->padded_dim0()));
      if (!shardEntry->tied() || !shardEntry->tied()->size())
        continue;
      SmallVector<Attribute> tied;
      for (const fb::String *path : *shardEntry->tied()) {
        SymbolRefAttr alias = refTo(str(path));
        if (!alias)
          return failure();
        tied.push_back(alias);
      }
      shardOp->setAttr("tied", body.getArrayAttr(tied));
    }
  }
  return success();
}

void PlanReader::readPrediction() {
  const schema::Prediction *prediction = plan.prediction();
  if (!prediction)
    return;
  model->setAttr("parc.predicted_peak_bytes",
                 b.getI64IntegerAttr(prediction->peak_bytes()));
  model->setAttr("parc.predicted_peak_phase",
                 b.getStringAttr(str(prediction->peak_phase())));
  model->setAttr("parc.predicted_fits", b.getBoolAttr(prediction->fits()));
  if (prediction->hardware())
    model->setAttr("parc.predicted_hardware",
                   b.getStringAttr(str(prediction->hardware())));
  model->setAttr("parc.predicted_seq_len",
                 b.getI64IntegerAttr(prediction->seq_len()));
  model->setAttr("parc.predicted_micro_batch",
                 b.getI64IntegerAttr(prediction->micro_batch_size()));
  if (const auto *peaks = prediction->stage_peak_bytes())
    model->setAttr("parc.predicted_stage_peak_bytes",
                   b.getDenseI64ArrayAttr(
                       SmallVector<int64_t>(peaks->begin(), peaks->end())));
}

} // namespace

OwningOpRef<mlir::ModuleOp> mlir::parc::importPlan(StringRef buffer,
                                                   StringRef filename,
                                                   MLIRContext *context) {
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  std::string error;
  const schema::Plan *plan =
      ::parc::plan::verifyPlan(buffer.data(), buffer.size(), error);
  if (!plan) {
    emitError(fileLoc) << error;
    return nullptr;
  }
  // parc-run's semantic checks of the rank layout and the programs (indices,
  // buffers, ranks, sends matching receives), before anything is built from
  // them: one verifier for both readers of plan.bin.
  if (plan->programs() && plan->programs()->size()) {
    ::parc::runtime::RankLayout layout;
    if (!::parc::runtime::readRankLayout(*plan, layout, error) ||
        !::parc::runtime::verifyPrograms(*plan, layout, error)) {
      emitError(fileLoc) << "plan.bin: " << error;
      return nullptr;
    }
  }
  context->loadDialect<ParcDialect, func::FuncDialect>();
  context->loadDialect<shard::ShardDialect>();
  OpBuilder b(context);
  OwningOpRef<mlir::ModuleOp> top = mlir::ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(top->getBody());
  auto model = ModelOp::create(b, fileLoc, str(plan->model_name()),
                               str(plan->model_class()));
  if (const schema::Parallelism *parallelism = plan->parallelism();
      parallelism && failed(importParallelism(*parallelism, model)))
    return nullptr;

  PlanReader reader(*plan, model, fileLoc);
  if (failed(reader.readModules()) || failed(reader.readStacks()) ||
      failed(reader.readParams()) || failed(reader.readTies()) ||
      failed(reader.readGrids()) || failed(reader.readFsdpUnits()))
    return nullptr;
  reader.readPrediction();
  if (failed(importForwards(*plan, reader.byPath, fileLoc)) ||
      failed(importPrograms(*plan, model, fileLoc)) || failed(verify(*top)))
    return nullptr;
  return top;
}

void mlir::parc::registerPlanTranslations() {
  TranslateFromMLIRRegistration exportRegistration(
      "export-plan", "write a planned parc.model as plan.bin",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto models = cast<mlir::ModuleOp>(op).getOps<ModelOp>();
        if (models.empty())
          return op->emitError("export-plan needs a parc.model");
        return exportPlan(*models.begin(), os);
      },
      [](DialectRegistry &registry) {
        registry.insert<ParcDialect, func::FuncDialect, shard::ShardDialect>();
      });
  TranslateToMLIRRegistration importRegistration(
      "import-plan", "read plan.bin back as a parc.model",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        return OwningOpRef<Operation *>(
            importPlan(buffer->getBuffer(), buffer->getBufferIdentifier(),
                       context)
                .release());
      },
      [](DialectRegistry &registry) {
        registry.insert<ParcDialect, func::FuncDialect, shard::ShardDialect>();
      });
}
