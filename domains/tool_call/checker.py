"""BFCL's AST checking rules (bfcl_eval's ast_checker), shared by the training reward and the BFCL evaluation.

One checker for both, so that an answer rewarded 1.0 in training is one BFCL counts as correct. The leaderboard is
the contract: this mirrors bfcl_eval==2026.3.23 as its runner judges a Python prompting model, quirks included
(each copied quirk says so in a comment). tests/support/bfcl_agreement.py judges a corpus of candidate outputs with the
official code and tests/evaluation/test_bfcl_agreement.py asserts that this module agrees on every one.

- decoding (model_handler/utils.py default_decode_ast_prompting, ast_parse, resolve_ast_by_type): strip backticks,
  newlines and spaces at both ends, wrap in `[...]` if needed, parse; every element must be a call. Positional
  arguments are dropped, a repeated keyword keeps its last value, bare names become strings, nested calls and
  subscripts become their source text (a nested call with keywords a {name: {args}} dict), tuples stay tuples,
  arithmetic is evaluated, any unary operator negates a literal (`+5` is -5), and anything else fails to decode;
- simple: exactly one call; multiple: exactly one call, checked against the expected function; parallel: as many
  calls as expected, matched in any order (greedily, in the order of the expected calls, as BFCL does);
- a call matches when the name is the expected one, every required parameter is present, no parameter is outside
  the schema or the possible answer, each value has the declared type (an int is accepted for a float, a tuple
  for a "tuple", not for an "array"), each value is among the allowed ones, and each allowed-list without ""
  (the "may be omitted" marker) is given;
- strings compare after removing spaces and `,./-_*^`, lower-casing and turning ' into "; lists compare element-wise
  after that; dicts key by key; one level of nested types is checked (as in BFCL);
- irrelevance: correct when the output decodes to no call (free text, `[]`, anything that does not decode).

Nothing the model wrote is executed. BFCL runs `eval` on arithmetic in an argument; here the arithmetic is computed
from the parsed literals (numbers, strings, lists, tuples, sets, dicts, subscripts of these, the operators, and
the pure builtins abs, float, int, len, max, min, round, str, sum). Known differences, none seen in real outputs:
arithmetic that uses anything else (a name, an attribute, an f-string, a comparison, a lambda, a builtin on nested
lists, ...) or that could be too large to compute safely (over about 100,000 bits, items or characters; a `%`
format with a width of 10,000 or more, or `*`) does not decode here, where BFCL's eval may give a value.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from genenv.domains.tool_call.calls import Call, ParseError

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
        return CheckResult(True) if not makes_call(output) else CheckResult(False, "irrelevance_error:decoder_success")
    try:
        calls = _decode_as_bfcl(output)
    except ParseError:
        return CheckResult(False, "ast_decoder:decoder_failed")
    if answers is None:
        raise ValueError(f"BFCL {category} items need possible answers")
    if "parallel" in category:
        error = _parallel_no_order(functions, calls, answers)
    elif "multiple" in category:
        function = _find(functions, answers[0])
        error = _wrong_count("multiple", calls, len(answers)) or _check_call(function, calls[0], answers[0])
    else:
        error = _wrong_count("simple", calls, 1) or _check_call(functions[0], calls[0], answers[0])
    return CheckResult(error is None, error)


# --- decoding (bfcl_eval model_handler/utils.py) ---
def _call_nodes(output: str) -> list[ast.Call]:
    """default_decode_ast_prompting and ast_parse up to the AST: the call nodes; ParseError says why there are none."""
    source = output.strip("`\n ")
    source = source if source.startswith("[") else "[" + source
    source = source if source.endswith("]") else source + "]"
    try:
        body = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"not valid call syntax: {exc.__class__.__name__}") from None
    elements = getattr(body, "elts", None)  # ast_parse reads `.elts`: a list (or a tuple, `[a], [b]`)
    if elements is None:
        raise ParseError(f"expected a list of calls, got {body.__class__.__name__}")
    for node in elements:
        if not isinstance(node, ast.Call):
            raise ParseError(f"expected a function call, got {node.__class__.__name__}")
    return elements


def _decode_as_bfcl(output: str) -> list[Call]:
    """The calls exactly as BFCL decodes them (values keep their Python types; `**x` is keyed None)."""
    resolver = _Resolver(literal_only=False)
    return [resolver.call(node) for node in _call_nodes(output)]


def makes_call(output: str) -> bool:
    """True when BFCL would decode at least one call (what an irrelevance item must not contain)."""
    try:
        return len(_decode_as_bfcl(output)) > 0
    except ParseError:
        return False


def decode(output: str) -> list[Call]:
    """The calls in `output` as BFCL decodes them, with JSON-like values (tuples read as lists); ParseError when
    BFCL's decoder fails, and also where BFCL keeps code as text (a nested call, a subscript) or the value is not
    JSON-like (bytes, complex, a set, `**kwargs`, a dict key that is not a string)."""
    resolver = _Resolver(literal_only=True)
    return [_json_call(resolver.call(node)) for node in _call_nodes(output)]


class _Resolver:
    """bfcl_eval's resolve_ast_call / resolve_ast_by_type. With literal_only, the values BFCL turns into source
    text (nested calls, subscripts) raise ParseError instead."""

    def __init__(self, literal_only: bool) -> None:
        self.literal_only = literal_only

    def call(self, node: ast.Call) -> Call:
        # Positional arguments are ignored and a repeated keyword keeps its last value (in the first one's place).
        arguments: dict[Any, Any] = {}
        for keyword in node.keywords:
            arguments[keyword.arg] = self.value(keyword.value)
        return Call(_call_name(node.func), arguments)

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return "..." if node.value is Ellipsis else node.value
        if isinstance(node, ast.UnaryOp):
            return _negated_literal(node)
        if isinstance(node, ast.List):
            return [self.value(item) for item in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.Dict):
            return self._dict(node)
        if isinstance(node, ast.BinOp):
            return _arithmetic(node)
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call | ast.Subscript) and self.literal_only:
            raise ParseError(f"a {node.__class__.__name__.lower()} is not a literal value")
        if isinstance(node, ast.Call):
            return self._nested_call(node)
        if isinstance(node, ast.Subscript):
            # BFCL's handler reads `value.body` (no such attribute) and falls back to this text.
            return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
        # Lambda included: BFCL's handler for it fails (`value.body[0]` of an expression).
        raise ParseError(f"unsupported argument: {node.__class__.__name__}")

    def _dict(self, node: ast.Dict) -> dict[Any, Any]:
        result = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise ParseError("unsupported argument: ** in a dict")
            key = self.value(key_node)
            if not _hashable(key):
                raise ParseError(f"unhashable dict key: {type(key).__name__}")
            result[key] = self.value(value_node)
        return result

    def _nested_call(self, node: ast.Call) -> Any:
        # BFCL keeps a nested call without keywords as its source text, and one with keywords as {name: {args}}.
        if not node.keywords:
            return ast.unparse(node)
        call = self.call(node)
        return {call.name: call.arguments}


def _call_name(func: ast.expr) -> str:
    """The dotted name; as in resolve_ast_call, a base that is not a name (`tools[0].f`, `g().f`) is dropped."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _negated_literal(node: ast.UnaryOp) -> Any:
    """BFCL reads every unary operator as `-operand.value`: `+5` is -5, `not True` is -1, `~3` is -3. A plain BFCL
    bug, copied because the leaderboard is the contract. `--5`, `-x` and `-"a"` do not decode."""
    operand = node.operand
    if isinstance(operand, ast.Constant) and type(operand.value) in (int, float, complex, bool):
        return -operand.value
    raise ParseError(f"unsupported unary operand: {operand.__class__.__name__}")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# --- arithmetic: what BFCL's eval(ast.unparse(node)) gives, without running the text ---
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}
_PURE_BUILTINS: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (abs, float, int, len, max, min, round, str, sum)
}
_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_MAX_BITS = 100_000
_MAX_SIZE = 100_000
_FORMAT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")


