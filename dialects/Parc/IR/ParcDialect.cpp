//===- ParcDialect.cpp - parc dialect registration ------------------------===//

#include "Parc/IR/ParcDialect.h"
#include "Parc/IR/ParcOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <optional>
#include <tuple>

using namespace mlir;
using namespace mlir::parc;

#include "Parc/IR/ParcDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Parc/IR/ParcAttrs.cpp.inc"

void ParcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Parc/IR/ParcOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Parc/IR/ParcAttrs.cpp.inc"
      >();
}

LogicalResult StepPeakAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t working, int64_t logits,
                                   int64_t saved, int64_t gradients,
                                   DenseI64ArrayAttr blocks) {
  // A part may be negative (freed before the highest point), the whole not.
  int64_t total = 0, positive = 0;
  for (int64_t bytes : {working, logits, saved, gradients})
    if (llvm::AddOverflow(total, bytes, total) ||
        llvm::AddOverflow(positive, std::max<int64_t>(bytes, 0), positive))
      return emitError() << "#parc.peak overflows 64 bits";
  if (total < 0)
    return emitError() << "#parc.peak adds " << total
                       << " bytes: a step's highest point is never below "
                          "what was live before it";
  if (!blocks)
    return success();
  int64_t sum = 0;
  for (int64_t block : blocks.asArrayRef()) {
    if (block <= 0)
      return emitError() << "#parc.peak block of " << block
                         << " bytes: every block is a tensor of at least one "
                            "byte";
    if (llvm::AddOverflow(sum, block, sum))
      return emitError() << "#parc.peak blocks overflow 64 bits";
  }
  if (sum != positive)
    return emitError() << "#parc.peak blocks add up to " << sum
                       << " bytes, its positive parts to " << positive;
  return success();
}

SmallVector<int64_t> StepPeakAttr::getTensors() const {
  if (DenseI64ArrayAttr blocks = getBlocks())
    return SmallVector<int64_t>(blocks.asArrayRef());
  SmallVector<int64_t> tensors;
  for (int64_t bytes : {getWorking(), getLogits(), getSaved(), getGradients()})
    if (bytes > 0)
      tensors.push_back(bytes);
  return tensors;
}

//===----------------------------------------------------------------------===//
// Plan attributes
//===----------------------------------------------------------------------===//

std::optional<PipelineStep> mlir::parc::parsePipelineStep(StringRef text) {
  bool forward = text.consume_front("F");
  if (!forward && !text.consume_front("B"))
    return std::nullopt;
  auto [micro, chunk] = text.split(".c");
  int64_t m = 0, c = 0;
  if (micro.getAsInteger(10, m) ||
      (text.contains(".c") && chunk.getAsInteger(10, c)) || m < 0 || c < 0)
    return std::nullopt;
  return PipelineStep{forward, m, c};
}

std::string PipelineStep::str() const {
  std::string text = (forward ? "F" : "B") + std::to_string(microBatch);
  if (chunk)
    text += ".c" + std::to_string(chunk);
  return text;
}

FailureOr<PipelineStep>
mlir::FieldParser<PipelineStep>::parse(AsmParser &parser) {
  std::string text;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&text))
    return failure();
  if (std::optional<PipelineStep> step = parsePipelineStep(text))
    return *step;
  return parser.emitError(loc)
         << "expected a pipeline step, F<micro-batch> or B<micro-batch> with "
            "an optional .c<chunk>, got '"
         << text << "'";
}

FailureOr<PpSchedule> mlir::parc::parsePpSchedule(AsmParser &parser) {
  std::string name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseString(&name))
    return failure();
  std::optional<PpSchedule> schedule = symbolizePpSchedule(name);
  if (!schedule)
    return parser.emitError(loc)
           << "unknown pipeline schedule \"" << name
           << "\" (expected none, gpipe, 1f1b or interleaved-1f1b)";
  return *schedule;
}

