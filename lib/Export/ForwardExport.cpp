//===- ForwardExport.cpp - module forwards in plan.bin --------------------===//
//
// Writes every module's forward into plan.bin as a list of ops over numbered
// values, with attributes in a small typed form the runtime reads without
// MLIR, and rebuilds the forwards from it. Symbol references become dotted
// paths from the model, so the runtime needs no symbol tables.
//
//===----------------------------------------------------------------------===//

#include "parc/Export/ForwardExport.h"

#include "PlanFields.h"

#include "Parc/IR/ParcDialect.h"
#include "Parc/IR/ParcOps.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::parc;
namespace fb = flatbuffers;
namespace schema = ::parc::plan;

namespace {

std::string printed(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

// plan.bin's TP enums mirror the dialect's case for case.
static_assert(int(TpShard::Sequence) == int(schema::TpShard::Sequence) &&
              int(schema::TpShard::MAX) == int(TpShard::Sequence));
static_assert(int(TpComm::BiasGrad) == int(schema::TpComm::BiasGrad) &&
              int(schema::TpComm::MAX) == int(TpComm::BiasGrad));

fb::Offset<schema::TpShards> writeTpShards(fb::FlatBufferBuilder &fbb,
                                           TpShardsAttr attr) {
  if (!attr)
    return 0;
  std::vector<schema::TpShard> values;
  std::vector<schema::TpComm> comms;
  for (TpShard shard : attr.getValues())
    values.push_back(schema::TpShard(int(shard)));
  for (TpComm comm : attr.getComms())
    comms.push_back(schema::TpComm(int(comm)));
  std::vector<int32_t> gather(attr.getGather().begin(),
                              attr.getGather().end());
  return schema::CreateTpShards(fbb, fbb.CreateVector(values),
                                fbb.CreateVector(comms),
                                fbb.CreateVector(gather));
}

/// The #parc.tp_shards of `entry` (plan::verifyPlan checked its enums and
/// gather indices); null when there is none.
FailureOr<TpShardsAttr> readTpShards(MLIRContext *ctx,
                                     const schema::TpShards *entry,
                                     Location loc, StringRef where) {
  if (!entry)
    return TpShardsAttr();
  SmallVector<TpShard> values;
  SmallVector<TpComm> comms;
  SmallVector<int32_t> gather;
  if (entry->values())
    for (schema::TpShard value : *entry->values())
      values.push_back(TpShard(int(value)));
  if (entry->comms())
    for (schema::TpComm comm : *entry->comms())
      comms.push_back(TpComm(int(comm)));
  if (entry->gather())
    gather.assign(entry->gather()->begin(), entry->gather()->end());
  auto emit = [&] { return emitError(loc) << "plan.bin: " << where << ": "; };
  if (failed(TpShardsAttr::verify(emit, values, comms, gather)))
    return failure();
  return TpShardsAttr::get(ctx, values, comms, gather);
}

std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// Writes the forwards; `owner` is the module (or model) a forward belongs
/// to, against which its symbol references resolve.
class ForwardWriter {
public:
  ForwardWriter(ModelOp model, fb::FlatBufferBuilder &fbb)
      : model(model), fbb(fbb) {}

  FailureOr<fb::Offset<schema::Forward>> write(Operation *owner,
                                               func::FuncOp func) {
    DenseMap<Value, int> ids;
    Block &entry = func.getBody().front();
    std::vector<fb::Offset<schema::ValueType>> argTypes;
    for (BlockArgument arg : entry.getArguments()) {
      ids[arg] = ids.size();
      argTypes.push_back(valueType(arg.getType()));
    }
    std::vector<fb::Offset<schema::ForwardOp>> ops;
    std::vector<int> results;
    for (Operation &op : entry) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          results.push_back(ids.lookup(v));
        continue;
      }
      if (op.getNumRegions())
        return op.emitError("plan.bin cannot carry '")
               << op.getName() << "' in a forward: it has regions";
      std::vector<int> operands, defined;
      for (Value v : op.getOperands()) {
        auto it = ids.find(v);
        if (it == ids.end())
          return op.emitError("plan.bin: operand of '")
                 << op.getName() << "' is not defined in its forward";
        operands.push_back(it->second);
      }
      std::vector<fb::Offset<schema::ValueType>> types;
      for (Value v : op.getResults()) {
        defined.push_back(ids.size());
        ids[v] = ids.size();
        types.push_back(valueType(v.getType()));
      }
      std::vector<fb::Offset<schema::OpAttr>> attrs;
      for (NamedAttribute named : op.getAttrDictionary()) {
        if (named.getName() == kTpShardsAttrName)
          continue; // its own field
        FailureOr<fb::Offset<schema::OpAttr>> attr =
            writeAttr(owner, &op, named.getName(), named.getValue());
        if (failed(attr))
          return failure();
        attrs.push_back(*attr);
      }
      ops.push_back(schema::CreateForwardOpDirect(
          fbb, op.getName().getStringRef().str().c_str(), &operands, &defined,
          &types, &attrs, writeTpShards(fbb, getTpShards(&op))));
    }
    std::vector<fb::Offset<schema::ValueType>> resultTypes;
    for (Type type : func.getFunctionType().getResults())
      resultTypes.push_back(valueType(type));
    std::string path = isa<ModelOp>(owner) ? "" : getDottedPath(owner);
    return schema::CreateForwardDirect(fbb, path.c_str(), &argTypes, &ops,
                                       &results, &resultTypes,
                                       writeTpShards(fbb, getTpShards(func)));
  }

private:
  fb::Offset<schema::ValueType> valueType(Type type) {
    std::vector<int64_t> shape;
    std::string element = printed(type);
    if (auto tensor = dyn_cast<RankedTensorType>(type)) {
      for (int64_t dim : tensor.getShape())
        shape.push_back(ShapedType::isDynamic(dim) ? -1 : dim);
      element = printed(tensor.getElementType());
    }
    return schema::CreateValueTypeDirect(fbb, &shape, element.c_str());
  }

