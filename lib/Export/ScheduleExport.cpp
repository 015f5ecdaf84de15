//===- ScheduleExport.cpp - rank-kind programs in plan.bin ----------------===//
//
// Each parc.program becomes a Program of typed Steps: the runtime reads a
// step kind and its numbers, never MLIR syntax. Tensors a program defines are
// numbered in order, so the dataflow (which all-gather a free releases, which
// buffer a collective reads) survives the trip; reading back rebuilds the
// same ops, so export(import(plan.bin)) is byte-identical.
//
//===----------------------------------------------------------------------===//

#include "parc/Export/ScheduleExport.h"

#include "PlanFields.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <deque>

using namespace mlir;
using namespace mlir::parc;
namespace fb = flatbuffers;
namespace schema = ::parc::plan;

namespace {

std::optional<std::string> elementName(Type type) {
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isSignlessInteger())
    return "i" + std::to_string(type.getIntOrFloatBitWidth());
  return std::nullopt;
}

Type elementType(StringRef name, Builder &b) {
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "f16")
    return b.getF16Type();
  if (name == "f32")
    return b.getF32Type();
  if (name == "f64")
    return b.getF64Type();
  unsigned width;
  if (name.consume_front("i") && !name.getAsInteger(10, width) && width > 0)
    return b.getIntegerType(width);
  return {};
}

/// The fields of one Step, filled per op kind.
struct StepFields {
  schema::StepKind kind = schema::StepKind::Buffer;
  std::optional<StringRef> module, part, element, grid, remat;
  int64_t microBatch = -1, chunk = 0;
  int32_t operand = -1, result = -1;
  int64_t elements = 0, bytes = 0, peer = -1, params = 0;
  double maxNorm = 0;
  std::vector<int64_t> group;
  schema::BufferKind bufferKind = schema::BufferKind::ParamShard;
  schema::AllocKind allocKind = schema::AllocKind::Gradients;
  std::optional<schema::Peak> peak;
  std::vector<int64_t> peakBlocks;
};

class ProgramExporter {
public:
  explicit ProgramExporter(fb::FlatBufferBuilder &fbb) : fbb(fbb) {}

  FailureOr<fb::Offset<schema::Program>> run(ProgramOp program) {
    ids.clear();
    std::vector<fb::Offset<schema::Step>> steps;
    for (Operation &op : *program.getBody()) {
      StepFields fields;
      if (failed(describe(op, fields)))
        return failure();
      steps.push_back(write(fields));
    }
    std::vector<fb::Offset<schema::Coverage>> covers;
    for (NamedAttribute entry : program.getCovers()) {
      auto indices = cast<DenseI64ArrayAttr>(entry.getValue()).asArrayRef();
      std::vector<int64_t> list(indices.begin(), indices.end());
      covers.push_back(schema::CreateCoverageDirect(
          fbb, entry.getName().str().c_str(), &list));
    }
    return schema::CreateProgramDirect(fbb, program.getSymName().str().c_str(),
                                       program.getRanks(), &covers,
                                       program.getMicroBatches(), &steps,
                                       program.getBatch(), program.getSeq());
  }

private:
  /// Numbers a defined tensor and records its type.
  LogicalResult define(Operation &op, StepFields &fields) {
    Value value = op.getResult(0);
    auto type = cast<RankedTensorType>(value.getType());
    std::optional<std::string> name = elementName(type.getElementType());
    if (!name || type.getRank() != 1)
      return op.emitOpError() << "has a result plan.bin cannot hold: " << type;
    fields.result = ids.size();
    ids[value] = fields.result;
    fields.elements = type.getNumElements();
    fields.element = names.emplace_back(*name);
    fields.bytes = getTensorBytes(type);
    return success();
  }

  LogicalResult use(Operation &op, Value value, StepFields &fields) {
    auto it = ids.find(value);
    if (it == ids.end())
      return op.emitOpError() << "reads a tensor its program does not define";
    fields.operand = it->second;
    return success();
  }

