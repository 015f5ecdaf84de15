//===- ParcScheduleOps.cpp - verifiers of per-rank-kind programs ----------===//
//
// A program is checked as a whole, once: what it frees it gathered or saved,
// what it saves it frees, what it gathers it waits for before the unit
// computes or is freed, a layer's backward follows its forward, and every
// step names a discovered layer or the root's head / tail. The shard
// collectives in a program are checked by their own verifiers.
//
//===----------------------------------------------------------------------===//

#include "Parc/IR/ParcOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::parc;

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

/// A step names a layer (`module`) or the root's head / tail (`part`).
static LogicalResult verifyStepTarget(Operation *op, StringRef module,
                                      std::optional<StringRef> part,
                                      int64_t microBatch, int64_t chunk) {
  if (part && *part != "head" && *part != "tail")
    return op->emitOpError()
           << "part must be \"head\" or \"tail\", got \"" << *part << "\"";
  if (part && !module.empty())
    return op->emitOpError()
           << "names both a module (\"" << module << "\") and a root part";
  if (!part && module.empty())
    return op->emitOpError() << "needs a module path or a root part";
  if (microBatch < 0 || chunk < 0)
    return op->emitOpError() << "needs micro_batch >= 0 and chunk >= 0";
  return success();
}

LogicalResult ForwardStepOp::verify() {
  return verifyStepTarget(*this, getModule(), getPart(), getMicroBatch(),
                          getChunk());
}

LogicalResult BackwardStepOp::verify() {
  return verifyStepTarget(*this, getModule(), getPart(), getMicroBatch(),
                          getChunk());
}

LogicalResult SaveOp::verify() {
  if (failed(verifyStepTarget(*this, getModule(), getPart(), getMicroBatch(),
                              getChunk())))
    return failure();
  if (!getResult().getType().hasStaticShape() ||
      getResult().getType().getNumElements() <= 0)
    return emitOpError() << "must save a positive static number of bytes, got "
                         << getResult().getType();
  return success();
}

LogicalResult RecomputeStepOp::verify() {
  if (failed(verifyStepTarget(*this, getModule(), std::nullopt,
                              getMicroBatch(), getChunk())))
    return failure();
  if (getRemat() == RematKind::None)
    return emitOpError() << "recomputes nothing: remat is none";
  if (int64_t(getBytes()) < 0)
    return emitOpError() << "bytes must be >= 0, got "
                         << int64_t(getBytes());
  return success();
}

LogicalResult BufferOp::verify() {
  auto type = getResult().getType();
  if (!type.hasStaticShape() || type.getNumElements() <= 0)
    return emitOpError() << "must be a non-empty static buffer, got " << type;
  if (getMicroBatch() && int64_t(*getMicroBatch()) < 0)
    return emitOpError() << "needs micro_batch >= 0";
  return success();
}

LogicalResult AllocOp::verify() {
  auto type = getResult().getType();
  if (!type.hasStaticShape() || type.getNumElements() <= 0)
    return emitOpError() << "must allocate a positive static number of bytes, "
                            "got "
                         << type;
  if (getMicroBatch() && int64_t(*getMicroBatch()) < 0)
    return emitOpError() << "needs micro_batch >= 0";
  return success();
}

LogicalResult ClipGradNormOp::verify() {
  double maxNorm = getMaxNorm().convertToDouble();
  if (!(maxNorm > 0))
    return emitOpError() << "max_norm must be positive, got " << maxNorm;
  // The norm is of the step's reduced gradients, and the update uses them.
  Operation *next = getOperation()->getNextNode();
  if (!next || !isa<OptimizerStepOp>(next)) {
    InFlightDiagnostic diag = emitOpError()
                              << "must immediately precede the program's "
                                 "parc.optimizer_step";
    if (next)
      diag.attachNote(next->getLoc()) << "followed by this op instead";
    return diag;
  }
  return success();
}

