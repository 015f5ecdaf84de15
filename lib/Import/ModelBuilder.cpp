//===- ModelBuilder.cpp - parc IR for transformer families ----------------===//
//
// Module names, their order and their classes follow transformers' modeling
// code, so that dotted paths equal named_modules() of the instantiated model.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::parc;

namespace {

/// A forward under construction: the module that owns it and a builder at the
/// end of its body.
struct Forward {
  Operation *owner;
  OpBuilder builder;
  Block *entry;

  Value arg(unsigned i) { return entry->getArgument(i); }
  /// Where its ops are located: at the owner's path.
  Location loc() { return owner->getLoc(); }
};

class ModelBuilder {
public:
  ModelBuilder(MLIRContext *context, Location loc, Type dtype)
      : context(context), loc(loc), dtype(dtype), builder(context) {}

  OwningOpRef<mlir::ModuleOp> build(const ModelSpec &spec);

private:
  /// The location of a new module or parameter: its dotted path, in the
  /// config file (the model, the root, has none). Forward ops take the
  /// location of the module that runs them.
  Location locOf(Operation *op) {
    std::string path = getDottedPath(op);
    if (path.empty())
      return loc;
    return NameLoc::get(StringAttr::get(context, path), loc);
  }

  // Structure.
  NNModuleOp addModule(Operation *parent, StringRef name, StringRef className,
                       ModuleKind kind);
  ParamOp addParam(Operation *parent, StringRef name, ArrayRef<int64_t> shape);
  /// An nn.Linear `name`; with `wrapperClass`, the Linear is the child
  /// `linear` of a module of that class named `name` (Gemma 4's vision
  /// Gemma4ClippableLinear: `q_proj.linear.weight`), and the Linear is what
  /// is returned, for linear() to apply.
  NNModuleOp addLinear(Operation *parent, StringRef name, int64_t in,
                       int64_t out, bool bias, StringRef wrapperClass = "");
  NNModuleOp addNorm(Operation *parent, StringRef name, StringRef className,
                     int64_t size, NormKind kind);
  NNModuleOp addLeaf(Operation *parent, StringRef name, StringRef className) {
    return addModule(parent, name, className, ModuleKind::Leaf);
  }

  // Forward ops.
  Forward beginForward(Operation *owner, TypeRange inputs, TypeRange results);
  void endForward(Forward &fwd, ValueRange results);
  SymbolRefAttr paramRef(Forward &fwd, Operation *module, StringRef name);
  Value linear(Forward &fwd, Value input, NNModuleOp linear);
  Value norm(Forward &fwd, Value input, NNModuleOp norm, NormKind kind,
             double eps);
  Value call(Forward &fwd, Operation *callee, ValueRange args, Type result);

  // Transformer pieces.
  NNModuleOp buildTextModel(Operation *parent, StringRef name,
                            const TextModelSpec &spec, bool takesEmbeddings);
  NNModuleOp buildLayerList(Operation *parent, const StackSpec &stack);
  NNModuleOp buildLayer(Operation *parent, unsigned index,
                        const StackSpec &stack, const LayerSpec &layer);
  NNModuleOp buildAttention(Operation *parent, const StackSpec &stack,
                            const AttentionSpec &attention);
  NNModuleOp buildMlp(Operation *parent, const StackSpec &stack);
  NNModuleOp buildSiglipTower(Operation *parent, const VisionSpec &spec);
  NNModuleOp buildGemma4Tower(Operation *parent, const VisionSpec &spec);
  NNModuleOp buildProjector(Operation *parent, const VisionSpec &spec,
                            int64_t textHidden, NormKind textNorm);

