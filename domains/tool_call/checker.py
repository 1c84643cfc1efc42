"""BFCL's AST checking rules (bfcl_eval's ast_checker), shared by the training reward and the BFCL evaluation.

One checker for both, so that an answer rewarded 1.0 in training is one BFCL counts as correct. The rules, as
bfcl_eval/eval_checker/ast_eval/ast_checker.py applies them to Python prompting models:
- decoding: strip backticks, newlines and spaces at both ends, wrap in `[...]` if needed, parse as a list of calls;
  bare names as values become strings and positional arguments are dropped, as BFCL's decoder does;
- simple: exactly one call; multiple: exactly one call, checked against the expected function; parallel: as many
  calls as expected, matched in any order (greedily, in the order of the expected calls, as BFCL does);
- a call matches when the name is the expected one, every required parameter is present, no parameter is outside
  the schema or the possible answer, each value has the declared type (an int is accepted for a float), each value
  is among the allowed ones, and each allowed-list without "" (the "may be omitted" marker) is given;
- strings compare after removing spaces and `,./-_*^`, lower-casing and turning ' into "; lists compare element-wise
  after that; dicts key by key; one level of nested types is checked (as in BFCL);
- irrelevance: correct when the output decodes to no call (free text, `[]`, anything that is not a call list).

Nothing the model wrote is executed: the text is parsed with `ast` and literals read with `ast.literal_eval`.
Known differences from BFCL, all rare: BFCL evaluates arithmetic (`x=2*3`) and keeps nested calls as strings;
here such outputs do not decode (score 0), and tuples are read as lists.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from genenv.domains.tool_call.calls import Call, ParseError, parse_calls

_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_NESTED_TYPES = ("array", "tuple")
_STANDARDISE = re.compile(r"[ ,./\-_*^]")
Answer = dict[str, dict[str, list[Any]]]
"""One expected call: {function name: {parameter: [allowed values]}}."""


@dataclass(frozen=True)
class CheckResult:
    """BFCL's verdict on one output."""

    valid: bool
    error: str | None = None
    """BFCL's error_type, e.g. 'simple_function_checker:missing_required'."""


def check(category: str, functions: list[dict[str, Any]], output: str, answers: list[Answer] | None) -> CheckResult:
    """Score one model output of a BFCL `category` against the possible answers (None for irrelevance)."""
    if "irrelevance" in category:
        return CheckResult(True) if not makes_call(output) else CheckResult(False, "irrelevance:contains_call")
    try:
        calls = decode(output)
    except ParseError:
        return CheckResult(False, "ast_decoder:decoder_failed")
    if answers is None:
        raise ValueError(f"BFCL {category} items need possible answers")
    if "parallel" in category:
        error = _parallel_no_order(functions, calls, answers)
    elif "multiple" in category:
        function = _find(functions, answers[0])
        error = _wrong_count("multiple", calls, answers) or _check_call(function, calls[0], answers[0])
    else:
        error = _wrong_count("simple", calls, answers) or _check_call(functions[0], calls[0], answers[0])
    return CheckResult(error is None, error)


# --- decoding ---
def _call_nodes(output: str) -> list[ast.Call]:
    """BFCL's prompting decoder up to the AST: the call nodes; ParseError says why it is not a list of calls."""
    source = output.strip("`\n ")
    source = source if source.startswith("[") else "[" + source
    source = source if source.endswith("]") else source + "]"
    try:
        body = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"not valid call syntax: {exc.__class__.__name__}") from None
    if not isinstance(body, ast.List):
        raise ParseError(f"expected a list of calls, got {body.__class__.__name__}")
    for node in body.elts:
        if not isinstance(node, ast.Call):
            raise ParseError(f"expected a function call, got {node.__class__.__name__}")
    return body.elts


def makes_call(output: str) -> bool:
    """True when BFCL would decode at least one call (what an irrelevance item must not contain)."""
    try:
        return len(_call_nodes(output)) > 0
    except ParseError:
        return False


class _AsBfclDecodes(ast.NodeTransformer):
    """Bare names as values become their name as a string; positional arguments are dropped (BFCL ignores them)."""

    def visit_Call(self, node: ast.Call) -> ast.Call:
        node.args = []
        node.keywords = [self.visit(keyword) for keyword in node.keywords]
        return node

    def visit_Name(self, node: ast.Name) -> ast.Constant:
        return ast.copy_location(ast.Constant(node.id), node)


def decode(output: str) -> list[Call]:
    """The calls in `output` as BFCL decodes them; ParseError when BFCL's decoder would fail."""
    nodes = [_AsBfclDecodes().visit(node) for node in _call_nodes(output)]
    return parse_calls(ast.unparse(ast.List(elts=nodes, ctx=ast.Load())))


# --- the checkers (bfcl_eval ast_checker.py) ---
def _find(functions: list[dict[str, Any]], answer: Answer) -> dict[str, Any]:
    name = next(iter(answer))
    for function in functions:
        if function["name"] == name:
            return function
    raise ValueError(f"possible answer names {name!r}, which is not among the item's functions")


def _wrong_count(kind: str, calls: list[Call], answers: list[Answer]) -> str | None:
    return f"{kind}_function_checker:wrong_count" if len(calls) != len(answers) or not answers else None


def _parallel_no_order(functions: list[dict[str, Any]], calls: list[Call], answers: list[Answer]) -> str | None:
    if len(calls) != len(answers):
        return "parallel_function_checker_no_order:wrong_count"
    matched: set[int] = set()
    for answer in answers:
        function = _find(functions, answer)
        index = next(
            (i for i, call in enumerate(calls) if i not in matched and _check_call(function, call, answer) is None),
            None,
        )
        if index is None:
            return "parallel_function_checker_no_order:cannot_find_match"
        matched.add(index)
    return None