LogicalResult OptimizerStepOp::verify() {
  if (int64_t(getParams()) < 0)
    return emitOpError() << "params must be >= 0, got "
                         << int64_t(getParams());
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

LogicalResult ProgramOp::verify() {
  if (int64_t(getMicroBatches()) < 1)
    return emitOpError() << "needs micro_batches >= 1, got "
                         << int64_t(getMicroBatches());
  if (int64_t(getBatch()) < 1 || int64_t(getSeq()) < 1)
    return emitOpError() << "needs batch >= 1 and seq >= 1, got batch "
                         << int64_t(getBatch()) << " seq "
                         << int64_t(getSeq());
  auto model = (*this)->getParentOfType<ModelOp>();
  // Ranks covered: the listed indices of each listed grid, every index of
  // the others.
  int64_t ranks = 1;
  llvm::StringSet<> listed;
  for (NamedAttribute entry : getCovers()) {
    Operation *grid = SymbolTable::lookupSymbolIn(model, entry.getName());
    if (!grid || grid->getName().getStringRef() != "shard.grid")
      return emitOpError() << "covers '" << entry.getName().getValue()
                           << "', which is no shard.grid of the model";
    auto indices = dyn_cast<DenseI64ArrayAttr>(entry.getValue());
    auto shape = grid->getAttrOfType<DenseI64ArrayAttr>("shape");
    if (!indices || indices.empty())
      return emitOpError() << "covers '" << entry.getName().getValue()
                           << "' with no indices (expected array<i64: ...>)";
    if (!shape || shape.size() != 1)
      return emitOpError() << "covers '" << entry.getName().getValue()
                           << "', which is not a one-axis grid";
    for (int64_t index : indices.asArrayRef())
      if (index < 0 || index >= shape[0])
        return emitOpError() << "covers index " << index << " of '"
                             << entry.getName().getValue() << "' of size "
                             << shape[0];
    ranks *= indices.size();
    listed.insert(entry.getName().getValue());
  }
  for (Operation &op : *model.getBody())
    if (op.getName().getStringRef() == "shard.grid")
      if (auto name = op.getAttrOfType<StringAttr>(
              SymbolTable::getSymbolAttrName());
          name && !listed.contains(name.getValue()))
        if (auto shape = op.getAttrOfType<DenseI64ArrayAttr>("shape"))
          for (int64_t extent : shape.asArrayRef())
            ranks *= extent;
  if (ranks != int64_t(getRanks()))
    return emitOpError() << "covers " << ranks << " ranks of the model's grids "
                         << "but says ranks " << int64_t(getRanks());
  return success();
}

namespace {

/// Where one (module, part, micro-batch, chunk) is in its step.
enum class Progress { None, Forwarded, Recomputed, Backwarded };

using StepKey = std::tuple<StringRef, StringRef, int64_t, int64_t>;

/// Checks the order of the compute steps and the pairing of saves and frees.
class ProgramChecker {
public:
  ProgramChecker(ProgramOp program) : program(program) {
    // The module tree only: a walk of the model would enter every program.
    auto model = program->getParentOfType<ModelOp>();
    collectLayers(*model.getBody(), "");
  }

  LogicalResult check() {
    for (Operation &op : *program.getBody())
      if (failed(checkOp(op)))
        return failure();
    // Gradient shards live to the end of the step: the optimizer reads them.
    for (Operation &op : *program.getBody()) {
      auto alloc = dyn_cast<AllocOp>(op);
      if ((isa<SaveOp>(op) ||
           (alloc && alloc.getKind() != AllocKind::GradientShards)) &&
          !freed.contains(&op))
        return op.emitOpError() << "is never freed";
    }
    for (Operation &op : *program.getBody())
      if (auto path = gatheredUnit(&op); path && unwaited.lookup(*path) == &op)
        return op.emitOpError() << "gathers FSDP unit " << unitName(*path)
                                << " and is never waited for (parc.wait)";
    if (scatterInFlight)
      return scatterInFlight->emitOpError()
             << "reduce-scatters the gradient of FSDP unit "
             << unitName(*scatteredUnit(scatterInFlight))
             << " and is never waited for (parc.wait)";
    return success();
  }

private:
  LogicalResult checkOp(Operation &op) {
    StringRef name = op.getName().getStringRef();
    if (auto path = gatheredUnit(&op)) {
      // A later gather of the same unit while one is in flight: the
      // program frees and regathers, so the earlier must be waited.
      if (Operation *earlier = unwaited.lookup(*path)) {
        InFlightDiagnostic diag =
            op.emitOpError() << "gathers FSDP unit " << unitName(*path)
                             << " again before the previous gather is waited";
        diag.attachNote(earlier->getLoc()) << "the previous gather";
        return diag;
      }
      unwaited[*path] = &op;
      return success();
    }
    if (scatteredUnit(&op)) {
      // At most one FSDP reduce-scatter in flight (FSDP2): the next is
      // issued after the previous has landed.
      if (failed(requireScattersLanded(op, "issues another reduce-scatter")))
        return failure();
      scatterInFlight = &op;
      return success();
    }
    if (name == "shard.all_reduce" && op.getNumOperands() == 1 &&
        op.getOperand(0).getDefiningOp() &&
        op.getOperand(0).getDefiningOp() == scatterInFlight)
      return requireScattersLanded(op, "all-reduces its result");
    if (name == "shard.all_gather" || name == "shard.reduce_scatter" ||
        name == "shard.all_reduce" || name == "shard.send" ||
        name == "shard.recv")
      return success();
    if (isa<ClipGradNormOp, OptimizerStepOp>(op) &&
        failed(requireScattersLanded(op, "updates the gradients")))
      return failure();
    if (isa<BufferOp, AllocOp, ClipGradNormOp, OptimizerStepOp>(op))
      return checkMicroBatch(op, op.getAttrOfType<IntegerAttr>("micro_batch"));
    if (auto free = dyn_cast<FreeOp>(op))
      return checkFree(free);
    if (auto wait = dyn_cast<WaitOp>(op))
      return checkWait(wait);
    if (auto step = dyn_cast<ForwardStepOp>(op))
      return advance(op, step.getModule(), step.getPart(),
                     step.getMicroBatch(), step.getChunk(), Progress::None,
                     Progress::None, Progress::Forwarded, "forward");
    if (auto step = dyn_cast<RecomputeStepOp>(op))
      return advance(op, step.getModule(), std::nullopt, step.getMicroBatch(),
                     step.getChunk(), Progress::Forwarded,
                     Progress::Forwarded, Progress::Recomputed, "recompute");
    if (auto step = dyn_cast<BackwardStepOp>(op))
      return advance(op, step.getModule(), step.getPart(),
                     step.getMicroBatch(), step.getChunk(),
                     Progress::Forwarded, Progress::Recomputed,
                     Progress::Backwarded, "backward");
    if (auto save = dyn_cast<SaveOp>(op)) {
      if (failed(checkTarget(op, save.getModule(), save.getMicroBatch())))
        return failure();
      StepKey key{save.getModule(), save.getPart().value_or(""),
                  save.getMicroBatch(), save.getChunk()};
      if (progress[key] != Progress::Forwarded)
        return op.emitOpError() << "saves activations of "
                                << describe(save.getModule(), save.getPart())
                                << " micro-batch " << save.getMicroBatch()
                                << " outside its forward";
      return success();
    }
    return op.emitOpError() << "is not a step of a parc.program";
  }

  LogicalResult checkMicroBatch(Operation &op, IntegerAttr microBatch) {
    if (microBatch && microBatch.getInt() >= int64_t(program.getMicroBatches()))
      return op.emitOpError()
             << "runs micro-batch " << microBatch.getInt() << " of a program "
             << "with " << program.getMicroBatches() << " micro-batches";
    return success();
  }

  LogicalResult checkTarget(Operation &op, StringRef module,
                            int64_t microBatch) {
    if (!module.empty() && !layers.contains(module))
      return op.emitOpError()
             << "names '" << module << "', which is no discovered layer";
    return checkMicroBatch(op, op.getAttrOfType<IntegerAttr>("micro_batch"));
  }

  LogicalResult advance(Operation &op, StringRef module,
                        std::optional<StringRef> part, int64_t microBatch,
                        int64_t chunk, Progress fromA, Progress fromB,
                        Progress to, StringRef what) {
    if (failed(checkTarget(op, module, microBatch)))
      return failure();
    // The unit computes on what its gather brought: it must have landed.
    // Any layer may read the root's parameters (tied or shared weights).
    for (StringRef unit : {module, StringRef()})
      if (Operation *gather = unwaited.lookup(unit)) {
        InFlightDiagnostic diag = op.emitOpError();
        diag << "runs the " << what << " of " << describe(module, part)
             << " micro-batch " << microBatch
             << " before waiting for the all-gather of FSDP unit "
             << unitName(unit);
        diag.attachNote(gather->getLoc()) << "the gather";
        return diag;
      }
    Progress &state = progress[StepKey{module, part.value_or(""), microBatch,
                                       chunk}];
    if (state != fromA && state != fromB) {
      InFlightDiagnostic diag = op.emitOpError();
      diag << "runs the " << what << " of " << describe(module, part)
           << " micro-batch " << microBatch;
      if (to == Progress::Forwarded)
        diag << " twice";
      else if (state == Progress::None)
        diag << " before its forward";
      else
        diag << " after its backward";
      return diag;
    }
    state = to;
    return success();
  }

  LogicalResult checkFree(FreeOp free) {
    Operation *def = free.getBuffer().getDefiningOp();
    if (!def || def->getBlock() != program.getBody() ||
        !(isa<SaveOp, AllocOp>(def) ||
          def->getName().getStringRef() == "shard.all_gather"))
      return free.emitOpError() << "must free a parc.save, parc.alloc or "
                                   "shard.all_gather result of its program";
    if (!freed.insert(def).second)
      return free.emitOpError() << "frees a buffer that is already freed";
    if (auto path = gatheredUnit(def); path && unwaited.lookup(*path) == def) {
      InFlightDiagnostic diag =
          free.emitOpError() << "frees the all-gather of FSDP unit "
                             << unitName(*path) << " before waiting for it";
      diag.attachNote(def->getLoc()) << "the gather";
      return diag;
    }
    return success();
  }

  /// `op` needs every FSDP reduce-scatter issued so far to have landed.
  LogicalResult requireScattersLanded(Operation &op, StringRef what) {
    if (!scatterInFlight)
      return success();
    InFlightDiagnostic diag =
        op.emitOpError() << what
                         << " before waiting for the reduce-scatter of FSDP "
                            "unit "
                         << unitName(*scatteredUnit(scatterInFlight));
    diag.attachNote(scatterInFlight->getLoc()) << "the reduce-scatter";
    return diag;
  }

  LogicalResult checkWait(WaitOp wait) {
    Operation *def = wait.getCollective().getDefiningOp();
    bool local = def && def->getBlock() == program.getBody();
    if (local && scatteredUnit(def)) {
      if (def != scatterInFlight)
        return wait.emitOpError() << "waits for a reduce-scatter of FSDP unit "
                                  << unitName(*scatteredUnit(def))
                                  << " that is already waited for";
      scatterInFlight = nullptr;
      return success();
    }
    std::optional<StringRef> path = local ? gatheredUnit(def) : std::nullopt;
    if (!path)
      return wait.emitOpError()
             << "must wait for a shard.all_gather of a param_shard buffer or "
                "a shard.reduce_scatter of a gradient buffer of its program";
    if (unwaited.lookup(*path) != def)
      return wait.emitOpError() << "waits for an all-gather of FSDP unit "
                                << unitName(*path) << " that is already "
                                   "waited for";
    unwaited.erase(*path);
    return success();
  }

  /// The unit an FSDP all-gather (of a param_shard buffer) gathers.
  static std::optional<StringRef> gatheredUnit(Operation *op) {
    return unitOf(op, "shard.all_gather", BufferKind::ParamShard);
  }

  /// The unit an FSDP reduce-scatter (of a gradient buffer) reduces.
  static std::optional<StringRef> scatteredUnit(Operation *op) {
    return unitOf(op, "shard.reduce_scatter", BufferKind::Gradient);
  }

  /// The unit whose `kind` buffer `op`, a `name` collective, reads.
  static std::optional<StringRef> unitOf(Operation *op, StringRef name,
                                         BufferKind kind) {
    if (!op || op->getName().getStringRef() != name ||
        op->getNumOperands() != 1)
      return std::nullopt;
    auto buffer = op->getOperand(0).getDefiningOp<BufferOp>();
    if (!buffer || buffer.getKind() != kind)
      return std::nullopt;
    return buffer.getOf();
  }

  static std::string unitName(StringRef path) {
    return path.empty() ? std::string("root") : "'" + path.str() + "'";
  }

  static std::string describe(StringRef module,
                              std::optional<StringRef> part) {
    return module.empty() ? "the root's " + part.value_or("").str()
                          : "'" + module.str() + "'";
  }

  void collectLayers(Block &body, StringRef prefix) {
    for (NNModuleOp module : body.getOps<NNModuleOp>()) {
      std::string path = prefix.empty()
                             ? module.getSymName().str()
                             : (prefix + "." + module.getSymName()).str();
      if (module->hasAttr("parc.stack"))
        layers.insert(path);
      else
        collectLayers(*module.getBody(), path);
    }
  }

  ProgramOp program;
  llvm::StringSet<> layers;
  std::map<StepKey, Progress> progress;
  llvm::DenseSet<Operation *> freed;
  /// Per unit path, its gather in flight (issued, not yet waited for).
  llvm::StringMap<Operation *> unwaited;
  /// The FSDP reduce-scatter issued and not yet waited for.
  Operation *scatterInFlight = nullptr;
};

} // namespace

LogicalResult ProgramOp::verifyRegions() { return ProgramChecker(*this).check(); }
