//===- ApplyTp.cpp - a structural tensor-parallel plan --------------------===//
//
// Derives a Megatron-style TP plan from the op graph of every discovered layer,
// never from class or module names: the linears feeding an attention's q / k /
// v (through norms and rope) and the linears feeding an activation or a gating
// mul are column-parallel; the linears consuming an attention output or an
// activation / mul result are row-parallel; the embedding table and the
// linear producing the logits of the cross-entropy are vocab-parallel.
// Divisibility is checked before anything is written, and each refusal names
// the config key (from the model's `parc.hf_config`) or the op attribute it
// comes from.
//
// Once the roles are written, each op's TpShardingOpInterface says what a TP
// rank holds of its results and which collectives its kernel runs;
// recordTpShards (TpShards.cpp) writes the answers as `parc.tp_shards`,
// which the activation trace, the lowering, plan.bin and parc-run read.
// Collectives are recorded, not inserted: a real shard.all_reduce in the
// forward would change value types that the other passes read.
//
//===----------------------------------------------------------------------===//

#include "TpShards.h"
#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYTP
#include "parc/Transforms/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kGridName = kTpGridName;
constexpr llvm::StringLiteral kPlanAttr = kTpParamAttrName;
constexpr llvm::StringLiteral kPaddedAttr = kTpPaddedDim0AttrName;
constexpr llvm::StringLiteral kSizeAttr = kTpSizeAttrName;
constexpr llvm::StringLiteral kSequenceAttr = kTpSequenceParallelAttrName;
constexpr llvm::StringLiteral kLossAttr = kTpLossParallelAttrName;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

int64_t lastDim(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape().back();
}

ParamOp lookupParam(Operation *user, SymbolRefAttr ref) {
  return SymbolTable::lookupNearestSymbolFrom<ParamOp>(user, ref);
}

/// The forward ops of a module with every parc.call inlined (except calls
/// of layers, for the root's graph): values are canonicalised across call
/// boundaries so that a callee's argument is the caller's operand.
struct FlatGraph : ForwardWalker<FlatGraph, Value> {
  explicit FlatGraph(func::FuncOp forward, bool stopAtLayers)
      : ForwardWalker(stopAtLayers) {
    SmallVector<Value> args(forward.getArguments().begin(),
                            forward.getArguments().end());
    walk(forward, args);
  }

  SmallVector<Operation *> ops;
  llvm::DenseMap<Value, Value> alias;
  llvm::DenseMap<Value, SmallVector<Operation *>> users;

  Value canon(Value v) const {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  }
  Operation *producer(Value v) const { return canon(v).getDefiningOp(); }
  ArrayRef<Operation *> usersOf(Value v) const {
    auto it = users.find(canon(v));
    return it == users.end() ? ArrayRef<Operation *>() : it->second;
  }

  SmallVector<Value> visitOp(Operation &op, ArrayRef<Value> operands) {
    ops.push_back(&op);
    for (auto [value, canonical] : llvm::zip(op.getOperands(), operands)) {
      if (value != canonical)
        alias[value] = canonical;
      users[canonical].push_back(&op);
    }
    return SmallVector<Value>(op.getResults().begin(), op.getResults().end());
  }
  SmallVector<Value> visitOpaqueCall(CallOp call, NNModuleOp,
                                     ArrayRef<Value> operands) {
    return visitOp(*call, operands);
  }
};

/// One divisibility refusal, grouped over the layers it applies to.
struct Refusal {
  std::string what;    // "KV heads", "attention heads", ...
  int64_t value = 0;   // the count N must divide
  int64_t divisor = 0; // what the size must divide (usually `value`)
  std::string group;   // "full-attention layers", "language layers"
  std::string key;     // config key, empty when the model has none
  std::string source;  // op attribute or parameter naming the value
  int64_t layers = 0;
  std::string detail;      // extra clause, for head-dim groups
  Operation *op = nullptr; // where the first layer refused holds the value
};