def _arithmetic(node: ast.BinOp) -> Any:
    """The value of an arithmetic argument (`base=9 + 1` is 10); ParseError where BFCL's eval raises
    (ZeroDivisionError, TypeError, a NameError for `x + 1`, ...) or where we do not evaluate (module docstring)."""
    try:
        return _evaluate(node)
    except ParseError:
        raise
    except Exception as exc:  # the exception BFCL's eval raises too: the output does not decode
        raise ParseError(f"arithmetic fails: {exc.__class__.__name__}") from None


def _evaluate(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        _refuse_costly(node.op, left, right)
        return _refuse_large(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_evaluate(item) for item in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_evaluate(key): _evaluate(value) for key, value in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Subscript):
        return _evaluate(node.value)[_evaluate(node.slice)]
    if isinstance(node, ast.Slice):
        return slice(*(None if part is None else _evaluate(part) for part in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PURE_BUILTINS:
        return _refuse_large(_pure_call(node))
    raise ParseError(f"not evaluated in arithmetic: {node.__class__.__name__}")


def _pure_call(node: ast.Call) -> Any:
    """A whitelisted builtin on literals: scalars or flat lists/tuples/sets of them (linear time)."""
    if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
        raise ParseError("not evaluated: * or ** in a call")
    args = [_evaluate(arg) for arg in node.args]
    kwargs = {k.arg: _evaluate(k.value) for k in node.keywords}
    for value in [*args, *kwargs.values()]:
        flat = isinstance(value, list | tuple | set) and all(isinstance(item, _SCALARS) for item in value)
        if not (isinstance(value, _SCALARS) or flat):
            raise ParseError("not evaluated: a builtin on nested values")
    return _PURE_BUILTINS[node.func.id](*args, **kwargs)


def _refuse_costly(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse operations that could take unbounded time or memory (BFCL's eval would try them)."""
    integers = type(left) in (int, bool) and type(right) in (int, bool)
    if integers and isinstance(op, ast.Pow) and right > 0 and abs(left) > 1 and left.bit_length() * right > _MAX_BITS:
        raise ParseError("arithmetic result too large")
    if integers and isinstance(op, ast.LShift) and right > _MAX_BITS:
        raise ParseError("arithmetic result too large")
    if isinstance(op, ast.Mod) and isinstance(left, str | bytes) and _wide_format(str(left)):
        raise ParseError("arithmetic result too large")
    if isinstance(op, ast.Mult):
        for sequence, times in ((left, right), (right, left)):
            repeated = isinstance(sequence, str | bytes | list | tuple) and type(times) in (int, bool)
            if repeated and len(sequence) * times > _MAX_SIZE:
                raise ParseError("arithmetic result too large")


def _wide_format(text: str) -> bool:
    """A %-format with a field width or precision of 10,000 or more, or taken from the arguments (`*`)."""
    return any(part == "*" or len(part) > 4 for spec in _FORMAT_SPEC.finditer(text) for part in spec.groups() if part)


def _refuse_large(value: Any) -> Any:
    """`value`, unless it holds more than _MAX_SIZE items and characters (a shared item counted each time)."""
    pending, size = [value], 0
    while pending:
        item = pending.pop()
        size += len(item) if isinstance(item, str | bytes) else 1
        if size > _MAX_SIZE:
            raise ParseError("arithmetic result too large")
        if isinstance(item, list | tuple | set):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend([*item, *item.values()])
    return value


# --- JSON-like values for decode() ---
def _json_call(call: Call) -> Call:
    if None in call.arguments:
        raise ParseError(f"{call.name}: **kwargs is not allowed")
    return Call(call.name, {param: _json_value(call.name, param, value) for param, value in call.arguments.items()})


def _json_value(name: str, param: str, value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_json_value(name, param, item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ParseError(f"{name}: dict keys of {param!r} must be strings")
        return {key: _json_value(name, param, item) for key, item in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ParseError(f"{name}: value of {param!r} has unsupported type {type(value).__name__}")


# --- the checkers (bfcl_eval eval_checker/ast_eval/ast_checker.py) ---
def _find(functions: list[dict[str, Any]], answer: Answer) -> dict[str, Any]:
    name = next(iter(answer))
    for function in functions:
        if function["name"] == name:
            return function
    raise ValueError(f"possible answer names {name!r}, which is not among the item's functions")


def _wrong_count(kind: str, calls: list[Call], expected: int) -> str | None:
    return f"{kind}_function_checker:wrong_count" if len(calls) != expected else None


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
    nested = _PYTHON_TYPES.get(spec.get("items", {}).get("type")) if type_name in _NESTED_TYPES else None
    if type_name == "tuple" and type(value) is tuple:
        value = list(value)  # only for "tuple": a tuple for an "array" is a type error, as in BFCL
    if type_name == "float" and type(value) is int:
        value = float(value)
    error, is_variable = _type_check(value, options, expected, nested)
    if error is not None:
        return error
    if not is_variable:
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


def _type_check(value: Any, options: list[Any], expected: type, nested: type | None) -> tuple[str | None, bool]:
    """BFCL's type_checker: (error_type or None, is_variable). A value typed like the possible answer rather than
    the schema is a 'variable' and is then compared as is."""
    answer_type = _answer_type(options)
    nested_failed = False
    if type(value) is expected:
        is_variable = answer_type is not None and answer_type is not expected
        if nested is None or any(
            type(option) is not list or all(_type_check(item, option, nested, None)[0] is None for item in value)
            for option in options
        ):
            return None, is_variable
        nested_failed = True
    if answer_type is not None and type(value) is answer_type:
        # BFCL quirk: after a failed nested check this path returns the nested error, not a valid variable.
        return ("type_error:nested" if nested_failed else None), True
    return "type_error:simple", False


def standardise(text: str) -> str:
    """BFCL's standardize_string: 'April 1, 2024' == 'april 1 2024'; single quotes read as double."""
    return _STANDARDISE.sub("", text).lower().replace("'", '"')


def _standard_list(values: Any) -> list[Any] | None:
    if not isinstance(values, list | str):
        return None
    return [standardise(v) if type(v) is str else v for v in values]


def _standard(value: Any) -> Any:
    return standardise(value) if type(value) is str else value


def _dict_check(value: dict[Any, Any], options: list[Any]) -> str | None:
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
            if _standard(item) not in [_standard(o) for o in option[key]]:
                error = "value_error:dict_value"
                break
        # BFCL quirk: the missing-key check runs even after a failure above, and its error type then wins.
        if any(key not in value and "" not in allowed for key, allowed in option.items()):
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