  /// Collectives over one axis of a one-axis grid, as the lowering writes.
  template <typename CollectiveOp>
  LogicalResult collective(CollectiveOp op, schema::StepKind kind,
                           StepFields &fields) {
    if (op.getGridAxes().size() != 1 || op.getGridAxes()[0] != 0)
      return op.emitOpError() << "plan.bin holds collectives over axis 0 of "
                                 "a one-axis grid only";
    fields.kind = kind;
    fields.grid = op.getGrid();
    if (auto group =
            op->template getAttrOfType<DenseI64ArrayAttr>("parc.group"))
      fields.group.assign(group.asArrayRef().begin(), group.asArrayRef().end());
    if (failed(use(*op, op.getInput(), fields)))
      return failure();
    return define(*op, fields);
  }

  LogicalResult describe(Operation &op, StepFields &fields) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
        .Case([&](BufferOp buffer) {
          fields.kind = schema::StepKind::Buffer;
          fields.module = buffer.getOf();
          fields.bufferKind = static_cast<schema::BufferKind>(buffer.getKind());
          if (auto mb = buffer.getMicroBatch())
            fields.microBatch = *mb;
          return define(op, fields);
        })
        .Case([&](shard::AllGatherOp gather) {
          return collective(gather, schema::StepKind::AllGather, fields);
        })
        .Case([&](shard::ReduceScatterOp scatter) {
          return collective(scatter, schema::StepKind::ReduceScatter, fields);
        })
        .Case([&](shard::AllReduceOp reduce) {
          return collective(reduce, schema::StepKind::AllReduce, fields);
        })
        .Case([&](shard::SendOp send) -> LogicalResult {
          if (send.getDestination().size() != 1)
            return send.emitOpError() << "needs one destination index";
          fields.peer = send.getDestination()[0];
          return collective(send, schema::StepKind::Send, fields);
        })
        .Case([&](shard::RecvOp recv) -> LogicalResult {
          if (!recv.getSource() || recv.getSource()->size() != 1)
            return recv.emitOpError() << "needs one source index";
          fields.peer = (*recv.getSource())[0];
          return collective(recv, schema::StepKind::Recv, fields);
        })
        .Case([&](ForwardStepOp step) {
          computeStep(schema::StepKind::Forward, step, fields);
          return success();
        })
        .Case([&](BackwardStepOp step) {
          computeStep(schema::StepKind::Backward, step, fields);
          return success();
        })
        .Case([&](RecomputeStepOp step) {
          fields.kind = schema::StepKind::Recompute;
          fields.module = step.getModule();
          fields.microBatch = step.getMicroBatch();
          fields.chunk = step.getChunk();
          fields.remat = stringifyRematKind(step.getRemat());
          fields.bytes = step.getBytes();
          return success();
        })
        .Case([&](SaveOp save) {
          computeStep(schema::StepKind::Save, save, fields);
          return define(op, fields);
        })
        .Case([&](AllocOp alloc) {
          fields.kind = schema::StepKind::Alloc;
          fields.module = alloc.getOf();
          fields.allocKind = static_cast<schema::AllocKind>(alloc.getKind());
          if (auto mb = alloc.getMicroBatch())
            fields.microBatch = *mb;
          return define(op, fields);
        })
        .Case([&](FreeOp free) {
          fields.kind = schema::StepKind::Free;
          fields.bytes = getTensorBytes(
              cast<RankedTensorType>(free.getBuffer().getType()));
          return use(op, free.getBuffer(), fields);
        })
        .Case([&](WaitOp wait) {
          fields.kind = schema::StepKind::Wait;
          setPeak(wait.getPeakAttr(), fields);
          return use(op, wait.getCollective(), fields);
        })
        .Case([&](OptimizerStepOp step) {
          fields.kind = schema::StepKind::OptimizerStep;
          fields.params = step.getParams();
          return success();
        })
        .Case([&](ClipGradNormOp step) {
          fields.kind = schema::StepKind::ClipGradNorm;
          fields.maxNorm = step.getMaxNorm().convertToDouble();
          return success();
        })
        .Default([&](Operation *other) {
          return other->emitOpError() << "is no step plan.bin can hold";
        });
  }

  template <typename StepOp>
  void computeStep(schema::StepKind kind, StepOp step, StepFields &fields) {
    fields.kind = kind;
    fields.module = step.getModule();
    fields.part = step.getPart();
    fields.microBatch = step.getMicroBatch();
    fields.chunk = step.getChunk();
    if constexpr (!std::is_same_v<StepOp, SaveOp>)
      setPeak(step.getPeakAttr(), fields);
  }

  static void setPeak(StepPeakAttr peak, StepFields &fields) {
    if (!peak)
      return;
    fields.peak = schema::Peak(peak.getWorking(), peak.getLogits(),
                               peak.getSaved(), peak.getGradients());
    if (DenseI64ArrayAttr blocks = peak.getBlocks())
      fields.peakBlocks.assign(blocks.asArrayRef().begin(),
                               blocks.asArrayRef().end());
  }

  fb::Offset<fb::String> shared(std::optional<StringRef> text) {
    return text ? fbb.CreateSharedString(text->data(), text->size())
                : fb::Offset<fb::String>();
  }

  fb::Offset<schema::Step> write(const StepFields &f) {
    auto module = shared(f.module), part = shared(f.part),
         element = shared(f.element), grid = shared(f.grid),
         remat = shared(f.remat);
    auto vector = [&](const std::vector<int64_t> &values) {
      return values.empty() ? fb::Offset<fb::Vector<int64_t>>()
                            : fbb.CreateVector(values);
    };
    auto group = vector(f.group), blocks = vector(f.peakBlocks);
    return schema::CreateStep(
        fbb, f.kind, module, part, f.microBatch, f.chunk, f.operand, f.result,
        f.elements, element, f.bytes, grid, f.peer, group, f.bufferKind, remat,
        f.params, f.maxNorm, f.allocKind, f.peak ? &*f.peak : nullptr, blocks);
  }

  fb::FlatBufferBuilder &fbb;
  llvm::DenseMap<Value, int32_t> ids;
  /// Element names outlive the step they describe until written.
  std::deque<std::string> names;
};

} // namespace

