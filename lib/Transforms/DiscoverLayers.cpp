//===- DiscoverLayers.cpp - find the layer stacks of a model --------------===//
//
// A layer is recognised by what it computes, never by its class name: a module
// under ModuleList / ModuleDict / Sequential containers whose forward runs
// attention and maps the hidden state to a hidden state of the same type. A
// framework that took a ModuleList for one layer checkpointed nothing; here a
// container is never a layer, and a renamed class changes nothing.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/LayerStacks.h"
#include "parc/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::parc {
#define GEN_PASS_DEF_DISCOVERLAYERS
#include "parc/Transforms/Passes.h.inc"

namespace {

/// Consecutive layers of one class once containers are flattened: one stack.
struct LayerRun {
  SmallVector<NNModuleOp> layers;
  /// Whether any attention of the run is causal (a decoder with
  /// bidirectional cross-attention is still a language stack).
  bool causal = false;
};

/// What a search below a module found, in pre-order.
struct SearchResult {
  SmallVector<LayerRun> runs;
  /// The outermost container of every container tree searched, so that the
  /// warning for a model without layers says where it looked.
  SmallVector<NNModuleOp> containers;
};

struct AttentionUse {
  bool any = false;
  bool causal = false;
};

/// Appends what `container` holds once nested containers are opened, in
/// order: a ModuleDict "0".."59" left by pipeline splitting, or Sequentials
/// inside a ModuleList, then hold the same layers as the plain ModuleList.
void appendFlattenedMembers(NNModuleOp container,
                            SmallVectorImpl<NNModuleOp> &members) {
  for (NNModuleOp child : container.getBody()->getOps<NNModuleOp>()) {
    if (child.isContainer())
      appendFlattenedMembers(child, members);
    else
      members.push_back(child);
  }
}

/// How many modules `container` holds once nested containers are opened.
size_t countFlattenedMembers(NNModuleOp container) {
  SmallVector<NNModuleOp> members;
  appendFlattenedMembers(container, members);
  return members.size();
}

/// Whether `forward` maps one tensor to a tensor of the same type, as a
/// residual block does; a tower or a whole model changes the type (ids to
/// hidden states, pixels to features) or takes several inputs.
bool isResidualBlock(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  return type.getNumInputs() == 1 && type.getNumResults() == 1 &&
         isa<TensorType>(type.getInput(0)) &&
         type.getInput(0) == type.getResult(0);
}

/// The container a run is named by: the outermost one that holds the run and
/// nothing else, so a list of Sequentials or a one-layer list still names the
/// list; when the run shares its container, the innermost holding all of it.
NNModuleOp getContainerOfRun(ArrayRef<NNModuleOp> layers) {
  Operation *holder = layers.front()->getParentOp();
  while (!holder->isAncestor(layers.back()))
    holder = holder->getParentOp();
  auto container = cast<NNModuleOp>(holder);
  while (auto parent = dyn_cast<NNModuleOp>(container->getParentOp())) {
    if (!parent.isContainer() || countFlattenedMembers(parent) != layers.size())
      break;
    container = parent;
  }
  return container;
}

/// "language" for causal attention, "vision" for bidirectional; a later stack
/// of a kind is numbered ("language_1") so that names stay unique, as
/// getLayerStacks() matches layers to stacks by name.
std::string getStackName(bool causal, llvm::StringMap<unsigned> &used) {
  StringRef kind = causal ? "language" : "vision";
  unsigned index = used[kind]++;
  return index == 0 ? kind.str() : (kind + "_" + llvm::Twine(index)).str();
}

std::string joinPaths(ArrayRef<std::string> paths) {
  return paths.empty() ? std::string("none") : llvm::join(paths, ", ");
}

/// Finds the layers below a module, remembering which forwards attend.
class LayerFinder {
public:
  /// Searches every container tree below `root` (the model or a module).
  SearchResult searchBelow(Operation *root) {
    SearchResult result;
    searchChildren(root, result);
    return result;
  }

  /// Searches `module` itself when it is a container, else below it.
  SearchResult searchFrom(NNModuleOp module) {
    if (!module.isContainer())
      return searchBelow(module);
    SearchResult result;
    result.containers.push_back(module);
    searchContainer(module, result);
    return result;
  }

private:
  void searchChildren(Operation *parent, SearchResult &result) {
    for (NNModuleOp child : parent->getRegion(0).getOps<NNModuleOp>()) {
      if (!child.isContainer()) {
        searchChildren(child, result);
        continue;
      }
      result.containers.push_back(child);
      searchContainer(child, result);
    }
  }