  /// A (batch, sequence, width) activation; batch and sequence are dynamic.
  RankedTensorType activation(int64_t width,
                              int64_t tokens = ShapedType::kDynamic) {
    return RankedTensorType::get({ShapedType::kDynamic, tokens, width}, dtype);
  }
  RankedTensorType tokenIds() {
    return RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                                 builder.getI64Type());
  }
  /// The input of the vision tower: images for SigLIP, flattened patches for
  /// Gemma 4.
  RankedTensorType visionInput(const VisionSpec &spec) {
    if (spec.style == VisionSpec::Style::Siglip)
      return RankedTensorType::get(
          {ShapedType::kDynamic, spec.channels, spec.imageSize, spec.imageSize},
          dtype);
    return activation(spec.channels * spec.patchSize * spec.patchSize);
  }
  /// Patches per image; token dimensions of activations stay dynamic so that
  /// one layer forward serves every image size.
  int64_t visionTokens(const VisionSpec &spec) {
    if (spec.style != VisionSpec::Style::Siglip)
      return ShapedType::kDynamic;
    int64_t side = spec.imageSize / spec.patchSize;
    return side * side;
  }

  MLIRContext *context;
  /// The config file; ops without a dotted path (the model, its config and
  /// ties) are located here.
  Location loc;
  Type dtype;
  OpBuilder builder;
};

} // namespace

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

static Block *bodyOf(Operation *op) {
  if (auto model = dyn_cast<ModelOp>(op))
    return model.getBody();
  return cast<NNModuleOp>(op).getBody();
}

NNModuleOp ModelBuilder::addModule(Operation *parent, StringRef name,
                                   StringRef className, ModuleKind kind) {
  OpBuilder::InsertionGuard guard(builder);
  Block *body = bodyOf(parent);
  // Keep forwards last so that modules appear in registration order.
  auto it = body->end();
  if (!body->empty() && isa<func::FuncOp>(body->back()))
    it = Block::iterator(&body->back());
  builder.setInsertionPoint(body, it);
  auto module = NNModuleOp::create(builder, loc, name, className, kind);
  module->setLoc(locOf(module));
  return module;
}

ParamOp ModelBuilder::addParam(Operation *parent, StringRef name,
                               ArrayRef<int64_t> shape) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(bodyOf(parent));
  auto param =
      ParamOp::create(builder, loc, name, RankedTensorType::get(shape, dtype));
  param->setLoc(locOf(param));
  return param;
}

NNModuleOp ModelBuilder::addLinear(Operation *parent, StringRef name,
                                   int64_t in, int64_t out, bool bias,
                                   StringRef wrapperClass) {
  if (!wrapperClass.empty()) {
    parent = addModule(parent, name, wrapperClass, ModuleKind::Composite);
    name = "linear";
  }
  NNModuleOp linear = addLeaf(parent, name, "Linear");
  addParam(linear, "weight", {out, in});
  if (bias)
    addParam(linear, "bias", {out});
  return linear;
}

NNModuleOp ModelBuilder::addNorm(Operation *parent, StringRef name,
                                 StringRef className, int64_t size,
                                 NormKind kind) {
  NNModuleOp norm = addLeaf(parent, name, className);
  addParam(norm, "weight", {size});
  if (kind == NormKind::Layer)
    addParam(norm, "bias", {size});
  return norm;
}

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

Forward ModelBuilder::beginForward(Operation *owner, TypeRange inputs,
                                   TypeRange results) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(bodyOf(owner));
  auto func = func::FuncOp::create(builder, owner->getLoc(), "forward",
                                   builder.getFunctionType(inputs, results));
  Block *entry = func.addEntryBlock();
  OpBuilder body(context);
  body.setInsertionPointToEnd(entry);
  return Forward{owner, body, entry};
}

void ModelBuilder::endForward(Forward &fwd, ValueRange results) {
  func::ReturnOp::create(fwd.builder, fwd.loc(), results);
}

SymbolRefAttr ModelBuilder::paramRef(Forward &fwd, Operation *module,
                                     StringRef name) {
  Operation *param = SymbolTable::lookupSymbolIn(module, name);
  assert(param && "parameter was created with the module");
  return getRelativeRef(fwd.owner, param);
}

