"""YAML read as `wasmop test` reads it: plain scalars resolve as the host's YAML reader
(serde-saphyr) resolves them, not as PyYAML's YAML 1.1 defaults would. Timestamps and `1:30` stay
strings; `y`/`yes`/`on` and `n`/`no`/`off` are booleans; integers are decimal (no leading zero),
`0x`, `0o` or `0b`, with single underscores between digits; other numbers are YAML 1.2 floats
(`017` is 17.0, `1e3` is 1000.0); `.inf` and `.nan` are refused, as JSON has no such numbers.
Mapping keys are their text (`n: 1` has the key `"n"`), and a key given twice is refused.
"""

import re
from typing import Any

import yaml

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = ("y", "yes", "true", "on")
_BOOL = re.compile(r"^(?:y|yes|true|on|n|no|false|off)$", re.IGNORECASE)
_INT = re.compile(r"^[-+]?(?:0x[0-9a-fA-F](?:_?[0-9a-fA-F])*|0o[0-7](?:_?[0-7])*"
                  r"|0b[01](?:_?[01])*|0|[1-9](?:_?[0-9])*)$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_NON_FINITE = re.compile(r"^[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)$")
_NON_FINITE_TAG = "tag:wasmop.dev,2026:non-finite"
_RADIXES = {"0x": 16, "0o": 8, "0b": 2}


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the host's scalar resolution."""

    yaml_implicit_resolvers: dict = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """The mapping with its keys as text; merged (`<<`) keys give way to those it sets."""
        own = [key for key, _ in node.value if not key.tag.endswith(":merge")]
        twice = next((key for index, key in enumerate(own)
                      if key.value in [seen.value for seen in own[:index]]), None)
        if twice is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {twice.value!r} is given twice", twice.start_mark)
        self.flatten_mapping(node)
        return {_key(key): self.construct_object(value, deep=deep) for key, value in node.value}


def _key(node: yaml.Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise yaml.constructor.ConstructorError(
            None, None, "a mapping key must be a scalar", node.start_mark)
    return node.value


def _bool(loader: _Loader, node: yaml.ScalarNode) -> bool:
    return loader.construct_scalar(node).lower() in _TRUE


def _int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node).replace("_", "")
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    radix = _RADIXES.get(digits[:2], 10)
    return sign * int(digits[2:] if radix != 10 else digits, radix)


def _float(loader: _Loader, node: yaml.ScalarNode) -> float:
    return float(loader.construct_scalar(node))


def _non_finite(loader: _Loader, node: yaml.ScalarNode) -> None:
    raise yaml.constructor.ConstructorError(
        None, None, f"non-finite float {loader.construct_scalar(node)!r} is not allowed",
        node.start_mark)


for _tag, _pattern in [("null", _NULL), ("bool", _BOOL), ("int", _INT), ("float", _FLOAT),
                       ("merge", re.compile(r"^<<$"))]:
    _Loader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", _pattern, None)
_Loader.add_implicit_resolver(_NON_FINITE_TAG, _NON_FINITE, None)
_Loader.add_constructor("tag:yaml.org,2002:bool", _bool)
_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor("tag:yaml.org,2002:float", _float)
_Loader.add_constructor(_NON_FINITE_TAG, _non_finite)


def load(text: str) -> Any:
    """The YAML (or JSON) document in `text` as JSON values; empty text is an empty mapping.
    Raises `yaml.YAMLError` when it is not valid YAML."""
    if not text.strip():
        return {}
    return yaml.load(text, Loader=_Loader)