  /// Groups the flattened members of `container` into runs by class name
  /// only: sliding and full attention layers, or Gemma 4's full-attention
  /// layers without v_proj, stay one stack. Members that are not layers end
  /// a run and are searched for containers of their own.
  void searchContainer(NNModuleOp container, SearchResult &result) {
    SmallVector<NNModuleOp> members;
    appendFlattenedMembers(container, members);
    LayerRun run;
    auto endRun = [&] {
      if (!run.layers.empty())
        result.runs.push_back(std::move(run));
      run = LayerRun();
    };
    for (NNModuleOp member : members) {
      if (!isLayer(member)) {
        endRun();
        searchChildren(member, result);
        continue;
      }
      if (!run.layers.empty() &&
          run.layers.back().getClassName() != member.getClassName())
        endRun();
      run.layers.push_back(member);
      run.causal |= getAttentionUse(member).causal;
    }
    endRun();
  }

  bool isLayer(NNModuleOp module) {
    func::FuncOp forward = module.getForward();
    return forward && isResidualBlock(forward) && getAttentionUse(module).any;
  }

  /// The attention `module`'s forward runs, directly or through parc.call.
  /// Callees are nested below the caller, so the recursion ends.
  AttentionUse getAttentionUse(NNModuleOp module) {
    if (auto known = attentionUses.find(module); known != attentionUses.end())
      return known->second;
    AttentionUse use;
    if (func::FuncOp forward = module.getForward())
      forward.walk([&](Operation *op) {
        if (auto attention = dyn_cast<AttentionOp>(op)) {
          use.any = true;
          use.causal |= attention.getCausal();
        } else if (auto call = dyn_cast<CallOp>(op)) {
          if (auto callee = symbolTables.lookupNearestSymbolFrom<NNModuleOp>(
                  call, call.getCallee())) {
            AttentionUse inner = getAttentionUse(callee);
            use.any |= inner.any;
            use.causal |= inner.causal;
          }
        }
      });
    attentionUses[module] = use;
    return use;
  }

