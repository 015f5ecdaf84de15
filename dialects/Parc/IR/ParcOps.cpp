//===- ParcOps.cpp - parc dialect operations and verifiers ----------------===//
//
// Verifiers check what a model importer or a hand-written model can get wrong:
// shapes that do not compose, references that resolve to nothing, ties
// between tensors of different shapes, containers that hold computation.
//
//===----------------------------------------------------------------------===//

#include "Parc/IR/ParcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::parc;

#include "Parc/IR/ParcEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Two extents agree when equal or when either is not known until run time.
static bool extentsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static RankedTensorType rankedType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// Checks that the leading `count` dimensions of `a` and `b` agree.
static LogicalResult verifyLeadingDims(Operation *op, RankedTensorType a,
                                       RankedTensorType b, int64_t count,
                                       StringRef what) {
  for (int64_t i = 0; i < count; ++i)
    if (!extentsAgree(a.getDimSize(i), b.getDimSize(i)))
      return op->emitOpError() << what << " disagree in dimension " << i << ": "
                               << a << " vs " << b;
  return success();
}

/// Resolves a parameter reference relative to the module holding `user`.
static FailureOr<ParamOp> resolveParam(Operation *user, SymbolRefAttr ref,
                                       SymbolTableCollection &tables,
                                       StringRef role) {
  auto param = tables.lookupNearestSymbolFrom<ParamOp>(user, ref);
  if (!param)
    return user->emitOpError()
           << role << " " << ref
           << " does not name a parc.param of the enclosing module";
  return param;
}

static FailureOr<RankedTensorType>
resolveParamType(Operation *user, SymbolRefAttr ref,
                 SymbolTableCollection &tables, StringRef role,
                 int64_t expectedRank) {
  FailureOr<ParamOp> param = resolveParam(user, ref, tables, role);
  if (failed(param))
    return failure();
  RankedTensorType type = param->getTensorType();
  if (type.getRank() != expectedRank)
    return user->emitOpError() << role << " " << ref << " must have rank "
                               << expectedRank << ", got " << type;
  return type;
}

static LogicalResult expectRank(Operation *op, RankedTensorType type,
                                int64_t rank, StringRef what) {
  if (type.getRank() != rank)
    return op->emitOpError()
           << what << " must have rank " << rank << ", got " << type;
  return success();
}

/// Checks an optional bias of `extent` elements.
static LogicalResult verifyBias(Operation *op, SymbolRefAttr bias,
                                int64_t extent, SymbolTableCollection &tables) {
  if (!bias)
    return success();
  FailureOr<RankedTensorType> type =
      resolveParamType(op, bias, tables, "bias", /*expectedRank=*/1);
  if (failed(type))
    return failure();
  if (type->getDimSize(0) != extent)
    return op->emitOpError()
           << "bias " << bias << " has " << type->getDimSize(0)
           << " elements, expected " << extent;
  return success();
}

//===----------------------------------------------------------------------===//
// Paths
//===----------------------------------------------------------------------===//

std::string mlir::parc::getDottedPath(Operation *op) {
  SmallVector<StringRef> names;
  for (Operation *cur = op; cur && !isa<ModelOp>(cur); cur = cur->getParentOp())
    if (auto name =
            cur->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      names.push_back(name.getValue());
  std::reverse(names.begin(), names.end());
  return llvm::join(names, ".");
}

Operation *mlir::parc::lookupDottedPath(ModelOp model, StringRef path) {
  Operation *cur = model;
  if (path.empty())
    return cur;
  SmallVector<StringRef> parts;
  path.split(parts, '.');
  for (StringRef part : parts) {
    if (!cur->hasTrait<OpTrait::SymbolTable>())
      return nullptr;
    cur = SymbolTable::lookupSymbolIn(cur, part);
    if (!cur)
      return nullptr;
  }
  return cur;
}

SymbolRefAttr mlir::parc::getRelativeRef(Operation *from, Operation *target) {
  SmallVector<StringAttr> names;
  Operation *cur = target;
  for (; cur && cur != from; cur = cur->getParentOp()) {
    auto name =
        cur->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!name)
      return nullptr;
    names.push_back(name);
  }
  if (!cur || names.empty())
    return nullptr;
  std::reverse(names.begin(), names.end());
  SmallVector<FlatSymbolRefAttr> nested;
  for (StringAttr name : llvm::drop_begin(names))
    nested.push_back(FlatSymbolRefAttr::get(name));
  return SymbolRefAttr::get(names.front(), nested);
}