FailureOr<std::vector<fb::Offset<schema::Program>>>
mlir::parc::exportPrograms(ModelOp model, fb::FlatBufferBuilder &fbb) {
  std::vector<fb::Offset<schema::Program>> programs;
  ProgramExporter exporter(fbb);
  for (ProgramOp program : model.getBody()->getOps<ProgramOp>()) {
    FailureOr<fb::Offset<schema::Program>> offset = exporter.run(program);
    if (failed(offset))
      return failure();
    programs.push_back(*offset);
  }
  return programs;
}

//===----------------------------------------------------------------------===//
// Reading back
//===----------------------------------------------------------------------===//

namespace {

class ProgramImporter {
public:
  ProgramImporter(ModelOp model, Location loc)
      : b(model.getContext()), model(model), loc(loc) {
    axes = DenseI16ArrayAttr::get(model.getContext(), {0});
    axisZero = b.getIndexAttr(0);
  }

  LogicalResult run(const schema::Program &entry) {
    SmallVector<NamedAttribute> covers;
    if (entry.covers())
      for (const schema::Coverage *coverage : *entry.covers()) {
        SmallVector<int64_t> indices;
        if (coverage->indices())
          indices.assign(coverage->indices()->begin(),
                         coverage->indices()->end());
        covers.push_back(b.getNamedAttr(str(coverage->grid()),
                                        b.getDenseI64ArrayAttr(indices)));
      }
    b.setInsertionPointToEnd(model.getBody());
    auto program = ProgramOp::create(
        b, loc, b.getStringAttr(str(entry.name())),
        b.getI64IntegerAttr(entry.ranks()), b.getDictionaryAttr(covers),
        b.getI64IntegerAttr(entry.micro_batches()),
        b.getI64IntegerAttr(entry.batch()), b.getI64IntegerAttr(entry.seq()));
    b.setInsertionPointToEnd(&program.getBodyRegion().emplaceBlock());
    name = str(entry.name());
    values.clear();
    if (entry.steps())
      for (auto [index, step] : llvm::enumerate(*entry.steps()))
        if (failed(build(*step, index)))
          return failure();
    return success();
  }

private:
  InFlightDiagnostic error(size_t index) {
    InFlightDiagnostic diag = mlir::emitError(loc);
    diag << "plan.bin program '" << name << "' step " << index << ": ";
    return diag;
  }