  SymbolTableCollection symbolTables;
  llvm::DenseMap<Operation *, AttentionUse> attentionUses;
};

SmallVector<LayerStack> getStacksOfRuns(ArrayRef<LayerRun> runs) {
  SmallVector<LayerStack> stacks;
  llvm::StringMap<unsigned> usedNames;
  for (const LayerRun &run : runs)
    stacks.push_back({getStackName(run.causal, usedNames),
                      getDottedPath(getContainerOfRun(run.layers)),
                      run.layers});
  return stacks;
}

/// Notes the op that the stack override `path` names.
void noteOverride(InFlightDiagnostic &diag, StringRef path, Operation *op) {
  diag.attachNote(op->getLoc())
      << "stack override '" << path << "' names this "
      << (isa<NNModuleOp>(op) ? "module" : "op");
}

/// The layers below an override path. The user names the stack, so every
/// layer below it joins it whatever its class; causal and bidirectional
/// layers cannot share a stack, though.
FailureOr<LayerRun> getLayersAtPath(ModelOp model, StringRef path,
                                    LayerFinder &finder,
                                    StringRef pathsWithLayers) {
  Operation *target = lookupDottedPath(model, path);
  auto module = dyn_cast_or_null<NNModuleOp>(target);
  if (!module) {
    InFlightDiagnostic diag = emitError(model.getLoc())
                              << "stack override '" << path << "' ";
    if (target)
      diag << "names a '" << target->getName() << "', not a parc.module,";
    else
      diag << "resolves to nothing";
    diag << " in @" << model.getSymName()
         << "; containers with layers: " << pathsWithLayers;
    if (target)
      noteOverride(diag, path, target);
    return diag;
  }
  SearchResult found = finder.searchFrom(module);
  if (found.runs.empty()) {
    InFlightDiagnostic diag =
        emitError(model.getLoc())
        << "stack override '" << path << "' holds no layers in @"
        << model.getSymName()
        << " (no module under a container below it runs attention and "
           "maps a tensor to a tensor of the same type); containers with "
           "layers: "
        << pathsWithLayers;
    noteOverride(diag, path, module);
    return diag;
  }
  LayerRun merged;
  merged.causal = found.runs.front().causal;
  for (const LayerRun &run : found.runs) {
    if (run.causal != merged.causal) {
      SmallVector<std::string> paths = llvm::map_to_vector(
          getStacksOfRuns(found.runs),
          [](const LayerStack &stack) { return stack.path; });
      InFlightDiagnostic diag =
          emitError(model.getLoc())
          << "stack override '" << path << "' in @" << model.getSymName()
          << " mixes causal and bidirectional layers (" << joinPaths(paths)
          << "); name each container on its own";
      const LayerRun &first = found.runs.front();
      for (const LayerRun *of : {&first, &run}) {
        NNModuleOp layer = of->layers.front();
        diag.attachNote(layer.getLoc())
            << getDottedPath(layer) << " is "
            << (of->causal ? "causal" : "bidirectional");
      }
      return diag;
    }
    llvm::append_range(merged.layers, run.layers);
  }
  return merged;
}

/// The stacks `paths` name, in their order. Reports every bad path, not just
/// the first, before failing.
FailureOr<SmallVector<LayerStack>>
getStacksAtPaths(ModelOp model, ArrayRef<std::string> paths,
                 LayerFinder &finder, ArrayRef<LayerStack> discovered) {
  std::string pathsWithLayers = joinPaths(llvm::map_to_vector(
      discovered, [](const LayerStack &stack) { return stack.path; }));
  SmallVector<LayerStack> stacks;
  llvm::StringMap<unsigned> usedNames;
  llvm::DenseMap<Operation *, StringRef> claimedBy;
  bool allResolved = true;
  for (const std::string &path : paths) {
    FailureOr<LayerRun> run =
        getLayersAtPath(model, path, finder, pathsWithLayers);
    if (failed(run)) {
      allResolved = false;
      continue;
    }
    // A layer in two stacks would get two tags, and one would be lost.
    for (NNModuleOp layer : run->layers) {
      auto [claim, isNew] = claimedBy.try_emplace(layer, path);
      if (isNew)
        continue;
      // Not layer.emitError(): that would print the whole layer.
      InFlightDiagnostic diag = emitError(layer.getLoc())
                                << "stack overrides '" << claim->second
                                << "' and '" << path << "' both hold layer "
                                << getDottedPath(layer) << " in @"
                                << model.getSymName();
      for (StringRef claimant : {claim->second, StringRef(path)})
        noteOverride(diag, claimant, lookupDottedPath(model, claimant));
      allResolved = false;
      break;
    }
    stacks.push_back(
        {getStackName(run->causal, usedNames), path, std::move(run->layers)});
  }
  if (!allResolved)
    return failure();
  return stacks;
}

/// Diagnostics go to the model's location rather than the op, so that the
/// whole model is not printed after every remark.
void reportStacks(ModelOp model, ArrayRef<LayerStack> stacks,
                  ArrayRef<NNModuleOp> containersSearched) {
  for (const LayerStack &stack : stacks)
    emitRemark(model.getLoc())
        << stack.layers.size()
        << (stack.layers.size() == 1 ? " layer in " : " layers in ")
        << stack.path << " (" << stack.name << ")";
  if (!stacks.empty())
    return;
  SmallVector<std::string> searched = llvm::map_to_vector(
      containersSearched, [](NNModuleOp c) { return getDottedPath(c); });
  emitWarning(model.getLoc())
      << "no layer stacks found in @" << model.getSymName()
      << "; containers searched: " << joinPaths(searched)
      << " (a layer is a module under a container whose forward runs "
         "attention and maps a tensor to a tensor of the same type)";
}

} // namespace

LogicalResult ensureLayersDiscovered(ModelOp model) {
  if (hasDiscoveredLayers(model))
    return success();
  LayerFinder finder;
  SearchResult found = finder.searchBelow(model);
  SmallVector<LayerStack> stacks = getStacksOfRuns(found.runs);
  reportStacks(model, stacks, found.containers);
  setLayerStacks(model, stacks);
  return success();
}

namespace {

struct DiscoverLayersPass
    : public impl::DiscoverLayersBase<DiscoverLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModelOp model = getOperation();
    LayerFinder finder;
    SearchResult found = finder.searchBelow(model);
    SmallVector<LayerStack> discovered = getStacksOfRuns(found.runs);
    FailureOr<SmallVector<LayerStack>> stacks = discovered;
    if (!stackPaths.empty())
      stacks = getStacksAtPaths(model, stackPaths, finder, discovered);
    if (failed(stacks))
      return signalPassFailure();
    reportStacks(model, *stacks, found.containers);
    // Recorded even when empty: later passes then know discovery ran.
    setLayerStacks(model, *stacks);
  }
};

} // namespace
} // namespace mlir::parc