LogicalResult
PipelinePlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t stages, PpSchedule schedule, int64_t chunks,
                         int64_t microbatches, DenseI64ArrayAttr stageLayers,
                         DenseF64ArrayAttr stageCosts,
                         DenseI64ArrayAttr inFlight, FloatAttr bubble) {
  for (auto [name, value, hi] :
       {std::tuple{"stages", stages, kMaxStages},
        std::tuple{"chunks", chunks, kMaxChunks},
        std::tuple{"microbatches", microbatches, kMaxMicrobatches}})
    if (value < 1 || value > hi)
      return emitError() << "#parc.pp " << name << " must be in [1, " << hi
                         << "], got " << value;
  if (chunks > 1 && schedule != PpSchedule::Interleaved1F1B)
    return emitError() << "#parc.pp has " << chunks
                       << " chunks, which only interleaved-1f1b runs";
  if (stageLayers && int64_t(stageLayers.size()) != stages * chunks)
    return emitError() << "#parc.pp stage_layers has " << stageLayers.size()
                       << " entries for " << stages * chunks
                       << " virtual stages";
  if (stageCosts && int64_t(stageCosts.size()) != stages * chunks)
    return emitError() << "#parc.pp stage_costs has " << stageCosts.size()
                       << " entries for " << stages * chunks
                       << " virtual stages";
  if (inFlight && int64_t(inFlight.size()) != stages)
    return emitError() << "#parc.pp in_flight has " << inFlight.size()
                       << " entries for " << stages << " stages";
  if (bubble &&
      !(bubble.getValueAsDouble() >= 0 && bubble.getValueAsDouble() <= 1))
    return emitError() << "#parc.pp bubble must be in [0, 1], got "
                       << bubble.getValueAsDouble();
  return success();
}

LogicalResult
LayerStackAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       StringRef name, StringRef path, int64_t layers) {
  if (name.empty())
    return emitError() << "#parc.stack needs a name";
  if (layers < 0 || layers > kMaxLayers)
    return emitError() << "#parc.stack '" << name << "' has " << layers
                       << " layers, not in [0, " << kMaxLayers << "]";
  return success();
}

LogicalResult
PpTiedCopiesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         ArrayAttr params, ArrayRef<int64_t> stages) {
  if (params.size() < 2 || !llvm::all_of(params, llvm::IsaPred<SymbolRefAttr>))
    return emitError() << "#parc.pp_tied needs at least two parameter "
                          "references, got "
                       << params;
  if (stages.size() < 2)
    return emitError() << "#parc.pp_tied needs at least two stages";
  for (auto [index, stage] : llvm::enumerate(stages))
    if (stage < 0 || stage >= PipelinePlanAttr::kMaxStages ||
        (index > 0 && stage <= stages[index - 1]))
      return emitError() << "#parc.pp_tied stages must ascend within [0, "
                         << PipelinePlanAttr::kMaxStages << ")";
  return success();
}

LogicalResult
PipelineStepsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t stage, ArrayRef<PipelineStep> steps) {
  if (stage < 0 || stage >= PipelinePlanAttr::kMaxStages)
    return emitError() << "#parc.pp_steps stage must be in [0, "
                       << PipelinePlanAttr::kMaxStages << "), got " << stage;
  for (const PipelineStep &step : steps)
    if (step.microBatch < 0 || step.chunk < 0)
      return emitError() << "#parc.pp_steps has a step of a negative "
                            "micro-batch or chunk";
  return success();
}