//===----------------------------------------------------------------------===//
// ModelOp / NNModuleOp
//===----------------------------------------------------------------------===//

void ModelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    StringRef className) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getClassNameAttrName(state.name),
                     builder.getStringAttr(className));
  state.addRegion()->emplaceBlock();
}

void NNModuleOp::build(OpBuilder &builder, OperationState &state,
                       StringRef name, StringRef className, ModuleKind kind) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getClassNameAttrName(state.name),
                     builder.getStringAttr(className));
  state.addAttribute(getKindAttrName(state.name),
                     ModuleKindAttr::get(builder.getContext(), kind));
  state.addRegion()->emplaceBlock();
}

func::FuncOp NNModuleOp::getForward() {
  return dyn_cast_or_null<func::FuncOp>(
      mlir::SymbolTable::lookupSymbolIn(getOperation(), "forward"));
}

/// Only modules, parameters and a forward may live in a module body.
static LogicalResult verifyModuleBody(Operation *op, Block &body,
                                      bool allowTies) {
  for (Operation &child : body) {
    if (isa<NNModuleOp, ParamOp>(child))
      continue;
    // Ties, grids, FSDP units and programs describe the whole model.
    if (allowTies && (isa<TieOp, FsdpUnitOp, ProgramOp, HFConfigOp>(child) ||
                      child.getName().getStringRef() == "shard.grid"))
      continue;
    if (auto func = dyn_cast<func::FuncOp>(child)) {
      if (func.getSymName() != "forward")
        return func.emitOpError() << "in a module must be named @forward, got @"
                                  << func.getSymName();
      continue;
    }
    return child.emitOpError()
           << "is not allowed in the body of '" << op->getName() << "'";
  }
  return success();
}

LogicalResult ModelOp::verifyRegions() {
  if (failed(verifyModuleBody(*this, *getBody(), /*allowTies=*/true)))
    return failure();
  auto configs = getBody()->getOps<HFConfigOp>();
  if (!configs.empty() && std::next(configs.begin()) != configs.end())
    return (*std::next(configs.begin())).emitOpError()
           << "is the second parc.hf_config of @" << getSymName();
  // A parameter may belong to at most one tie group.
  llvm::SmallPtrSet<Attribute, 8> tied;
  for (auto tie : getBody()->getOps<TieOp>())
    for (Attribute ref : tie.getParams())
      if (!tied.insert(ref).second)
        return tie.emitOpError()
               << ref << " appears in more than one tie group";
  return success();
}

