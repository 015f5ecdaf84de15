//===- CommOverlap.h - how the cost model overlaps communication -*- C++
//-*-===//
//
// --estimate-cost's `overlap` option: `schedule` (the two-stream timeline of
// the programs decides), `none` (every FSDP collective blocks compute) or a
// fraction in [0, 1] of the communication hidden. It is one typed value,
// parsed once by the pass pipeline's option parser (the cl::parser below), so
// `overlap=most` is refused where the pipeline is read, naming the option,
// and the cost model never sees text.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_COMMOVERLAP_H
#define PARC_ANALYSIS_COMMOVERLAP_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::parc {

struct CommOverlap {
  /// Unset: the schedule decides. Set: that fraction of the FSDP traffic is
  /// hidden behind compute on a timeline where every collective blocks (0 is
  /// `none`).
  std::optional<double> hiddenFraction;

  /// "schedule", "none" or a number in [0, 1]; nothing for anything else.
  static std::optional<CommOverlap> parse(llvm::StringRef text);
  /// The spelling parse() reads back.
  std::string str() const;
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                              const CommOverlap &overlap);

} // namespace mlir::parc

namespace llvm::cl {
/// Lets `overlap` be a typed pass option.
template <>
class parser<mlir::parc::CommOverlap>
    : public basic_parser<mlir::parc::CommOverlap> {
public:
  explicit parser(Option &option) : basic_parser(option) {}
  bool parse(Option &option, StringRef argName, StringRef arg,
             mlir::parc::CommOverlap &value);
  StringRef getValueName() const override { return "schedule|none|fraction"; }
  void printOptionDiff(const Option &option,
                       const mlir::parc::CommOverlap &value,
                       const OptionValue<mlir::parc::CommOverlap> &defaultValue,
                       size_t globalWidth) const;
};
} // namespace llvm::cl

#endif // PARC_ANALYSIS_COMMOVERLAP_H