  FailureOr<fb::Offset<schema::OpAttr>>
  writeAttr(Operation *owner, Operation *op, StringRef name, Attribute attr) {
    std::string nameStr = name.str();
    const char *n = name.empty() ? nullptr : nameStr.c_str();
    auto make = [&](schema::AttrKind kind, int64_t i, double f,
                    const std::string *s, const std::string *type,
                    const std::vector<fb::Offset<schema::OpAttr>> *children) {
      return schema::CreateOpAttrDirect(fbb, n, kind, i, f,
                                        s ? s->c_str() : nullptr,
                                        type ? type->c_str() : nullptr,
                                        children);
    };
    if (isa<UnitAttr>(attr))
      return make(schema::AttrKind::Unit, 0, 0, nullptr, nullptr, nullptr);
    if (auto b = dyn_cast<BoolAttr>(attr))
      return make(schema::AttrKind::Bool, b.getValue(), 0, nullptr, nullptr,
                  nullptr);
    if (auto i = dyn_cast<IntegerAttr>(attr)) {
      std::string type = printed(i.getType());
      // An activation names its function, for readers of the plan.
      std::string kind;
      if (auto act = dyn_cast<ActivationOp>(op); act && name == "kind")
        kind = stringifyActivationKind(act.getKind()).str();
      return make(schema::AttrKind::Int, i.getValue().getSExtValue(), 0,
                  kind.empty() ? nullptr : &kind, &type, nullptr);
    }
    if (auto f = dyn_cast<FloatAttr>(attr)) {
      std::string type = printed(f.getType());
      return make(schema::AttrKind::Float, 0, f.getValueAsDouble(), nullptr,
                  &type, nullptr);
    }
    if (auto s = dyn_cast<StringAttr>(attr)) {
      std::string value = s.getValue().str();
      return make(schema::AttrKind::String, 0, 0, &value, nullptr, nullptr);
    }
    if (auto ref = dyn_cast<SymbolRefAttr>(attr)) {
      Operation *target = SymbolTable::lookupSymbolIn(owner, ref);
      if (!target)
        return op->emitError("plan.bin: cannot resolve ") << ref;
      std::string path = getDottedPath(target);
      return make(schema::AttrKind::Ref, 0, 0, &path, nullptr, nullptr);
    }
    if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
      std::vector<fb::Offset<schema::OpAttr>> children;
      for (NamedAttribute entry : dict) {
        auto child =
            writeAttr(owner, op, entry.getName(), entry.getValue());
        if (failed(child))
          return failure();
        children.push_back(*child);
      }
      return make(schema::AttrKind::Dict, 0, 0, nullptr, nullptr, &children);
    }
    if (auto array = dyn_cast<ArrayAttr>(attr)) {
      std::vector<fb::Offset<schema::OpAttr>> children;
      for (Attribute entry : array) {
        auto child = writeAttr(owner, op, "", entry);
        if (failed(child))
          return failure();
        children.push_back(*child);
      }
      return make(schema::AttrKind::Array, 0, 0, nullptr, nullptr, &children);
    }
    std::string text = printed(attr);
    return make(schema::AttrKind::Opaque, 0, 0, &text, nullptr, nullptr);
  }

  ModelOp model;
  fb::FlatBufferBuilder &fbb;
};

