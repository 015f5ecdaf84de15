//===- parc-plan.cpp - plan a training run from a recipe ------------------===//
//
// parc-plan RECIPE.yaml [--set key=value ...] [--json] [--emit-mlir FILE]
//           [--emit-plan plan.bin] [--trace trace.json]
// parc-plan RECIPE.yaml --auto [--top N] [--emit-recipe FILE]
// parc-plan --model config.json --hardware h100-80gb --gpus 8 --seq 4096 ...
//
// Every recipe key has a flag of its own (getRecipeKeys()); flags and --set
// override the recipe. The planning itself lives in lib/Plan.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/Planner.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <deque>
#include <memory>

using namespace llvm;
using namespace mlir::parc;

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::OptionCategory category("parc-plan options");
  cl::opt<std::string> recipe(cl::Positional, cl::Optional,
                              cl::desc("<recipe.yaml>"), cl::cat(category));
  cl::list<std::string> sets(
      "set", cl::desc("Override a recipe key (e.g. --set train.seq_len=8192)"),
      cl::value_desc("key=value"), cl::cat(category));
  cl::opt<bool> json("json", cl::desc("Print the plan as a JSON document"),
                     cl::cat(category));
  cl::opt<std::string> emitMlir("emit-mlir",
                                cl::desc("Write the planned IR to a file"),
                                cl::value_desc("file"), cl::cat(category));
  cl::opt<std::string> emitPlan(
      "emit-plan", cl::desc("Write the plan as plan.bin for parc-run"),
      cl::value_desc("file"), cl::cat(category));
  cl::opt<std::string> trace(
      "trace",
      cl::desc("Write the schedule and memory of each rank kind as Chrome "
               "trace-event JSON (Perfetto, chrome://tracing)"),
      cl::value_desc("file"), cl::cat(category));
  cl::opt<std::string> emitRecipe(
      "emit-recipe",
      cl::desc("With --auto: write the fastest plan that fits as a recipe"),
      cl::value_desc("file"), cl::cat(category));
  cl::opt<std::string> hardwareDir(
      "hardware-dir",
      cl::desc("Directory of hardware profiles (default: next to the tool)"),
      cl::value_desc("dir"), cl::cat(category));

  // One flag per recipe key, so that flags and recipes cannot drift apart.
  std::vector<
      std::pair<const RecipeKey *, std::unique_ptr<cl::opt<std::string>>>>
      scalarFlags;
  std::vector<
      std::pair<const RecipeKey *, std::unique_ptr<cl::list<std::string>>>>
      listFlags;
  // cl::desc keeps a StringRef: the texts must outlive parsing.
  std::deque<std::string> helps;
  for (const RecipeKey &key : getRecipeKeys()) {
    StringRef help =
        helps.emplace_back((key.help + " [" + key.key + "]").str());
    if (key.isList)
      listFlags.emplace_back(&key, std::make_unique<cl::list<std::string>>(
                                       StringRef(key.flag), cl::desc(help),
                                       cl::value_desc(key.valueName),
                                       cl::CommaSeparated, cl::cat(category)));
    else if (key.valueName == "bool")
      // `--auto` alone is `--auto=true`, as LLVM's boolean flags read.
      scalarFlags.emplace_back(&key, std::make_unique<cl::opt<std::string>>(
                                         StringRef(key.flag), cl::desc(help),
                                         cl::value_desc(key.valueName),
                                         cl::ValueOptional, cl::cat(category)));
    else
      scalarFlags.emplace_back(&key, std::make_unique<cl::opt<std::string>>(
                                         StringRef(key.flag), cl::desc(help),
                                         cl::value_desc(key.valueName),
                                         cl::cat(category)));
  }
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "parc training planner\n");

  PlanInvocation invocation;
  invocation.recipePath = recipe;
  invocation.json = json;
  invocation.emitMlirPath = emitMlir;
  invocation.emitPlanPath = emitPlan;
  invocation.tracePath = trace;
  invocation.hardwareDir = hardwareDir;
  invocation.emitRecipePath = emitRecipe;
  invocation.setOptions.assign(sets.begin(), sets.end());
  for (auto &[key, flag] : scalarFlags)
    if (flag->getNumOccurrences()) {
      RecipeSetting setting;
      setting.key = key->key.str();
      setting.value = flag->empty() && key->valueName == "bool"
                          ? std::string("true")
                          : std::string(*flag);
      setting.isYaml = false;
      setting.origin = ("--" + key->flag).str();
      invocation.flagSettings.push_back(std::move(setting));
    }
  for (auto &[key, flag] : listFlags)
    if (flag->getNumOccurrences()) {
      RecipeSetting setting;
      setting.key = key->key.str();
      setting.items.assign(flag->begin(), flag->end());
      setting.hasItems = true;
      setting.origin = ("--" + key->flag).str();
      invocation.flagSettings.push_back(std::move(setting));
    }
  return runPlanner(invocation, outs(), errs());
}