Value ModelBuilder::linear(Forward &fwd, Value input, NNModuleOp linear) {
  auto weight = cast<ParamOp>(SymbolTable::lookupSymbolIn(linear, "weight"));
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(inputType.getShape());
  shape.back() = weight.getTensorType().getDimSize(0);
  SymbolRefAttr bias;
  if (SymbolTable::lookupSymbolIn(linear, "bias"))
    bias = paramRef(fwd, linear, "bias");
  return LinearOp::create(fwd.builder, linear->getLoc(),
                          RankedTensorType::get(shape, dtype), input,
                          paramRef(fwd, linear, "weight"), bias);
}

Value ModelBuilder::norm(Forward &fwd, Value input, NNModuleOp norm,
                         NormKind kind, double eps) {
  FloatAttr epsAttr = fwd.builder.getF64FloatAttr(eps);
  if (kind == NormKind::Layer)
    return LayerNormOp::create(fwd.builder, norm->getLoc(), input.getType(),
                               input, paramRef(fwd, norm, "weight"),
                               paramRef(fwd, norm, "bias"), epsAttr);
  return RmsNormOp::create(
      fwd.builder, norm->getLoc(), input.getType(), input,
      paramRef(fwd, norm, "weight"), epsAttr,
      kind == NormKind::RmsUnitOffset ? fwd.builder.getUnitAttr() : UnitAttr());
}