struct ApplyTpPass : public impl::ApplyTpBase<ApplyTpPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(applyTo(getOperation())))
      signalPassFailure();
  }

  // Per-model state.
  int64_t n = 1;
  HFConfigOp configOp;
  DictionaryAttr config;
  llvm::MapVector<std::string, Refusal, std::map<std::string, unsigned>>
      refusals;
  llvm::SetVector<Operation *> colwise, rowwise, vocab;
  llvm::DenseSet<Operation *> projectionNorms, sequenceNorms;
  llvm::DenseMap<Operation *, TpRole> planOf;
  llvm::DenseMap<Operation *, int64_t> paddedOf;
  llvm::StringSet<> mixedTypes;

  /// The key of `config` whose last component is one of `names` (in order of
  /// preference) and whose value is `value`, preferring keys of the stack.
  std::string findKey(StringRef stack, ArrayRef<StringRef> names,
                      int64_t value) {
    if (!config)
      return "";
    bool vision = isVisionStack(stack);
    for (bool strict : {true, false})
      for (StringRef name : names)
        for (NamedAttribute entry : config) {
          StringRef key = entry.getName().getValue();
          if (key != name && !key.ends_with(("." + name).str()))
            continue;
          auto attr = dyn_cast<IntegerAttr>(entry.getValue());
          if (!attr || attr.getInt() != value)
            continue;
          StringRef prefix = key.drop_back(name.size());
          bool ofStack =
              vision ? prefix.contains("vision") : !prefix.contains("vision");
          if (!strict || ofStack)
            return key.str();
        }
    return "";
  }

  void refuse(Refusal refusal) {
    std::string id = refusal.what + "|" + std::to_string(refusal.value) + "|" +
                     refusal.group + "|" + refusal.key + "|" + refusal.detail;
    refusals.try_emplace(id, refusal).first->second.layers++;
  }

  void checkDivides(StringRef what, int64_t value, StringRef stack,
                    StringRef group, ArrayRef<StringRef> keyNames,
                    StringRef source, Operation *op) {
    if (value % n == 0)
      return;
    Refusal r;
    r.what = what.str();
    r.value = r.divisor = value;
    r.group = group.str();
    r.key = findKey(stack, keyNames, value);
    r.source = source.str();
    r.op = op;
    refuse(r);
  }

  /// Notes the config key a refused value came from at the model's
  /// parc.hf_config. The note names the line but no column, so that no
  /// excerpt of the line (the whole config dictionary) is printed.
  void noteConfigKey(InFlightDiagnostic &diag, StringRef key) {
    Location loc = configOp.getLoc();
    if (auto file = loc->findInstanceOf<FileLineColLoc>())
      loc = FileLineColLoc::get(file.getFilename(), file.getLine(), 0);
    diag.attachNote(loc) << key << " = "
                         << cast<IntegerAttr>(config.get(key)).getInt()
                         << " in the imported config (" << configOp.getSource()
                         << ")";
  }

  /// Walks from `v` back through norms and rope to the linear producing it,
  /// collecting the ops passed.
  LinearOp backToLinear(const FlatGraph &g, Value v,
                        SmallVectorImpl<Operation *> &path) {
    while (Operation *op = g.producer(v)) {
      if (auto linear = dyn_cast<LinearOp>(op))
        return linear;
      if (!isa<RmsNormOp, RmsNormalizeOp, LayerNormOp, RopeOp>(op))
        return {};
      path.push_back(op);
      v = op->getOperand(0);
    }
    return {};
  }

  /// Linears whose output reaches `v` directly or through one activation.
  bool gatedInputs(const FlatGraph &g, Value v,
                   SmallVectorImpl<LinearOp> &linears) {
    Operation *op = g.producer(v);
    if (auto act = dyn_cast_or_null<ActivationOp>(op))
      op = g.producer(act.getInput());
    if (auto linear = dyn_cast_or_null<LinearOp>(op)) {
      linears.push_back(linear);
      return true;
    }
    return false;
  }

  LogicalResult planLayer(StringRef stack, NNModuleOp layer) {
    func::FuncOp forward = layer.getForward();
    if (!forward)
      return success();
    FlatGraph g(forward, /*stopAtLayers=*/false);

    auto layerType = layer->getAttrOfType<StringAttr>("layer_type");
    bool full = layerType && layerType.getValue() == "full_attention";
    // Name layers by their type only where a stack mixes types.
    std::string group = layerType && mixedTypes.contains(stack)
                            ? std::string(layerType.getValue()) + " layers"
                            : (stack + " layers").str();
    std::replace(group.begin(), group.end(), '_', '-');
    std::string layerPath = getDottedPath(layer);

    llvm::SetVector<Operation *> projections, outputs, mlpIn, mlpOut;
    for (Operation *op : g.ops) {
      auto attention = dyn_cast<AttentionOp>(op);
      if (!attention)
        continue;
      SmallVector<Operation *> attnOutputs;
      for (Operation *user : g.usersOf(attention.getResult()))
        if (isa<LinearOp>(user))
          attnOutputs.push_back(user);
      if (attnOutputs.empty()) {
        // Heads split over ranks need a row-parallel linear to reduce them.
        mlir::emitWarning(attention.getLoc())
            << "apply-tp: no linear consumes the parc.attention output in "
            << layerPath << "; its projections stay replicated";
        continue;
      }
      outputs.insert(attnOutputs.begin(), attnOutputs.end());
      int64_t heads = attention.getNumHeads(),
              kvHeads = attention.getNumKvHeads(),
              headDim = attention.getHeadDim();
      std::string at = " on the parc.attention in " + layerPath;
      checkDivides("attention heads", heads, stack, group,
                   {"num_attention_heads"},
                   "num_heads = " + std::to_string(heads) + at, attention);
      SmallVector<StringRef> kvKeys = {"num_key_value_heads",
                                       "num_global_key_value_heads"};
      if (full)
        std::swap(kvKeys[0], kvKeys[1]);
      checkDivides("KV heads", kvHeads, stack, group, kvKeys,
                   "num_kv_heads = " + std::to_string(kvHeads) + at, attention);
      for (auto [operand, role] : {std::pair{attention.getQuery(), "query"},
                                   {attention.getKey(), "key"},
                                   {attention.getValue(), "value"}}) {
        SmallVector<Operation *> path;
        LinearOp linear = backToLinear(g, operand, path);
        if (!linear)
          continue;
        projections.insert(linear);
        // Each rank must hold whole groups of every per-group op between
        // the projection and the attention (rope heads, q/k norms).
        int64_t width = lastDim(linear.getResult());
        for (Operation *op : path) {
          int64_t groupSize = headDim;
          std::string what;
          if (auto rope = dyn_cast<RopeOp>(op)) {
            groupSize = rope.getHeadDim();
            what = "head_dim = " + std::to_string(groupSize) +
                   " on the parc.rope in " + layerPath;
          } else if (auto normalize = dyn_cast<RmsNormalizeOp>(op)) {
            groupSize = normalize.getGroupSize();
            what = "group_size = " + std::to_string(groupSize) +
                   " on the parc.rms_normalize in " + layerPath;
          } else {
            projectionNorms.insert(op);
            SymbolRefAttr ref = isa<RmsNormOp>(op)
                                    ? cast<RmsNormOp>(op).getWeight()
                                    : cast<LayerNormOp>(op).getWeight();
            if (ParamOp weight = lookupParam(op, ref))
              groupSize = weight.getTensorType().getDimSize(0);
            what = op->getName().stripDialect().str() + " " +
                   (lookupParam(op, ref) ? getDottedPath(lookupParam(op, ref))
                                         : std::string()) +
                   " normalising groups of " + std::to_string(groupSize);
          }
          // Whole heads per rank follow from the head counts checked above.
          int64_t count = StringRef(role) == "query" ? heads : kvHeads;
          if (count % n != 0 ||
              (width % n == 0 && (width / n) % groupSize == 0))
            continue;
          Refusal r;
          r.what = std::string(role) + " projection";
          r.value = width;
          r.divisor = width % groupSize == 0 ? width / groupSize : 1;
          r.group = group;
          SmallVector<StringRef> dimKeys = {"head_dim", "global_head_dim"};
          if (full)
            std::swap(dimKeys[0], dimKeys[1]);
          r.key = findKey(stack, dimKeys, groupSize);
          r.source = what;
          r.detail = "into whole " + std::to_string(groupSize) + "-wide groups";
          r.op = op;
          refuse(r);
        }
      }
    }

    // MLPs: linears feeding an activation or a gating mul, and the linear
    // consuming its result.
    for (Operation *op : g.ops) {
      SmallVector<LinearOp> inputs;
      bool isMlp = false;
      if (auto act = dyn_cast<ActivationOp>(op)) {
        isMlp = gatedInputs(g, act.getResult(), inputs);
      } else if (auto mul = dyn_cast<MulOp>(op)) {
        isMlp = gatedInputs(g, mul.getLhs(), inputs) &&
                gatedInputs(g, mul.getRhs(), inputs);
      }
      if (!isMlp || llvm::any_of(inputs, [&](LinearOp l) {
            return projections.contains(l) || outputs.contains(l);
          }))
        continue;
      SmallVector<LinearOp> consumers;
      for (Operation *user : g.usersOf(op->getResult(0)))
        if (auto linear = dyn_cast<LinearOp>(user))
          consumers.push_back(linear);
      // An activation feeding a gating mul is part of that mul's pattern.
      if (isa<ActivationOp>(op) && consumers.empty())
        continue;
      for (LinearOp linear : inputs)
        mlpIn.insert(linear);
      for (LinearOp linear : consumers)
        mlpOut.insert(linear);
    }
    for (Operation *op : mlpIn) {
      auto linear = cast<LinearOp>(op);
      int64_t inner = lastDim(linear.getResult());
      ParamOp weight = lookupParam(op, linear.getWeight());
      checkDivides("intermediate size", inner, stack, group,
                   {"intermediate_size"},
                   "dim 0 of " + (weight ? getDottedPath(weight) : layerPath) +
                       " = " + std::to_string(inner),
                   weight ? weight.getOperation() : op);
    }

    for (auto *set : {&projections, &mlpIn})
      for (Operation *op : *set) {
        if (mlpOut.contains(op) || outputs.contains(op))
          return op->emitError()
                 << "apply-tp: linear "
                 << getDottedPath(
                        lookupParam(op, cast<LinearOp>(op).getWeight()))
                 << " is both column- and row-parallel in the op graph of "
                 << layerPath;
        colwise.insert(op);
      }
    for (auto *set : {&outputs, &mlpOut})
      for (Operation *op : *set)
        rowwise.insert(op);

    // Norms on the residual stream run sequence-parallel when asked; q/k
    // norms inside the sharded region stay replicated, as does a vision
    // tower, which runs without sequence parallelism (TpShards.cpp).
    for (Operation *op : g.ops)
      if (isa<RmsNormOp, LayerNormOp>(op) && !projectionNorms.contains(op) &&
          sequenceParallel && !isVisionStack(stack))
        sequenceNorms.insert(op);

    return success();
  }

  /// Embeddings and the logits linear of the root (everything outside the
  /// layers), and the final norm under sequence parallel.
  void planRoot(ModelOp model, int64_t &vocabSize, int64_t &paddedVocab) {
    auto forward = dyn_cast_or_null<func::FuncOp>(
        SymbolTable::lookupSymbolIn(model, "forward"));
    if (!forward)
      return;
    FlatGraph g(forward, /*stopAtLayers=*/true);
    auto markVocab = [&](Operation *user, SymbolRefAttr ref) {
      if (ParamOp param = ref ? lookupParam(user, ref) : ParamOp()) {
        int64_t dim0 = param.getTensorType().getDimSize(0);
        planOf[param] = TpRole::Vocab;
        paddedOf[param] = roundUp(dim0, n);
        vocabSize = std::max(vocabSize, dim0);
        paddedVocab = std::max(paddedVocab, roundUp(dim0, n));
      }
    };
    for (Operation *op : g.ops) {
      if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
        markVocab(op, embedding.getWeight());
        vocab.insert(op);
        continue;
      }
      auto loss = dyn_cast<CrossEntropyOp>(op);
      if (!loss)
        continue;
      Operation *producer = g.producer(loss.getLogits());
      while (isa_and_nonnull<SoftcapOp>(producer))
        producer = g.producer(producer->getOperand(0));
      auto linear = dyn_cast_or_null<LinearOp>(producer);
      if (!linear)
        continue;
      markVocab(linear, linear.getWeight());
      markVocab(linear, linear.getBiasAttr());
      vocab.insert(linear);
      if (sequenceParallel)
        if (auto norm = g.producer(linear.getInput());
            isa_and_nonnull<RmsNormOp, LayerNormOp>(norm))
          sequenceNorms.insert(norm);
    }
  }

  void reset() {
    refusals.clear();
    colwise.clear();
    rowwise.clear();
    vocab.clear();
    projectionNorms.clear();
    sequenceNorms.clear();
    planOf.clear();
    paddedOf.clear();
    mixedTypes.clear();
  }

  void clearPlan(ModelOp model) {
    for (Operation &op : llvm::make_early_inc_range(*model.getBody()))
      if (auto grid = dyn_cast<shard::GridOp>(op);
          grid && grid.getSymName() == kGridName)
        op.erase();
    model.walk([](Operation *op) {
      for (StringRef name :
           {kPlanAttr.data(), kPaddedAttr.data(), kSizeAttr.data(),
            kSequenceAttr.data(), kLossAttr.data(), kTpShardsAttrName.data()})
        op->removeAttr(name);
    });
  }

  LogicalResult applyTo(ModelOp model) {
    n = size;
    if (n < 1)
      return mlir::emitError(model->getLoc())
             << "apply-tp needs size >= 1, got " << n;
    reset();
    Builder b(model.getContext());
    if (n == 1) {
      clearPlan(model);
      model->setAttr(kSizeAttr, b.getI64IntegerAttr(1));
      return success();
    }
    if (failed(ensureLayersDiscovered(model)))
      return failure();
    SmallVector<LayerStack> stacks = getLayerStacks(model);
    if (stacks.empty())
      return mlir::emitError(model->getLoc())
             << "apply-tp needs layer stacks: discovery found none in @"
             << model.getSymName();
    auto configs = model.getBody()->getOps<HFConfigOp>();
    configOp = configs.empty() ? HFConfigOp() : *configs.begin();
    config = configOp ? configOp.getConfig() : DictionaryAttr();

    for (const LayerStack &stack : stacks) {
      llvm::StringSet<> types;
      for (NNModuleOp layer : stack.layers)
        if (auto type = layer->getAttrOfType<StringAttr>("layer_type"))
          types.insert(type.getValue());
      if (types.size() > 1)
        mixedTypes.insert(stack.name);
    }
    for (const LayerStack &stack : stacks)
      for (NNModuleOp layer : stack.layers)
        if (failed(planLayer(stack.name, layer)))
          return failure();
    if (!refusals.empty()) {
      // Each refusal is reported on the op of the first layer refused, as
      // mlir::emitError so that the op is not printed with it.
      for (auto &[id, r] : refusals) {
        InFlightDiagnostic diag = mlir::emitError(r.op->getLoc());
        diag << "tensor parallel size " << n << " does not divide the ";
        if (!r.detail.empty())
          diag << r.value << "-wide " << r.what << " " << r.detail;
        else if (r.what == "intermediate size")
          diag << r.what << " " << r.value;
        else
          diag << r.value << " " << r.what;
        diag << " of the " << r.group << " (";
        if (!r.key.empty()) {
          diag << r.key << " = "
               << cast<IntegerAttr>(config.get(r.key)).getInt();
        } else {
          diag << r.source;
          if (r.layers > 1)
            diag << ", and " << r.layers - 1 << " more layer"
                 << (r.layers > 2 ? "s" : "");
        }
        diag << ") of @" << model.getSymName() << "; use a size that divides "
             << r.divisor;
        if (!r.key.empty())
          noteConfigKey(diag, r.key);
      }
      return failure();
    }

    int64_t vocabSize = 0, paddedVocab = 0;
    planRoot(model, vocabSize, paddedVocab);

    // Parameter plans from the ops that use them.
    model.walk([&](Operation *op) {
      auto assign = [&](SymbolRefAttr ref, TpRole plan) {
        if (ParamOp param = ref ? lookupParam(op, ref) : ParamOp())
          planOf.try_emplace(param, plan);
      };
      if (auto linear = dyn_cast<LinearOp>(op)) {
        TpRole plan = colwise.contains(op)   ? TpRole::Colwise
                      : rowwise.contains(op) ? TpRole::Rowwise
                                             : TpRole::Replicated;
        assign(linear.getWeight(), plan);
        // A column-parallel bias is split with the output; a row-parallel
        // bias is added once after the reduction.
        assign(linear.getBiasAttr(),
               plan == TpRole::Colwise ? plan : TpRole::Replicated);
      } else if (isa<RmsNormOp, LayerNormOp>(op)) {
        TpRole plan =
            sequenceNorms.contains(op) ? TpRole::Sequence : TpRole::Replicated;
        if (auto norm = dyn_cast<RmsNormOp>(op))
          assign(norm.getWeight(), plan);
        if (auto norm = dyn_cast<LayerNormOp>(op)) {
          assign(norm.getWeight(), plan);
          assign(norm.getBiasAttr(), plan);
        }
      }
    });
    // A tie group is one tensor: its members must agree.
    for (TieOp tie : model.getBody()->getOps<TieOp>()) {
      std::optional<TpRole> first;
      ParamOp firstParam;
      for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>()) {
        auto param = cast<ParamOp>(SymbolTable::lookupSymbolIn(model, ref));
        TpRole plan = planOf.lookup_or(param, TpRole::Replicated);
        if (first && *first != plan) {
          InFlightDiagnostic diag =
              tie.emitError()
              << "apply-tp: tied parameter " << getDottedPath(param)
              << " would be " << stringifyTpRole(plan)
              << " but its tie group is " << stringifyTpRole(*first);
          diag.attachNote(param.getLoc())
              << getDottedPath(param) << " would be " << stringifyTpRole(plan);
          diag.attachNote(firstParam.getLoc())
              << getDottedPath(firstParam) << " is " << stringifyTpRole(*first);
          return diag;
        }
        first = plan;
        firstParam = param;
      }
    }

    // Nothing refused: write the plan.
    clearPlan(model);
    OpBuilder builder = OpBuilder::atBlockBegin(model.getBody());
    shard::GridOp::create(builder, model.getLoc(), kGridName,
                          ArrayRef<int64_t>{n});
    model->setAttr(kSizeAttr, b.getI64IntegerAttr(n));
    model->setAttr(kSequenceAttr, b.getBoolAttr(sequenceParallel));
    model->setAttr(kLossAttr, b.getBoolAttr(lossParallel));
    model.walk([&](ParamOp param) {
      param->setAttr(
          kPlanAttr,
          TpRoleAttr::get(b.getContext(),
                          planOf.lookup_or(param, TpRole::Replicated)));
      auto padded = paddedOf.find(param);
      if (padded != paddedOf.end())
        param->setAttr(kPaddedAttr, b.getI64IntegerAttr(padded->second));
    });
    // With the roles written, every op decides its split once.
    if (failed(recordTpShards(model, sequenceParallel, lossParallel)))
      return failure();
    // The traffic the record means, per token, as the lowering counts it.
    int64_t counts[3] = {}, bytes[3] = {};
    if (auto forward = dyn_cast_or_null<func::FuncOp>(
            SymbolTable::lookupSymbolIn(model, "forward")))
      for (const TpCollective &c :
           getTpTraffic(forward, n, Type(), /*stopAtLayers=*/false)
               .head.forward) {
        counts[int(c.kind)]++;
        bytes[int(c.kind)] += c.elementsPerToken * getElementBytes(c.element);
      }

    int64_t replicated = 0;
    model.walk([&](LinearOp op) {
      replicated +=
          !colwise.contains(op) && !rowwise.contains(op) && !vocab.contains(op);
    });
    InFlightDiagnostic remark = mlir::emitRemark(model->getLoc());
    remark << "TP " << n << ": " << colwise.size() << " column-parallel, "
           << rowwise.size() << " row-parallel, " << replicated
           << " replicated linears";
    if (vocabSize)
      remark << "; vocab " << vocabSize << " padded to " << paddedVocab;
    remark << "; sequence parallel " << (sequenceParallel ? "on" : "off")
           << ", loss parallel " << (lossParallel ? "on" : "off")
           << "; collectives per token:";
    for (auto [kind, name] :
         {std::pair{CollectiveKind::AllReduce, "all_reduce"},
          {CollectiveKind::AllGather, "all_gather"},
          {CollectiveKind::ReduceScatter, "reduce_scatter"}})
      if (counts[int(kind)])
        remark << " " << counts[int(kind)] << " " << name << " ("
               << bytes[int(kind)] << " bytes)";
    return success();
  }
};

} // namespace
} // namespace mlir::parc
