# -*- Python -*-
# lit configuration of parc's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

if not hasattr(config, "parc_obj_root"):
    # lit was pointed at the source tree (`lit test/Transforms/apply-fsdp.mlir`):
    # run with the build's site config, which loads this file again with the
    # build's paths (outputs go under build/test, as for `lit build/test`).
    build = os.environ.get("PARC_BUILD_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build")
    site = os.path.join(build, "test", "lit.site.cfg.py")
    if not os.path.exists(site):
        lit_config.fatal(f"{site} does not exist: build parc first "
                         "(scripts/bootstrap.sh) or set PARC_BUILD_DIR")
    lit_config.load_config(config, site)
else:
    config.name = "parc"
    config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
    config.suffixes = [".mlir", ".test"]
    config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
    config.test_source_root = os.path.dirname(__file__)
    config.test_exec_root = os.path.join(config.parc_obj_root, "test")

    config.substitutions.append(("%PATH%", config.environment["PATH"]))
    config.substitutions.append(("%examples", os.path.join(config.parc_src_root, "examples")))
    config.substitutions.append(("%parc_src", config.parc_src_root))
    config.substitutions.append(("%parc_build", config.parc_obj_root))
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