Value ModelBuilder::call(Forward &fwd, Operation *callee, ValueRange args,
                         Type result) {
  return CallOp::create(fwd.builder, fwd.loc(), TypeRange{result},
                        getRelativeRef(fwd.owner, callee), args)
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Decoder and encoder stacks
//===----------------------------------------------------------------------===//

NNModuleOp ModelBuilder::buildAttention(Operation *parent,
                                        const StackSpec &stack,
                                        const AttentionSpec &spec) {
  int64_t hidden = stack.hidden;
  int64_t qWidth = spec.numHeads * spec.headDim;
  int64_t kvWidth = spec.numKvHeads * spec.headDim;
  NNModuleOp attn = addModule(parent, "self_attn", stack.attentionClass,
                              ModuleKind::Composite);
  NNModuleOp q, k, v, o, qNorm, kNorm;
  if (stack.layout == LayerLayout::Siglip) {
    k = addLinear(attn, "k_proj", hidden, kvWidth, spec.qkvBias,
                  stack.linearWrapperClass);
    v = addLinear(attn, "v_proj", hidden, kvWidth, spec.qkvBias,
                  stack.linearWrapperClass);
    q = addLinear(attn, "q_proj", hidden, qWidth, spec.qkvBias,
                  stack.linearWrapperClass);
    o = addLinear(attn, "out_proj", qWidth, hidden, spec.outBias,
                  stack.linearWrapperClass);
  } else {
    q = addLinear(attn, "q_proj", hidden, qWidth, spec.qkvBias,
                  stack.linearWrapperClass);
    k = addLinear(attn, "k_proj", hidden, kvWidth, spec.qkvBias,
                  stack.linearWrapperClass);
    if (!spec.kEqV)
      v = addLinear(attn, "v_proj", hidden, kvWidth, spec.qkvBias,
                    stack.linearWrapperClass);
    o = addLinear(attn, "o_proj", qWidth, hidden, spec.outBias,
                  stack.linearWrapperClass);
  }
  if (spec.qkNorm == QkNormKind::PerHead) {
    qNorm = addNorm(attn, "q_norm", stack.normClass, spec.headDim, stack.norm);
    kNorm = addNorm(attn, "k_norm", stack.normClass, spec.headDim, stack.norm);
  }
  // transformers registers the value norm as a module without a weight
  // (Gemma4RMSNorm(with_scale=False)), so named_modules lists it.
  if (spec.vNorm)
    addLeaf(attn, "v_norm", stack.normClass);

  Forward fwd = beginForward(attn, activation(hidden), activation(hidden));
  OpBuilder &b = fwd.builder;
  Value x = fwd.arg(0);
  Value query = linear(fwd, x, q);
  Value key = linear(fwd, x, k);
  Value value = spec.kEqV ? key : linear(fwd, x, v);
  if (spec.qkNorm == QkNormKind::PerHead) {
    query = norm(fwd, query, qNorm, stack.norm, stack.normEps);
    key = norm(fwd, key, kNorm, stack.norm, stack.normEps);
  }
  if (spec.vNorm)
    value = RmsNormalizeOp::create(b, fwd.loc(), value.getType(), value,
                                   b.getI64IntegerAttr(spec.headDim),
                                   b.getF64FloatAttr(stack.normEps));
  if (spec.ropeTheta) {
    auto rope = [&](Value input) -> Value {
      return RopeOp::create(
          b, fwd.loc(), input.getType(), input,
          b.getI64IntegerAttr(spec.headDim), b.getF64FloatAttr(*spec.ropeTheta),
          spec.ropeScaling,
          spec.ropeRotatedPairs ? b.getI64IntegerAttr(*spec.ropeRotatedPairs)
                                : IntegerAttr());
    };
    query = rope(query);
    key = rope(key);
  }
  auto attention = AttentionOp::create(
      b, fwd.loc(), activation(qWidth), query, key, value,
      b.getI64IntegerAttr(spec.numHeads), b.getI64IntegerAttr(spec.numKvHeads),
      b.getI64IntegerAttr(spec.headDim), b.getF64FloatAttr(spec.scale),
      spec.causal ? b.getUnitAttr() : UnitAttr(),
      spec.slidingWindow ? b.getI64IntegerAttr(*spec.slidingWindow)
                         : IntegerAttr(),
      spec.logitSoftcap ? b.getF64FloatAttr(*spec.logitSoftcap) : FloatAttr(),
      spec.kEqV ? b.getUnitAttr() : UnitAttr());
  endForward(fwd, linear(fwd, attention, o));
  return attn;
}

NNModuleOp ModelBuilder::buildMlp(Operation *parent, const StackSpec &stack) {
  NNModuleOp mlp =
      addModule(parent, "mlp", stack.mlpClass, ModuleKind::Composite);
  int64_t hidden = stack.hidden, inner = stack.intermediate;
  auto act = ActivationKindAttr::get(context, stack.activation);
  if (stack.layout == LayerLayout::Siglip) {
    NNModuleOp actFn = addLeaf(mlp, "activation_fn", stack.activationClass);
    NNModuleOp fc1 = addLinear(mlp, "fc1", hidden, inner, stack.mlpBias,
                               stack.linearWrapperClass);
    NNModuleOp fc2 = addLinear(mlp, "fc2", inner, hidden, stack.mlpBias,
                               stack.linearWrapperClass);
    Forward fwd = beginForward(mlp, activation(hidden), activation(hidden));
    Value h = linear(fwd, fwd.arg(0), fc1);
    h = ActivationOp::create(fwd.builder, actFn->getLoc(), h.getType(), act, h);
    endForward(fwd, linear(fwd, h, fc2));
    return mlp;
  }
  NNModuleOp gate = addLinear(mlp, "gate_proj", hidden, inner, stack.mlpBias,
                              stack.linearWrapperClass);
  NNModuleOp up = addLinear(mlp, "up_proj", hidden, inner, stack.mlpBias,
                            stack.linearWrapperClass);
  NNModuleOp down = addLinear(mlp, "down_proj", inner, hidden, stack.mlpBias,
                              stack.linearWrapperClass);
  NNModuleOp actFn = addLeaf(mlp, "act_fn", stack.activationClass);
  Forward fwd = beginForward(mlp, activation(hidden), activation(hidden));
  Value g = linear(fwd, fwd.arg(0), gate);
  g = ActivationOp::create(fwd.builder, actFn->getLoc(), g.getType(), act, g);
  Value u = linear(fwd, fwd.arg(0), up);
  Value h = MulOp::create(fwd.builder, fwd.loc(), g, u);
  endForward(fwd, linear(fwd, h, down));
  return mlp;
}

NNModuleOp ModelBuilder::buildLayer(Operation *parent, unsigned index,
                                    const StackSpec &stack,
                                    const LayerSpec &layer) {
  NNModuleOp module = addModule(parent, std::to_string(index), stack.layerClass,
                                ModuleKind::Composite);
  if (!layer.layerType.empty())
    module->setAttr("layer_type", builder.getStringAttr(layer.layerType));
  int64_t hidden = stack.hidden;
  auto addStackNorm = [&](StringRef name) {
    return addNorm(module, name, stack.normClass, hidden, stack.norm);
  };

  NNModuleOp inputNorm, attn, postAttnNorm, mlp, preFfnNorm, postFfnNorm;
  switch (stack.layout) {
  case LayerLayout::Siglip:
    inputNorm = addStackNorm("layer_norm1");
    attn = buildAttention(module, stack, layer.attention);
    preFfnNorm = addStackNorm("layer_norm2");
    mlp = buildMlp(module, stack);
    break;
  case LayerLayout::PreNorm:
  case LayerLayout::Sandwich:
    attn = buildAttention(module, stack, layer.attention);
    mlp = buildMlp(module, stack);
    inputNorm = addStackNorm("input_layernorm");
    if (stack.layout == LayerLayout::PreNorm) {
      // Llama-style layers normalise the MLP input with
      // post_attention_layernorm.
      preFfnNorm = addStackNorm("post_attention_layernorm");
      break;
    }
    postAttnNorm = addStackNorm("post_attention_layernorm");
    preFfnNorm = addStackNorm("pre_feedforward_layernorm");
    postFfnNorm = addStackNorm("post_feedforward_layernorm");
    break;
  }

  Forward fwd = beginForward(module, activation(hidden), activation(hidden));
  OpBuilder &b = fwd.builder;
  Value residual = fwd.arg(0);
  Value h = norm(fwd, residual, inputNorm, stack.norm, stack.normEps);
  h = call(fwd, attn, h, activation(hidden));
  if (postAttnNorm)
    h = norm(fwd, h, postAttnNorm, stack.norm, stack.normEps);
  residual = AddOp::create(b, fwd.loc(), residual, h);
  h = norm(fwd, residual, preFfnNorm, stack.norm, stack.normEps);
  h = call(fwd, mlp, h, activation(hidden));
  if (postFfnNorm)
    h = norm(fwd, h, postFfnNorm, stack.norm, stack.normEps);
  endForward(fwd, Value(AddOp::create(b, fwd.loc(), residual, h)));
  return module;
}

NNModuleOp ModelBuilder::buildLayerList(Operation *parent,
                                        const StackSpec &stack) {
  NNModuleOp layers =
      addModule(parent, "layers", "ModuleList", ModuleKind::List);
  for (auto [index, layer] : llvm::enumerate(stack.layers))
    buildLayer(layers, index, stack, layer);
  return layers;
}

/// Emits the calls of every layer of `layers` in order.
static Value callLayers(Forward &fwd, NNModuleOp layers, Value x) {
  for (NNModuleOp layer : layers.getBody()->getOps<NNModuleOp>())
    x = CallOp::create(fwd.builder, fwd.loc(), TypeRange{x.getType()},
                       getRelativeRef(fwd.owner, layer), x)
            .getResult(0);
  return x;
}

NNModuleOp ModelBuilder::buildTextModel(Operation *parent, StringRef name,
                                        const TextModelSpec &spec,
                                        bool takesEmbeddings) {
  const StackSpec &stack = spec.stack;
  NNModuleOp model =
      addModule(parent, name, spec.modelClass, ModuleKind::Composite);
  NNModuleOp embed = addLeaf(model, "embed_tokens", spec.embeddingClass);
  addParam(embed, "weight", {spec.vocab, stack.hidden});
  NNModuleOp layers = buildLayerList(model, stack);
  NNModuleOp finalNorm =
      addNorm(model, "norm", stack.normClass, stack.hidden, stack.norm);
  addLeaf(model, "rotary_emb", spec.rotaryClass);

  Type input = takesEmbeddings ? Type(activation(stack.hidden)) : tokenIds();
  Forward fwd = beginForward(model, input, activation(stack.hidden));
  Value x = fwd.arg(0);
  if (!takesEmbeddings)
    x = EmbeddingOp::create(
        fwd.builder, embed->getLoc(), activation(stack.hidden), x,
        paramRef(fwd, embed, "weight"),
        spec.embedScale ? fwd.builder.getF64FloatAttr(*spec.embedScale)
                        : FloatAttr());
  x = callLayers(fwd, layers, x);
  endForward(fwd, norm(fwd, x, finalNorm, stack.norm, stack.normEps));
  return model;
}

//===----------------------------------------------------------------------===//
// Vision towers and projectors
//===----------------------------------------------------------------------===//

NNModuleOp ModelBuilder::buildSiglipTower(Operation *parent,
                                          const VisionSpec &spec) {
  const StackSpec &stack = spec.stack;
  int64_t hidden = stack.hidden, tokens = visionTokens(spec);
  // SigLIP learns one position per patch of a fixed-size image.
  NNModuleOp tower =
      addModule(parent, "vision_tower", spec.towerClass, ModuleKind::Composite);
  NNModuleOp transformer = addModule(
      tower, "vision_model", "SiglipVisionTransformer", ModuleKind::Composite);
  NNModuleOp embeddings =
      addModule(transformer, "embeddings", "SiglipVisionEmbeddings",
                ModuleKind::Composite);
  NNModuleOp patch = addLeaf(embeddings, "patch_embedding", "Conv2d");
  addParam(patch, "weight",
           {hidden, spec.channels, spec.patchSize, spec.patchSize});
  addParam(patch, "bias", {hidden});
  NNModuleOp positions = addLeaf(embeddings, "position_embedding", "Embedding");
  addParam(positions, "weight", {tokens, hidden});
  NNModuleOp encoder =
      addModule(transformer, "encoder", "SiglipEncoder", ModuleKind::Composite);
  NNModuleOp layers = buildLayerList(encoder, stack);
  NNModuleOp postNorm = addNorm(transformer, "post_layernorm", "LayerNorm",
                                hidden, NormKind::Layer);

  Forward embedFwd =
      beginForward(embeddings, visionInput(spec), activation(hidden));
  Value x = PatchEmbeddingOp::create(
      embedFwd.builder, patch->getLoc(), activation(hidden), embedFwd.arg(0),
      paramRef(embedFwd, patch, "weight"), paramRef(embedFwd, patch, "bias"));
  endForward(embedFwd, Value(PositionEmbeddingOp::create(
                           embedFwd.builder, positions->getLoc(), x.getType(),
                           x, paramRef(embedFwd, positions, "weight"))));

  Forward encoderFwd =
      beginForward(encoder, activation(hidden), activation(hidden));
  endForward(encoderFwd, callLayers(encoderFwd, layers, encoderFwd.arg(0)));

  Forward vitFwd =
      beginForward(transformer, visionInput(spec), activation(hidden));
  x = call(vitFwd, embeddings, vitFwd.arg(0), activation(hidden));
  x = call(vitFwd, encoder, x, activation(hidden));
  endForward(vitFwd, norm(vitFwd, x, postNorm, NormKind::Layer, stack.normEps));

  Forward towerFwd = beginForward(tower, visionInput(spec), activation(hidden));
  endForward(towerFwd,
             call(towerFwd, transformer, towerFwd.arg(0), activation(hidden)));
  return tower;
}

NNModuleOp ModelBuilder::buildGemma4Tower(Operation *parent,
                                          const VisionSpec &spec) {
  const StackSpec &stack = spec.stack;
  int64_t hidden = stack.hidden;
  NNModuleOp tower =
      addModule(parent, "vision_tower", spec.towerClass, ModuleKind::Composite);
  NNModuleOp embedder =
      addModule(tower, "patch_embedder", "Gemma4VisionPatchEmbedder",
                ModuleKind::Composite);
  NNModuleOp inputProj =
      addLinear(embedder, "input_proj",
                spec.channels * spec.patchSize * spec.patchSize, hidden,
                /*bias=*/false);
  // One table per image axis (x, y), a parameter of the embedder itself.
  addParam(embedder, "position_embedding_table",
           {2, spec.numPositions, hidden});
  NNModuleOp encoder =
      addModule(tower, "encoder", "Gemma4VisionEncoder", ModuleKind::Composite);
  NNModuleOp layers = buildLayerList(encoder, stack);
  NNModuleOp pooler = addLeaf(tower, "pooler", "Gemma4VisionPooler");

  Forward embedFwd =
      beginForward(embedder, visionInput(spec), activation(hidden));
  Value x = linear(embedFwd, embedFwd.arg(0), inputProj);
  endForward(embedFwd,
             Value(PositionEmbeddingOp::create(
                 embedFwd.builder, embedder->getLoc(), x.getType(), x,
                 paramRef(embedFwd, embedder, "position_embedding_table"))));

  Forward encoderFwd =
      beginForward(encoder, activation(hidden), activation(hidden));
  endForward(encoderFwd, callLayers(encoderFwd, layers, encoderFwd.arg(0)));

  Forward towerFwd = beginForward(tower, visionInput(spec), activation(hidden));
  x = call(towerFwd, embedder, towerFwd.arg(0), activation(hidden));
  x = call(towerFwd, encoder, x, activation(hidden));
  x = AvgPoolTokensOp::create(
      towerFwd.builder, pooler->getLoc(), activation(hidden), x,
      towerFwd.builder.getI64IntegerAttr(spec.poolKernel));
  endForward(towerFwd, x);
  return tower;
}

NNModuleOp ModelBuilder::buildProjector(Operation *parent,
                                        const VisionSpec &spec,
                                        int64_t textHidden, NormKind textNorm) {
  int64_t visionHidden = spec.stack.hidden;
  NNModuleOp projector = addModule(parent, spec.projectorName,
                                   spec.projectorClass, ModuleKind::Composite);
  if (spec.style == VisionSpec::Style::Gemma4) {
    NNModuleOp proj = addLinear(projector, "embedding_projection", visionHidden,
                                textHidden, /*bias=*/false);
    Forward fwd = beginForward(projector, activation(visionHidden),
                               activation(textHidden));
    endForward(fwd, linear(fwd, fwd.arg(0), proj));
    return projector;
  }
  // Gemma 3: pool the patch grid, normalise, project with a raw weight.
  addParam(projector, "mm_input_projection_weight", {visionHidden, textHidden});
  NNModuleOp softNorm = addNorm(projector, "mm_soft_emb_norm", "Gemma3RMSNorm",
                                visionHidden, textNorm);
  NNModuleOp avgPool = addLeaf(projector, "avg_pool", "AvgPool2d");
  Forward fwd =
      beginForward(projector, activation(visionHidden), activation(textHidden));
  Value x = AvgPoolTokensOp::create(
      fwd.builder, avgPool->getLoc(), activation(visionHidden), fwd.arg(0),
      fwd.builder.getI64IntegerAttr(spec.poolKernel));
  x = norm(fwd, x, softNorm, textNorm, spec.stack.normEps);
  x = MatmulOp::create(fwd.builder, fwd.loc(), activation(textHidden), x,
                       paramRef(fwd, projector, "mm_input_projection_weight"));
  endForward(fwd, x);
  return projector;
}

//===----------------------------------------------------------------------===//
// The whole model
//===----------------------------------------------------------------------===//

OwningOpRef<mlir::ModuleOp> ModelBuilder::build(const ModelSpec &spec) {
  OwningOpRef<mlir::ModuleOp> top = mlir::ModuleOp::create(loc);
  builder.setInsertionPointToEnd(top->getBody());
  const TextModelSpec &text = spec.text;
  int64_t hidden = text.stack.hidden;
  auto model =
      ModelOp::create(builder, loc, spec.symbolName,
                      spec.vision ? spec.wrapperClass : text.causalLMClass);
  {
    SmallVector<StringRef> defaulted(spec.defaultedKeys.begin(),
                                     spec.defaultedKeys.end());
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(model.getBody());
    HFConfigOp::create(builder, loc, spec.source, spec.config,
                       builder.getStrArrayAttr(defaulted));
  }

  Operation *embedOwner;
  NNModuleOp inner;
  if (spec.vision) {
    const VisionSpec &vision = *spec.vision;
    inner = addModule(model, "model", spec.wrapperModelClass,
                      ModuleKind::Composite);
    NNModuleOp tower = vision.style == VisionSpec::Style::Siglip
                           ? buildSiglipTower(inner, vision)
                           : buildGemma4Tower(inner, vision);
    // transformers 5 registers language_model after the vision modules.
    NNModuleOp projector =
        buildProjector(inner, vision, hidden, text.stack.norm);
    NNModuleOp language =
        buildTextModel(inner, "language_model", text, /*takesEmbeddings=*/true);
    embedOwner = SymbolTable::lookupSymbolIn(language, "embed_tokens");

    Forward fwd = beginForward(inner, {tokenIds(), visionInput(vision)},
                               activation(hidden));
    Value embeds = EmbeddingOp::create(
        fwd.builder, embedOwner->getLoc(), activation(hidden), fwd.arg(0),
        paramRef(fwd, embedOwner, "weight"),
        text.embedScale ? fwd.builder.getF64FloatAttr(*text.embedScale)
                        : FloatAttr());
    Value image = call(fwd, tower, fwd.arg(1), activation(vision.stack.hidden));
    image = call(fwd, projector, image, activation(hidden));
    Value merged =
        MergeImageFeaturesOp::create(fwd.builder, fwd.loc(), embeds, image);
    endForward(fwd, call(fwd, language, merged, activation(hidden)));
  } else {
    inner = buildTextModel(model, "model", text, /*takesEmbeddings=*/false);
    embedOwner = SymbolTable::lookupSymbolIn(inner, "embed_tokens");
  }
  NNModuleOp lmHead =
      addLinear(model, "lm_head", hidden, text.vocab, /*bias=*/false);

  SmallVector<Type> inputs{tokenIds()};
  if (spec.vision)
    inputs.push_back(visionInput(*spec.vision));
  inputs.push_back(tokenIds());
  auto lossType = RankedTensorType::get({}, builder.getF32Type());
  Forward fwd = beginForward(model, inputs, lossType);
  SmallVector<Value> modelArgs(fwd.entry->getArguments().drop_back());
  Value h =
      CallOp::create(fwd.builder, fwd.loc(), TypeRange{activation(hidden)},
                     getRelativeRef(model, inner), modelArgs)
          .getResult(0);
  Value logits = linear(fwd, h, lmHead);
  if (text.finalSoftcap)
    logits = SoftcapOp::create(fwd.builder, fwd.loc(), logits.getType(), logits,
                               fwd.builder.getF64FloatAttr(*text.finalSoftcap));
  endForward(fwd, Value(CrossEntropyOp::create(
                      fwd.builder, fwd.loc(), lossType, logits,
                      fwd.entry->getArguments().back())));

  if (text.tieEmbeddings) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(model.getBody());
    Operation *embedWeight = SymbolTable::lookupSymbolIn(embedOwner, "weight");
    Operation *headWeight = SymbolTable::lookupSymbolIn(lmHead, "weight");
    TieOp::create(builder, loc,
                  builder.getArrayAttr({getRelativeRef(model, embedWeight),
                                        getRelativeRef(model, headWeight)}));
  }
  return top;
}

OwningOpRef<mlir::ModuleOp> mlir::parc::buildModel(MLIRContext *context,
                                                   const ModelSpec &spec,
                                                   Location loc) {
  return ModelBuilder(context, loc, spec.dtype).build(spec);
}