LogicalResult NNModuleOp::verifyRegions() {
  if (failed(verifyModuleBody(*this, *getBody(), /*allowTies=*/false)))
    return failure();
  auto children = getBody()->getOps<NNModuleOp>();
  if (getKind() == ModuleKind::Leaf && !children.empty())
    return emitOpError() << "of kind 'leaf' has child module @"
                         << (*children.begin()).getSymName();
  if (!isContainer())
    return success();
  for (Operation &child : *getBody())
    if (!isa<NNModuleOp>(child))
      return emitOpError() << "is a container ("
                           << stringifyModuleKind(getKind())
                           << ") and may hold only modules, found '"
                           << child.getName() << "'";
  if (getKind() == ModuleKind::Dict)
    return success();
  // ModuleList and Sequential index their children 0..n-1.
  unsigned index = 0;
  for (NNModuleOp child : children) {
    if (child.getSymName() != std::to_string(index))
      return child.emitOpError() << "in a " << stringifyModuleKind(getKind())
                                 << " container must be named @\"" << index
                                 << "\", got @" << child.getSymName();
    ++index;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TieOp / CallOp
//===----------------------------------------------------------------------===//

LogicalResult TieOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (getParams().size() < 2)
    return emitOpError() << "needs at least two parameters, got "
                         << getParams().size();
  auto model = (*this)->getParentOfType<ModelOp>();
  Type firstType;
  SymbolRefAttr firstRef;
  for (auto ref : getParams().getAsRange<SymbolRefAttr>()) {
    auto param = dyn_cast_or_null<ParamOp>(tables.lookupSymbolIn(model, ref));
    if (!param)
      return emitOpError() << ref << " does not name a parc.param";
    if (!firstType) {
      firstType = param.getType();
      firstRef = ref;
      continue;
    }
    if (param.getType() != firstType)
      return emitOpError() << "ties parameters of different types: " << firstRef
                           << " is " << firstType << " but " << ref << " is "
                           << param.getType();
  }
  return success();
}

CallInterfaceCallable CallOp::getCallableForCallee() { return getCalleeAttr(); }

void CallOp::setCalleeFromCallable(CallInterfaceCallable callee) {
  setCalleeAttr(cast<SymbolRefAttr>(callee));
}

Operation::operand_range CallOp::getArgOperands() { return getArgs(); }

MutableOperandRange CallOp::getArgOperandsMutable() { return getArgsMutable(); }

/// The callee names a module; what runs is that module's forward.
Operation *CallOp::resolveCallableInTable(SymbolTableCollection *tables) {
  auto callee =
      tables ? tables->lookupNearestSymbolFrom<NNModuleOp>(*this, getCallee())
             : SymbolTable::lookupNearestSymbolFrom<NNModuleOp>(*this,
                                                                getCallee());
  return callee ? callee.getForward() : nullptr;
}

Operation *CallOp::resolveCallable() { return resolveCallableInTable(nullptr); }

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto callee = tables.lookupNearestSymbolFrom<NNModuleOp>(*this, getCallee());
  if (!callee)
    return emitOpError() << getCallee() << " does not name a parc.module";
  func::FuncOp forward = callee.getForward();
  if (!forward)
    return emitOpError() << "callee " << getCallee() << " ("
                         << callee.getClassName() << ") has no @forward";
  FunctionType type = forward.getFunctionType();
  if (!llvm::equal(type.getInputs(), getArgs().getTypes()) ||
      !llvm::equal(type.getResults(), getResults().getTypes()))
    return emitOpError() << "type does not match the forward of " << getCallee()
                         << ": " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Parameter users
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<RankedTensorType> weight =
      resolveParamType(*this, getWeight(), tables, "weight", 2);
  if (failed(weight))
    return failure();
  auto ids = rankedType(getIds());
  auto result = rankedType(getResult());
  if (failed(expectRank(*this, result, ids.getRank() + 1, "result")) ||
      failed(verifyLeadingDims(*this, ids, result, ids.getRank(),
                               "ids and result")))
    return failure();
  if (result.getShape().back() != weight->getDimSize(1))
    return emitOpError() << "result width " << result.getShape().back()
                         << " does not match embedding width "
                         << weight->getDimSize(1);
  return success();
}

LogicalResult LinearOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<RankedTensorType> weight =
      resolveParamType(*this, getWeight(), tables, "weight", 2);
  if (failed(weight))
    return failure();
  auto input = rankedType(getInput());
  auto result = rankedType(getResult());
  if (failed(expectRank(*this, result, input.getRank(), "result")) ||
      failed(verifyLeadingDims(*this, input, result, input.getRank() - 1,
                               "input and result")))
    return failure();
  if (!extentsAgree(input.getShape().back(), weight->getDimSize(1)))
    return emitOpError() << "input features " << input.getShape().back()
                         << " do not match weight " << getWeight() << " of "
                         << *weight;
  if (result.getShape().back() != weight->getDimSize(0))
    return emitOpError() << "result features " << result.getShape().back()
                         << " do not match weight " << getWeight() << " of "
                         << *weight;
  return verifyBias(*this, getBiasAttr(), weight->getDimSize(0), tables);
}

