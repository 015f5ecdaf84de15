# -*- Python -*-
# lit configuration of parc's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "parc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.parc_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%examples", os.path.join(config.parc_src_root, "examples")))
config.substitutions.append(("%plan_schema", os.path.join(config.parc_src_root, "runtime", "schema", "plan.fbs")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.parc_tools_dir, config.llvm_tools_dir]
tools = ["parc-opt", "parc-plan", "parc-translate"]
# parc-run is built only where LibTorch is found; its tests say REQUIRES: parc-run.
if os.path.exists(os.path.join(config.parc_tools_dir, "parc-run")):
    tools.append("parc-run")
    config.available_features.add("parc-run")
llvm_config.add_tool_substitutions(tools, tool_dirs)
