//===- PlanFields.h - reading plan.bin fields into the dialect ----*- C++ -*-===//
//
// What the three plan.bin readers (forwards, programs, the plan's tables)
// share: a FlatBuffers string as a StringRef, and a name from the file as
// one of the dialect's enums, refused with the names there are.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_EXPORT_PLANFIELDS_H
#define PARC_LIB_EXPORT_PLANFIELDS_H

#include "Parc/IR/ParcOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringRef.h"

#include <flatbuffers/flatbuffers.h>

#include <optional>
#include <string>

namespace mlir::parc {

/// The string, or "" when the field is absent.
inline llvm::StringRef str(const flatbuffers::String *s) {
  return s ? llvm::StringRef(s->c_str(), s->size()) : llvm::StringRef();
}

/// The enum value `name` spells (`symbolizeEnum`; the enum's values are
/// 0..MaxValue), or an error from `error` (which starts the message:
/// "plan.bin parameter 'x' has TP role") naming `name` and every name the
/// enum has.
template <typename EnumT, unsigned MaxValue>
FailureOr<EnumT> readEnumName(llvm::StringRef name,
                              llvm::function_ref<InFlightDiagnostic()> error) {
  if (std::optional<EnumT> value = symbolizeEnum<EnumT>(name))
    return *value;
  std::string names;
  for (unsigned i = 0; i <= MaxValue; ++i)
    names += (i == 0 ? "" : i == MaxValue ? " or " : ", ") +
             stringifyEnum(static_cast<EnumT>(i)).str();
  return error() << " '" << name << "', not " << names;
}

} // namespace mlir::parc

#endif // PARC_LIB_EXPORT_PLANFIELDS_H
