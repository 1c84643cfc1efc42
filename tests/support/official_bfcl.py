"""The pinned bfcl-eval's own code, importable without the API-client dependencies it is installed without.

bfcl_eval's model_handler and eval_checker modules import every vendor SDK, tree-sitter and a few decorators that
neither the AST checker nor the prompt builder of a Python prompting model uses. `install_stubs` puts small stand-ins
for them in sys.modules before the first import; the official functions then run unchanged.
"""

from __future__ import annotations

import atexit
import copy
import os
import shutil
import sys
import tempfile
import types
from typing import Any

PINNED = "bfcl-eval==2026.3.23"
MODEL = "genenv-prompting"
"""The model name handed to the official checker; its stub config says underscore_to_dot=False, as the real
config (constants/model_config.py) says for all 72 prompting (non-FC) models: function names compare as given."""


def install_stubs() -> None:
    """Stub the modules the official AST path imports but never uses for a Python prompting model.

    - bfcl_eval.constants.model_config imports every API handler (openai, anthropic, google, ... SDKs). The checker
      only reads MODEL_CONFIG_MAPPING[model].underscore_to_dot, the runner nothing: a mapping with our MODEL.
    - bfcl_eval.model_handler.parser.{java,js}_parser need tree-sitter; they parse Java/JavaScript answers only.
    - tenacity (retry decorators for API calls) and overrides (@final) are imported by model_handler modules.
    Results and score folders the package creates on import go to a temporary BFCL_PROJECT_ROOT. The rest of what the
    runner module imports (numpy, pandas, python-dotenv, tqdm, filelock) is in our venv already.
    """
    if "BFCL_PROJECT_ROOT" not in os.environ:  # one folder per process (it was one per call, 1,041 a suite run)
        root = tempfile.mkdtemp(prefix="bfcl-project-")
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        os.environ["BFCL_PROJECT_ROOT"] = root
    model_config = types.ModuleType("bfcl_eval.constants.model_config")
    model_config.MODEL_CONFIG_MAPPING = {MODEL: types.SimpleNamespace(underscore_to_dot=False, is_fc_model=False)}
    sys.modules[model_config.__name__] = model_config
    for name, function in [
        ("java_parser", "parse_java_function_call"),
        ("js_parser", "parse_javascript_function_call"),
    ]:
        parser = types.ModuleType(f"bfcl_eval.model_handler.parser.{name}")
        setattr(parser, function, _unavailable)
        sys.modules[parser.__name__] = parser
    tenacity = types.ModuleType("tenacity")
    for name in ("retry", "retry_if_exception_message", "retry_if_exception_type", "wait_random_exponential"):
        setattr(tenacity, name, _unavailable)
    sys.modules["tenacity"] = tenacity
    overrides = types.ModuleType("overrides")
    overrides.final = overrides.override = lambda function: function
    sys.modules["overrides"] = overrides


def _unavailable(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("stubbed out: not on the AST path of a Python prompting model")


def official_messages(entry: dict[str, Any]) -> list[dict[str, str]]:
    """The messages bfcl_eval's runner sends a prompting model for a single-turn item: the language hint added to
    the function docs, then the default system prompt put before (or merged into) the first turn."""
    install_stubs()
    from bfcl_eval.model_handler.utils import system_prompt_pre_processing_chat_model
    from bfcl_eval.utils import add_language_specific_hint_to_function_doc

    [hinted] = add_language_specific_hint_to_function_doc([copy.deepcopy(entry)])
    return system_prompt_pre_processing_chat_model(hinted["question"][0], hinted["function"], hinted["id"])