LogicalResult MatmulOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<RankedTensorType> weight =
      resolveParamType(*this, getWeight(), tables, "weight", 2);
  if (failed(weight))
    return failure();
  auto input = rankedType(getInput());
  auto result = rankedType(getResult());
  if (failed(expectRank(*this, result, input.getRank(), "result")) ||
      failed(verifyLeadingDims(*this, input, result, input.getRank() - 1,
                               "input and result")))
    return failure();
  if (!extentsAgree(input.getShape().back(), weight->getDimSize(0)) ||
      result.getShape().back() != weight->getDimSize(1))
    return emitOpError() << "cannot multiply " << input << " by weight "
                         << *weight << " into " << result;
  return success();
}

LogicalResult
PatchEmbeddingOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<RankedTensorType> weight =
      resolveParamType(*this, getWeight(), tables, "weight", 4);
  if (failed(weight))
    return failure();
  auto pixels = rankedType(getPixels());
  auto result = rankedType(getResult());
  if (failed(expectRank(*this, pixels, 4, "pixels")) ||
      failed(expectRank(*this, result, 3, "result")))
    return failure();
  int64_t kernel = weight->getDimSize(2);
  if (weight->getDimSize(3) != kernel)
    return emitOpError() << "patch kernel must be square, got " << *weight;
  if (!extentsAgree(pixels.getDimSize(1), weight->getDimSize(1)))
    return emitOpError() << "pixels have " << pixels.getDimSize(1)
                         << " channels, weight expects "
                         << weight->getDimSize(1);
  if (result.getDimSize(2) != weight->getDimSize(0))
    return emitOpError() << "result width " << result.getDimSize(2)
                         << " does not match " << weight->getDimSize(0)
                         << " output channels";
  int64_t height = pixels.getDimSize(2), width = pixels.getDimSize(3);
  if (!ShapedType::isDynamic(height) && !ShapedType::isDynamic(width)) {
    if (height % kernel || width % kernel)
      return emitOpError() << "image " << height << "x" << width
                           << " is not a multiple of patch size " << kernel;
    if (!extentsAgree(result.getDimSize(1),
                      (height / kernel) * (width / kernel)))
      return emitOpError() << "expected "
                           << (height / kernel) * (width / kernel)
                           << " patches, result has " << result.getDimSize(1);
  }
  return verifyBias(*this, getBiasAttr(), weight->getDimSize(0), tables);
}

LogicalResult
PositionEmbeddingOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<ParamOp> param = resolveParam(*this, getWeight(), tables, "weight");
  if (failed(param))
    return failure();
  // [positions, width] (SigLIP), or one table per image axis
  // [axes, positions, width] (Gemma 4's patch grid).
  RankedTensorType weight = param->getTensorType();
  if (weight.getRank() != 2 && weight.getRank() != 3)
    return emitOpError() << "weight " << getWeight()
                         << " must have rank 2 or 3, got " << weight;
  int64_t axes = getTableAxes(weight);
  int64_t positions = weight.getDimSize(weight.getRank() - 2);
  auto input = rankedType(getInput());
  if (failed(expectRank(*this, input, 3, "input")))
    return failure();
  if (!extentsAgree(input.getDimSize(2),
                    weight.getDimSize(weight.getRank() - 1)))
    return emitOpError() << "input width " << input.getDimSize(2)
                         << " does not match position table " << weight;
  // A grid of `positions` per axis holds at most positions^axes patches.
  if (!ShapedType::isDynamic(input.getDimSize(1)) && axes == 1 &&
      input.getDimSize(1) > positions)
    return emitOpError() << input.getDimSize(1) << " positions exceed table of "
                         << positions;
  return success();
}

int64_t PositionEmbeddingOp::getTableAxes(RankedTensorType table) {
  return table.getRank() == 3 ? table.getDimSize(0) : 1;
}

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  // The dtypes a step computes, stores and communicates in (plan.bin, the
  // runtime's kernels, the byte counts) are floating point of 16 to 64 bits.
  Type element = type.getElementType();
  if (!element.isF16() && !element.isBF16() && !element.isF32() &&
      !element.isF64())
    return emitOpError() << "has element type " << element
                         << "; a parameter is f16, bf16, f32 or f64";
  int64_t elements = 1;
  for (auto [index, dim] : llvm::enumerate(type.getShape())) {
    if (dim < 1 || dim > kMaxDim)
      return emitOpError() << "dimension " << index << " is " << dim
                           << "; a parameter's dimensions are in [1, "
                           << kMaxDim << "]";
    if (llvm::MulOverflow(elements, dim, elements) || elements > kMaxElements)
      return emitOpError() << "has more than " << kMaxElements << " elements";
  }
  return success();
}

