//===- ParcOps.h - parc dialect operations ----------------------*- C++ -*-===//

#ifndef PARC_DIALECT_PARC_IR_PARCOPS_H
#define PARC_DIALECT_PARC_IR_PARCOPS_H

#include "Parc/IR/ParcDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Parc/IR/ParcEnums.h"
#include "Parc/IR/ParcInterfaces.h"

namespace mlir {
/// A pipeline step as a bare keyword, `F3` or `B0.c1`.
template <>
struct FieldParser<parc::PipelineStep> {
  static FailureOr<parc::PipelineStep> parse(AsmParser &parser);
};
} // namespace mlir

namespace mlir::parc {
/// Parses a quoted pipeline schedule name ("1f1b").
FailureOr<PpSchedule> parsePpSchedule(AsmParser &parser);

/// `[a, b]`: enum cases by name, or integers.
template <typename T>
FailureOr<SmallVector<T>> parseBracketedList(AsmParser &parser) {
  SmallVector<T> values;
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            FailureOr<T> value = FieldParser<T>::parse(parser);
            if (failed(value))
              return failure();
            values.push_back(*value);
            return success();
          }))
    return failure();
  return values;
}
template <typename T>
void printBracketedList(AsmPrinter &printer, ArrayRef<T> values) {
  printer << '[';
  llvm::interleaveComma(values, printer.getStream());
  printer << ']';
}
} // namespace mlir::parc

#define GET_ATTRDEF_CLASSES
#include "Parc/IR/ParcAttrs.h.inc"

#define GET_OP_CLASSES
#include "Parc/IR/ParcOps.h.inc"

namespace mlir::parc {

/// Bytes one element of `type` (an integer or float type) occupies in memory,
/// rounded up to whole bytes: the one rule every byte count in parc uses.
int64_t getElementBytes(Type type);
/// Bytes of a statically shaped tensor: elements times getElementBytes.
int64_t getTensorBytes(ShapedType type);

/// The TP role apply-tp recorded on a parameter (parc.tp), if any.
std::optional<TpRole> getTpRole(Operation *param);
/// The remat decision apply-remat recorded on a layer (parc.remat), if any.
std::optional<RematKind> getRemat(Operation *layer);
/// How apply-tp runs `op` (parc.tp_shards); null outside a TP plan.
TpShardsAttr getTpShards(Operation *op);

/// The dotted path of a module or parameter as named_modules() /
/// named_parameters() print it, relative to the enclosing parc.model.
std::string getDottedPath(Operation *op);

/// Resolves a dotted path ("model.layers.3.mlp") below `model`; null if absent.
Operation *lookupDottedPath(ModelOp model, llvm::StringRef path);

/// The nested symbol reference from `from`'s symbol table to `target`; null
/// when `target` is not below `from` or an op on the way has no symbol name
/// (possible only in IR read back from a file, which must refuse it).
SymbolRefAttr getRelativeRef(Operation *from, Operation *target);

} // namespace mlir::parc

#endif // PARC_DIALECT_PARC_IR_PARCOPS_H