def _check_call(function: dict[str, Any], call: Call, answer: Answer) -> str | None:
    """BFCL's simple_function_checker: None when `call` matches, else its error_type."""
    allowed = next(iter(answer.values()))
    if call.name != function["name"]:
        return "simple_function_checker:wrong_func_name"
    properties = function["parameters"]["properties"]
    if any(param not in call.arguments for param in function["parameters"].get("required", [])):
        return "simple_function_checker:missing_required"
    for param, value in call.arguments.items():
        if param not in properties or param not in allowed:
            return "simple_function_checker:unexpected_param"
        error = _check_value(properties[param], value, allowed[param])
        if error is not None:
            return error
    if any(param not in call.arguments and "" not in options for param, options in allowed.items()):
        return "simple_function_checker:missing_optional"
    return None


def _check_value(spec: dict[str, Any], value: Any, options: list[Any]) -> str | None:
    type_name = spec.get("type")
    if type_name not in _PYTHON_TYPES:
        return "type_error:unknown_schema_type"
    expected = _PYTHON_TYPES[type_name]
    item_type = spec.get("items", {}).get("type") if type_name in _NESTED_TYPES else None
    nested = _PYTHON_TYPES.get(item_type) if item_type else None
    if type_name == "float" and type(value) is int:
        value = float(value)
    valid, is_variable = _type_check(value, options, expected, nested)
    if not valid:
        return "type_error:nested" if nested is not None and type(value) is expected else "type_error:simple"
    if is_variable:
        return None if value in options else "value_error:others"
    if expected is dict:
        return _dict_check(value, options)
    if expected is list and nested is dict:
        return _list_dict_check(value, options)
    if expected is str:
        standard = [standardise(option) for option in options if type(option) is str]
        return None if standardise(value) in standard else "value_error:string"
    if expected is list:
        return None if _standard_list(value) in [_standard_list(o) for o in options] else "value_error:list/tuple"
    return None if value in options else "value_error:others"


def _answer_type(options: list[Any]) -> type | None:
    return next((type(option) for option in options if option != ""), None)


def _type_check(value: Any, options: list[Any], expected: type, nested: type | None) -> tuple[bool, bool]:
    """BFCL's type_checker: (valid, is_variable). A value typed like the possible answer rather than the schema is
    a 'variable' and is then compared as is."""
    answer_type = _answer_type(options)
    if type(value) is expected:
        is_variable = answer_type is not None and answer_type is not expected
        if nested is None:
            return True, is_variable
        for option in options:
            if type(option) is not list or all(_type_check(item, option, nested, None)[0] for item in value):
                return True, is_variable
        return False, False
    if answer_type is not None and type(value) is answer_type:
        return True, True
    return False, False


def standardise(text: str) -> str:
    """BFCL's standardize_string: 'April 1, 2024' == 'april 1 2024'; single quotes read as double."""
    return _STANDARDISE.sub("", text).lower().replace("'", '"')


def _standard_list(values: Any) -> list[Any] | None:
    if not isinstance(values, list | str):
        return None
    return [standardise(v) if type(v) is str else v for v in values]


def _dict_check(value: dict[str, Any], options: list[Any]) -> str | None:
    """Some non-"" option dict allows every key and value given and has every key it does not mark omittable."""
    error = "dict_checker:unclear"
    for option in options:
        if option == "":
            continue
        if not isinstance(option, dict):
            return "dict_checker:unclear"
        error = None
        for key, item in value.items():
            if key not in option:
                error = "value_error:dict_key"
                break
            standard = standardise(item) if type(item) is str else item
            if standard not in [standardise(o) if type(o) is str else o for o in option[key]]:
                error = "value_error:dict_value"
                break
        if error is None and any(key not in value and "" not in allowed for key, allowed in option.items()):
            error = "value_error:dict_key"
        if error is None:
            return None
    return error


def _list_dict_check(value: list[Any], options: list[Any]) -> str | None:
    """A list of dicts matches an option of the same length dict by dict, in order."""
    error = "list_dict_checker:unclear"
    for option in options:
        if len(value) != len(option):
            error = "value_error:list_dict_count"
            continue
        error = next(
            (e for item, expected in zip(value, option, strict=True) if (e := _item_dict_check(item, expected))),
            None,
        )
        if error is None:
            return None
    return error


def _item_dict_check(item: Any, expected: Any) -> str | None:
    return _dict_check(item, [expected]) if isinstance(item, dict) else "value_error:dict_value"


# --- the possible answer of a task ---
def possible_answers(reference: list[Call], functions: list[dict[str, Any]]) -> list[Answer]:
    """BFCL's possible answer for a task's reference calls: a given value is the only one allowed (or may be left
    out when it is the default); a left-out optional parameter may stay out or be given its default."""
    by_name = {f["name"]: f for f in functions}
    answers = []
    for call in reference:
        allowed: dict[str, list[Any]] = {}
        for param, spec in by_name[call.name]["parameters"]["properties"].items():
            if param not in call.arguments:
                allowed[param] = ["", spec["default"]] if "default" in spec else [""]
            elif "default" in spec and _same(call.arguments[param], spec["default"]):
                allowed[param] = [call.arguments[param], ""]
            else:
                allowed[param] = [call.arguments[param]]
        answers.append({call.name: allowed})
    return answers


def _same(value: Any, default: Any) -> bool:
    """Equal and both or neither a bool, so `True` is not the default `1`."""
    return value == default and isinstance(value, bool) == isinstance(default, bool)
