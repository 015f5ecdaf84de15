//===- CommOverlap.cpp - how the cost model overlaps communication --------===//

#include "parc/Analysis/CommOverlap.h"

#include "llvm/Support/Format.h"

using namespace mlir::parc;

std::optional<CommOverlap> CommOverlap::parse(llvm::StringRef text) {
  if (text == "schedule")
    return CommOverlap{};
  if (text == "none")
    return CommOverlap{0.0};
  double fraction = 0;
  if (text.getAsDouble(fraction) || !(fraction >= 0 && fraction <= 1))
    return std::nullopt;
  return CommOverlap{fraction};
}

std::string CommOverlap::str() const {
  if (!hiddenFraction)
    return "schedule";
  if (*hiddenFraction == 0)
    return "none";
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", *hiddenFraction);
  return text;
}

llvm::raw_ostream &mlir::parc::operator<<(llvm::raw_ostream &os,
                                          const CommOverlap &overlap) {
  return os << overlap.str();
}

bool llvm::cl::parser<CommOverlap>::parse(Option &option, StringRef,
                                          StringRef arg, CommOverlap &value) {
  std::optional<CommOverlap> parsed = CommOverlap::parse(arg);
  if (!parsed)
    return option.error("'" + arg +
                        "' is not 'schedule', 'none' or a fraction in [0, 1]");
  value = *parsed;
  return false;
}

void llvm::cl::parser<CommOverlap>::printOptionDiff(
    const Option &option, const CommOverlap &value,
    const OptionValue<CommOverlap> &, size_t globalWidth) const {
  printOptionName(option, globalWidth);
  outs() << "= " << value << "\n";
}