/// A per-group norm needs its groups to tile the input's last dimension.
static LogicalResult verifyGroupsTile(Operation *op, Value input, int64_t group,
                                      StringRef what) {
  int64_t width = rankedType(input).getShape().back();
  if (!ShapedType::isDynamic(width) && width % group != 0)
    return op->emitOpError()
           << "last dimension " << width << " is not a multiple of the " << what
           << " " << group;
  return success();
}

LogicalResult RmsNormOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<RankedTensorType> weight =
      resolveParamType(*this, getWeight(), tables, "weight", 1);
  if (failed(weight))
    return failure();
  return verifyGroupsTile(*this, getInput(), weight->getDimSize(0),
                          "norm size");
}

LogicalResult RmsNormalizeOp::verify() {
  if (!(getEps().convertToDouble() >= 0) ||
      !std::isfinite(getEps().convertToDouble()))
    return emitOpError() << "eps is " << getEps().convertToDouble()
                         << "; it is finite and not negative";
  return verifyGroupsTile(*this, getInput(), getGroupSize(), "group size");
}

LogicalResult LayerNormOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<RankedTensorType> weight =
      resolveParamType(*this, getWeight(), tables, "weight", 1);
  if (failed(weight))
    return failure();
  int64_t width = rankedType(getInput()).getShape().back();
  if (!extentsAgree(width, weight->getDimSize(0)))
    return emitOpError() << "last dimension " << width
                         << " does not match the norm size "
                         << weight->getDimSize(0);
  return verifyBias(*this, getBiasAttr(), weight->getDimSize(0), tables);
}

//===----------------------------------------------------------------------===//
// Pure forward ops
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  int64_t headDim = getHeadDim();
  if (headDim <= 0 || headDim % 2 != 0)
    return emitOpError() << "head_dim must be positive and even, got "
                         << headDim;
  int64_t width = rankedType(getInput()).getShape().back();
  if (!ShapedType::isDynamic(width) && width % headDim != 0)
    return emitOpError() << "last dimension " << width
                         << " is not a multiple of head_dim " << headDim;
  if (std::optional<int64_t> pairs = getRotatedPairs();
      pairs && *pairs > headDim / 2)
    return emitOpError() << "rotated_pairs " << *pairs
                         << " exceeds head_dim / 2 = " << headDim / 2;
  return success();
}

LogicalResult AttentionOp::verify() {
  auto query = rankedType(getQuery());
  auto key = rankedType(getKey());
  auto value = rankedType(getValue());
  auto result = rankedType(getResult());
  for (auto [type, what] : {std::pair{query, "query"},
                            {key, "key"},
                            {value, "value"},
                            {result, "result"}})
    if (failed(expectRank(*this, type, 3, what)))
      return failure();
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (heads <= 0 || kvHeads <= 0 || headDim <= 0)
    return emitOpError() << "num_heads, num_kv_heads and head_dim must be "
                            "positive";
  if (heads % kvHeads != 0)
    return emitOpError() << "num_heads " << heads
                         << " is not a multiple of num_kv_heads " << kvHeads;
  int64_t queryWidth, kvWidth;
  if (llvm::MulOverflow(heads, headDim, queryWidth) ||
      llvm::MulOverflow(kvHeads, headDim, kvWidth))
    return emitOpError() << "num_heads " << heads << " x head_dim " << headDim
                         << " overflows a 64-bit width";
  auto checkWidth = [&](RankedTensorType type, int64_t expected,
                        StringRef what) -> LogicalResult {
    if (!extentsAgree(type.getShape().back(), expected))
      return emitOpError() << what << " width " << type.getShape().back()
                           << " != " << expected << " (heads x head_dim)";
    return success();
  };
  if (failed(checkWidth(query, queryWidth, "query")) ||
      failed(checkWidth(key, kvWidth, "key")) ||
      failed(checkWidth(value, kvWidth, "value")) ||
      failed(checkWidth(result, queryWidth, "result")) ||
      failed(verifyLeadingDims(*this, query, result, 2, "query and result")) ||
      failed(verifyLeadingDims(*this, key, value, 2, "key and value")))
    return failure();
  if (getSlidingWindow() && *getSlidingWindow() <= 0)
    return emitOpError() << "sliding_window must be positive";
  if (getSoftcap() && getSoftcap()->convertToDouble() <= 0)
    return emitOpError() << "softcap must be positive";
  if (getKEqV() && key != value)
    return emitOpError() << "k_eq_v requires key and value of one type";
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (getCap().convertToDouble() <= 0)
    return emitOpError() << "cap must be positive, got "
                         << getCap().convertToDouble();
  return success();
}