  FailureOr<Value> operand(const schema::Step &step, size_t index) {
    if (step.operand() < 0 || size_t(step.operand()) >= values.size())
      return error(index) << "reads tensor " << step.operand()
                          << ", which no earlier step defines";
    return values[step.operand()];
  }

  FailureOr<RankedTensorType> resultType(const schema::Step &step,
                                         size_t index) {
    Type element = elementType(str(step.element()), b);
    if (!element || step.elements() <= 0)
      return error(index) << "defines a tensor of " << step.elements() << " x '"
                          << str(step.element()) << "'";
    if (step.result() != int32_t(values.size()))
      return error(index) << "defines tensor " << step.result()
                          << " out of order (expected " << values.size() << ")";
    return RankedTensorType::get({step.elements()}, element);
  }

  IntegerAttr chunkAttr(const schema::Step &step) {
    return step.chunk() ? b.getI64IntegerAttr(step.chunk()) : IntegerAttr();
  }

  /// The step's #parc.peak (null: none); a negative total is refused.
  FailureOr<StepPeakAttr> peakAttr(const schema::Step &step, size_t index) {
    const schema::Peak *peak = step.peak();
    if (!peak)
      return StepPeakAttr();
    DenseI64ArrayAttr blocks;
    if (const auto *list = step.peak_blocks())
      blocks = b.getDenseI64ArrayAttr(
          SmallVector<int64_t>(list->begin(), list->end()));
    StepPeakAttr attr = StepPeakAttr::getChecked(
        [&] { return error(index); }, b.getContext(), peak->working(),
        peak->logits(), peak->saved(), peak->gradients(), blocks);
    if (!attr)
      return failure();
    return attr;
  }

  /// A buffer's or allocation's micro-batch (none: -1).
  IntegerAttr microBatchAttr(const schema::Step &step) {
    return step.micro_batch() >= 0 ? b.getI64IntegerAttr(step.micro_batch())
                                   : IntegerAttr();
  }

  StringAttr partAttr(const schema::Step &step) {
    return step.part() ? b.getStringAttr(str(step.part())) : StringAttr();
  }