/// Rebuilds attributes and types of one forward.
class ForwardReader {
public:
  ForwardReader(const llvm::StringMap<Operation *> &byPath, Location loc)
      : byPath(byPath), loc(loc), b(loc.getContext()) {}

  LogicalResult read(const schema::Forward &entry) {
    StringRef path = str(entry.path());
    Operation *owner = byPath.lookup(path);
    if (!owner || !(isa<ModelOp>(owner) || isa<NNModuleOp>(owner)))
      return emitError(loc) << "plan.bin has a forward for unknown module '"
                            << path << "'";
    SmallVector<Type> args, results;
    if (failed(types(entry.arg_types(), args)) ||
        failed(types(entry.result_types(), results)))
      return failure();
    Block *body = isa<ModelOp>(owner) ? cast<ModelOp>(owner).getBody()
                                      : cast<NNModuleOp>(owner).getBody();
    b.setInsertionPointToEnd(body);
    auto func = func::FuncOp::create(b, loc, "forward",
                                     b.getFunctionType(args, results));
    FailureOr<TpShardsAttr> argShards = readTpShards(
        b.getContext(), entry.arg_tp(), loc,
        "the forward of '" + path.str() + "'");
    if (failed(argShards))
      return failure();
    if (*argShards)
      func->setAttr(kTpShardsAttrName, *argShards);
    Block *block = func.addEntryBlock();
    SmallVector<Value> values(block->getArguments());
    b.setInsertionPointToEnd(block);
    auto valueAt = [&](int id) -> Value {
      if (id < 0 || id >= static_cast<int>(values.size())) {
        emitError(loc) << "plan.bin: forward of '" << path
                       << "' reads undefined value " << id;
        return nullptr;
      }
      return values[id];
    };
    if (entry.ops())
      for (const schema::ForwardOp *opEntry : *entry.ops()) {
        OperationState state(loc, str(opEntry->name()));
        if (opEntry->operands())
          for (int id : *opEntry->operands()) {
            Value v = valueAt(id);
            if (!v)
              return failure();
            state.operands.push_back(v);
          }
        if (failed(types(opEntry->result_types(), state.types)))
          return failure();
        if (opEntry->attrs())
          for (const schema::OpAttr *attr : *opEntry->attrs()) {
            Attribute value = readAttr(owner, *attr);
            if (!value)
              return failure();
            state.addAttribute(str(attr->name()), value);
          }
        FailureOr<TpShardsAttr> shards =
            readTpShards(b.getContext(), opEntry->tp(), loc,
                         "'" + str(opEntry->name()).str() + "' in the forward of '" +
                             path.str() + "'");
        if (failed(shards))
          return failure();
        if (*shards)
          state.addAttribute(kTpShardsAttrName, *shards);
        Operation *op = b.create(state);
        llvm::append_range(values, op->getResults());
      }
    SmallVector<Value> returned;
    if (entry.results())
      for (int id : *entry.results()) {
        Value v = valueAt(id);
        if (!v)
          return failure();
        returned.push_back(v);
      }
    func::ReturnOp::create(b, loc, returned);
    return success();
  }

private:
  Type parse(StringRef text) {
    Type type = parseType(text, loc.getContext());
    if (!type)
      emitError(loc) << "plan.bin has an unknown type '" << text << "'";
    return type;
  }