namespace {
/// Every stage runs each (micro-batch, chunk) forward once and its backward
/// once after it; the passes and parc-run rely on nothing else.
LogicalResult verifyPpSchedule(Operation *op, Attribute value) {
  auto plan = op->getAttrOfType<PipelinePlanAttr>(kPpPlanAttrName);
  if (!plan)
    return op->emitOpError()
           << "has '" << kPpScheduleAttrName << "' without a #parc.pp '"
           << kPpPlanAttrName << "'";
  int64_t stages = plan.getStages(), v = plan.getChunks(),
          m = plan.getMicrobatches();
  auto entries = dyn_cast<ArrayAttr>(value);
  if (!entries)
    return op->emitOpError()
           << "'" << kPpScheduleAttrName << "' must be an array";
  SmallVector<SmallVector<PipelineStep>> steps(stages);
  for (Attribute entry : entries) {
    auto stage = dyn_cast<PipelineStepsAttr>(entry);
    if (!stage)
      return op->emitOpError()
             << "'" << kPpScheduleAttrName
             << "' entries must be #parc.pp_steps, got " << entry;
    if (stage.getStage() >= stages)
      return op->emitOpError()
             << "'" << kPpScheduleAttrName << "' has stage " << stage.getStage()
             << " of a " << stages << "-stage '" << kPpPlanAttrName << "'";
    llvm::append_range(steps[stage.getStage()], stage.getSteps());
  }
  for (int64_t stage = 0; stage < stages; ++stage) {
    auto prefix = [&]() {
      return op->emitOpError()
             << "'" << kPpScheduleAttrName << "' of stage " << stage << " ";
    };
    SmallVector<int8_t> state(m * v, 0);
    for (const PipelineStep &step : steps[stage]) {
      if (step.microBatch >= m || step.chunk >= v)
        return prefix() << "runs " << step.str() << ", outside the " << m
                        << " micro-batches x " << v << " chunks of '"
                        << kPpPlanAttrName << "'";
      int8_t &seen = state[step.microBatch * v + step.chunk];
      if (step.forward ? seen != 0 : seen != 1)
        return prefix() << "runs " << step.str()
                        << (step.forward || seen == 2 ? " twice"
                                                      : " before its forward");
      seen += 1;
    }
    for (int64_t i = 0; i < m * v; ++i)
      if (state[i] != 2)
        return prefix() << "never runs the "
                        << (state[i] == 0 ? "forward" : "backward")
                        << " of micro-batch " << i / v
                        << (v > 1 ? " chunk " + std::to_string(i % v) : "");
  }
  return success();
}

LogicalResult verifyIntInRange(Operation *op, NamedAttribute attr, int64_t lo,
                               int64_t hi) {
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || value.getInt() < lo || value.getInt() > hi)
    return op->emitOpError()
           << "'" << attr.getName().getValue() << "' must be an integer in ["
           << lo << ", " << hi << "]";
  return success();
}
} // namespace