  LogicalResult build(const schema::Step &step, size_t index) {
    using Kind = schema::StepKind;
    Kind kind = step.kind();
    // Enums read from a file: a value this build has no name for is refused
    // before an attribute is made from it.
    if (flatbuffers::IsOutRange(step.buffer_kind(), schema::BufferKind::MIN,
                                schema::BufferKind::MAX))
      return error(index) << "has unknown buffer kind "
                          << int(step.buffer_kind());
    if (flatbuffers::IsOutRange(step.alloc_kind(), schema::AllocKind::MIN,
                                schema::AllocKind::MAX))
      return error(index) << "has unknown alloc kind "
                          << int(step.alloc_kind());
    FlatSymbolRefAttr grid =
        FlatSymbolRefAttr::get(b.getContext(), str(step.grid()));
    auto reduction = shard::ReductionKindAttr::get(b.getContext(),
                                                   shard::ReductionKind::Sum);
    Operation *op = nullptr;
    switch (kind) {
    case Kind::Buffer: {
      FailureOr<RankedTensorType> type = resultType(step, index);
      if (failed(type))
        return failure();
      op = BufferOp::create(
          b, loc, *type,
          BufferKindAttr::get(b.getContext(),
                              static_cast<BufferKind>(step.buffer_kind())),
          b.getStringAttr(str(step.path())), microBatchAttr(step));
      break;
    }
    case Kind::AllGather:
    case Kind::ReduceScatter:
    case Kind::AllReduce:
    case Kind::Send:
    case Kind::Recv: {
      FailureOr<Value> input = operand(step, index);
      FailureOr<RankedTensorType> type = resultType(step, index);
      if (failed(input) || failed(type))
        return failure();
      auto peer = DenseI64ArrayAttr::get(b.getContext(), {step.peer()});
      if (kind == Kind::AllGather)
        op = shard::AllGatherOp::create(b, loc, *type, grid, axes, *input,
                                        axisZero);
      else if (kind == Kind::ReduceScatter)
        op = shard::ReduceScatterOp::create(b, loc, *type, grid, axes, *input,
                                            reduction, axisZero);
      else if (kind == Kind::AllReduce)
        op = shard::AllReduceOp::create(b, loc, *type, grid, axes, *input);
      else if (kind == Kind::Send)
        op = shard::SendOp::create(b, loc, *type, grid, axes, *input, peer,
                                   ValueRange());
      else
        op = shard::RecvOp::create(b, loc, *type, grid, axes, *input, peer,
                                   ValueRange());
      if (step.group() && step.group()->size()) {
        SmallVector<int64_t> group(step.group()->begin(), step.group()->end());
        op->setAttr("parc.group", b.getDenseI64ArrayAttr(group));
      }
      break;
    }
    case Kind::Forward:
    case Kind::Backward: {
      FailureOr<StepPeakAttr> peak = peakAttr(step, index);
      if (failed(peak))
        return failure();
      if (kind == Kind::Forward)
        ForwardStepOp::create(
            b, loc, b.getStringAttr(str(step.path())), partAttr(step),
            b.getI64IntegerAttr(step.micro_batch()), chunkAttr(step), *peak);
      else
        BackwardStepOp::create(
            b, loc, b.getStringAttr(str(step.path())), partAttr(step),
            b.getI64IntegerAttr(step.micro_batch()), chunkAttr(step), *peak);
      return success();
    }
    case Kind::Recompute: {
      FailureOr<RematKind> remat =
          readEnumName<RematKind, getMaxEnumValForRematKind()>(
              str(step.remat()), [&] { return error(index) << "has remat"; });
      if (failed(remat))
        return failure();
      RecomputeStepOp::create(b, loc, b.getStringAttr(str(step.path())),
                              b.getI64IntegerAttr(step.micro_batch()),
                              chunkAttr(step),
                              RematKindAttr::get(b.getContext(), *remat),
                              b.getI64IntegerAttr(step.bytes()));
      return success();
    }
    case Kind::Save: {
      FailureOr<RankedTensorType> type = resultType(step, index);
      if (failed(type))
        return failure();
      op = SaveOp::create(
          b, loc, *type, b.getStringAttr(str(step.path())), partAttr(step),
          b.getI64IntegerAttr(step.micro_batch()), chunkAttr(step));
      break;
    }
    case Kind::Free:
    case Kind::Wait: {
      FailureOr<Value> input = operand(step, index);
      FailureOr<StepPeakAttr> peak = peakAttr(step, index);
      if (failed(input) || failed(peak))
        return failure();
      if (kind == Kind::Free)
        FreeOp::create(b, loc, *input);
      else
        WaitOp::create(b, loc, *input, *peak);
      return success();
    }
    case Kind::Alloc: {
      FailureOr<RankedTensorType> type = resultType(step, index);
      if (failed(type))
        return failure();
      op = AllocOp::create(
          b, loc, *type,
          AllocKindAttr::get(b.getContext(),
                             static_cast<AllocKind>(step.alloc_kind())),
          b.getStringAttr(str(step.path())), microBatchAttr(step));
      break;
    }
    case Kind::OptimizerStep:
      OptimizerStepOp::create(b, loc, b.getI64IntegerAttr(step.params()));
      return success();
    case Kind::ClipGradNorm:
      ClipGradNormOp::create(b, loc, b.getF64FloatAttr(step.max_norm()));
      return success();
    }
    if (!op)
      return error(index) << "has unknown kind " << int(kind);
    values.push_back(op->getResult(0));
    return success();
  }

  OpBuilder b;
  ModelOp model;
  Location loc;
  DenseI16ArrayAttr axes;
  IntegerAttr axisZero;
  StringRef name;
  SmallVector<Value> values;
};

} // namespace

LogicalResult mlir::parc::importPrograms(const schema::Plan &plan,
                                         ModelOp model, Location loc) {
  if (!plan.programs())
    return success();
  ProgramImporter importer(model, loc);
  for (const schema::Program *program : *plan.programs())
    if (failed(importer.run(*program)))
      return failure();
  return success();
}