LogicalResult AvgPoolTokensOp::verify() {
  auto input = rankedType(getInput());
  auto result = rankedType(getResult());
  if (failed(expectRank(*this, input, 3, "input")) ||
      failed(expectRank(*this, result, 3, "result")))
    return failure();
  int64_t kernel = getKernel();
  if (kernel <= 0)
    return emitOpError() << "kernel must be positive, got " << kernel;
  if (input.getDimSize(2) != result.getDimSize(2))
    return emitOpError() << "pooling must keep the width";
  int64_t tokens = input.getDimSize(1);
  if (ShapedType::isDynamic(tokens))
    return success();
  auto side = static_cast<int64_t>(std::llround(std::sqrt(double(tokens))));
  if (side * side != tokens || side % kernel != 0)
    return emitOpError() << tokens << " tokens are not a square grid divisible"
                         << " by kernel " << kernel;
  if (!extentsAgree(result.getDimSize(1), tokens / (kernel * kernel)))
    return emitOpError() << "expected " << tokens / (kernel * kernel)
                         << " pooled tokens, result has "
                         << result.getDimSize(1);
  return success();
}

LogicalResult MergeImageFeaturesOp::verify() {
  auto text = rankedType(getText());
  auto image = rankedType(getImage());
  if (failed(expectRank(*this, text, 3, "text")) ||
      failed(expectRank(*this, image, 3, "image")))
    return failure();
  if (!extentsAgree(text.getDimSize(2), image.getDimSize(2)))
    return emitOpError() << "image features of width " << image.getDimSize(2)
                         << " cannot replace text embeddings of width "
                         << text.getDimSize(2);
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  auto logits = rankedType(getLogits());
  auto labels = llvm::cast<RankedTensorType>(getLabels().getType());
  if (failed(expectRank(*this, logits, 3, "logits")) ||
      failed(expectRank(*this, labels, 2, "labels")))
    return failure();
  return verifyLeadingDims(*this, logits, labels, 2, "logits and labels");
}

LogicalResult ShardParamOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto model = (*this)->getParentOfType<ModelOp>();
  auto param =
      dyn_cast_or_null<ParamOp>(tables.lookupSymbolIn(model, getParam()));
  if (!param)
    return emitOpError() << getParam() << " does not name a parc.param";
  int64_t dim0 = param.getTensorType().getDimSize(0);
  // Under TP, FSDP shards the slice one TP rank holds (as getTpLocalShape).
  auto tpSize = model->getAttrOfType<IntegerAttr>("parc.tp_size");
  std::optional<TpRole> role = getTpRole(param);
  if (tpSize && tpSize.getInt() > 1 && role) {
    if (*role == TpRole::Colwise)
      dim0 /= tpSize.getInt();
    if (*role == TpRole::Vocab)
      if (auto padded =
              param->getAttrOfType<IntegerAttr>("parc.tp_padded_dim0"))
        dim0 = padded.getInt() / tpSize.getInt();
  }
  if (int64_t(getPaddedDim0()) < dim0)
    return emitOpError() << "padded_dim0 " << getPaddedDim0()
                         << " is smaller than dim 0 of " << getParam() << " ("
                         << dim0 << ")";
  return success();
}

#define GET_OP_CLASSES
#include "Parc/IR/ParcOps.cpp.inc"