LogicalResult ParcDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kPpPlanAttrName) {
    if (!isa<PipelinePlanAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' must be a #parc.pp<...> plan, got "
             << attr.getValue();
    if (!op->hasAttr(kPpScheduleAttrName))
      return op->emitOpError() << "has '" << kPpPlanAttrName << "' but no '"
                               << kPpScheduleAttrName << "'";
    return success();
  }
  if (name == kPpScheduleAttrName)
    return verifyPpSchedule(op, attr.getValue());
  if (name == kPpStageAttrName)
    return verifyIntInRange(op, attr, 0, PipelinePlanAttr::kMaxStages - 1);
  if (name == kPpChunkAttrName)
    return verifyIntInRange(op, attr, 0, PipelinePlanAttr::kMaxChunks - 1);
  if (name == kTpSizeAttrName)
    return verifyIntInRange(op, attr, 1, PipelinePlanAttr::kMaxStages);
  if (name == kTpPaddedDim0AttrName)
    return verifyIntInRange(op, attr, 1, ParamOp::kMaxDim);
  if (name == kTpParamAttrName && !isa<TpRoleAttr>(attr.getValue()))
    return op->emitOpError()
           << "'" << name << "' must be a #parc.tp<...> role, got "
           << attr.getValue();
  if (name == kTpShardsAttrName) {
    auto shards = dyn_cast<TpShardsAttr>(attr.getValue());
    if (!shards)
      return op->emitOpError()
             << "'" << name << "' must be #parc.tp_shards<...>, got "
             << attr.getValue();
    auto forward = dyn_cast<func::FuncOp>(op);
    size_t defined = forward ? forward.getNumArguments() : op->getNumResults();
    if (shards.getValues().size() != defined)
      return op->emitOpError()
             << "'" << name << "' has " << shards.getValues().size()
             << " value shards for " << defined
             << (forward ? " arguments" : " results");
    for (int32_t operand : shards.getGather())
      if (operand >= int32_t(op->getNumOperands()))
        return op->emitOpError() << "'" << name << "' gathers operand "
                                 << operand << " of " << op->getNumOperands();
    return success();
  }
  if (name == kPpTiedCopiesAttrName) {
    auto copies = dyn_cast<ArrayAttr>(attr.getValue());
    if (!copies || !llvm::all_of(copies, llvm::IsaPred<PpTiedCopiesAttr>))
      return op->emitOpError()
             << "'" << name << "' must be an array of #parc.pp_tied, got "
             << attr.getValue();
    auto plan = op->getAttrOfType<PipelinePlanAttr>(kPpPlanAttrName);
    if (!plan)
      return op->emitOpError()
             << "has '" << name << "' but no '" << kPpPlanAttrName << "'";
    for (auto copy : copies.getAsRange<PpTiedCopiesAttr>())
      if (copy.getStages().back() >= plan.getStages())
        return op->emitOpError()
               << "'" << name << "' keeps a copy on stage "
               << copy.getStages().back() << " of a " << plan.getStages()
               << "-stage '" << kPpPlanAttrName << "'";
    return success();
  }
  if (name == kStacksAttrName) {
    auto stacks = dyn_cast<ArrayAttr>(attr.getValue());
    if (!stacks || !llvm::all_of(stacks, llvm::IsaPred<LayerStackAttr>))
      return op->emitOpError()
             << "'" << name << "' must be an array of #parc.stack, got "
             << attr.getValue();
    llvm::StringSet<> names;
    for (auto stack : stacks.getAsRange<LayerStackAttr>())
      if (!names.insert(stack.getName()).second)
        return op->emitOpError() << "'" << name << "' names stack '"
                                 << stack.getName() << "' twice";
    return success();
  }
  if (name == kRematAttrName && !isa<RematKindAttr>(attr.getValue()))
    return op->emitOpError()
           << "'" << name << "' must be a #parc.remat<...> decision, got "
           << attr.getValue();
  if (name == kRematSaveAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' must be a unit attribute, got "
             << attr.getValue();
    if (!isa<AutogradOpInterface>(op) || op->getNumResults() == 0)
      return op->emitOpError()
             << "'" << name
             << "' marks an op whose outputs remat keeps; this op has no "
                "autograd outputs to keep";
    if (op->hasAttr("parc.recompute"))
      return op->emitOpError()
             << "is marked both 'parc.recompute' and '" << name << "'";
  }
  return success();
}

std::optional<TpRole> mlir::parc::getTpRole(Operation *param) {
  auto role = param->getAttrOfType<TpRoleAttr>(kTpParamAttrName);
  return role ? std::optional(role.getValue()) : std::nullopt;
}

int64_t mlir::parc::getElementBytes(Type type) {
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

int64_t mlir::parc::getTensorBytes(ShapedType type) {
  return type.getNumElements() * getElementBytes(type.getElementType());
}

TpShardsAttr mlir::parc::getTpShards(Operation *op) {
  return op->getAttrOfType<TpShardsAttr>(kTpShardsAttrName);
}

LogicalResult TpShardsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<TpShard> values,
                                   ArrayRef<TpComm> comms,
                                   ArrayRef<int32_t> gather) {
  for (auto [i, comm] : llvm::enumerate(comms))
    if (llvm::is_contained(comms.take_front(i), comm))
      return emitError() << "#parc.tp_shards lists " << stringifyTpComm(comm)
                         << " twice";
  for (auto [i, operand] : llvm::enumerate(gather))
    if (operand < 0 || llvm::is_contained(gather.take_front(i), operand))
      return emitError() << "#parc.tp_shards gathers operand " << operand
                         << (operand < 0 ? ", which is negative" : " twice");
  return success();
}

std::optional<RematKind> mlir::parc::getRemat(Operation *layer) {
  auto remat = layer->getAttrOfType<RematKindAttr>(kRematAttrName);
  return remat ? std::optional(remat.getValue()) : std::nullopt;
}