  LogicalResult
  types(const fb::Vector<fb::Offset<schema::ValueType>> *entries,
        SmallVectorImpl<Type> &out) {
    if (!entries)
      return success();
    for (const schema::ValueType *entry : *entries) {
      Type element = parse(str(entry->element()));
      if (!element)
        return failure();
      if (!entry->shape()) {
        out.push_back(element);
        continue;
      }
      SmallVector<int64_t> shape;
      for (int64_t dim : *entry->shape())
        shape.push_back(dim < 0 ? ShapedType::kDynamic : dim);
      out.push_back(RankedTensorType::get(shape, element));
    }
    return success();
  }

  Attribute readAttr(Operation *owner, const schema::OpAttr &attr) {
    switch (attr.kind()) {
    case schema::AttrKind::Unit:
      return b.getUnitAttr();
    case schema::AttrKind::Bool:
      return b.getBoolAttr(attr.int_value());
    case schema::AttrKind::Int:
      if (Type type = parse(str(attr.type())))
        return b.getIntegerAttr(type, attr.int_value());
      return nullptr;
    case schema::AttrKind::Float:
      if (Type type = parse(str(attr.type())))
        return b.getFloatAttr(type, attr.float_value());
      return nullptr;
    case schema::AttrKind::String:
      return b.getStringAttr(str(attr.string_value()));
    case schema::AttrKind::Ref: {
      Operation *target = byPath.lookup(str(attr.string_value()));
      if (!target) {
        emitError(loc) << "plan.bin: a forward refers to unknown '"
                       << str(attr.string_value()) << "'";
        return nullptr;
      }
      if (SymbolRefAttr ref = getRelativeRef(owner, target))
        return ref;
      emitError(loc) << "plan.bin: a forward refers to '"
                     << str(attr.string_value())
                     << "', which is not a named symbol below the forward's "
                        "module";
      return nullptr;
    }
    case schema::AttrKind::Dict:
    case schema::AttrKind::Array: {
      SmallVector<NamedAttribute> named;
      SmallVector<Attribute> elements;
      if (attr.children())
        for (const schema::OpAttr *child : *attr.children()) {
          Attribute value = readAttr(owner, *child);
          if (!value)
            return nullptr;
          named.push_back(b.getNamedAttr(str(child->name()), value));
          elements.push_back(value);
        }
      if (attr.kind() == schema::AttrKind::Dict)
        return b.getDictionaryAttr(named);
      return b.getArrayAttr(elements);
    }
    case schema::AttrKind::Opaque:
      if (Attribute value =
              parseAttribute(str(attr.string_value()), loc.getContext()))
        return value;
      emitError(loc) << "plan.bin has an unreadable attribute '"
                     << str(attr.string_value()) << "'";
      return nullptr;
    }
    return nullptr;
  }

  const llvm::StringMap<Operation *> &byPath;
  Location loc;
  OpBuilder b;
};

} // namespace

FailureOr<std::vector<fb::Offset<schema::Forward>>>
mlir::parc::exportForwards(ModelOp model, fb::FlatBufferBuilder &fbb) {
  // Module order, not op order, so that a plan read back (its forwards
  // appended after the other ops) writes the same bytes.
  SmallVector<Operation *> owners{model};
  model.walk<WalkOrder::PreOrder>(
      [&](NNModuleOp module) { owners.push_back(module); });
  ForwardWriter writer(model, fbb);
  std::vector<fb::Offset<schema::Forward>> forwards;
  for (Operation *owner : owners) {
    func::FuncOp forward;
    if (auto module = dyn_cast<NNModuleOp>(owner))
      forward = module.getForward();
    else
      forward = SymbolTable::lookupSymbolIn(owner, "forward")
                    ? dyn_cast<func::FuncOp>(
                          SymbolTable::lookupSymbolIn(owner, "forward"))
                    : func::FuncOp();
    if (!forward || forward.isExternal())
      continue;
    FailureOr<fb::Offset<schema::Forward>> entry =
        writer.write(owner, forward);
    if (failed(entry))
      return failure();
    forwards.push_back(*entry);
  }
  return forwards;
}

LogicalResult
mlir::parc::importForwards(const schema::Plan &plan,
                           const llvm::StringMap<Operation *> &byPath,
                           Location loc) {
  if (!plan.forwards())
    return success();
  ForwardReader reader(byPath, loc);
  for (const schema::Forward *entry : *plan.forwards())
    if (failed(reader.read(*entry)))
      return failure();
  return success();
}
